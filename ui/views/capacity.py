"""Capacity: how many prefill and decode GPUs the traffic needs at the latency targets, and
whether disaggregation needs fewer GPUs than colocated serving."""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import streamlit as st

from kvmodel import capacity as cap
from kvmodel import inputs as I
from kvmodel import traffic as tr
from kvmodel.capacity.pools import RECEIVER_UTILIZATION, pair_scenario
from kvmodel.topology import par_text
from kvview import csv_capacity, figures, params, tables
from kvview.capacity_report import capacity_report_html
from kvview.capacity_words import (
    SIDEBAR_NOTE,
    capacity_takeaway,
    cheaper_text,
    crossover_sentence,
    gpus,
    limit_text,
    nearest_delta,
    nearest_text,
    network_caption,
    no_sweep_text,
    optimistic_links,
    pct_label,
    plan_point,
    source_caption,
    split_text,
    tile_gpus,
    tile_split,
    ttft_help,
)
from kvview.figures import capacity as figs
from kvview.fmt import fmt_bandwidth, fmt_busy, fmt_dollars, fmt_time
from ui import exports_ui, perf, traffic_ui, urlstate, widgets
from ui.views import capacity_replay

TRACE, FIXED = "trace", "fixed"
SWEEP_SPAN = 10.0  # request rates drawn from a tenth to ten times the rate asked,
SWEEP_PER_DECADE = 12  # 12 per decade (25-26 rates)


def plan_key(sc) -> tuple:
    """What of the scenario the capacity plan reads: ``pair_scenario`` (kvmodel.capacity.pools:
    batch 1, prompt 1 token, prefill estimated; the workload and the TP search set those) with
    one decode step, and whether a fixed prefill or decode step was given (the plan then says
    it is not used).

    The memo is keyed on it, so a sidebar change the plan ignores (the batch) is a lookup, not a
    new plan and sweep: bench/page_rerun.py's "change" mode changes the batch (~70 ms of model
    per rerun otherwise).  tests/test_capacity_page.py checks that equal keys give equal plans.
    """
    fixed_time = sc.prefill_s is not None or not sc.decode_step_estimated
    pair = pair_scenario(sc, sc.tp_prefill, sc.tp_decode)
    # the step it keeps is the sidebar's (estimated for the batch): the plan estimates its own
    return (replace(pair, decode_step_s=I.DEFAULT_DECODE_STEP_S), fixed_time)


def _memo(text: str, fn, args: tuple, kwargs: dict, key):
    return perf.PLANS.call(fn, args, kwargs, around_miss=lambda: st.spinner(text), key=key)


def _traffic():
    """(requests, label, fallback note) of the trace the page sizes for."""
    if traffic_ui.upload_chosen():
        kept = traffic_ui.kept_upload()
        if kept is not None:
            return kept.req, f"{kept.label} (the Traffic page's upload)", None
        trace = st.session_state["trace"]
        return (
            traffic_ui.sample_requests(trace),
            tr.SAMPLES[trace][1],
            "a sample: no upload is loaded on the Traffic page",
        )
    trace = traffic_ui.sample_select("Sample trace", help="Or upload your own on the Traffic page")
    return traffic_ui.sample_requests(trace), tr.SAMPLES[trace][1], None


def _workload(source: str, req, rps: float, seq_len: int, out: int):
    """(the workload's lengths, its rate [requests/s]), or None with the reason shown.

    The lengths are built at a placeholder rate of 1/s (a ``cap.Sizing`` ignores it), so one
    sizing serves every rate: moving the rate looks up the rates it has drawn before.
    """
    try:
        if source == FIXED:
            if not rps:
                st.info(
                    "Enter a request rate above 0 to size the deployment.",
                    icon=":material/schedule:",
                )
                return None
            return perf.cached(cap.Workload.fixed, 1.0, seq_len, out), rps
        lengths = perf.cached(cap.Workload.from_requests, req, rps=1.0, output_len=out)
        return lengths, rps or perf.cached(cap.Workload.trace_rps, req)
    except ValueError as exc:
        st.warning(f"This traffic cannot be sized: {exc}.", icon=":material/rule:")
        return None


