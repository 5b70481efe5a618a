"""Traffic: what fraction of a real request-length distribution gains from disaggregation."""

from functools import partial

import streamlit as st

from kvmodel import inputs as I
from kvmodel import traffic as tr
from kvmodel.traffic import TrafficError, table_columns
from kvview import csv_tables, figures, params, tables
from kvview.fmt import fmt_bandwidth, fmt_busy, fmt_ms, fmt_sig, fmt_time, fmt_tokens
from kvview.mdtext import md_escape
from kvview.words import not_buildable, traffic_takeaway, window_sentence
from ui import exports_ui, perf, present, traffic_ui, urlstate, widgets

UPLOAD_TYPES = ["csv", "tsv", "gz", "parquet", "jsonl", "json", "prom", "txt"]


PICKS = ("pick_prompt", "pick_output", "pick_time")  # columns chosen by hand


def _upload_changed() -> None:
    """A new file starts with detected columns (the last file's picks may not exist in it)."""
    for k in PICKS:
        st.session_state.pop(k, None)
    widgets.forget_when_removed("traffic_upload", traffic_ui.KEPT)


def _upload(limit_mb: int):
    """The uploaded traffic: (requests, cache key, label); stops the page without one."""
    up = st.file_uploader(
        "Per-request table (CSV/TSV, .gz, Parquet, JSON Lines), a histogram (bucket, count) "
        f"or a vLLM/SGLang Prometheus scrape; at most {limit_mb} MB",
        type=UPLOAD_TYPES,
        key="traffic_upload",
        on_change=_upload_changed,
    )
    if up is None:
        kept = traffic_ui.kept_upload()
        if kept is not None:
            note = traffic_ui.columns_note(kept.req, kept.label)
            widgets.show_kept_upload(kept.label, traffic_ui.KEPT, "traffic_forget", note)
            return kept.req, kept.key, kept.label
        st.info(
            "Upload a file to analyse it. Uploaded traffic is not part of shared links; "
            "the scenario and thresholds are.",
            icon=":material/upload_file:",
        )
        st.stop()
    data = up.getvalue()
    picks = tuple(st.session_state.get(k) or "" for k in PICKS)
    try:
        bar = st.progress(0.0, text=f"Reading {md_escape(up.name)}…")
        req = traffic_ui.upload_requests(
            up.file_id, up.name, picks, data, progress=lambda f: bar.progress(min(f, 1.0))
        )
        bar.empty()
    except TrafficError as exc:
        bar.empty()
        st.error(md_escape(exc))  # quotes the file's name and headers
        try:
            cols = [""] + table_columns(data, name=up.name)
        except TrafficError:
            st.stop()
        st.write("Pick the columns by hand:")
        _column_pickers(cols)
        st.stop()
    key, label = ("upload", up.file_id, picks), up.name
    traffic_ui.keep_upload(req, key, label)
    st.caption(traffic_ui.columns_note(req, up.name))
    if not req.fmt.startswith("prometheus"):
        with st.expander("Read other columns"):
            _column_pickers([""] + table_columns(data, name=up.name))
    return req, key, label


def _column_pickers(cols: list[str]) -> None:
    c = st.columns(3)
    shown = {"format_func": lambda v: v or "(detected)"}
    c[0].selectbox("Prompt tokens column", cols, key="pick_prompt", **shown)
    c[1].selectbox("Output tokens column (optional)", cols, key="pick_output", **shown)
    c[2].selectbox("Timestamp column (optional)", cols, key="pick_time", **shown)


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Traffic")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()
    req, key, label = _traffic()
    _analysis(sc, req, key, label)


