"""Transfer time, layer-wise overlap, TTFT and the critical sequence length of one scenario.

Transfer (whole cache after prefill)::

    t = latency + wire_bytes ÷ (bandwidth × efficiency × streams)
        + descriptors × descriptor_cost ÷ streams + quantize + dequantize

Layer-wise sending splits the same work into one chunk per cache-carrying layer; chunk j can
leave once prefill has computed layer j (at (j+1)/n of the prefill).  The decode node then waits

    exposed = max_j [ ready_j + Σ_{i ≥ j} x_i ] − prefill

after prefill ends, where x_i is chunk i's own time (including its latency).  With n equal
chunks this is ``max(T/n, T − prefill × (n−1)/n)``: a single chunk when the link keeps up with
compute, otherwise what is left once compute stops.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field, fields, replace
from functools import cached_property, lru_cache

import numpy as np

from .dtypes import DEFAULT_COMPRESSION_GROUP, compressed_bytes_per_value, kv_dtype_bytes
from .inputs import (
    ATTENTION_PARALLEL,
    DEFAULT_BLOCK_TOKENS,
    DEFAULT_CODEC_BYTES_PER_S,
    DEFAULT_DECODE_STEP_S,
    DEFAULT_MFU,
    DEFAULT_SHARE_TARGET,
    WINDOW_TRANSFER,
    check_scenario_field,
)
from .memory import instance_memory, memory_notes
from .size import _as_tokens, _held, chunk_kind_bytes, chunk_rows, chunk_runs, kv_bytes, shard_heads
from .specs import IDEAL_STACK, GpuSpec, LinkSpec, ModelSpec, StackSpec
from .timing import decode_step_lower_bound_s, estimate_decode_step_s, estimate_prefill_s
from .topology import default_streams, domain_gpus, is_scale_up, scale_up_feasible


@lru_cache(maxsize=64)
def unwindowed(model: ModelSpec) -> ModelSpec:
    """``model`` with every sliding/chunked group holding all tokens (sent whole)."""
    if all(g.window_tokens is None for g in model.groups):
        return model
    groups = tuple(replace(g, window_tokens=None, window_kind=None) for g in model.groups)
    return replace(model, groups=groups)


def _estimated_step_s(sc) -> float:
    for g in sc.model.groups:  # an impossible TP is reported by the checks that follow
        shard_heads(g.kv_heads, sc.tp_decode)
    return _step_cached(sc.model, sc.gpu, sc.tp_decode, int(sc.batch), int(sc.seq_len), sc.kv_dtype)


@lru_cache(maxsize=4096)
def _step_cached(model, gpu, tp, batch, seq_len, kv_dtype) -> float:
    return float(
        estimate_decode_step_s(
            model, min(seq_len, model.max_context_tokens), batch, gpu=gpu, tp=tp, kv_dtype=kv_dtype
        )  # fmt: skip
    )


@dataclass(frozen=True)
class Scenario:
    """Everything that decides one transfer.  Times in seconds, bandwidth per direction."""

    model: ModelSpec
    link: LinkSpec
    gpu: GpuSpec
    seq_len: int = 1024
    batch: int = 1
    efficiency: float = 1.0
    parallel_links: int | None = None  # None → min(tp_prefill, tp_decode): one NIC per GPU
    kv_dtype: str = "fp16"
    kv_scale_group: int = 0
    compression: str = "none"
    comp_group: int = DEFAULT_COMPRESSION_GROUP
    codec_bytes_per_s: float = DEFAULT_CODEC_BYTES_PER_S
    layerwise: bool = False
    tp_prefill: int = 1
    tp_decode: int = 1
    decode_step_s: float = DEFAULT_DECODE_STEP_S
    prefill_s: float | None = None  # None → estimated from the GPU
    mfu: float = DEFAULT_MFU
    block_tokens: int = DEFAULT_BLOCK_TOKENS
    descriptor_s: float = 0.0
    k: float = 1.0  # critical length: transfer ≥ k × decode step
    share_target: float = DEFAULT_SHARE_TARGET
    stack: StackSpec = IDEAL_STACK  # the connector's measured costs (kvmodel.stacks)
    attention_parallel: str = "tp"  # "dp": each request's KV lives on one decode rank
    window_transfer: str = "window"  # "full": sliding-window layers cross the wire whole
    # True: decode_step_s is estimated (kvmodel.timing) at this scenario's model, GPU, decode
    # TP, batch and prompt length, and follows them through dataclasses.replace
    decode_step_estimated: bool = False

    def __post_init__(self):
        # Ranges and whole-number rules come from kvmodel.inputs (one row per input).
        for name in ("seq_len", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        if self.seq_len > self.model.max_context_tokens:
            raise ValueError(
                f"seq_len must be <= the model's max context of {self.model.max_context_tokens:,} "
                f"tokens, got {self.seq_len:,}"
            )
        if self.parallel_links is not None and (
            isinstance(self.parallel_links, bool) or not isinstance(self.parallel_links, int)
        ):
            raise ValueError(
                f"parallel_links must be a whole number >= 1, got {self.parallel_links!r}"
            )
        if self.decode_step_estimated:
            object.__setattr__(self, "decode_step_s", _estimated_step_s(self))
        for f in fields(self):
            check_scenario_field(f.name, getattr(self, f.name))
        if self.attention_parallel not in ATTENTION_PARALLEL:
            raise ValueError(
                f"attention_parallel must be one of {ATTENTION_PARALLEL}, "
                f"got {self.attention_parallel!r}"
            )
        if self.window_transfer not in WINDOW_TRANSFER:
            raise ValueError(
                f"window_transfer must be one of {WINDOW_TRANSFER}, got {self.window_transfer!r}"
            )
        if not isinstance(self.stack, StackSpec):
            raise ValueError(f"stack must be a StackSpec, got {self.stack!r}")
        kv_dtype_bytes(self.kv_dtype, scale_group=self.kv_scale_group)
        compressed_bytes_per_value(self.compression, storage_bytes=2.0, group=self.comp_group)
        for g in self.model.groups:  # raises on an impossible TP
            shard_heads(g.kv_heads, self.tp_prefill)
            shard_heads(g.kv_heads, self.tp_decode)

    @property
    def streams(self) -> int:
        """Links used at once: as given, else the NICs (or per-GPU scale-up links) both
        instances have (``kvmodel.topology``); with data-parallel attention a batch smaller
        than that uses one stream per request."""
        n = self.parallel_links or default_streams(
            self.gpu, self.link, self.tp_prefill, self.tp_decode
        )
        return min(n, self.batch) if self.data_parallel_attention else n

    @property
    def data_parallel_attention(self) -> bool:
        return self.attention_parallel == "dp"

    @property
    def kv_tp_decode(self) -> int:
        """The decode TP the KV is split by: 1 with data-parallel attention (one rank per
        request, no replicated heads)."""
        return 1 if self.data_parallel_attention else self.tp_decode

    @property
    def wire_model(self) -> ModelSpec:
        """The model as its KV crosses the wire (windows dropped when sent whole)."""
        return unwindowed(self.model) if self.window_transfer == "full" else self.model

    @property
    def effective_bandwidth_bytes_per_s(self) -> float:
        return self.link.bandwidth_bytes_per_s * self.efficiency * self.streams

    def with_link(self, link: LinkSpec) -> Scenario:
        return replace(self, link=link)


@dataclass(frozen=True)
class Transfer:
    """Components of one transfer [s, bytes]; arrays broadcast over the seq_len × batch asked."""

    raw_wire_bytes: np.ndarray  # before compression
    wire_bytes: np.ndarray  # after compression
    serialization_s: np.ndarray
    latency_s: float
    descriptor_s: np.ndarray
    codec_s: np.ndarray  # quantize + dequantize
    transfer_s: np.ndarray  # the whole transfer after prefill, no overlap
    exposed_s: np.ndarray  # what the decode node waits after prefill ends
    prefill_s: np.ndarray


def _wire_ratio(sc: Scenario) -> float:
    storage = kv_dtype_bytes(sc.kv_dtype, scale_group=sc.kv_scale_group)
    comp = compressed_bytes_per_value(sc.compression, storage_bytes=storage, group=sc.comp_group)
    return comp / storage


def prefill_time_s(sc: Scenario, seq_len=None, batch=None) -> np.ndarray:
    s = sc.seq_len if seq_len is None else seq_len
    b = sc.batch if batch is None else batch
    if sc.prefill_s is not None:
        return np.broadcast_to(
            np.asarray(sc.prefill_s, dtype=float), np.broadcast(np.asarray(s), np.asarray(b)).shape
        )
    return estimate_prefill_s(sc.model, s, b, gpu=sc.gpu, tp=sc.tp_prefill, mfu=sc.mfu)


# Scenario fields a transfer's link-independent parts do not depend on (see ``Volume``).
PER_LINK_FIELDS = ("link", "efficiency", "parallel_links", "compression", "comp_group",
                   "codec_bytes_per_s", "layerwise", "descriptor_s", "decode_step_s", "k",
                   "share_target", "stack")  # fmt: skip


_VOLUME_FIELDS = tuple(f.name for f in fields(Scenario) if f.name not in PER_LINK_FIELDS)


class Volume:
    """What moves, for given S and B: everything of a transfer the link does not change.

    Wire bytes before compression, per-layer chunk bytes, descriptor counts and the prefill
    time depend on the model, dtype, TP, block size, GPU and prefill, never on the link,
    compression or layer-wise sending.  ``transfer(sc, volume=...)`` reuses them, so trying many
    links and mitigations on one scenario (``solve.try_mitigations``) computes them once.
    """

    def __init__(self, sc: Scenario, seq_len=None, batch=None):
        self.scenario = sc
        self.s = _as_tokens(sc.seq_len if seq_len is None else seq_len, "seq_len")
        self.b = _as_tokens(sc.batch if batch is None else batch, "batch")
        self.raw = kv_bytes(
            sc.wire_model,
            self.s,
            self.b,
            kv_dtype=sc.kv_dtype,
            kv_scale_group=sc.kv_scale_group,
            tp_prefill=sc.tp_prefill,
            tp_decode=sc.kv_tp_decode,
        ).wire
        self.prefill = prefill_time_s(sc, self.s, self.b)

    def fits(self, sc: Scenario) -> bool:
        """True when ``sc`` differs from this volume's scenario only in per-link fields."""
        base = self.scenario
        return sc is base or all(
            getattr(sc, name) == getattr(base, name) for name in _VOLUME_FIELDS
        )

    @cached_property
    def kind_raw(self) -> np.ndarray:
        """Wire bytes of one layer of each kind (``chunk_kind_bytes``), before compression."""
        sc = self.scenario
        return chunk_kind_bytes(
            sc.wire_model,
            self.s,
            self.b,
            kv_dtype=sc.kv_dtype,
            kv_scale_group=sc.kv_scale_group,
            tp_decode=sc.kv_tp_decode,
        )

    @cached_property
    def descriptor_counts(self) -> list[np.ndarray]:
        """Descriptors per chunk type: (blocks × tensors) per layer per decode rank."""
        sc = self.scenario
        return [
            np.ceil(_held(g, self.s) / sc.block_tokens) * g.tensors * self.b * sc.kv_tp_decode
            for g in sc.wire_model.groups
        ]