RESULTS = "capacity_results"  # the fragment below the controls (``_results``)


def _results_only(old, new) -> None:
    """A control's callback: rerun the results below the controls only (``_results``); the
    controls stay as drawn, and the sidebar and the router do not run (bench/README.md,
    Session 15, page controls)."""
    st.rerun(RESULTS)


def _rate_changed(old, new) -> None:
    """The rate's callback: the results only, unless it moves to or from 0 (the trace's own
    rate, which the note under the box names: the whole page then)."""
    if old and new:
        st.rerun(RESULTS)


def _inputs(sc):
    """Draw the page's inputs, outside the results (``_results``): a change of the traffic
    reruns the page; of the rate, the targets, the prices and the TP choice the results only.
    (source, requests, traffic label, fallback note)."""
    # the trace's box under the radio, 3/5 of the row wide: a quarter cut its name to
    # 'Azure LLM inference 202…' (the longest, Mooncake's, needs ~400 px)
    c = st.columns([3, 1, 1])
    source = widgets.page_widget(
        c[0].radio,
        "Traffic",
        "wl",
        options=[TRACE, FIXED],
        format_func={TRACE: "A trace", FIXED: "Fixed length and rate"}.get,
        horizontal=True,
    )
    if source == FIXED:
        req, fallback = None, None
        label = f"every request {sc.seq_len:,} prompt tokens (the sidebar's sequence length)"
        c[0].caption(f"Prompt: the sidebar's sequence length, {sc.seq_len:,} tokens.")
    else:
        with c[0]:
            req, label, fallback = _traffic()
    widgets.input_widget(
        c[1].number_input,
        "rps",
        help="0 = the trace's own rate, from its timestamps" if source == TRACE else None,
        then=_rate_changed,
    )
    _rate_note(c[1], source, req)
    has_outputs = source == TRACE and req is not None and req.has_output_lengths
    widgets.input_widget(c[2].number_input, "out", disabled=has_outputs, then=_results_only,
            help="Every request's output length" if source == FIXED
            else "Not used: the trace has its own output lengths" if has_outputs
            else "Used because the trace has no output lengths")  # fmt: skip
    c = st.columns(6)
    for box, name in zip(c, ("ttft_slo", "ttft_pct", "tpot_slo", "price", "priced"), strict=False):
        widgets.input_widget(box.number_input, name, then=_results_only)  # the rest: the row
    widgets.page_widget(
        c[5].radio,
        "Tensor parallelism",
        "ctp",
        options=["auto", "sidebar"],
        format_func={
            "auto": "search",
            "sidebar": f"{par_text(sc.tp_prefill, sc.ep_prefill)} / "
            f"{par_text(sc.tp_decode, sc.ep_decode)} (sidebar)",
        }.get,
        help="Search: the plan tries the smallest TPs that hold the weights (and, for a MoE "
        "model, expert-parallel sizes with data-parallel attention) and keeps those that need "
        "fewest GPUs. Sidebar: prefill and decode TP (and EP) as set there.",
        then=_results_only,
    )
    return source, req, label, fallback


def _rate_note(box, source: str, req) -> None:
    """Under the rate box: the rate a 0 means with a trace ("0.00" alone reads as no traffic);
    none when the trace has no rate (the results say why)."""
    if source != TRACE or st.session_state["rps"] or req is None:
        return
    try:
        rate = perf.cached(cap.Workload.trace_rps, req)
    except ValueError:
        return
    box.caption(f"0: the trace's own rate, {rate:,.2f} requests/s")


def _plan_options(sc, price) -> dict:
    """The plan's options from the page: prices, and the sidebar's TP and EP when chosen."""
    ss = st.session_state
    kw = {"gpu_price_per_hour": price,
          "gpu_price_decode_per_hour": float(ss["priced"]) or None}  # fmt: skip
    if ss["ctp"] == "sidebar":  # the sidebar's TP and EP (a wide-EP deployment: tp=1, ep=32)
        kw.update(prefill_tp=sc.tp_prefill, decode_tp=sc.tp_decode)
        if sc.ep_prefill > 1 or sc.ep_decode > 1:
            kw.update(prefill_ep=sc.ep_prefill, decode_ep=sc.ep_decode)
    return kw


