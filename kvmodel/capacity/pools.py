"""Disaggregated pools: what one prefill TP and one decode TP give, and the instances a rate needs.

Decode (per decode TP): the largest batch B* whose step (``timing.estimate_decode_step_s`` at
the slots' mean context) is within the TPOT target and whose KV fits in memory
(``memory.instance_memory``); by Little's law a rate λ keeps λ·E[output]·step(B*) requests
decoding, so ``decode instances = ⌈λ·E[output]·step(B*) ÷ B*⌉``.

Prefill (per prefill × decode TP): one of c instances (M/G/c) prefills each request.  Waiting
prompts share passes of up to :data:`PREFILL_TOKENS_PER_GPU` tokens per GPU of the instance,
so a request occupies an instance for its own compute plus its share of a pass's fixed cost
(``prefill_work_s``), and
its own pass takes its batch-1 prefill (``timing.estimate_prefill_s``).  Its KV then leaves
through that instance's NICs (an M/G/1 queue of the transfers, as in ``traffic.queue``, at
1/c of the rate), and the decode instance runs its first step at the design batch:

    TTFT = framework per-request cost + prefill wait + prefill + link wait + exposed transfer
           + first decode step

(the per-request cost is the framework's ``request_s + pd_request_s``, as in
``kvmodel.evaluation``; it happens before the GPU queues and does not load them)

at the percentile asked (``capacity_queue``).  The prefill pool is the smallest c whose
percentile meets the target.  The decode instances' NICs receive λ·E[transfer] seconds of
transfers per second; they are kept at most :data:`RECEIVER_UTILIZATION` busy (extra decode
instances, limit "link") and their own queueing is left out of TTFT: so the prefill count
never depends on the decode count, and every count grows with the rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from kvmodel.capacity.queue import (
    batch_grid,
    kept_points,
    kth_smallest,
    largest_within,
    moments,
    percentile,
    rank,
    remembered,
    smallest,
    sum_percentile,
)
from kvmodel.capacity.workload import Shape
from kvmodel.memory import instance_memory
from kvmodel.scenario import Scenario
from kvmodel.steps import TtftParts
from kvmodel.timing import (
    DECODE_MFU,
    PREFILL_FLOOR_S_PER_LAYER,
    estimate_decode_step_s,
    peak_flops,
    prefill_parts,
)
from kvmodel.topology import par_text
from kvmodel.wire import Volume, transfer

MAX_BATCH = 65_536  # decode batches searched up to here
FALLBACK_UTILIZATION = 0.8  # a pool that cannot meet its target is sized to this load
# Prompt tokens one prefill pass carries per GPU of the instance: the pass budget scales with
# the GPUs (a TP-32 or EP-32 instance is not held to one GPU's pass, where per-layer
# overheads would dominate: issue 21).  8,192 is vLLM's default max_num_batched_tokens of one
# engine on a GPU with >= 70 GiB (vllm/engine/arg_utils.py, get_batch_defaults, OpenAI
# server) and SGLang's default chunked-prefill-size on such GPUs, i.e. per GPU at TP 1; the
# SGLang wide-EP prefill of DeepSeek-V3 runs 16,384 tokens per device (LMSYS blog,
# 2025-05-05, "Deploying DeepSeek with PD Disaggregation and Large-scale Expert Parallelism
# on 96 H100 GPUs"), so 8,192 per GPU is the engines' default, not their tuned maximum.
PREFILL_TOKENS_PER_GPU = 8192
RECEIVER_UTILIZATION = 0.8  # decode NICs are kept this busy at most (their queue is not in TTFT)


@dataclass(frozen=True)
class Decode:
    """One decode instance at one TP (and EP: ``max(tp, ep)`` GPUs; module doc)."""

    tp: int
    batch: int  # B*: the largest batch within the TPOT target and memory (1 if none)
    step_s: float  # step at B*
    limit: str  # "tpot" or "memory"
    feasible: bool  # one request fits and its step meets the target
    max_concurrent: int
    batches: np.ndarray  # 1 … B*, for the step at a smaller batch
    steps_s: np.ndarray
    compute_bound: bool  # the GPU's FLOPs, not HBM, set the step at B*
    note: str = ""
    ep: int = 1

    @property
    def gpus(self) -> int:
        return max(self.tp, self.ep)


# Halfin–Whitt's square-root rule: memory for b + β·√b mean requests' KV leaves about a 1 %
# chance that an arriving request must wait for memory (module doc, ``memory_batch``)
MEMORY_HEADROOM_BETA = 2.33


def reserves_output(sc: Scenario) -> bool:
    """Whether the scenario's framework reserves a request's whole output in KV memory at
    admission (``FrameworkSpec.kv_admission``: TensorRT-LLM's ``GUARANTEED_NO_EVICT``)."""
    from kvmodel import catalog

    return catalog.get_framework(sc.framework).reserves_output


def memory_context(sc: Scenario, shp: Shape) -> tuple[int, float]:
    """(mean tokens, their mean square) a decode slot takes in KV memory, weighted by how long
    it holds them: what it holds as tokens arrive (paged, on demand), or prompt + output when
    the framework reserves the whole output (:func:`reserves_output`)."""
    if reserves_output(sc) and shp.reserve_context > 0:
        return shp.reserve_context, shp.reserve_context_sq
    return shp.decode_context, shp.decode_context_sq


def memory_batch(max_concurrent: int, shp: Shape, context: tuple[int, float] | None = None) -> int:
    """The largest mean batch ``b`` whose KV fits with room for its fluctuation:
    ``b + β·k·√b ≤ max_concurrent`` (requests of the slots' mean context), β =
    :data:`MEMORY_HEADROOM_BETA`, k² = E[h²] ÷ E[h]² of the tokens a slot holds.

    Requests decode for seconds, so a request that finds memory full waits a large part of a
    stay: by Little's law an instance holds a Poisson number of requests (M/G/∞, mean b), so
    its KV is b·E[h] ± √(b·E[h²]); square-root staffing (Halfin & Whitt 1981) gives the wait
    probability ≈ 1 ÷ (1 + β·Φ(β) ÷ φ(β)), 1.1 % at β = 2.33.  At least 1 when one request
    fits; ``max_concurrent`` itself when the shape has no second moment.  ``context``: (mean,
    mean square) of the tokens a slot takes (:func:`memory_context`; default: what it holds)."""
    n = int(max_concurrent)
    mean, sq = (shp.decode_context, shp.decode_context_sq) if context is None else context
    if n < 1 or sq <= 0:
        return n
    k = math.sqrt(max(sq / float(mean) ** 2, 1.0))
    zk = MEMORY_HEADROOM_BETA * k
    root = (-zk + math.sqrt(zk * zk + 4.0 * n)) / 2.0
    return max(1, min(n, math.floor(root * root + 1e-9)))


def decode_side(sc: Scenario, shp: Shape, tpot_s: float, tp: int, ep: int = 1, *,
                kept: dict | None = None) -> Decode:  # fmt: skip
    """The decode instance at ``tp`` (``ep``) for the target ``tpot_s`` (module doc).
    ``kept``: its steps at the batches asked before (``kept_points``: they do not depend on
    the target)."""
    model, gpu = sc.model, sc.decode_gpu  # the decode instances' GPU
    ctx = shp.decode_context
    dp = sc.data_parallel_attention or ep > tp  # EP runs attention data-parallel
    taken = memory_context(sc, shp)  # what a slot takes in memory (the framework's admission)
    mem = instance_memory(model, gpu, tp=tp, seq_len=taken[0], batch=1, kv_dtype=sc.kv_dtype,
                          kv_scale_group=sc.kv_scale_group, data_parallel_attention=dp,
                          ep=ep)  # fmt: skip
    room = memory_batch(mem.max_concurrent_requests, shp, taken)  # with the batch's fluctuation
    top = max(1, min(room, MAX_BATCH))
    fw = getattr(sc, "framework", None)
    kw = {} if fw is None else {"framework": fw}

    def estimate(b):
        return estimate_decode_step_s(model, ctx, b, gpu=gpu, tp=tp, kv_dtype=sc.kv_dtype,
                                      ep=ep, data_parallel_attention=dp, **kw)  # fmt: skip

    step = kept_points(estimate, None if kept is None else kept.setdefault("decode", {}))
    fit, step_fit = largest_within(step, tpot_s, top)
    note = ""
    at = par_text(tp, ep)
    if mem.max_concurrent_requests < 1:
        note = (f"a decode instance at {at} cannot hold one request of {taken[0]:,} tokens "
                "beside the weights")  # fmt: skip
    elif fit == 0:
        note = (f"one decode step at {at} takes {step_fit * 1e3:,.1f} ms even for one "
                f"request: over the TPOT target of {tpot_s * 1e3:,.1f} ms")  # fmt: skip
    b = max(fit, 1)
    grid = batch_grid(b)
    steps = step(grid)
    gpus = max(tp, ep)
    compute = (
        2.0 * model.params_active * b / (peak_flops(gpu, model.weight_dtype) * gpus * DECODE_MFU)
    )
    return Decode(
        ep=ep,
        tp=tp,
        batch=b,
        step_s=float(steps[-1]),
        limit="memory" if fit == top and top == room else "tpot",
        feasible=not note,
        max_concurrent=mem.max_concurrent_requests,
        batches=grid.astype(float),
        steps_s=steps,
        compute_bound=bool(compute >= float(steps[-1]) * 0.5),
        note=note,
    )


@dataclass(frozen=True)
class Prefill:
    """One prefill TP sending to one decode TP: per-length times and their moments."""

    tp: int
    tp_decode: int
    prefill_s: np.ndarray  # per distinct length of the shape
    exposed_s: np.ndarray
    whole_s: np.ndarray  # how long each request holds the link
    wire_bytes: np.ndarray
    mean_s: float
    cs2: float
    mean_x: float
    cx2: float
    mean_wire_bytes: float
    streams: int
    base: np.ndarray  # request cost + prefill + exposed transfer of each draw
    note: str = ""
    ep: int = 1
    ep_decode: int = 1
    request_s: float = 0.0  # the framework's per-request cost, P/D hop included

    @property
    def gpus(self) -> int:
        return max(self.tp, self.ep)


def pair_scenario(sc: Scenario, tp: int, tp_decode: int, ep: int = 1,
                  ep_decode: int = 1) -> Scenario:  # fmt: skip
    """``sc`` for one request at a time with these TPs (and EPs), prefill estimated per
    length; with EP, attention is data-parallel (each request's KV on one rank)."""
    # the transfer never reads the decode step: no estimate of it for every pair
    kw = {}
    if hasattr(sc, "ep_prefill"):
        kw = {"ep_prefill": ep, "ep_decode": ep_decode}
        if ep > tp or ep_decode > tp_decode:
            kw["attention_parallel"] = "dp"
    return replace(sc, tp_prefill=tp, tp_decode=tp_decode, batch=1, prefill_s=None, seq_len=1,
                   decode_step_estimated=False, **kw)  # fmt: skip


def _times(t) -> tuple[np.ndarray, ...]:
    return tuple(np.atleast_1d(np.asarray(x, dtype=float))
                 for x in (t.prefill_s, t.exposed_s, t.transfer_s, t.wire_bytes))  # fmt: skip


def pass_tokens(gpus: int) -> int:
    """Prompt tokens one prefill pass of an instance of ``gpus`` GPUs carries."""
    return PREFILL_TOKENS_PER_GPU * max(int(gpus), 1)


def prefill_work_s(model, moved: np.ndarray, prefill_s: np.ndarray, gpus: int = 1,
                   fixed_s=None) -> np.ndarray:  # fmt: skip
    """Time each request occupies a prefill instance of ``gpus`` GPUs [s]: its compute, plus
    its share of one pass's fixed cost when passes carry ``pass_tokens(gpus)`` prompt tokens
    (the estimator's own batch rule: a batch of prompts pays the per-layer floor once).
    ``fixed_s``: that fixed cost per length (``pass_fixed_s``: the floor and the weights
    read, which a pass of many prompts reads once); None, the per-layer floor alone."""
    fixed = PREFILL_FLOOR_S_PER_LAYER * model.layers if fixed_s is None else fixed_s
    share = np.minimum(moved / pass_tokens(gpus), 1.0)
    return prefill_s - fixed * (1.0 - share)


def pass_fixed_s(sc: Scenario, moved: np.ndarray, tp: int, ep: int = 1,
                 prefix=None) -> np.ndarray:  # fmt: skip
    """The part of each length's batch-1 prefill [s] that a pass of several prompts pays
    once: the kernel floor, the weights read and the engine's host floor, if any
    (``timing.prefill_parts``); at EP 32 the
    weights read is most of a short prompt's prefill (21 ms of 41 ms for DeepSeek-V3's 2,000
    tokens on H100 at EP 16), so without sharing it a wide instance is planned as if it
    prefilled one prompt at a time.  ``prefix``: each length's cached tokens (the shares shown
    of memory and compute depend on the attention they add)."""
    if sc.prefill_s is not None:
        return np.full(np.shape(moved), PREFILL_FLOOR_S_PER_LAYER * sc.model.layers)
    parts = prefill_parts(sc.model, moved, 1, gpu=sc.gpu, tp=tp, ep=ep, mfu=sc.mfu,
                          prefix=prefix, framework=sc.framework)  # fmt: skip
    # the host floor is the pass's too: a pass of many prompts waits it out once
    return np.asarray(parts.kernel_floor_s + parts.weights_read_s + parts.host_floor_s,
                      dtype=float)  # fmt: skip


def prefill_side(sc: Scenario, shp: Shape, tp: int, tp_decode: int, ep: int = 1,
                 ep_decode: int = 1) -> Prefill:  # fmt: skip
    s1 = pair_scenario(sc, tp, tp_decode, ep, ep_decode)
    pre, exposed, whole, wire = _times(transfer(s1, seq_len=shp.moved, prefix=shp.prefix))
    w = shp.weights
    gpus = max(tp, ep)
    fixed = pass_fixed_s(sc, shp.moved, tp, ep, shp.prefix)
    request = request_cost_s(sc, disaggregated=True)
    mean_s, cs2 = moments(prefill_work_s(sc.model, shp.moved, pre, gpus, fixed), w)
    mean_x, cx2 = moments(whole, w)
    mem = instance_memory(sc.model, sc.gpu, tp=tp, seq_len=shp.longest_prompt, batch=1,
                          kv_dtype=sc.kv_dtype, kv_scale_group=sc.kv_scale_group,
                          data_parallel_attention=ep > tp, ep=ep)  # fmt: skip
    note = ""
    if mem.max_concurrent_requests < 1:
        note = (f"a prefill instance at {par_text(tp, ep)} cannot hold the longest prompt "
                f"({shp.longest_prompt:,} tokens) beside the weights")  # fmt: skip
    return Prefill(
        ep=ep, ep_decode=ep_decode,
        tp=tp, tp_decode=tp_decode, prefill_s=pre, exposed_s=exposed, whole_s=whole,
        wire_bytes=wire, mean_s=mean_s, cs2=cs2, mean_x=mean_x, cx2=cx2,
        mean_wire_bytes=float((w * wire).sum()), streams=s1.streams,
        base=(request + pre + exposed)[shp.draws.idx], note=note, request_s=request,
    )  # fmt: skip


def request_cost_s(sc: Scenario, *, disaggregated: bool) -> float:
    """The scenario's framework's per-request cost [s] (API server, tokenizer, scheduling; the
    P/D proxy hop when ``disaggregated``): part of every TTFT, outside the GPU queues."""
    from kvmodel import catalog

    return catalog.get_framework(sc.framework).request_cost_s(disaggregated)


def relinked(pf: Prefill, s1: Scenario, shp: Shape, bandwidth: float, volume: Volume) -> Prefill:
    """``pf`` at another per-link ``bandwidth`` [bytes/s].  ``s1``: its ``pair_scenario``;
    ``volume``: ``Volume(s1, seq_len=shp.moved, prefix=shp.prefix)`` (bytes and prefill do
    not change)."""
    # only the link's bandwidth changed (Scenario.with_link: no whole check; the bandwidth
    # search makes ~20 of them)
    other = s1.with_link(replace(s1.link, bandwidth_bytes_per_s=bandwidth))
    _, exposed, whole, _ = _times(transfer(other, volume=volume))
    mean_x, cx2 = moments(whole, shp.weights)
    return replace(pf, exposed_s=exposed, whole_s=whole, mean_x=mean_x, cx2=cx2,
                   base=(pf.request_s + pf.prefill_s + exposed)[shp.draws.idx])  # fmt: skip


@dataclass(frozen=True)
class Pools:
    """The disaggregated deployment one (prefill TP, decode TP) pair needs at one rate."""

    prefill_tp: int
    decode_tp: int
    prefill_instances: int
    decode_instances: int
    prefill_limit: str
    decode_limit: str
    ttft_s: float
    tpot_s: float
    decode_batch: float  # mean requests per decode instance
    link_utilization: float
    meets_slo: bool
    notes: tuple[str, ...] = ()
    prefill_ep: int = 1
    decode_ep: int = 1

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_instances * max(self.prefill_tp, self.prefill_ep)

    @property
    def decode_gpus(self) -> int:
        return self.decode_instances * max(self.decode_tp, self.decode_ep)

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus


def lanes(pf: Prefill, gpus: int | None = None) -> int:
    """Transfers an instance of ``gpus`` GPUs (default: the prefill instance's) carries at
    once: its GPUs ÷ the NICs one transfer uses.  1 for a TP instance whose transfer uses
    every NIC; an EP instance with data-parallel attention sends each request's KV from one
    rank, so EP 32 carries 32 at once (each rank's NIC its own queue)."""
    g = pf.gpus if gpus is None else gpus
    return max(1, g // max(1, pf.streams))


def first_step_s(dec: Decode, shp: Shape, rps: float) -> float:
    """The first decode step of a request in the TTFT [s]: the step at the batch the whole
    traffic would keep on one decode instance (Little's law: ``mean_batch`` at one instance),
    at most the design batch B*, after the rest of the step in flight.  With one instance that
    is its own mean batch, so TTFT's first step is the step TPOT reports; with more instances
    it is a bound above each one's batch (docs/capacity.md).  A KV that lands while the
    instance is stepping joins at the next step (continuous batching admits between
    iterations), so it first waits out the step in flight: half a step on average for steps of
    about equal length, when one is in flight, which is when the instance holds any request
    (1 − e^(−batch) for Poisson-like occupancy); the replay's step-by-step decode pays the
    same wait (``kvmodel.replay.decode``).  It never falls as the rate rises, so neither does
    the prefill count (``size_pools``)."""
    if rps <= 0:
        return float(dec.steps_s[0])
    batch = mean_batch(dec.batches, dec.steps_s, rps * shp.mean_output, 1)
    step = float(np.interp(max(batch, 1.0), dec.batches, dec.steps_s))
    return step * (1.0 + 0.5 * (1.0 - math.exp(-batch)))


def ttft_function(pf: Prefill, dec: Decode, shp: Shape, rps: float, q: float,
                  seen: dict | None = None):  # fmt: skip
    """TTFT percentile [s] at c prefill instances (None: without the prefill and link waits).
    ``seen``: values of this same function known already (``remembered``; it does not depend
    on the TTFT target, so a search at another target finds them: ``Prepared.curve``)."""
    u = shp.draws.tail
    a_p, a_x = rps * pf.mean_s, rps * pf.mean_x
    made: list = []  # the unloaded TTFT of each draw, made on the first value not seen

    def ttft(cp: int | None) -> float:
        if not made:
            made.append(pf.base + first_step_s(dec, shp, rps))
        base = made[0]
        if cp is None:
            return percentile(base, q)
        return sum_percentile(base, q, ((u[0], cp, a_p, pf.mean_s, pf.cs2),
                                        (u[1], lanes(pf), a_x / cp, pf.mean_x,
                                         pf.cx2)))  # fmt: skip

    return remembered(ttft, seen)


def decode_receivers(transfer_load: float, lanes_: int = 1) -> int:
    """Fewest decode instances whose NICs receive ``transfer_load`` erlangs (transfers per
    second × seconds each) at most :data:`RECEIVER_UTILIZATION` busy, each instance taking
    ``lanes_`` transfers at once (``lanes``)."""
    return max(1, math.ceil(transfer_load / (RECEIVER_UTILIZATION * lanes_) - 1e-9))


def at_least(load: float) -> int:
    """Fewest servers that carry ``load`` erlangs with a stable queue (load < servers)."""
    return max(1, math.floor(load) + 1)


def ttft_parts(pf: Prefill, dec: Decode, shp: Shape, q: float, ttft_s: float,
               rps: float) -> TtftParts:  # fmt: skip
    """The planned TTFT percentile ``ttft_s`` [s] at rate ``rps`` in its parts: the request at
    the percentile of the unloaded TTFT (framework cost + prefill + exposed transfer + first
    step, one draw of the shape, so the parts are that request's own) and the queues' share on
    top (prefill and link waits: ``ttft_s`` less the unloaded percentile)."""
    first = first_step_s(dec, shp, rps)
    unloaded = pf.base + first
    k = stable_rank_index(unloaded, rank(len(unloaded), q))
    idx = shp.draws.idx[k]
    return TtftParts(request_s=pf.request_s, queue_s=max(0.0, ttft_s - float(unloaded[k])),
                     prefill_s=float(pf.prefill_s[idx]), transfer_s=float(pf.exposed_s[idx]),
                     first_step_s=first)  # fmt: skip


def stable_rank_index(values: np.ndarray, r: int) -> int:
    """``np.argsort(values, kind="stable")[r]``: the index of the ``r``-th smallest value,
    the first in index order among equal ones, without sorting (a plan asks it once per rate:
    a sort of the 8,192 draws was ~0.5 ms of the plan's ~1.5 ms)."""
    v = kth_smallest(values, r)
    if v != v:  # NaN: numpy's order among NaNs is the sort's own
        return int(np.argsort(values, kind="stable")[r])
    below = int(np.count_nonzero(values < v))
    return int(np.flatnonzero(values == v)[r - below])


def ttft_floor(pf: Prefill, dec: Decode, q: float, first_s: float | None = None) -> float:
    """The TTFT percentile [s] without queues (prefill + transfer + first step ``first_s``,
    default B*'s step: the floor at any rate, an upper bound of each rate's own): no number
    of instances gets below it."""
    return percentile(pf.base + (dec.step_s if first_s is None else first_s), q)


def size_pools(pf: Prefill, dec: Decode, shp: Shape, rps: float, ttft_slo_s: float,
               q: float, *, start: int = 1, floor_s: float | None = None,
               seen: dict | None = None) -> Pools:  # fmt: skip
    """Instances of each pool for rate ``rps`` (module doc); never loops without bound.

    The decode count depends on the rate, the TPOT target and the link only, the prefill count
    on the rate, the TTFT target and the link only: more traffic, a tighter target or a slower
    link never lowers either.  ``start``: prefill instances a lower rate needed (a sweep
    starts its search there; the answer is the same).  ``floor_s``: ``ttft_floor`` when the
    caller has it (it does not depend on the rate).  ``seen``: ``ttft_function``'s."""
    notes = [n for n in (pf.note, dec.note) if n]
    a_p, a_x = rps * pf.mean_s, rps * pf.mean_x
    slots = max(1, math.ceil(rps * shp.mean_output * dec.step_s / dec.batch - 1e-9))
    # a decode instance receives as many transfers at once as its NICs hold streams
    receivers = decode_receivers(a_x, lanes(pf, dec.gpus))
    cd = max(slots, receivers)
    decode_limit = dec.limit if slots >= receivers else "link"
    if not dec.feasible:
        decode_limit = "memory" if dec.max_concurrent < 1 else "tpot"
    cp_compute, cp_link = at_least(a_p), at_least(a_x / lanes(pf))
    cp_lo = max(cp_compute, cp_link)
    ttft = ttft_function(pf, dec, shp, rps, q, seen)
    meets = dec.feasible and not pf.note
    floor_s = ttft_floor(pf, dec, q) if floor_s is None else floor_s
    if floor_s > ttft_slo_s:  # B*'s floor misses: this rate's own first step may not
        floor_s = ttft_floor(pf, dec, q, first_step_s(dec, shp, rps))
    # ``start``: the count a lower rate needed (a sweep); no fewer can meet the target now
    first = max(cp_lo, start)
    cp = None if floor_s > ttft_slo_s else smallest(lambda c: ttft(c) <= ttft_slo_s, first)
    if cp is None:
        cp = max(cp_lo, math.ceil(a_p / FALLBACK_UTILIZATION - 1e-9))
        prefill_limit, meets = "ttft", False
        notes.append(
            f"no number of prefill instances meets the TTFT target: prefill, transfer and the "
            f"first decode step alone take {floor_s * 1e3:,.0f} ms at p{q:g}"
        )
    elif cp > cp_lo:
        prefill_limit = "ttft"
    else:
        prefill_limit = "compute" if cp_compute >= cp_link else "link"
    if pf.note:
        prefill_limit = "memory"  # the longest prompt does not fit beside the weights
    batch = mean_batch(dec.batches, dec.steps_s, rps * shp.mean_output, cd)
    ttft_s = ttft(cp)
    return Pools(
        prefill_ep=pf.ep,
        decode_ep=dec.ep,
        prefill_tp=pf.tp,
        decode_tp=dec.tp,
        prefill_instances=cp,
        decode_instances=cd,
        prefill_limit=prefill_limit,
        decode_limit=decode_limit,
        ttft_s=ttft_s,
        tpot_s=float(np.interp(max(batch, 1.0), dec.batches, dec.steps_s)),
        decode_batch=batch,
        link_utilization=a_x / min(cp * lanes(pf), cd * lanes(pf, dec.gpus)),
        meets_slo=meets and ttft_s <= ttft_slo_s,
        notes=tuple(notes),
    )


def mean_batch(batches: np.ndarray, steps_s: np.ndarray, tokens_per_s: float,
               instances: int) -> float:  # fmt: skip
    """Mean batch b of each of ``instances``, the fixed point of b = k·step(b), k = tokens per
    second ÷ instances (Little's law), ``steps_s`` the step at each of ``batches`` (rising):
    where b − k·step(b) (increasing: a step grows by far less than 1/k per request) crosses 0,
    interpolated; the last batch when it never does."""
    k = tokens_per_s / instances
    gap = batches - k * steps_s
    above = gap >= 0
    j = int(above.argmax())  # the first crossing (a plan asks ~7 of these a rate)
    if not above[j]:
        return float(batches[-1])
    if j == 0:
        return float(min(k * steps_s[0], batches[0]))  # under one request on average
    g0, g1 = float(gap[j - 1]), float(gap[j])
    b0, b1 = float(batches[j - 1]), float(batches[j])
    return b0 + (b1 - b0) * (-g0) / (g1 - g0)