@st.fragment
def _analysis(sc, req, key, label) -> None:
    """The page below the traffic chosen: its thresholds, the regions, what moves them and the
    load on the link.  A fragment: a change of its controls reruns this alone (the sidebar, the
    router and the source do not change with them; bench/README.md, Session 15, page
    controls); the load on the link is a fragment of its own inside it."""
    urlstate.sync_url_in_fragment()  # the link holds these controls
    minlen, crit, hit_ratio = _controls(sc)
    mix = traffic_ui.mix(key, hit_ratio, req)
    tsc = tr.per_request_scenario(sc)
    res = traffic_ui.analyse(tsc, int(minlen), crit, mix)
    reg = res["regions"]
    head = st.container()  # filled after the chart: the browser draws the chart first
    _regions(req, reg, res, mix, minlen)
    with head:
        _context_warning_and_takeaway(sc, req, reg, label)
    # computed after the chart is sent (it is below it), and only while their boxes are open
    links = I.default("links")
    moves = _section(MOVES, "What moves the share that gains", ":material/compare_arrows:",
                     opened=st.session_state.get("links", links) != links)  # fmt: skip
    if moves.open:
        with moves:
            compared = traffic_ui.compare(tsc, int(minlen), crit,
                                          tuple(widgets.id_list("links")), mix)  # fmt: skip
            _what_moves(compared, sc)
    load = _section(LOAD, "Load on the link", ":material/speed:",
                    opened=bool(st.session_state.get("rps")))  # fmt: skip
    if load.open:
        with load:
            _load_on_link(sc, tsc, mix)


MOVES, LOAD = "traffic_moves_open", "traffic_load_open"  # session keys: the boxes are open


def _section(key: str, label: str, icon: str, *, opened: bool):
    """A box below the histogram whose contents are drawn only while it is open.  Closed, the
    page's redraw after an input change is ~30 ms shorter in the browser (bench/README.md,
    Session 28); open when the link sets its input (a shared rate or list of interconnects)
    and in presentation mode."""
    return st.expander(label, expanded=opened or present.active(), key=key, icon=icon,
                       on_change="rerun")  # fmt: skip


def _traffic():
    """The traffic analysed (a sample or an upload): its requests, memo key and label."""
    limit_mb = st.get_option("server.maxUploadSize")
    source = widgets.kept_widget(
        st.radio,
        "Traffic to analyse",
        traffic_ui.SOURCE,
        traffic_ui.SOURCES[0],
        options=traffic_ui.SOURCES,
        horizontal=True,
    )
    if source != traffic_ui.UPLOAD:
        trace = traffic_ui.sample_select("Sample")
        req = traffic_ui.sample_requests(trace)
        key, label = ("sample", trace), tr.SAMPLES[trace][1]
        st.caption(f"Source: {tr.SAMPLES[trace][2]}.")
    else:
        req, key, label = _upload(limit_mb)

    if req.skipped_rows:
        n, shown = req.skipped_rows, req.skipped_examples
        first = f"; the first {len(shown)}" if n > len(shown) else ""
        st.warning(
            f"Skipped {n:,} {'row' if n == 1 else 'rows'}{first}: " + "; ".join(shown) + ".",
            icon=":material/rule:",
        )
    return req, key, label


def _controls(sc):
    """The page's controls: minimum length, transfer-bound criterion, prefix-cache hits."""
    c = st.columns(3)
    with c[0]:
        minlen = widgets.input_widget(st.number_input, "minlen")
    with c[1]:
        crit = widgets.page_widget(
            st.radio,
            "Transfer-bound when",
            "crit",
            options=list(tr.CRITERIA),
            horizontal=True,
            format_func=lambda k: {
                "step": f"transfer ≥ {sc.k:g} × decode step",
                "share": f"share of TTFT > {sc.share_target:.0%}",
            }[k],
        )
    with c[2]:
        hit = widgets.input_widget(st.slider, "hit")
    return minlen, crit, hit / 100 if hit else None


def _context_warning_and_takeaway(sc, req, reg, label) -> None:
    """Requests past the model's context, and the takeaway sentence."""
    if reg.n_over_context:
        n = reg.n_over_context
        if not req.count_known:  # a histogram of shares
            over = f"{n / reg.n_requests:.1%} of the requests are"
        else:
            over = "1 request is" if n == 1 else f"{n:,.0f} requests are"
        st.warning(
            f"{over} longer than {sc.model.name}'s max context of "
            f"{sc.model.max_context_tokens:,} tokens, which this model cannot serve: they are "
            "counted as that long. Check the lengths, or pick the model the trace came from.",
            icon=":material/straighten:",
        )
    st.info(
        perf.cached(traffic_takeaway, reg, sc.link.name, label, req.count_known),
        icon=":material/lightbulb:",
    )


