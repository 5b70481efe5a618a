"""The shared scenario controls in the sidebar (app.py calls ``sidebar_controls`` before
``run()``) and their callbacks: a model change keeps the other inputs valid and says so."""

from __future__ import annotations

import streamlit as st

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.size import valid_tp
from kvmodel.specs import ModelSpec
from kvmodel.timing import decode_step_lower_bound_s, estimate_decode_step_s
from kvview import params as P
from kvview.fmt import fmt_ms
from ui import perf
from ui.urlstate import add_notice, imported_models, model_spec
from ui.widgets import est_widgets, input_widget


def on_model_change() -> None:
    """Keep the other inputs valid for the newly chosen model, and say what changed."""
    ss = st.session_state
    spec = model_spec()
    seq = I.get("seq")
    if ss["seq"] > seq.hi_for(spec):
        add_notice(
            f"Sequence length lowered to {spec.name}'s max context of {seq.hi_for(spec):,} tokens."
        )
        ss["seq"] = seq.hi_for(spec)
    tps = valid_tp(spec, P.MAX_TP)
    for key in P.TP_ROWS:
        if ss[key] not in tps:
            add_notice(f"{key.upper()} {ss[key]} does not fit {spec.name}'s KV heads; set to 1.")
            ss[key] = 1
    for key, tp_key in (("ep", "tp"), ("epd", "tpd")):
        ep = ss.get(key, 1)
        if ep > 1 and (not spec.is_moe or ep % ss[tp_key]):
            why = "is dense" if not spec.is_moe else f"needs a multiple of {tp_key.upper()}"
            add_notice(f"{I.get(key).label} {ep} set to 1: {spec.name} {why}.")
            ss[key] = 1
    new = _kv_dtype_after_switch(ss["kvd"], ss.get(_MODEL_SHOWN), spec)
    if new != ss["kvd"]:
        why = (
            f"{spec.name} keeps its KV cache in {new}"
            if spec.kv_dtype_native
            else f"{ss['kvd']} was the previous model's own cache dtype"
        )
        add_notice(f"KV cache dtype set to {new}: {why}.")
        ss["kvd"] = new
    attn = I.get("attn").default_for(spec)
    if ss.get("attn") != attn:
        how = "one decode rank per request" if attn == "dp" else "every rank holds its share"
        add_notice(f"Attention parallelism set to {attn} ({how}): how {spec.name} is served.")
        ss["attn"] = attn


_MODEL_SHOWN = "_model_shown"  # the model of the last run (on_change sees the new one only)


def _kv_dtype_after_switch(kvd: str, previous: str | None, spec: ModelSpec) -> str:
    """The KV cache dtype after switching to ``spec``: its native dtype when it has one (an FP8
    checkpoint); back to the default when the dtype was the previous model's native one (not
    the user's choice); otherwise unchanged."""
    if spec.kv_dtype_native:
        return spec.kv_dtype_native
    try:
        before = model_spec(previous).kv_dtype_native if previous else None
    except ValueError:  # the previous model is gone (an imported one, in a new session)
        before = None
    return P.DEFAULTS["kvd"] if before and kvd == before else kvd


def _set_seq_from_exact() -> None:
    st.session_state["seq"] = int(st.session_state["seq_exact"])


