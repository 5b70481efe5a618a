"""What the link has to carry: the traffic's load, queueing and decode idle time.

With an arrival rate λ (from timestamps, or given) the link is an M/G/1 queue whose service
times are the requests' own transfer times.  Utilisation ρ = λ·E[x]; the mean wait is
Pollaczek–Khinchine, λ·E[x²] / (2(1 − ρ)); percentiles come from a Lindley recursion over
Poisson arrivals and service times drawn from the trace (fixed seed, so results repeat).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

import numpy as np

from ..kept import Kept
from ..transfer import Scenario, Volume, transfer
from .analysis import Mix, length_volume, per_length, per_request_scenario

SIM_REQUESTS = 200_000  # Lindley recursion length for percentiles
TARGET_REQUESTS = 20_000  # the bandwidth search's recursion (each bandwidth it tries)
SEED = 20231116


def arrival_rate(mix: Mix, rps: float | None = None) -> float | None:
    """Requests per second: given, or n / span of the timestamps (None when neither)."""
    if rps is not None:
        if not rps > 0:
            raise ValueError(f"requests per second must be > 0, got {rps!r}")
        return float(rps)
    return mix.n_requests / mix.span_s if mix.span_s else None


@dataclass(frozen=True)
class Load:
    rps: float
    bytes_per_s: float  # demanded on the link
    capacity_bytes_per_s: float
    utilization: float
    stable: bool
    mean_wait_s: float  # Pollaczek–Khinchine (inf when unstable)
    p50_s: float  # transfer incl. queueing
    p90_s: float
    p99_s: float
    p99_share_of_ttft: float
    decode_idle_s_per_s: float  # decode-side seconds spent waiting for KV per second of traffic
    decode_steps_lost_per_s: float
    bandwidth_for_target_bytes_per_s: float | None  # per direction, p99 share ≤ share_target


def _sample(mix: Mix, n: int, rng) -> np.ndarray:
    p = mix.weights / mix.weights.sum()
    return rng.choice(len(mix.tokens), size=n, p=p)


def simulate_waits(service: np.ndarray, rate: float, rng) -> np.ndarray:
    """Waiting times of an FCFS queue with Poisson arrivals.

    Lindley's recursion W₀ = 0, W_{n+1} = max(0, W_n + X_n − A_n) unrolls to
    W_n = S_n − min_{k ≤ n} S_k with S_n = Σ_{i<n} (X_i − A_i), S₀ = 0: a cumulative sum and a
    running minimum instead of a Python loop over every request.
    """
    return waits_after(service, rng.exponential(1.0 / rate, size=len(service)))


def waits_after(service: np.ndarray, gaps: np.ndarray) -> np.ndarray:
    """:func:`simulate_waits` with the inter-arrival ``gaps`` drawn already.  The same
    operations in two buffers (S_n, then its running minimum and the waits), not six fresh
    arrays: fresh memory is slow to touch on a small VM (bench/README.md, session 3)."""
    n = len(service)
    s = np.empty(n)
    s[:1] = 0.0
    if n > 1:
        np.subtract(service[:-1], gaps[:-1], out=s[1:])
        np.cumsum(s[1:], out=s[1:])
    low = np.minimum.accumulate(s)
    np.subtract(s, low, out=low)
    return np.maximum(low, 0.0, out=low)


# The draws depend on the traffic's mix, the rate and the fixed seeds only, not on the link,
# the stack or the decode step: a page that changes one of those (the Traffic page's decode
# step, its link) reuses them.  They were ~40 % of a load (the weighted choice of 200,000
# lengths ~15 ms, and the search's gaps drawn again for each bandwidth it tries); the same
# numbers come out, in the same order from the same generators.  The rate only scales the
# gaps: numpy's ``exponential(scale)`` is ``scale * standard_exponential()`` draw for draw
# (the same generator state, the same product), so the lengths and the unit gaps are kept per
# mix and a new rate multiplies them (the Traffic page's arrival rate: ~15 ms a new rate less).
_DRAWS = Kept(4)  # ~3.4 MB each (200,000 lengths and unit gaps): at most ~14 MB a server


def _mix_key(mix: Mix) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for a in (mix.tokens, mix.weights):
        arr = np.ascontiguousarray(a)
        h.update(str((arr.dtype, arr.shape)).encode())
        h.update(arr.tobytes())
    return h.digest()


def unit_draws(mix: Mix, n: int, target_n: int):
    """(lengths drawn, unit inter-arrival gaps, the bandwidth search's unit gaps), the same
    for every rate: ``SEED``'s generator draws the lengths, then ``n`` standard exponentials;
    ``SEED + 1``'s the search's ``min(n, target_n)``."""
    key = (_mix_key(mix), n, target_n)
    hit = _DRAWS.get(key)
    if hit is not None:
        return hit
    rng = np.random.default_rng(SEED)
    idx = _sample(mix, n, rng)
    unit = rng.standard_exponential(size=n)
    target_unit = np.random.default_rng(SEED + 1).standard_exponential(size=min(n, target_n))
    for a in (idx, unit, target_unit):
        a.flags.writeable = False  # shared by every load of this mix
    _DRAWS.put(key, (idx, unit, target_unit))
    return idx, unit, target_unit


def draws(mix: Mix, n: int, rate: float, target_n: int):
    """(lengths drawn, their inter-arrival gaps, the bandwidth search's gaps) of :func:`load`:
    what ``rng.exponential(1.0 / rate, size)`` draws after the lengths from ``SEED``'s
    generator, and from ``SEED + 1``'s for the search (:func:`unit_draws` scaled)."""
    idx, unit, target_unit = unit_draws(mix, n, target_n)
    scale = 1.0 / rate
    return idx, unit * scale, target_unit * scale


def load(sc: Scenario, mix: Mix, *, rps: float | None = None, sim_requests: int = SIM_REQUESTS):
    """Link load, queueing and decode idle time for the traffic (None without a rate)."""
    rate = arrival_rate(mix, rps)
    if rate is None:
        return None
    d = _drawn(sc, mix, sim_requests, TARGET_REQUESTS)
    rho = rate * d.ex
    stable = rho < 1
    mean_wait = rate * d.ex2 / (2 * (1 - rho)) if stable else float("inf")
    scale = 1.0 / rate  # the gaps ``draws`` gives: exponential(1.0 / rate)
    if stable:
        total = waits_after(d.service, d.unit * scale) + d.exposed
        share = total / sc.ttft_s(d.prefill, total)
        p50, p90, p99 = percentiles(total, (50, 90, 99))
        (p99_share,) = percentiles(share, (99,))
        idle = rate * float(np.mean(total))
    else:  # the queue grows without bound
        p50 = p90 = p99 = idle = float("inf")
        p99_share = 1.0
    search = _ShareSearch(sc, d, rate, d.target_unit * scale)
    return Load(
        rps=rate,
        bytes_per_s=rate * d.wire,
        capacity_bytes_per_s=sc.effective_bandwidth_bytes_per_s,
        utilization=rho,
        stable=stable,
        mean_wait_s=mean_wait,
        p50_s=p50,
        p90_s=p90,
        p99_s=p99,
        p99_share_of_ttft=p99_share,
        decode_idle_s_per_s=idle,
        decode_steps_lost_per_s=idle / sc.decode_step_s,
        bandwidth_for_target_bytes_per_s=_search_bandwidth(search, sc.share_target),
    )


@dataclass(frozen=True)
class _Drawn:
    """What ``load`` reads of the traffic's draws that no rate changes, on one scenario: each
    drawn request's transfer time (how long it holds the link), exposed transfer and prefill,
    in draw order, the draws' unit gaps, the mix's moments, and the bandwidth search's
    volume and draws (the first ``TARGET_REQUESTS``)."""

    service: np.ndarray
    exposed: np.ndarray
    prefill: np.ndarray
    unit: np.ndarray
    target_unit: np.ndarray
    ex: float  # mean and mean square of the transfer time, and the mean wire bytes
    ex2: float
    wire: float
    weights: np.ndarray  # the mix's weights, summing to 1
    inverse: np.ndarray  # mix entry -> distinct length
    volume: Volume  # bytes and prefill per distinct length (per_length's)
    drawn: np.ndarray  # distinct length of each of the search's draws
    drawn_prefill: np.ndarray


_DRAWN = Kept(1)  # ~5 MB (three gathers of 200,000): the Traffic page's scenario and mix


def _drawn(sc: Scenario, mix: Mix, n: int, target_n: int) -> _Drawn:
    """``_Drawn`` of ``sc`` and ``mix`` (kept: a new arrival rate reuses it, ~1 ms a load)."""
    key = (sc, _mix_key(mix), n, target_n)
    hit = _DRAWN.get(key)
    if hit is not None:
        return hit
    _, inverse, exposed, prefill, wire, whole = per_length(sc, mix.tokens, prefix=mix.prefix)
    w = mix.weights / mix.weights.sum()
    x = whole[inverse]  # each request holds the link for its whole transfer
    idx, unit, target_unit = unit_draws(mix, n, target_n)
    volume = length_volume(sc, mix.tokens, mix.prefix)  # what per_length builds
    drawn = inverse[idx[:target_n]]  # ``x[inverse][idx]`` = ``x[inverse[idx]]``
    made = _Drawn(service=x[idx], exposed=exposed[inverse][idx], prefill=prefill[inverse][idx],
                  unit=unit, target_unit=target_unit, ex=float((w * x).sum()),
                  ex2=float((w * x * x).sum()), wire=float((w * wire[inverse]).sum()),
                  weights=w, inverse=inverse, volume=volume, drawn=drawn,
                  drawn_prefill=np.atleast_1d(volume.prefill)[drawn])  # fmt: skip
    for a in (made.service, made.exposed, made.prefill, made.drawn, made.drawn_prefill):
        a.flags.writeable = False  # shared by every load of this scenario and mix
    _DRAWN.put(key, made)
    return made


class _ShareSearch:
    """The bandwidth search's tries: each try's p99 share of TTFT on the first
    ``TARGET_REQUESTS`` draws, computed as before from the same arrays in the same order
    (``per_length`` at that bandwidth), with what no bandwidth changes shared (``_Drawn``)."""

    def __init__(self, sc: Scenario, d: _Drawn, rate: float, gaps: np.ndarray):
        self.sc1 = per_request_scenario(sc)
        self.sc, self.d, self.rate, self.gaps = sc, d, rate, gaps

    def at_most(self, bw: float, target: float) -> bool | None:
        """Whether the p99 share of TTFT at ``bw`` [bytes/s] is at most ``target`` (None: it
        is NaN, neither at most nor over), as ``np.percentile`` of the shares at ``bw``
        says, decided by counting when the 99th percentile's order statistics lie clearly
        on one side (numpy's linear interpolation stays between them).  The scenario is a
        copy with only the link's bandwidth changed (building one validates every field,
        ~0.2 ms a try)."""
        d = self.d
        other = self.sc1.with_link(replace(self.sc1.link, bandwidth_bytes_per_s=bw))
        t = transfer(other, volume=d.volume)
        whole, exposed = np.atleast_1d(t.transfer_s), np.atleast_1d(t.exposed_s)
        if self.rate * float((d.weights * whole[d.inverse]).sum()) >= 1:
            return False  # the link is overloaded: an infinite share
        total = waits_after(whole[d.drawn], self.gaps) + exposed[d.drawn]
        share = total / self.sc.ttft_s(d.drawn_prefill, total)
        decided = p99_within(share, target)
        if decided is not None:
            return decided
        p99 = float(np.percentile(share, 99))
        return None if p99 != p99 else p99 <= target


P99_MARGIN = 1e-12  # relative: far above the interpolation's rounding (~1e-16)


def p99_within(values: np.ndarray, limit: float) -> bool | None:
    """Whether ``np.percentile(values, 99) <= limit`` (None: too close to tell by counting).
    The percentile lies between the order statistics at ⌊0.99·(n − 1)⌋ and the next; ranks
    one further each side are taken, and a margin, so the rounding of the index and of the
    interpolation cannot change the answer; with a NaN numpy gives NaN, so it is computed."""
    n = len(values)
    j = math.floor(0.99 * (n - 1))
    lo, hi = max(j - 1, 0), min(j + 2, n - 1)
    if n < 4 or not math.isfinite(limit) or np.isnan(values).any():
        return None
    if np.count_nonzero(values <= limit - abs(limit) * P99_MARGIN) >= hi + 1:
        return True  # the statistic at ``hi`` and every one below it is under the limit
    if np.count_nonzero(values <= limit + abs(limit) * P99_MARGIN) <= lo:
        return False  # the statistic at ``lo`` and every one above it is over the limit
    return None


def bandwidth_for_target(sc: Scenario, mix: Mix, rate: float):
    """Smallest per-direction bandwidth whose p99 transfer share of TTFT ≤ the target (on the
    first ``TARGET_REQUESTS`` lengths drawn, and their inter-arrival gaps at ``rate``); None
    when latency or the codec alone exceed it."""
    d = _drawn(sc, mix, SIM_REQUESTS, TARGET_REQUESTS)
    return _search_bandwidth(_ShareSearch(sc, d, rate, d.target_unit * (1.0 / rate)),
                             sc.share_target)  # fmt: skip


def _search_bandwidth(search: _ShareSearch, target: float) -> float | None:
    """The bisection of ``bandwidth_for_target`` (geometric, from 1 MB/s to 1 PB/s, to 1 %)."""
    lo, hi = 1e6, 1e15
    if search.at_most(hi, target) is False:
        return None  # latency or codec alone exceed the target
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        if search.at_most(mid, target):
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.01:
            break
    return hi


SAMPLE_STRIDE = 16  # ``percentiles`` brackets each order statistic in every 16th value
PERCENTILES_FROM = 50_000  # values; below, np.percentile's partition of them all is cheap


def percentiles(values: np.ndarray, qs) -> list[float]:
    """``np.percentile(values, qs)`` (numpy's linear method), the same numbers in less time
    for the link queue's 200,000 draws: numpy interpolates between the order statistics at
    ⌊(n − 1)·q/100⌋ and the next; those are found by ``order_stats`` (without partitioning
    every value), and numpy's own interpolation is applied to them (``np.quantile`` of the
    two at the fraction numpy computes: 1 × its fraction is the fraction).  With a NaN, few
    values or a percentile at an end, ``np.percentile`` itself."""
    n = len(values)
    q = np.true_divide(np.asarray(qs, dtype=float), 100)  # as np.percentile divides q
    virtual = (n - 1) * q
    below = np.floor(virtual)
    if n < PERCENTILES_FROM or below.min() < 0 or below.max() > n - 2 or np.isnan(values).any():
        return [float(v) for v in np.atleast_1d(np.percentile(values, qs))]
    ranks = below.astype(np.intp)
    stats = order_stats(values, sorted({int(r) for r in ranks} | {int(r) + 1 for r in ranks}))
    gamma = virtual - ranks  # numpy's fraction: the index less its floor
    return [float(np.quantile(np.array([stats[r], stats[r + 1]]), float(g)))
            for r, g in zip(ranks, gamma, strict=True)]  # fmt: skip


def order_stats(values: np.ndarray, ranks) -> dict[int, float]:
    """The values at ``ranks`` (0-based) of ``values`` sorted (no NaN among them), each as
    ``np.partition(values, r)[r]``: ranks next to each other share a bracket taken from every
    ``SAMPLE_STRIDE``-th value, wide enough that the ranks fall inside it but for rare draws;
    only the values inside it are partitioned (exact: every value left out is below, or
    above, every value kept).  Ranks outside their bracket come from a partition of all."""
    n = len(values)
    sub = values[::SAMPLE_STRIDE].copy()
    m = len(sub)
    groups: list[list[int]] = []
    for r in sorted(set(ranks)):
        if groups and r <= groups[-1][-1] + 1:
            groups[-1].append(r)
        else:
            groups.append([r])
    brackets = []
    for g in groups:
        f = g[0] / n
        margin = int(6.0 * math.sqrt(m * f * (1.0 - f))) + 8
        brackets.append((max(0, g[0] // SAMPLE_STRIDE - margin),
                         min(m - 1, g[-1] // SAMPLE_STRIDE + 1 + margin)))  # fmt: skip
    sub.partition(sorted({j for pair in brackets for j in pair}))
    out: dict[int, float] = {}
    for g, (lo, hi) in zip(groups, brackets, strict=True):
        t_lo = -math.inf if lo == 0 else sub[lo]
        t_hi = math.inf if hi == m - 1 else sub[hi]
        under = values < t_lo
        n_under = int(np.count_nonzero(under))
        kept = values[~under & (values <= t_hi)]
        if n_under <= g[0] and g[-1] < n_under + len(kept):
            part = np.partition(kept, [r - n_under for r in g])
            out.update((r, float(part[r - n_under])) for r in g)
        else:  # a rare draw: the bracket missed a rank
            part = np.partition(values, g)
            out.update((r, float(part[r])) for r in g)
    return out
