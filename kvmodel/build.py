"""Build a Scenario from user-facing units (ms, GB/s, percent) and catalog ids.

:func:`to_scenario` is the one way from display-unit values keyed by input name (the app's
link, the CLI's options, the widgets) to a ``Scenario``: every conversion is a field of the
input's row (``kvmodel.inputs``).  :func:`build_scenario` is the Python API with keyword
arguments and version 1's defaults (for scripts).
"""

from __future__ import annotations

from dataclasses import replace

from . import catalog
from . import inputs as I
from .specs import LinkSpec, ModelSpec, StackSpec
from .transfer import Scenario

V1 = I.V1_DEFAULTS  # build_scenario's defaults: version 1's (see its docstring)
ARTICLE_STACK = V1["stack"]
ARTICLE_DECODE_STEP_MS = V1["step"]
DEFAULT_MODEL = I.default("model")
DEFAULT_LINK = I.default("link")
DEFAULT_GPU = I.default("gpu")


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
            bandwidth_bytes_per_s=I.get("bw").to_si(bandwidth_gbs),
        )
    return LinkSpec(
        id="custom",
        name=f"Custom {bandwidth_gbs:g} GB/s",
        kind="custom",
        bandwidth_bytes_per_s=I.get("bw").to_si(bandwidth_gbs),
        latency_s=I.get("lat").to_si(latency_us),
        source="user input",
    )


def _d(name):
    """A row's default as build_scenario's keyword takes it (its CLI-only and SI spellings)."""
    row = I.get(name)
    return row.to_si(row.default) if row.scale != 1 and row.kind == "float" else row.default


def build_scenario(
    *,
    model: str | ModelSpec = DEFAULT_MODEL,
    link: str = DEFAULT_LINK,
    gpu: str = DEFAULT_GPU,
    bandwidth_gbs: float | None = None,
    latency_us: float | None = None,
    seq_len: int = I.default("seq"),
    batch: int = I.default("batch"),
    efficiency: float = _d("eff"),
    parallel_links: int | None = None,
    kv_dtype: str | None = None,
    kv_scale_group: int = I.default("kv_scale_group"),
    compression: str = I.default("comp"),
    comp_group: int = I.default("comp_group"),
    codec_gbs: float = I.default("codec"),
    layerwise: bool = bool(I.default("lw")),
    tp: int = V1["tp"],
    tp_decode: int | None = None,
    decode_step_ms: float | None = ARTICLE_DECODE_STEP_MS,
    prefill_ms: float | None = None,
    mfu: float = I.default("mfu"),
    block_tokens: int = I.default("block_tokens"),
    descriptor_us: float = I.default("descriptor_us"),
    k: float = I.default("k"),
    share_target: float = _d("share"),
    stack: str | StackSpec = ARTICLE_STACK,
    attention_parallel: str | None = None,
    window_transfer: str = I.default("win"),
    framework: str = I.V1_DEFAULTS["fw"],
    ep: int = I.default("ep"),
    ep_decode: int = I.default("epd"),
    gpu_decode: str | None = None,
) -> Scenario:
    """Scenario from ids and display units.  ``tp`` is the prefill TP; decode TP defaults to it.

    ``kv_dtype`` None means the model's native KV dtype when its checkpoint ships one, else fp16.
    This Python API keeps version 1's defaults (``kvmodel.inputs.V1_DEFAULTS``), the source
    article's wire-speed arithmetic (``stack="ideal"``, a 30 ms decode step, TP 1), so scripts
    written against it keep their numbers; the app and the CLI start from ``kvmodel.inputs``'
    defaults (a measured stack, an estimated step) through :func:`to_scenario`.  Efficiency and
    share target are fractions here (the rows' percent × their scale).
    ``framework`` "none" (no serving-engine costs) keeps version 1's arithmetic here too.
    ``decode_step_ms`` None estimates the step (``kvmodel.timing.estimate_decode_step_s``).
    ``attention_parallel`` None means the model's usual serving: ``dp`` for MLA, else ``tp``.
    ``gpu_decode`` None (or empty): the decode instances run on ``gpu`` too.
    """
    spec = model if isinstance(model, ModelSpec) else catalog.get_model(model)
    chosen = _chosen_link(link, bandwidth_gbs, latency_us)
    if not (codec_gbs > 0):
        raise ValueError(f"codec throughput must be > 0 GB/s, got {codec_gbs!r}")
    row = I.BY_NAME
    return Scenario(
        model=spec,
        link=chosen,
        gpu=catalog.get_gpu(gpu),
        seq_len=seq_len,
        batch=batch,
        efficiency=efficiency,
        parallel_links=parallel_links,
        kv_dtype=kv_dtype or row["kvd"].default_for(spec),
        kv_scale_group=kv_scale_group,
        compression=compression,
        comp_group=comp_group,
        codec_bytes_per_s=row["codec"].to_si(codec_gbs),
        layerwise=layerwise,
        tp_prefill=tp,
        tp_decode=tp if tp_decode is None else tp_decode,
        decode_step_s=row["step"].to_si(
            row["step"].given if decode_step_ms is None else decode_step_ms
        ),
        decode_step_estimated=decode_step_ms is None,
        prefill_s=None if prefill_ms is None else row["prefill"].to_si(prefill_ms),
        mfu=mfu,
        block_tokens=block_tokens,
        descriptor_s=row["descriptor_us"].to_si(descriptor_us),
        k=k,
        share_target=share_target,
        stack=stack if isinstance(stack, StackSpec) else catalog.get_stack(stack),
        attention_parallel=attention_parallel or row["attn"].default_for(spec),
        window_transfer=window_transfer,
        framework=framework,
        ep_prefill=ep,
        ep_decode=ep_decode,
        gpu_decode=_decode_gpu(gpu, gpu_decode),
    )


