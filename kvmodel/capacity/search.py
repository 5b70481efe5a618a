"""The searches of a capacity plan: the disaggregated pools and the colocated shape that need
fewest GPUs among the parallelisms a :class:`~kvmodel.capacity.prep.Prepared` holds
(:func:`best_pools`, :func:`best_colocated`), and, when the plan's own parallelism cannot meet
the targets, the nearest one that can (:func:`nearest_pools`, :func:`nearest_colocated`).

"Nearest": parallelisms are searched in rings of distance from the plan's own, a TP twice or
half a TP of the plan one step away (|log2(TP ÷ TP of the plan)|, the larger of prefill's and
decode's for a pair); the first ring with a size that meets both targets gives the one of it
that needs fewest GPUs.  A plan at TP 2 whose colocated side misses TPOT thus shows TP 4 when
TP 4 meets it, else TP 8, … (``prep.wide_tps``: every TP that splits the KV heads and holds
the weights, across nodes too).
"""

from __future__ import annotations

import math
from dataclasses import replace

from kvmodel.capacity import colocated as colo
from kvmodel.capacity.pools import Pools, size_pools, ttft_floor
from kvmodel.capacity.prep import Prepared, gpus_of
from kvmodel.capacity.retarget import colocated_hold, pools_hold
from kvmodel.capacity.workload import Slo
from kvmodel.topology import par_text


def rank(p, slo: Slo) -> tuple:
    """Meeting the targets first, then fewer GPUs, then fewer decode GPUs (so a tie cannot
    make a tighter TPOT target shrink the decode pool), then a shorter TTFT.  Among sizes that
    miss, the one that misses by least (the larger of TTFT ÷ its target and TPOT ÷ its
    target) first: when no TP meets a target, the plan shows the nearest, so a tighter target
    never falls back to a smaller, slower pool."""
    miss = 0.0 if p.meets_slo else max(p.ttft_s / slo.ttft_s, p.tpot_s / slo.tpot_s)
    decode = decode_gpus(p) if isinstance(p, Pools) else 0
    return (not p.meets_slo, miss, p.gpus, decode, p.ttft_s)


def _better(new, best, slo: Slo) -> bool:
    return best is None or rank(new, slo) < rank(best, slo)


def decode_gpus(p: Pools) -> int:
    return p.decode_gpus


def best_pools(prep: Prepared, rps: float, pairs=None) -> Pools | None:
    """The best (``rank``) pools of every (prefill TP, decode TP) pair ``prep`` holds, or of
    ``pairs`` only (None when ``pairs`` holds none of them)."""
    slo = prep.slo
    best, sized = None, []
    for bound, tp, tpd in prep.bounds(rps):
        if pairs is not None and (tp, tpd) not in pairs:
            continue
        if best is not None and best.meets_slo and bound > best.gpus:
            break  # the rest need more GPUs than the best already found
        before = prep.earlier((tp, tpd), rps)
        p = _sized_pair(prep, (tp, tpd), rps, before.prefill_instances if before else 1)
        prep.remember((tp, tpd), rps, p)
        sized.append(p)
        if _better(p, best, slo):
            best = p
    return None if best is None else _with_split_note(best, sized)


def _sized_pair(prep: Prepared, pair: tuple, rps: float, start: int) -> Pools:
    """``size_pools`` of ``pair`` at ``rps``, its search from ``start`` (or the pools found
    at another TTFT target, when the search gives them here too: ``retarget``)."""
    slo = prep.slo
    pf, dec = prep.pair(*pair)
    floor = prep.floor(pair, ttft_floor, pf, dec, slo.ttft_percentile)

    def size() -> Pools:
        return size_pools(pf, dec, prep.shp, rps, slo.ttft_s, slo.ttft_percentile, start=start,
                          floor_s=floor, seen=prep.curve(pair, rps))  # fmt: skip

    def holds(found: Pools, was: float) -> bool:
        return pools_hold(prep, pair, rps, start, found, was, slo.ttft_s)

    return prep.sized(pair, rps, size, holds)


def _with_split_note(best: Pools, sized: list[Pools]) -> Pools:
    """``best`` with a note when a TP pair sized on the way meets the targets with fewer
    decode GPUs but more in all: with TPs searched, a tighter TPOT target can then move the
    plan to that pair, and the decode pool shrinks while the deployment grows."""
    if not best.meets_slo:
        return best
    fewer = [p for p in sized if p.meets_slo and decode_gpus(p) < decode_gpus(best)]
    if not fewer:
        return best
    alt = min(fewer, key=lambda p: (decode_gpus(p), p.gpus))
    note = (
        f"decode {par_text(alt.decode_tp, alt.decode_ep)} (with prefill "
        f"{par_text(alt.prefill_tp, alt.prefill_ep)}) would need fewer decode "
        f"GPUs, {decode_gpus(alt):,} instead of {decode_gpus(best):,}, but {alt.gpus:,} GPUs "
        f"in all instead of {best.gpus:,}; the plan keeps the fewest in all"
    )
    return replace(best, notes=best.notes + (note,))


