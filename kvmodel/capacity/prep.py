"""The rate-free part of a capacity plan: which TPs are searched (:func:`tp_candidates`), what
plans of one workload on one scenario share whatever the targets (:class:`Basis`, kept for the
last few), and what one set of targets adds before any rate is sized (:class:`Prepared`)."""

from __future__ import annotations

import bisect
import itertools
import math
import weakref

from kvmodel.capacity import colocated as colo
from kvmodel.capacity.pools import (
    Decode,
    Prefill,
    decode_side,
    pair_scenario,
    pass_fixed_s,
    prefill_side,
    prefill_work_s,
    relinked,
)
from kvmodel.capacity.queue import MAX_SERVERS, too_many_instances
from kvmodel.capacity.workload import Slo, Workload, shape
from kvmodel.kept import Kept
from kvmodel.memory import USABLE_FRACTION, weights_bytes_per_gpu
from kvmodel.scenario import Scenario
from kvmodel.size import shard_heads, splits_heads
from kvmodel.wire import Volume, prefill_time_s

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
AUTO_TPS = 4  # the smallest TPs that hold the weights are searched
# EP sizes searched for a MoE model (data-parallel attention, attention TP 1): whole nodes of
# 8 up to the published wide-EP deployments, 72 and 144 ranks (SGLang's 9-node decode, LMSYS
# 2025-05-05; DeepSeek's 18-node decode, open-infra-index day 6) and 320 (DeepSeek-V3's
# technical report: 256 routed experts plus redundant ones)
EP_CHOICES = (8, 16, 32, 64, 72, 128, 144, 256, 320)
EP_REDUNDANCY = 1.25  # at most a quarter more expert slots than experts (DeepSeek: 320 / 256)


def ep_candidates(sc: Scenario, gpu=None) -> tuple[int, ...]:
    """EP sizes of :data:`EP_CHOICES` searched for a MoE model (none for a dense one): those
    at most :data:`EP_REDUNDANCY` × its routed experts whose weights per GPU (routed experts
    ÷ EP, the rest whole: attention TP 1) leave memory for KV."""
    m, gpu = sc.model, gpu or sc.gpu
    experts = getattr(m, "experts", 0) or 0
    if experts < 2 or not hasattr(sc, "ep_prefill"):
        return ()
    from kvmodel.scenario import check_expert_parallel

    out = []
    for ep in EP_CHOICES:
        if ep > experts * EP_REDUNDANCY:
            break
        try:
            check_expert_parallel(m, ep, 1)
        except ValueError:
            continue
        if weights_bytes_per_gpu(m, 1, ep) < gpu.memory_bytes * USABLE_FRACTION:
            out.append(ep)
    return tuple(out)


def gpus_of(par: tuple[int, int]) -> int:
    """GPUs of one instance at parallelism ``par`` = (TP, EP)."""
    return max(par)


def tp_candidates(sc: Scenario, gpu=None) -> tuple[int, ...]:
    """TPs searched when a TP is ``auto``: the :data:`AUTO_TPS` smallest of :data:`TP_CHOICES`
    that split every KV-head group and leave memory beside the weights, within one node
    (``gpus_per_node``) when any fits there: tensor parallelism across nodes is the last
    resort of a model too large for one.  ``gpu``: the GPU of the pool (``sc.gpu`` by
    default; the decode pool's is ``sc.decode_gpu``)."""
    gpu = gpu or sc.gpu
    out = []
    for tp in TP_CHOICES:
        if not splits_heads(sc.model, tp):
            continue
        if out and tp > gpu.gpus_per_node:
            break
        if holds_weights(sc.model, gpu, tp):
            out.append(tp)
        if len(out) == AUTO_TPS:
            break
    if not out and not ep_candidates(sc, gpu):
        raise ValueError(
            f"the weights of {sc.model.name} do not fit on {gpu.name} at any TP up to "
            f"{TP_CHOICES[-1]}"
        )
    return tuple(out)


def par_candidates(sc: Scenario, gpu=None) -> tuple[tuple[int, int], ...]:
    """(TP, EP) pairs searched when the parallelism is ``auto``: the TPs of
    :func:`tp_candidates` (EP 1) and, for a MoE model, the EPs of :func:`ep_candidates` with
    data-parallel attention (TP 1)."""
    tps_ = tuple((tp, 1) for tp in tp_candidates(sc, gpu))
    return tps_ + tuple((1, ep) for ep in ep_candidates(sc, gpu))


