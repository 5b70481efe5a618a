"""Overview: what the transfer costs for the sidebar's scenario."""

import streamlit as st

from kvmodel.topology import par_text
from kvmodel.transfer import evaluate
from kvview import figures
from kvview.breakdown import breakdown_shown
from kvview.fmt import NEVER, fmt_bytes, fmt_ms, fmt_ms_or_s, fmt_ratio, fmt_time
from kvview.words import (
    gemm_rows_text,
    overview_takeaway,
    plural,
    prefill_graph_text,
    transfer_sum_text,
)
from ui import exports_ui, perf, urlstate


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Overview")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()
    ev = evaluate(sc)  # memoised per scenario in kvmodel
    head, metrics, breakdowns = st.container(), st.container(), st.container()
    _charts(sc, ev)  # sent first, below the slots above: the browser draws it while they fill
    head.info(perf.cached(overview_takeaway, ev), icon=":material/lightbulb:")
    with metrics:
        _cache_metrics(sc, ev)
        _transfer_metrics(sc, ev)
    with breakdowns:
        _breakdowns(ev)
    _how_computed(sc, ev)


def _cache_metrics(sc, ev) -> None:
    """The KV cache: whole, per token, per layer, per GPU, on the wire."""
    st.subheader("KV cache")
    c = st.columns(3)
    c[0].metric(
        "Whole cache",
        fmt_bytes(ev.kv_total_bytes),
        help=(
            f"{ev.kv_total_bytes:,.0f} bytes for {sc.batch} × {sc.seq_len:,} tokens, {sc.kv_dtype}"
        ),
    )
    c[1].metric(
        "Per token", fmt_bytes(ev.kv_per_token_bytes), help="Whole cache ÷ (tokens × batch)"
    )
    c[2].metric(
        "Per attention layer",
        fmt_bytes(ev.kv_per_layer_bytes),
        help="Attention KV ÷ attention layers (hybrid state not included)",
    )
    c = st.columns(3)
    c[0].metric(
        f"Per prefill GPU ({par_text(sc.tp_prefill, sc.ep_prefill)})",
        fmt_bytes(ev.kv_per_gpu_prefill_bytes),
        help="What the busiest prefill GPU holds: its shard of every request, or with expert "
        "parallelism its attention group's share of the batch (⌈batch ÷ (EP ÷ TP)⌉ requests)",
    )
    c[1].metric(
        f"Per decode GPU ({par_text(sc.tp_decode, sc.ep_decode)})",
        fmt_bytes(ev.kv_per_gpu_decode_bytes),
        help="What the busiest decode GPU must receive: its shard of every request (replicated "
        "heads included); with expert parallelism its attention group's share of the batch "
        "(⌈batch ÷ (EP ÷ TP)⌉ requests); with data-parallel attention whole requests, ⌈batch ÷ "
        "ranks⌉ of them",
    )
    c[2].metric(
        "On the wire",
        fmt_bytes(ev.wire_bytes),
        help=f"After {sc.compression} compression ({ev.compression_ratio:.3f}× the stored bytes)",
    )


def _transfer_metrics(sc, ev) -> None:
    """The transfer and TTFT metrics, with their help."""
    st.subheader("Transfer and TTFT")
    stack = sc.stack
    c = st.columns(4)
    c[0].metric(
        "Exposed transfer",
        fmt_ms_or_s(ev.exposed_s),
        help=(
            f"With the {stack.name} stack. Whole transfer {fmt_ms(ev.transfer_s, 2)}; exposed = "
            "what decode waits after prefill"
        ),
    )
    c[1].metric(
        "At wire speed",
        fmt_ms_or_s(ev.ideal_exposed_s),
        help="The same bytes at the link's nominal bandwidth with no connector overhead (the "
        "source article's arithmetic; stack = Ideal in the sidebar). No serving stack reaches it.",
    )
    c[2].metric(
        "Transfer ÷ decode step",
        fmt_ratio(ev.transfer_over_decode),
        help=f"Exposed transfer ÷ the {fmt_ms(ev.decode_step_s)} decode step",
    )
    c[3].metric(  # the unit in the label: "13,589 tokens" was cut to "13,589 tok…" at 1280 px
        CRITICAL,
        NEVER if ev.critical_seq_len is None else f"{ev.critical_seq_len:,}",
        help=f"The critical sequence length: the smallest prompt whose transfer ≥ {sc.k:g} × "
        f"{fmt_ms(sc.decode_step_s)}"
        + (
            ", the decode step estimated at this scenario's prompt length: the step grows a "
            "little with the context it reads, so this length moves a little with the prompt "
            "length chosen (and the Traffic page, which takes one request's step, can differ "
            "by a few tokens)"
            if sc.decode_step_estimated
            else ""
        )
        + f". Never: no prompt up to the model's max context ({sc.model.max_context_tokens:,} "
        "tokens) reaches it.",
    )
    _ttft_metrics(sc, ev)


