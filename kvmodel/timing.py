"""Compute-side times: a prefill estimate and a roofline lower bound for one decode step."""

from __future__ import annotations

import numpy as np

from .dtypes import kv_dtype_bytes
from .inputs import DEFAULT_MFU
from .size import _as_tokens, kv_bytes
from .specs import GpuSpec, ModelSpec

DEFAULT_WEIGHT_BYTES = 2.0  # BF16 weights


def _held_sum(seq_len: np.ndarray, window: int | None) -> np.ndarray:
    """Σ_{t=1..S} min(t, W): key positions a causal layer attends to over a whole prefill."""
    s = seq_len
    if window is None:
        return s * (s + 1) / 2
    w = float(window)
    return np.where(s <= w, s * (s + 1) / 2, w * (w + 1) / 2 + (s - w) * w)


def prefill_flops(model: ModelSpec, seq_len, batch=1) -> np.ndarray:
    """FLOPs of one prefill [FLOP].

    Dense part ``2 × active_params × S × B`` plus the attention part: per attention layer and
    query head, QKᵀ and PV cost ``2 × head_dim_qk`` FLOPs each per (query, key) pair, over
    ``Σ_t min(t, window)`` causal pairs.
    """
    s = _as_tokens(seq_len, "seq_len")
    b = _as_tokens(batch, "batch")
    dense = 2.0 * model.params_active * s * b
    attn = sum(
        g.layers * 4.0 * model.q_heads * model.head_dim_qk * _held_sum(s, g.window_tokens)
        for g in model.groups
    )
    return dense + attn * b


def estimate_prefill_s(
    model: ModelSpec, seq_len, batch=1, *, gpu: GpuSpec, tp: int = 1, mfu: float = DEFAULT_MFU
) -> np.ndarray:
    """Prefill time ≈ prefill_flops ÷ (dense BF16 FLOP/s × TP × MFU) [s]."""
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    return prefill_flops(model, seq_len, batch) / (gpu.bf16_flops * tp * mfu)


def decode_step_lower_bound_s(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    kv_dtype: str = "fp16",
    weight_bytes: float = DEFAULT_WEIGHT_BYTES,
) -> np.ndarray:
    """Roofline lower bound of one decode step [s].

    ``max(memory, compute)`` where memory = (active params × weight_bytes + KV of the batch) ÷
    (HBM bandwidth × TP) and compute = 2 × active params × B ÷ (dense BF16 FLOP/s × TP).  It
    ignores communication between TP ranks, kernel launch gaps and MoE expert spread (a batch
    touches more than the active experts), so real steps are 2-4× longer.
    """
    kv_dtype_bytes(kv_dtype)  # validate early
    b = _as_tokens(batch, "batch")
    kv = kv_bytes(model, seq_len, b, kv_dtype=kv_dtype).total
    memory_s = (model.params_active * weight_bytes + kv) / (gpu.hbm_bytes_per_s * tp)
    compute_s = 2.0 * model.params_active * b / (gpu.bf16_flops * tp)
    return np.maximum(memory_s, compute_s)
