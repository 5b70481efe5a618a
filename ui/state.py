"""The shared scenario: URL ⇄ session state ⇄ sidebar widgets, and cached model calls.

Streamlit's sidebar navigation drops the query string, and a widget that is not rendered loses
its value.  So the scenario lives in session state under the URL names (``ui.params``), is read
from the URL once per session, rendered in the sidebar on every page (app.py calls
``sidebar_controls`` before ``run()``), and written back to the URL on every run.
"""

from __future__ import annotations

import gc
from dataclasses import replace
from urllib.parse import urlencode

import streamlit as st

from kvmodel import catalog
from kvmodel.dtypes import COMPRESSION_BITS, KV_DTYPE_BITS
from kvmodel.modelcodec import encode_model
from kvmodel.size import valid_tp
from kvmodel.specs import ModelSpec
from kvmodel.timing import decode_step_lower_bound_s
from kvmodel.transfer import Scenario
from kvmodel.units import fmt_ms

from . import params as P
from .memo import Memo

_INIT = "_scenario_initialised"
NOTICES = "_notices"


def ensure_router() -> None:
    """Call first on every page: make sure app.py (router + sidebar) drives this run.

    Streamlit treats an app with a ``pages/`` folder as an old-style multipage app until the
    first ``st.navigation`` call in the process; a first request straight to /models then runs
    the page file alone, without the sidebar or the scenario.  AppTest resets that flag on every
    run.  When it happens, switch the flag off and rerun, so app.py routes the request.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a future Streamlit without the old flag
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()


_MEMO = Memo(max_entries=512)  # process-wide, like st.cache_resource: pure results, read-only


def cached(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` computed once per distinct inputs and shared, not copied.

    For pure sweeps and figure builders: a rerun whose inputs did not change (or changed only
    in what this piece does not use) costs a dictionary lookup instead of a rebuild.  Results
    are read-only.  Keys are cheap (see ``ui.memo``): Streamlit's own cache hashing of a
    scenario cost more than most computations it saved.
    """
    return _MEMO(fn, *args, **kwargs)


def cached_with_spinner(text: str, fn, *args, **kwargs):
    """``cached`` that shows ``text`` in a spinner while a miss computes (long analyses)."""
    return _MEMO.call(fn, args, kwargs, around_miss=lambda: st.spinner(text))


def clear_cache() -> None:
    """Forget every memoised result (tests; a changed catalog file)."""
    _MEMO.clear()
    for memo in _OTHER_MEMOS:
        memo.clear()


_OTHER_MEMOS: list = []  # module memos cleared with this one (traffic_ui's uploads)


_GC_SETTLED: list[bool] = []  # process-wide: becomes [True] after the first full run


def settle_gc() -> None:
    """Once per process, at the end of the first full run: freeze what is alive now.

    After the first run the process holds ~150,000 long-lived objects (modules, catalogs,
    plotly's validators, Streamlit's registries).  Every full (generation 2) collection walks
    them all: about 130 ms, landing on a random rerun every few dozen.  ``gc.freeze`` moves
    them to a permanent generation the collector skips; garbage made later is collected as
    before (bench/README.md has the numbers).
    """
    if _GC_SETTLED:
        return
    _GC_SETTLED.append(True)
    gc.collect()
    gc.freeze()


def imported_models() -> dict[str, ModelSpec]:
    return st.session_state.setdefault("_imported", {})


def model_spec(model_id: str | None = None) -> ModelSpec:
    mid = model_id or st.session_state["model"]
    return imported_models().get(mid) or catalog.get_model(mid)


def init_from_url() -> None:
    """Read the query string once per session into session state; keep warnings to show."""
    if st.session_state.get(_INIT):
        return
    values, warnings, imported = P.parse_query(st.query_params.to_dict())
    imported_models().update(imported)
    for name, value in values.items():
        st.session_state[name] = value
    st.session_state["lw"] = bool(values["lw"])
    st.session_state["present"] = bool(values["present"])
    st.session_state["prefill_mode"] = "Estimate" if values["prefill"] == "est" else "Given"
    st.session_state["prefill_ms"] = 200.0 if values["prefill"] == "est" else values["prefill"]
    st.session_state[NOTICES] = warnings
    st.session_state[_INIT] = True


def add_notice(text: str) -> None:
    st.session_state.setdefault(NOTICES, []).append(text)


def current_values() -> dict:
    ss = st.session_state
    values = {name: ss.get(name, P.DEFAULTS[name]) for name in P.DEFAULTS}
    values["lw"] = int(bool(ss.get("lw")))
    values["present"] = int(bool(ss.get("present")))
    values["prefill"] = "est" if ss.get("prefill_mode") != "Given" else float(ss["prefill_ms"])
    mid = values["model"]
    values["cfg"] = encode_model(imported_models()[mid]) if mid in imported_models() else ""
    return values


