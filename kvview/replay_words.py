"""The replay in words and tables (Capacity page, handout, CSV): rows with units, the CSV of
its per-minute series.  No streamlit here."""

from __future__ import annotations

import pandas as pd

from kvview.capacity_words import gpus, pct_label
from kvview.fmt import fmt_time

# how the replay's decode pool runs (kvmodel.replay.decode), in words
DECODE_METHOD = "step by step (continuous batching, KV memory admission)"


def replay_rows(done, *, slo) -> list[tuple[str, str]]:
    """(quantity, value with unit) rows of a ``kvmodel.replay.Replayed``."""
    r, dep = done.result, done.deployment
    p = pct_label(slo.ttft_percentile)
    arrivals = "Poisson arrivals (fixed seed)" if r.poisson else "the trace's own arrivals"
    rows = [
        ("Requests replayed", f"{r.requests:,}, {arrivals}"),
        ("Deployment replayed", f"{gpus(done.gpus)}: {dep.prefill_instances:,} × TP "
         f"{dep.prefill_tp} prefill + {dep.decode_instances:,} × TP {dep.decode_tp} decode"
         + (f" (grown by the replay in {done.rounds} rounds)" if done.grown else "")),
        ("TTFT", f"p50 {fmt_time(r.ttft_p50_s)}, p90 {fmt_time(r.ttft_p90_s)}, "
         f"p99 {fmt_time(r.ttft_p99_s)}"  # the target's percentile once (a review: p90 twice)
         + ("" if p in ("p50", "p90", "p99") else f"; {p} {fmt_time(r.ttft_at_slo_s)}")
         + f" (target: {p} ≤ {fmt_time(slo.ttft_s)})"),
        ("TPOT p90", f"{fmt_time(r.tpot_p90_s)} (target {fmt_time(slo.tpot_s)})"),
        ("Transfer p90", f"{fmt_time(r.transfer_p90_s)} from prefill end to KV at decode, NIC "
         "queues included"),
        ("Busiest NICs", f"{r.peak_link_utilization:.0%} busy in their busiest minute"),
        ("Decode memory queue", "no request waited for KV memory" if not r.max_decode_queue
         else f"at most {r.max_decode_queue:,} requests waiting for KV memory "
         f"({r.memory_waited_share:.1%} of requests waited)"),
        ("Meets the targets", "yes" if r.meets_slo else "no"),
        ("Decode pool", DECODE_METHOD),
    ]  # fmt: skip
    return rows


def replay_frame(series) -> pd.DataFrame:
    """The per-minute series as a CSV table (units in the headers)."""
    return pd.DataFrame(
        {
            "minute of the trace [min]": series.minute,
            "arrivals [requests]": series.arrivals,
            "TTFT p90 [ms]": series.ttft_p90_s * 1e3,
            "decode KV memory in use [%]": series.decode_memory * 100,
        }
    )
