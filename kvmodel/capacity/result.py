"""What a capacity plan returns: :class:`CapacityPlan` (SI units) and its JSON form."""

from __future__ import annotations

import math
from dataclasses import dataclass


def _ms(x):
    return None if x is None or not math.isfinite(x) else x * 1e3


@dataclass(frozen=True)
class NearestPools:
    """The nearest parallelism at which the disaggregated pools meet both targets, when the
    plan's own does not (``search.nearest_pools``)."""

    prefill_tp: int
    decode_tp: int
    prefill_instances: int
    decode_instances: int
    ttft_s: float
    tpot_s: float
    prefill_ep: int = 1
    decode_ep: int = 1

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_instances * max(self.prefill_tp, self.prefill_ep)

    @property
    def decode_gpus(self) -> int:
        return self.decode_instances * max(self.decode_tp, self.decode_ep)

    @property
    def gpus(self) -> int:
        return self.prefill_gpus + self.decode_gpus

    def to_json(self) -> dict:
        return {"prefill_tp": self.prefill_tp, "decode_tp": self.decode_tp,
                "prefill_ep": self.prefill_ep, "decode_ep": self.decode_ep,
                "prefill_instances": self.prefill_instances,
                "decode_instances": self.decode_instances, "prefill_gpus": self.prefill_gpus,
                "decode_gpus": self.decode_gpus, "gpus": self.gpus,
                "ttft_ms": _ms(self.ttft_s), "tpot_ms": _ms(self.tpot_s)}  # fmt: skip


@dataclass(frozen=True)
class NearestColocated:
    """The nearest TP at which colocated serving meets both targets, when the plan's own does
    not (``search.nearest_colocated``)."""

    tp: int
    instances: int
    chunk_tokens: int
    ttft_s: float
    tpot_s: float
    ep: int = 1

    @property
    def gpus(self) -> int:
        return self.instances * max(self.tp, self.ep)

    def to_json(self) -> dict:
        return {"tp": self.tp, "ep": self.ep, "instances": self.instances, "gpus": self.gpus,
                "chunk_tokens": self.chunk_tokens, "ttft_ms": _ms(self.ttft_s),
                "tpot_ms": _ms(self.tpot_s)}  # fmt: skip