def sync_url() -> None:
    """Write the scenario to the URL (every run, every page)."""
    query = P.to_query(current_values())
    if st.query_params.to_dict() != query:
        st.query_params.from_dict(query)


def share_url() -> str:
    """The current page's address with the whole scenario in its query string."""
    base = ""
    try:
        base = (st.context.url or "").split("?")[0]
    except Exception:  # noqa: BLE001 - st.context.url is missing outside a browser session
        base = ""
    return f"{base}?{urlencode(P.to_query(current_values()))}"


def _on_model_change() -> None:
    """Keep the other inputs valid for the newly chosen model, and say what changed."""
    ss = st.session_state
    spec = model_spec()
    if ss["seq"] > spec.max_context_tokens:
        add_notice(
            f"Sequence length lowered to {spec.name}'s max context of "
            f"{spec.max_context_tokens:,} tokens."
        )
        ss["seq"] = spec.max_context_tokens
    tps = valid_tp(spec, P.MAX_TP)
    for key in ("tp", "tpd"):
        if ss[key] not in tps:
            add_notice(f"{key.upper()} {ss[key]} does not fit {spec.name}'s KV heads; set to 1.")
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
SIDEBAR_KEYS = ("model", "batch", "link", "bw", "lat", "eff", "comp", "lw", "codec")


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
    labels = {i: f"{model_spec(i).name} · {model_spec(i).attention}" for i in ids}
    sb.selectbox("Model", ids, key="model", on_change=_on_model_change, format_func=labels.get)
    ss[_MODEL_SHOWN] = ss["model"]
    spec = model_spec()
    ss["seq"] = min(max(int(ss["seq"]), 1), spec.max_context_tokens)
    sb.select_slider(
        "Sequence length [tokens]",
        _seq_options(spec.max_context_tokens, ss["seq"]),
        key="seq",
        format_func=lambda v: f"{v:,}",
        help="Prompt tokens per request (log-spaced steps; type an exact value below).",
    )
    ss["seq_exact"] = ss["seq"]
    c1, c2 = sb.columns(2)
    c1.number_input(
        "Exact tokens",
        1,
        spec.max_context_tokens,
        key="seq_exact",
        step=1,
        on_change=_set_seq_from_exact,
    )
    c2.number_input("Batch [requests]", 1, P.MAX_BATCH, key="batch", step=1)
    links = P.link_ids() + [P.CUSTOM_LINK]
    sb.selectbox("Interconnect", links, key="link", format_func=_link_label)
    if ss["link"] != P.CUSTOM_LINK:
        lk = catalog.get_link(ss["link"])
        sb.caption(
            f"{lk.bandwidth_bytes_per_s / 1e9:,.4g} GB/s per direction, "
            f"{lk.latency_s * 1e6:,.3g} µs latency"
        )
    if ss["link"] == P.CUSTOM_LINK:
        c1, c2 = sb.columns(2)
        c1.number_input("Bandwidth [GB/s per direction]", 0.001, 100_000.0, key="bw")
        c2.number_input("Latency [µs]", 0.0, 1_000_000.0, key="lat")
    sb.slider(
        "Link efficiency [%]",
        1.0,
        100.0,
        key="eff",
        step=1.0,
        format="%.0f %%",
        help="Achieved ÷ nominal bandwidth. 100 % reproduces datasheet arithmetic.",
    )
    with sb.expander("Mitigations", expanded=True):
        st.selectbox(
            "Transfer compression",
            list(COMPRESSION_BITS),
            key="comp",
            help="Quantize the KV only for the trip (scales included, quantize + "
            "dequantize time counted).",
        )
        st.toggle(
            "Send layer by layer",
            key="lw",
            help="Each layer's KV leaves as soon as prefill has computed it.",
        )
        if ss["comp"] != "none":
            st.number_input(
                "Quantize/dequantize throughput [GB/s]",
                1.0,
                100_000.0,
                key="codec",
                step=100.0,
                help="Uncompressed KV bytes one GPU quantizes (or dequantizes) per second.",
            )
    hardware = sb.expander("Parallelism and hardware", key=HARDWARE_OPEN, on_change="rerun")
    times = sb.expander("Times and thresholds", key=TIMES_OPEN, on_change="rerun")
    if hardware.open:
        _hardware_controls(hardware, spec)
    if times.open:
        _times_controls(times, spec)


