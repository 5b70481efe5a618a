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
from dataclasses import dataclass, field, replace

import numpy as np

from .dtypes import DEFAULT_COMPRESSION_GROUP, compressed_bytes_per_value, kv_dtype_bytes
from .size import _as_tokens, _held, chunk_bytes, kv_bytes, shard_heads
from .specs import GpuSpec, LinkSpec, ModelSpec
from .timing import DEFAULT_MFU, decode_step_lower_bound_s, estimate_prefill_s

DEFAULT_DECODE_STEP_S = 0.030  # the article: 20-50 ms for Llama-3-70B on TP=8 A100
DEFAULT_CODEC_BYTES_PER_S = 1.0e12  # quantize or dequantize, bytes of uncompressed KV per s
DEFAULT_BLOCK_TOKENS = 16  # vLLM's default KV block size
DEFAULT_SHARE_TARGET = 0.20  # the article: a gap above 20 % of TTFT gives back the gains


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

    def __post_init__(self):
        def bad(name, expected):
            raise ValueError(f"{name} must be {expected}, got {getattr(self, name)!r}")

        for name in ("seq_len", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                bad(name, "a whole number >= 1")
        if self.seq_len > self.model.max_context_tokens:
            raise ValueError(
                f"seq_len must be <= the model's max context of {self.model.max_context_tokens:,} "
                f"tokens, got {self.seq_len:,}"
            )
        if not (0 < self.efficiency <= 1):
            bad("efficiency", "in (0, 1]")
        if self.parallel_links is not None and (
            isinstance(self.parallel_links, bool)
            or not isinstance(self.parallel_links, int)
            or self.parallel_links < 1
        ):
            bad("parallel_links", "a whole number >= 1")
        kv_dtype_bytes(self.kv_dtype, scale_group=self.kv_scale_group)
        compressed_bytes_per_value(self.compression, storage_bytes=2.0, group=self.comp_group)
        if not (self.codec_bytes_per_s > 0 and math.isfinite(self.codec_bytes_per_s)):
            bad("codec_bytes_per_s", "> 0")
        for g in self.model.groups:  # raises on an impossible TP
            shard_heads(g.kv_heads, self.tp_prefill)
            shard_heads(g.kv_heads, self.tp_decode)
        if not (0 < self.decode_step_s < 3600):
            bad("decode_step_s", "in (0, 3600) s")
        if self.prefill_s is not None and not (0 <= self.prefill_s < 86400):
            bad("prefill_s", "in [0, 86400) s or None (estimate)")
        if not (0 < self.mfu <= 1):
            bad("mfu", "in (0, 1]")
        if isinstance(self.block_tokens, bool) or not isinstance(self.block_tokens, int):
            bad("block_tokens", "a whole number >= 1")
        if self.block_tokens < 1:
            bad("block_tokens", "a whole number >= 1")
        if not (0 <= self.descriptor_s < 1):
            bad("descriptor_s", "in [0, 1) s")
        if not (0 < self.k < 1e6):
            bad("k", "> 0")
        if not (0 < self.share_target < 1):
            bad("share_target", "in (0, 1)")

    @property
    def streams(self) -> int:
        return self.parallel_links or min(self.tp_prefill, self.tp_decode)

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


def _descriptor_counts(sc: Scenario, s: np.ndarray, b: np.ndarray) -> list[np.ndarray]:
    """Descriptors per cache-carrying chunk type: (blocks × tensors) per layer per decode rank."""
    per_group = []
    for g in sc.model.groups:
        blocks = np.ceil(_held(g, s) / sc.block_tokens)
        per_group.append(blocks * g.tensors * b * sc.tp_decode)
    return per_group


def chunk_times_s(sc: Scenario, seq_len=None, batch=None) -> np.ndarray:
    """Each layer's own send time x_i (latency, bytes, descriptors, codec), shape (n, ...)."""
    s = _as_tokens(sc.seq_len if seq_len is None else seq_len, "seq_len")
    b = _as_tokens(sc.batch if batch is None else batch, "batch")
    raw = chunk_bytes(
        sc.model,
        s,
        b,
        kv_dtype=sc.kv_dtype,
        kv_scale_group=sc.kv_scale_group,
        tp_decode=sc.tp_decode,
    )
    ratio = _wire_ratio(sc)
    t = sc.link.latency_s + raw * ratio / sc.effective_bandwidth_bytes_per_s
    if ratio < 1:
        t = t + 2 * raw / (sc.codec_bytes_per_s * sc.streams)
    if sc.descriptor_s:
        counts = _descriptor_counts(sc, s, b)
        order = sc.model.attention_layer_groups()
        desc = [counts[gi] for gi in order] + [b * sc.tp_decode] * sc.model.state_layers
        # state rows were interleaved in chunk_bytes; descriptor cost per row differs only for
        # windowed groups, so attach the mean per row to keep the total exact
        total_desc = sum(np.broadcast_to(d, raw.shape[1:]) for d in desc)
        t = t + total_desc * sc.descriptor_s / sc.streams / raw.shape[0]
    return t


def transfer(sc: Scenario, seq_len=None, batch=None) -> Transfer:
    """Transfer time of ``sc``; pass arrays for ``seq_len``/``batch`` to sweep them."""
    s = _as_tokens(sc.seq_len if seq_len is None else seq_len, "seq_len")
    b = _as_tokens(sc.batch if batch is None else batch, "batch")
    kv = kv_bytes(
        sc.model,
        s,
        b,
        kv_dtype=sc.kv_dtype,
        kv_scale_group=sc.kv_scale_group,
        tp_prefill=sc.tp_prefill,
        tp_decode=sc.tp_decode,
    )
    ratio = _wire_ratio(sc)
    raw = kv.wire
    wire = raw * ratio
    ser = wire / sc.effective_bandwidth_bytes_per_s
    codec = 2 * raw / (sc.codec_bytes_per_s * sc.streams) if ratio < 1 else np.zeros_like(raw)
    if sc.descriptor_s:
        count = (
            sum(
                g.layers * c
                for g, c in zip(sc.model.groups, _descriptor_counts(sc, s, b), strict=True)
            )
            + sc.model.state_layers * b * sc.tp_decode
        )
        desc = np.broadcast_to(count * sc.descriptor_s / sc.streams, raw.shape)
    else:
        desc = np.zeros_like(raw)
    whole = sc.link.latency_s + ser + desc + codec
    prefill = prefill_time_s(sc, s, b)
    if sc.layerwise:
        x = chunk_times_s(sc, s, b)
        n = x.shape[0]
        tail = np.flip(np.cumsum(np.flip(x, 0), 0), 0)  # Σ_{i ≥ j} x_i
        ready = (np.arange(1, n + 1) / n).reshape((n,) + (1,) * (x.ndim - 1)) * prefill
        exposed = np.max(ready + tail, axis=0) - prefill
        whole = tail[0]
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


def exposed_transfer_s(sc: Scenario, seq_len) -> np.ndarray:
    return transfer(sc, seq_len=seq_len).exposed_s


def _is_linear(sc: Scenario) -> bool:
    full = all(g.window_tokens is None for g in sc.model.groups)
    return full and not sc.descriptor_s and not sc.layerwise


def critical_seq_len(sc: Scenario) -> int | None:
    """Smallest whole S with exposed transfer(S) ≥ k × decode step, or None up to max context.

    Closed form when the transfer is linear in S (full attention, no descriptor cost, sent
    whole); otherwise an integer bisection on the monotone transfer function; with layer-wise
    sending and an estimated prefill (which grows faster than the transfer and can hide it
    again) the first crossing on a 1,024-point log grid, refined by bisection.
    """
    target = sc.k * sc.decode_step_s
    max_s = sc.model.max_context_tokens

    def f(s):
        return float(exposed_transfer_s(sc, int(s)))

    if f(max_s) < target and not (sc.layerwise and sc.prefill_s is None):
        return None
    if _is_linear(sc):
        c = f(0)
        slope = f(1) - c
        guess = max(1, math.ceil((target - c) / slope))
        while guess > 1 and f(guess - 1) >= target:  # floating-point guard
            guess -= 1
        while f(guess) < target:
            guess += 1
        return guess if guess <= max_s else None
    lo, hi = 0, max_s
    if sc.layerwise and sc.prefill_s is None:
        grid = np.unique(np.geomspace(1, max_s, 1024).astype(np.int64))
        vals = exposed_transfer_s(sc, grid)
        hit = np.nonzero(vals >= target)[0]
        if hit.size == 0:
            return None
        hi = int(grid[hit[0]])
        lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0
    if f(max(lo, 1)) >= target:
        return max(lo, 1)
    while hi - lo > 1:  # invariant: f(lo) < target <= f(hi)
        mid = (lo + hi) // 2
        if f(mid) >= target:
            hi = mid
        else:
            lo = mid
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


def evaluate(sc: Scenario) -> Evaluation:
    """All headline numbers of ``sc``: bytes, transfer, TTFT, share, critical length."""
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
    if float(kv.wire) > float(kv.total) * (1 + 1e-12):
        notes.append("replicated KV heads cross the link once per decode GPU")
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
    )
