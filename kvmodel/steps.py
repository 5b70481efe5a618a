"""The parts of a decode step and of a prefill pass, each a named time per GPU [s].

A decode step of ``B`` requests holding ``S`` tokens each, on one instance of ``G`` GPUs
(``G = TP``, or ``EP`` with expert parallelism: ``EP ÷ TP`` data-parallel attention groups of
``TP`` GPUs each, the batch spread over the groups):

    memory   = weights read ÷ (HBM × e_hbm)  +  KV read ÷ (HBM × e_hbm)
    compute  = GEMM FLOPs ÷ (peak × e_flop)  +  attention FLOPs ÷ (BF16 peak × e_flop)
    overlap  = (memory^p + compute^p)^(1/p)  -  a smooth max: a step near the ridge pays part
               of both (p = ∞ would be the roofline's max, p = 1 their sum)
    step     = framework floor + kernel floor × layers + overlap + TP all-reduce
               + EP dispatch/combine

e_hbm and e_flop are the GPU's achievable fractions of its datasheet peaks (``data/gpus.csv``).
A prompt token's routed-expert GEMMs (a prefill pass, a chunk riding a step) run at the grouped
MoE kernels' rate when that is lower (``timing.routed_gemm_flops``: narrow expert slices per GPU).
The TP all-reduce is a ring over the scale-up link (NVLink), 2 per layer (1 with EP: the MoE
output is combined instead): ``2 (TP−1)/TP × bytes ÷ bandwidth + latency``.  EP's dispatch and
combine move ``tokens × hidden × top_k × (EP−1)/EP`` values each way per MoE layer (FP8 out,
BF16 back, as DeepEP does), the share of peers inside the node over NVLink, the rest over the
GPU's NICs; the two paths run at once.

Shown parts add up to the total: the larger of memory and compute is shown whole, the smaller
scaled by its exposed share ``(overlap − larger) ÷ smaller``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

import numpy as np

# The combination and the floors.  Fitted on the ``fit`` rows of data/fidelity/compute.csv
# (bench/fit_compute.py); README's fidelity table gives the fitted and held-out errors.
OVERLAP_P = 2.5  # smooth-max exponent (memory^p + compute^p)^(1/p); the fit kept 2.5
DECODE_KERNEL_S_PER_LAYER = 43.7e-6  # ~12-15 kernels per layer at ~3 µs each under CUDA graphs
PREFILL_KERNEL_S_PER_LAYER = 274.6e-6  # prefill's launches, syncs and the scheduler per layer
# A ring all-reduce's fixed cost per call on NVLink: NCCL's small-message all-reduce on 8
# H100s takes ~10-20 µs (nccl-tests all_reduce_perf), vLLM's custom one-shot all-reduce ~5-10
# µs (vLLM custom_all_reduce.cuh benchmarks): 10 µs.
ALLREDUCE_LATENCY_S = 10e-6
# Across nodes the engines' custom all-reduce turns itself off (it needs one node's shared
# memory: vLLM's and SGLang's custom_all_reduce.py) and NCCL runs it.  NCCL's own cost model
# (NVIDIA/nccl src/graph/tuning.cc, 2.26-2.30) picks Tree/LL for a small message across nodes
# and sets its latency to base + 2 × ((GPUs per node − 1) × NVLink hop + log2(nodes) × network
# hop), with base 6.8 µs, NVLink hop 0.6 µs and network hop 5.0 µs: 25.2 µs on two 8-GPU
# nodes, which NCCL's debug log prints for 3 H100 nodes (NVIDIA/nccl issue 1453).  Measured:
# 25.0 µs at 16 B and 32.7 µs at 16 kB on two healthy 8 × H100 nodes with 8 × 400 Gb/s
# InfiniBand (NVIDIA/nccl-tests issue 309, NCCL 2.26.2, "your numbers look good"), 22.5 µs at
# 8 B and 39.6 µs at 16 kB on two 8 × A100 nodes (ABCI user guide, "Using SHARP").
NCCL_TREE_BASE_S = 6.8e-6
NCCL_NVLINK_HOP_S = 0.6e-6
NCCL_NET_HOP_S = 5.0e-6
# Per MoE layer per direction: DeepEP's low-latency dispatch of 128 tokens at EP 8 takes
# ~77 µs and combine ~114 µs of which ~15-20 µs is fixed (deepseek-ai/DeepEP README tables);
# SGLang's large-EP blog (lmsys.org 2025-05-05) shows the same order: 20 µs.
EP_LATENCY_S = 20e-6
# NCCL's ring all-reduce reaches ~70-80 % of NVLink's per-direction bandwidth as bus bandwidth
# on 8 H100s (nccl-tests all_reduce_perf large-message busbw ~ 350-370 GB/s of 450; NVIDIA's
# NCCL blog posts report the same fraction): 0.75.
ALLREDUCE_BW_EFFICIENCY = 0.75
# Inside one scale-up domain the share depends on the link and on how many GPUs take part:
# NCCL's measured all-reduce bus bandwidth in aiconfigurator-core 0.12.0's system tables
# (systems/data/<system>/comm/nccl/<version>/nccl_perf.parquet, collected by NVIDIA on each
# system; the median over 16–128 MB messages, a prefill's all-reduce of 1k–8k tokens, with the
# 10 µs fixed cost taken off), as a share of the link's per-direction bandwidth:
# - NVLink 4: H100 SXM (NCCL 2.23–2.29) 0.59 / 0.69 / 0.76 at 2 / 4 / 8 GPUs, H200 (2.26, 2.29)
#   0.61 / 0.70 / 0.77;
# - NVLink 5: B200 (2.27–2.29) 0.51 / 0.57 / 0.45, GB200 (2.23, 2.29) 0.53 / 0.57 (8 not
#   measured);
# - NVLink 3: A100 SXM (2.27) 0.55 / 0.62 / 0.61;
# - PCIe Gen4: L40S (2.27) 0.62 / 0.16 / 0.05: past 2 GPUs NCCL goes through host memory across
#   the CPU sockets (20 GB/s at 2 GPUs, 5 at 4, 2 at 8).
# The vLLM custom all-reduce tables of the same systems (comm/vllm/0.24.0) agree at these sizes:
# above 8 MiB the engines hand an all-reduce to NCCL (vLLM's and SGLang's CustomAllreduce
# max_size, 8 MiB by default), so the shares apply to messages above it (a prefill pass, a
# chunk riding a step); a decode step's smaller ones keep the custom all-reduce's 0.75 and its
# fixed cost, which the decode fit calibrated.  Other links and a TP across domains keep 0.75
# (nccl-tests' large-message ring on 8 H100s, above); a TP of 3, 5–7 GPUs takes the next
# measured size's share.
CUSTOM_ALLREDUCE_MAX_BYTES = 8 * 2**20
ALLREDUCE_BW_EFFICIENCY_BY_LINK = {
    "nvlink4": {2: 0.60, 4: 0.70, 8: 0.77},
    "nvlink5": {2: 0.52, 4: 0.57, 8: 0.45},
    "nvlink3": {2: 0.55, 4: 0.62, 8: 0.61},
    "pcie4": {2: 0.62, 4: 0.16, 8: 0.05},
}
# MoE expert GEMMs read their weights at a lower share of HBM than dense GEMMs (grouped/fused
# MoE kernels over many small matrices: vLLM's fused_moe tuning tables and SGLang's MoE kernel
# blog both show ~50-70 % of peak bandwidth where a dense GEMM reaches ~80 %).  Set to 0.7 on
# aiconfigurator's silicon_sample sweep (data/fidelity/silicon_agg.csv: 1,035 served MoE TPOTs of
# DeepSeek-R1/V3, Qwen3-235B-A22B and gpt-oss-120b on H100, H200 and B200 under vLLM, SGLang
# and TensorRT-LLM), leaving out the 15 MoE rows compute.csv holds out (the sweep holds every
# silicon row of compute.csv): 0.7 centres the Hopper rows (471) at 0.94× and the Blackwell rows
# (549) at 0.99× of measured; by mean |log ratio| over 0.55-1.0 it is the best on Hopper and
# 0.3 % behind 0.75 on Blackwell.  The compute.csv fit rows alone give 0.56.  Not refitted by
# fit_compute.py.  Re-scanned in session 16 (routed experts' prefill rate, the vLLM 0.12 runs'
# DeepGEMM padding): the best is now 0.75 on Hopper (1.2 % better) and 0.8 on Blackwell (3 %);
# 0.7 is kept, within 3 % of both and inside the kernels' reported 50-70 %.
MOE_READ_EFFICIENCY = 0.7
# A prefill pass also streams its activations through HBM in the kernels that are not GEMMs,
# each a kernel of its own that runs between the GEMMs (so its time adds, it does not hide
# under them).  Counted per token and layer in hidden-size BF16 vectors, from the kernels a
# vLLM/SGLang decoder layer launches:
# - replicated on every TP rank (norms and residuals are not split by TP): the two fused
#   residual-add + RMSNorm kernels, each reading the input and the residual and writing both
#   back: 2 × 4 = 8 (PREFILL_REPLICATED_PASSES);
# - split over the TP ranks (each holds its heads and its slice of the MLP): SiLU-and-multiply
#   reads the gate and up projections and writes their product, 3 × the active MLP width ÷
#   hidden (``timing.active_mlp_width``), and rotary embedding, Q/K norms and the KV-cache
#   write read and write the queries and keys, ~5 (PREFILL_SPLIT_PASSES).
# Session 18 replaced a single fitted count (52 vectors, all replicated, hidden under the GEMMs)
# by this count: the fitted count had absorbed one run's slow TP 8 (Qwen3-8B on H800) and made
# every TP 8 prefill of a large model too slow (Llama-3.1-70B on H100: 1.31× of measured at TP 8
# against 0.86× at TP 2).
PREFILL_REPLICATED_PASSES = 8.0
PREFILL_SPLIT_PASSES = 5.0
# A prefill's attention (FlashAttention) computes one exponential per query head and (query,
# key) pair on the special-function units, beside 4 × head_dim FLOPs on the tensor cores; the
# kernels overlap the two only in part.  aiconfigurator-core 0.12.0's measured context-attention
# tables (systems/data/<system>/attention/{vllm,sglang}/*/context_attention_perf.parquet, BF16,
# head_dim 128, ≥ 8k tokens, causal) put H100 SXM at 0.60 / 0.59 of the BF16 peak (vLLM /
# SGLang) where its GEMMs reach 0.7: with the exponentials at data/gpus.csv's exp_tops, that is
# this share of their time exposed.  Fitted on H100 alone; the same tables, held out: H200
# 0.58 (model 0.60), B200 0.51 (0.46), GB200 0.48 (0.43), L40S 0.53 (0.52), A100 0.55–0.64
# (0.71).  A GPU with few tensor FLOPs per special-function unit (H20, L40S) pays little.
EXP_EXPOSED_SHARE = 0.55
DISPATCH_BYTES = 1.0  # FP8 tokens out (DeepEP dispatch)
COMBINE_BYTES = 2.0  # BF16 back (DeepEP combine)
ACTIVATION_BYTES = 2.0  # BF16 activations in a TP all-reduce


@dataclass(frozen=True)
class Parts:
    """Named times [s] that add up to ``total_s``; values are floats or arrays."""

    def terms(self) -> dict:
        """Term name → seconds, in the order shown."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name.endswith("_s")}

    @property
    def total_s(self):
        return sum(self.terms().values())

    def as_ms(self) -> dict:
        """Term name (without ``_s``) → float ms, for JSON and tables."""
        return {k[:-2]: float(np.asarray(v).reshape(-1)[0]) * 1e3 for k, v in self.terms().items()}


