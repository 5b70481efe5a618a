"""Queueing pieces of the capacity plan: Erlang C, M/G/c waiting times and their percentiles.

A pool of ``c`` identical servers (instances) fed by Poisson arrivals at rate λ with service
times of mean E[s] and squared coefficient of variation cs² is an M/G/c queue.  Its offered
load is ``a = λ·E[s]``; it is stable when ``a < c``.  The waiting time is approximated the
Allen–Cunneen way:

    P(wait > 0)        = ErlangC(c, a)                       (exact for M/M/c)
    wait | wait > 0    ~ Exponential, mean (1 + cs²)/2 · E[s] / (c − a)

For ``c = 1`` this is the Pollaczek–Khinchine mean λ·E[s²] / (2(1 − ρ)) of ``traffic.queue``.

Percentiles of a sum (prefill wait + prefill + link wait + transfer + first step) come from a
fixed set of draws (:class:`Draws`: request lengths drawn by weight and one uniform number per
queue, fixed seed): each wait is its inverse CDF at the draw's uniform, so every sample grows
with the load and shrinks with the servers, and so does every percentile.  The same draws
serve every rate, TP and pool size of a plan: comparisons between them carry no sampling noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvmodel.traffic.queue import SEED

DRAWS = 8192  # samples per percentile (p99 rests on ~80 of them)
LOOP_SERVERS = 200  # Erlang B by recursion up to here; by Poisson sums in numpy above
MAX_SERVERS = 10_000_000  # a pool larger than this is an input error, not a plan


@dataclass(frozen=True)
class Draws:
    """Fixed random draws: which entry each sampled request is, and a uniform per queue."""

    idx: np.ndarray  # (DRAWS,) entry index, drawn by weight
    u: np.ndarray  # (3, DRAWS) uniforms in [0, 1): prefill queue, sender link, receiver link
    tail: np.ndarray  # −ln(1 − u): the waits' inverse CDF is linear in it (``wait_at``)


def make_draws(weights: np.ndarray, n: int = DRAWS) -> Draws:
    """Draws for entries with ``weights`` (any positive scale), seed ``traffic.queue.SEED``."""
    rng = np.random.default_rng(SEED)
    cdf = np.cumsum(np.asarray(weights, dtype=float))
    cdf /= cdf[-1]
    idx = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(cdf) - 1)
    u = rng.random((3, n))
    return Draws(idx=idx, u=u, tail=-np.log1p(-u))


def too_many_instances(c: float) -> ValueError:
    """The error of a pool over :data:`MAX_SERVERS` instances (``c`` may be infinite)."""
    n = f"{c:,}" if c < 1e15 else f"about {c:.1e}" if math.isfinite(c) else "endlessly many"
    return ValueError(
        f"a pool would need {n} instances, more than the {MAX_SERVERS:,} this model sizes: "
        "check the request rate and the token counts"
    )


def erlang_c(c: int, a: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with offered load ``a`` [erlang].

    1 when ``a ≥ c`` (unstable), 0 when ``a ≤ 0``.  Erlang B by its recursion
    B(k) = a·B(k−1) / (k + a·B(k−1)), or for many servers as the Poisson ratio
    pmf(c; a) / cdf(c; a) in log space; then C = c·B / (c − a·(1 − B)).
    """
    if a <= 0:
        return 0.0
    if a >= c:
        return 1.0
    if c > MAX_SERVERS:
        raise too_many_instances(c)
    if c <= LOOP_SERVERS:
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
    else:  # the Poisson terms within 40 standard deviations of the mode (a < c): the rest
        # are below e^-800 of the largest, so memory grows with √a, not with c
        spread = 40.0 * math.sqrt(a) + 40.0
        lo, hi = max(0, int(a - spread)), min(c, int(a + spread) + 1)
        k = np.arange(lo, hi + 1, dtype=float)
        log_a = math.log(a)
        logs = k * log_a - _log_factorials(k)
        log_c = c * log_a - math.lgamma(c + 1.0)
        top = logs.max()
        b = math.exp(log_c - top) / float(np.exp(logs - top).sum())
    return c * b / (c - a * (1.0 - b))


