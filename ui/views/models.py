"""Models: KV bytes per token across the catalog; import a Hugging Face config.json."""

from functools import partial

import streamlit as st

from kvmodel import fidelity
from kvmodel.capacity import deployments
from kvmodel.sweeps import models_table
from kvview import csv_tables, figures, tables
from kvview.breakdown import deployments_frame, fidelity_frames, sweep_frame
from kvview.words import models_takeaway
from ui import config_import, exports_ui, perf, urlstate

MAX_CONFIG_BYTES = 1_000_000


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Models")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop(page_shows_problems=True)
    # a line, not the warning block: this page's KV sizes do not depend on the deployment
    urlstate.show_deployment_problems(
        sc, "The KV sizes on this page do not depend on it (they are per model and token).")
    table = perf.cached(
        models_table, sc.kv_dtype, sc.seq_len, extra=tuple(urlstate.imported_models().values())
    )
    st.info(perf.cached(models_takeaway, table, sc.model.id), icon=":material/lightbulb:")
    exports_ui.chart(
        perf.cached(
            figures.figure_bytes_per_token.unbuilt, table, highlight=sc.model.id,
            kv_dtype=sc.kv_dtype,
        ),
        "bytes-per-token",
    )
    _catalog_table(sc, table)
    _fidelity()
    _import_config()


def _catalog_table(sc, table) -> None:
    """The catalog as a table: layers, bytes per token short and at this length, state, context."""
    st.dataframe(
        table[
            [
                "model",
                "attention",
                "layers",
                "bytes_per_token_short",
                "bytes_per_token_at_seq",
                "state_bytes",
                "max_context_tokens",
            ]
        ],
        hide_index=True,
        width="stretch",
        height=tables.frame_height(len(table)),
        column_config={
            "model": "Model",
            "attention": "Attention",
            "layers": "Layers",
            "bytes_per_token_short": st.column_config.NumberColumn(
                "B/token (short)", format="%,d", help="While every layer still holds all tokens"
            ),
            "bytes_per_token_at_seq": st.column_config.NumberColumn(
                f"B/token at {sc.seq_len:,}", format="%,d"
            ),
            "state_bytes": st.column_config.NumberColumn(
                "State [B]", format="%,d", help="Constant Mamba/linear-attention state per request"
            ),
            "max_context_tokens": st.column_config.NumberColumn("Max context", format="%,d"),
        },
    )
    exports_ui.table_download(partial(csv_tables.models_frame, table), "models")


def _import_config() -> None:
    """Import a Hugging Face config.json (upload or paste), optionally its quant config."""
    st.subheader("Import a Hugging Face config.json")
    st.caption(
        "Upload or paste a model's config.json (at most 1 MB). "
        "GQA/MHA/MQA, MLA, sliding-window, chunked, hybrid Mamba and linear-attention layouts "
        "are read; fields under text_config are used. The imported model becomes selectable "
        "in the sidebar and travels in the link."
    )
    left, right = st.columns(2)
    left.file_uploader("config.json", type=["json"], key="cfg_upload", max_upload_size=1)
    left.file_uploader(
        "hf_quant_config.json (optional, for an FP8/INT8 KV cache)",
        type=["json"],
        key="quant_upload",
        max_upload_size=1,
    )
    right.text_area(
        "…or paste its text",
        key="cfg_paste",
        height=180,
        placeholder='{"num_hidden_layers": 80, "num_attention_heads": 64, ...}',
    )
    st.button(
        "Import model",
        type="primary",
        key="cfg_import",
        on_click=config_import.import_config,
        args=(MAX_CONFIG_BYTES,),
    )
    config_import.show_import_result()