def wide_tps(sc: Scenario) -> tuple[int, ...]:
    """Every TP of :data:`TP_CHOICES` that splits every KV-head group and leaves memory beside
    the weights, across nodes too: where the search for the nearest parallelism that meets
    the targets looks (``search.nearest_pools``) when the plan's own does not."""
    m = sc.model
    return tuple(tp for tp in TP_CHOICES if splits_heads(m, tp) and holds_weights(m, sc.gpu, tp))


def beyond_node_pars(sc: Scenario, gpu=None) -> tuple[tuple[int, int], ...]:
    """The last resort of a searched side (``tp_candidates`` stops at one node when a TP fits
    there): each TP of :data:`TP_CHOICES` above the node's GPUs that it left out, splits every
    KV-head group and holds the weights, as (TP, EP 1)."""
    gpu = gpu or sc.gpu
    own = set(tp_candidates(sc, gpu))
    return tuple((tp, 1) for tp in TP_CHOICES
                 if tp > gpu.gpus_per_node and tp not in own and splits_heads(sc.model, tp)
                 and holds_weights(sc.model, gpu, tp))  # fmt: skip


def prepare_beyond(own: Prepared, searched: tuple[bool, bool, bool]) -> Prepared | None:
    """``own``'s parallelisms and, on each side ``searched`` (prefill, decode, colocated), the
    TPs across nodes (:func:`beyond_node_pars`): where a searched plan looks when none of its
    own meets the targets (None: no side gains one)."""
    sc = own.sc
    sides, grew = [], False
    for on, pars_, gpu in zip(searched, own.tps, (sc.gpu, sc.decode_gpu, sc.gpu), strict=True):
        extra = tuple(p for p in beyond_node_pars(sc, gpu) if p not in pars_) if on else ()
        grew = grew or bool(extra)
        sides.append(tuple(pars_) + extra)
    return Prepared(own.basis, own.slo, *sides) if grew else None


def holds_weights(model, gpu, tp: int) -> bool:
    """The weights per GPU at ``tp`` leave memory beside them (``USABLE_FRACTION``)."""
    return weights_bytes_per_gpu(model, tp) < gpu.memory_bytes * USABLE_FRACTION


