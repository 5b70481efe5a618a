"""The Capacity page's sections drawn on demand: which decode GPU (the plan with its decode
pool on each catalog GPU) and the replay of the trace (``kvmodel.replay``: the planned
deployment under the trace's own arrivals, its chart, CSV and the handout's section).

Each draws only while its expander is open, so the page's rerun stays as cheap as before;
results are memoised process-wide (a replay of the shipped traces: ~0.1 s; sizing by replay:
a few rounds).  A progress bar follows a long replay step by step (``rp.replay_plan``'s
callback); the replay's compiled loops release the GIL, so other sessions keep running.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from kvmodel import catalog
from kvmodel import replay as rp
from kvmodel import traffic as tr
from kvmodel.capacity.pairs import decode_gpu_plans
from kvview import csv_capacity, tables
from kvview.capacity_words import pct_label
from kvview.figures.replay import figure_replay
from kvview.fmt import fmt_sig, fmt_time
from kvview.replay_words import replay_frame, replay_rows
from ui import exports_ui, perf, traffic_ui, widgets

# the first replay in a server process also loads (once per machine: compiles) its numba code
_STARTING = "Replaying the trace (the first replay after a restart also loads its compiled code)…"


def _memo(text: str, fn, args: tuple, kwargs: dict, key):
    return perf.PLANS.call(fn, args, kwargs, around_miss=lambda: st.spinner(text), key=key)


def decode_gpus(sc, plan_key: tuple, lengths, rate: float, slo, kw: dict) -> None:
    """Which decode GPU: the plan with its decode pool on each catalog GPU (the sidebar's
    prefill GPU kept), drawn only while its expander is open (a plan per GPU: ~20 ms each)."""
    box = st.expander("Which decode GPU: this plan with decode on other GPUs",
                      icon=":material/memory:", key="cap_gpus_open",
                      on_change="rerun")  # fmt: skip
    if not box.open:
        return
    with box:
        ids = tuple(catalog.gpus())
        key = ("gpus", plan_key, sc.gpu_decode, lengths, rate, slo,
               tuple(sorted(kw.items())), ids)  # fmt: skip
        try:
            table = _memo("Sizing on each decode GPU…", _pair_plans,
                          (sc, lengths, rate, slo, ids, kw), {}, key)  # fmt: skip
        except ValueError as exc:
            st.error(f"No plan per decode GPU: {exc}.", icon=":material/block:")
            return
        st.dataframe(table, hide_index=True, width="stretch",
                     column_config=_gpu_columns(table, pct_label(slo.ttft_percentile)))
        priced = "cheapest first at the prices above (the decode price for every decode GPU)"
        st.caption(f"Prefill on {sc.gpu.name}; meeting the targets first, then "
                   + (priced if kw.get("gpu_price_per_hour") or
                      kw.get("gpu_price_decode_per_hour") else "fewest GPUs first")
                   + ". Set the decode GPU in the sidebar (Parallelism and hardware).")  # fmt: skip
        exports_ui.table_download(lambda: table, "capacity-decode-gpus")


def _gpu_columns(table, pct: str) -> dict:
    """How the decode-GPU table shows (its CSV keeps the headers with units): short labels,
    the unit in the cells, times rounded, the GPU's name whole; the costs only when priced.
    Session 20's review: 'TTFT p90 [ms]' read 544.1452 and the verdict column was cut."""
    number = st.column_config.NumberColumn
    priced = table["cost [$ per hour]"].notna().any()
    return {
        "decode GPU": st.column_config.TextColumn(
            "Decode GPU", width=tables.text_width(table["decode GPU"])),
        "prefill GPUs [GPUs]": number("Prefill GPUs", format="%d"),
        "decode GPUs [GPUs]": number("Decode GPUs", format="%d"),
        "GPUs [GPUs]": number("GPUs", format="%d", help="Prefill and decode GPUs together"),
        f"TTFT {pct} [ms]": number(f"TTFT {pct}", format="%.0f ms"),
        "TPOT [ms]": number("TPOT", format="%.1f ms"),
        "meets the targets": st.column_config.TextColumn("Meets targets"),
        "cost [$ per hour]": number("Cost per hour", format="$%.2f") if priced else None,
        "cost [$ per million output tokens]": number(
            "Cost per M output tokens", format="$%.3f") if priced else None,
        "note": st.column_config.TextColumn("Note"),
    }  # fmt: skip


def _pair_plans(sc, lengths, rate: float, slo, ids: tuple, kw: dict):
    plans = decode_gpu_plans(sc, lengths.with_rps(rate), slo, ids, **kw)
    return csv_capacity.decode_gpu_frame(plans, ttft_percentile=slo.ttft_percentile)


def _sample_per_request(sample_id: str):
    """A shipped trace with every request (a replay plays its timestamps), read once per
    process (``ui.perf.SAMPLES``)."""
    return perf.SAMPLES(_read_per_request, sample_id)