def _volume(sc: Scenario, seq_len, batch, volume: Volume | None) -> Volume:
    if volume is None:
        return Volume(sc, seq_len, batch)
    if seq_len is not None or batch is not None or not volume.fits(sc):
        raise ValueError("volume was computed for another scenario, sequence length or batch")
    return volume


def _streams(sc: Scenario, vol: Volume):
    """Links used at once, per batch entry: with data-parallel attention and no stream count
    given, a batch smaller than the NICs uses one stream per request (``Scenario.streams``)."""
    if sc.data_parallel_attention and not sc.parallel_links:
        n = default_streams(sc.gpu, sc.link, sc.tp_prefill, sc.tp_decode)
        return np.minimum(n, vol.b)
    return sc.streams


def _kind_messages(sc: Scenario, vol: Volume) -> np.ndarray:
    """The stack's messages in one layer of each kind (rows of ``Volume.kind_raw``): KV blocks ×
    tensors × decode ranks ("block"), or tensors × decode ranks per request ("layer"); a state
    layer is one message per request and rank."""
    shape = np.shape(vol.kind_raw)[1:]
    rows = []
    for g, blocks in zip(sc.wire_model.groups, vol.descriptor_counts, strict=True):
        n = blocks if sc.stack.message == "block" else g.tensors * vol.b * sc.kv_tp_decode
        rows.append(np.broadcast_to(n, shape))
    if sc.model.state_layers:
        rows.append(np.broadcast_to(vol.b * sc.kv_tp_decode, shape))
    return np.stack(rows).astype(float)