# Widgets in the two closed-by-default expanders are drawn only while the expander is open (a
# rerun opens it): about 6 ms less per rerun on every page.  Their values live on in session
# state under the same keys (re-saved every run, so Streamlit does not drop them).
HARDWARE_OPEN, TIMES_OPEN = "sb_hardware_open", "sb_times_open"
LAZY_KEYS = ("tp", "tpd", "par", "gpu", "kvd", "step", "prefill_mode", "prefill_ms", "k", "share")


def _hardware_controls(box, spec) -> None:
    with box:
        tps = valid_tp(spec, P.MAX_TP)
        c1, c2 = st.columns(2)
        c1.selectbox("Prefill TP", tps, key="tp")
        c2.selectbox("Decode TP", tps, key="tpd")
        st.number_input("Parallel links (0 = one per TP rank)", 0, 1024, key="par", step=1)
        st.selectbox(
            "GPU (for estimates)",
            list(catalog.gpus()),
            key="gpu",
            format_func=lambda g: catalog.get_gpu(g).name,
        )
        st.selectbox("KV cache dtype", sorted(KV_DTYPE_BITS), key="kvd")


def _times_controls(box, spec) -> None:
    ss = st.session_state
    with box:
        st.number_input("Decode step [ms]", 0.1, 10_000.0, key="step", step=1.0)
        st.caption(_roofline_caption(spec))
        st.radio("Prefill time", ("Estimate", "Given"), key="prefill_mode", horizontal=True)
        if ss["prefill_mode"] == "Given":
            st.number_input("Prefill [ms]", 0.0, 3_600_000.0, key="prefill_ms", step=10.0)
        c1, c2 = st.columns(2)
        c1.number_input("Critical at k × step", 0.05, 1000.0, key="k", step=0.5)
        c2.number_input("TTFT share target [%]", 1.0, 99.0, key="share", step=1.0)


def page_widget(widget, label: str, name: str, *, to_widget=None, from_widget=None, **kwargs):
    """A page-level input stored under its URL name, so it survives pages that do not draw it.

    The widget gets the key ``w_<name>``; its value is copied to ``name`` on change.
    """
    ss = st.session_state
    to_widget = to_widget or (lambda v: v)
    from_widget = from_widget or (lambda v: v)
    wkey = f"w_{name}"
    ss[wkey] = to_widget(ss[name])

    def _store():
        ss[name] = from_widget(ss[wkey])

    return from_widget(widget(label, key=wkey, on_change=_store, **kwargs))


def forget_when_removed(uploader_key: str, kept_key: str) -> None:
    """Uploader callback: the uploader's ✕ forgets the kept upload for good (an uploader left
    empty by a page switch does not call it, so the kept upload is shown again)."""
    if st.session_state.get(uploader_key) is None:
        st.session_state.pop(kept_key, None)


def show_kept_upload(name: str, kept_key: str, button_key: str, note: str = "") -> None:
    """Say that an earlier upload is shown, with a button that forgets it."""
    st.caption(
        f"Showing {name}, uploaded earlier in this session. Upload another file to replace it, "
        f"or remove it with Forget.{' ' + note if note else ''}"
    )
    st.button(
        "Forget this upload",
        key=button_key,
        icon=":material/close:",
        on_click=lambda: st.session_state.pop(kept_key, None),
    )


def kept_widget(widget, label: str, name: str, default, **kwargs):
    """A page-level input outside the URL whose value survives leaving the page: ``name``
    holds it in session state (from ``default``), the widget is ``w_<name>``."""
    st.session_state.setdefault(name, default)
    return page_widget(widget, label, name, **kwargs)


def id_list(name: str) -> list[str]:
    return [i for i in str(st.session_state[name]).split(",") if i]


def id_multiselect(label: str, name: str, options: list[str], format_func=str, **kwargs):
    """Multiselect of ids kept as a comma-separated URL value; never empty."""

    def _from(v):
        return ",".join(v) if v else st.session_state[name]

    chosen = page_widget(
        st.multiselect,
        label,
        name,
        options=options,
        format_func=format_func,
        to_widget=lambda v: [i for i in str(v).split(",") if i in options],
        from_widget=_from,
        **kwargs,
    )
    return [i for i in chosen.split(",") if i]