OWN_TP_NOTE = (
    "The plan below searches its own TP and EP (Tensor parallelism: search), so this does not "
    "limit it; pick the sidebar's TP there to plan the deployment as set."
)


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Capacity")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop(page_shows_problems=True)  # in _results: ctp decides
    _results(sc, *_inputs(sc))


@st.fragment(key=RESULTS)
def _results(sc, source: str, req, label: str, fallback) -> None:
    """The page below its controls: the plan, the sweep, the expanders.  A fragment: the
    rate, the targets, the prices and the TP choice rerun this alone (their callbacks), as
    neither the controls nor the sidebar change with them (bench/README.md, Session 15, page
    controls); the traffic or a sidebar change reruns the whole app, and this with them."""
    urlstate.sync_url_in_fragment()  # the link holds the controls
    ss = st.session_state
    urlstate.show_deployment_problems(sc, None if ss["ctp"] == "sidebar" else OWN_TP_NOTE)
    rps = float(ss["rps"] or 0.0)
    price = float(ss["price"]) or None
    out = int(ss["out"])
    sized = _workload(source, req, rps, sc.seq_len, out)
    no_output = source == TRACE and req is not None and not req.has_output_lengths
    st.caption(source_caption(label, fallback, out if no_output else None) + " " + SIDEBAR_NOTE)
    if sized is None:
        st.stop()
    lengths, rate = sized
    slo = cap.Slo(
        ttft_s=I.get("ttft_slo").to_si(ss["ttft_slo"]),
        tpot_s=I.get("tpot_slo").to_si(ss["tpot_slo"]),
        ttft_percentile=ss["ttft_pct"],
    )
    kw = _plan_options(sc, price)
    try:
        sizing = _memo("Sizing the deployment…", cap.Sizing, (sc, lengths, slo), kw,
                       (plan_key(sc), lengths, slo, tuple(sorted(kw.items()))))  # fmt: skip
        plan = sizing.plan(rate)  # kept by the sizing
    except ValueError as exc:
        _no_plan(exc)
    st.info(perf.cached(capacity_takeaway, plan, rps=rate, slo=slo, price=price),
            icon=":material/lightbulb:")  # fmt: skip
    _tiles(plan, slo, price)

    # after the tiles: they are on screen while the sweep computes (a new target or trace);
    # the rates sit on a fixed grid, so a new rate re-sizes only the few new points
    link = urlstate.share_url()  # the inputs are settled: one link for the downloads below
    sweep = _rates_section(sizing, rate, slo, link, plan_point(plan))
    _plan_per_pool(plan, slo, rate, price, kw["gpu_price_decode_per_hour"], link)
    _networks(sc, lengths, rate, slo, kw)
    key = plan_key(sc)
    capacity_replay.decode_gpus(sc, key, lengths, rate, slo, kw)
    replayed = capacity_replay.replay(sc, key, plan, source == TRACE, lengths, rate, slo)
    tp_mode = (
        f"the sidebar's: prefill {par_text(sc.tp_prefill, sc.ep_prefill)}, decode "
        f"{par_text(sc.tp_decode, sc.ep_decode)}"
        if ss["ctp"] == "sidebar"
        else "searched (the smallest TPs that hold the weights)"
    )
    if sweep is None:  # the report draws the sweep
        return
    _report_button(
        partial(capacity_report_html, plan, sweep, sc=sc, slo=slo, rps=rate, price=price,
                traffic=source_caption(label, fallback).removeprefix("Traffic: "), tp_mode=tp_mode,
                replayed=replayed, version1=urlstate.version1_implied(),
                price_decode=kw["gpu_price_decode_per_hour"]), link
    )  # fmt: skip