def _posters(sc: Scenario, vol: Volume):
    """Decode ranks posting messages in parallel (each rank's agent posts its own): all of them
    with tensor-parallel attention, one per request (up to TP) with data-parallel attention."""
    return np.minimum(sc.tp_decode, vol.b) if sc.data_parallel_attention else sc.tp_decode


def _stack_s(sc: Scenario, vol: Volume, wire, messages, bandwidth):
    """Time of ``wire`` bytes in ``messages`` messages through the stack: the bytes at the
    stack's efficiency of ``bandwidth``, the messages' posting spread over the decode ranks,
    overlapped (RDMA engines) or one after the other (NCCL kernels)."""
    data = wire / (bandwidth * sc.stack.efficiency_max)
    post = messages * sc.stack.message_s / _posters(sc, vol)
    return np.maximum(data, post) if sc.stack.overlap else data + post


def _kind_times_s(sc: Scenario, vol: Volume) -> np.ndarray:
    """Own send time of one layer of each kind (rows of ``chunk_kind_bytes``), shape (k, ...)."""
    raw = vol.kind_raw
    ratio = _wire_ratio(sc)
    streams = _streams(sc, vol)
    bandwidth = sc.link.bandwidth_bytes_per_s * sc.efficiency * streams
    if sc.stack.is_ideal:
        t = sc.link.latency_s + raw * ratio / bandwidth
    else:
        moved = _stack_s(sc, vol, raw * ratio, _kind_messages(sc, vol), bandwidth)
        t = sc.link.latency_s + sc.stack.chunk_s + moved
    if ratio < 1:
        t = t + 2 * raw / (sc.codec_bytes_per_s * streams)
    if sc.descriptor_s:
        # descriptor cost per layer differs only for windowed groups: every layer gets the mean,
        # which keeps the total exact
        t = t + _descriptor_total(sc, vol) * sc.descriptor_s / streams / len(chunk_rows(sc.model))
    return t


