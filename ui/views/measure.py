"""Measured vs model: scrapes, perftest, nsys and timing files set beside the sidebar's scenario."""

from functools import partial

import streamlit as st

from kvmodel.calibrate import (
    compare_nsys_to_model,
    compare_to_model,
    efficiency_warning,
    link_efficiency,
)
from kvmodel.measure import DEFAULT_NVTX_PATTERN, NCCL_SENDRECV_PATTERN
from kvview import csv_tables, figures
from kvview import measure_text as mt
from kvview.fmt import fmt_bandwidth, fmt_bytes, fmt_time, minus_sign
from ui import exports_ui, perf, urlstate, widgets
from ui import measure_ui as mu

UPLOAD_TYPES = ["prom", "txt", "csv", "json"]


SOURCES = ["Sample", "Upload", "Paste"]
KEPT = "measure_kept"  # session key: (bytes, name) of the last upload


def _upload() -> tuple[bytes, str]:
    """The uploaded file's bytes and name, kept for the session; stops the page without one."""
    up = st.file_uploader(
        "A /metrics scrape (.prom, .txt), perftest ib_*_bw output (.txt, --out_json .json), an "
        f"nsys stats CSV or a bytes,seconds CSV; one file, at most {mu.MAX_UPLOAD_MB} MB",
        type=UPLOAD_TYPES,
        key="measure_upload",
        max_upload_size=mu.MAX_UPLOAD_MB,
        on_change=widgets.forget_when_removed,
        args=("measure_upload", KEPT),
    )
    if up is not None:
        st.session_state[KEPT] = (up.getvalue(), up.name)
        return st.session_state[KEPT]
    kept = st.session_state.get(KEPT)
    if kept is None:
        st.info(
            "Upload a measurement to set it beside the model. Uploaded files stay in this "
            "session and are not part of shared links; the Recipes page shows how to make "
            "them.",
            icon=":material/upload_file:",
        )
        st.stop()
    widgets.show_kept_upload(kept[1], KEPT, "measure_forget")
    return kept


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Measured vs model")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()
    mu.show_apply_result()
    data, name, read_as = _measurement()
    res = _read(data, name, read_as)
    if res.kind == "prometheus":
        _prometheus(sc, res, name)
    elif res.kind in mu.FIT_KINDS:
        _fit(sc, res)
    elif res.kind == "nsys":
        _nsys(sc, res)


def _measurement() -> tuple[bytes, str, str]:
    """The source and format controls; the measurement's bytes, its name and the format."""
    c = st.columns([3, 2])
    with c[0]:
        source = widgets.kept_widget(
            st.radio, "Measurement", "measure_source", "Sample", options=SOURCES, horizontal=True
        )
    with c[1]:
        read_as = widgets.page_widget(  # in the link (mread)
            st.selectbox,
            "Read as",
            "mread",
            options=list(mu.READ_AS),
            format_func=mu.READ_AS.get,
            help="The format is detected from the content; choose one when detection gets it "
            "wrong.",
        )
    if source == "Sample":
        data, name = _sample()
    elif source == "Upload":
        data, name = _upload()
    else:
        data, name = _pasted()
    return data, name, read_as


def _sample() -> tuple[bytes, str]:
    """The shipped sample chosen (in the link as meas), with the note that it is synthetic."""
    files = mu.sample_files()
    if st.session_state["meas"] not in files:  # a sample removed since the link was made
        st.session_state["meas"] = mu.DEFAULT_SAMPLE if mu.DEFAULT_SAMPLE in files else files[0]
    name = widgets.page_widget(  # in the link (meas)
        st.selectbox,
        "Sample file",
        "meas",
        options=files,
        format_func=mu.sample_label,
    )
    st.caption(
        ":material/science: The samples are **synthetic**: written from each tool's documented "
        "output format with numbers from a stated model plus seeded noise; no cluster was "
        "measured (data/measurements/README.md). Replace them with your own files."
    )
    return (mu.SAMPLES_DIR / name).read_bytes(), name


def _pasted() -> tuple[bytes, str]:
    """The pasted text, read when its button is pressed; stops the page without one."""
    ss = st.session_state
    st.text_area(
        "Paste a /metrics scrape, perftest output, an nsys stats CSV or bytes,seconds lines",
        key="measure_paste",
        height=180,
        placeholder="# TYPE llm_kv_transfer_gap_seconds histogram\n"
        'llm_kv_transfer_gap_seconds_bucket{le="0.005"} 640\n…',
    )
    st.button("Read the pasted text", key="measure_read", on_click=mu.take_paste)
    pasted = ss.get(mu.PASTED) or ""
    if not pasted.strip():
        st.info(
            "Paste the text and press the button (for files over a few MB, upload instead).",
            icon=":material/content_paste:",
        )
        st.stop()
    return pasted.encode("utf-8"), "the pasted text"


