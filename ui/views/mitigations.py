"""Mitigations: transfer compression, layer-wise sending, NVLink, and their combinations."""

from functools import partial

import streamlit as st

from kvmodel import catalog
from kvmodel.sweeps import mitigation_options, mitigation_table, timeline
from kvmodel.topology import domain_gpus, par_text
from kvview import csv_tables, figures, tables
from kvview.fmt import fmt_bytes, fmt_critical, in_ms
from kvview.words import mitigation_takeaway
from ui import exports_ui, perf, urlstate, widgets


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Mitigations")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()
    options = perf.cached(mitigation_options, sc)  # memoised with the table and the sentence
    # the chart's table leaves out the critical lengths, a search per option (~3.5 ms of a
    # rerun after a sidebar change): the table's tab asks for them when it is open
    table = perf.cached(in_ms, perf.cached(mitigation_table, sc, options, critical=False))
    st.info(perf.cached(mitigation_takeaway, table), icon=":material/lightbulb:")
    if not all(o.buildable for o in options):
        nv = catalog.get_link(sc.gpu.nvlink)
        domain, scale_up = domain_gpus(sc.gpu, nv), nv.name
        st.caption(
            f":material/block: *Not buildable*: prefill {par_text(sc.tp_prefill, sc.ep_prefill)}"
            f" + decode {par_text(sc.tp_decode, sc.ep_decode)} = "
            f"{sc.gpus_prefill + sc.gpus_decode} GPUs do not fit in one {domain}-GPU {scale_up} "
            "domain; those rows are shown for reference and never recommended. Lossy rows "
            "change the KV values."
        )

    # tabs drawn only while open (the table and the timeline are asked for)
    chart_tab, table_tab, timeline_tab = st.tabs(TABS, key=TAB, on_change="rerun")
    if chart_tab.open:
        with chart_tab:
            exports_ui.chart(
                perf.cached(figures.figure_mitigation_panels.unbuilt, table,
                            step_ms=sc.decode_step_s * 1e3),
                "mitigations-per-option",
            )  # fmt: skip
    if table_tab.open:
        with table_tab:
            _options_table(perf.cached(in_ms, perf.cached(mitigation_table, sc, options)))
    if timeline_tab.open:
        with timeline_tab:
            _timeline(options)


TABS = ("Options", "Options as a table", "Timeline of one option")
TAB = "mit_tab"  # session key: the open tab


def _options_table(table) -> None:
    """The options as a table (wire bytes, exposed, codec, TTFT, saving, share, critical)."""
    # the option's width set: sized from the rows, its longest label (the last) was cut
    option = st.column_config.TextColumn("Option", width=tables.text_width(table["option"]))
    st.dataframe(
        perf.cached(_shown, table),
        hide_index=True,
        width="stretch",
        column_config={**OPTION_COLUMNS, "option": option},
    )
    exports_ui.table_download(partial(csv_tables.mitigations_frame, table), "mitigations")


def _shown(table):
    """The columns the options table shows, bytes, shares and lengths in words (one frame from
    lists: three Series.map and an assign cost ~1.4 ms a rerun, this ~0.3 ms)."""
    import pandas as pd

    return pd.DataFrame(
        {
            "option": table["option"].tolist(),
            "wire": [fmt_bytes(b) for b in table["wire_bytes"].tolist()],
            "exposed_transfer_ms": table["exposed_transfer_ms"].to_numpy(),
            "codec_ms": table["codec_ms"].to_numpy(),
            "ttft_ms": table["ttft_ms"].to_numpy(),
            "ttft_saving_ms": table["ttft_saving_ms"].to_numpy(),
            "share": [f"{x:.1%}" for x in table["transfer_share"].tolist()],
            "critical": [fmt_critical(s) for s in table["critical_seq_len"].tolist()],
        }
    )


# the unit in the cells, not the headers, and "never" for no critical length: with the
# longest option whole, eight columns fit 1280 px ("none up to max context" did not)
OPTION_COLUMNS = {  # and "option", its width from the labels shown (``_options_table``)
    "wire": "On the wire",
    "exposed_transfer_ms": st.column_config.NumberColumn(
        "Exposed", format="%,.2f ms", help="Transfer the decode node waits for"
    ),
    "codec_ms": st.column_config.NumberColumn(
        "Codec", format="%.3f ms", help="Quantize + dequantize time"
    ),
    "ttft_ms": st.column_config.NumberColumn("TTFT", format="%,.1f ms"),
    "ttft_saving_ms": st.column_config.NumberColumn(
        "Saved", format="%,.1f ms", help="TTFT saved against the baseline"
    ),
    "share": st.column_config.TextColumn("Share", help="Transfer share of TTFT"),
    "critical": st.column_config.TextColumn(
        "Critical length",
        help="Critical sequence length; never: no prompt up to the model's max context",
    ),
}


def _timeline(options) -> None:
    """The timeline of one chosen option."""
    labels = [o.label for o in options]
    pick = widgets.page_widget(
        st.selectbox,
        "Option shown",
        "tl",
        options=range(len(labels)),
        format_func=lambda i: labels[i],
    )
    chosen = options[pick].scenario
    exports_ui.chart(
        perf.cached(
            figures.figure_timeline.unbuilt,
            perf.cached(in_ms, perf.cached(timeline, chosen)),
            title=f"Timeline: {labels[pick]}".replace(" (not buildable)", ""),  # a phone's width
        ),
        "timeline",
    )
    st.caption(
        "Layer-wise: each layer's KV leaves when prefill has computed that layer (prefill "
        "time split evenly over layers) and chunks queue on the link; the decode node waits "
        "only for what is still in flight when prefill ends. Compression costs a quantize "
        "before and a dequantize after the trip."
    )