def _descriptor_total(sc: Scenario, vol: Volume) -> np.ndarray:
    """Descriptors of the whole cache: attention layers' blocks × tensors, one per state layer."""
    per_layer = Counter(chunk_rows(sc.model))  # layers of each kind (state: len(groups))
    return (
        sum(per_layer[gi] * c for gi, c in enumerate(vol.descriptor_counts))
        + sc.model.state_layers * vol.b * sc.kv_tp_decode
    )


def chunk_times_s(sc: Scenario, seq_len=None, batch=None, *, volume: Volume | None = None):
    """Each layer's own send time x_i (latency, bytes, descriptors, codec), shape (n, ...)."""
    vol = _volume(sc, seq_len, batch, volume)
    return _kind_times_s(sc, vol)[np.asarray(chunk_rows(sc.model))]


def _layerwise(sc: Scenario, vol: Volume, prefill) -> tuple[np.ndarray, np.ndarray]:
    """(whole, exposed) of layer-wise sending: exposed = max_j [ready_j + Σ_{i≥j} x_i] − P.

    Within a run of layers of one kind the bracket is linear in j, so its maximum is at one of
    the run's two ends: only 2 × runs candidates are evaluated, not every layer.
    """
    x = _kind_times_s(sc, vol)
    kinds, starts, ends = chunk_runs(sc.model)
    n = len(chunk_rows(sc.model))
    lead = (len(kinds),) + (1,) * (x.ndim - 1)
    own = x[kinds]  # one layer of each run's kind
    run_total = own * (ends - starts + 1).reshape(lead)
    after = np.cumsum(run_total[::-1], axis=0)[::-1] - run_total  # Σ over later runs
    at_start = ((starts + 1) / n).reshape(lead) * prefill + after + run_total
    at_end = ((ends + 1) / n).reshape(lead) * prefill + after + own
    exposed = np.maximum(at_start.max(axis=0), at_end.max(axis=0)) - prefill
    return after[0] + run_total[0], exposed