class Basis:
    """What plans of one workload on one scenario share whatever the targets and the rate:
    the shape, each TP's prefill work, each TP pair's prefill side (transfer times per length),
    and per TPOT target each TP's decode side and colocated shapes.  Kept for the last
    :data:`BASES` (scenario, workload) pairs, so a new latency target reuses them."""

    def __init__(self, sc: Scenario, workload: Workload):
        self.sc = sc  # not the workload: a 10-million-request one must not outlive its user
        self.shp = shape(workload, sc.model.max_context_tokens)
        self._work: dict[tuple, float] = {}  # keys: (TP, EP) of a side
        self._pairs: dict[tuple, Prefill] = {}
        self._by_tpot: dict[tuple, tuple[Decode, tuple]] = {}
        self._steps: dict[tuple, dict] = {}  # (TP, EP) -> the steps by batch (at_tpot)
        # decode sides and colocated shapes by their content, each with a number: two TPOT
        # targets that make the same one (the same batch B*) share what is kept below
        self._variants: dict[tuple, tuple] = {}  # content -> (the object, its number)
        self._numbers: dict[int, int] = {}  # id(object) -> its number
        self._count = itertools.count()
        # (TTFT percentile, decode side or shape number, pair or colocated shape[, rate]) ->
        # its TTFT floor, or its TTFT percentile by instances: neither depends on the TTFT
        # target, so a new target searches the same curves (bench/README.md, Session 15)
        self._floors: dict[tuple, float] = {}
        self._curves: dict[tuple, dict] = {}
        self._sized: dict[tuple, list] = {}  # (percentile, number, candidate, rate) -> sizes
        self._kept: dict[tuple, object] = {}  # results of sizes found (Prepared.kept)
        self._volumes: dict[tuple, tuple] = {}  # pair -> (its pair scenario, its Volume)
        self._relinked = Kept(RELINKED)  # (pair, bandwidth) -> its prefill side there

    def floor(self, key: tuple, compute, *args) -> float:
        """``compute(*args)``, once per ``key`` (``Prepared.floor``)."""
        hit = self._floors.get(key)
        if hit is None:
            if len(self._floors) >= CURVES:
                self._floors.clear()
            hit = self._floors[key] = compute(*args)
        return hit

    def sizes(self, key: tuple) -> list:
        """The sizes found of ``key`` at TTFT targets tried before, (target, size), the
        latest last (``Prepared.sized``)."""
        hit = self._sized.get(key)
        if hit is None:
            if len(self._sized) >= SIZED:
                self._sized.clear()
            hit = self._sized[key] = []
        return hit

    def kept(self, key: tuple, compute):
        """``compute()``, once per ``key`` (``Prepared.kept``)."""
        hit = self._kept.get(key)
        if hit is None:
            if len(self._kept) >= KEPT:
                self._kept.clear()
            hit = self._kept[key] = compute()
        return hit

    def curve(self, key: tuple) -> dict:
        """The TTFT percentiles known of ``key`` by instances (``Prepared.curve``)."""
        hit = self._curves.get(key)
        if hit is None:
            if len(self._curves) >= CURVES:  # bounded: a user trying many targets and rates
                self._curves.clear()
            hit = self._curves[key] = {}
        return hit

    def prefill_mean_s(self, par: tuple[int, int]) -> float:
        """The mean prefill work of a request at ``par`` = (TP, EP) [s] (the lower bounds)."""
        if par not in self._work:
            sc, shp = self.sc, self.shp
            tp, ep = par
            pre = prefill_time_s(pair_scenario(sc, tp, tp, ep, ep), shp.moved, prefix=shp.prefix)
            fixed = pass_fixed_s(sc, shp.moved, tp, ep, shp.prefix)
            work = prefill_work_s(sc.model, shp.moved, pre, gpus_of(par), fixed)
            self._work[par] = float((shp.weights * work).sum())
        return self._work[par]

    def prefill(self, par: tuple[int, int], par_decode: tuple[int, int]) -> Prefill:
        key = (par, par_decode)
        if key not in self._pairs:
            self._pairs[key] = prefill_side(self.sc, self.shp, par[0], par_decode[0], par[1],
                                            par_decode[1])  # fmt: skip
        return self._pairs[key]

    def relinked(self, par: tuple[int, int], par_decode: tuple[int, int], bw: float) -> Prefill:
        """The pair's prefill side at another per-link bandwidth ``bw`` [bytes/s]
        (``pools.relinked``), kept for the last :data:`RELINKED` pairs and bandwidths: the
        NIC-bandwidth search tries the same bandwidths first whatever the rate and targets
        (a bisection on a fixed grid), and each try is a transfer over every length."""
        key = (par, par_decode, bw)
        hit = self._relinked.get(key)
        if hit is None:
            pair = (par, par_decode)
            if pair not in self._volumes:
                s1 = pair_scenario(self.sc, par[0], par_decode[0], par[1], par_decode[1])
                self._volumes[pair] = (s1, Volume(s1, seq_len=self.shp.moved,
                                                  prefix=self.shp.prefix))  # fmt: skip
            s1, volume = self._volumes[pair]
            hit = relinked(self.prefill(par, par_decode), s1, self.shp, bw, volume)
            self._relinked.put(key, hit)
        return hit

    def at_tpot(self, tpot_s: float, par: tuple[int, int]) -> tuple[Decode, tuple]:
        """(decode side, colocated shapes) at ``par`` = (TP, EP) for the target ``tpot_s``."""
        key = (tpot_s, par)
        if key not in self._by_tpot:
            if len(self._by_tpot) >= 64:  # bounded: a user trying many targets
                self._by_tpot.clear()
            tp, ep = par
            kept = self._steps.setdefault(par, {})  # steps by batch: the same at any target
            opts = tuple(
                self._one(o, _option_content(o))
                for o in colo.options(self.sc, self.shp, tpot_s, tp, ep, kept=kept)
            )
            dec = decode_side(self.sc, self.shp, tpot_s, tp, ep, kept=kept)
            self._by_tpot[key] = (self._one(dec, _decode_content(dec)), opts)  # fmt: skip
        return self._by_tpot[key]

    def _one(self, made, content: tuple):
        """``made``, or the one made before with the same content (at another TPOT target)."""
        hit = self._variants.get(content)
        if hit is None:
            if len(self._variants) >= VARIANTS:  # bounded: a user trying many targets
                self._variants.clear()  # (the numbers go on: none is ever given twice)
                self._numbers.clear()
                self._by_tpot.clear()  # what it holds is made, and numbered, again
            hit = self._variants[content] = (made, next(self._count))
            self._numbers[id(made)] = hit[1]
        return hit[0]

    def number(self, made) -> int:
        """The number of a decode side or colocated shape of ``at_tpot`` (``_one``; one
        forgotten since, past the bound, is numbered again)."""
        hit = self._numbers.get(id(made))
        if hit is not None:
            return hit
        content = _decode_content(made) if isinstance(made, Decode) else _option_content(made)
        self._one(made, content)
        return self._variants[content][1]