@dataclass(frozen=True)
class StepParts(Parts):
    """One decode step per GPU [s] (module doc)."""

    weights_read_s: object
    kv_read_s: object
    attention_s: object
    gemm_s: object
    tp_allreduce_s: object
    ep_dispatch_combine_s: object
    kernel_floor_s: object
    framework_floor_s: object


@dataclass(frozen=True)
class PrefillParts(Parts):
    """One prefill pass per GPU [s] (module doc)."""

    weights_read_s: object
    activations_s: object
    attention_s: object
    gemm_s: object
    tp_allreduce_s: object
    ep_dispatch_combine_s: object
    kernel_floor_s: object
    # what a host-bound pass takes beyond the GPU's work (``timing.prefill_host_floor_s``)
    host_floor_s: object = 0.0


@dataclass(frozen=True)
class TtftParts(Parts):
    """Time to first token of a disaggregated request [s]: the framework's per-request cost
    (API server, tokenizer, scheduling, the P/D proxy), its wait, its prefill, the exposed KV
    transfer and the first decode step."""

    request_s: object
    queue_s: object
    prefill_s: object
    transfer_s: object
    first_step_s: object


LABELS = {  # short names for tables (the docstrings above say what each is)
    "weights_read": "Weights read",
    "kv_read": "KV read",
    "activations": "Activations",
    "attention": "Attention FLOPs",
    "gemm": "GEMM FLOPs",
    "tp_allreduce": "TP all-reduce",
    "ep_dispatch_combine": "EP all-to-all",
    "kernel_floor": "Kernel floor",
    "host_floor": "Host floor",
    "framework_floor": "Framework/step",
    "request": "Framework/request",
    "queue": "Queue",
    "prefill": "Prefill",
    "transfer": "KV transfer",
    "first_step": "First step",
}