def transfer(sc: Scenario, seq_len=None, batch=None, *, volume: Volume | None = None) -> Transfer:
    """Transfer time of ``sc``; pass arrays for ``seq_len``/``batch`` to sweep them.

    ``volume``: a ``Volume`` of a scenario that differs from ``sc`` only in per-link fields
    (then leave ``seq_len`` and ``batch`` out); its link-independent parts are reused.
    """
    vol = _volume(sc, seq_len, batch, volume)
    ratio = _wire_ratio(sc)
    raw = vol.raw
    wire = raw * ratio
    streams = _streams(sc, vol)
    bandwidth = sc.link.bandwidth_bytes_per_s * sc.efficiency * streams
    stack = sc.stack
    if stack.is_ideal:
        ser = wire / bandwidth
        fixed = 0.0
    else:  # every layer's messages and bytes, posted and moved as one chunk
        rows = _kind_messages(sc, vol)
        per_layer = Counter(chunk_rows(sc.model))
        lead = (len(rows),) + (1,) * (rows.ndim - 1)
        n = np.array([per_layer[k] for k in range(len(rows))], dtype=float).reshape(lead)
        messages = (rows * n).sum(axis=0)
        ser = np.broadcast_to(_stack_s(sc, vol, wire, messages, bandwidth), raw.shape)
        fixed = stack.request_s
    codec = 2 * raw / (sc.codec_bytes_per_s * streams) if ratio < 1 else np.zeros_like(raw)
    if sc.descriptor_s:
        count = _descriptor_total(sc, vol)
        desc = np.broadcast_to(count * sc.descriptor_s / streams, raw.shape)
    else:
        desc = np.zeros_like(raw)
    whole = sc.link.latency_s + stack.chunk_s + fixed + ser + desc + codec
    prefill = vol.prefill
    if sc.layerwise:  # the stack's per-request cost is paid once, its per-chunk cost per layer
        whole, exposed = _layerwise(sc, vol, prefill)
        whole, exposed = whole + fixed, exposed + fixed
    else:
        exposed = whole
    return Transfer(
        raw_wire_bytes=raw,
        wire_bytes=wire,
        serialization_s=ser,
        latency_s=sc.link.latency_s,
        descriptor_s=desc,
        codec_s=codec,
        transfer_s=whole,
        exposed_s=exposed,
        prefill_s=np.asarray(prefill, dtype=float),
    )


def wire_bytes_per_token(sc: Scenario) -> float:
    """Wire bytes one prompt token of one request adds (before compression), at full length."""
    one = replace(sc, seq_len=1, batch=1)
    return float(Volume(one).raw)


def exposed_transfer_s(sc: Scenario, seq_len) -> np.ndarray:
    return transfer(sc, seq_len=seq_len).exposed_s


def _is_linear(sc: Scenario) -> bool:
    full = all(g.window_tokens is None for g in sc.model.groups)
    return full and not sc.descriptor_s and not sc.layerwise