def _regions(req, reg, res, mix, minlen) -> None:
    """The share that gains, is too short or transfer-bound: tiles, histogram, window.  The
    histogram is sent first (its slot below the tiles): the browser draws it while the tiles
    arrive (bench/README.md, Session 25)."""
    tiles = st.container()
    _histogram(reg, res, mix, minlen)
    with tiles:
        _region_tiles(req, reg)


def _region_tiles(req, reg) -> None:
    """Four tiles: requests, and the shares that gain, are too short, are transfer-bound."""
    m = st.columns(4)
    if req.count_known:
        m[0].metric("Requests", f"{reg.n_requests:,.0f}")
    else:
        m[0].metric(
            "Requests",
            "shares only",
            help="This histogram gives each bucket's share of the requests, not a count",
        )
    m[1].metric(
        "Gain", f"{reg.fraction_gain:.1%}", help=f"{reg.fraction_tokens_gain:.1%} of tokens"
    )
    m[2].metric("Too short", f"{reg.fraction_too_short:.1%}")
    m[3].metric(
        "Transfer-bound",
        f"{reg.fraction_transfer_bound:.1%}",
        help=f"From {fmt_tokens(reg.critical_seq_len)}: each request is sent on its own "
        "(batch 1, its own prompt length), so this critical length can differ from the other "
        "pages', which use the sidebar's batch",
    )


def _histogram(reg, res, mix, minlen) -> None:
    """The prefix note, the histogram by region and the window sentence."""
    if mix.prefix is not None:
        st.caption(
            f"Cached prompt tokens (on average {mix.mean_prefix:,.0f} a request) are not moved, "
            "but the moved tokens attend to them, so each length's prefill here counts its "
            "requests' cached prefix. The critical length is that of a request without one: "
            "a length behind a long prefix can gain above it."
        )
    exports_ui.chart(  # unbuilt: its JSON straight from the dicts (kit.Fig.sent, ~1 ms less)
        perf.cached(
            figures.figure_traffic_histogram.unbuilt,
            mix.tokens,
            mix.weights,
            res["region"],
            min_seq_len=int(minlen),
            critical=reg.critical_seq_len,
        ),
        "traffic-regions",
    )
    st.success(perf.cached(window_sentence, res["window"]), icon=":material/call_split:")


def _what_moves(comparison, sc) -> None:
    """What moves the share that gains: the interconnects compared."""
    widgets.id_multiselect(
        "Interconnects", "links", params.link_ids(), format_func=figures.link_name
    )
    # unbuildable: last, marked; memoised (4 ms of every rerun of the page before)
    table = perf.cached(figures.traffic_comparison_frame, comparison)
    # the option's width set: sized from its cells, the longest was cut ('… ⚠ not b…')
    option = st.column_config.TextColumn(width=tables.text_width(table["Option"]))
    st.dataframe(table, hide_index=True, width="stretch", height=tables.frame_height(len(table)),
                 column_config={"Option": option})  # fmt: skip
    blocked = not_buildable(sc, widgets.id_list("links"))
    if blocked:
        st.caption(
            "⚠ Not buildable, listed last: "
            + "; ".join(f"{figures.link_name(i)}, {why}" for i, why in blocked.items())
            + " (prefill and decode instances must fit one scale-up domain together)."
        )
    exports_ui.table_download(
        partial(csv_tables.traffic_options_frame, comparison), "traffic-options"
    )


