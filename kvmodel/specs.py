"""Frozen, validated descriptions of a model's attention layout, a link and a GPU.

Everything is in SI base units: bytes, seconds, bytes/s, FLOP/s.  Specs validate in
``__post_init__`` and raise ``ValueError`` naming the field and the offending value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

ATTENTION_LAYOUTS = (
    "mha",
    "gqa",
    "mqa",
    "mla",
    "sliding",
    "chunked",
    "sliding+global",
    "hybrid-linear",
    "hybrid-mamba",
)
WINDOW_KINDS = ("sliding", "chunked")
# Bytes per weight of a checkpoint.  mxfp4: 4-bit values plus one 8-bit scale per 32 (4.25 bits),
# as gpt-oss ships its experts (its attention stays BF16; the whole model is costed at mxfp4).
WEIGHT_DTYPE_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0, "mxfp4": 4.25 / 8,
                      "int4": 0.5}  # fmt: skip


# Bounds on a model's shape, far above any real model (the catalog's largest: 126 layers, 128
# query heads, head dim 576, 8.5 MB of state per layer, a 10,485,760-token context, 1.0e12
# params).  They keep a hostile link or config.json from building huge arrays (one entry per
# layer or token) and keep every count an exact number in the browser (2^53).  Checked by the
# specs below and, before any per-layer list is built, by the config.json importer and the link
# decoder (kvmodel.hfconfig, kvmodel.modelcodec): one table for all of them.
MODEL_LIMITS = {
    "layers": 4096,
    "heads": 16_384,  # query, KV, Mamba or linear-attention heads
    "head_dim": 65_536,  # head dims, MLA ranks, state sizes
    "width": 1 << 20,  # hidden size, MLP width
    "vocab": 1 << 24,
    "experts": 65_536,
    "groups": 16,  # attention groups of one ModelSpec
    "window_tokens": 1 << 24,
    "max_context_tokens": 1 << 24,  # 16,777,216: above Llama-4 Scout's 10,485,760
    "state_bytes_per_layer": 1 << 40,
    "params": 1e15,
}
LIMIT_OF = {  # field -> MODEL_LIMITS key
    "layers": "layers",
    "state_layers": "layers",
    "q_heads": "heads",
    "kv_heads": "heads",
    "head_dim_qk": "head_dim",
    "k_head_dim": "head_dim",
    "v_head_dim": "head_dim",
    "window_tokens": "window_tokens",
    "max_context_tokens": "max_context_tokens",
    "state_bytes_per_layer": "state_bytes_per_layer",
    "params_total": "params",
    "params_active": "params",
    "hidden_size": "width",
    "experts": "experts",
    "experts_per_token": "experts",
}


def _check_int(obj, name: str, *, minimum: int = 0) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    _check_limit(name, value)


def _check_limit(name: str, value) -> None:
    """``value`` is at most the limit of field ``name`` (MODEL_LIMITS); ValueError otherwise."""
    key = LIMIT_OF.get(name)
    if key is not None and value > MODEL_LIMITS[key]:
        shown = f"{value:.3g}" if value > 1e15 else f"{value:,}"
        raise ValueError(
            f"{name} must be <= {MODEL_LIMITS[key]:,} (no real model comes near), got {shown}"
        )


def _check_pos(obj, name: str, *, allow_zero: bool = False) -> None:
    value = getattr(obj, name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if value < 0 or (value == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '> 0'}, got {value!r}")
    _check_limit(name, value)


@dataclass(frozen=True)
class AttentionGroup:
    """A set of identical attention layers.

    ``window_tokens`` is None for full attention; otherwise the layer keeps at most that many
    tokens (a sliding window, or a chunk for chunked local attention).  ``v_head_dim`` is 0 when
    only one tensor is cached per token (MLA's latent, or K shared with V).
    """

    layers: int
    kv_heads: int
    k_head_dim: int
    v_head_dim: int
    window_tokens: int | None = None
    window_kind: str | None = None

    def __post_init__(self):
        _check_int(self, "layers", minimum=1)
        _check_int(self, "kv_heads", minimum=1)
        _check_int(self, "k_head_dim", minimum=1)
        _check_int(self, "v_head_dim", minimum=0)
        if self.window_tokens is not None:
            _check_int(self, "window_tokens", minimum=1)
            if self.window_kind not in WINDOW_KINDS:
                raise ValueError(
                    f"window_kind must be one of {WINDOW_KINDS} when window_tokens is set, "
                    f"got {self.window_kind!r}"
                )
        elif self.window_kind is not None:
            raise ValueError(f"window_kind {self.window_kind!r} given without window_tokens")

    @property
    def elements_per_token_per_layer(self) -> int:
        """Cached values per token per layer over all KV heads (K plus V)."""
        return self.kv_heads * (self.k_head_dim + self.v_head_dim)

    @property
    def tensors(self) -> int:
        """1 when only one tensor is cached (MLA latent, K == V), else 2 (K and V)."""
        return 2 if self.v_head_dim else 1


@dataclass(frozen=True)
class ModelSpec:
    """A model as far as the KV transfer cares.

    ``groups`` are the attention layers; ``state_layers`` × ``state_bytes_per_layer`` is a constant
    per-request state (Mamba or linear-attention layers) that crosses the network too.
    ``params_total`` and ``params_active`` are counts (not billions).
    """

    id: str
    name: str
    attention: str
    layers: int
    q_heads: int
    head_dim_qk: int
    groups: tuple[AttentionGroup, ...]
    max_context_tokens: int
    params_total: float
    params_active: float
    state_layers: int = 0
    state_bytes_per_layer: int = 0
    aliases: tuple[str, ...] = ()
    source: str = ""
    kv_dtype_native: str | None = None
    layer_order: tuple[int, ...] = field(default=(), compare=False)
    weight_dtype: str = "bf16"  # the checkpoint's weights (memory and decode-step estimates)
    # 0 = unknown (older catalogs and links): hidden falls back to q_heads × head_dim_qk, and an
    # MoE's routed experts to params_total − params_active (see ``routed_expert_params``)
    hidden_size: int = 0
    experts: int = 0  # routed experts per MoE layer
    experts_per_token: int = 0  # routed experts each token picks (top-k)

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        if self.attention not in ATTENTION_LAYOUTS:
            raise ValueError(
                f"attention must be one of {ATTENTION_LAYOUTS}, got {self.attention!r}"
            )
        for name in ("layers", "q_heads", "head_dim_qk", "max_context_tokens"):
            _check_int(self, name, minimum=1)
        _check_int(self, "state_layers", minimum=0)
        _check_int(self, "state_bytes_per_layer", minimum=0)
        _check_pos(self, "params_total")
        _check_pos(self, "params_active")
        for name in ("hidden_size", "experts", "experts_per_token"):
            _check_int(self, name, minimum=0)
        if self.experts_per_token > self.experts:
            raise ValueError(
                f"experts_per_token ({self.experts_per_token}) must not exceed experts "
                f"({self.experts})"
            )
        if self.weight_dtype not in WEIGHT_DTYPE_BYTES:
            raise ValueError(
                f"weight_dtype must be one of {', '.join(WEIGHT_DTYPE_BYTES)}, "
                f"got {self.weight_dtype!r}"
            )
        if self.params_active > self.params_total:
            raise ValueError(
                f"params_active ({self.params_active:g}) must not exceed params_total "
                f"({self.params_total:g})"
            )
        if not self.groups:
            raise ValueError("groups must hold at least one attention group")
        if len(self.groups) > MODEL_LIMITS["groups"]:
            raise ValueError(
                f"groups must hold at most {MODEL_LIMITS['groups']} attention groups, "
                f"got {len(self.groups)}"
            )
        attn = sum(g.layers for g in self.groups)
        if attn + self.state_layers > self.layers:
            raise ValueError(
                f"attention layers ({attn}) + state layers ({self.state_layers}) exceed "
                f"layers ({self.layers})"
            )
        if self.state_layers and not self.state_bytes_per_layer:
            raise ValueError("state_bytes_per_layer must be > 0 when state_layers > 0")
        if self.layer_order:
            if (
                sorted(set(self.layer_order)) != list(range(len(self.groups)))
                or len(self.layer_order) != attn
            ):
                raise ValueError(
                    "layer_order must list a group index for every attention layer "
                    f"({attn} entries over groups 0..{len(self.groups) - 1})"
                )

    @property
    def attention_layers(self) -> int:
        return sum(g.layers for g in self.groups)

    @property
    def is_moe(self) -> bool:
        """A mixture of experts: fewer parameters active per token than held."""
        return self.params_active < self.params_total or self.experts > 1

    @property
    def hidden(self) -> int:
        """The model width [values]: ``hidden_size``, else q_heads × head_dim_qk."""
        return self.hidden_size or self.q_heads * self.head_dim_qk

    @property
    def routed_expert_params(self) -> float:
        """Parameters of all routed experts (0 for a dense model).

        With E experts and top-k known, the non-active routed weights are (E − k) of E, so the
        routed total is (params_total − params_active) × E ÷ (E − k); unknown, it is taken as
        params_total − params_active (the many-experts limit).
        """
        idle = self.params_total - self.params_active
        e, k = self.experts, self.experts_per_token
        if idle <= 0:
            return 0.0
        return idle * e / (e - k) if e > k > 0 else idle

    @property
    def min_kv_heads(self) -> int:
        return min(g.kv_heads for g in self.groups)

    def attention_layer_groups(self) -> tuple[int, ...]:
        """Group index of each attention layer, in model order.

        Uses ``layer_order`` when known (imported configs); otherwise spreads each group evenly
        over the depth (5 local : 1 global becomes L L L L L G ...).
        """
        if self.layer_order:
            return self.layer_order
        slots = []
        for gi, g in enumerate(self.groups):
            slots += [((k + 0.5) / g.layers, gi) for k in range(g.layers)]
        return tuple(gi for _, gi in sorted(slots))


@dataclass(frozen=True)
class LinkSpec:
    """An interconnect. ``bandwidth_bytes_per_s`` is per direction."""

    id: str
    name: str
    kind: str
    bandwidth_bytes_per_s: float
    latency_s: float
    source: str = ""
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        _check_pos(self, "bandwidth_bytes_per_s")
        _check_pos(self, "latency_s", allow_zero=True)


@dataclass(frozen=True)
class GpuSpec:
    """An accelerator: HBM bandwidth [bytes/s], dense FLOP/s, memory [bytes]."""

    id: str
    name: str
    hbm_bytes_per_s: float
    bf16_flops: float
    fp8_flops: float | None
    memory_bytes: float
    nvlink: str
    nic: str
    source: str = ""
    gpus_per_node: int = 8
    nics_per_node: int = 8  # scale-out NICs of the compute fabric
    nvlink_domain_gpus: int = 8  # GPUs one scale-up (NVLink) domain joins: 8 on HGX, 72 on NVL72
    # Achievable fractions of the datasheet peaks in serving kernels (data/gpus.csv sources)
    hbm_efficiency: float = 0.8
    flops_efficiency: float = 0.7
    # FLOP/s grouped MoE GEMMs approach as an expert's slice per GPU grows wide (None: not
    # measured; routed experts then run at the dense rate): kvmodel.timing.routed_gemm_flops
    moe_gemm_flops: float | None = None
    # exponentials per second of the special-function units (None: not known; a prefill's
    # softmax then costs nothing beyond its FLOPs): kvmodel.timing.prefill_parts
    exp_ops: float | None = None
    # the fewest token rows one tensor-core GEMM instruction computes (Hopper's wgmma and
    # Blackwell's tcgen05: 64; Ampere's and Ada's mma.sync and CDNA3's MFMA: 16; 1: none):
    # a decode step of fewer tokens pays for this many (kvmodel.timing.decode_step_parts)
    mma_min_rows: int = 1

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        for name in ("gpus_per_node", "nics_per_node", "nvlink_domain_gpus", "mma_min_rows"):
            _check_int(self, name, minimum=1)
        for name in ("hbm_efficiency", "flops_efficiency"):
            _check_pos(self, name)
            if getattr(self, name) > 1:
                raise ValueError(f"{name} must be <= 1, got {getattr(self, name)!r}")
        _check_pos(self, "hbm_bytes_per_s")
        _check_pos(self, "bf16_flops")
        _check_pos(self, "memory_bytes")
        if self.fp8_flops is not None:
            _check_pos(self, "fp8_flops")
        if self.moe_gemm_flops is not None:
            _check_pos(self, "moe_gemm_flops")
        if self.exp_ops is not None:
            _check_pos(self, "exp_ops")


STACK_MESSAGES = ("block", "layer")


@dataclass(frozen=True)
class StackSpec:
    """A KV transfer stack (connector + transport) as measured, not as the wire allows.

    One transfer pays ``request_s`` once (handshake, metadata, completion), ``chunk_s`` per chunk
    (the whole cache is one chunk; layer-wise sending makes one per layer), ``message_s`` per
    message, and moves its bytes at ``efficiency_max`` of the link.  A message is one KV block
    of one tensor on one decode rank (``"block"``: paged RDMA connectors such as NIXL and
    Mooncake) or one layer's tensor per rank (``"layer"``: NCCL send/recv).  With ``overlap``
    the messages are posted while earlier ones move (RDMA engines): a stream takes
    max(posting, bytes ÷ bandwidth); without it (one NCCL kernel per send) the two add.  Small
    messages therefore lose efficiency (see :meth:`half_bandwidth_bytes`).
    """

    id: str
    name: str
    request_s: float
    chunk_s: float
    message_s: float
    efficiency_max: float
    message: str = "block"
    overlap: bool = True
    source: str = ""
    note: str = ""

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        for name in ("request_s", "chunk_s", "message_s"):
            _check_pos(self, name, allow_zero=True)
        _check_pos(self, "efficiency_max")
        if self.efficiency_max > 1:
            raise ValueError(f"efficiency_max must be <= 1, got {self.efficiency_max!r}")
        if self.message not in STACK_MESSAGES:
            raise ValueError(f"message must be one of {STACK_MESSAGES}, got {self.message!r}")

    @property
    def is_ideal(self) -> bool:
        """Wire speed: no fixed costs, full efficiency at every message size."""
        return (
            self.request_s == 0
            and self.chunk_s == 0
            and self.message_s == 0
            and self.efficiency_max == 1
        )

    def half_bandwidth_bytes(self, bandwidth_bytes_per_s: float) -> float:
        """Message size at which a stream reaches half its large-message bandwidth [bytes]."""
        b = bandwidth_bytes_per_s * self.efficiency_max
        return self.message_s * b * (0.5 if self.overlap else 1.0)


IDEAL_STACK = StackSpec(
    id="ideal",
    name="Ideal (wire speed)",
    request_s=0.0,
    chunk_s=0.0,
    message_s=0.0,
    efficiency_max=1.0,
    message="layer",
    overlap=False,
    source="no overhead: the source article's arithmetic, bytes ÷ bandwidth + link latency",
)