def best_colocated(prep: Prepared, rps: float, tps=None) -> colo.Colocated | None:
    """The best (``rank``) colocated size of the shapes ``prep`` holds, or of those at a TP in
    ``tps`` only (None: no shape); of shapes of equal rank, the first of ``prep.options``.

    The shapes are sized fewest GPUs first by their lower bound, so that once one meets the
    targets the rest, whose bound is over its GPUs, are not sized at all: they cannot be
    better (the same best as sizing them in order: a shape left out needs more GPUs than
    one that meets the targets, so it ranks below it and ties with none).  When a shape's
    sizing may fail (a pool over the instance limit: ``colocated.may_raise``) they are sized
    in order, as the first to fail names its count in the error."""
    shapes = []
    for i, opt in enumerate(prep.options):
        if tps is not None and (opt.tp, opt.ep) not in tps:
            continue
        before = prep.earlier(("colocated", i), rps)
        bound = max(colo.bound(opt, prep.shp, rps), before.gpus if before else 0)
        shapes.append((bound, i, opt, before))
    if not any(colo.may_raise(opt, prep.shp, rps) for _, _, opt, _ in shapes):
        shapes.sort(key=lambda s: s[:2])
    best, first = None, None
    for bound, i, opt, before in shapes:
        if best is not None and best.meets_slo and bound > best.gpus:
            continue  # sorted: so are the rest; in order: the next may be fewer
        c = _sized_shape(prep, opt, rps, before.prefill_instances if before else 1)
        prep.remember(("colocated", i), rps, c)
        if best is None or (rank(c, prep.slo), i) < (rank(best, prep.slo), first):
            best, first = c, i
    return best


def _sized_shape(prep: Prepared, opt, rps: float, start: int) -> colo.Colocated:
    """``colocated.size`` of shape ``opt`` at ``rps``, its search from ``start`` (or the size
    found at another TTFT target, when the search gives it here too: ``retarget``)."""
    slo = prep.slo
    q = slo.ttft_percentile
    shape = ("colocated", opt.tp, opt.ep, opt.chunk)  # the same at any TTFT target
    floor = prep.floor(shape, colo.ttft_floor, opt, q)

    def size() -> colo.Colocated:
        return colo.size(opt, prep.shp, rps, slo.ttft_s, q, start=start, floor_s=floor,
                         seen=prep.curve(shape, rps))  # fmt: skip

    def holds(found: colo.Colocated, was: float) -> bool:
        return colocated_hold(prep, opt, shape, rps, start, found, was, slo.ttft_s)

    return prep.sized(shape, rps, size, holds)


def _steps(par, chosen) -> int:
    """How many doublings or halvings the GPUs of ``par`` (TP, EP) are from the nearest of
    ``chosen``'s (a switch between TP and EP at the same GPUs is one step)."""
    return min(abs(round(math.log2(gpus_of(par) / gpus_of(c)))) + (par != c and
               gpus_of(par) == gpus_of(c)) for c in chosen)  # fmt: skip


def nearest_pools(wide: Prepared, own: Prepared, rps: float) -> Pools | None:
    """The pools of the nearest (module doc) TP pair of ``wide`` beyond ``own``'s that meet
    the targets, with fewest GPUs among that ring's (None: no pair of ``wide`` meets them)."""
    ptps, dtps, _ = own.tps
    rings: dict[int, set] = {}
    for tp in wide.prefill_mean_s:
        for tpd in wide.decodes:
            d = max(_steps(tp, ptps), _steps(tpd, dtps))
            rings.setdefault(d, set()).add((tp, tpd))
    for d in sorted(rings):
        if d == 0:
            continue  # the plan's own parallelism: it already missed
        p = best_pools(wide, rps, pairs=rings[d])
        if p is not None and p.meets_slo:
            return p
    return None


def nearest_colocated(wide: Prepared, own: Prepared, rps: float) -> colo.Colocated | None:
    """The colocated size at the nearest TP of ``wide`` beyond ``own``'s that meets the
    targets, with fewest GPUs among that ring's (None: no TP of ``wide`` meets them)."""
    ctps = own.tps[2]
    rings: dict[int, set] = {}
    for tp in {(o.tp, o.ep) for o in wide.options}:
        rings.setdefault(_steps(tp, ctps), set()).add(tp)
    for d in sorted(rings):
        if d == 0:
            continue
        c = best_colocated(wide, rps, tps=rings[d])
        if c is not None and c.meets_slo:
            return c
    return None
