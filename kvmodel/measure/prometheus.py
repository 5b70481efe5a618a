"""Prometheus text (a ``/metrics`` scrape): the KV-transfer gap, TTFT, prefill and the NIXL /
SGLang transfer numbers of a disaggregated deployment, in SI units (:class:`Metrics`).

Histogram quantiles follow Prometheus' ``histogram_quantile`` and label sets are summed bucket
by bucket first, like ``sum by (le)``; a gauge's samples give a mean and percentiles (see
:mod:`.metric`).  Whether the gap is over a share of TTFT is not read here: that verdict is
:func:`kvmodel.verdicts.share_verdict`'s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..textio import parse_exposition
from .base import MeasureError, check_text
from .metric import MetricSummary, summarise_metric

# Prometheus metric → scale to SI (seconds, bytes, bytes/s).
GAP_METRIC = "llm_kv_transfer_gap_seconds"
TTFT_METRICS = (
    "vllm:time_to_first_token_seconds",
    "sglang:time_to_first_token_seconds",
    "llm_time_to_first_token_seconds",  # the Recipes page's own histogram
)
PREFILL_METRIC = "vllm:request_prefill_time_seconds"
NIXL_XFER_METRIC = "vllm:nixl_xfer_time_seconds"
NIXL_BYTES_METRIC = "vllm:nixl_bytes_transferred"
SGLANG_LATENCY_METRIC = "sglang:kv_transfer_latency_ms"
SGLANG_SPEED_METRIC = "sglang:kv_transfer_speed_gb_s"
METRIC_SCALES = {
    GAP_METRIC: 1.0,
    TTFT_METRICS[0]: 1.0,
    TTFT_METRICS[1]: 1.0,
    TTFT_METRICS[2]: 1.0,
    PREFILL_METRIC: 1.0,
    NIXL_XFER_METRIC: 1.0,
    NIXL_BYTES_METRIC: 1.0,
    SGLANG_LATENCY_METRIC: 1e-3,  # milliseconds
    SGLANG_SPEED_METRIC: 1e9,  # GB/s
}
# Where the transfer gap comes from, best first.
GAP_SOURCES = (GAP_METRIC, SGLANG_LATENCY_METRIC, NIXL_XFER_METRIC)


@dataclass(frozen=True)
class Metrics:
    """Transfer-gap, TTFT, prefill and NIXL/SGLang transfer numbers from one scrape (SI units)."""

    gap_mean_s: float | None
    gap_p50_s: float | None
    gap_p90_s: float | None
    gap_p99_s: float | None
    gap_count: float | None
    gap_source: str | None  # the metric the gap came from
    ttft_mean_s: float | None
    ttft_p50_s: float | None
    ttft_p90_s: float | None
    ttft_p99_s: float | None
    ttft_source: str | None
    prefill_mean_s: float | None
    nixl_xfer_mean_s: float | None
    nixl_bytes_mean: float | None
    effective_bandwidth_bytes_per_s: float | None
    bandwidth_source: str | None
    transfer_share_of_ttft: float | None  # gap_mean / ttft_mean
    metrics_found: tuple[str, ...]
    summaries: dict[str, MetricSummary] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


_PROM_EXPECTED = (
    'expected Prometheus text lines like vllm:time_to_first_token_seconds_bucket{le="0.5"} 42, '
    "metric_name 1.5 or # TYPE/# HELP comments"
)


def parse_prometheus_metrics(text: str, name: str = "metrics") -> Metrics:
    """The transfer gap and TTFT of a disaggregated deployment from a ``/metrics`` scrape.

    Reads (each summed over its label sets):

    - ``llm_kv_transfer_gap_seconds``: the gap between prefill end and decode start, either a
      gauge with one sample per ``request_id`` or a histogram (``_bucket``/``_sum``/``_count``);
    - vLLM ``vllm:time_to_first_token_seconds`` and ``vllm:request_prefill_time_seconds``
      (histograms); NIXL ``vllm:nixl_xfer_time_seconds`` (histogram) and
      ``vllm:nixl_bytes_transferred`` (histogram, or a counter ``_total``);
    - SGLang ``sglang:kv_transfer_latency_ms`` (histogram or gauge, **milliseconds**),
      ``sglang:kv_transfer_speed_gb_s`` (gauge or histogram, GB/s) and
      ``sglang:time_to_first_token_seconds`` (histogram).

    The gap is the first found of ``llm_kv_transfer_gap_seconds``, SGLang's KV transfer latency,
    NIXL's transfer time (``gap_source`` names it).  The effective bandwidth is NIXL bytes ÷
    NIXL transfer time (sums), else SGLang's speed.  ``transfer_share_of_ttft`` is the mean gap
    ÷ the mean TTFT (None without both).
    """
    text = check_text(text, name)
    by_metric: dict[str, list] = {m: [] for m in METRIC_SCALES}
    seen: dict[str, None] = {}  # every sample name, for the message when none is read
    wanted = {m + x: m for m in METRIC_SCALES for x in ("_bucket", "_sum", "_count", "_total", "")}

    def keep(sample_name: str) -> bool:
        if len(seen) <= 12:
            seen[sample_name] = None
        return sample_name in wanted

    for s in parse_exposition(text, name, expected=_PROM_EXPECTED, error=MeasureError, keep=keep):
        by_metric[wanted[s.name]].append(s)
    notes: list[str] = []
    summaries = {}
    for metric, rows in by_metric.items():
        if rows:
            summary = summarise_metric(metric, METRIC_SCALES[metric], rows, name, notes)
            if summary is not None:
                summaries[metric] = summary
    if not summaries:
        found = ", ".join(list(seen)[:12]) or "no samples"
        more = " (and more)" if len(seen) > 12 else ""
        raise MeasureError(
            f"{name}: none of the KV-transfer metrics in this Prometheus text; expected any of "
            f"{', '.join(METRIC_SCALES)}; found: {found}{more}"
        )

    def get(metric, attr):
        s = summaries.get(metric)
        return None if s is None else getattr(s, attr)

    gap_source = next((m for m in GAP_SOURCES if get(m, "mean") is not None), None)
    if gap_source and gap_source != GAP_METRIC:
        notes.append(f"gap taken from {gap_source} ({GAP_METRIC} not in the scrape)")
    ttft_source = next((m for m in TTFT_METRICS if get(m, "mean") is not None), None)
    nixl_xfer = summaries.get(NIXL_XFER_METRIC)
    nixl_bytes = summaries.get(NIXL_BYTES_METRIC)
    bytes_mean = bytes_sum = None
    if nixl_bytes is not None:
        bytes_sum = nixl_bytes.sum
        if nixl_bytes.kind == "counter":
            if nixl_xfer is not None and nixl_xfer.count > 0:
                bytes_mean = nixl_bytes.sum / nixl_xfer.count
        else:
            bytes_mean = nixl_bytes.mean
    bandwidth = bw_source = None
    if (
        bytes_sum is not None
        and nixl_xfer is not None
        and math.isfinite(bytes_sum)
        and math.isfinite(nixl_xfer.sum)
        and nixl_xfer.sum > 0
    ):
        bandwidth, bw_source = (
            bytes_sum / nixl_xfer.sum,
            f"{NIXL_BYTES_METRIC} / {NIXL_XFER_METRIC}",
        )
    elif get(SGLANG_SPEED_METRIC, "mean") is not None:
        bandwidth, bw_source = get(SGLANG_SPEED_METRIC, "mean"), SGLANG_SPEED_METRIC
    gap_mean = get(gap_source, "mean") if gap_source else None
    ttft_mean = get(ttft_source, "mean") if ttft_source else None
    share = gap_mean / ttft_mean if gap_mean is not None and ttft_mean else None
    return Metrics(
        gap_mean_s=gap_mean,
        gap_p50_s=get(gap_source, "p50") if gap_source else None,
        gap_p90_s=get(gap_source, "p90") if gap_source else None,
        gap_p99_s=get(gap_source, "p99") if gap_source else None,
        gap_count=get(gap_source, "count") if gap_source else None,
        gap_source=gap_source,
        ttft_mean_s=ttft_mean,
        ttft_p50_s=get(ttft_source, "p50") if ttft_source else None,
        ttft_p90_s=get(ttft_source, "p90") if ttft_source else None,
        ttft_p99_s=get(ttft_source, "p99") if ttft_source else None,
        ttft_source=ttft_source,
        prefill_mean_s=get(PREFILL_METRIC, "mean"),
        nixl_xfer_mean_s=None if nixl_xfer is None else nixl_xfer.mean,
        nixl_bytes_mean=bytes_mean,
        effective_bandwidth_bytes_per_s=bandwidth,
        bandwidth_source=bw_source,
        transfer_share_of_ttft=share,
        metrics_found=tuple(summaries),
        summaries=summaries,
        notes=tuple(dict.fromkeys(notes)),
    )
