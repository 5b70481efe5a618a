"""Build a Scenario from user-facing units (ms, GB/s, percent) and catalog ids.

The CLI and the app both go through here, so both read inputs the same way.
"""

from __future__ import annotations

from dataclasses import replace

from . import catalog
from .specs import LinkSpec, ModelSpec
from .transfer import DEFAULT_CODEC_BYTES_PER_S, Scenario

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
    decode_step_ms: float = 30.0,
    prefill_ms: float | None = None,
    mfu: float = 0.5,
    block_tokens: int = 16,
    descriptor_us: float = 0.0,
    k: float = 1.0,
    share_target: float = 0.2,
) -> Scenario:
    """Scenario from ids and display units.  ``tp`` is the prefill TP; decode TP defaults to it.

    ``kv_dtype`` None means the model's native KV dtype when its checkpoint ships one, else fp16.
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
        decode_step_s=decode_step_ms / 1e3,
        prefill_s=None if prefill_ms is None else prefill_ms / 1e3,
        mfu=mfu,
        block_tokens=block_tokens,
        descriptor_s=descriptor_us * 1e-6,
        k=k,
        share_target=share_target,
    )