def _read(data: bytes, name: str, read_as: str):
    """The measurement read (format detected unless chosen; nsys: the transfers' pattern)."""
    if read_as == "auto":
        kind, error = mu.detect(data, name)
        if error:
            st.error(error, icon=":material/error:")
            st.stop()
    else:
        kind = read_as
    pattern = None
    if kind == "nsys":
        default = f"NCCL kernels {NCCL_SENDRECV_PATTERN}, NVTX ranges {DEFAULT_NVTX_PATTERN}"
        pattern = (
            st.text_input(
                "Transfers to select (regular expression on the kernel or NVTX range name, "
                "case-insensitive; empty = the default)",
                key="measure_pattern",
                placeholder=default,
            ).strip()
            or None
        )
    res = mu.load(data, name, kind, pattern)
    if res.error:
        st.error(res.error, icon=":material/error:")
        st.stop()
    st.caption(mu.recognised(res))
    return res


def _prometheus(sc, res, name: str) -> None:
    """A /metrics scrape: the gap and TTFT against the model."""
    m = res.measurement
    d = m.data
    cmp = perf.cached(compare_to_model, sc, d)  # memoised: a plain rerun redraws, never recomputes
    gap = d.summaries.get(d.gap_source) if d.gap_source else None
    head, table = st.container(), st.container()  # filled after the charts below them
    _scrape_charts(d, cmp, gap)  # sent first: the browser draws them while the rest arrives
    with head:
        _scrape_head(sc, d, cmp, gap, name)
    with table:
        _scrape_vs_model(sc, d, cmp)


def _scrape_head(sc, d, cmp, gap, name: str) -> None:
    """The takeaway, the button that applies the scrape, the gauge warning, the tiles."""
    st.info(perf.cached(mt.prometheus_takeaway, d, cmp, sc), icon=":material/lightbulb:")
    reveal = mt.scrape_settings(d, sc)
    if reveal and cmp.verdict.agree is False:
        st.button(
            "Set the sidebar to what the scrape reveals ("
            + ", ".join(f"{v:,} tokens" if k == "seq" else f"{v:g} GB/s" for k, v in reveal.items())
            + ")",
            key="measure_apply_scrape",
            on_click=mu.apply_scrape_to_sidebar,
            args=(reveal, name),
            icon=":material/tune:",
        )
    if gap is not None and gap.kind == "gauge" and gap.label_sets > 1:
        st.warning(
            f"{d.gap_source} is a gauge with {gap.label_sets:,} label sets, probably one per "
            "request: its series grow without bound and a scrape keeps only each one's last "
            "value. Export a Histogram instead (see Recipes).",
            icon=":material/warning:",
        )
    _scrape_metrics(sc, d, cmp)


def _scrape_metrics(sc, d, cmp) -> None:
    """The scrape's gap, TTFT, share, verdict and bandwidth tiles."""
    k = st.columns(4)
    k[0].metric(
        "Transfer gap mean",
        fmt_time(d.gap_mean_s) if d.gap_mean_s is not None else "not in scrape",
        help=f"From {d.gap_source}: mean = _sum ÷ _count over {d.gap_count or 0:,.0f} transfers"
        if d.gap_source
        else None,
    )
    k[1].metric(
        "Gap p50",
        fmt_time(d.gap_p50_s) if d.gap_p50_s is not None else "–",
        help="From the buckets, as Prometheus' histogram_quantile interpolates",
    )
    k[2].metric(
        "Gap p99",
        fmt_time(d.gap_p99_s) if d.gap_p99_s is not None else "–",
        help="From the buckets, as Prometheus' histogram_quantile interpolates",
    )
    k[3].metric(
        "TTFT mean",
        fmt_time(d.ttft_mean_s) if d.ttft_mean_s is not None else "not in scrape",
        help=f"From {d.ttft_source}" if d.ttft_source else None,
    )
    k = st.columns(4)
    share = d.transfer_share_of_ttft
    under = share is not None and share <= sc.share_target
    k[0].metric(
        "Measured share of TTFT",
        f"{share:.1%}" if share is not None else "–",
        delta=minus_sign(f"{(share - sc.share_target) * 100:+.1f} pp vs the "
                         f"{sc.share_target:.0%} line")
        if share is not None
        else None,
        # set from the sign: the typographic minus hides it from Streamlit (a red up-arrow)
        delta_color="green" if under else "red",
        delta_arrow="down" if under else "up",
        help="Mean gap ÷ mean TTFT; the target is the sidebar's TTFT share target",
    )
    k[1].metric(
        f"Verdict vs {sc.share_target:.0%}",
        cmp.verdict.measured or "–",
        help=f"A gap above {sc.share_target:.0%} of TTFT gives back much of the "
        "disaggregation gain",
    )
    k[2].metric(
        "Effective bandwidth",
        fmt_bandwidth(d.effective_bandwidth_bytes_per_s)
        if d.effective_bandwidth_bytes_per_s is not None
        else "not in scrape",
        help=f"Measured: {d.bandwidth_source}; per transfer (one NIC path)"
        if d.bandwidth_source
        else None,
    )
    k[3].metric(
        "Model's share of TTFT",
        f"{cmp.transfer_share_of_ttft.model:.1%}",
        help=f"For the sidebar's scenario: {mt.scenario_label(sc)}",
    )