def _read_per_request(sample_id: str):
    return tr.load_traffic(tr.sample_path(sample_id), per_request=True)


def _replay_stream(sc, trace: bool, lengths, rate: float):
    """The requests the replay plays: a shipped trace's own, else Poisson arrivals (an
    upload is kept as counts per length, without its timestamps)."""
    ss = st.session_state
    wl = lengths.with_rps(rate)
    if trace and not traffic_ui.upload_chosen():
        req = _sample_per_request(ss["trace"])
        return rp.stream_for(wl, sc.model.max_context_tokens, req, rps=ss["rps"] or None,
                             output_len=int(ss["out"]), n=int(ss["rn"]))  # fmt: skip
    return rp.poisson_stream(wl, sc.model.max_context_tokens, int(ss["rn"]))


def _run_replay(sc, plan, trace, lengths, rate, slo, size_by, bar):
    stream = _replay_stream(sc, trace, lengths, rate)

    def progress(i: int, total: int, what: str) -> None:
        text = (f"Growing the pools: round {i} of at most {total}…" if what == "grow"
                else f"Replaying {stream.n:,} requests: step {i} of {total}…")  # fmt: skip
        bar.progress(i / total, text=text)

    return rp.replay_plan(sc, plan, stream, slo, size_by=size_by, progress=progress)


def _own_arrivals(trace: bool) -> bool:
    """True when the replay plays the trace's own timestamps (a shipped sample that has them),
    not Poisson arrivals (a fixed workload, or an upload kept without its timestamps)."""
    if not trace or traffic_ui.upload_chosen():
        return False
    req = _sample_per_request(st.session_state["trace"])
    return req.arrival_s is not None and req.weights is None


def replay(sc, plan_key: tuple, plan, trace: bool, lengths, rate: float, slo):
    """The plan replayed over the trace's own arrivals (or Poisson arrivals at the plan's rate
    when there are none), drawn only while its expander is open (a replay of the shipped
    traces: ~0.1 s; sizing by replay: a few rounds)."""
    own = _own_arrivals(trace)
    box = st.expander("Replay: the plan under the trace's own arrivals" if own else
                      f"Replay: the plan under Poisson arrivals at {fmt_sig(rate, 3)} requests/s",
                      icon=":material/replay:", key="cap_replay_open",
                      on_change="rerun")  # fmt: skip
    if not box.open:
        return None
    ss = st.session_state
    with box:
        c = st.columns([2, 1])
        size_by = widgets.input_widget(
            c[0].radio, "size", horizontal=True,
            format_func={"analytic": "the formulas (as planned)",
                         "replay": "the replay (grow until it meets the targets)"}.get,
        )  # fmt: skip
        if own:  # the box would not change anything: every request of the trace is played
            c[1].caption(":material/schedule: The trace's own timestamps: all of its requests "
                         "are replayed.")  # fmt: skip
        else:
            widgets.input_widget(c[1].number_input, "rn")
        key = (
            "replay",
            plan_key,
            lengths,
            rate,
            slo,
            size_by,
            int(ss["rn"]),
            trace,
            ss.get("trace"),
            traffic_ui.upload_chosen(),
            ss["rps"],
            int(ss["out"]),
            plan.prefill_instances,
            plan.decode_instances,
            plan.prefill_tp,
            plan.decode_tp,
        )
        bar = st.empty()
        try:
            done = perf.PLANS.call(_run_replay, (sc, plan, trace, lengths, rate, slo, size_by,
                                             bar.progress(0.0, text=_STARTING)),
                               {}, key=key)  # fmt: skip
        except ValueError as exc:
            st.error(f"No replay: {exc}.", icon=":material/block:")
            return None
        bar.empty()
        _replay_body(done, slo)
    return done


def _replay_body(done, slo) -> None:
    r = done.result
    verdict = "meets" if r.meets_slo else "misses"
    st.markdown(f"**The replay {verdict} the targets**: TTFT "
                f"{pct_label(slo.ttft_percentile)} {fmt_time(r.ttft_at_slo_s)} against "
                f"{fmt_time(slo.ttft_s)}, TPOT p90 {fmt_time(r.tpot_p90_s)} against "
                f"{fmt_time(slo.tpot_s)}.")  # fmt: skip
    if done.reasons:  # one caption, each reason on its line
        st.caption("Replay and formulas disagree:\n" + "\n".join(f"- {why}." for why in
                                                                   done.reasons))  # fmt: skip
    exports_ui.chart(perf.cached(figure_replay, r.series, ttft_slo_s=slo.ttft_s),
                     "capacity-replay")  # fmt: skip
    rows = replay_rows(done, slo=slo)
    st.dataframe({"quantity": [k for k, _ in rows], "value": [v for _, v in rows]},
                 hide_index=True, width="stretch")  # fmt: skip
    exports_ui.table_download(partial(replay_frame, r.series), "capacity-replay")
