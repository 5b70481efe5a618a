"""What a replay returns: :class:`ReplayResult` (SI inside, ``to_json`` in ms) and its per-minute
series, summarised from a :class:`kvmodel.replay.sim.Timeline`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvmodel.capacity.queue import rank
from kvmodel.replay import parallel

MINUTE_S = 60.0
BURST_WINDOW_S = 10.0  # the peak rate is the busiest window of this length
# from this many requests in a minute its p90 comes from the radix selection (a 60,000-request
# minute: ~0.1 ms instead of ~0.6 ms); below, np.partition (the selection's 65,536-bucket
# histogram costs more than a small partition)
RADIX_FROM = 20_000


@dataclass(frozen=True, eq=False)
class Series:
    """One row per minute of the trace (minute 0 starts at the first arrival)."""

    minute: np.ndarray  # 0, 1, …
    arrivals: np.ndarray  # requests arriving in the minute
    ttft_p90_s: np.ndarray  # of the requests arriving in it (NaN: none arrived)
    decode_memory: np.ndarray  # the decode pool's peak reserved KV ÷ its KV memory (0–1)


@dataclass(frozen=True, eq=False)
class ReplayResult:
    requests: int
    ttft_p50_s: float
    ttft_p90_s: float
    ttft_p99_s: float
    ttft_at_slo_s: float  # at the targets' percentile
    ttft_percentile: float
    tpot_p90_s: float
    transfer_p90_s: float  # prefill end → KV at decode, link queue included
    peak_link_utilization: float  # busiest instance's NICs (either side), busiest minute
    max_decode_queue: int  # requests waiting for decode memory at once (pool-wide)
    meets_slo: bool
    poisson: bool  # arrivals drawn (no timestamps), not the trace's
    # where the time goes, at the TTFT percentile of the targets [s]
    prefill_wait_p90_s: float
    link_wait_p90_s: float  # both sides' NIC queues
    send_wait_p90_s: float  # the prefill instance's NICs
    receive_wait_p90_s: float  # the decode instance's NICs
    memory_wait_p90_s: float
    memory_waited_share: float  # requests that waited for decode memory
    peak_rate_rps: float  # the busiest BURST_WINDOW_S of arrivals [requests/s]
    mean_rate_rps: float
    series: Series

    def to_json(self) -> dict:
        """The issue's keys (ms where the key says so) and the per-minute series."""

        def ms(x):
            return None if not math.isfinite(x) else x * 1e3

        s = self.series
        return {
            "requests": self.requests,
            "ttft_p50_ms": ms(self.ttft_p50_s),
            "ttft_p90_ms": ms(self.ttft_p90_s),
            "ttft_p99_ms": ms(self.ttft_p99_s),
            "tpot_p90_ms": ms(self.tpot_p90_s),
            "transfer_p90_ms": ms(self.transfer_p90_s),
            "peak_link_utilization": self.peak_link_utilization,
            "max_decode_queue": self.max_decode_queue,
            "meets_slo": self.meets_slo,
            "series": {
                "minute": s.minute.tolist(),
                "arrivals": s.arrivals.tolist(),
                "ttft_p90_ms": [None if math.isnan(v) else v * 1e3 for v in s.ttft_p90_s],
                "decode_memory_use": s.decode_memory.tolist(),
            },
        }


