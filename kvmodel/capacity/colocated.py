"""Colocated baseline: the same GPUs running prefill and decode together, chunked (Sarathi-style).

Every iteration of an instance carries its decode batch B and up to C prompt tokens (the chunk);
prompts are cut into chunks, so no iteration is longer than one with a full chunk:

    iteration(B, C) = timing.decode_step_parts(B, chunk_tokens=C) summed

the decode step of ``kvmodel.timing`` with the chunk's FLOPs added to its compute side (a chunk
rides on the memory-bound decode read: Sarathi-Serve's point) and its activations to the
all-reduce.  FLOPs per prompt token are the workload's mean (attention to earlier chunks
included, as in a whole prefill).  The interference both ways is in it: the chunk lengthens
every decode step, and the decode batch caps the chunk that fits in the TPOT target.

Sizing, per TP and chunk C: B = the largest batch with iteration(B, C) ≤ TPOT that fits in
memory beside one prefilling request; the instance prefills C tokens per iteration, so a prompt
of m tokens occupies it for m ÷ C iterations (several short prompts share a chunk) and waits for
⌈m ÷ C⌉ iterations; instances = max(λ·E[output]·iteration ÷ B, the fewest whose M/G/c prefill
queue meets the TTFT percentile).  TTFT = the framework's per-request cost (``request_s`` of
data/frameworks.csv) + prefill wait + ⌈m ÷ C⌉ iterations: the last chunk's iteration emits the
first token.  The chunk (and TP, when auto) that needs fewest GPUs wins.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from kvmodel.capacity.pools import (
    FALLBACK_UTILIZATION,
    MAX_BATCH,
    at_least,
    mean_batch,
    memory_batch,
    memory_context,
    request_cost_s,
)
from kvmodel.capacity.queue import (
    MAX_SERVERS,
    batch_grid,
    kept_points,
    largest_within,
    moments,
    percentile,
    remembered,
    smallest,
    sum_percentile,
)
from kvmodel.capacity.workload import Shape
from kvmodel.inputs import DEFAULT_MFU
from kvmodel.memory import instance_memory
from kvmodel.scenario import Scenario
from kvmodel.timing import decode_step_parts, prefill_flops

CHUNKS = (256, 512, 1024, 2048, 4096, 8192)  # prompt tokens per iteration tried


def mixed_step_s(sc: Scenario, context: int, batch, chunk: int, flops_per_token: float,
                 tp: int, ep: int = 1) -> np.ndarray:  # fmt: skip
    """One iteration of ``batch`` decodes at ``context`` tokens plus a ``chunk``-token prefill
    piece [s] (module doc).  ``chunk=0`` is ``timing.estimate_decode_step_s``."""
    return decode_step_parts(
        sc.model, context, batch, gpu=sc.gpu, tp=tp, ep=ep, kv_dtype=sc.kv_dtype,
        data_parallel_attention=sc.data_parallel_attention or ep > tp,
        framework=getattr(sc, "framework", "vllm"), chunk_tokens=chunk,
        chunk_flops_per_token=flops_per_token * DEFAULT_MFU / getattr(sc, "mfu", DEFAULT_MFU),
    ).total_s  # fmt: skip


@dataclass(frozen=True)
class Option:
    """One colocated instance shape: TP (and EP), chunk, the batch that fits, its iteration."""

    tp: int
    chunk: int
    batch: int
    iteration_s: float
    slot_limit: str  # "tpot" or "memory": what caps the batch
    latency_s: np.ndarray  # the framework's request cost + ⌈m ÷ C⌉ iterations, per draw
    mean_s: float  # prompt service (m ÷ C iterations): mean and cs²
    cs2: float
    feasible: bool
    batches: np.ndarray
    steps_s: np.ndarray
    ep: int = 1

    @property
    def gpus(self) -> int:
        return max(self.tp, self.ep)


def options(sc: Scenario, shp: Shape, tpot_s: float, tp: int, ep: int = 1, *,
            kept: dict | None = None) -> list[Option]:  # fmt: skip
    """The colocated shapes at TP ``tp`` (EP ``ep``), one per chunk that leaves room for a
    decode batch.  ``kept``: each chunk's iterations at the batches asked before
    (``kept_points``: they do not depend on the target)."""
    model = sc.model
    ctx = shp.decode_context
    taken = memory_context(sc, shp)  # what a slot takes in memory (the framework's admission)
    mem = instance_memory(model, sc.gpu, tp=tp, seq_len=taken[0], batch=1, kv_dtype=sc.kv_dtype,
                          kv_scale_group=sc.kv_scale_group,
                          data_parallel_attention=sc.data_parallel_attention or ep > tp,
                          ep=ep)  # fmt: skip
    # one request is prefilling; the decode slots keep room for their fluctuation
    slots = memory_batch(mem.max_concurrent_requests - 1, shp, taken)
    if slots < 1:
        return []
    top = min(slots, MAX_BATCH)
    flops = prefill_flops(model, shp.moved, prefix=shp.prefix)  # a cached prefix's attention too
    fpt = float((shp.weights * flops).sum()) / shp.mean_moved
    request = request_cost_s(sc, disaggregated=False)
    out = []
    for chunk in CHUNKS:

        def iteration(b, chunk=chunk):
            return mixed_step_s(sc, ctx, b, chunk, fpt, tp, ep)

        step = kept_points(iteration, None if kept is None else kept.setdefault(chunk, {}))
        fit, it = largest_within(step, tpot_s, top)
        b = max(fit, 1)
        if fit == 0:
            it = float(step(np.array([1]))[0])
        grid = batch_grid(b)
        # each of the EP ÷ TP attention groups carries its own chunk (timing's decode step
        # costs the chunk per group): the instance prefills chunk × groups tokens an iteration
        service = shp.moved / (chunk * max(1, ep // tp)) * it
        mean_s, cs2 = moments(service, shp.weights)
        lat = request + np.maximum(np.ceil(shp.moved / chunk), 1) * it
        out.append(Option(tp=tp, ep=ep, chunk=chunk, batch=b, iteration_s=it,
                          slot_limit="memory" if fit == top and top == slots else "tpot",
                          latency_s=lat[shp.draws.idx], mean_s=mean_s, cs2=cs2,
                          feasible=fit > 0, batches=grid.astype(float),
                          steps_s=step(grid)))  # fmt: skip
        if fit == 0:
            break  # bigger chunks only take longer
    return out


@dataclass(frozen=True)
class Colocated:
    tp: int
    chunk: int
    instances: int
    limit: str
    ttft_s: float
    tpot_s: float
    meets_slo: bool
    batch: int
    prefill_instances: int = 1  # what the prefill queue alone needs
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.instances * max(self.tp, self.ep)


def bound(opt: Option, shp: Shape, rps: float) -> int:
    """A lower bound on the GPUs of ``size``: the decode slots and a stable prefill queue."""
    slots = math.ceil(rps * shp.mean_output * opt.iteration_s / opt.batch - 1e-9)
    return max(slots, math.ceil(rps * opt.mean_s - 1e-9), 1) * opt.gpus


def may_raise(opt: Option, shp: Shape, rps: float) -> bool:
    """Whether ``size`` of ``opt`` at ``rps`` may ask a pool over ``MAX_SERVERS`` instances
    (a ValueError): its fewest stable count, its fallback count or its decode slots are over
    it (its search asks no more than that many)."""
    a = rps * opt.mean_s
    slots = math.ceil(rps * shp.mean_output * opt.iteration_s / opt.batch - 1e-9)
    return max(slots, at_least(a), math.ceil(a / FALLBACK_UTILIZATION - 1e-9)) > MAX_SERVERS


def ttft_floor(opt: Option, q: float) -> float:
    """The TTFT percentile [s] of a shape without the prefill queue."""
    return percentile(opt.latency_s, q)


def ttft_function(opt: Option, shp: Shape, rps: float, q: float, seen: dict | None = None):
    """TTFT percentile [s] of the shape at n instances (``remembered``; ``seen``: its values
    known already, which do not depend on the TTFT target)."""
    u = shp.draws.tail[0]
    a = rps * opt.mean_s

    def ttft(n: int) -> float:
        return sum_percentile(opt.latency_s, q, ((u, n, a, opt.mean_s, opt.cs2),))

    return remembered(ttft, seen)


def size(opt: Option, shp: Shape, rps: float, ttft_slo_s: float, q: float, *,
         start: int = 1, floor_s: float | None = None,
         seen: dict | None = None) -> Colocated:  # fmt: skip
    """Instances of one colocated shape for rate ``rps`` (module doc); ``start``: instances a
    lower rate needed (where a sweep starts its search; the answer is the same); ``floor_s``:
    ``ttft_floor`` when the caller has it; ``seen``: TTFT percentiles of this shape at this
    rate and percentile known already, by instances (``remembered``; filled here)."""
    a = rps * opt.mean_s
    slots = max(1, math.ceil(rps * shp.mean_output * opt.iteration_s / opt.batch - 1e-9))
    ttft = ttft_function(opt, shp, rps, q, seen)
    lo = at_least(a)
    meets = opt.feasible
    if (ttft_floor(opt, q) if floor_s is None else floor_s) > ttft_slo_s:
        n_pf, pf_limit, meets = max(lo, math.ceil(a / FALLBACK_UTILIZATION - 1e-9)), "ttft", False
    else:
        n_pf = smallest(lambda n: ttft(n) <= ttft_slo_s, max(lo, start)) or lo
        pf_limit = "compute" if n_pf == lo else "ttft"
    n = max(slots, n_pf)
    limit = opt.slot_limit if slots >= n_pf and meets else pf_limit
    if not opt.feasible:
        limit = "tpot"  # not even one request decodes beside the chunk within the target
    # TPOT: an iteration with a full chunk at the instances' mean decode batch (at most B's)
    b = mean_batch(opt.batches, opt.steps_s, rps * shp.mean_output, n)
    tpot = float(np.interp(max(b, 1.0), opt.batches, opt.steps_s))
    return Colocated(tp=opt.tp, ep=opt.ep, chunk=opt.chunk, instances=n, limit=limit,
                     ttft_s=ttft(n),
                     tpot_s=tpot, meets_slo=meets and ttft(n) <= ttft_slo_s,
                     batch=opt.batch, prefill_instances=n_pf)  # fmt: skip
