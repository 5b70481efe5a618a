"""The rate-free part of a capacity plan: which TPs are searched (:func:`tp_candidates`), what
plans of one workload on one scenario share whatever the targets (:class:`Basis`, kept for the
last few), and what one set of targets adds before any rate is sized (:class:`Prepared`)."""

from __future__ import annotations

import bisect
import math
import threading
import weakref
from collections import OrderedDict

from kvmodel.capacity import colocated as colo
from kvmodel.capacity.pools import (
    Decode,
    Prefill,
    decode_side,
    pair_scenario,
    prefill_side,
    prefill_work_s,
)
from kvmodel.capacity.queue import MAX_SERVERS, too_many_instances
from kvmodel.capacity.workload import Slo, Workload, shape
from kvmodel.memory import USABLE_FRACTION, weights_bytes_per_gpu
from kvmodel.scenario import Scenario
from kvmodel.size import shard_heads
from kvmodel.wire import prefill_time_s

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
AUTO_TPS = 4  # the smallest TPs that hold the weights are searched


def tp_candidates(sc: Scenario, gpu=None) -> tuple[int, ...]:
    """TPs searched when a TP is ``auto``: the :data:`AUTO_TPS` smallest of :data:`TP_CHOICES`
    that split every KV-head group and leave memory beside the weights, within one node
    (``gpus_per_node``) when any fits there: tensor parallelism across nodes is the last
    resort of a model too large for one.  ``gpu``: the GPU of the pool (``sc.gpu`` by
    default; the decode pool's is ``sc.decode_gpu``)."""
    gpu = gpu or sc.gpu
    out = []
    for tp in TP_CHOICES:
        try:
            for g in sc.model.groups:
                shard_heads(g.kv_heads, tp)
        except ValueError:
            continue
        if out and tp > gpu.gpus_per_node:
            break
        if weights_bytes_per_gpu(sc.model, tp) < gpu.memory_bytes * USABLE_FRACTION:
            out.append(tp)
        if len(out) == AUTO_TPS:
            break
    if not out:
        raise ValueError(
            f"the weights of {sc.model.name} do not fit on {gpu.name} at any TP up to "
            f"{TP_CHOICES[-1]}"
        )
    return tuple(out)


def wide_tps(sc: Scenario) -> tuple[int, ...]:
    """Every TP of :data:`TP_CHOICES` that splits every KV-head group and leaves memory beside
    the weights, across nodes too: where the search for the nearest parallelism that meets
    the targets looks (``search.nearest_pools``) when the plan's own does not."""
    out = []
    for tp in TP_CHOICES:
        try:
            for g in sc.model.groups:
                shard_heads(g.kv_heads, tp)
        except ValueError:
            continue
        if weights_bytes_per_gpu(sc.model, tp) < sc.gpu.memory_bytes * USABLE_FRACTION:
            out.append(tp)
    return tuple(out)


class Basis:
    """What plans of one workload on one scenario share whatever the targets and the rate:
    the shape, each TP's prefill work, each TP pair's prefill side (transfer times per length),
    and per TPOT target each TP's decode side and colocated shapes.  Kept for the last
    :data:`BASES` (scenario, workload) pairs, so a new latency target reuses them."""

    def __init__(self, sc: Scenario, workload: Workload):
        self.sc = sc  # not the workload: a 10-million-request one must not outlive its user
        self.shp = shape(workload, sc.model.max_context_tokens)
        self._work: dict[int, float] = {}
        self._pairs: dict[tuple[int, int], Prefill] = {}
        self._by_tpot: dict[tuple[float, int], tuple[Decode, tuple]] = {}

    def prefill_mean_s(self, tp: int) -> float:
        """The mean prefill work of a request at TP ``tp`` [s] (the lower bounds use it)."""
        if tp not in self._work:
            sc, shp = self.sc, self.shp
            pre = prefill_time_s(pair_scenario(sc, tp, tp), shp.moved)
            self._work[tp] = float(
                (shp.weights * prefill_work_s(sc.model, shp.moved, pre, tp)).sum()
            )
        return self._work[tp]

    def prefill(self, tp: int, tp_decode: int) -> Prefill:
        key = (tp, tp_decode)
        if key not in self._pairs:
            self._pairs[key] = prefill_side(self.sc, self.shp, tp, tp_decode)
        return self._pairs[key]

    def at_tpot(self, tpot_s: float, tp: int) -> tuple[Decode, tuple]:
        """(decode side, colocated shapes) at TP ``tp`` for the TPOT target ``tpot_s``."""
        key = (tpot_s, tp)
        if key not in self._by_tpot:
            if len(self._by_tpot) >= 64:  # bounded: a user trying many targets
                self._by_tpot.clear()
            self._by_tpot[key] = (decode_side(self.sc, self.shp, tpot_s, tp),
                                  tuple(colo.options(self.sc, self.shp, tpot_s, tp)))  # fmt: skip
        return self._by_tpot[key]


BASES = 4
# (scenario, id(workload)) -> (weak reference to the workload, basis), least recently used
# first: a workload is keyed by identity (its arrays are not compared), and the weak
# reference tells a live workload from a new one that reuses a dead one's id
_BASES: OrderedDict = OrderedDict()
_BASES_LOCK = threading.Lock()


