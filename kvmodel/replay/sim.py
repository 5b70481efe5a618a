"""Replay one planned deployment over a stream of requests (``kvmodel.replay`` module doc).

Per request, in order:

1. **Prefill.** The pool is one queue: a request goes to the first free instance, first
   come first served (``fifo.first_free``); passes carry ``pools.pass_tokens(TP)`` prompt
   tokens, so (the plan's own rule, ``capacity.pools.prefill_work_s``) a request occupies its
   instance for its compute plus its share of a pass's fixed cost, and ends its own batch-1
   prefill (``timing.estimate_prefill_s``) after it starts.
2. **Transfer.** Its KV leaves on that instance's NICs, one transfer at a time, in the order
   they are ready: the link is busy for the stack's whole transfer time (``wire.transfer``:
   latency, bytes at the stack's efficiency, per-message and per-request costs); with layer-wise
   sending it may start before prefill ends, so that only the exposed part follows it.  A
   transfer waits while the NICs carry an earlier one.
3. **Decode** (``kvmodel.replay.decode``): memory admission, the first step, every other token.

TTFT = admission to decode + the first step − arrival.  TPOT: a request's mean step.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from kvmodel.capacity.pools import (
    pair_scenario,
    pass_fixed_s,
    prefill_work_s,
    request_cost_s,
    reserves_output,
)
from kvmodel.memory import instance_memory
from kvmodel.replay import parallel
from kvmodel.replay.decode import run_decode
from kvmodel.replay.fifo import first_free, round_robin
from kvmodel.replay.stream import Stream
from kvmodel.scenario import Scenario
from kvmodel.timing import estimate_decode_step_s
from kvmodel.wire import transfer

MAX_INSTANCES = 1_000_000  # per pool
TABLE_BATCHES = 512  # the step table's whole batches (StepTable)
TABLE_CONTEXTS = 128


@dataclass(frozen=True)
class Deployment:
    """What is replayed: the scenario (model, GPUs, link, stack) and the two pools."""

    sc: Scenario
    prefill_tp: int
    decode_tp: int
    prefill_instances: int
    decode_instances: int
    prefill_ep: int = 1  # expert parallelism of a MoE side (an instance is max(TP, EP) GPUs)
    decode_ep: int = 1

    def __post_init__(self):
        for name in ("prefill_tp", "decode_tp", "prefill_instances", "decode_instances",
                     "prefill_ep", "decode_ep"):  # fmt: skip
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
            if v > MAX_INSTANCES:
                raise ValueError(f"{name} must be at most {MAX_INSTANCES:,}, got {v:,}")

    @property
    def decode_gpu(self):
        return getattr(self.sc, "decode_gpu", self.sc.gpu)

    @property
    def gpus(self) -> int:
        """GPUs of both pools: instances × max(TP, EP) a side."""
        return (self.prefill_instances * max(self.prefill_tp, self.prefill_ep)
                + self.decode_instances * max(self.decode_tp, self.decode_ep))  # fmt: skip

    @property
    def decode_data_parallel(self) -> bool:
        """Attention data-parallel on the decode side (the scenario's, or EP beyond TP)."""
        return bool(self.sc.data_parallel_attention) or self.decode_ep > self.decode_tp


@dataclass(frozen=True, eq=False)
class Timeline:
    """Per request (arrival order) [s]: every event of its life; and the pools' grids."""

    arrival_s: np.ndarray
    prefill_start_s: np.ndarray
    prefill_end_s: np.ndarray
    link_ready_s: np.ndarray  # when its transfer could start on a free link
    link_start_s: np.ndarray
    kv_arrival_s: np.ndarray
    decode_start_s: np.ndarray
    first_token_s: np.ndarray
    tpot_s: np.ndarray
    depart_s: np.ndarray
    link_busy_s: np.ndarray  # the NICs' whole transfer time
    receive_start_s: np.ndarray  # on the decode instance's NICs
    prefill_instance: np.ndarray
    decode_instance: np.ndarray
    bin_s: float
    reserved_tokens: np.ndarray  # decode pool, per bin
    capacity_tokens: float  # the decode pool's KV memory [tokens]
    waiting: np.ndarray
    memory_bound_instances: int

    @property
    def ttft_s(self) -> np.ndarray:
        return self.first_token_s - self.arrival_s


def _per_length(sc: Scenario, dep: Deployment, stream: Stream):
    """(each request's index into the tables, then the tables per distinct length [s]:
    prefill, work, exposed, whole), evaluated once per distinct length."""
    moved = np.clip(stream.prompt_tokens - stream.cached_tokens, 1, sc.model.max_context_tokens)
    seen = np.zeros(sc.model.max_context_tokens + 1, dtype=bool)  # lengths ≤ the context:
    seen[moved] = True  # a lookup table instead of np.unique's sort (1 M requests: ~0.1 s)
    uniq = np.flatnonzero(seen)
    lookup = np.zeros(len(seen), dtype=np.int64)
    lookup[uniq] = np.arange(len(uniq))
    inv = lookup[moved]
    prefix = None  # the mean cached tokens before each length (capacity.workload.Shape.prefix)
    if stream.cached_tokens.any():
        ahead = np.minimum(stream.prompt_tokens, sc.model.max_context_tokens) - moved
        total = np.bincount(inv, weights=np.maximum(ahead, 0), minlength=len(uniq))
        prefix = total / np.bincount(inv, minlength=len(uniq))
    t = transfer(pair_scenario(sc, dep.prefill_tp, dep.decode_tp, dep.prefill_ep, dep.decode_ep),
                 seq_len=uniq, prefix=prefix)  # fmt: skip
    pre = np.broadcast_to(np.asarray(t.prefill_s, dtype=float), uniq.shape)
    fixed = pass_fixed_s(sc, uniq, dep.prefill_tp, dep.prefill_ep, prefix)
    gpus = max(dep.prefill_tp, dep.prefill_ep)
    work = prefill_work_s(sc.model, uniq, pre, gpus, fixed)  # the plan's own pass rule
    exposed = np.broadcast_to(np.asarray(t.exposed_s, dtype=float), uniq.shape)
    whole = np.broadcast_to(np.asarray(t.transfer_s, dtype=float), uniq.shape)
    return inv, tuple(np.ascontiguousarray(x, dtype=float) for x in (pre, work, exposed, whole))


def decode_capacity_tokens(sc: Scenario, dep: Deployment, context: int) -> float:
    """KV tokens one decode instance holds beside the weights (``memory.instance_memory``)."""
    ctx = int(max(1, min(context, sc.model.max_context_tokens)))
    mem = instance_memory(sc.model, dep.decode_gpu, tp=dep.decode_tp, seq_len=ctx, batch=1,
                          kv_dtype=sc.kv_dtype, kv_scale_group=sc.kv_scale_group,
                          data_parallel_attention=dep.decode_data_parallel,
                          ep=dep.decode_ep)  # fmt: skip
    if mem.usable_bytes_per_gpu <= 0:
        return 0.0
    per_token = mem.kv_bytes_per_request_per_gpu / ctx
    ranks = max(dep.decode_tp, dep.decode_ep) if dep.decode_data_parallel else 1
    return mem.usable_bytes_per_gpu / per_token * ranks


class StepTable:
    """``timing.estimate_decode_step_s`` of the decode side on a (batch × context) table,
    read by linear interpolation in the context: one estimate per cell instead of one per
    request and round (a million requests: ~0.1 s a round otherwise).  Every whole batch up to
    :data:`TABLE_BATCHES`, a geometric grid above; contexts every ``h`` tokens (at most
    :data:`TABLE_CONTEXTS` + 1 of them), so a cell is found by division, not a search.  The
    step is affine in the context between kinks (the KV read; a window's end), so the
    interpolation is exact for a full-attention model away from the compute roofline's kink."""

    def __init__(self, sc: Scenario, dep: Deployment, max_context: int, max_batch: int):
        top_b = max(1, max_batch)
        small = np.arange(1, min(top_b, TABLE_BATCHES) + 1, dtype=float)
        big = np.geomspace(TABLE_BATCHES, top_b, 64).round() if top_b > TABLE_BATCHES else []
        self.big = np.unique(np.asarray(big, dtype=float))
        self.batches = np.concatenate([small, self.big[self.big > small[-1]]])
        self.h = max(1, -(-int(max_context) // TABLE_CONTEXTS))
        self.contexts = np.arange(TABLE_CONTEXTS + 2, dtype=float) * self.h
        fw = getattr(sc, "framework", None)  # as capacity.pools.decode_side estimates it
        kw = {} if fw is None else {"framework": fw}
        self.table = estimate_decode_step_s(sc.model, self.contexts[None, :],
                                            self.batches[:, None], gpu=dep.decode_gpu,
                                            tp=dep.decode_tp, kv_dtype=sc.kv_dtype,
                                            ep=dep.decode_ep,
                                            data_parallel_attention=dep.decode_data_parallel,
                                            **kw)  # fmt: skip

    def __call__(self, context: np.ndarray, batch: np.ndarray, out=None) -> np.ndarray:
        """Step [s] at whole ``batch`` (≥ 1; above the table: the first row at or above it,
        at most the last) and ``context`` (compiled: ``kernels.step_lookup``); into ``out``
        (a contiguous array of the batch's shape) when given."""
        from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

        b = np.asarray(batch, dtype=float)
        c = np.broadcast_to(np.asarray(context, dtype=float), b.shape)
        dest = None if out is None else out.reshape(-1)
        got = kernels.step_lookup(self.table, self.batches, bool(self.big.size), self.h,
                                  float(self.contexts[-2]), np.ascontiguousarray(c).ravel(),
                                  np.ascontiguousarray(b).ravel(), TABLE_BATCHES,
                                  TABLE_CONTEXTS, dest)  # fmt: skip
        return got.reshape(b.shape)

    def kernel_args(self) -> tuple:
        """The table as ``kernels.decode_steps_into`` reads it: (table, batches, whether rows
        past the whole batches exist, h, the last context [tokens], whole batches, last
        column)."""
        return (self.table, self.batches, bool(self.big.size), float(self.h),
                float(self.contexts[-2]), TABLE_BATCHES, TABLE_CONTEXTS)  # fmt: skip


def _prefill_and_link(sc, dep: Deployment, stream: Stream):
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    inv, tables = _per_length(sc, dep, stream)
    arrival, c = np.ascontiguousarray(stream.arrival_s, dtype=float), dep.prefill_instances
    if c == 1:  # one server: Lindley's recursion (fifo.first_free)
        pre, work, exposed, whole = (x[inv] for x in tables)
        start, inst = first_free(arrival, work, 1)
        end = start + pre
        ready = end + exposed - whole  # on a free link the KV lands at end + exposed
    else:  # the first-free heap and the sums above in one compiled pass
        start, end, ready, whole = (np.empty(stream.n) for _ in range(4))
        inst = np.empty(stream.n, dtype=np.int64)
        kernels.prefill_side_into(arrival, np.ascontiguousarray(inv, dtype=np.int64), *tables, c,
                                  start, inst, end, ready, whole)  # fmt: skip
    link_start = _fifo_nics(ready, whole, inst, c)
    return start, end, ready, link_start, whole, inst


def _fifo_nics(ready, busy, inst, instances: int):
    """Start on each instance's NICs [s]: one transfer at a time, in the order they are ready
    (compiled: ``kernels.served_by_group``, ``fifo.served`` per instance)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    r, b = (np.ascontiguousarray(x, dtype=float) for x in (ready, busy))
    group = np.ascontiguousarray(inst, dtype=np.int64)
    return kernels.served_by_group(r, b, group, int(instances))


def _receive(link_start, busy, instances: int):
    """(start on the decode instance's NICs [s], KV arrival [s], the KV arrivals as the
    instances' rows and each row's order by them): request k's instance k mod ``instances``
    receives one transfer at a time, in the order they leave (a transfer that finds them
    busy waits: the slower side of the pair bounds it; compiled:
    ``kernels.receive_in_turn``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    return kernels.receive_in_turn(link_start, busy, int(instances))


def _decode_tables(dep: Deployment, stream: Stream):
    """(a decode instance's KV memory [tokens], its step table, each request's reserved
    tokens): what a request takes in KV memory is the formulas' decode memory (capacity.pools
    .memory_context): paged KV grows as tokens arrive, so on average over its stay its prompt
    + half its output; prompt + output when the framework reserves the whole output."""
    sc = dep.sc
    p, o = stream.prompt_tokens, stream.output_tokens
    maxc = sc.model.max_context_tokens
    need = np.minimum(p + o, maxc).astype(float)
    held = np.minimum(p + o / 2.0, maxc)
    capacity = decode_capacity_tokens(sc, dep, int(np.ceil(held.mean())))
    if capacity < 1:
        raise ValueError(f"a decode instance at TP {dep.decode_tp} holds no KV beside the weights")
    step = StepTable(sc, dep, int(need.max()), int(capacity))
    return capacity, step, need if reserves_output(sc) else held


# what ``replay``'s progress counts: the prefill side, the decode side's NICs, the decode pool
STEPS = 3


def replay(dep: Deployment, stream: Stream, *, progress=None) -> Timeline:
    """Every request's timeline through ``dep`` (module doc); ``progress(i, STEPS)``, when
    given, is called after each of its :data:`STEPS` parts, the last one ``(STEPS, STEPS)``
    (a progress bar for long replays)."""
    sc = dep.sc
    # the prefill side's compiled heap releases the GIL: the decode side's tables meanwhile
    (start, end, ready, link_start, busy, inst), (capacity, step, taken) = parallel.run([
        partial(_prefill_and_link, sc, dep, stream), partial(_decode_tables, dep, stream)])
    if progress is not None:
        progress(1, STEPS)
    dinst = round_robin(stream.n, dep.decode_instances)
    receive, kv, kv_rows, order = _receive(link_start, busy, dep.decode_instances)
    if progress is not None:
        progress(2, STEPS)
    p, o = stream.prompt_tokens, stream.output_tokens
    run = run_decode(kv, taken, np.minimum(p, sc.model.max_context_tokens), o.astype(float),
                     instances=dep.decode_instances, capacity_tokens=capacity, step=step,
                     rows=(kv_rows, order))  # fmt: skip
    if progress is not None:
        progress(STEPS, STEPS)
    return Timeline(
        arrival_s=stream.arrival_s, prefill_start_s=start, prefill_end_s=end,
        link_ready_s=ready, link_start_s=link_start, kv_arrival_s=kv,
        decode_start_s=run.start_s,
        # the framework's per-request cost (API server, tokenizer, P/D proxy) is CPU work
        # outside the GPU queues: it adds to every TTFT and loads no instance
        first_token_s=run.start_s + run.first_step_s + request_cost_s(sc, disaggregated=True),
        tpot_s=run.tpot_s, depart_s=run.depart_s, link_busy_s=busy, receive_start_s=receive,
        prefill_instance=inst, decode_instance=dinst,
        bin_s=run.bin_s, reserved_tokens=run.reserved_tokens,
        capacity_tokens=capacity * dep.decode_instances, waiting=run.waiting,
        memory_bound_instances=run.memory_bound,
    )  # fmt: skip