def overlapped(memory_s, compute_s, p: float = OVERLAP_P):
    """(memory^p + compute^p)^(1/p) and the exposed share of the smaller side (0..1)."""
    m = np.asarray(memory_s, dtype=float)
    c = np.asarray(compute_s, dtype=float)
    big, small = np.maximum(m, c), np.minimum(m, c)
    both = (m**p + c**p) ** (1.0 / p)
    share = np.divide(both - big, small, out=np.zeros_like(both), where=small > 0)
    return both, share


def split_exposed(memory_parts: tuple, compute_parts: tuple, p: float = OVERLAP_P):
    """Memory and compute parts scaled so that they add up to the overlapped time."""
    m = sum(np.asarray(x, dtype=float) for x in memory_parts)
    c = sum(np.asarray(x, dtype=float) for x in compute_parts)
    _, share = overlapped(m, c, p)
    mem_whole = m >= c
    mem_scale = np.where(mem_whole, 1.0, share)
    comp_scale = np.where(mem_whole, share, 1.0)
    return tuple(x * mem_scale for x in memory_parts), tuple(x * comp_scale for x in compute_parts)


def allreduce_latency_s(tp: int, node_gpus: int) -> float:
    """The fixed cost of one all-reduce over ``tp`` GPUs whose scale-up domain (node) holds
    ``node_gpus`` [s]: the engines' custom all-reduce inside one domain, NCCL's Tree/LL across
    domains (the constants above)."""
    if tp <= node_gpus:
        return ALLREDUCE_LATENCY_S
    nodes = -(-tp // node_gpus)
    hops = (node_gpus - 1) * NCCL_NVLINK_HOP_S + math.floor(math.log2(nodes)) * NCCL_NET_HOP_S
    return NCCL_TREE_BASE_S + 2.0 * hops


def allreduce_efficiency(link_id: str | None, tp: int, node_gpus: int | None = None) -> float:
    """The share of the link's per-direction bandwidth an all-reduce of ``tp`` GPUs reaches as
    bus bandwidth: measured per link inside one domain (:data:`ALLREDUCE_BW_EFFICIENCY_BY_LINK`,
    the smallest measured size ≥ ``tp``), else :data:`ALLREDUCE_BW_EFFICIENCY`."""
    table = ALLREDUCE_BW_EFFICIENCY_BY_LINK.get(link_id or "")
    if table is None or tp > (node_gpus or tp) or tp > max(table):
        return ALLREDUCE_BW_EFFICIENCY
    return table[min(n for n in table if n >= tp)]


def ring_allreduce_s(bytes_, tp: int, bandwidth_bytes_per_s: float, calls: float,
                     node_gpus: int | None = None, efficiency: float | None = None):  # fmt: skip
    """``calls`` ring all-reduces of ``bytes_`` each over ``tp`` GPUs [s]; ``node_gpus``: the
    GPUs of one scale-up domain (None: all ``tp`` in one), which sets the fixed cost
    (:func:`allreduce_latency_s`); ``efficiency``: the bus bandwidth's share of
    ``bandwidth_bytes_per_s`` NCCL reaches on messages above the engines' custom all-reduce
    (:data:`CUSTOM_ALLREDUCE_MAX_BYTES`; :func:`allreduce_efficiency`; None:
    ``ALLREDUCE_BW_EFFICIENCY``), smaller ones at ``ALLREDUCE_BW_EFFICIENCY``."""
    if tp <= 1:
        return np.zeros_like(np.asarray(bytes_, dtype=float))
    b = np.asarray(bytes_, dtype=float)
    eff = ALLREDUCE_BW_EFFICIENCY
    if efficiency is not None:
        eff = np.where(b > CUSTOM_ALLREDUCE_MAX_BYTES, efficiency, ALLREDUCE_BW_EFFICIENCY)
    ring = 2.0 * (tp - 1) / tp * b / (bandwidth_bytes_per_s * eff)
    return calls * (ring + allreduce_latency_s(tp, node_gpus or tp))


def ep_copies(top_k: int, ep: int, node_gpus: int, per_node: bool) -> tuple[float, float]:
    """(copies of a token over the scale-up link, copies over the NICs) per direction.

    Per expert (DeepEP's low-latency kernels, decode): one copy per routed expert, ``top_k ×
    (EP−1)/EP`` in all, the peers in the node over the scale-up link, the rest over the NICs.
    Per node (DeepEP's normal kernels, prefill): one copy per *distinct* remote node over the
    NICs, forwarded inside that node over NVLink to each GPU that holds a chosen expert (one
    copy per GPU).  With ``top_k`` experts routed uniformly, a set holding a share ``f`` of
    them is missed with probability ``(1 − f)^top_k``: remote nodes ``(N − 1)(1 − (1 −
    1/N)^k)``, target GPUs ``EP (1 − (1 − 1/EP)^k)``, of which a share ``(n − 1)/n`` is reached
    over NVLink (the rest is the GPU the copy lands on)."""
    n = min(ep, node_gpus)
    k = max(top_k, 1)
    if not per_node:
        return k * (n - 1) / ep, k * max(ep - n, 0) / ep
    nodes = ep / n
    remote = (nodes - 1.0) * (1.0 - (1.0 - 1.0 / nodes) ** k)
    gpus = ep * (1.0 - (1.0 - 1.0 / ep) ** k)
    return gpus * (n - 1) / n, remote


def ep_exchange_s(tokens_per_gpu, *, hidden: int, top_k: int, ep: int, layers: int,
                  node_gpus: int, scaleup_bytes_per_s: float, nic_bytes_per_s: float,
                  per_node: bool = False):  # fmt: skip
    """EP dispatch + combine of ``tokens_per_gpu`` tokens over ``layers`` MoE layers [s].

    Per direction a GPU sends ``tokens × hidden`` values per copy of a token (:func:`ep_copies`:
    per routed expert for a decode step, ``per_node`` for a prefill pass), over the scale-up
    link and its NICs at once.  Dispatch is FP8, combine BF16.
    """
    if ep <= 1:
        return np.zeros_like(np.asarray(tokens_per_gpu, dtype=float))
    values = np.asarray(tokens_per_gpu, dtype=float) * hidden
    local, remote = ep_copies(top_k, ep, node_gpus, per_node)
    per_byte = np.maximum(local / scaleup_bytes_per_s, remote / nic_bytes_per_s)
    moved = values * (DISPATCH_BYTES + COMBINE_BYTES) * per_byte
    return layers * (moved + 2.0 * EP_LATENCY_S)