def _ttft_metrics(sc, ev) -> None:
    """TTFT, the transfer's share of it, prefill and the decode step, with their help."""
    c = st.columns(4)
    c[0].metric(
        "TTFT",
        fmt_time(ev.ttft_s),
        help="Framework per-request cost + prefill + "
        "exposed transfer + first decode step (parts below)",
    )
    c[1].metric(
        "Transfer share of TTFT",
        f"{ev.transfer_share_of_ttft:.1%}",
        delta=f"{'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line",
        delta_color="inverse" if ev.over_share_target else "normal",
        delta_arrow="off",
    )
    c[2].metric(
        "Prefill" + (" (estimated)" if ev.prefill_estimated else " (given)"),
        fmt_time(ev.prefill_s),
        help=f"Estimated on {sc.gpus_prefill}× {sc.gpu.name} from its parts (below; fitted and "
        "held out on published runs: the Models page)"
        if ev.prefill_estimated
        else "Set in the sidebar",
    )
    c[3].metric(
        "Decode step" + (" (estimated)" if sc.decode_step_estimated else " (given)"),
        fmt_time(ev.decode_step_s),
        help=f"Estimated for batch {sc.batch} at {sc.seq_len:,} tokens on {sc.gpus_decode}× "
        f"{sc.decode_gpu.name} ({sc.framework}) from its parts (below); roofline lower bound "
        f"{fmt_ms(ev.decode_step_lower_bound_s)}"
        if sc.decode_step_estimated
        else f"Set in the sidebar; roofline lower bound {fmt_ms(ev.decode_step_lower_bound_s)}",
    )


CRITICAL = "Critical length [tokens]"


def _charts(sc, ev) -> None:
    """The transfer against the decode step over the TTFT waterfall (one chart); the notes."""
    exports_ui.chart(
        perf.cached(
            figures.figure_overview_panels.unbuilt,
            ev.exposed_s * 1e3,
            ev.decode_step_s * 1e3,
            ev.prefill_s * 1e3,
            ev.framework_request_s * 1e3,
            link=sc.link.name,
            k=sc.k,
        ),
        "transfer-and-ttft",
    )
    for note in ev.notes:
        if note not in ev.problems:  # those are in the warning above
            st.caption(f"Note: {note}.")


def _how_computed(sc, ev) -> None:
    """How these numbers are computed (link, transfer terms, stack, model source)."""
    stack = sc.stack
    with st.expander("How these numbers are computed"):
        st.markdown(
            f"- Link: {sc.link.name}, {sc.link.bandwidth_bytes_per_s / 1e9:,.4g} GB/s per "
            f"direction × {plural(ev.streams, 'parallel link')} × {sc.efficiency:.0%} "
            f"efficiency = {ev.effective_bandwidth_bytes_per_s / 1e9:,.4g} GB/s before the "
            f"stack's own costs; latency {sc.link.latency_s * 1e6:,.1f} µs.\n"
            f"- {transfer_sum_text(ev)}\n"
            f"- Stack: {stack.name}: {stack.request_s * 1e3:,.3g} ms per request, "
            f"{stack.message_s * 1e6:,.3g} µs per message ({stack.message}), "
            f"{stack.efficiency_max:.0%} of the link at large messages. Source: {stack.source}.\n"
            f"- Source of the model's shape: {sc.model.source}."
        )


def _breakdowns(ev) -> None:
    """Where the time goes: the decode step, the prefill and TTFT in their parts [ms]."""
    st.subheader("Where the time goes")
    st.caption(
        "Each part per GPU in ms; the parts add up to the total. Weights and KV (HBM reads) "
        "overlap with attention and GEMM FLOPs: the larger side is shown whole, the smaller by "
        "the share that is not hidden. Activations: the prefill's norms, SiLU and rotary "
        "kernels between the GEMMs, added. EP all-to-all: expert-parallel dispatch and "
        "combine; TP all-reduce: over the GPU's scale-up link (a TP wider than one node: "
        "also over the nodes' NICs, at NCCL's cross-node latency)."
        + (
            " A prompt's routed experts run at the grouped MoE kernels' rate, lower than a dense "
            "GEMM's when each GPU holds a narrow slice of every expert."
            if ev.scenario.model.experts
            else ""
        )
        + (
            " Host floor: an eager engine launching an MLA layer's kernels keeps a short prompt's "
            "prefill at its minimum while the GPU works under it."
            if ev.prefill_parts is not None and float(ev.prefill_parts.host_floor_s) > 0
            else ""
        )
        + gemm_rows_text(ev.scenario)
        + prefill_graph_text(ev.scenario)
    )
    cols = st.columns(3)
    shown = (("Decode step", ev.step_parts), ("Prefill", ev.prefill_parts),
             ("TTFT", ev.ttft_parts))  # fmt: skip
    for col, (title, parts) in zip(cols, shown, strict=True):
        col.markdown(f"**{title}**")
        if parts is None:
            col.caption("Given in the sidebar: no breakdown.")
            continue
        col.table(perf.cached(breakdown_shown, parts))