def per_minute_p90(counts: np.ndarray, ttft: np.ndarray) -> np.ndarray:
    """p90 (the ⌈0.9 n⌉-th smallest, as ``queue.percentile``) of ``ttft`` per minute, from
    the requests per minute ``counts`` (requests in arrival order: each minute is one slice)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    ends = np.cumsum(counts)
    out = np.full(len(counts), np.nan)
    rank = np.zeros(1, dtype=np.int64)
    for m in np.flatnonzero(counts):
        lo, hi = int(ends[m] - counts[m]), int(ends[m])
        k = max(math.ceil(0.9 * (hi - lo)) - 1, 0)
        if hi - lo >= RADIX_FROM:  # a full minute of a busy trace: the radix selection
            rank[0] = k
            exact, value = kernels.order_stats(ttft[lo:hi], rank)
            if exact:
                out[m] = value[0]
                continue
        out[m] = np.partition(ttft[lo:hi], k)[k]  # a few µs for a small minute
    return out


class OrderStats:
    """``queue.percentile`` of many arrays of one length: the same order statistics, found
    by a compiled radix selection (``kernels.order_stats``: two or three passes over the
    array, ~1.5 ms a percentile on a million requests, where ``np.partition`` takes 9–17 ms
    here) without reordering or copying the array; one buffer holds the waits."""

    def __init__(self, n: int):
        self.buf = np.empty(n)

    def of(self, x: np.ndarray, qs, *, own: bool = False) -> list[float]:
        """The ``qs`` percentiles of ``x`` (``own``: ``x`` may be reordered in place: only
        when it holds a NaN, which is partitioned, and placed last, as before)."""
        from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

        x = np.ascontiguousarray(x, dtype=float)
        ks = [rank(len(x), q) for q in qs]
        exact, values = kernels.order_stats(x, np.asarray(ks, dtype=np.int64))
        if exact:
            return [float(v) for v in values]
        if not own:
            np.copyto(self.buf, x)
            x = self.buf
        x.partition(sorted(set(ks)))
        return [float(x[k]) for k in ks]

    def gap(self, later: np.ndarray, earlier: np.ndarray, q: float = 90.0) -> float:
        """The ``q``-th percentile of ``later − earlier`` (a wait: when more requests than its
        rank did not wait at all, it is that least wait, found in the subtraction's pass)."""
        from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

        a, b = (np.ascontiguousarray(x, dtype=float) for x in (later, earlier))
        k = rank(len(self.buf), q)
        known, least, lo, hi, nan = kernels.gap_range_into(a, b, self.buf, k)
        if known:
            return float(least)
        if not nan:  # the range came with the subtraction: one pass fewer
            return float(kernels.order_stats_in(self.buf, np.array([k]), lo, hi, False)[1][0])
        return self.of(self.buf, (q,), own=True)[0]


def _link_peak(s, d, inst, minutes: int) -> float:
    """The busiest instance's NIC busy share in its busiest minute: each transfer's busy time
    (``d``, starting at ``s`` on instance ``inst``) counted in the minute it starts and (what
    runs over) the next, at most 1 (compiled: ``kernels.link_busy``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    s, d = (np.ascontiguousarray(x, dtype=float) for x in (s, d))
    busy = kernels.link_busy(s, d, np.ascontiguousarray(inst, dtype=np.int64), minutes, MINUTE_S)
    return float(min(busy.max() / MINUTE_S, 1.0))


def _memory_per_minute(tl, minutes: int) -> np.ndarray:
    """The decode pool's peak reserved KV ÷ its KV memory in each minute."""
    w = tl.bin_s
    mem = np.zeros(minutes)
    use = tl.reserved_tokens / tl.capacity_tokens
    bins = (np.arange(len(use)) * w // MINUTE_S).astype(np.int64)
    keep = bins < minutes
    np.maximum.at(mem, bins[keep], use[keep])
    if w > MINUTE_S:  # coarser bins than minutes: each minute takes its bin's value
        mem = np.maximum.accumulate(mem)
    return mem


def summarise(tl, *, ttft_slo_s: float, tpot_slo_s: float, q: float, poisson: bool):
    """The :class:`ReplayResult` of a timeline at the targets (TTFT at percentile ``q``,
    TPOT at p90)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    ttft = tl.ttft_s
    n = len(ttft)
    arrival = np.ascontiguousarray(tl.arrival_s, dtype=float)
    counts = kernels.floor_counts(arrival, MINUTE_S)  # requests per minute
    minutes = len(counts)
    arrivals = counts.astype(float)
    mem = _memory_per_minute(tl, minutes)
    waits, times = OrderStats(n), OrderStats(n)  # a buffer for each of the two threads

    def first():  # TTFT's percentiles, per minute first (``of`` may reorder ttft), TPOT's,
        # the NICs' busiest minute and the transfer's p90
        p90s = per_minute_p90(counts, ttft)
        pcts = times.of(ttft, (50.0, 90.0, 99.0, q), own=True) + times.of(tl.tpot_s, (90.0,))
        peak = max(_link_peak(tl.link_start_s, tl.link_busy_s, tl.prefill_instance, minutes),
                   _link_peak(tl.receive_start_s, tl.link_busy_s, tl.decode_instance, minutes))
        return p90s, pcts, peak, times.gap(tl.kv_arrival_s, tl.prefill_end_s)

    def second():  # the waits' p90s, the share that waited for memory, the busiest window
        p90s = [waits.gap(*pair) for pair in (
            (tl.prefill_start_s, tl.arrival_s), (tl.receive_start_s, tl.link_ready_s),
            (tl.link_start_s, tl.link_ready_s), (tl.receive_start_s, tl.link_start_s),
            (tl.decode_start_s, tl.kv_arrival_s))]  # fmt: skip
        waited = tl.decode_start_s > tl.kv_arrival_s + 1e-12
        windows = kernels.floor_counts(arrival, BURST_WINDOW_S)
        full = windows[:-1] if len(windows) > 1 else windows  # the last window is cut short
        return p90s, float(waited.mean()), float(full.max())

    # two independent halves of compiled passes (about as long), on two threads
    # (kvmodel.replay.parallel)
    (p90s, (p50, p90, p99, at_slo, tpot90), link_peak, transfer90), (wait_p90, waited, busiest) = (
        parallel.run([first, second]))
    series = Series(np.arange(minutes), arrivals, p90s, mem)
    span = max(float(tl.arrival_s[-1]), 1e-9)
    return ReplayResult(
        requests=n,
        ttft_p50_s=p50, ttft_p90_s=p90, ttft_p99_s=p99, ttft_at_slo_s=at_slo, ttft_percentile=q,
        tpot_p90_s=tpot90,
        transfer_p90_s=transfer90,
        peak_link_utilization=link_peak,
        max_decode_queue=int(tl.waiting.max()),
        meets_slo=bool(at_slo <= ttft_slo_s and tpot90 <= tpot_slo_s),
        poisson=poisson,
        prefill_wait_p90_s=wait_p90[0],
        link_wait_p90_s=wait_p90[1],
        send_wait_p90_s=wait_p90[2],
        receive_wait_p90_s=wait_p90[3],
        memory_wait_p90_s=wait_p90[4],
        memory_waited_share=waited,
        peak_rate_rps=busiest / min(BURST_WINDOW_S, span),
        mean_rate_rps=n / span,
        series=series,
    )  # fmt: skip