def critical_seq_len(sc: Scenario) -> int | None:
    """Smallest whole S with exposed transfer(S) ≥ k × decode step, or None up to max context.

    Closed form when the transfer is linear in S (full attention, no descriptor cost, sent
    whole).  Otherwise the first crossing on a 512-point log grid of S, refined on finer grids
    inside the bracket until it is one token wide (vectorised: about 3 calls of ``transfer``
    over arrays instead of ~17 scalar bisection steps).  For a monotone transfer this is the exact
    smallest S; with layer-wise sending and an estimated prefill (which grows faster than the
    transfer and can hide it again) it is the first crossing the grid sees.
    """
    target = sc.k * sc.decode_step_s
    max_s = sc.model.max_context_tokens

    if _is_linear(sc):

        def f(s):
            return float(exposed_transfer_s(sc, int(s)))

        if f(max_s) < target:
            return None
        c = f(0)
        slope = f(1) - c
        guess = max(1, math.ceil((target - c) / slope))
        while guess > 1 and f(guess - 1) >= target:  # floating-point guard
            guess -= 1
        while f(guess) < target:
            guess += 1
        return guess if guess <= max_s else None
    return first_crossing(lambda s: exposed_transfer_s(sc, s), target, max_s)


def first_crossing(g, target: float, max_s: int, points: int = 512) -> int | None:
    """Smallest whole S in [1, max_s] with ``g(S) ≥ target`` as the grids see it, or None.

    ``g`` maps an int64 array of S to an array of values.  A log grid (ends included) finds the
    first grid point at or above the target; the bracket below it is then searched on linear
    grids of at most ``points`` whole values, each time keeping the first hit and the
    candidate before it, until the bracket is one token wide.
    """
    grid = np.unique(np.append(np.geomspace(1, max_s, points).astype(np.int64), [1, max_s]))
    hit = np.flatnonzero(np.asarray(g(grid)) >= target)
    if hit.size == 0:
        return None
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0  # g(lo) < target, or lo = 0
    while hi - lo > 1:
        cand = np.unique(np.linspace(lo + 1, hi, min(hi - lo, points)).astype(np.int64))
        first = int(np.flatnonzero(np.asarray(g(cand)) >= target)[0])  # hi is a candidate
        lo = int(cand[first - 1]) if first > 0 else lo
        hi = int(cand[first])
        if first == 0:
            break  # the first candidate, lo + 1, already reaches the target
    return hi


@dataclass(frozen=True)
class Evaluation:
    """The numbers every page shows for one scenario (SI units)."""

    scenario: Scenario
    kv_total_bytes: float
    kv_state_bytes: float
    kv_per_token_bytes: float
    kv_per_layer_bytes: float
    kv_per_gpu_prefill_bytes: float
    kv_per_gpu_decode_bytes: float
    raw_wire_bytes: float
    wire_bytes: float
    compression_ratio: float
    streams: int
    effective_bandwidth_bytes_per_s: float
    latency_s: float
    serialization_s: float
    descriptor_s: float
    codec_s: float
    transfer_s: float
    exposed_s: float
    prefill_s: float
    prefill_estimated: bool
    decode_step_s: float
    decode_step_lower_bound_s: float
    ttft_s: float
    transfer_share_of_ttft: float
    transfer_over_decode: float
    over_share_target: bool
    critical_seq_len: int | None
    notes: tuple[str, ...] = field(default=())
    # the same transfer at wire speed (stack "ideal"): the source article's arithmetic
    ideal_transfer_s: float = 0.0
    ideal_exposed_s: float = 0.0
    scale_up_feasible: bool = True  # prefill + decode GPUs fit in one NVLink domain
    weights_bytes_per_gpu: float = 0.0  # decode instance
    weights_bytes_per_gpu_prefill: float = 0.0
    max_concurrent_requests: int = 0  # requests of this length one decode instance holds
    fits_in_memory: bool = True  # weights and the batch's KV fit on both instances


