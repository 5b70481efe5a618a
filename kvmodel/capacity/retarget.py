"""Sizes found at one TTFT target that hold at another: when a pool's or a colocated shape's
size at a rate, found for one TTFT target, is what the search gives for a new target, it is
reused instead of sized again (a dashboard that moves the TTFT target re-plans ~26 rates).

A size depends on the TTFT target only through two decisions (``pools.size_pools``,
``colocated.size``): whether the TTFT floor is over the target (then no count is searched and
the size is a fixed fallback), and, when it is not, the count the search answers: the
smallest count from where the search starts whose TTFT percentile is within the target.  The
TTFT percentile at each count does not depend on the target (``Prepared.curve`` keeps it), and
it falls as instances are added (the search's own premise), so that count is the same at a new
target exactly when its percentile is within the new target and the count below it (unless
the search starts at the count) is not.  The checks below make those comparisons, the same ones
the search would make, and say no whenever the answer is not certain (the size is then found
again): the result reused is the object found before, equal field for field to a new one.
"""

from __future__ import annotations

from kvmodel.capacity import colocated as colo
from kvmodel.capacity.pools import at_least, first_step_s, lanes, ttft_floor, ttft_function


def pools_hold(prep, pair: tuple, rps: float, start: int, found, was: float, now: float) -> bool:
    """Whether ``size_pools`` gives ``found`` (sized at TTFT target ``was``) at target ``now``,
    for the (prefill, decode) ``pair`` of ``prep`` at ``rps``, its search starting at ``start``
    instances (the count at a lower rate)."""
    pf, dec = prep.pair(*pair)
    q = prep.slo.ttft_percentile
    floor = prep.floor(pair, ttft_floor, pf, dec, q)

    def searched(t: float) -> bool:  # size_pools: the first floor, then this rate's own
        return not floor > t or not prep.floor((pair, rps), _rate_floor, pf, dec, prep.shp, rps,
                                               q) > t  # fmt: skip

    if not searched(was):
        return not searched(now)  # the fallback count and note, the same below both floors
    ttft = ttft_function(pf, dec, prep.shp, rps, q, prep.curve(pair, rps))
    lo = max(at_least(rps * pf.mean_s), at_least(rps * pf.mean_x / lanes(pf)))
    return searched(now) and _same_count(ttft, found.prefill_instances, max(lo, start), was, now)


def _rate_floor(pf, dec, shp, rps: float, q: float) -> float:
    return ttft_floor(pf, dec, q, first_step_s(dec, shp, rps))


def colocated_hold(prep, opt, shape: tuple, rps: float, start: int, found, was: float,
                   now: float) -> bool:  # fmt: skip
    """Whether ``colocated.size`` gives ``found`` (sized at TTFT target ``was``) at target
    ``now``, for shape ``opt`` (``shape``: its key) at ``rps``, its search from ``start``."""
    q = prep.slo.ttft_percentile
    floor = prep.floor(shape, colo.ttft_floor, opt, q)
    if floor > was:
        return floor > now  # the fallback count, the same above the floor
    ttft = colo.ttft_function(opt, prep.shp, rps, q, prep.curve(shape, rps))
    first = max(at_least(rps * opt.mean_s), start)
    if floor > now or not _same_count(ttft, found.prefill_instances, first, was, now):
        return False
    n = found.instances  # met: its TTFT within the target (at least the count's: n >= it)
    return (ttft(n) <= was) == (ttft(n) <= now)


def _same_count(ttft, count: int, first: int, was: float, now: float) -> bool:
    """Whether ``smallest(lambda c: ttft(c) <= target, first)`` answers ``count`` at target
    ``now`` as at ``was``: it did find it then (not the answer of a search that found none),
    its TTFT is within ``now``, and it is ``first`` or the count below it is over ``now``."""
    if count < first or not ttft(count) <= was or not ttft(count) <= now:
        return False
    return count == first or not ttft(count - 1) <= now