BASES = 4
VARIANTS = 1024  # decode sides and colocated shapes kept by content per basis
CURVES = 20_000  # TTFT curves (a few values each) and floors kept per basis, then forgotten
RELINKED = 32  # prefill sides at another bandwidth kept per basis (~0.1 MB each)
SIZES = 4  # sizes kept per candidate and rate, of the latest TTFT targets
SIZED = 4096  # candidates and rates whose sizes are kept per basis (a few KB each, at most)
KEPT = 2048  # sweep plans (~2 KB) and sweep frames (~10 KB) kept per basis


def _decode_content(d: Decode) -> tuple:
    """Everything a decode side holds (what its pools, TTFT and TPOT are made of)."""
    return ("decode", d.tp, d.ep, d.batch, d.step_s, d.limit, d.feasible, d.max_concurrent,
            d.compute_bound, d.note, d.batches.tobytes(), d.steps_s.tobytes())  # fmt: skip


def _option_content(o) -> tuple:
    """Everything a colocated shape holds (what its sizes are made of)."""
    return ("colocated", o.tp, o.ep, o.chunk, o.batch, o.iteration_s, o.slot_limit,
            o.mean_s, o.cs2, o.feasible, o.latency_s.tobytes(), o.batches.tobytes(),
            o.steps_s.tobytes())  # fmt: skip


# (scenario, id(workload)) -> (weak reference to the workload, basis), least recently used
# first: a workload is keyed by identity (its arrays are not compared), and the weak
# reference tells a live workload from a new one that reuses a dead one's id
_BASES = Kept(BASES)


def basis(sc: Scenario, workload: Workload) -> Basis:
    """The :class:`Basis` of ``workload`` on ``sc``, from the last :data:`BASES` made."""
    key = (sc, id(workload))
    hit = _BASES.get(key)
    if hit is not None and hit[0]() is workload:
        return hit[1]
    made = Basis(sc, workload)
    _BASES.put(key, (weakref.ref(workload), made))
    return made


def kept_bases() -> int:
    """How many bases are kept now (at most :data:`BASES`)."""
    return len(_BASES)


def clear_bases() -> None:
    """Forget every kept basis (benchmarks of a cold plan; tests)."""
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
        # the number of each decode side and shape (Basis._one): what the kept values of a
        # pair or shape depend on beyond the basis, as the TPOT target makes it
        self.numbers = {dpar: basis.number(d) for dpar, d in self.decodes.items()}
        self.numbers.update({("colocated", o.tp, o.ep, o.chunk): basis.number(o)
                             for o in self.options})  # fmt: skip
        # results of each pair and colocated shape by rate, (rates rising, results): counts
        # only grow with the rate, so a search starts from the result at the next rate below
        # and prunes with it
        self.last: dict = {}

    def pair(self, par, par_decode) -> tuple[Prefill, Decode]:
        """The prefill side of (prefill, decode) parallelisms, each (TP, EP), and the decode."""
        return self.basis.prefill(par, par_decode), self.decodes[par_decode]

    def _scope(self, key) -> tuple:
        """What the values kept of ``key`` depend on beyond the basis and itself: the TTFT
        percentile, and the decode side of a pair (``(prefill, decode)``, ``(pair, rate)``
        or ``("bandwidth", prefill, decode, bandwidth)``) or the colocated shape
        (``("colocated", TP, EP, chunk)``) as this TPOT target makes it, by its number:
        another target that makes the same one shares them."""
        head = key[0]
        if head == "colocated":
            return (self.slo.ttft_percentile, self.numbers[key])
        decode = key[2] if head == "bandwidth" else key[1] if _is_par(key[1]) else key[0][1]
        return (self.slo.ttft_percentile, self.numbers[decode])

    def floor(self, key, compute, *args) -> float:
        """``compute(*args)``, once per ``key`` (a pair or colocated shape, by value, ``_scope``):
        the TTFT percentile without queues, which depends on neither the rate nor the TTFT
        target (kept by the basis for every target)."""
        return self.basis.floor((*self._scope(key), key), compute, *args)

    def curve(self, key, rps: float) -> dict:
        """The TTFT percentiles by instances known of ``key`` (a pair or colocated shape, by
        value, ``_scope``) at ``rps``: the searches' values, which do not depend on the TTFT
        target (a new target looks them up; the search finds the same counts, from the same
        numbers)."""
        return self.basis.curve((*self._scope(key), key, rps))

    def decode_number(self, par_decode) -> int:
        """The number of this TPOT target's decode side at ``par_decode`` (``Basis._one``)."""
        return self.numbers[par_decode]

    def relinked(self, par, par_decode, bw: float) -> Prefill:
        """The pair's prefill side at per-link bandwidth ``bw`` (``Basis.relinked``)."""
        return self.basis.relinked(par, par_decode, bw)

    def kept(self, key: tuple, compute):
        """``compute()``, once per ``key`` at this TTFT percentile and TPs searched, for every
        target (``key`` must hold all else the result depends on: the decode side's number)."""
        return self.basis.kept((self.slo.ttft_percentile, self.tps, *key), compute)

    def sized(self, key, rps: float, compute, holds):
        """``compute()``: the size of ``key`` (a pair or colocated shape, by value) at ``rps``
        at this TTFT target, or one found at another target (these TPOT target and
        percentile) when ``holds(size, target then)`` says the search gives it here too
        (``retarget``: a new TTFT target re-sizes only what it changes)."""
        slo = self.slo
        found = self.basis.sizes((*self._scope(key), key, rps))
        for was, size in reversed(found):
            if holds(size, was):
                return size
        size = compute()
        found.append((slo.ttft_s, size))
        del found[:-SIZES]  # the latest few targets
        return size

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

    def bounds(self, rps: float) -> list[tuple]:
        """(lower bound on GPUs, prefill (TP, EP), decode (TP, EP)) of every pair, fewest
        first; a pair that needs more than ``MAX_SERVERS`` instances (or an infinite number:
        absurd inputs such as a 1e-300 GB/s link) is left out, and none left is an error."""
        out, most = [], 0.0
        for par, mean_s in self.prefill_mean_s.items():
            for dpar, dec in self.decodes.items():
                slots = rps * self.shp.mean_output * dec.step_s / dec.batch
                busy = rps * mean_s  # prefill instances kept busy, at least
                if not max(slots, busy) <= MAX_SERVERS:  # also inf or nan
                    most = max(most, slots, busy, key=lambda x: math.inf if x != x else x)
                    continue
                slots, busy = math.ceil(slots - 1e-9), math.ceil(busy - 1e-9)
                bound = busy * gpus_of(par) + max(slots, 1) * gpus_of(dpar)
                before = self.earlier((par, dpar), rps)
                out.append((max(bound, before.gpus if before else 0), par, dpar))
        if not out:
            raise too_many_instances(math.ceil(most) if math.isfinite(most) else math.inf)
        return sorted(out)


