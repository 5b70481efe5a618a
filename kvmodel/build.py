"""Build a Scenario from user-facing units (ms, GB/s, percent) and catalog ids.

The CLI and the app both go through here, so both read inputs the same way.
"""

from __future__ import annotations

from dataclasses import replace

from . import catalog
from .inputs import DEFAULT_DECODE_STEP_S, DEFAULT_SHARE_TARGET
from .specs import LinkSpec, ModelSpec, StackSpec
from .transfer import DEFAULT_CODEC_BYTES_PER_S, Scenario

ARTICLE_STACK = "ideal"  # build_scenario's defaults: version 1's (see its docstring)
ARTICLE_DECODE_STEP_MS = 30.0
DEFAULT_MODEL = "llama-3.1-70b"
DEFAULT_LINK = "100gbe"
DEFAULT_GPU = "h100-sxm"


def custom_link(bandwidth_gbs: float, *, latency_us: float = 0.0, base: LinkSpec | None = None):
    """A link with a per-direction bandwidth override [GB/s], keeping the base link's latency."""
    if not (bandwidth_gbs > 0) or bandwidth_gbs > 1e6:
        raise ValueError(
            f"bandwidth must be in (0, 1,000,000] GB/s per direction, got {bandwidth_gbs!r}"
        )
    if base is not None:
        return replace(
            base,
            id=f"{base.id}@{bandwidth_gbs:g}",
            name=f"{base.name} at {bandwidth_gbs:g} GB/s",
            bandwidth_bytes_per_s=bandwidth_gbs * 1e9,
        )
    return LinkSpec(
        id="custom",
        name=f"Custom {bandwidth_gbs:g} GB/s",
        kind="custom",
        bandwidth_bytes_per_s=bandwidth_gbs * 1e9,
        latency_s=latency_us * 1e-6,
        source="user input",
    )


def build_scenario(
    *,
    model: str | ModelSpec = DEFAULT_MODEL,
    link: str = DEFAULT_LINK,
    gpu: str = DEFAULT_GPU,
    bandwidth_gbs: float | None = None,
    latency_us: float | None = None,
    seq_len: int = 1024,
    batch: int = 1,
    efficiency: float = 1.0,
    parallel_links: int | None = None,
    kv_dtype: str | None = None,
    kv_scale_group: int = 0,
    compression: str = "none",
    comp_group: int = 128,
    codec_gbs: float = DEFAULT_CODEC_BYTES_PER_S / 1e9,
    layerwise: bool = False,
    tp: int = 1,
    tp_decode: int | None = None,
    decode_step_ms: float | None = ARTICLE_DECODE_STEP_MS,
    prefill_ms: float | None = None,
    mfu: float = 0.5,
    block_tokens: int = 16,
    descriptor_us: float = 0.0,
    k: float = 1.0,
    share_target: float = DEFAULT_SHARE_TARGET,
    stack: str | StackSpec = ARTICLE_STACK,
    attention_parallel: str | None = None,
    window_transfer: str = "window",
    framework: str = "none",
    ep: int = 1,
    ep_decode: int = 1,
) -> Scenario:
    """Scenario from ids and display units.  ``tp`` is the prefill TP; decode TP defaults to it.

    ``kv_dtype`` None means the model's native KV dtype when its checkpoint ships one, else fp16.
    This Python API keeps version 1's defaults, the source article's wire-speed arithmetic
    (``stack="ideal"``, a 30 ms decode step), so scripts written against it keep their numbers;
    the app and the CLI start from ``kvmodel.inputs``' defaults (a measured stack, an estimated
    step) through :func:`scenario_from_inputs`.
    ``decode_step_ms`` None estimates the step (``kvmodel.timing.estimate_decode_step_s``).
    ``attention_parallel`` None means the model's usual serving: ``dp`` for MLA, else ``tp``.
    ``framework`` "none" (no serving-engine costs) keeps version 1's arithmetic here too.
    """
    spec = model if isinstance(model, ModelSpec) else catalog.get_model(model)
    base = catalog.get_link(link) if link else None
    if bandwidth_gbs is not None:
        chosen = custom_link(bandwidth_gbs, latency_us=latency_us or 0.0, base=base)
    elif base is None:
        raise ValueError("give a link id or a bandwidth")
    else:
        chosen = base
    if latency_us is not None:
        if not (0 <= latency_us <= 1e6):
            raise ValueError(f"latency must be in [0, 1,000,000] µs, got {latency_us!r}")
        chosen = replace(chosen, latency_s=latency_us * 1e-6)
    if not (codec_gbs > 0):
        raise ValueError(f"codec throughput must be > 0 GB/s, got {codec_gbs!r}")
    return Scenario(
        model=spec,
        link=chosen,
        gpu=catalog.get_gpu(gpu),
        seq_len=seq_len,
        batch=batch,
        efficiency=efficiency,
        parallel_links=parallel_links,
        kv_dtype=kv_dtype or spec.kv_dtype_native or "fp16",
        kv_scale_group=kv_scale_group,
        compression=compression,
        comp_group=comp_group,
        codec_bytes_per_s=codec_gbs * 1e9,
        layerwise=layerwise,
        tp_prefill=tp,
        tp_decode=tp if tp_decode is None else tp_decode,
        decode_step_s=DEFAULT_DECODE_STEP_S if decode_step_ms is None else decode_step_ms / 1e3,
        decode_step_estimated=decode_step_ms is None,
        prefill_s=None if prefill_ms is None else prefill_ms / 1e3,
        mfu=mfu,
        block_tokens=block_tokens,
        descriptor_s=descriptor_us * 1e-6,
        k=k,
        share_target=share_target,
        stack=stack if isinstance(stack, StackSpec) else catalog.get_stack(stack),
        attention_parallel=attention_parallel or default_attention_parallel(spec),
        window_transfer=window_transfer,
        framework=framework,
        ep_prefill=ep,
        ep_decode=ep_decode,
    )