@dataclass(frozen=True)
class CapacityPlan:
    """GPUs, network and latency of one workload at one rate (SI units)."""

    rps: float
    prefill_gpus: int
    decode_gpus: int
    disaggregated_gpus: int
    pd_ratio: float  # prefill GPUs ÷ decode GPUs
    colocated_gpus: int
    # colocated − disaggregated (negative: it costs more); None when either side misses a
    # target: no saving is counted against a plan that cannot serve the traffic
    disaggregation_saves_gpus: int | None
    ttft_s: float  # disaggregated, at the percentile asked
    ttft_percentile: float
    tpot_s: float  # the decode step at the pools' mean batch
    link_utilization: float  # the busiest NICs' load (0–1; ≥ 1: the queue grows)
    meets_slo: bool
    limits: dict  # pool -> what sets its size: compute, memory, tpot, ttft, link
    prefill_tp: int
    decode_tp: int
    prefill_instances: int
    decode_instances: int
    decode_batch: float  # mean requests per decode instance
    colocated_tp: int
    colocated_instances: int
    colocated_chunk_tokens: int
    colocated_batch: int
    colocated_ttft_s: float
    colocated_tpot_s: float
    colocated_meets_slo: bool
    nic_bandwidth_needed_bytes_per_s: float | None  # per NIC, for the TTFT percentile
    link_bandwidth_bytes_per_s: float  # per NIC, as set
    nics_per_transfer: int
    demanded_bytes_per_s: float  # KV bytes per second over the whole deployment
    cost_per_hour: float | None
    colocated_cost_per_hour: float | None
    notes: tuple[str, ...] = ()
    prefill_gpu: str = ""  # catalog ids of each pool's GPU
    decode_gpu: str = ""
    cost_per_million_output_tokens: float | None = None  # $ per 10^6 tokens generated
    # when a side misses the targets: the nearest parallelism at which it meets them (None:
    # none does, or ``nearest_searched`` False: not searched, as in a rate sweep)
    disaggregated_nearest: NearestPools | None = None
    colocated_nearest: NearestColocated | None = None
    nearest_searched: bool = False
    # expert parallelism of each side (1: none); an instance is max(TP, EP) GPUs, with EP
    # attention runs data-parallel on EP ÷ TP groups
    prefill_ep: int = 1
    decode_ep: int = 1
    colocated_ep: int = 1
    # the disaggregated TTFT percentile in its parts (pools.ttft_parts; None: not planned)
    ttft_parts: object = None

    @property
    def disaggregated_feasible(self) -> bool:
        """The disaggregated pools meet both targets at the plan's parallelism."""
        return self.meets_slo

    @property
    def colocated_feasible(self) -> bool:
        """Colocated serving meets both targets at the plan's parallelism."""
        return self.colocated_meets_slo

    def to_json(self) -> dict:
        """The plan as JSON-ready values (ms, GB/s where the key says so)."""

        ms = _ms

        def gbs(x):
            return None if x is None else x / 1e9

        return {
            "rps": self.rps,
            "prefill_gpus": self.prefill_gpus,
            "decode_gpus": self.decode_gpus,
            "disaggregated_gpus": self.disaggregated_gpus,
            "pd_ratio": self.pd_ratio,
            "colocated_gpus": self.colocated_gpus,
            "disaggregation_saves_gpus": self.disaggregation_saves_gpus,
            "ttft_p90_ms": ms(self.ttft_s),
            "ttft_breakdown_ms": None if self.ttft_parts is None else self.ttft_parts.as_ms(),
            "ttft_percentile": self.ttft_percentile,
            "tpot_ms": ms(self.tpot_s),
            "link_utilization": self.link_utilization,
            "meets_slo": self.meets_slo,
            "limits": dict(self.limits),
            "prefill_tp": self.prefill_tp,
            "decode_tp": self.decode_tp,
            "prefill_instances": self.prefill_instances,
            "decode_instances": self.decode_instances,
            "decode_batch": self.decode_batch,
            "colocated_tp": self.colocated_tp,
            "colocated_instances": self.colocated_instances,
            "colocated_chunk_tokens": self.colocated_chunk_tokens,
            "colocated_batch": self.colocated_batch,
            "colocated_ttft_ms": ms(self.colocated_ttft_s),
            "colocated_tpot_ms": ms(self.colocated_tpot_s),
            "colocated_meets_slo": self.colocated_meets_slo,
            "nic_bandwidth_needed_gbs": gbs(self.nic_bandwidth_needed_bytes_per_s),
            "link_bandwidth_gbs": gbs(self.link_bandwidth_bytes_per_s),
            "nics_per_transfer": self.nics_per_transfer,
            "demanded_gbs": gbs(self.demanded_bytes_per_s),
            "cost_per_hour": self.cost_per_hour,
            "colocated_cost_per_hour": self.colocated_cost_per_hour,
            "prefill_gpu": self.prefill_gpu,
            "decode_gpu": self.decode_gpu,
            "cost_per_million_output_tokens": self.cost_per_million_output_tokens,
            "notes": list(self.notes),
            "prefill_ep": self.prefill_ep,
            "decode_ep": self.decode_ep,
            "colocated_ep": self.colocated_ep,
            "disaggregated_feasible": self.disaggregated_feasible,
            "colocated_feasible": self.colocated_feasible,
            "disaggregated_nearest": _nearest(self.disaggregated_nearest),
            "colocated_nearest": _nearest(self.colocated_nearest),
        }


def _nearest(n) -> dict | None:
    return None if n is None else n.to_json()
