"""How many bytes of KV cache one prefill produces, per GPU and on the wire.

Full-attention layers hold every token; sliding-window and chunked layers hold at most their
window (chunk) of tokens; Mamba / linear-attention layers hold a constant state per request.
All functions accept numpy arrays or scalars for ``seq_len`` and ``batch`` and broadcast them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from .dtypes import kv_dtype_bytes
from .specs import AttentionGroup, ModelSpec


def as_tokens(value, name: str) -> np.ndarray:
    if isinstance(value, (int, float, np.number)) and not isinstance(value, (bool, np.bool_)):
        return _scalar_tokens(value, name)  # the common case, without numpy's reductions
    arr = np.asarray(value)
    if arr.ndim == 0 and arr.dtype.kind in "iuf":
        return _scalar_tokens(arr.item(), name)
    if arr.dtype.kind not in "iuf" or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be a number of tokens, got {value!r}")
    if np.any(arr < 0) or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return arr.astype(np.float64)


def _scalar_tokens(value, name: str) -> np.ndarray:
    v = float(value)
    if not math.isfinite(v):
        raise ValueError(f"{name} must be a number of tokens, got {value!r}")
    if v < 0 or v != math.floor(v):
        raise ValueError(f"{name} must be a whole number >= 0, got {value!r}")
    return np.float64(v)  # a numpy scalar: arithmetic on it is ~10x cheaper than on a 0-d array


def window_held(group: AttentionGroup, s: np.ndarray) -> np.ndarray:
    return s if group.window_tokens is None else np.minimum(s, group.window_tokens)


def held_tokens(group: AttentionGroup, seq_len) -> np.ndarray:
    """Tokens a layer of ``group`` keeps after a prefill of ``seq_len`` tokens."""
    return window_held(group, as_tokens(seq_len, "seq_len"))


def shard_heads(kv_heads: int, tp: int, name: str = "tp") -> int:
    """KV heads held by one GPU at tensor parallelism ``tp``.

    ``kv_heads // tp`` when tp divides the heads; one (replicated) head when tp exceeds them, as
    vLLM does.  Other combinations are rejected, naming the value ``name`` (``tp_decode`` for
    the decode side's).
    """
    if isinstance(tp, bool) or not isinstance(tp, (int, np.integer)) or tp < 1:
        raise ValueError(f"{name} must be a whole number >= 1, got {tp!r}")
    if tp <= kv_heads:
        if kv_heads % tp:
            raise ValueError(
                f"{name}={tp} does not divide the {kv_heads} KV heads; use a divisor of {kv_heads} "
                f"or a multiple of it"
            )
        return kv_heads // tp
    if tp % kv_heads:
        raise ValueError(
            f"{name}={tp} exceeds the {kv_heads} KV heads but is not a multiple of {kv_heads}"
        )
    return 1


def splits_heads(model, tp: int) -> bool:
    """``tp`` GPUs split every KV-head group of ``model`` (:func:`shard_heads` accepts each):
    a divisor or a multiple of every group's KV heads."""
    try:
        for g in model.groups:
            shard_heads(g.kv_heads, tp)
    except ValueError:
        return False
    return True


@dataclass(frozen=True)
class KVBytes:
    """KV bytes of one scenario; every field broadcasts over seq_len × batch [bytes]."""

    total: np.ndarray  # all unique KV of the batch at the storage dtype
    state: np.ndarray  # constant per-request state (Mamba / linear attention) in ``total``
    per_gpu_prefill: np.ndarray  # one prefill GPU's shard
    per_gpu_decode: np.ndarray  # what one decode GPU must receive
    wire: np.ndarray  # what crosses the link, before transfer compression
    per_token: np.ndarray  # total ÷ (seq_len × batch); NaN at seq_len 0
    per_attention_layer: np.ndarray  # attention KV ÷ attention layers (mean over layers)


def layer_elements(model: ModelSpec, seq_len) -> list[np.ndarray]:
    """Cached values per request for one layer of each attention group."""
    return _layer_elements(model, as_tokens(seq_len, "seq_len"))


def _layer_elements(model: ModelSpec, s: np.ndarray) -> list[np.ndarray]:
    return [g.elements_per_token_per_layer * window_held(g, s) for g in model.groups]


def kv_bytes(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    kv_dtype: str = "fp16",
    kv_scale_group: int = 0,
    tp_prefill: int = 1,
    tp_decode: int = 1,
) -> KVBytes:
    """KV bytes produced by prefilling ``batch`` requests of ``seq_len`` tokens.

    Full attention, GQA/MHA/MQA: ``L × H_kv × (D_k + D_v) × S × B × dtype_bytes`` (with
    D_k = D_v this is the familiar 2 × L × H_kv × D × S × B × dtype_bytes).  MLA caches one latent
    of ``kv_lora_rank + qk_rope_head_dim`` values per layer per token (D_v = 0, H_kv = 1).
    Windowed layers use ``min(S, window)`` tokens.  State layers add a constant per request.

    Tensor parallelism: a GPU holds ``shard_heads(H_kv, tp)`` heads of each layer.  Each decode
    GPU must receive its own shard, so the wire carries ``per_gpu_decode × tp_decode`` bytes:
    equal to ``total`` unless heads are replicated (tp_decode > H_kv, or MLA's single latent),
    in which case the replicas cross the link too.  State is split evenly over the TP ranks.
    """
    b = as_tokens(batch, "batch")
    dbytes = kv_dtype_bytes(kv_dtype, scale_group=kv_scale_group)
    s = as_tokens(seq_len, "seq_len")
    if s.ndim == 0 and b.ndim == 0:
        return _kv_bytes_scalar(model, float(s), float(b), dbytes, tp_prefill, tp_decode)
    shape = np.broadcast_shapes(s.shape, b.shape)
    attn = shard_p = shard_d = np.zeros(shape)
    for g, elems in zip(model.groups, _layer_elements(model, s), strict=True):
        per_head = g.layers * elems / g.kv_heads * b * dbytes
        attn = attn + per_head * g.kv_heads
        shard_p = shard_p + per_head * shard_heads(g.kv_heads, tp_prefill)
        shard_d = shard_d + per_head * shard_heads(g.kv_heads, tp_decode, "tp_decode")
    state = np.broadcast_to(model.state_layers * model.state_bytes_per_layer * b, shape)
    total = attn + state
    tokens = s * b
    per_token = np.divide(total, tokens, out=np.full(shape, np.nan), where=tokens > 0)
    per_gpu_d = shard_d + state / tp_decode
    return KVBytes(
        total=total,
        state=np.asarray(state, dtype=float),
        per_gpu_prefill=shard_p + state / tp_prefill,
        per_gpu_decode=per_gpu_d,
        wire=per_gpu_d * tp_decode,
        per_token=per_token,
        per_attention_layer=attn / model.attention_layers,
    )


def _kv_bytes_scalar(
    model: ModelSpec, s: float, b: float, dbytes: float, tp_prefill: int, tp_decode: int
) -> KVBytes:
    """``kv_bytes`` for one (S, B) in plain floats: the same operations in the same order (so
    the same IEEE results) without numpy's per-operation overhead on 0-d arrays."""
    attn = shard_p = shard_d = 0.0
    for g in model.groups:
        held = s if g.window_tokens is None else min(s, float(g.window_tokens))
        per_head = g.layers * (g.elements_per_token_per_layer * held) / g.kv_heads * b * dbytes
        attn = attn + per_head * g.kv_heads
        shard_p = shard_p + per_head * shard_heads(g.kv_heads, tp_prefill)
        shard_d = shard_d + per_head * shard_heads(g.kv_heads, tp_decode, "tp_decode")
    state = model.state_layers * model.state_bytes_per_layer * b
    total = attn + state
    tokens = s * b
    per_gpu_d = shard_d + state / tp_decode
    f = np.float64
    return KVBytes(
        total=f(total),
        state=f(state),
        per_gpu_prefill=f(shard_p + state / tp_prefill),
        per_gpu_decode=f(per_gpu_d),
        wire=f(per_gpu_d * tp_decode),
        per_token=f(total / tokens if tokens > 0 else np.nan),
        per_attention_layer=f(attn / model.attention_layers),
    )


def bytes_per_token_full(model: ModelSpec, *, kv_dtype: str = "fp16") -> float:
    """KV bytes per token while every layer still holds all tokens (S ≤ the smallest window).

    This is the slope people quote ("327,680 bytes per token" for Llama-3-70B in FP16).
    """
    dbytes = kv_dtype_bytes(kv_dtype)
    return float(sum(g.layers * g.elements_per_token_per_layer for g in model.groups) * dbytes)


def chunk_bytes(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    kv_dtype: str = "fp16",
    kv_scale_group: int = 0,
    tp_decode: int = 1,
) -> np.ndarray:
    """Wire bytes (before compression) of each cache-carrying layer, in model order.

    Shape ``(n_layers, *broadcast(seq_len, batch).shape)`` where n_layers counts attention
    layers and state layers.  State layers are spread evenly among the attention layers.
    Sums to ``kv_bytes(...).wire``.
    """
    rows = chunk_kind_bytes(
        model, seq_len, batch, kv_dtype=kv_dtype, kv_scale_group=kv_scale_group, tp_decode=tp_decode
    )
    return rows[np.asarray(chunk_rows(model))]


def chunk_kind_bytes(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    kv_dtype: str = "fp16",
    kv_scale_group: int = 0,
    tp_decode: int = 1,
) -> np.ndarray:
    """Wire bytes of one layer of each kind: a row per attention group, then one state row when
    the model has state layers.  ``chunk_bytes`` is these rows taken in ``chunk_rows`` order."""
    b = as_tokens(batch, "batch")
    s = as_tokens(seq_len, "seq_len")
    dbytes = kv_dtype_bytes(kv_dtype, scale_group=kv_scale_group)
    shape = np.broadcast(s, b).shape
    rows = [
        np.broadcast_to(
            elems / g.kv_heads * shard_heads(g.kv_heads, tp_decode, "tp_decode") * tp_decode * b
            * dbytes,
            shape,
        )
        for g, elems in zip(model.groups, _layer_elements(model, s), strict=True)
    ]
    if model.state_layers:
        rows.append(np.broadcast_to(model.state_bytes_per_layer * b, shape).astype(float))
    return np.stack(rows)


@lru_cache(maxsize=256)
def chunk_runs(model: ModelSpec) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of one kind in ``chunk_rows``: (kind, first layer, last layer) per run.

    Read-only arrays.  A Llama-style model is one run of 80 layers; Gemma-3's 5 local : 1
    global pattern is many short runs.
    """
    rows = np.asarray(chunk_rows(model))
    change = np.flatnonzero(np.diff(rows)) + 1
    starts = np.concatenate([[0], change])
    ends = np.concatenate([change - 1, [len(rows) - 1]])
    out = (rows[starts], starts, ends)
    for arr in out:
        arr.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def chunk_rows(model: ModelSpec) -> tuple[int, ...]:
    """Group index of each cache-carrying layer in model order (``len(groups)`` = a state layer).

    Attention layers follow ``attention_layer_groups``; state layers are spread evenly among
    them (at equal depth a state layer comes first).
    """
    order = model.attention_layer_groups()
    if not model.state_layers:
        return tuple(order)
    n_attn = len(order)
    slots = [((k + 0.5) / n_attn, k, gi) for k, gi in enumerate(order)]
    slots += [
        ((k + 0.5) / model.state_layers, -1, len(model.groups)) for k in range(model.state_layers)
    ]
    return tuple(gi for _, _, gi in sorted(slots))


def valid_tp(model: ModelSpec, max_tp: int = 64) -> list[int]:
    """Tensor-parallel sizes up to ``max_tp`` that every attention group of ``model`` allows."""
    out = []
    for tp in range(1, max_tp + 1):
        try:
            for g in model.groups:
                shard_heads(g.kv_heads, tp)
        except ValueError:
            continue
        out.append(tp)
    return out