def _rates_section(sizing, rate: float, slo, link: str, point: tuple):
    """'Across request rates' (the sweep, charts, CSV); None, with an error, past the limit.
    ``point``: the plan at the user's rate, which the sentence counts among the rates."""
    rates = cap.sweep_rates(rate, SWEEP_SPAN, SWEEP_PER_DECADE)
    st.subheader("Across request rates")
    try:
        sweep = _memo("Sizing across request rates…", sizing.sweep, (rates,), {}, (sizing, rates))
    except ValueError as exc:
        st.error(no_sweep_text(rates, rate, exc), icon=":material/block:")
        return None
    # with the plan at the user's rate among the rows (~1.4 ms a rerun before the memo)
    st.markdown(perf.cached(crossover_sentence, sweep, rate, point))
    # the two charts in tabs drawn only while open: a change of a target or the rate redraws
    # one chart, not two (each ~40 ms in the browser: bench/README.md, Session 27).  unbuilt:
    # the JSON straight from the builders' dicts (kit.Fig.sent, ~1 ms less a chart)
    gpus_tab, made_tab = st.tabs(RATE_TABS, key=RATE_TAB, on_change="rerun")
    if gpus_tab.open:
        with gpus_tab:
            exports_ui.chart(perf.cached(figs.figure_gpus_vs_rate.unbuilt, sweep, rps=rate),
                             "capacity-gpus")  # fmt: skip
    if made_tab.open:  # the split over what sizes each pool: one figure of two panels
        with made_tab:
            exports_ui.chart(perf.cached(figs.figure_plan_panels.unbuilt, sweep, rps=rate),
                             "capacity-split")  # fmt: skip
    exports_ui.table_download(  # the numbers of both charts
        partial(csv_capacity.sweep_frame, sweep, ttft_percentile=slo.ttft_percentile),
        "capacity-rates",
        link=link,
    )
    return sweep


RATE_TABS = ("GPUs against the rate", "How the plan is made up")
RATE_TAB = "cap_rate_tab"  # session key: the open tab of "Across request rates"


def _network_plans(sc, lengths, rate: float, slo, links: tuple, kw: dict):
    return cap.network_plans(sc, lengths.with_rps(rate), slo, links, **kw)


def _networks(sc, lengths, rate: float, slo, kw: dict) -> None:
    """Which network: the plan on each interconnect compared (the Interconnects page's list),
    drawn only while its expander is open (a plan per link: ~20 ms each)."""
    box = st.expander(
        "Which network: this plan on other interconnects",
        icon=":material/lan:",
        key="cap_networks_open",
        on_change="rerun",
    )
    if not box.open:
        return
    with box:
        widgets.id_multiselect(
            "Interconnects", "links", params.link_ids(), format_func=figures.link_name
        )
        links = tuple(widgets.id_list("links"))
        key = (plan_key(sc), sc.link, lengths, rate, slo, tuple(sorted(kw.items())), links)
        try:
            nets = _memo("Sizing on each interconnect…", _network_plans,
                         (sc, lengths, rate, slo, links, kw), {}, key)  # fmt: skip
        except ValueError as exc:
            st.error(f"No plan per interconnect: {exc}.", icon=":material/block:")
            return
        table = perf.cached(csv_capacity.network_frame, nets, ttft_percentile=slo.ttft_percentile)
        # sideways: one column per interconnect, so every quantity shows at 1280 px (issue 24)
        st.markdown(
            tables.sideways_table(table, label="interconnect", notes=optimistic_links(nets)),
            unsafe_allow_html=True,
        )
        left_out = cap.foreign_links(sc, links)
        st.caption(network_caption(nets, sc.link.name) + (
            f" Left out: {', '.join(figures.link_name(i) for i in left_out)}, a GPU-to-GPU link "
            f"the {_gpu_names(sc)} does not have." if left_out else ""))  # fmt: skip
        exports_ui.table_download(lambda: table, "capacity-networks")


def _gpu_names(sc) -> str:
    """The deployment's GPU, or its two GPUs ('NVIDIA H100 SXM 80GB / AMD Instinct MI300X')."""
    return sc.gpu.name if sc.decode_gpu == sc.gpu else f"{sc.gpu.name} / {sc.decode_gpu.name}"


