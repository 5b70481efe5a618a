"""Read measurements from real clusters: /metrics scrapes, perftest, Nsight Systems, timings.

Everything returned is in SI units (seconds, bytes, bytes/s).  Nothing here imports streamlit.
Every parse error is a :class:`MeasureError` (a ``ValueError``) naming the file, the line as an
editor numbers it (first line = 1) and the form that was expected there.

:func:`load_measurement` reads a path, bytes, text or an upload (through :mod:`kvmodel.textio`:
within a size limit, gzip inflated, UTF-16 re-encoded), tells its format
(:func:`detect_measurement`, by content, then by file name) and returns a :class:`Measurement`
whose ``data`` is a frozen dataclass per format, one module each:

- ``"prometheus"`` (:mod:`.prometheus`, :mod:`.metric`): Prometheus text exposition, parsed by
  :func:`kvmodel.textio.parse_exposition` → :class:`Metrics`.
- ``"perftest"``, ``"perftest-json"`` (:mod:`.perftest`): the result table of ``ib_send_bw`` /
  ``ib_write_bw`` / ``ib_read_bw``, or ``--out_json`` → :class:`BandwidthPoints`.
- ``"nsys"`` (:mod:`.nsys`): ``nsys stats --format csv`` reports ``cuda_gpu_kern_sum``,
  ``cuda_gpu_trace``, ``nvtx_sum`` (and NVTX traces) → :class:`NsysResult`.
- ``"pairs"`` (:mod:`.pairs`): a CSV of transfer size and time → :class:`TransferPairs`.

Decisions worth knowing:

- **perftest's "MB/sec" is MiB/s.**  perftest divides by ``0x100000`` (2^20) for its MB/sec
  report and by ``125000000`` (10^9 / 8) for Gb/sec; newer versions print the same number
  under the honest label ``MiB/sec``.  So ``MB/sec`` and ``MiB/sec`` are both read as 2^20 B/s
  by default (``mb_bytes=1e6`` reads MB/sec as decimal instead), ``Gb/sec`` as 1.25e8 B/s.
- **Histogram quantiles follow Prometheus' ``histogram_quantile``**: linear interpolation inside
  the bucket holding the rank, the first bucket starting at 0, and the largest finite bound
  when the rank falls in the ``+Inf`` bucket.  Label sets (engines, models, ranks) are summed
  bucket by bucket first, like ``sum by (le)``.
- **Gauges are samples**: a gauge (one sample per ``request_id``, or per rank) gives a mean and
  linear-interpolated percentiles (numpy's default) of its samples; its ``count`` is the number
  of samples.

The readers only read: whether a measured share of TTFT is over the target is
:func:`kvmodel.verdicts.share_verdict`'s to say.
"""

from __future__ import annotations

from dataclasses import dataclass

from .base import DEFAULT_MAX_BYTES, MeasureError, read_text
from .detect import detect_measurement
from .metric import MetricSummary, histogram_quantile
from .nsys import DEFAULT_NVTX_PATTERN, NCCL_SENDRECV_PATTERN, NsysResult, parse_nsys_csv
from .pairs import TransferPairs, parse_pairs_csv
from .perftest import PERFTEST_MB_BYTES, PERFTEST_UNITS, BandwidthPoints, parse_perftest
from .prometheus import (
    GAP_METRIC,
    GAP_SOURCES,
    METRIC_SCALES,
    NIXL_BYTES_METRIC,
    NIXL_XFER_METRIC,
    PREFILL_METRIC,
    SGLANG_LATENCY_METRIC,
    SGLANG_SPEED_METRIC,
    TTFT_METRICS,
    Metrics,
    parse_prometheus_metrics,
)

KINDS = ("prometheus", "perftest", "perftest-json", "nsys", "pairs")

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_NVTX_PATTERN",
    "GAP_METRIC",
    "GAP_SOURCES",
    "KINDS",
    "METRIC_SCALES",
    "NCCL_SENDRECV_PATTERN",
    "NIXL_BYTES_METRIC",
    "NIXL_XFER_METRIC",
    "PERFTEST_MB_BYTES",
    "PERFTEST_UNITS",
    "PREFILL_METRIC",
    "SGLANG_LATENCY_METRIC",
    "SGLANG_SPEED_METRIC",
    "TTFT_METRICS",
    "BandwidthPoints",
    "MeasureError",
    "Measurement",
    "MetricSummary",
    "Metrics",
    "NsysResult",
    "TransferPairs",
    "detect_measurement",
    "histogram_quantile",
    "load_measurement",
    "parse_nsys_csv",
    "parse_pairs_csv",
    "parse_perftest",
    "parse_prometheus_metrics",
    "read_text",
]


@dataclass(frozen=True)
class Measurement:
    """One loaded file: its format (``kind``, one of :data:`KINDS`), name, and what it holds."""

    kind: str
    name: str
    data: Metrics | BandwidthPoints | NsysResult | TransferPairs


def load_measurement(
    src,
    name: str | None = None,
    *,
    kind: str | None = None,
    pattern: str | None = None,
    unit: str | None = None,
    mb_bytes: float = PERFTEST_MB_BYTES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Measurement:
    """Read ``src`` (path, bytes, text or an upload), detect its kind (or take ``kind``) and
    parse it.  ``pattern`` goes to :func:`parse_nsys_csv`, ``unit``/``mb_bytes`` to
    :func:`parse_perftest`."""
    text, label = read_text(src, name, max_bytes)
    kind = kind or detect_measurement(text, label)
    if kind == "prometheus":
        data = parse_prometheus_metrics(text, label)
    elif kind in ("perftest", "perftest-json"):
        data = parse_perftest(text, label, unit=unit, mb_bytes=mb_bytes)
    elif kind == "nsys":
        data = parse_nsys_csv(text, label, pattern)
    elif kind == "pairs":
        data = parse_pairs_csv(text, label)
    else:
        raise MeasureError(f"unknown measurement kind {kind!r}; expected one of {', '.join(KINDS)}")
    return Measurement(kind=kind, name=label, data=data)
