"""Plan: what it takes to meet the target, and which input moves TTFT most."""

from functools import partial

import pandas as pd
import streamlit as st

from kvmodel import solve
from kvmodel.sensitivity import tornado
from kvview import csv_tables, figures
from kvview.fmt import fmt_bandwidth, fmt_ms, fmt_tokens
from kvview.words import each_link, plural, unreachable_reason
from ui import exports_ui, perf, present, urlstate, widgets


def render() -> None:
    """Draw the page (see the module docstring)."""
    st.title("Plan")
    urlstate.show_notices()
    sc = urlstate.scenario_or_stop()

    crit = widgets.page_widget(
        st.radio,
        "Target",
        "crit",
        options=list(solve.CRITERIA),
        horizontal=True,
        format_func=lambda k: {
            "step": (
                f"exposed transfer < {sc.k:g} × decode step ({fmt_ms(sc.k * sc.decode_step_s)})"
            ),
            "share": f"transfer ≤ {sc.share_target:.0%} of TTFT",
        }[k],
    )
    need = perf.cached(solve.min_bandwidth, sc, criterion=crit)
    mit, tried = perf.cached(solve.search_mitigations, sc, criterion=crit)
    _headline(sc, crit, need, mit)
    _what_do_i_need(sc, crit, need)
    _cheapest_option(mit, tried)
    _sensitivity(sc)


def _headline(sc, crit, need, mit) -> None:
    """The headline: does the link meet the target, and the cheapest fix."""
    have = sc.link.bandwidth_bytes_per_s
    # per link: the need is each of the parallel links' bandwidth (session 20's review: a
    # planner read 5 GB/s against a 100 GB/s deployment of eight 12.5 GB/s NICs)
    each = f" on each of its {sc.streams} parallel links" if sc.streams > 1 else ""
    offers = f"the {fmt_bandwidth(have)} each offers" if each else f"its {fmt_bandwidth(have)}"
    if need is None:
        headline = f"No bandwidth meets the target: {unreachable_reason(sc, criterion=crit)}"
    elif need <= have:
        room = "with room to spare" if need < 0.8 * have else "with little margin"
        headline = (
            f"{sc.link.name} meets the target {room}: it needs {fmt_bandwidth(need)} per "
            f"direction{each}, of {offers}."
        )
    else:
        headline = (
            f"{sc.link.name} falls short: the target needs {fmt_bandwidth(need)} per "
            f"direction{each}, {need / have:,.1f}× {offers}."
        )
    if mit is not None and need is not None and need > have:
        headline += f" Cheapest fix: {mit.label}."
    st.info(headline, icon=":material/lightbulb:")


def _what_do_i_need(sc, crit, need) -> None:
    """What do I need: minimum bandwidth, longest prompt, largest batch."""
    st.subheader("What do I need")
    c = st.columns(3)
    c[0].metric(
        "Minimum bandwidth per link",
        fmt_bandwidth(need) if need else "unreachable",
        help=f"Per link and direction, on {each_link(sc.streams)} (the NICs, "
        "or per-GPU links, both instances have); efficiency, latency and mitigations kept",
    )
    max_s = perf.cached(solve.max_seq_len, sc, criterion=crit)
    max_b = perf.cached(solve.max_batch, sc, criterion=crit)
    cap = perf.cached(solve.batch_cap, sc)
    c[1].metric(
        f"Longest prompt at batch {sc.batch}",
        fmt_tokens(max_s) if max_s else "none",
        help="The longest prompt this link sustains under the target"
        + (" (Overview's critical length is the first prompt that reaches it: one token more)"
           if crit == "step" else ""),  # fmt: skip
    )
    c[2].metric(
        f"Largest batch at {sc.seq_len:,} tokens",
        plural(max_b, "request") if max_b else "none",
        help=("None: even one request misses the target on this link. " if not max_b else "")
        + f"The largest batch this link sustains under the target, at most the {cap:,} "
        f"requests of {sc.seq_len:,} tokens that memory holds on both instances "
        f"(and at most {solve.DEFAULT_BATCH_LIMIT:,})"
        if cap
        else "None: the weights do not fit the GPUs at this TP",
    )


def _cheapest_option(mit, tried) -> None:
    """The cheapest option that meets the target, and the options tried."""
    if mit is None:
        st.warning(
            "No mitigation in the ladder (compression, layer-wise sending, faster links in "
            "the catalog) meets the target.",
            icon=":material/block:",
        )
    else:
        st.success(
            f"Cheapest option that meets the target: **{mit.label}** — exposed transfer "
            f"{fmt_ms(mit.evaluation.exposed_s, 2)}, {mit.evaluation.transfer_share_of_ttft:.1%}"
            " of TTFT.",
            icon=":material/check_circle:",
        )
    tried_box = st.expander(f"Options tried ({len(tried)})", key="plan_tried", on_change="rerun")
    if tried_box.open:  # the table is drawn only while open
        _tried_table(tried_box, tried)


SENSITIVITY = "plan_sensitivity"  # session key: the "Sensitivity" expander is open


def _sensitivity(sc) -> None:
    """Sensitivity: each input moved around this scenario (the tornado), drawn while its
    expander is open (open by default in presentation mode: a projector shows the chart).

    It sits below the fold at 1280 x 800 and sweeps ~20 scenarios, a fifth of the page's rerun
    after a sidebar change (bench/README.md, Session 21)."""
    box = st.expander(
        "Sensitivity: which input moves the transfer and TTFT most",
        expanded=present.active(),
        key=SENSITIVITY,
        on_change="rerun",
        icon=":material/tune:",
    )
    if not box.open:
        return
    with box:
        st.caption(
            "Each input moved ±50 % (catalog choices: every value this deployment can use) "
            "around this scenario, the others kept; bars run from the low to the high setting."
        )
        table = perf.cached(tornado, sc)
        exports_ui.chart(perf.cached(figures.figure_tornado_panels.unbuilt, table), "sensitivity")
        exports_ui.table_download(partial(csv_tables.sensitivity_frame, table), "sensitivity")


def _tried_table(box, tried) -> None:
    ladder = pd.DataFrame(
        {
            "Option (cheapest first)": [a.label for a in tried],
            "Exposed transfer [ms]": [a.exposed_s * 1e3 for a in tried],
            "Share of TTFT": [f"{a.transfer_share:.1%}" for a in tried],
            "Meets the target": ["yes" if a.passed else "no" for a in tried],
        }
    )
    with box:
        st.dataframe(
            ladder,
            hide_index=True,
            width="stretch",
            column_config={"Exposed transfer [ms]": st.column_config.NumberColumn(format="%.2f")},
        )
        exports_ui.table_download(partial(csv_tables.options_tried_frame, tried), "options-tried")
