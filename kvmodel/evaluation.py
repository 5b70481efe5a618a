"""``evaluate``: every headline number of one scenario (bytes, transfer, TTFT, share, critical
length, memory) as one frozen ``Evaluation`` in SI units."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

from . import catalog
from .critical import critical_seq_len
from .memory import instance_memory, memory_notes
from .scenario import Scenario, decode_step_parts_of, prefill_parts_of
from .size import kv_bytes
from .specs import IDEAL_STACK, WEIGHT_DTYPE_BYTES
from .steps import PrefillParts, StepParts, TtftParts
from .timing import decode_step_lower_bound_s
from .topology import domain_gpus, gpu_has_link, is_scale_up, par_text, scale_up_feasible
from .wire import transfer, wire_ratio

# A transfer library measured under two engines (data/stacks.csv): the engine of each build, so
# a scenario serving with one engine over the other's build is told which stack is its own.
STACK_ENGINE = {"mooncake": "vllm", "mooncake-sglang": "sglang"}


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
    notes: tuple[str, ...] = field(default=())
    scale_up_feasible: bool = True  # prefill + decode GPUs fit in one NVLink domain
    weights_bytes_per_gpu: float = 0.0  # decode instance
    weights_bytes_per_gpu_prefill: float = 0.0
    max_concurrent_requests: int = 0  # requests of this length one decode instance holds
    fits_in_memory: bool = True  # weights and the batch's KV fit on both instances
    # the notes that say the deployment cannot be built (memory, NVLink domain); pages warn
    problems: tuple[str, ...] = ()
    max_concurrent_requests_prefill: int = 0
    framework_request_s: float = 0.0  # the serving framework's per-request cost (in ttft_s)
    step_parts: StepParts | None = None  # the estimated decode step's terms (None: given)
    prefill_parts: PrefillParts | None = None  # the estimated prefill's terms (None: given)

    @cached_property
    def _ideal(self):
        """The same transfer at wire speed (stack "ideal"): the source article's arithmetic.
        Computed when first asked: tables of many scenarios (Mitigations, Compare) never show
        it, and it is a scenario copy and a transfer each."""
        sc = self.scenario
        return transfer(sc if sc.stack.is_ideal else replace(sc, stack=IDEAL_STACK))

    @cached_property
    def critical_seq_len(self) -> int | None:
        """The critical sequence length of the scenario (``critical.critical_seq_len``) [tokens],
        None when no prompt up to the model's max context reaches it.  Computed when first
        asked: it is a search over prompt lengths (~0.15-1 ms), and a chart of many options
        (Mitigations) shows none of them (bench/README.md, Session 21)."""
        return critical_seq_len(self.scenario)

    @property
    def ideal_transfer_s(self) -> float:
        """The whole transfer at wire speed [s]."""
        return float(self._ideal.transfer_s)

    @property
    def ideal_exposed_s(self) -> float:
        """The exposed transfer at wire speed [s]."""
        return float(self._ideal.exposed_s)

    @property
    def transfer_terms(self) -> dict[str, float]:
        """The whole transfer in its terms [s], as ``wire.transfer`` adds them: they sum to
        ``transfer_s`` when the cache is sent whole (layer by layer, the chunks' overlap with
        the prefill sets the whole and the exposed part instead)."""
        sc = self.scenario
        return {
            "link latency": self.latency_s,
            "stack per request": 0.0 if sc.stack.is_ideal else sc.stack.request_s,
            "stack per chunk": sc.stack.chunk_s,
            "bytes and messages through the stack": self.serialization_s,
            "quantize/dequantize": self.codec_s,
            "descriptors": self.descriptor_s,
        }

    @property
    def ttft_parts(self) -> TtftParts:
        """TTFT in its parts; they add up to ``ttft_s`` (no queue: one request alone)."""
        return TtftParts(request_s=self.framework_request_s, queue_s=0.0,
                         prefill_s=self.prefill_s, transfer_s=self.exposed_s,
                         first_step_s=self.decode_step_s)  # fmt: skip


def _busiest_share(sc: Scenario, kv, *, prefill: bool) -> float:
    """The KV the busiest GPU of a side holds [bytes] (``kv``: the batch's ``size.KvBytes``).

    The batch is spread over the ranks that hold whole requests: an expert-parallel instance's
    EP ÷ TP attention groups (each splits its requests over its TP ranks as TP does), and with
    data-parallel attention every rank of the decode side (whole requests, no replicated
    heads), so the busiest receives ⌈batch ÷ ranks⌉ requests (at batch 1, one takes it all)."""
    tp, ep = (sc.tp_prefill, sc.ep_prefill) if prefill else (sc.tp_decode, sc.ep_decode)
    groups = max(1, ep // tp)
    if sc.data_parallel_attention and not prefill:
        return float(kv.total) / sc.batch * -(-sc.batch // (groups * tp))
    shard = float(kv.per_gpu_prefill if prefill else kv.per_gpu_decode)
    return shard if groups == 1 else shard / sc.batch * -(-sc.batch // groups)


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
    request = sc.request_cost_s
    ttft = sc.ttft_s(prefill, exposed)
    lb = float(
        decode_step_lower_bound_s(
            sc.model,
            sc.seq_len,
            sc.batch,
            gpu=sc.decode_gpu,
            tp=max(sc.tp_decode, sc.ep_decode),  # the instance's GPUs share the reads
            kv_dtype=sc.kv_dtype,
            weight_bytes=WEIGHT_DTYPE_BYTES[sc.model.weight_dtype],
        )
    )
    notes = []
    if sc.model.kv_dtype_native and sc.kv_dtype != sc.model.kv_dtype_native:
        notes.append(
            f"{sc.model.id} ships a {sc.model.kv_dtype_native} KV cache; "
            f"the scenario stores it as {sc.kv_dtype}"
        )
    if sc.compression != "none" and wire_ratio(sc) == 1.0:
        notes.append(
            f"{sc.compression} transfer compression saves nothing on a {sc.kv_dtype} cache"
        )
    if float(t.raw_wire_bytes) > float(kv.total) * (1 + 1e-12) and sc.window_transfer == "window":
        notes.append("replicated KV heads cross the link once per decode GPU")
    built_for = STACK_ENGINE.get(sc.stack.id)
    own = next((s for s, e in STACK_ENGINE.items() if e == sc.framework), None)
    if built_for not in (None, sc.framework) and own is not None:
        fw, other = catalog.get_framework(sc.framework), catalog.get_stack(own)
        measured_under = catalog.get_framework(built_for).name
        notes.append(
            f"the {sc.stack.name} stack was measured under {measured_under}, while "
            f"{fw.name} serves this scenario; {fw.name}'s own build is the {other.name} stack "
            f"({other.request_s * 1e3:,.3g} ms per request against "
            f"{sc.stack.request_s * 1e3:,.3g} ms)"
        )
    notes.extend(_allreduce_note(sc))
    problems, scale_up_ok, mem_p, mem_d = _deployment(sc)
    notes.extend(problems)
    return Evaluation(
        scenario=sc,
        kv_total_bytes=float(kv.total),
        kv_state_bytes=float(kv.state),
        kv_per_token_bytes=float(kv.per_token),
        kv_per_layer_bytes=float(kv.per_attention_layer),
        kv_per_gpu_prefill_bytes=_busiest_share(sc, kv, prefill=True),
        kv_per_gpu_decode_bytes=_busiest_share(sc, kv, prefill=False),
        raw_wire_bytes=float(t.raw_wire_bytes),
        wire_bytes=float(t.wire_bytes),
        compression_ratio=wire_ratio(sc),
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
        framework_request_s=request,
        step_parts=decode_step_parts_of(sc),
        prefill_parts=prefill_parts_of(sc),
        transfer_share_of_ttft=exposed / ttft,
        transfer_over_decode=exposed / sc.decode_step_s,
        over_share_target=exposed / ttft > sc.share_target,
        notes=tuple(notes),
        problems=problems,
        max_concurrent_requests_prefill=mem_p.max_concurrent_requests,
        scale_up_feasible=scale_up_ok,
        weights_bytes_per_gpu=mem_d.weights_bytes_per_gpu,
        weights_bytes_per_gpu_prefill=mem_p.weights_bytes_per_gpu,
        max_concurrent_requests=mem_d.max_concurrent_requests,
        fits_in_memory=mem_p.fits and mem_d.fits,
    )


def deployment_problems(sc: Scenario) -> tuple[str, ...]:
    """Why the deployment of ``sc`` cannot be built as set (NVLink domain, memory); empty when
    it can.  ``evaluate(sc).problems``, without the rest of the evaluation (transfers, the
    critical length): every page checks it, most need nothing else of ``evaluate``."""
    return _deployment(sc)[0]


# A prefill whose TP all-reduce takes more than this share of it is said to be bound by it
ALLREDUCE_BOUND_SHARE = 0.5


def _allreduce_note(sc: Scenario) -> list[str]:
    """A note when the estimated prefill is mostly its TP all-reduce (session 19's review:
    Llama-3.1-70B at TP 8 on L40S spends 96 % of a 199 s prefill all-reducing through host
    memory, while the page called its transfer 'under the 20 % line' and said no more)."""
    parts = prefill_parts_of(sc)
    if parts is None or not parts.total_s > 0:
        return []
    share = float(parts.tp_allreduce_s) / float(parts.total_s)
    if share <= ALLREDUCE_BOUND_SHARE:
        return []
    return [
        f"the prefill spends {share:.0%} of its time in the TP {sc.tp_prefill} all-reduce over "
        f"{catalog.get_link(sc.gpu.nvlink).name}: a smaller prefill TP or GPUs with a faster "
        "scale-up link shorten TTFT far more than any change to the KV transfer"
    ]


@lru_cache(maxsize=1024)
def _deployment(sc: Scenario):
    """(problems, scale-up feasible, prefill memory, decode memory) of ``sc``."""
    scale_up_ok = scale_up_feasible(
        sc.gpu, sc.gpus_prefill, sc.gpus_decode, sc.link if is_scale_up(sc.link) else None
    )
    problems = []  # why the deployment cannot be built as set (also in ``notes``)
    if not gpu_has_link(sc.gpu, sc.link):
        problems.append(
            f"{sc.gpu.name} has no {sc.link.name} (its GPU-to-GPU link is "
            f"{catalog.get_link(sc.gpu.nvlink).name}), so this link cannot carry the transfer"
        )
    elif is_scale_up(sc.link) and not scale_up_ok:
        problems.append(
            f"{sc.link.name} joins at most {domain_gpus(sc.gpu, sc.link)} GPUs: prefill "
            f"{par_text(sc.tp_prefill, sc.ep_prefill)} + decode "
            f"{par_text(sc.tp_decode, sc.ep_decode)} do not fit in one domain, so this link "
            "cannot carry the transfer"
        )
    mem_kw = dict(seq_len=sc.seq_len, batch=sc.batch, kv_dtype=sc.kv_dtype,
                  kv_scale_group=sc.kv_scale_group)  # fmt: skip
    mem_d = instance_memory(
        sc.model,
        sc.decode_gpu,
        tp=sc.tp_decode,
        data_parallel_attention=sc.data_parallel_attention,
        ep=sc.ep_decode,
        **mem_kw,
    )
    mem_p = instance_memory(sc.model, sc.gpu, tp=sc.tp_prefill, ep=sc.ep_prefill, **mem_kw)
    problems.extend(memory_notes(sc, mem_p, mem_d))
    return tuple(problems), scale_up_ok, mem_p, mem_d