def _is_par(x) -> bool:
    """Whether ``x`` is a parallelism (TP, EP)."""
    return isinstance(x, tuple) and len(x) == 2 and all(isinstance(v, int) for v in x)


def tps(sc: Scenario, tp: int | None, gpu=None) -> tuple[int, ...]:
    if tp is None:
        return tp_candidates(sc, gpu)
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"TP must be a whole number >= 1 or auto, got {tp!r}")
    for g in sc.model.groups:
        shard_heads(g.kv_heads, tp)  # raises with the reason
    return (tp,)


def pars(sc: Scenario, tp: int | None, ep: int | None, gpu=None) -> tuple[tuple[int, int], ...]:
    """The (TP, EP) pairs one side searches: both None, every candidate (``par_candidates``);
    an EP given, that EP at the TP given (1 when None: data-parallel attention); a TP alone,
    that TP without EP."""
    if ep is None or ep == 1:
        if tp is None and ep is None:
            return par_candidates(sc, gpu)
        return tuple((t, 1) for t in tps(sc, tp, gpu))
    from kvmodel.scenario import check_expert_parallel

    tp = 1 if tp is None else tps(sc, tp)[0]
    check_expert_parallel(sc.model, ep, tp, "EP")  # raises with the reason
    return ((tp, ep),)


def prepare_wide(sc: Scenario, workload: Workload, slo: Slo) -> Prepared | None:
    """A :class:`Prepared` over ``wide_tps`` and ``ep_candidates`` for every side (None:
    nothing holds the weights)."""
    wide = tuple((tp, 1) for tp in wide_tps(sc)) + tuple((1, e) for e in ep_candidates(sc))
    return Prepared(basis(sc, workload), slo, wide, wide, wide) if wide else None


def prepare(sc: Scenario, workload: Workload, slo: Slo, prefill_tp, decode_tp, colocated_tp,
            prefill_ep=None, decode_ep=None, colocated_ep=None):  # fmt: skip
    if colocated_tp is None and colocated_ep is None and (decode_tp, decode_ep) != (None, None):
        colocated_tp, colocated_ep = decode_tp, decode_ep  # like with like when it is set
    ptps = pars(sc, prefill_tp, prefill_ep)
    dtps = pars(sc, decode_tp, decode_ep, sc.decode_gpu)
    ctps = pars(sc, colocated_tp, colocated_ep)
    return Prepared(basis(sc, workload), slo, ptps, dtps, ctps)