def _scrape_vs_model(sc, d, cmp) -> None:
    """The model against the scrape: table and notes (the charts below: _scrape_charts)."""
    st.subheader("Model vs measured")
    st.caption(
        f"Model side: the sidebar's scenario ({mt.scenario_label(sc)}). Set its model, prompt "
        "length, batch, TP and link to what the cluster served for a like-for-like comparison."
    )
    table = perf.cached(mt.prometheus_table, cmp)
    st.dataframe(table, hide_index=True, width="stretch")
    exports_ui.table_download(partial(csv_tables.model_vs_measured_frame, cmp), "model-vs-measured")
    notes = list(d.notes) + [
        n for n in cmp.notes if not (n.startswith("measured gap taken from") and d.notes)
    ]
    st.caption("Notes: " + "; ".join(notes) + ".")


def _scrape_charts(d, cmp, gap) -> None:
    """Model against measured per time, and the gap's distribution against the model's."""
    rows = [
        (label, getattr(cmp, key).model, getattr(cmp, key).measured)
        for key, label in (
            ("exposed_transfer_s", "KV transfer gap"),
            ("transfer_s", "whole KV transfer"),
            ("prefill_s", "prefill"),
            ("ttft_s", "TTFT"),
        )
        if getattr(cmp, key).measured is not None
    ]
    if rows:
        exports_ui.chart(perf.cached(figures.figure_model_vs_measured.unbuilt, rows),
                         "model-vs-measured")
    if gap is not None and (gap.buckets or gap.samples):
        exports_ui.chart(
            perf.cached(
                figures.figure_gap_distribution.unbuilt,
                gap.buckets,
                gap.samples,
                model_s=cmp.exposed_transfer_s.model,
                source=d.gap_source,
            ),
            "measured-gap",
        )


def _fit(sc, res) -> None:
    """perftest or bytes,seconds pairs: the latency + bandwidth fit against the link."""
    m = res.measurement
    fit = res.fit
    link = sc.link
    eff = link_efficiency(link, fit)
    st.info(perf.cached(mt.fit_takeaway, fit, link, m.name), icon=":material/lightbulb:")
    k = st.columns(4)
    k[0].metric(
        "Fitted bandwidth",
        fmt_bandwidth(fit.bandwidth_bytes_per_s),
        help="Per direction, one stream: the asymptote for large messages",
    )
    intercept_label = mt.intercept_label(fit)
    k[1].metric(
        intercept_label,
        f"{fit.latency_s * 1e6:,.3g} µs",
        help="perftest keeps many messages in flight, so its intercept is the per-message cost "
        "of a pipelined stream, not the one-way latency (ib_write_lat measures that)"
        if fit.source == "bandwidth"
        else "The fixed cost of one transfer"
        + (" (clamped at 0: the free fit was negative)" if fit.latency_clamped else ""),
    )
    too_fast = efficiency_warning(eff, link)
    k[2].metric(
        "Efficiency vs nominal",
        "over 100 %" if too_fast else f"{eff:.1%}",
        help=f"Fitted ÷ {link.name}'s nominal {fmt_bandwidth(link.bandwidth_bytes_per_s)} per "
        "direction",
    )
    if too_fast:
        st.warning(f"Not an efficiency: {too_fast}.", icon=":material/warning:")
    k[3].metric(
        "RMS relative error",
        f"{fit.rms_relative_error:.2%}",
        help=f"Of the fitted times over {fit.n} points",
    )
    st.caption(
        f"Half the fitted bandwidth is reached at {fmt_bytes(mt.half_bandwidth_bytes(fit))} "
        f"messages ({intercept_label.lower()} × bandwidth); {fit.n} points fitted, weighting "
        "each by its relative error so small and large messages count alike."
    )
    _fit_charts(res, fit, link)
    _use_fit(sc, res, fit, eff)


