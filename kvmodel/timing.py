"""Compute-side times: prefill and one decode step, estimated from the model, GPU and TP.

Both estimates are a roofline plus the costs a roofline leaves out, fitted on measured serving
runs (docs/model.md, "Fidelity"; ``bench/fit_compute.py`` refits them from ``data/fidelity``):

    prefill     = floor × layers + FLOPs ÷ (peak × TP × MFU × TP^(−a))
    decode step = floor × layers + max(bytes read ÷ (HBM × TP × e), FLOPs ÷ (peak × TP × ½))
                  + [TP > 1] × all-reduce × layers

The per-layer floors are the launches, scheduling and sampling of a real engine; the prefill
MFU falls with TP (communication and smaller GEMMs per GPU); FP8 checkpoints read one byte per
weight and compute at the GPU's FP8 rate.  ``decode_step_lower_bound_s`` is the bare roofline.
"""

from __future__ import annotations

import numpy as np

from .dtypes import kv_dtype_bytes
from .inputs import DEFAULT_MFU
from .size import as_tokens, kv_bytes
from .specs import WEIGHT_DTYPE_BYTES, GpuSpec, ModelSpec

DEFAULT_WEIGHT_BYTES = 2.0  # BF16 weights

# Fitted on Llama-3.1-70B FP8 served by vLLM on H100 and H200 (14 prefill, 35 decode points of
# aiconfigurator-core's measured silicon_sample.csv); every other point is held out.
# docs/model.md's fidelity table gives both errors.
PREFILL_FLOOR_S_PER_LAYER = 0.542e-3
PREFILL_MFU_TP_EXPONENT = 0.214  # MFU × TP^(−a): 0.50 at TP 1, 0.32 at TP 8
DECODE_FLOOR_S_PER_LAYER = 57.3e-6
DECODE_HBM_EFFICIENCY = 0.911
DECODE_ALLREDUCE_S_PER_LAYER = 17.8e-6
DECODE_MFU = 0.5  # the compute side of a large decode batch


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
    s = as_tokens(seq_len, "seq_len")
    b = as_tokens(batch, "batch")
    dense = 2.0 * model.params_active * s * b
    attn = sum(
        g.layers * 4.0 * model.q_heads * model.head_dim_qk * _held_sum(s, g.window_tokens)
        for g in model.groups
    )
    return dense + attn * b


def peak_flops(gpu: GpuSpec, weight_dtype: str) -> float:
    """Dense FLOP/s the GEMMs run at: FP8 for an FP8 (or narrower) checkpoint on a GPU with FP8."""
    narrow = WEIGHT_DTYPE_BYTES.get(weight_dtype, 2.0) <= 1.0
    return gpu.fp8_flops if narrow and gpu.fp8_flops else gpu.bf16_flops


def estimate_prefill_s(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    mfu: float = DEFAULT_MFU,
    weight_dtype: str | None = None,
) -> np.ndarray:
    """Prefill of ``batch`` requests of ``seq_len`` tokens [s]: a per-layer floor plus
    prefill_flops ÷ (peak × TP × MFU × TP^(−a)).  ``weight_dtype``: the checkpoint's by default."""
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    peak = peak_flops(gpu, weight_dtype or model.weight_dtype)
    util = mfu * float(tp) ** -PREFILL_MFU_TP_EXPONENT
    floor = PREFILL_FLOOR_S_PER_LAYER * model.layers
    return floor + prefill_flops(model, seq_len, batch) / (peak * tp * util)


def weights_read_bytes(model: ModelSpec, batch, weight_dtype: str | None = None) -> np.ndarray:
    """Weight bytes one decode step reads [bytes].

    Dense models read every weight.  An MoE reads its active parameters for one request and
    more experts as the batch grows: the non-active part is read with probability
    1 − (1 − f)^B, f = the active share of the expert weights (experts drawn independently; an
    approximation, not fitted: the measured points hold too few MoE decode steps).
    """
    wbytes = WEIGHT_DTYPE_BYTES[weight_dtype or model.weight_dtype]
    total, active = model.params_total, model.params_active
    if active >= total:
        return np.asarray(total * wbytes, dtype=float) * np.ones_like(np.asarray(batch, float))
    f = active / total
    touched = 1.0 - (1.0 - f) ** np.asarray(batch, dtype=float)
    return (active + (total - active) * touched) * wbytes


def estimate_decode_step_s(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    kv_dtype: str = "fp16",
    weight_dtype: str | None = None,
) -> np.ndarray:
    """One decode step of ``batch`` requests holding ``seq_len`` tokens each [s] (module doc)."""
    b = as_tokens(batch, "batch")
    kv = kv_bytes(model, seq_len, b, kv_dtype=kv_dtype).total
    memory_s = (weights_read_bytes(model, b, weight_dtype) + kv) / (
        gpu.hbm_bytes_per_s * tp * DECODE_HBM_EFFICIENCY
    )
    peak = peak_flops(gpu, weight_dtype or model.weight_dtype)
    compute_s = 2.0 * model.params_active * b / (peak * tp * DECODE_MFU)
    layers = model.layers
    comm = DECODE_ALLREDUCE_S_PER_LAYER * layers if tp > 1 else 0.0
    return DECODE_FLOOR_S_PER_LAYER * layers + np.maximum(memory_s, compute_s) + comm


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
    b = as_tokens(batch, "batch")
    kv = kv_bytes(model, seq_len, b, kv_dtype=kv_dtype).total
    memory_s = (model.params_active * weight_bytes + kv) / (gpu.hbm_bytes_per_s * tp)
    compute_s = 2.0 * model.params_active * b / (gpu.bf16_flops * tp)
    return np.maximum(memory_s, compute_s)