def _fidelity() -> None:
    """Every cited measurement beside the model's value (``python -m kvmodel fidelity``)."""
    st.subheader("Fidelity: the model against published measurements")
    head, points = perf.cached(_fidelity_frames)
    st.caption(
        "Transfers, expert-parallel exchanges, prefills, decode steps and TTFTs measured by "
        "others (each point's source beside it: double-click a cell to read it whole); the "
        "model's constants are fitted on the *fitted* rows only."
    )
    st.dataframe(head, hide_index=True, width="stretch", column_config=_formats(
        {"mean error [%]": "%.1f", "worst error [%]": "%.1f"}))  # fmt: skip
    # drawn only while open (opening it reruns the page), like the sidebar's closed
    # expanders: 217 rows sent on every rerun for a table most visits never open
    box = st.expander(f"All {len(points)} points", key=POINTS_OPEN, on_change="rerun")
    if box.open:
        fmt = {"measured [ms]": "%,.2f", "model [ms]": "%,.2f", "model ÷ measured": "%.2f"}
        misses = int((points["known miss: why"] != "").sum())
        box.caption(f"{misses} held-out points fall outside the band docs/model.md states; "
                    "'known miss: why' says what is known of each.")  # fmt: skip
        box.dataframe(points, hide_index=True, width="stretch",
                      column_config={**_formats(fmt), "source": SOURCE,
                                     "known miss: why": SOURCE})  # fmt: skip
    _sweep()
    _deployments()


POINTS_OPEN = "models_points_open"  # session key: the "All points" expander is open
DEPLOYMENTS_OPEN = "models_deployments_open"  # session key: the deployments expander is open


def _deployments() -> None:
    """Published deployments and peer plans beside this planner's (``python -m kvmodel
    fidelity``'s ``deployments``): planned only while the expander is open."""
    n = len(perf.cached(deployments.load_deployments))
    box = st.expander(f"GPU counts and per-node throughput of {n} published deployments and "
                      "peer plans", key=DEPLOYMENTS_OPEN, on_change="rerun")  # fmt: skip
    if not box.open:
        return
    box.caption(
        "Each row is planned here with its published workload, targets and parallelism "
        "(data/fidelity/deployments.csv, its source beside it). Planned ÷ published above "
        "1: the planner asks for more GPUs than were used. Tokens/s per node: input tokens for "
        "a prefill pool, output tokens for a decode pool; the bands are 2× for MoE models and "
        "1.5× for dense ones."
    )
    frame = perf.cached(deployments_frame, perf.cached(deployments.compared))
    fmt = {"planned ÷ published": "%.2f", "tokens/s per node measured": "%,.0f",
           "tokens/s per node planned": "%,.0f", "planned ÷ measured": "%.2f"}  # fmt: skip
    box.dataframe(frame, hide_index=True, width="stretch",
                  column_config={**_formats(fmt), "source": SOURCE})  # fmt: skip


# the sources run to 300 characters: a column of 200 px names each, a double-click reads it all
SOURCE = st.column_config.TextColumn(width="medium", help="Double-click a cell to read it whole")


def _formats(fmt: dict[str, str]) -> dict:
    """Number formats drawn by the browser: a pandas Styler formats every cell on the server
    on every rerun (the 200-point table: ~20 ms of Models' ~50 ms; bench/README.md, Session 8)."""
    return {name: st.column_config.NumberColumn(format=f) for name, f in fmt.items()}


def _sweep() -> None:
    """The served TPOTs of aiconfigurator's silicon table, summarised per setup."""
    sweep = perf.cached(fidelity.sweep_summary)
    all_ = sweep["overall"]
    with st.expander(
        f"Served TPOT on {all_['n']:,} more measured runs: median {all_['median_ratio']:.2f}× "
        f"measured, {all_['within_band']:.0%} within ±{sweep['band']:.0%}"
    ):
        st.caption(
            f"Source: {sweep['source']}. Aggregated serving on H100, H200 and B200 under vLLM, "
            "SGLang and TensorRT-LLM; the model's TPOT is one iteration with the prompts that "
            "ride in it. Only the MoE read efficiency was chosen on these runs (docs/model.md)."
        )
        fmt = {"median model ÷ measured": "%.2f", f"within ±{sweep['band']:.0%} [%]": "%.0f"}
        st.dataframe(perf.cached(sweep_frame, sweep), hide_index=True, width="stretch",
                     column_config=_formats(fmt))  # fmt: skip


def _fidelity_frames():
    points = fidelity.all_points()
    return fidelity_frames(fidelity.point_rows(points), fidelity.kind_summary(points))