def _report_button(build, link: str) -> None:
    """The plan as one standalone HTML page, made when pressed; the link back (``link``, the
    page's share link) is captured now (the button's callback runs without the session)."""
    st.download_button(
        "Download capacity plan (HTML)",
        lambda: build(share_url=link if link.startswith("http") else None),
        file_name="capacity-plan.html",
        mime="text/html",
        icon=":material/description:",
        key="dl_capacity_report",
        on_click="ignore",
        help="One self-contained page: the plan, its charts, the inputs and a link back.",
    )


def _no_plan(exc: Exception) -> None:
    st.error(
        f"No capacity plan for this scenario: {exc}. Change the inputs above, or the model, "
        "GPU or TP in the sidebar.",
        icon=":material/block:",
    )
    st.stop()


def _plan_per_pool(plan, slo, rate, price, price_decode, link: str) -> None:
    """The plan per pool: its table, CSV and notes."""
    st.subheader("The plan per pool")
    # plain HTML (kvview.tables): three rows whose cells wrap to the page's width; the grid of
    # st.dataframe cost ~10 ms of the browser's redraw after each change (bench/README.md,
    # Session 28) and scrolled sideways once a pool's GPU or expert parallelism added columns
    html = perf.cached(figs.pool_table_html, plan, ttft_percentile=slo.ttft_percentile,
                       ttft_target_s=slo.ttft_s, tpot_target_s=slo.tpot_s)  # fmt: skip
    st.markdown(html, unsafe_allow_html=True)
    exports_ui.table_download(
        partial(csv_capacity.plan_frame, plan, rps=rate, slo=slo, price=price,
                price_decode=price_decode),
        "capacity-plan",
        link=link,
    )  # fmt: skip
    for note in plan.notes:
        st.caption(f"Note: {note}.")


def _tiles(plan, slo, price) -> None:
    """Two rows of four tiles: GPU counts, the saving and the verdict; TTFT, TPOT, the link
    and the cost (or the P:D split)."""
    m = st.columns(4)
    _gpu_tiles(plan, m)
    _verdict_tiles(plan, m)
    m = st.columns(4)
    _time_tiles(plan, slo, m)
    _cost_tile(plan, price, m[3])


def _gpu_tiles(plan, m) -> None:
    dis_help = f"{split_text(plan)}; P:D = {plan.pd_ratio:,.2f}"
    if plan.disaggregated_feasible:
        m[0].metric("Disaggregated GPUs", tile_gpus(plan.disaggregated_gpus),
                    help=f"{gpus(plan.disaggregated_gpus)}: {dis_help}")  # fmt: skip
    else:  # issue 24: no big count for a plan that cannot meet the targets
        m[0].metric(
            "Disaggregated GPUs",
            "infeasible",
            delta=nearest_delta(plan, "disaggregated"),
            delta_color="off",
            delta_arrow="off",
            help=f"Misses the targets even with {gpus(plan.disaggregated_gpus)}: {dis_help}."
            + nearest_text(plan, "disaggregated"),
        )
    if plan.colocated_feasible:
        m[1].metric(
            "Colocated GPUs",
            tile_gpus(plan.colocated_gpus),
            help=f"{gpus(plan.colocated_gpus)}: {plan.colocated_instances:,} × TP "
            f"{plan.colocated_tp} with chunked prefill "
            f"({plan.colocated_chunk_tokens:,}-token chunks), meeting the same targets",
        )
    else:
        fell_back = (
            f"this TP misses them even with {gpus(plan.colocated_gpus)}"
            if plan.colocated_gpus
            else "no colocated instance holds a decode batch beside a prefilling request"
        )
        m[1].metric(
            "Colocated GPUs",
            "infeasible" if plan.colocated_gpus else "none fits",
            delta=nearest_delta(plan, "colocated"),
            delta_color="off",
            delta_arrow="off",
            help=f"No colocated size at TP {plan.colocated_tp} meets the targets; {fell_back}."
            + nearest_text(plan, "colocated"),
        )