@lru_cache(maxsize=1024)
def evaluate(sc: Scenario) -> Evaluation:
    """All headline numbers of ``sc``: bytes, transfer, TTFT, share, critical length.

    Memoised per scenario (bounded; ``Scenario`` and ``Evaluation`` are frozen): tables,
    timelines and solvers that meet the same scenario share one evaluation.
    """
    kv = kv_bytes(
        sc.model,
        sc.seq_len,
        sc.batch,
        kv_dtype=sc.kv_dtype,
        kv_scale_group=sc.kv_scale_group,
        tp_prefill=sc.tp_prefill,
        tp_decode=sc.tp_decode,
    )
    t = transfer(sc)
    prefill = float(t.prefill_s)
    exposed = float(t.exposed_s)
    ttft = prefill + exposed + sc.decode_step_s
    lb = float(
        decode_step_lower_bound_s(
            sc.model, sc.seq_len, sc.batch, gpu=sc.gpu, tp=sc.tp_decode, kv_dtype=sc.kv_dtype
        )
    )
    notes = []
    if sc.model.kv_dtype_native and sc.kv_dtype != sc.model.kv_dtype_native:
        notes.append(
            f"{sc.model.id} ships a {sc.model.kv_dtype_native} KV cache; "
            f"the scenario stores it as {sc.kv_dtype}"
        )
    if sc.compression != "none" and _wire_ratio(sc) == 1.0:
        notes.append(
            f"{sc.compression} transfer compression saves nothing on a {sc.kv_dtype} cache"
        )
    if float(t.raw_wire_bytes) > float(kv.total) * (1 + 1e-12) and sc.window_transfer == "window":
        notes.append("replicated KV heads cross the link once per decode GPU")
    ideal = t if sc.stack.is_ideal else transfer(replace(sc, stack=IDEAL_STACK))
    scale_up_ok = scale_up_feasible(
        sc.gpu, sc.tp_prefill, sc.tp_decode, sc.link if is_scale_up(sc.link) else None
    )
    if is_scale_up(sc.link) and not scale_up_ok:
        notes.append(
            f"{sc.link.name} joins at most {domain_gpus(sc.gpu, sc.link)} GPUs: prefill TP "
            f"{sc.tp_prefill} + decode TP {sc.tp_decode} do not fit in one domain, so this link "
            "cannot carry the transfer"
        )
    mem_kw = dict(seq_len=sc.seq_len, batch=sc.batch, kv_dtype=sc.kv_dtype,
                  kv_scale_group=sc.kv_scale_group)  # fmt: skip
    mem_d = instance_memory(
        sc.model,
        sc.gpu,
        tp=sc.tp_decode,
        data_parallel_attention=sc.data_parallel_attention,
        **mem_kw,
    )
    mem_p = instance_memory(sc.model, sc.gpu, tp=sc.tp_prefill, **mem_kw)  # fmt: skip
    notes.extend(memory_notes(sc, mem_p, mem_d))
    return Evaluation(
        scenario=sc,
        kv_total_bytes=float(kv.total),
        kv_state_bytes=float(kv.state),
        kv_per_token_bytes=float(kv.per_token),
        kv_per_layer_bytes=float(kv.per_attention_layer),
        kv_per_gpu_prefill_bytes=float(kv.per_gpu_prefill),
        kv_per_gpu_decode_bytes=float(kv.per_gpu_decode),
        raw_wire_bytes=float(t.raw_wire_bytes),
        wire_bytes=float(t.wire_bytes),
        compression_ratio=_wire_ratio(sc),
        streams=sc.streams,
        effective_bandwidth_bytes_per_s=sc.effective_bandwidth_bytes_per_s,
        latency_s=sc.link.latency_s,
        serialization_s=float(t.serialization_s),
        descriptor_s=float(t.descriptor_s),
        codec_s=float(t.codec_s),
        transfer_s=float(t.transfer_s),
        exposed_s=exposed,
        prefill_s=prefill,
        prefill_estimated=sc.prefill_s is None,
        decode_step_s=sc.decode_step_s,
        decode_step_lower_bound_s=lb,
        ttft_s=ttft,
        transfer_share_of_ttft=exposed / ttft,
        transfer_over_decode=exposed / sc.decode_step_s,
        over_share_target=exposed / ttft > sc.share_target,
        critical_seq_len=critical_seq_len(sc),
        notes=tuple(notes),
        ideal_transfer_s=float(ideal.transfer_s),
        ideal_exposed_s=float(ideal.exposed_s),
        scale_up_feasible=scale_up_ok,
        weights_bytes_per_gpu=mem_d.weights_bytes_per_gpu,
        weights_bytes_per_gpu_prefill=mem_p.weights_bytes_per_gpu,
        max_concurrent_requests=mem_d.max_concurrent_requests,
        fits_in_memory=mem_p.fits and mem_d.fits,
    )