PRESENTATION_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
html { font-size: 19px; }
.stMainBlockContainer { max-width: 96%; padding-top: 5rem; }
[data-testid="stMetricValue"] { font-size: 2.6rem; }
</style>
"""


def presentation_mode() -> None:
    """Large type and no sidebar when ``present`` is on (also from the link: ``present=1``)."""
    if not st.session_state.get("present"):
        return
    st.html(PRESENTATION_CSS)
    st.button(
        "Exit presentation mode",
        icon=":material/close_fullscreen:",
        key="present_exit",
        on_click=lambda: st.session_state.update(present=False),
    )


def share_box() -> None:
    """Sidebar: the link to this exact scenario, with a copy button."""
    st.sidebar.toggle(
        "Presentation mode",
        key="present",
        help="Large type, no sidebar; a link with present=1 opens this way.",
    )
    box = st.sidebar.expander(
        "Share this scenario", icon=":material/link:", key="sb_share_open", on_change="rerun"
    )
    if not box.open:  # drawn only while open: the link is built when someone wants it
        return
    with box:
        st.code(share_url(), language=None, wrap_lines=True)
        st.caption(
            "Copy the link with the button at the top right of the box; it opens this "
            "page with every input above."
        )
        report_download([("This scenario", scenario)], "kv-transfer-report", key="dl_report")


def report_download(labelled, file_stem: str, *, key: str, title: str = "KV transfer report"):
    """A button that builds the standalone HTML report when pressed (offline, self-contained).

    ``labelled`` holds (label, Scenario or a zero-argument function returning one).
    """
    from .report import report_html

    link = share_url()

    def build() -> str:
        items = [(label, sc() if callable(sc) else sc) for label, sc in labelled]
        return report_html(items, share_url=link if link.startswith("http") else None, title=title)

    st.download_button(
        "Download report (HTML)",
        build,
        file_name=f"{file_stem}.html",
        mime="text/html",
        icon=":material/description:",
        key=key,
        on_click="ignore",
        help="One self-contained page: inputs, verdicts, charts, assumptions and a link back.",
    )


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
    return (
        f"Roofline lower bound on {ss['tpd']}× {catalog.get_gpu(ss['gpu']).name}: "
        f"{fmt_ms(float(lb))} (weights + KV read once from HBM; real steps are 2–4× longer)."
    )


def scenario() -> Scenario:
    """The scenario as the sidebar holds it.  Raises ValueError on an impossible combination."""
    return P.scenario_from_values(current_values(), imported_models())


def scenario_or_stop() -> Scenario:
    """The scenario, or a readable error and a stopped page."""
    try:
        return scenario()
    except ValueError as exc:
        st.error(f"This scenario cannot be computed: {exc}. Change the inputs in the sidebar.")
        st.stop()


def show_notices() -> None:
    """Show (once) what the link or a model change altered."""
    notes = st.session_state.get(NOTICES) or []
    if notes:
        st.warning(
            "Some inputs were adjusted:\n\n" + "\n".join(f"- {n}" for n in notes),
            icon=":material/warning:",
        )
        st.session_state[NOTICES] = []


def import_config(max_bytes: int) -> None:
    """Button callback: import the uploaded or pasted config.json and select it.

    Runs before the script, so it may set the sidebar's model; the outcome is shown by
    ``show_import_result``.
    """
    from kvmodel.hfconfig import load_hf_config

    ss = st.session_state
    upload, quant = ss.get("cfg_upload"), ss.get("quant_upload")
    pasted = (ss.get("cfg_paste") or "").strip()
    source = upload.getvalue() if upload is not None else pasted.encode()  # content, not a path
    name = upload.name if upload is not None else "the pasted config.json"
    if not source:
        ss["_import_result"] = (
            "error",
            "Nothing to import: upload a config.json or paste its text first.",
        )
        return
    if len(source) > max_bytes:
        ss["_import_result"] = (
            "error",
            f"{name} is {len(source):,} bytes; a config.json is "
            f"expected to be under {max_bytes:,} bytes.",
        )
        return
    stem = upload.name.removesuffix(".json").lower() if upload is not None else None
    try:
        spec = load_hf_config(
            source,
            model_id=stem and stem.replace("--", "-"),
            quant_config=quant.getvalue() if quant is not None else None,
        )
    except ValueError as exc:
        ss["_import_result"] = ("error", f"Could not import {name}: {exc}")
        return
    mid = spec.id if spec.id.startswith(P.IMPORTED_PREFIX) else f"{P.IMPORTED_PREFIX}{spec.id}"
    taken, base, k = imported_models(), mid, 1
    while mid in taken and taken[mid] != replace(spec, id=mid):  # another model, same name
        k += 1
        mid = f"{base}-{k}"
    imported_models()[mid] = replace(spec, id=mid)
    ss["model"] = mid
    _on_model_change()
    ss["_import_result"] = (
        "success",
        f"Imported {spec.name} as “{mid}” and selected it in the "
        "sidebar; the link now carries its fields.",
    )


def show_import_result() -> None:
    kind, msg = st.session_state.pop("_import_result", (None, None))
    if kind == "error":
        st.error(msg)
    elif kind == "success":
        st.success(msg)