def _verdict_tiles(plan, m) -> None:
    saves = plan.disaggregation_saves_gpus
    if saves is None:  # a side misses the targets: no saving, no green (issue 24)
        m[2].metric(
            "Disaggregation saves",
            "not counted",
            delta="a side misses the targets",
            delta_color="off",
            delta_arrow="off",
            help="No saving is counted against a plan that misses a target: see the "
            "nearest parallelism that meets them in the summary above",
        )
    elif saves < 0:  # said as a cost, not as a negative saving
        m[2].metric(
            "Disaggregation costs",
            tile_gpus(-saves),
            delta=f"more: {cheaper_text(saves)}",
            delta_color="inverse",
            delta_arrow="off",
            help=f"{gpus(-saves)} more than colocated: disaggregated GPUs − colocated GPUs",
        )
    else:
        m[2].metric(
            "Disaggregation saves",
            tile_gpus(saves),
            delta=cheaper_text(saves),
            delta_color="normal" if saves > 0 else "off",
            delta_arrow="off",
            help=f"{gpus(saves)}: colocated GPUs − disaggregated GPUs",
        )
    m[3].metric(
        "Meets the targets",
        "yes" if plan.meets_slo else "no",
        help=f"Disaggregated plan. Prefill sized by {limit_text(plan.limits, 'prefill')}, "
        f"decode by {limit_text(plan.limits, 'decode')}",
    )


def _time_tiles(plan, slo, m) -> None:
    p = pct_label(slo.ttft_percentile)
    # a met target shows green only when both sides meet theirs: no green on a page whose
    # plan has an infeasible side (issue 24), a miss stays red
    met = "normal" if plan.disaggregated_feasible and plan.colocated_feasible else "off"
    for col, label, value, target, what in (
        (m[0], f"TTFT {p}", plan.ttft_s, slo.ttft_s, ttft_help(plan)),
        (m[1], "TPOT", plan.tpot_s, slo.tpot_s,
         f"The decode step at the pools' mean batch ({plan.decode_batch:,.0f} requests)"),
    ):  # fmt: skip
        col.metric(
            label,
            fmt_time(value),
            delta=f"target {fmt_time(target)}",
            delta_color=met if value <= target else "inverse",
            delta_arrow="off",
            help=f"{what}. Disaggregated plan",
        )
    need = plan.nic_bandwidth_needed_bytes_per_s
    m[2].metric(
        "Link utilisation",
        fmt_busy(plan.link_utilization),
        delta=f"{p} needs {fmt_bandwidth(need)} per NIC" if need else f"no NIC speed meets the {p}",
        delta_color="off" if need else "inverse",
        delta_arrow="off",
        help=f"The busiest NICs' load at {fmt_bandwidth(plan.link_bandwidth_bytes_per_s)} per "
        f"NIC and direction ({plan.nics_per_transfer} NICs per transfer); the KV sent is "
        f"{fmt_bandwidth(plan.demanded_bytes_per_s)} over the deployment. Below it: the "
        f"slowest NIC on which these pools still work at both ends: the sending prefill NICs "
        f"keep the {p} TTFT within its target and the receiving decode NICs stay at most "
        f"{RECEIVER_UTILIZATION:.0%} busy (a slower link needs more GPUs)",
    )


def _cost_tile(plan, price, col) -> None:
    if not plan.disaggregated_feasible:  # no cost or split for pools that miss the targets
        col.metric(
            "Cost per hour" if price else "P:D split",
            "–",
            delta="misses the targets",
            delta_color="off",
            delta_arrow="off",
            help=f"The disaggregated pools miss the targets (the pools it sized: "
            f"{split_text(plan)})",
        )
    elif price:
        col.metric(
            "Cost per hour",
            fmt_dollars(plan.cost_per_hour),
            delta=f"colocated {fmt_dollars(plan.colocated_cost_per_hour)}",
            delta_color="off",
            delta_arrow="off",
            help=f"Colocated: {fmt_dollars(plan.colocated_cost_per_hour)} per hour at "
            f"${price:,.2f} per GPU-hour",
        )
    else:
        value, counts = tile_split(plan.prefill_gpus, plan.decode_gpus)
        col.metric(
            "P:D split",
            value,
            delta=counts,
            delta_color="off",
            delta_arrow="off",
            help=f"Prefill GPUs : decode GPUs, {split_text(plan)}",
        )
