"""Compute-side times: prefill and one decode step, built from their parts (``kvmodel.steps``).

    decode step = framework floor + kernel floor × layers + (memory^p + compute^p)^(1/p)
                  + TP all-reduce + EP dispatch/combine
    prefill     = kernel floor × layers + (weights^p + FLOPs^p)^(1/p) + TP all-reduce
                  + EP dispatch/combine

memory = weights read + KV read at the context, over the GPU's achievable HBM bandwidth;
compute = GEMM FLOPs (FP8 for an FP8 checkpoint) + attention FLOPs (GQA/MHA, or MLA's absorbed
attention), over the GPU's achievable FLOP/s.  Every term is per GPU of one instance (``tp``
GPUs, or ``ep`` with expert parallelism and data-parallel attention).  ``*_parts`` return the
terms; ``estimate_*`` their sums (docs/model.md, fidelity: ``bench/fit_compute.py`` refits the
constants).  ``decode_step_lower_bound_s`` is the bare roofline.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

import numpy as np

from . import steps
from .dtypes import kv_dtype_bytes
from .frameworks import FrameworkSpec
from .inputs import DEFAULT_FRAMEWORK, DEFAULT_MFU
from .size import as_tokens, kv_bytes
from .specs import WEIGHT_DTYPE_BYTES, GpuSpec, ModelSpec

DEFAULT_WEIGHT_BYTES = 2.0  # BF16 weights

# Kept for callers that size pools from the old terms (kvmodel.capacity): the decode batch's
# GEMM utilisation and the prefill's per-layer floor.
DECODE_MFU = 0.5
PREFILL_FLOOR_S_PER_LAYER = steps.PREFILL_KERNEL_S_PER_LAYER


def _held_sum(seq_len: np.ndarray, window: int | None) -> np.ndarray:
    """Σ_{t=1..S} min(t, W): key positions a causal layer attends to over a whole prefill."""
    s = seq_len
    if window is None:
        return s * (s + 1) / 2
    w = float(window)
    return np.where(s <= w, s * (s + 1) / 2, w * (w + 1) / 2 + (s - w) * w)


def prefill_flops(model: ModelSpec, seq_len, batch=1, prefix=None) -> np.ndarray:
    """FLOPs of one prefill [FLOP].

    Dense part ``2 × active_params × S × B`` plus the attention part: per attention layer and
    query head, QKᵀ and PV cost ``2 × head_dim_qk`` FLOPs each per (query, key) pair, over
    ``Σ_t min(t, window)`` causal pairs.  ``prefix``: tokens a prefix cache already holds
    before the ``S`` computed ones (None or 0: none); the computed tokens attend to them too,
    so the pairs are those of positions ``prefix + 1 … prefix + S``.  Attention is linear in
    the prefix without a window, so a mean prefix gives the mean FLOPs exactly.
    """
    s = as_tokens(seq_len, "seq_len")
    b = as_tokens(batch, "batch")
    dense = 2.0 * model.params_active * s * b
    c = None if prefix is None else np.asarray(prefix, dtype=float)

    def pairs(w):
        if c is None:
            return _held_sum(s, w)
        return _held_sum(s + c, w) - _held_sum(c, w)

    attn = sum(g.layers * 4.0 * model.q_heads * model.head_dim_qk * pairs(g.window_tokens)
               for g in model.groups)  # fmt: skip
    return dense + attn * b


def peak_flops(gpu: GpuSpec, weight_dtype: str) -> float:
    """Dense FLOP/s the GEMMs run at: FP8 for an FP8 (or narrower) checkpoint on a GPU with FP8."""
    narrow = WEIGHT_DTYPE_BYTES.get(weight_dtype, 2.0) <= 1.0
    return gpu.fp8_flops if narrow and gpu.fp8_flops else gpu.bf16_flops


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


def _framework(framework) -> FrameworkSpec:
    from . import catalog

    return framework if isinstance(framework, FrameworkSpec) else catalog.get_framework(framework)


def scaleup_links(kind: str, gpus: int, domain: int) -> int:
    """The scale-up links one GPU drives at once in a collective of ``gpus`` GPUs: one into a
    switch (NVLink through NVSwitch, PCIe), one per peer on a full mesh (kind ``fabric``: AMD
    Infinity Fabric joins each pair of an 8-GPU MI300X platform by its own link, 7 per GPU:
    AMD CDNA 3 architecture white paper; AMD ROCm blog "Understanding RCCL Bandwidth and xGMI
    Performance on AMD Instinct MI300X", 2025), so an all-reduce or all-to-all over ``gpus``
    peers in the ``domain`` moves over ``gpus − 1`` links in parallel."""
    if kind != "fabric":
        return 1
    return max(1, min(gpus, domain) - 1)


@lru_cache(maxsize=64)
def link_rates(gpu: GpuSpec, gpus: int) -> tuple[float, float]:
    """(ring, scale-out) bytes/s per direction one GPU of a ``gpus``-GPU group has in a
    collective, and its NICs' share.

    Within one NVLink domain the ring runs on the GPU's NVLink (a mesh's links to the group's
    peers, :func:`scaleup_links`).  Across domains it still moves every byte over NVLink inside
    each domain, and between domains over all of a domain's NICs at once: NCCL splits a ring
    all-reduce into channels and crosses each channel between nodes on a NIC of its own, so a
    ring of ``n`` GPUs moves ``2 (n−1)/n × bytes`` through the slower of the GPU's NVLink and
    its domain's NICs together (NICs per GPU × the domain's GPUs)."""
    from . import catalog

    nic = catalog.get_link(gpu.nic).bandwidth_bytes_per_s * gpu.nics_per_node / gpu.gpus_per_node
    link = catalog.get_link(gpu.nvlink)
    up = link.bandwidth_bytes_per_s * scaleup_links(link.kind, gpus, gpu.nvlink_domain_gpus)
    if gpus <= gpu.nvlink_domain_gpus:
        return up, nic
    return min(up, nic * gpu.nvlink_domain_gpus), nic


def decode_attention_flops_per_token(model: ModelSpec, seq_len) -> np.ndarray:
    """Attention FLOPs of one decode token over all layers at ``seq_len`` tokens of context.

    GQA/MHA: per layer and query head QKᵀ and PV cost 2 × (D_k + D_v) per cached token.  MLA's
    absorbed attention scores and sums over the latent itself (kv_lora_rank + rope dims, the
    cached ``k_head_dim``): 2 × heads × (kv_lora_rank + rope) × 2 per cached token.  Windowed
    layers see at most their window.
    """
    s = np.asarray(seq_len, dtype=float)
    out = np.zeros_like(s)
    for g in model.groups:
        ctx = s if g.window_tokens is None else np.minimum(s, float(g.window_tokens))
        dims = g.k_head_dim + (g.v_head_dim or g.k_head_dim)
        out = out + g.layers * 2.0 * model.q_heads * dims * ctx
    return out


def routed_share(model: ModelSpec) -> float:
    """The share of routed expert weights one token reads: top-k ÷ experts (else the active
    share of all parameters, for a model whose expert counts are unknown)."""
    if model.experts and model.experts_per_token:
        return model.experts_per_token / model.experts
    return model.params_active / model.params_total


# Per-GPU expert width at which grouped MoE GEMMs reach half their wide-slice rate
# (aiconfigurator-core 0.12.0 moe_perf.parquet: one knee fits H100, H200, B200, GB200, L40S).
MOE_GEMM_HALF_WIDTH = 300.0


def expert_width_per_gpu(model: ModelSpec, *, tp: int = 1, ep: int = 1) -> float:
    """Columns of one routed expert's FFN that one GPU holds [count]: the expert's intermediate
    size (routed weights ÷ experts ÷ layers ÷ 3 × hidden: gate, up and down) split over the TP
    ranks that share an expert (``max(tp, ep) ÷ ep``; whole experts with EP ≥ TP)."""
    if not model.experts or model.routed_expert_params <= 0:
        return 0.0
    per_expert = model.routed_expert_params / model.experts / model.layers / (3 * model.hidden)
    return per_expert * max(ep, 1) / max(tp, ep, 1)


def routed_gemm_flops(model: ModelSpec, gpu: GpuSpec, weight_dtype: str, *, tp: int = 1,
                      ep: int = 1, efficiency: float | None = None) -> float:  # fmt: skip
    """FLOP/s the routed experts' grouped GEMMs run at [FLOP/s].

    The dense rate (peak × ``efficiency``, the GPU's ``flops_efficiency`` by default) or,
    lower, the rate grouped MoE kernels sustain at the expert's width per GPU: narrow slices
    give each tile too little work, so the SM array, not the tensor peak, sets the pace,
    ``moe_gemm_flops × w ÷ (w + MOE_GEMM_HALF_WIDTH)`` (data/gpus.csv; block-FP8 and BF16
    kernels alike reach it).  A GPU without a measured ``moe_gemm_flops`` runs them at the
    dense rate.
    """
    eff = gpu.flops_efficiency if efficiency is None else efficiency
    dense = peak_flops(gpu, weight_dtype) * min(eff, 1.0)
    width = expert_width_per_gpu(model, tp=tp, ep=ep)
    if gpu.moe_gemm_flops is None or width <= 0:
        return dense
    scale = min(eff / gpu.flops_efficiency, 1.0)  # a lowered MFU lowers this rate alike
    return min(dense, gpu.moe_gemm_flops * scale * width / (width + MOE_GEMM_HALF_WIDTH))


def routed_slowdown_s_per_token(model: ModelSpec, gpu: GpuSpec, weight_dtype: str, *,
                                gpus: int, tp: int = 1, ep: int = 1,
                                efficiency: float | None = None) -> float:  # fmt: skip
    """Time one prompt token's routed-expert GEMMs take beyond the dense rate, on one of
    ``gpus`` GPUs [s/token]: 2 × top-k ÷ E of the routed weights, at
    :func:`routed_gemm_flops` instead of the dense rate (0 for a dense model or a GPU without
    a measured ``moe_gemm_flops``).

    Prompt tokens only (a prefill pass, a chunk riding a decode step): the kernel tables
    behind ``moe_gemm_flops`` hold passes of thousands of tokens.  A decode step's few tokens
    per expert are bound by reading the experts' weights (``MOE_READ_EFFICIENCY``) instead."""
    if not model.experts or gpu.moe_gemm_flops is None:
        return 0.0
    eff = gpu.flops_efficiency if efficiency is None else efficiency
    dense = peak_flops(gpu, weight_dtype) * min(eff, 1.0)
    routed = routed_gemm_flops(model, gpu, weight_dtype, tp=tp, ep=ep, efficiency=eff)
    flops = 2.0 * model.routed_expert_params * routed_share(model) / gpus
    return flops * (1.0 / routed - 1.0 / dense)


def padded_grouped_gemm_s(model: ModelSpec, gpu: GpuSpec, tokens, weight_dtype: str, *,
                          tp: int = 1, ep: int = 1, alignment: int = 128):  # fmt: skip
    """Time a contiguous-layout grouped GEMM spends on padding rows for ``tokens`` tokens of
    one attention group [s].

    DeepGEMM's contiguous layout gives every local expert a segment of whole ``alignment``-row
    blocks; sized without the per-expert counts on the host, it holds the worst case,
    ``round_up(tokens × k + E_local × (alignment − 1), alignment)`` rows, and computes them all
    (vllm-project/vllm ``fused_moe/deep_gemm_utils.py``, ``compute_aligned_M``).  The rows
    beyond ``tokens × k`` cost the routed FFN's FLOPs (gate, up, down: ``2 × 3 × hidden ×``
    the expert's columns per GPU) in every layer, at the dense rate (whole blocks tile fully).
    Only :mod:`kvmodel.fidelity` uses it, for the runs of the vLLM releases that took this path
    (``fidelity.DEEPGEMM_MOE_VERSIONS``)."""
    if not model.experts or model.routed_expert_params <= 0:
        return np.zeros(np.shape(tokens))
    t = np.asarray(tokens, dtype=float)
    k = model.experts_per_token or 1
    local = model.experts / max(ep, 1)
    rows = np.ceil((t * k + local * (alignment - 1)) / alignment) * alignment - t * k
    width = expert_width_per_gpu(model, tp=tp, ep=ep)
    flops = rows * 2.0 * 3 * model.hidden * width * model.layers
    return flops / (peak_flops(gpu, weight_dtype) * gpu.flops_efficiency)


def weights_read_bytes_per_gpu(model: ModelSpec, tokens, *, tp: int = 1, ep: int = 1,
                               weight_dtype: str | None = None) -> np.ndarray:  # fmt: skip
    """Weight bytes one GPU reads for ``tokens`` tokens in one pass [bytes].

    Everything but the routed experts, split over ``tp``; of the routed experts (split over
    ``max(tp, ep)`` GPUs) the share the tokens touch, each expert with probability
    1 − (1 − top_k/E)^tokens (experts drawn independently: an approximation), counted at
    ``1 ÷ steps.MOE_READ_EFFICIENCY`` (grouped MoE kernels read slower than dense GEMMs): the
    HBM time of the weights, in bytes at the GPU's dense-read efficiency.
    """
    wb = WEIGHT_DTYPE_BYTES[weight_dtype or model.weight_dtype]
    t = np.asarray(tokens, dtype=float)
    routed = model.routed_expert_params
    if routed <= 0:
        return np.ones_like(t) * model.params_total * wb / tp
    touched = 1.0 - (1.0 - routed_share(model)) ** t
    experts = routed * touched / max(tp, ep) / steps.MOE_READ_EFFICIENCY
    return ((model.params_total - routed) / tp + experts) * wb


def _comm_s(model, gpu, tokens_group, *, tp: int, ep: int, per_node: bool = False):
    """TP all-reduce and EP dispatch/combine of one pass [s] (``kvmodel.steps``; ``per_node``:
    a prefill pass's exchange, one copy per destination node, ``steps.ep_exchange_s``)."""
    gpus = max(tp, ep)
    up_tp, _ = link_rates(gpu, tp)
    up_ep, nic = link_rates(gpu, gpus)
    ar_bytes = np.asarray(tokens_group, dtype=float) * model.hidden * steps.ACTIVATION_BYTES
    allreduce = steps.ring_allreduce_s(
        ar_bytes, tp, up_tp, model.layers * (1 if ep > 1 else 2), gpu.nvlink_domain_gpus,
        efficiency=steps.allreduce_efficiency(gpu.nvlink, tp, gpu.nvlink_domain_gpus),
    )
    exchange = model.layers * ep_exchange_layer_s(
        model, gpu, np.asarray(tokens_group, dtype=float) / tp, ep=ep, gpus=gpus,
        per_node=per_node, nic_bytes_per_s=nic,
    )  # fmt: skip
    return allreduce, exchange


def ep_exchange_layer_s(model: ModelSpec, gpu: GpuSpec, tokens_per_gpu, *, ep: int,
                        gpus: int | None = None, per_node: bool = False,
                        nic_bytes_per_s: float | None = None):  # fmt: skip
    """One MoE layer's expert-parallel dispatch + combine of ``tokens_per_gpu`` tokens sent by
    each GPU of an instance of ``gpus`` (default ``ep``) GPUs [s] (``steps.ep_exchange_s``:
    per routed expert for a decode step, ``per_node`` for a prefill pass)."""
    gpus = gpus or ep
    nic = link_rates(gpu, gpus)[1] if nic_bytes_per_s is None else nic_bytes_per_s
    return steps.ep_exchange_s(
        tokens_per_gpu, hidden=model.hidden, top_k=model.experts_per_token or 1, ep=ep,
        layers=1, node_gpus=gpu.nvlink_domain_gpus,  # one scale-up domain's GPUs (NVL72: 72)
        scaleup_bytes_per_s=catalog_up(gpu, min(gpus, gpu.nvlink_domain_gpus)),
        nic_bytes_per_s=nic, per_node=per_node,
    )  # fmt: skip


def catalog_up(gpu: GpuSpec, peers: int = 1) -> float:
    """The GPU's own scale-up (NVLink) bandwidth per direction [bytes/s] in a collective of
    ``peers`` GPUs of its scale-up domain (a mesh's links to them: :func:`scaleup_links`)."""
    return link_rates(gpu, max(1, peers))[0]


def decode_step_parts(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    ep: int = 1,
    kv_dtype: str = "fp16",
    weight_dtype: str | None = None,
    framework=DEFAULT_FRAMEWORK,
    data_parallel_attention: bool = False,
    chunk_tokens=0,
    chunk_flops_per_token: float = 0.0,
) -> steps.StepParts:
    """The parts of one decode step of ``batch`` requests holding ``seq_len`` tokens each, on
    an instance of ``max(tp, ep)`` GPUs [s] (``kvmodel.steps`` module doc).

    ``chunk_tokens`` prompt tokens of ``chunk_flops_per_token`` FLOPs each ride along in the
    same iteration (chunked prefill of a colocated instance): their FLOPs join the GEMMs and
    their activations the all-reduce."""
    b = as_tokens(batch, "batch")
    fw = _framework(framework)
    groups = max(1, ep // tp)
    b_group = b / groups
    pad = fw.padded_batch(np.ceil(b_group))
    hbm = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    wd = weight_dtype or model.weight_dtype
    chunk = np.asarray(chunk_tokens, dtype=float)
    routed_tokens = b + chunk * groups  # the chunk's tokens pick experts too (one per group)
    weights = weights_read_bytes_per_gpu(model, routed_tokens, tp=tp, ep=ep, weight_dtype=wd) / hbm
    kv = kv_bytes(model, seq_len, 1, kv_dtype=kv_dtype, tp_prefill=tp, tp_decode=tp)
    kv_gpu = kv.total / tp if data_parallel_attention else kv.per_gpu_decode
    kv_s = kv_gpu * b_group / hbm
    attn_flops = decode_attention_flops_per_token(model, seq_len) * b_group / tp
    attention = attn_flops / (gpu.bf16_flops * gpu.flops_efficiency)
    rows = np.maximum(pad, gpu.mma_min_rows - chunk)  # the tensor cores' fewest rows (specs)
    gemm_flops = 2.0 * model.params_active * rows + chunk * chunk_flops_per_token
    gemm = gemm_flops / tp / (peak_flops(gpu, wd) * gpu.flops_efficiency)
    if model.experts:  # the chunk's routed experts at the grouped-GEMM rate, as a prefill's
        gemm = gemm + chunk * routed_slowdown_s_per_token(model, gpu, wd, gpus=tp, tp=tp, ep=ep)
    (weights, kv_s), (attention, gemm) = steps.split_exposed((weights, kv_s), (attention, gemm))
    allreduce, exchange = _comm_s(model, gpu, pad + chunk, tp=tp, ep=ep)
    shape = np.broadcast(np.asarray(weights), np.asarray(kv_s)).shape
    return steps.StepParts(
        weights_read_s=weights, kv_read_s=kv_s, attention_s=attention, gemm_s=gemm,
        tp_allreduce_s=allreduce * np.ones(shape), ep_dispatch_combine_s=exchange * np.ones(shape),
        kernel_floor_s=np.full(shape, steps.DECODE_KERNEL_S_PER_LAYER * model.layers),
        framework_floor_s=np.full(shape, fw.step_s),
    )  # fmt: skip


def estimate_decode_step_s(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    kv_dtype: str = "fp16",
    weight_dtype: str | None = None,
    ep: int = 1,
    framework=DEFAULT_FRAMEWORK,
    data_parallel_attention: bool = False,
) -> np.ndarray:
    """One decode step of ``batch`` requests holding ``seq_len`` tokens each [s]: the sum of
    :func:`decode_step_parts`."""
    return decode_step_parts(model, seq_len, batch, gpu=gpu, tp=tp, ep=ep, kv_dtype=kv_dtype,
                             weight_dtype=weight_dtype, framework=framework,
                             data_parallel_attention=data_parallel_attention).total_s  # fmt: skip


def softmax_exposed_s(model: ModelSpec, gpu: GpuSpec, attention_flops):
    """The part of a prefill's softmax the attention kernel does not hide [s]: one exponential
    per query head and (query, key) pair, ``attention_flops ÷ (4 × head_dim_qk)`` of them, at the
    GPU's ``exp_ops`` × ``steps.EXP_EXPOSED_SHARE`` (0 for a GPU without ``exp_ops``)."""
    if gpu.exp_ops is None:
        return np.zeros(np.shape(attention_flops))
    exps = np.asarray(attention_flops, dtype=float) / (4.0 * model.head_dim_qk)
    return steps.EXP_EXPOSED_SHARE * exps / gpu.exp_ops


def active_mlp_width(model: ModelSpec) -> float:
    """The MLP width one token passes through, summed over its active experts [values]: the
    active parameters per layer less the attention's (~4 × hidden², the Q, K, V and output
    projections of a model whose heads span its width), over the three matrices (gate, up,
    down) of ``hidden`` rows.  An estimate from the parameter count (the catalog does not hold
    the MLP width): Llama-3.1-70B gives 24,986 against its 28,672, Qwen3-8B 13,075 against
    12,288, DeepSeek-R1 18,649 against its nine active experts' 18,432."""
    h = model.hidden
    per_layer = model.params_active / model.layers - 4.0 * h * h
    return max(per_layer / (3.0 * h), float(h))


def activation_bytes_per_token_layer(model: ModelSpec, tp: int = 1) -> float:
    """HBM bytes one GPU's non-GEMM kernels move per prompt token and layer [bytes]
    (``steps.PREFILL_REPLICATED_PASSES`` on every rank, the split passes ÷ ``tp``)."""
    split = steps.PREFILL_SPLIT_PASSES + 3.0 * active_mlp_width(model) / model.hidden
    passes = steps.PREFILL_REPLICATED_PASSES + split / max(tp, 1)
    return model.hidden * steps.ACTIVATION_BYTES * passes


def prefill_host_floor_s(model: ModelSpec, framework=None) -> float:
    """The least a prefill pass takes under ``framework`` [s]: its ``mla_prefill_floor_s`` for
    an MLA model (the host launching an eager MLA + MoE layer's kernels bounds a short prompt's
    pass while the GPU works under it), else 0.  None: no framework, no floor."""
    if framework is None or model.attention != "mla":
        return 0.0
    return _framework(framework).mla_prefill_floor_s


def group_tokens_of(tokens, tp: int, ep: int):
    """The tokens of a pass one attention group computes: ``tokens`` spread over an
    expert-parallel instance's EP ÷ TP data-parallel groups (all of them at EP ≤ TP)."""
    return tokens / max(1, ep // tp)


def prefill_graphed(tokens, framework=None) -> np.ndarray:
    """Whether a prefill pass of ``tokens`` tokens per engine replays CUDA graphs under
    ``framework`` (at most its ``prefill_graph_tokens``: vLLM V1's piecewise graphs up to 512
    tokens; SGLang and TensorRT-LLM prefill eagerly).  None: no framework, eager."""
    limit = 0 if framework is None else _framework(framework).prefill_graph_tokens
    return np.asarray(tokens, dtype=float) <= limit


def prefill_launch_floor_s(model: ModelSpec, tokens, framework=None) -> np.ndarray:
    """The host's launch floor of a prefill pass of ``tokens`` tokens per engine [s]: the
    decode step's per-layer floor (``steps.DECODE_KERNEL_S_PER_LAYER``) for a pass that
    replays CUDA graphs (:func:`prefill_graphed`), else an eager pass's
    (``steps.PREFILL_KERNEL_S_PER_LAYER``), times the layers."""
    graphed = prefill_graphed(tokens, framework)
    per_layer = np.where(graphed, steps.DECODE_KERNEL_S_PER_LAYER, steps.PREFILL_KERNEL_S_PER_LAYER)
    return per_layer * model.layers


def prefill_parts(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    ep: int = 1,
    mfu: float = DEFAULT_MFU,
    weight_dtype: str | None = None,
    prefix=None,
    framework=None,
) -> steps.PrefillParts:
    """The parts of one prefill pass of ``batch`` requests of ``seq_len`` tokens on an instance
    of ``max(tp, ep)`` GPUs [s].  ``mfu`` scales the GPU's achievable FLOP/s (``DEFAULT_MFU``:
    the GPU's own, data/gpus.csv); ``prefix``: cached tokens before them
    (:func:`prefill_flops`).  ``framework``: the engine whose host floor bounds the pass from
    below (:func:`prefill_host_floor_s`; the part ``host_floor_s`` is what it adds)."""
    if not 0 < mfu <= 1:
        raise ValueError(f"mfu must be in (0, 1], got {mfu!r}")
    s = as_tokens(seq_len, "seq_len")
    b = as_tokens(batch, "batch")
    gpus = max(tp, ep)
    tokens = s * b
    wd = weight_dtype or model.weight_dtype
    eff = gpu.flops_efficiency * mfu / DEFAULT_MFU
    hbm = gpu.hbm_bytes_per_s * gpu.hbm_efficiency
    weights = weights_read_bytes_per_gpu(model, tokens, tp=tp, ep=ep, weight_dtype=wd) / hbm
    gemm = 2.0 * model.params_active * tokens / gpus / (peak_flops(gpu, wd) * min(eff, 1.0))
    gemm = gemm + tokens * routed_slowdown_s_per_token(model, gpu, wd, gpus=gpus, tp=tp, ep=ep,
                                                       efficiency=eff)  # fmt: skip
    attn_flops = (prefill_flops(model, s, b, prefix) - 2.0 * model.params_active * tokens) / gpus
    attention = attn_flops / (gpu.bf16_flops * min(eff, 1.0)) + softmax_exposed_s(
        model, gpu, attn_flops)
    group_tokens = group_tokens_of(tokens, tp, ep)
    activations = group_tokens * model.layers * activation_bytes_per_token_layer(model, tp) / hbm
    (weights,), (attention, gemm) = steps.split_exposed((weights,), (attention, gemm))
    allreduce, exchange = _comm_s(model, gpu, group_tokens, tp=tp, ep=ep, per_node=True)
    shape = np.broadcast(np.asarray(gemm), np.asarray(attention)).shape
    parts = steps.PrefillParts(
        weights_read_s=weights, activations_s=activations, attention_s=attention, gemm_s=gemm,
        tp_allreduce_s=allreduce * np.ones(shape), ep_dispatch_combine_s=exchange * np.ones(shape),
        kernel_floor_s=prefill_launch_floor_s(model, group_tokens, framework) * np.ones(shape),
    )  # fmt: skip
    floor = prefill_host_floor_s(model, framework)
    if floor > 0:  # the pass takes max(floor, GPU work): the parts still add up
        return replace(parts, host_floor_s=np.maximum(floor - parts.total_s, 0.0))
    return parts


def estimate_prefill_s(
    model: ModelSpec,
    seq_len,
    batch=1,
    *,
    gpu: GpuSpec,
    tp: int = 1,
    mfu: float = DEFAULT_MFU,
    weight_dtype: str | None = None,
    ep: int = 1,
    prefix=None,
    framework=None,
) -> np.ndarray:
    """Prefill of ``batch`` requests of ``seq_len`` tokens [s]: the sum of
    :func:`prefill_parts`.  ``weight_dtype``: the checkpoint's by default; ``prefix``: cached
    tokens before them (:func:`prefill_flops`); ``framework``: its host floor, if any."""
    return prefill_parts(model, seq_len, batch, gpu=gpu, tp=tp, ep=ep, mfu=mfu,
                         weight_dtype=weight_dtype, prefix=prefix,
                         framework=framework).total_s  # fmt: skip


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