def _seq_options(max_ctx: int, current: int) -> list[int]:
    nice = [int(v) for base in (128 * 2**k for k in range(20)) for v in (base, base * 3 // 2)]
    opts = sorted({v for v in nice if v <= max_ctx} | {max_ctx, current})
    return [v for v in opts if 1 <= v <= max_ctx]


# The sidebar's widget keys, written back to session state at the start of every run (with
# LAZY_KEYS, below).  A widget whose value the run set through session state goes to the browser
# with that value; one that did not goes with its default (the first option, the minimum), and
# a browser that had not drawn the widget yet when a click sent a rerun (a click right after
# opening a shared link) showed that default and sent it back on the next interaction: the
# link's scenario was lost.
SIDEBAR_KEYS = ("model", "batch", "link", "bw", "lat", "eff", "comp", "lw", "codec", "stack")


def sidebar_controls() -> None:
    """Render the scenario controls in the sidebar (app.py, before ``run()``)."""
    ss = st.session_state
    sb = st.sidebar
    for key in (*SIDEBAR_KEYS, *LAZY_KEYS):  # see SIDEBAR_KEYS and LAZY_KEYS
        if key in ss:
            ss[key] = ss[key]
    ids = catalog.model_ids() + list(imported_models())
    if ss["model"] not in ids:
        ss["model"] = P.DEFAULTS["model"]
    labels = dict(perf.cached(_catalog_labels))  # an imported model replaces a catalog one
    labels.update({i: _model_label(spec) for i, spec in imported_models().items()})
    input_widget(sb.selectbox, "model", options=ids, on_change=on_model_change,
                 format_func=labels.get)  # fmt: skip
    ss[_MODEL_SHOWN] = ss["model"]
    spec = model_spec()
    seq = I.get("seq")
    ss["seq"] = seq.capped(ss["seq"], spec)  # at most the model's context (the row's max_from)
    input_widget(sb.select_slider, "seq", options=_seq_options(seq.hi_for(spec), ss["seq"]),
                 format_func=lambda v: f"{v:,}")  # fmt: skip
    ss["seq_exact"] = ss["seq"]
    c1, c2 = sb.columns(2)
    input_widget(c1.number_input, "seq", model=spec, key="seq_exact", label="Exact tokens",
                 help=None, step=1, on_change=_set_seq_from_exact)  # fmt: skip
    input_widget(c2.number_input, "batch")
    input_widget(sb.selectbox, "link", options=P.link_ids() + [P.CUSTOM_LINK],
                 format_func=_link_label)  # fmt: skip
    if ss["link"] != P.CUSTOM_LINK:
        lk = catalog.get_link(ss["link"])
        sb.caption(
            f"{lk.bandwidth_bytes_per_s / 1e9:,.4g} GB/s per direction, "
            f"{lk.latency_s * 1e6:,.3g} µs latency"
        )
    stacks = catalog.stacks()
    if ss.get("stack") not in stacks:
        ss["stack"] = P.DEFAULTS["stack"]
    input_widget(sb.selectbox, "stack", format_func=lambda i: stacks[i].name)
    _stack_caption(sb, stacks[ss["stack"]])
    if I.get("bw").applies(ss):  # a custom link's bandwidth and latency
        c1, c2 = sb.columns(2)
        input_widget(c1.number_input, "bw")
        input_widget(c2.number_input, "lat")
    input_widget(sb.slider, "eff")
    with sb.expander("Mitigations", expanded=True):
        input_widget(st.selectbox, "comp")
        input_widget(st.toggle, "lw")
        if ss["comp"] != "none":
            input_widget(st.number_input, "codec")
    hardware = sb.expander("Parallelism and hardware", key=HARDWARE_OPEN, on_change="rerun")
    times = sb.expander("Times and thresholds", key=TIMES_OPEN, on_change="rerun")
    if hardware.open:
        _hardware_controls(hardware, spec)
    if times.open:
        _times_controls(times, spec)


# Widgets in the two closed-by-default expanders are drawn only while the expander is open (a
# rerun opens it): about 6 ms less per rerun on every page.  Their values live on in session
# state under the same keys (re-saved every run, so Streamlit does not drop them).
# Bench: bench/README.md, "What made the difference" item 8 (lazy sidebar expanders).
HARDWARE_OPEN, TIMES_OPEN = "sb_hardware_open", "sb_times_open"
LAZY_KEYS = ("tp", "tpd", "fw", "ep", "epd", "par", "gpu", "gpud", "kvd", "attn", "win",
             "step_mode", "step_ms",
             "prefill_mode", "prefill_ms", "k", "share")  # fmt: skip


def _model_label(spec: ModelSpec) -> str:
    return f"{spec.name} · {spec.attention}"


def _catalog_labels() -> dict[str, str]:
    """The model box's labels of the catalog's models, made once per process (``ui.perf``)."""
    return {i: _model_label(catalog.get_model(i)) for i in catalog.model_ids()}


def _stack_caption(sb, st_) -> None:
    sb.caption(
        "Wire speed, no overhead: the source article's arithmetic."
        if st_.is_ideal
        else f"Measured: {st_.request_s * 1e3:,.3g} ms per request"
        + (f", {st_.message_s * 1e6:,.3g} µs per message" if st_.message_s else "")
        + f", {st_.efficiency_max:.0%} of the link."
    )


def _decode_gpu_name(gpu_id: str) -> str:
    return catalog.get_gpu(gpu_id).name if gpu_id else "the same as prefill"


def _hardware_controls(box, spec) -> None:
    with box:
        tps = valid_tp(spec, P.MAX_TP)
        c1, c2 = st.columns(2)
        input_widget(c1.selectbox, "tp", options=tps)
        input_widget(c2.selectbox, "tpd", options=tps)
        _expert_controls(spec)
        input_widget(st.selectbox, "fw", format_func=lambda f: catalog.get_framework(f).name)
        input_widget(st.number_input, "par")
        input_widget(st.selectbox, "gpu", format_func=lambda g: catalog.get_gpu(g).name)
        input_widget(st.selectbox, "gpud", format_func=_decode_gpu_name)
        input_widget(st.selectbox, "kvd")
        input_widget(st.radio, "attn", horizontal=True,
                     format_func={"tp": "Tensor (tp)", "dp": "Data (dp)"}.get)  # fmt: skip
        if spec.attention == "mla" and st.session_state.get("attn") == "dp":
            st.caption(f"{spec.name} is served with data-parallel attention (as DeepSeek is).")
        if any(g.window_tokens for g in spec.groups):
            input_widget(st.radio, "win", horizontal=True)


def _expert_controls(spec) -> None:
    """Prefill and decode EP: offered for a mixture of experts only (1 = off)."""
    if not spec.is_moe:
        return
    c1, c2 = st.columns(2)
    for box, name in ((c1, "ep"), (c2, "epd")):
        input_widget(box.number_input, name, step=1)


def _times_controls(box, spec) -> None:
    with box:
        est_widgets("step")
        st.caption(_roofline_caption(spec))
        est_widgets("prefill")
        c1, c2 = st.columns(2)
        input_widget(c1.number_input, "k")
        input_widget(c2.number_input, "share")


def _link_label(link_id: str) -> str:
    if link_id == P.CUSTOM_LINK:
        return "Custom bandwidth…"
    return catalog.get_link(link_id).name


def _roofline_caption(spec: ModelSpec) -> str:
    ss = st.session_state
    try:
        lb = decode_step_lower_bound_s(
            spec,
            ss["seq"],
            ss["batch"],
            gpu=catalog.get_gpu(ss["gpu"]),
            tp=ss["tpd"],
            kv_dtype=ss["kvd"],
        )
    except ValueError:
        return ""
    gpu = catalog.get_gpu(ss["gpu"])
    try:
        est = estimate_decode_step_s(spec, ss["seq"], ss["batch"], gpu=gpu, tp=ss["tpd"],
                                     kv_dtype=ss["kvd"], ep=ss.get("epd", 1),
                                     framework=ss.get("fw", I.DEFAULT_FRAMEWORK),
                                     data_parallel_attention=ss.get("attn") == "dp")  # fmt: skip
    except ValueError:
        return ""
    return (
        f"Estimate on {ss['tpd']}× {gpu.name}: {fmt_ms(float(est))} (fitted on measured vLLM "
        f"steps; docs/model.md, Fidelity). Roofline lower bound: {fmt_ms(float(lb))}."
    )