def _log_factorials(k: np.ndarray) -> np.ndarray:
    """ln k! for consecutive whole ``k`` (ascending): one lgamma, then a running sum."""
    first = math.lgamma(float(k[0]) + 1.0)
    steps = np.log(np.maximum(k[1:], 1.0))
    return first + np.concatenate(([0.0], np.cumsum(steps)))


def wait_at(tail: np.ndarray, *, c: int, a: float, mean_s: float, cs2: float) -> np.ndarray:
    """Waiting times [s] of an M/G/c queue at draws ``tail`` = −ln(1 − u) (module doc).

    The inverse CDF: 0 when u ≤ 1 − p, else −mean·ln((1 − u)/p) = mean·(tail + ln p).
    Infinite everywhere when the queue is unstable (``a ≥ c``).
    """
    if a <= 0 or mean_s <= 0:
        return np.zeros_like(tail)
    if a >= c:
        return np.full_like(tail, np.inf)
    p = erlang_c(c, a)
    if p <= 0:
        return np.zeros_like(tail)
    mean = (1.0 + cs2) / 2.0 * mean_s / (c - a)
    return np.maximum(tail + math.log(p), 0.0) * mean


def moments(values: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """Mean and squared coefficient of variation of ``values`` under probability ``weights``."""
    mean = float((weights * values).sum())
    if mean <= 0:
        return 0.0, 0.0
    var = float((weights * (values - mean) ** 2).sum())
    return mean, var / mean / mean  # not mean**2: that overflows a float past ~1e154


def percentile(samples: np.ndarray, q: float) -> float:
    """The ``q``-th percentile (0-100) of ``samples``: the ⌈q·n/100⌉-th smallest (an order
    statistic, so it never falls when a sample grows)."""
    return kth_smallest(samples, rank(len(samples), q))  # inf when unstable (all inf)


SELECT_STRIDE = 16  # ``kth_smallest`` draws its threshold from every 16th sample
SELECT_MIN = 2048  # below this many samples it partitions them all


def kth_smallest(values: np.ndarray, k: int) -> float:
    """``np.partition(values, k)[k]``, the same number, in about half the time for the
    percentiles' 8,192 draws: a threshold from every :data:`SELECT_STRIDE`-th value a little
    beyond the rank, then a partition of the values on the rank's side of it only (exact:
    every value left out is ordered before, or after, every value kept; NaN last, as numpy
    orders it).  When too few values are kept (a rare draw), all of them are partitioned."""
    n = len(values)
    sub = values[::SELECT_STRIDE]
    upper = k >= n // 2  # the answer's side: the values at or above it are the fewer
    side = (n - k if upper else k + 1) / SELECT_STRIDE  # expected subsample values on it
    room = math.ceil(side) + int(3.0 * math.sqrt(side)) + 2
    if n >= SELECT_MIN and room < len(sub):
        if upper:
            j = len(sub) - room
            t = np.partition(sub, j)[j]
            kept = values[~(values < t)]  # at or above t, and NaN (which sorts last)
            r = len(kept) - (n - k)  # the values left out all come first
        else:
            j = room - 1
            t = np.partition(sub, j)[j]
            kept = values[values <= t]  # NaN is left out: it sorts after every kept value
            r = k if len(kept) > k else -1
        if r >= 0:
            kept.partition(r)
            return float(kept[r])
    return float(np.partition(values, k)[k])


def percentiles(samples: np.ndarray, qs) -> list[float]:
    """:func:`percentile` at each of ``qs`` from one partition (the same order statistics)."""
    ks = [rank(len(samples), q) for q in qs]
    part = np.partition(samples, sorted(set(ks)))
    return [float(part[k]) for k in ks]


def rank(n: int, q: float) -> int:
    """The 0-based index of the ``q``-th percentile among ``n`` sorted samples (⌈q·n/100⌉ − 1)."""
    return min(max(math.ceil(q / 100.0 * n) - 1, 0), n - 1)


def sum_percentile(base: np.ndarray, q: float, queues) -> float:
    """``percentile(base + wait_at(tail, c=c, a=a, mean_s=m, cs2=v) + …, q)`` for ``queues`` of
    (tail, c, a, m, v), the waits added in their order: the same floating-point operations
    (the same number), done in place in one buffer (about half the time: a plan evaluates
    it some twenty times per rate)."""
    buf = None
    for tail, c, a, mean_s, cs2 in queues:
        if a <= 0 or mean_s <= 0:
            continue  # no wait: adding 0 changes nothing
        if a >= c:
            return math.inf  # unstable: every sample infinite
        p = erlang_c(c, a)
        if p <= 0:
            continue
        mean = (1.0 + cs2) / 2.0 * mean_s / (c - a)
        if buf is None:
            buf = np.add(tail, math.log(p))
            np.maximum(buf, 0.0, out=buf)
            buf *= mean
            buf += base  # base + wait: addition commutes exactly
        else:
            tmp = np.add(tail, math.log(p))
            np.maximum(tmp, 0.0, out=tmp)
            tmp *= mean
            buf += tmp
    if buf is None:
        return percentile(base, q)
    return kth_smallest(buf, rank(len(buf), q))


def remembered(f, seen: dict | None = None):
    """``f`` of one whole argument, each value computed once (a search asks some twice);
    ``seen``: the values known already, filled as new ones are computed (a caller that keeps
    it shares them between searches of the same ``f``)."""
    seen = {} if seen is None else seen

    def g(n):
        if n not in seen:
            seen[n] = f(n)
        return seen[n]

    return g


def smallest(ok, lo: int, hi: int = 10_000_000) -> int | None:
    """Smallest integer n in [lo, hi] with ``ok(n)`` for a monotone ``ok`` (None: none)."""
    if ok(lo):
        return lo
    step, last_bad = 1, lo
    while True:
        n = min(lo + step, hi)
        if ok(n):
            break
        if n == hi:
            return None
        last_bad, step = n, step * 2
    good = n
    while good - last_bad > 1:
        mid = (good + last_bad) // 2
        if ok(mid):
            good = mid
        else:
            last_bad = mid
    return good


def largest_within(f, limit: float, top: int) -> tuple[int, float]:
    """Largest whole n in [1, top] with ``f(n) ≤ limit`` for an increasing, vectorised ``f``
    (0 when even ``f(1)`` exceeds it), and ``f`` there (at 1 when 0).  Refines a 65-point
    grid three times instead of evaluating every n (``f`` costs ~1 µs per point)."""
    lo, hi = 1, max(int(top), 1)
    first = float(f(np.array([1]))[0])
    if first > limit:
        return 0, first
    while hi > lo:
        grid = np.unique(np.linspace(lo, hi, 65).astype(np.int64))
        vals = np.asarray(f(grid), dtype=float)
        k = int(np.searchsorted(vals, limit, side="right")) - 1  # last grid point within
        if k == len(grid) - 1:
            return int(grid[k]), float(vals[k])
        if grid[k + 1] - grid[k] == 1:
            return int(grid[k]), float(vals[k])
        lo, hi = int(grid[k]), int(grid[k + 1]) - 1
    return lo, float(f(np.array([lo]))[0])


KEPT_POINTS = 64  # point arrays whose values ``kept_points`` keeps per function


def kept_points(f, kept: dict | None):
    """``f`` of an array of points (a step against the batch), each array's values computed
    once: ``kept`` holds them by the points' bytes (None: not kept).  A search over batches
    at another TPOT target asks the same grids first (``largest_within``'s are fixed by its
    range), and ``f`` is elementwise, so a value is the same whatever array it came in.  The
    values are shared: read-only."""
    if kept is None:
        return f

    def g(points):
        arr = np.asarray(points)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        hit = kept.get(key)
        if hit is None:
            if len(kept) >= KEPT_POINTS:
                kept.clear()
            hit = np.asarray(f(points))
            hit.flags.writeable = False
            kept[key] = hit
        return hit

    return g


def batch_grid(top: int, points: int = 96) -> np.ndarray:
    """Batches 1 … ``top`` on a geometric grid (for interpolating a step against the batch)."""
    return np.unique(np.geomspace(1, max(top, 1), points).round().astype(np.int64))
