"""GPU memory: do the weights fit, and how many requests of this length one instance holds.

Per GPU of an instance at tensor parallelism ``tp``:

    weights  = params_total × bytes_per_weight ÷ tp           (every expert of an MoE is held)
    usable   = memory × USABLE_FRACTION − weights              (vLLM's gpu_memory_utilization)
    requests = ⌊usable ÷ KV of one request on one GPU⌋          (tensor-parallel attention)
             = tp × ⌊usable ÷ KV of one request⌋                (data-parallel attention: each
                                                                request lives on one rank)

With expert parallelism over ``ep`` GPUs (MoE models; DP attention) the instance has ``ep``
GPUs in ``ep ÷ tp`` attention groups of ``tp`` GPUs:

    weights  = (params_total − routed experts) × bytes ÷ tp  +  routed experts × bytes ÷ ep
    requests = (ep ÷ tp) × the requests one attention group holds (as above)

Activations, CUDA graphs and the framework's own buffers come out of the 10 % left over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .size import kv_bytes
from .specs import WEIGHT_DTYPE_BYTES, GpuSpec, ModelSpec

USABLE_FRACTION = 0.9  # vLLM's default gpu_memory_utilization; SGLang's mem_fraction_static ≈ 0.88


def weights_bytes_per_gpu(model: ModelSpec, tp: int, ep: int = 1) -> float:
    """Weight bytes one GPU holds at tensor parallelism ``tp`` and expert parallelism ``ep``
    [bytes]: the routed experts split over ``ep`` GPUs, the rest (attention, shared experts,
    embeddings) over ``tp`` (module doc)."""
    wb = WEIGHT_DTYPE_BYTES[model.weight_dtype]
    if ep <= 1:
        return model.params_total * wb / tp
    routed = model.routed_expert_params
    return (model.params_total - routed) * wb / tp + routed * wb / ep


@dataclass(frozen=True)
class Memory:
    """Memory of one instance (prefill or decode) for a scenario [bytes]."""

    weights_bytes_per_gpu: float
    usable_bytes_per_gpu: float  # after weights: what the KV cache may take
    kv_bytes_per_request_per_gpu: float  # one request at the scenario's length
    max_concurrent_requests: int  # requests of this length the instance holds
    batch: int

    @property
    def weights_fit(self) -> bool:
        return self.usable_bytes_per_gpu > 0

    @property
    def fits(self) -> bool:
        return self.weights_fit and self.batch <= self.max_concurrent_requests


def instance_memory(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    tp: int,
    seq_len: int,
    batch: int,
    kv_dtype: str,
    kv_scale_group: int = 0,
    data_parallel_attention: bool = False,
    ep: int = 1,
) -> Memory:
    """Memory of an instance of ``tp`` GPUs (``ep`` with expert parallelism) holding ``batch``
    requests of ``seq_len`` tokens."""
    weights = weights_bytes_per_gpu(model, tp, ep)
    groups = max(1, ep // tp)  # attention groups (data-parallel ranks of tp GPUs)
    usable = gpu.memory_bytes * USABLE_FRACTION - weights
    kv = kv_bytes(
        model,
        seq_len,
        1,
        kv_dtype=kv_dtype,
        kv_scale_group=kv_scale_group,
        tp_prefill=tp,
        tp_decode=1 if data_parallel_attention else tp,
    )
    if data_parallel_attention:
        per_request = float(kv.total)  # the whole request on one rank
        slots = math.floor(usable / per_request) * tp if usable > 0 else 0
    else:
        per_request = float(kv.per_gpu_decode)
        slots = math.floor(usable / per_request) if usable > 0 else 0
    return Memory(
        weights_bytes_per_gpu=weights,
        usable_bytes_per_gpu=usable,
        kv_bytes_per_request_per_gpu=per_request,
        max_concurrent_requests=max(0, slots) * groups,
        batch=int(batch),
    )


def memory_notes(sc, prefill: Memory, decode: Memory) -> list[str]:
    """Plain-language warnings when a scenario does not fit (empty when it does)."""
    notes = []
    for side, mem, tp in (("prefill", prefill, sc.tp_prefill), ("decode", decode, sc.tp_decode)):
        ep = sc.ep_prefill if side == "prefill" else sc.ep_decode
        gpu = sc.gpu if side == "prefill" else sc.decode_gpu  # decode may run on its own GPU
        if not mem.weights_fit:
            notes.append(
                f"the weights do not fit on the {side} GPUs: {sc.model.name} needs "
                f"{mem.weights_bytes_per_gpu / 1e9:,.1f} GB per GPU at TP {tp}"
                f"{f', EP {ep}' if ep > 1 else ''} "
                f"({sc.model.weight_dtype}), {gpu.name} offers "
                f"{gpu.memory_bytes * USABLE_FRACTION / 1e9:,.1f} GB usable"
            )
        elif not mem.fits:
            notes.append(
                f"the {side} instance holds at most {mem.max_concurrent_requests:,} requests of "
                f"{sc.seq_len:,} tokens; the batch of {sc.batch:,} does not fit in memory"
            )
    return notes