def basis(sc: Scenario, workload: Workload) -> Basis:
    """The :class:`Basis` of ``workload`` on ``sc``, from the last :data:`BASES` made."""
    key = (sc, id(workload))
    with _BASES_LOCK:
        hit = _BASES.get(key)
        if hit is not None and hit[0]() is workload:
            _BASES.move_to_end(key)
            return hit[1]
    made = Basis(sc, workload)
    with _BASES_LOCK:
        _BASES[key] = (weakref.ref(workload), made)
        _BASES.move_to_end(key)
        while len(_BASES) > BASES:
            _BASES.popitem(last=False)
    return made


def kept_bases() -> int:
    """How many bases are kept now (at most :data:`BASES`)."""
    with _BASES_LOCK:
        return len(_BASES)


def clear_bases() -> None:
    """Forget every kept basis (benchmarks of a cold plan; tests)."""
    with _BASES_LOCK:
        _BASES.clear()


class Prepared:
    """Everything of a plan that does not depend on the rate (from a :class:`Basis`), built
    as it is asked for: a (prefill TP, decode TP) pair's transfer times only when its lower
    bound on GPUs can still beat the best pair found (``_best_pools``)."""

    def __init__(self, basis: Basis, slo: Slo, ptps, dtps, ctps):
        self.sc, self.shp, self.slo = basis.sc, basis.shp, slo
        self.basis = basis
        self.tps = (tuple(ptps), tuple(dtps), tuple(ctps))  # searched: prefill, decode, colocated
        self.decodes = {tp: basis.at_tpot(slo.tpot_s, tp)[0] for tp in dtps}
        self.prefill_mean_s = {tp: basis.prefill_mean_s(tp) for tp in ptps}
        self.options = tuple(o for tp in ctps for o in basis.at_tpot(slo.tpot_s, tp)[1])
        # the TTFT percentile without queues, of each pair and colocated shape (rate-free)
        self.floors: dict = {}
        # results of each pair and colocated shape by rate, (rates rising, results): counts
        # only grow with the rate, so a search starts from the result at the next rate below
        # and prunes with it
        self.last: dict = {}

    def pair(self, tp: int, tp_decode: int) -> tuple[Prefill, Decode]:
        return self.basis.prefill(tp, tp_decode), self.decodes[tp_decode]

    def floor(self, key, compute, *args) -> float:
        """``compute(*args)``, once per ``key`` (a TTFT floor: it does not depend on the rate)."""
        if key not in self.floors:
            self.floors[key] = compute(*args)
        return self.floors[key]

    def earlier(self, key, rps: float):
        """The result for ``key`` at the highest rate ≤ ``rps`` sized so far (None: none)."""
        hit = self.last.get(key)
        if hit is None:
            return None
        i = bisect.bisect_right(hit[0], rps)
        return hit[1][i - 1] if i else None

    def remember(self, key, rps: float, result) -> None:
        rates, results = self.last.setdefault(key, ([], []))
        i = bisect.bisect_left(rates, rps)
        if i < len(rates) and rates[i] == rps:
            results[i] = result
        else:
            rates.insert(i, rps)
            results.insert(i, result)

    def forget(self) -> None:
        """Drop the results kept by rate (the search is the same without them, only slower)."""
        self.last.clear()

    def bounds(self, rps: float) -> list[tuple[int, int, int]]:
        """(lower bound on GPUs, prefill TP, decode TP) of every pair, fewest first; a pair
        that needs more than ``MAX_SERVERS`` instances (or an infinite number: absurd inputs
        such as a 1e-300 GB/s link) is left out, and none left is an error."""
        out, most = [], 0.0
        for tp, mean_s in self.prefill_mean_s.items():
            for tpd, dec in self.decodes.items():
                slots = rps * self.shp.mean_output * dec.step_s / dec.batch
                busy = rps * mean_s  # prefill instances kept busy, at least
                if not max(slots, busy) <= MAX_SERVERS:  # also inf or nan
                    most = max(most, slots, busy, key=lambda x: math.inf if x != x else x)
                    continue
                slots, busy = math.ceil(slots - 1e-9), math.ceil(busy - 1e-9)
                bound = busy * tp + max(slots, 1) * tpd
                before = self.earlier((tp, tpd), rps)
                out.append((max(bound, before.gpus if before else 0), tp, tpd))
        if not out:
            raise too_many_instances(math.ceil(most) if math.isfinite(most) else math.inf)
        return sorted(out)


def tps(sc: Scenario, tp: int | None, gpu=None) -> tuple[int, ...]:
    if tp is None:
        return tp_candidates(sc, gpu)
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"TP must be a whole number >= 1 or auto, got {tp!r}")
    for g in sc.model.groups:
        shard_heads(g.kv_heads, tp)  # raises with the reason
    return (tp,)


def prepare_wide(sc: Scenario, workload: Workload, slo: Slo) -> Prepared | None:
    """A :class:`Prepared` over ``wide_tps`` for every side (None: no TP holds the weights)."""
    wide = wide_tps(sc)
    return Prepared(basis(sc, workload), slo, wide, wide, wide) if wide else None


def prepare(sc: Scenario, workload: Workload, slo: Slo, prefill_tp, decode_tp, colocated_tp):
    if colocated_tp is None and decode_tp is not None:
        colocated_tp = decode_tp  # compare like with like when the TP is set
    ptps, ctps = tps(sc, prefill_tp), tps(sc, colocated_tp)
    dtps = tps(sc, decode_tp, sc.decode_gpu)
    return Prepared(basis(sc, workload), slo, ptps, dtps, ctps)