def _fit_charts(res, fit, link) -> None:
    """The fit drawn over the points, and the efficiency curve."""
    m = res.measurement
    sizes, bws = mu.fit_points(res)
    if res.kind == "pairs":
        seconds = list(m.data.seconds)
        exports_ui.chart(perf.cached(figures.figure_time_fit.unbuilt, sizes, seconds, fit),
                         "fit-time")
    else:
        exports_ui.chart(
            perf.cached(
                figures.figure_bandwidth_fit.unbuilt,
                sizes,
                bws,
                fit,
                nominal=link.bandwidth_bytes_per_s,
                link=link.name,
            ),
            "fit-bandwidth",
        )
    exports_ui.chart(
        perf.cached(
            figures.figure_efficiency_curve.unbuilt,
            sizes,
            bws,
            fit,
            nominal=link.bandwidth_bytes_per_s,
            link=link.name,
        ),
        "efficiency-curve",
    )


def _use_fit(sc, res, fit, eff) -> None:
    """Apply the fit to the scenario: as a custom link or as the link efficiency."""
    m, ss, link = res.measurement, st.session_state, sc.link
    st.subheader("Use this fit")
    modes = {
        "link": (
            f"Replace the interconnect with the measured link (custom, "
            f"{fmt_bandwidth(fit.bandwidth_bytes_per_s)}, efficiency 100 %)"
        )
    }
    if mt.can_set_efficiency(fit, link) and ss.get("link") != "custom":
        modes["efficiency"] = f"Keep {link.name}, set link efficiency to {eff:.0%}"
    if ss.get("measure_apply_mode") not in modes:
        ss["measure_apply_mode"] = "link"
    st.radio("How", list(modes), key="measure_apply_mode", format_func=modes.get)
    st.button(
        "Apply this fit to the scenario",
        key="measure_apply",
        type="primary",
        icon=":material/tune:",
        on_click=mu.apply_fit_to_sidebar,
        args=(sc, fit, m.name),
    )
    st.caption(
        "The fit is one stream (one queue pair, one NIC path); the scenario's parallel links "
        "(by default the NICs both instances have) multiply it. The sidebar and the link then "
        "carry the fitted numbers to every page."
    )


def _nsys(sc, res) -> None:
    """An nsys stats CSV: the profiled transfers against the model per layer."""
    m = res.measurement
    nsys = m.data
    cmp = perf.cached(compare_nsys_to_model, sc, nsys)
    st.info(perf.cached(mt.nsys_takeaway, cmp, nsys, sc), icon=":material/lightbulb:")
    k = st.columns(5)
    k[0].metric("Transfers", f"{nsys.count:,}", help=f"From {nsys.report}")
    k[1].metric("Mean", fmt_time(nsys.mean_s), help="Total time ÷ transfers")
    k[2].metric("Median", fmt_time(nsys.median_s) if nsys.median_s is not None else "–")
    k[3].metric("Min", fmt_time(nsys.min_s))
    k[4].metric("Max", fmt_time(nsys.max_s))
    k = st.columns(5)
    k[0].metric(
        "Model per layer",
        fmt_time(cmp.per_layer_s.model),
        help=f"One layer's KV over {sc.link.name} ({cmp.model_layers} layers), whether or "
        "not layer-wise sending is on",
    )
    ratio = cmp.per_layer_s.ratio
    k[1].metric("Measured ÷ model", f"{ratio:,.2f}×" if ratio is not None else "–")
    table = perf.cached(mt.nsys_table, cmp, nsys)
    st.dataframe(table, hide_index=True, width="stretch")
    exports_ui.table_download(partial(csv_tables.nsys_vs_model_frame, cmp, nsys), "nsys-vs-model")
    if nsys.durations_s:
        exports_ui.chart(
            perf.cached(
                figures.figure_transfer_durations.unbuilt, nsys.durations_s,
                model_s=cmp.per_layer_s.model,
            ),  # fmt: skip
            "transfer-durations",
        )
    else:
        exports_ui.chart(
            perf.cached(
                figures.figure_model_vs_measured.unbuilt,
                [
                    ("mean per transfer", cmp.per_layer_s.model, nsys.mean_s),
                    ("median per transfer", cmp.per_layer_median_s.model, nsys.median_s),
                ],
                title="Model per layer vs profiled per transfer",
                unit="µs",
            ),
            "nsys-vs-model",
        )
    names = ", ".join(nsys.names[:4]) + (" …" if len(nsys.names) > 4 else "")
    st.caption(
        f"Selected ({nsys.selection}, pattern `{nsys.pattern}`): {names}."
        + ("".join(f" {n}." for n in nsys.notes))
    )
