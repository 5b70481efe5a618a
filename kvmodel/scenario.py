"""The scenario: everything that decides one transfer, validated against ``kvmodel.inputs``."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import lru_cache

import numpy as np

from .dtypes import compressed_bytes_per_value, kv_dtype_bytes
from .inputs import (
    ATTENTION_PARALLEL,
    BY_FIELD,
    DEFAULT_FRAMEWORK,
    FRAMEWORKS,
    WINDOW_TRANSFER,
    check_scenario_field,
    get,
    si_default,
)
from .size import shard_heads
from .specs import IDEAL_STACK, GpuSpec, LinkSpec, ModelSpec, StackSpec
from .steps import PrefillParts, StepParts
from .timing import decode_step_parts, group_tokens_of, prefill_graphed, prefill_parts
from .topology import batch_streams, default_streams


@lru_cache(maxsize=64)
def unwindowed(model: ModelSpec) -> ModelSpec:
    """``model`` with every sliding/chunked group holding all tokens (sent whole)."""
    if all(g.window_tokens is None for g in model.groups):
        return model
    groups = tuple(replace(g, window_tokens=None, window_kind=None) for g in model.groups)
    return replace(model, groups=groups)


EP_LABELS = {"ep_prefill": "prefill EP (--ep, link key ep)",
             "ep_decode": "decode EP (--ep-decode, link key epd)"}  # fmt: skip


@lru_cache(maxsize=1)
def _checked_fields() -> tuple[str, ...]:
    """The fields ``check_scenario_field`` checks (a numeric input row: ``inputs.BY_FIELD``),
    found once: the others it passes over (a scenario copy was ~24 µs, a third of it asking
    every field)."""
    rows = [(f.name, BY_FIELD.get(f.name)) for f in fields(Scenario)]
    return tuple(name for name, row in rows if row is not None and row.kind in ("int", "float"))


def _estimated_step_s(sc) -> float:
    for g in sc.model.groups:  # an impossible TP is reported by the checks that follow
        shard_heads(g.kv_heads, sc.tp_prefill)  # the prefill's first: tp_decode follows tp
        shard_heads(g.kv_heads, sc.tp_decode, "tp_decode")
    check_expert_parallel(sc.model, sc.ep_prefill, sc.tp_prefill, EP_LABELS["ep_prefill"])
    check_expert_parallel(sc.model, sc.ep_decode, sc.tp_decode, EP_LABELS["ep_decode"])
    if sc.framework not in FRAMEWORKS:
        raise ValueError(f"framework must be one of {FRAMEWORKS}, got {sc.framework!r}")
    return float(_step_parts(sc).total_s)


def _check_estimated_step(sc) -> None:
    """An estimated step beyond the decode step's limit, said in the user's terms (not as the
    ``decode_step_s`` field's range check, which names a value the user never gave)."""
    row = get("step")
    limit_s = None if row.bounds[1] is None else row.to_si(row.bounds[1])
    if limit_s is not None and not sc.decode_step_s < limit_s:
        raise ValueError(
            f"the estimated decode step of {sc.batch:,} requests × {sc.seq_len:,} tokens on "
            f"{sc.tp_decode}× {sc.decode_gpu.name} is {sc.decode_step_s:,.0f} s, beyond the "
            f"decode step's limit of {limit_s:,.0f} s; lower the batch or the sequence length, "
            "or give the decode step"
        )


def _step_parts(sc):
    dp = sc.attention_parallel == "dp"
    return _step_cached(sc.model, sc.decode_gpu, sc.tp_decode, int(sc.batch), int(sc.seq_len),
                        sc.kv_dtype, sc.ep_decode, sc.framework, dp)  # fmt: skip


# Memoised: every page's rerun meets the same few scenarios (bench/README.md, item 8's cache
# rule: bounded, keyed by frozen specs).
@lru_cache(maxsize=4096)
def _step_cached(model, gpu, tp, batch, seq_len, kv_dtype, ep=1, framework=DEFAULT_FRAMEWORK,
                 dp=False):  # fmt: skip
    ctx = min(seq_len, model.max_context_tokens)
    parts = decode_step_parts(model, ctx, batch, gpu=gpu, tp=tp, kv_dtype=kv_dtype, ep=ep,
                              framework=framework, data_parallel_attention=dp)  # fmt: skip
    return type(parts)(**{k: float(v) for k, v in vars(parts).items()})


def decode_step_parts_of(sc) -> StepParts | None:
    """The estimated decode step of ``sc`` in its parts [s]; None when the step is given."""
    return _step_parts(sc) if sc.decode_step_estimated else None


@lru_cache(maxsize=1024)
def _prefill_cached(model, gpu, tp, ep, seq_len, batch, mfu, framework=None) -> PrefillParts:
    parts = prefill_parts(model, seq_len, batch, gpu=gpu, tp=tp, ep=ep, mfu=mfu,
                          framework=framework)  # fmt: skip
    return type(parts)(**{k: float(v) for k, v in vars(parts).items()})


def clear_estimate_caches() -> None:
    """Forget the memoised step and prefill estimates (a calibration that changes the
    constants in place, ``bench/fit_compute.py``, calls this between trials)."""
    _step_cached.cache_clear()
    _prefill_cached.cache_clear()


def prefill_parts_of(sc) -> PrefillParts | None:
    """The estimated prefill of ``sc`` in its parts [s]; None when the prefill is given."""
    if sc.prefill_s is not None:
        return None
    return _prefill_cached(sc.model, sc.gpu, sc.tp_prefill, sc.ep_prefill, int(sc.seq_len),
                           int(sc.batch), float(sc.mfu), sc.framework)  # fmt: skip


def prefill_graphed_of(sc) -> bool:
    """Whether ``sc``'s estimated prefill replays CUDA graphs (``timing.prefill_graphed``: its
    pass of seq_len × batch tokens, split over the EP ÷ TP attention groups, is short enough for
    the framework's prefill graphs); False for a given prefill."""
    if sc.prefill_s is not None:
        return False
    tokens = group_tokens_of(int(sc.seq_len) * int(sc.batch), sc.tp_prefill, sc.ep_prefill)
    return bool(prefill_graphed(tokens, sc.framework))


def check_expert_parallel(model: ModelSpec, ep, tp: int, field: str = "decode EP") -> None:
    """``ep`` GPUs of expert parallelism are possible for ``model`` at attention TP ``tp``:
    1 (off) always; above 1 only for a mixture of experts, and a multiple of ``tp`` (attention
    runs on ep ÷ tp data-parallel groups of tp GPUs).  ValueError naming ``field`` otherwise."""
    if isinstance(ep, bool) or not isinstance(ep, (int, np.integer)) or ep < 1:
        raise ValueError(f"{field} must be a whole number >= 1, got {ep!r}")
    if ep == 1:
        return
    if not model.is_moe:
        raise ValueError(
            f"{field} is {ep}, but {model.name} is a dense model: expert parallelism needs a "
            "mixture of experts (set it to 1 and use tensor parallelism)"
        )
    if ep % tp:
        raise ValueError(
            f"{field} ({ep}) must be a multiple of its TP ({tp}): attention runs on EP ÷ TP "
            "data-parallel groups of TP GPUs each"
        )


@dataclass(frozen=True)
class Scenario:
    """Everything that decides one transfer.  Times in seconds, bandwidth per direction."""

    model: ModelSpec
    link: LinkSpec
    gpu: GpuSpec
    # Defaults: version 1's, in SI, from the rows (kvmodel.inputs.si_default)
    seq_len: int = si_default("seq")
    batch: int = si_default("batch")
    efficiency: float = si_default("eff")
    parallel_links: int | None = None  # None → min(tp_prefill, tp_decode): one NIC per GPU
    kv_dtype: str = si_default("kvd")
    kv_scale_group: int = si_default("kv_scale_group")
    compression: str = si_default("comp")
    comp_group: int = si_default("comp_group")
    codec_bytes_per_s: float = si_default("codec")
    layerwise: bool = si_default("lw")
    tp_prefill: int = si_default("tp")
    tp_decode: int = si_default("tpd")
    decode_step_s: float = si_default("step")
    prefill_s: float | None = None  # None → estimated from the GPU
    mfu: float = si_default("mfu")
    block_tokens: int = si_default("block_tokens")
    descriptor_s: float = si_default("descriptor_us")
    k: float = si_default("k")  # critical length: transfer ≥ k × decode step
    share_target: float = si_default("share")
    stack: StackSpec = IDEAL_STACK  # the connector's measured costs (kvmodel.stacks)
    attention_parallel: str = si_default("attn")  # "dp": each request's KV lives on one rank
    window_transfer: str = si_default("win")  # "full": sliding-window layers cross the wire whole
    framework: str = si_default("fw")  # the serving engine (data/frameworks.csv); v1: "none"
    ep_prefill: int = si_default("ep")  # expert parallelism of a prefill instance (1: off)
    ep_decode: int = si_default("epd")  # expert parallelism of a decode instance
    # True: decode_step_s is estimated (kvmodel.timing) at this scenario's model, GPU, decode
    # TP, batch and prompt length, and follows them through dataclasses.replace
    decode_step_estimated: bool = False
    # the decode instances' GPU when it is not ``gpu`` (None: the same); ``gpu`` is prefill's
    gpu_decode: GpuSpec | None = None

    def __post_init__(self):
        # Ranges and whole-number rules come from kvmodel.inputs (one row per input).
        for name in ("seq_len", "batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        get("seq").check_model(self.seq_len, self.model)  # at most the model's context
        if self.parallel_links is not None and (
            isinstance(self.parallel_links, bool) or not isinstance(self.parallel_links, int)
        ):
            raise ValueError(
                f"parallel_links must be a whole number >= 1, got {self.parallel_links!r}"
            )
        if self.decode_step_estimated:
            object.__setattr__(self, "decode_step_s", _estimated_step_s(self))
            _check_estimated_step(self)
        if self.framework not in FRAMEWORKS:
            raise ValueError(f"framework must be one of {FRAMEWORKS}, got {self.framework!r}")
        check_expert_parallel(self.model, self.ep_prefill, self.tp_prefill, EP_LABELS["ep_prefill"])
        check_expert_parallel(self.model, self.ep_decode, self.tp_decode, EP_LABELS["ep_decode"])
        for name in _checked_fields():
            check_scenario_field(name, getattr(self, name))
        if self.attention_parallel not in ATTENTION_PARALLEL:
            raise ValueError(
                f"attention_parallel must be one of {ATTENTION_PARALLEL}, "
                f"got {self.attention_parallel!r}"
            )
        if self.window_transfer not in WINDOW_TRANSFER:
            raise ValueError(
                f"window_transfer must be one of {WINDOW_TRANSFER}, got {self.window_transfer!r}"
            )
        if self.gpu_decode is not None and not isinstance(self.gpu_decode, GpuSpec):
            raise ValueError(f"gpu_decode must be a GpuSpec or None, got {self.gpu_decode!r}")
        if self.gpu_decode == self.gpu:  # one GPU for both: kept as None (one scenario, one key)
            object.__setattr__(self, "gpu_decode", None)
        if not isinstance(self.stack, StackSpec):
            raise ValueError(f"stack must be a StackSpec, got {self.stack!r}")
        kv_dtype_bytes(self.kv_dtype, scale_group=self.kv_scale_group)
        compressed_bytes_per_value(self.compression, storage_bytes=2.0, group=self.comp_group)
        for g in self.model.groups:  # raises on an impossible TP
            shard_heads(g.kv_heads, self.tp_prefill)
            shard_heads(g.kv_heads, self.tp_decode, "tp_decode")

    @property
    def streams(self) -> int:
        """Links used at once: as given, else the NICs (or per-GPU scale-up links) both
        instances have (``kvmodel.topology``).  A request moves over its TP ranks' links (one
        with data-parallel attention), and the ranks or attention groups holding whole
        requests send theirs at once (:attr:`request_holders`), so a batch smaller than them
        uses fewer links: ``topology.batch_streams``."""
        if self.parallel_links:
            dp = self.data_parallel_attention
            return min(self.parallel_links, self.batch) if dp else self.parallel_links
        return int(self.streams_at(self.batch))

    def streams_at(self, batch):
        """The links none given makes a ``batch`` (a number or an array) use at once."""
        all_links = default_streams(self.gpu, self.link, self.gpus_prefill, self.gpus_decode,
                                    self.gpu_decode)  # fmt: skip
        per_request = 1 if self.data_parallel_attention else default_streams(
            self.gpu, self.link, self.tp_prefill, self.tp_decode, self.gpu_decode)
        return batch_streams(all_links, per_request, self.request_holders, batch)

    @property
    def request_holders(self) -> int:
        """Ranks that hold whole requests, the fewer of the two sides: an expert-parallel
        instance's data-parallel attention groups (EP ÷ TP; the batch is spread over them),
        each of TP ranks with data-parallel attention; 1 for a plain TP instance."""
        dp = self.data_parallel_attention

        def side(tp: int, ep: int) -> int:
            return max(1, ep // tp) * (tp if dp else 1)

        return min(side(self.tp_prefill, self.ep_prefill), side(self.tp_decode, self.ep_decode))

    @property
    def request_cost_s(self) -> float:
        """The serving framework's own cost per P/D request [s] (scheduling, proxy, tokenizer:
        data/frameworks.csv ``pd_request_ms``); part of every TTFT."""
        from . import catalog

        return catalog.get_framework(self.framework).request_cost_s(disaggregated=True)

    def ttft_s(self, prefill_s, exposed_s):
        """TTFT of one P/D request [s]: the framework's request cost + prefill + exposed
        transfer (a queue's wait included, when given) + the first decode step; arrays welcome.
        The one definition every page, table and search uses."""
        return self.request_cost_s + prefill_s + exposed_s + self.decode_step_s

    @property
    def gpus_prefill(self) -> int:
        """GPUs of one prefill instance: its EP when expert-parallel, else its TP."""
        return max(self.tp_prefill, self.ep_prefill)

    @property
    def gpus_decode(self) -> int:
        """GPUs of one decode instance: its EP when expert-parallel, else its TP."""
        return max(self.tp_decode, self.ep_decode)

    @property
    def decode_gpu(self) -> GpuSpec:
        """The decode instances' GPU (``gpu_decode``, else the prefill GPU ``gpu``)."""
        return self.gpu_decode or self.gpu

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
        return self.with_transfer(link=link)

    def with_transfer(self, **changes) -> Scenario:
        """``dataclasses.replace(self, **changes)`` for the fields of :data:`TRANSFER_FIELDS`,
        which neither the decode-step estimate nor any other field's check reads: only the
        fields changed are checked, as ``__post_init__`` checks them, and the estimated step is
        kept (~3 µs where a whole copy takes ~16 µs; the mitigation ladder and the bandwidth
        searches make ~100 a page rerun).  Other fields: ``dataclasses.replace``."""
        if not changes.keys() <= TRANSFER_FIELDS:
            return replace(self, **changes)
        new = object.__new__(Scenario)
        new.__dict__.update(self.__dict__)
        new.__dict__.update(changes)
        checked = _checked_fields()
        for name, value in changes.items():
            if name in checked:
                check_scenario_field(name, value)
        if "compression" in changes:
            compressed_bytes_per_value(new.compression, storage_bytes=2.0, group=new.comp_group)
        if "stack" in changes and not isinstance(new.stack, StackSpec):
            raise ValueError(f"stack must be a StackSpec, got {new.stack!r}")
        return new


# The fields a copy changes without a whole check (Scenario.with_transfer): the link, and how
# the KV crosses it.  None is read by the decode-step estimate or by another field's check.
TRANSFER_FIELDS = frozenset(
    {"link", "efficiency", "compression", "layerwise", "codec_bytes_per_s", "stack",
     "descriptor_s"}
)  # fmt: skip