def default_attention_parallel(model: ModelSpec) -> str:
    """How the model is usually served: MLA models (DeepSeek) with data-parallel attention."""
    return "dp" if model.attention == "mla" else "tp"


def scenario_from_inputs(values: dict, *, model: ModelSpec | None = None) -> Scenario:
    """A Scenario from display-unit values keyed by input name (``kvmodel.inputs``).

    The app's link values and the CLI's options both come through here.  Missing names take
    their row's default; ``None`` means "not given" (the link's latency, the model's KV dtype,
    the prefill TP for decode, an estimated prefill).  ``link == "custom"`` needs ``bw``.
    """
    from . import inputs as I

    def get(name):
        return values.get(name, I.default(name))

    link = get("link")
    custom = link == I.CUSTOM_LINK
    bw, lat = values.get("bw"), values.get("lat")
    if custom and bw is None:
        bw = I.default("bw")
    prefill = values.get("prefill")
    par = values.get("par")
    return build_scenario(
        model=model if model is not None else get("model"),
        link=None if custom else link,
        bandwidth_gbs=None if bw is None else float(bw),
        latency_us=(I.default("lat") if custom else None) if lat is None else float(lat),
        gpu=get("gpu"),
        seq_len=int(get("seq")),
        batch=int(get("batch")),
        efficiency=float(get("eff")) * I.get("eff").scale,
        parallel_links=int(par) if par else None,
        kv_dtype=values.get("kvd"),
        kv_scale_group=int(get("kv_scale_group")),
        compression=get("comp"),
        comp_group=int(get("comp_group")),
        codec_gbs=float(get("codec")),
        layerwise=bool(int(get("lw"))),
        tp=int(get("tp")),
        tp_decode=None if values.get("tpd") is None else int(values["tpd"]),
        decode_step_ms=None if get("step") in (None, "est") else float(get("step")),
        prefill_ms=None if prefill in (None, "est") else float(prefill),
        mfu=float(get("mfu")),
        block_tokens=int(get("block_tokens")),
        descriptor_us=float(get("descriptor_us")),
        k=float(get("k")),
        share_target=float(get("share")) * I.get("share").scale,
        stack=get("stack"),
        attention_parallel=values.get("attn"),
        window_transfer=get("win"),
        framework=get("fw"),
        ep=int(get("ep")),
        ep_decode=int(get("epd")),
    )


def inputs_from_scenario(sc: Scenario) -> tuple[dict, list[str]]:
    """The reverse of :func:`scenario_from_inputs`: display-unit values by input name.

    Also returns what the app's link cannot carry: the CLI-only inputs that differ from their
    defaults, and a GPU, model or link outside the catalog (the caller may carry a model as
    ``cfg``).  Links and models are given by id; ``bw``/``lat`` only for a link not in the
    catalog (then ``link`` is ``custom``).
    """
    from . import inputs as I

    values: dict = {}
    gaps: list[str] = []
    for row in I.INPUTS:
        if not row.field:
            continue
        si = getattr(sc, row.field)
        if row.kind == "choice":
            values[row.name] = si
            continue
        if row.name == "prefill":
            value = "est" if si is None else float(si / row.scale)
        elif row.name == "step" and sc.decode_step_estimated:
            value = "est"
        elif row.name == "par":
            value = int(si or 0)
        elif row.kind == "flag":
            value = int(bool(si))
        elif row.kind == "int":
            value = int(si)
        elif row.kind == "float":
            value = float(si / row.scale)
        else:
            value = si
        if not row.url:
            if value != row.default:
                gaps.append(f"{row.label} {value:g}" if isinstance(value, float) else row.label)
            continue
        values[row.name] = value
    if catalog.gpus().get(sc.gpu.id) != sc.gpu:
        gaps.append("a GPU outside the catalog")
    if catalog.stacks().get(sc.stack.id) != sc.stack:
        gaps.append("a transfer stack outside the catalog")
    values["stack"] = sc.stack.id
    values["gpu"] = sc.gpu.id
    values["model"] = sc.model.id
    if catalog.links().get(sc.link.id) == sc.link:
        values["link"] = sc.link.id
    else:
        values.update(
            link=I.CUSTOM_LINK,
            bw=sc.link.bandwidth_bytes_per_s / I.get("bw").scale,
            lat=sc.link.latency_s / I.get("lat").scale,
        )
    return values, gaps
