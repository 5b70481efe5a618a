"""Where the GPUs sit: nodes, NICs and scale-up (NVLink) domains.

A scale-out link (InfiniBand, Ethernet, EFA) is one NIC: an instance of ``tp`` GPUs drives as
many NICs as its GPUs have (``tp × nics_per_node ÷ gpus_per_node``, at least one), so a node
with 4 NICs for 8 GPUs gives a TP 8 instance 4 streams, not 8.  A scale-up link (NVLink,
Infinity Fabric, PCIe inside one host) is per GPU and only joins GPUs of one domain: prefill
and decode must fit in it together (their GPUs, max(TP, EP) each: ``gpus_prefill + gpus_decode ≤
domain``), 8 GPUs on HGX, 72 on GB200 NVL72, the host's GPUs over PCIe.
"""

from __future__ import annotations

import numpy as np

from .specs import GpuSpec, LinkSpec

SCALE_UP_KINDS = ("nvlink", "fabric", "pcie")


def is_scale_up(link: LinkSpec) -> bool:
    return link.kind in SCALE_UP_KINDS


def domain_gpus(gpu: GpuSpec, link: LinkSpec | None = None) -> int:
    """GPUs one scale-up domain joins: the NVLink domain, or one host over PCIe."""
    if link is not None and link.kind == "pcie":
        return gpu.gpus_per_node
    return gpu.nvlink_domain_gpus


def nics(gpu: GpuSpec, tp: int) -> int:
    """Scale-out NICs an instance of ``tp`` GPUs has (whole NICs, at least one)."""
    return max(1, tp * gpu.nics_per_node // gpu.gpus_per_node)


def default_streams(gpu: GpuSpec, link: LinkSpec, tp_prefill: int, tp_decode: int,
                    gpu_decode: GpuSpec | None = None) -> int:  # fmt: skip
    """Links used at once when the user gives none: per-GPU links over scale-up, NICs otherwise.

    The KV of each decode rank travels on its own stream; the side with fewer links bounds it
    (``gpu_decode``: the decode instances' GPU when it is not ``gpu``, with its own NICs).
    """
    if is_scale_up(link):
        return min(tp_prefill, tp_decode)
    return min(nics(gpu, tp_prefill), nics(gpu_decode or gpu, tp_decode))


def batch_streams(all_links: int, per_request: int, holders: int, batch):
    """Links a batch's transfer uses at once: ``per_request`` links for each request moving,
    as many requests at once as there are ``holders`` (ranks or expert-parallel attention
    groups holding whole requests: each sends its own), at most ``all_links`` (the NICs of
    every GPU of both instances, :func:`default_streams` at their GPU counts)."""
    return np.minimum(all_links, per_request * np.minimum(batch, holders))


def gpu_has_link(gpu: GpuSpec, link: LinkSpec) -> bool:
    """Whether ``gpu`` can use ``link``: any scale-out network and PCIe; of the GPU-to-GPU
    fabrics (NVLink, Infinity Fabric) only its own (``GpuSpec.nvlink``): an H100 has no NVLink
    5, an L40S or an MI300X no NVLink at all (session 20's browser review: they were offered)."""
    return link.kind not in FABRIC_KINDS or link.id == gpu.nvlink


FABRIC_KINDS = ("nvlink", "fabric")  # scale-up kinds a GPU has only as its own


def scale_up_feasible(gpu: GpuSpec, gpus_prefill: int, gpus_decode: int, link=None) -> bool:
    """True when a prefill and a decode instance of these many GPUs each (max(TP, EP): an
    expert-parallel instance spans its EP) fit in one scale-up domain together, of a
    ``link`` the GPU has (``gpu_has_link``; None: the GPU's own domain)."""
    if link is not None and not gpu_has_link(gpu, link):
        return False
    return gpus_prefill + gpus_decode <= domain_gpus(gpu, link)


def par_text(tp: int, ep: int = 1) -> str:
    """An instance's parallelism in words: 'TP 8', or 'EP 32' (attention TP 1, data-parallel),
    'EP 32 (attention TP 2)'."""
    if ep <= 1:
        return f"TP {tp}"
    return f"EP {ep}" + ("" if tp == 1 else f" (attention TP {tp})")


def unbuildable_links(gpu: GpuSpec, gpus_prefill: int, gpus_decode: int,
                      links) -> tuple[str, ...]:  # fmt: skip
    """The ids of the scale-up ``links`` (LinkSpecs) whose domain cannot hold a prefill and a
    decode instance of these many GPUs together (``scale_up_feasible``): their rows are not a
    deployment one can build at this parallelism."""
    return tuple(
        lk.id
        for lk in links
        if is_scale_up(lk) and not scale_up_feasible(gpu, gpus_prefill, gpus_decode, lk)
    )