@st.fragment
def _load_on_link(sc, tsc, mix) -> None:
    """Load on the link: arrival rate, utilisation, queueing, decode time lost.  A fragment
    inside ``_analysis``: the arrival rate reruns this alone (nothing above reads it)."""
    urlstate.sync_url_in_fragment()
    widgets.input_widget(st.number_input, "rps", help=None,
                         label="Arrival rate [requests/s] (0 = from the timestamps)")  # fmt: skip
    ld = traffic_ui.load(tsc, st.session_state["rps"] or None, mix)
    if ld is None:
        st.info(
            "This traffic has no timestamps: enter an arrival rate to see link load and queueing.",
            icon=":material/schedule:",
        )
        st.stop()
    m = st.columns(4)
    m[0].metric("Arrival rate", f"{ld.rps:,.1f} req/s")
    m[1].metric(
        "Demanded",
        fmt_bandwidth(ld.bytes_per_s),
        help=f"Link capacity {fmt_bandwidth(ld.capacity_bytes_per_s)} per direction: "
        f"{_links_text(sc, ld)} together, at the link efficiency",
    )
    m[2].metric(
        "Link utilisation",
        fmt_busy(ld.utilization),
        help="Arrival rate × mean time one request's KV holds the scenario's link: every "
        "request crosses this one prefill → decode path, one after another, the too-short ones "
        "too (they gain little from disaggregation, but a disaggregated deployment still sends "
        "their KV; the 'Too short' length does not route them elsewhere). The Capacity "
        "page's figure is per NIC of its planned pools, shared by their instances, so the two "
        "differ",
    )
    m[3].metric("Mean queueing", fmt_time(ld.mean_wait_s) if ld.stable else "unbounded")
    if not ld.stable:
        st.error(
            "The link cannot keep up: KV arrives faster than it can be sent, so the queue grows "
            "without bound. Use a faster link, compression or fewer requests per link."
        )
    _queue_and_decode(sc, ld)


def _links_text(sc, ld) -> str:
    """The parallel links a request's KV crosses, in words ('8 parallel links of 12.5 GB/s')."""
    n = round(ld.capacity_bytes_per_s / (sc.link.bandwidth_bytes_per_s * sc.efficiency))
    return (f"{n} parallel links of {fmt_bandwidth(sc.link.bandwidth_bytes_per_s)}" if n > 1
            else f"one link of {fmt_bandwidth(sc.link.bandwidth_bytes_per_s)}")  # fmt: skip


def _queue_and_decode(sc, ld) -> None:
    """Transfer percentiles with queueing, the decode time lost, the link the target needs."""
    m = st.columns(4)
    m[0].metric("p50 transfer incl. queue", fmt_time(ld.p50_s))
    m[1].metric("p90 transfer incl. queue", fmt_time(ld.p90_s))
    m[2].metric("p99 transfer incl. queue", fmt_time(ld.p99_s))
    m[3].metric(
        "p99 share of TTFT",
        f"{ld.p99_share_of_ttft:.0%}" if ld.stable else "–",
        help=f"Target {sc.share_target:.0%}: the 99th percentile of (queueing + exposed "
        "transfer) ÷ (prefill + queueing + exposed transfer + first decode step)",
    )
    m = st.columns(4)
    m[0].metric(
        "Decode idle per second",
        fmt_time(ld.decode_idle_s_per_s),
        help="Decode-side time spent waiting for KV, summed over requests, per second of traffic",
    )
    m[1].metric(
        "Decode steps lost",
        f"{fmt_sig(ld.decode_steps_lost_per_s, 3)} steps/s" if ld.stable else "–",
        help=f"Decode idle ÷ the {fmt_ms(sc.decode_step_s)} decode step: each lost step is one "
        "output token a waiting request did not produce, so this is the decode throughput "
        "the transfer costs, in tokens/s",
    )
    m[2].metric(
        f"Link for p99 ≤ {sc.share_target:.0%} TTFT",
        fmt_bandwidth(ld.bandwidth_for_target_bytes_per_s)
        if ld.bandwidth_for_target_bytes_per_s
        else "not reachable",
        help=f"The bandwidth per link and direction ({_links_text(sc, ld)}) at which the p99 "
        f"transfer (queueing included) is at most {sc.share_target:.0%} of TTFT. 'Not "
        "reachable': latency or quantize time alone exceed the target.",
    )
    st.caption(
        "Queueing: the link is an M/G/1 queue with the trace's own transfer times "
        "(Pollaczek–Khinchine mean; percentiles from 200,000 simulated Poisson arrivals)."
    )