def _chosen_link(link: str | None, bandwidth_gbs, latency_us) -> LinkSpec:
    """The catalog link, or a custom one; a given bandwidth or latency overrides the link's."""
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
        chosen = replace(chosen, latency_s=I.get("lat").to_si(latency_us))
    return chosen


def _decode_gpu(gpu: str, gpu_decode: str | None):
    """The decode GPU's spec, None when it is not given or is the prefill GPU."""
    if not gpu_decode:
        return None
    spec = catalog.get_gpu(gpu_decode)
    return None if spec == catalog.get_gpu(gpu) else spec


def default_attention_parallel(model: ModelSpec) -> str:
    """How the model is usually served: MLA models (DeepSeek) with data-parallel attention."""
    return I.attention_default(model)


def _si(row: I.Input, value, values: dict, model: ModelSpec):
    """One row's display value as its Scenario field takes it (the row says how)."""
    if row.catalog is not None:  # an id: the Scenario holds the catalog's spec
        if value in (None, "") and row.default == "":  # an optional id left empty: None
            return None
        return getattr(catalog, f"get_{row.catalog}")(value)
    if value in (None, "") and (row.follows or row.default_from):
        value = row.default_for(model, values)  # tpd: the prefill TP; kvd, attn: the model's
    if row.est and value in (None, "est"):
        return row.to_si(row.given) if row.est_flag else None
    if row.auto_at is not None and (value is None or value == row.auto_at):
        return None
    if row.kind == "flag":
        return bool(int(value))
    if row.kind == "int":
        return int(value)
    if row.kind == "float":
        return row.to_si(value)
    return value


SCENARIO_ROWS = tuple(r for r in I.INPUTS if r.field)  # one Scenario field each


def to_scenario(values: dict, *, model: ModelSpec | None = None) -> Scenario:
    """A Scenario from display-unit values keyed by input name (``kvmodel.inputs``).

    The app's link values, the CLI's options and the widgets all come through here.  A missing
    name takes its row's default, or means "not given" (``Input.missing``: the link's latency,
    the model's KV dtype, the prefill TP for decode, an estimated prefill), as ``None`` does.
    ``link == "custom"`` takes ``bw`` and ``lat`` (their defaults when missing).  Values the app
    does not count (``only_with``) are dropped by ``kvmodel.inputs.applicable`` first.
    """
    v = {r.name: values.get(r.name, r.missing()) for r in I.INPUTS}
    spec = model if model is not None else catalog.get_model(v["model"])
    custom = v["link"] == I.CUSTOM_LINK
    bw, lat = v["bw"], v["lat"]
    if custom:
        bw = I.default("bw") if bw is None else bw
        lat = I.default("lat") if lat is None else lat
    chosen = _chosen_link(None if custom else v["link"], None if bw is None else float(bw),
                          None if lat is None else float(lat))  # fmt: skip
    fields = {r.field: _si(r, v[r.name], v, spec) for r in SCENARIO_ROWS}
    fields.update({r.est_flag: v[r.name] in (None, "est") for r in SCENARIO_ROWS if r.est_flag})
    return Scenario(model=spec, link=chosen, **fields)


scenario_from_inputs = to_scenario  # its earlier name (tests and scripts)


def inputs_from_scenario(sc: Scenario) -> tuple[dict, list[str]]:
    """The reverse of :func:`to_scenario`: display-unit values by input name.

    Also returns what the app's link cannot carry: the CLI-only inputs that differ from their
    defaults, and a GPU, model or link outside the catalog (the caller may carry a model as
    ``cfg``).  Links and models are given by id; ``bw``/``lat`` only for a link not in the
    catalog (then ``link`` is ``custom``).
    """
    values: dict = {}
    gaps: list[str] = []
    for row in SCENARIO_ROWS:
        value = _display(row, getattr(sc, row.field), sc)
        if not row.url:
            if value != row.default:
                gaps.append(f"{row.label} {value:g}" if isinstance(value, float) else row.label)
            continue
        values[row.name] = value
    if catalog.gpus().get(sc.gpu.id) != sc.gpu:
        gaps.append("a GPU outside the catalog")
    if catalog.stacks().get(sc.stack.id) != sc.stack:
        gaps.append("a transfer stack outside the catalog")
    values["model"] = sc.model.id
    if catalog.links().get(sc.link.id) == sc.link:
        values["link"] = sc.link.id
    else:
        values.update(
            link=I.CUSTOM_LINK,
            bw=I.get("bw").from_si(sc.link.bandwidth_bytes_per_s),
            lat=I.get("lat").from_si(sc.link.latency_s),
        )
    return values, gaps


def _display(row: I.Input, si, sc: Scenario):
    """One Scenario field as its row's display value (``_si`` reversed)."""
    if row.catalog is not None:
        return "" if si is None else si.id
    if row.kind == "choice":
        return si
    if row.est and (si is None or (row.est_flag and getattr(sc, row.est_flag))):
        return "est"
    if row.auto_at is not None:
        return int(si or row.auto_at)
    if row.kind == "flag":
        return int(bool(si))
    if row.kind == "int":
        return int(si)
    return row.from_si(si)
