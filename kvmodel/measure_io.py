"""Read measurements from real clusters: /metrics scrapes, perftest, Nsight Systems, timings.

Everything returned is in SI units (seconds, bytes, bytes/s).  Nothing here imports streamlit.
Every parse error is a :class:`MeasureError` (a ``ValueError``) naming the file, the line as an
editor numbers it (first line = 1) and the form that was expected there.

Formats (:func:`detect_measurement` tells them apart by content, then by file name):

- ``"prometheus"``: Prometheus text exposition, parsed with
  ``prometheus_client.parser.text_string_to_metric_families`` (see
  :func:`parse_prometheus_metrics` for the metrics read).
- ``"perftest"``: the result table of ``ib_send_bw`` / ``ib_write_bw`` / ``ib_read_bw``
  (see :func:`parse_perftest`).
- ``"perftest-json"``: perftest's ``--out_json`` output (see :func:`parse_perftest`).
- ``"nsys"``: ``nsys stats --format csv`` reports ``cuda_gpu_kern_sum``, ``cuda_gpu_trace``,
  ``nvtx_sum`` (and NVTX traces) (see :func:`parse_nsys_csv`).
- ``"pairs"``: a CSV of transfer size and time (see :func:`parse_pairs_csv`).

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
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

DEFAULT_MAX_BYTES = 50_000_000
SHARE_TARGET = 0.20  # the article: a gap above 20 % of TTFT gives back much of the gain

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

PERFTEST_UNITS = {  # bytes per second per unit; "mb" is perftest's MB/sec = 2^20 B/s
    "mb/sec": "mb",
    "mb/s": "mb",
    "mbps": "mb",
    "mib/sec": 2.0**20,
    "mib/s": 2.0**20,
    "gb/sec": 1.25e8,  # perftest --report_gbits: Gbit/s, 125,000,000 B per Gb
    "gb/s": 1.25e8,
    "gbit/sec": 1.25e8,
    "gbit/s": 1.25e8,
    "gbps": 1.25e8,
}
PERFTEST_MB_BYTES = 2.0**20

NCCL_SENDRECV_PATTERN = r"nccl\w*?(sendrecv|send|recv)"
DEFAULT_NVTX_PATTERN = r"kv|transfer|send|recv"

KINDS = ("prometheus", "perftest", "perftest-json", "nsys", "pairs")


class MeasureError(ValueError):
    """A measurement cannot be read; the message names the problem, where, and what is expected."""


# --------------------------------------------------------------------------- reading text


def _looks_like_path(text: str) -> bool:
    """An existing file, or a one-line string without separators that names a file."""
    if "\n" in text or len(text) > 4096:
        return False
    try:
        if Path(text).is_file():
            return True
    except (OSError, ValueError):
        return False
    if re.search(r"[\s,;{}\[\]\"']", text):
        return False
    return "/" in text or "\\" in text or bool(re.search(r"\.[A-Za-z]{2,8}$", text))


def read_text(src, name: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
    """``(text, name)`` from a path, bytes, text or a binary/text file object (an upload).

    A ``str`` is a path when it names an existing file (or has no newline and looks like a file
    name), otherwise the text itself.
    """
    if isinstance(src, str) and not _looks_like_path(src):
        return _check_text(src, name or "text"), name or "text"
    if isinstance(src, (str, Path)):
        path = Path(src)
        name = name or path.name
        try:
            if path.stat().st_size > max_bytes:
                raise MeasureError(
                    f"{name}: the file is {path.stat().st_size / 1e6:.3g} MB, over the "
                    f"{max_bytes / 1e6:g} MB limit; upload a smaller sample"
                )
            data = path.read_bytes()
        except OSError as exc:
            raise MeasureError(f"cannot read {path}: {exc.strerror or exc}") from None
    elif isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
    elif hasattr(src, "getvalue") or hasattr(src, "read"):
        name = name or Path(str(getattr(src, "name", "") or "upload")).name
        data = src.getvalue() if hasattr(src, "getvalue") else src.read(max_bytes + 1)
        if isinstance(data, str):
            data = data.encode("utf-8")
    else:
        raise MeasureError(
            f"cannot read a {type(src).__name__}; expected a path, bytes, text or a file object"
        )
    name = name or "upload"
    if len(data) > max_bytes:
        raise MeasureError(
            f"{name}: over the {max_bytes / 1e6:g} MB limit; upload a smaller sample"
        )
    bad = data.find(b"\x00")
    if bad < 0:
        try:
            return _check_text(data.decode("utf-8-sig"), name), name
        except UnicodeDecodeError as exc:
            bad = exc.start
    line = data[:bad].count(b"\n") + 1
    raise MeasureError(
        f"{name}: line {line} holds binary data (byte 0x{data[bad]:02x}), not UTF-8 text; "
        "expected Prometheus text, perftest output, an nsys stats CSV or a bytes,seconds CSV"
    )


def _check_text(text: str, name: str) -> str:
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise MeasureError(f"{name}: line {line} holds a NUL byte; expected text")
    if not text.strip():
        raise MeasureError(
            f"{name}: the file is empty; expected Prometheus text, perftest output, "
            "an nsys stats CSV or a bytes,seconds CSV"
        )
    return text


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# --------------------------------------------------------------------------- Prometheus


@dataclass(frozen=True)
class MetricSummary:
    """One metric summed over its label sets, in SI units (the metric's scale applied)."""

    name: str
    kind: str  # "histogram", "gauge" or "counter"
    count: float  # observations (histogram), samples (gauge), or NaN (counter)
    sum: float  # sum of observations / of gauge samples / the counter total
    mean: float | None
    p50: float | None = None
    p90: float | None = None
    p99: float | None = None
    label_sets: int = 1
    buckets: tuple[tuple[float, float], ...] = ()  # (upper bound, cumulative count), summed
    samples: tuple[float, ...] = ()  # gauge values


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
    verdict: str | None  # "over" / "under" the share target, None without a share
    share_target: float
    metrics_found: tuple[str, ...]
    summaries: dict[str, MetricSummary] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


_PROM_EXPECTED = (
    'expected Prometheus text lines like vllm:time_to_first_token_seconds_bucket{le="0.5"} 42, '
    "metric_name 1.5 or # TYPE/# HELP comments"
)


def _prom_samples(text: str, name: str) -> list[tuple[int, object]]:
    """``(line number, sample)`` of every sample, parsing line by line (the format is
    line-oriented) so that every sample and every error has its line."""
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            families = list(text_string_to_metric_families(line + "\n"))
        except Exception:  # the parser raises several types on malformed text
            raise MeasureError(
                f"{name}: line {n} is not Prometheus text ({line.strip()[:80]!r}); {_PROM_EXPECTED}"
            ) from None
        for fam in families:
            out.extend((n, s) for s in fam.samples)
    return out


def histogram_quantile(q: float, buckets) -> float | None:
    """Prometheus' ``histogram_quantile`` on ``[(upper bound, cumulative count), ...]``.

    Needs a ``+Inf`` bucket; None when there is none, fewer than two buckets, or no
    observations.  Linear inside the bucket holding rank ``q × count``; the first bucket starts
    at 0 (unless its bound is ≤ 0); a rank in the ``+Inf`` bucket returns the largest finite
    bound.
    """
    if not 0 <= q <= 1:
        raise ValueError(f"q must be in [0, 1], got {q!r}")
    b = sorted((float(le), float(c)) for le, c in buckets)
    if len(b) < 2 or not math.isinf(b[-1][0]):
        return None
    running = 0.0
    mono = []
    for le, c in b:  # Prometheus' ensureMonotonic
        running = max(running, c)
        mono.append((le, running))
    total = mono[-1][1]
    if total <= 0:
        return None
    rank = q * total
    i = next((k for k in range(len(mono) - 1) if mono[k][1] >= rank), len(mono) - 1)
    if i == len(mono) - 1:
        return mono[-2][0]
    if i == 0 and mono[0][0] <= 0:
        return mono[0][0]
    start, end, count = 0.0, mono[i][0], mono[i][1]
    if i > 0:
        start = mono[i - 1][0]
        count -= mono[i - 1][1]
        rank -= mono[i - 1][1]
    return start + (end - start) * (rank / count)


def _label_key(labels: dict, drop=("le",)) -> tuple:
    return tuple(sorted((k, v) for k, v in labels.items() if k not in drop))


def _summarise(metric: str, rows: list, name: str, notes: list) -> MetricSummary | None:
    """Sum one metric's samples (``(line, sample)``) into a :class:`MetricSummary`."""
    scale = METRIC_SCALES[metric]
    buckets: dict[tuple, list] = {}
    sums: dict[tuple, float] = {}
    counts: dict[tuple, float] = {}
    totals: dict[tuple, float] = {}
    plain: list[tuple[int, object]] = []
    for n, s in rows:
        value = float(s.value)
        suffix = s.name[len(metric) :]
        if suffix in ("_bucket", "_sum", "_count", "_total", "") and not math.isfinite(value):
            raise MeasureError(f"{name}: line {n}: {s.name} is {value}; expected a finite number")
        if suffix == "_bucket":
            if "le" not in s.labels:
                raise MeasureError(
                    f'{name}: line {n}: {s.name} has no le label; expected {s.name}{{le="0.5"}} 42'
                )
            try:
                le = float(s.labels["le"])
            except ValueError:
                raise MeasureError(
                    f"{name}: line {n}: le={s.labels['le']!r} is not a number; expected a bucket "
                    "upper bound such as 0.5 or +Inf"
                ) from None
            if value < 0:
                raise MeasureError(f"{name}: line {n}: {s.name} is {value:g}; expected a count ≥ 0")
            buckets.setdefault(_label_key(s.labels), []).append((le, value, n))
        elif suffix == "_sum":
            sums[_label_key(s.labels)] = value
        elif suffix == "_count":
            counts[_label_key(s.labels)] = value
        elif suffix == "_total":
            totals[_label_key(s.labels)] = value
        elif suffix == "":
            plain.append((n, s))
    if buckets:
        per_series = []
        for key, rows_k in buckets.items():
            rows_k.sort(key=lambda r: r[0])
            prev_le, prev = None, 0.0
            for le, value, n in rows_k:
                if value < prev:
                    labels = ",".join(f'{k}="{v}"' for k, v in key)
                    raise MeasureError(
                        f"{name}: line {n}: {metric}_bucket{{{labels + ',' if labels else ''}"
                        f'le="{le:g}"}} is {value:g}, below '
                        f'{prev:g} at le="{prev_le:g}"; expected cumulative counts that never '
                        "decrease as le grows"
                    )
                prev_le, prev = le, value
            series = [(le * scale, v) for le, v, _ in rows_k]
            if not math.isinf(series[-1][0]):
                inf = counts.get(key, series[-1][1])
                series.append((math.inf, max(inf, series[-1][1])))
                notes.append(f"{metric}: a label set has no +Inf bucket; its _count stands in")
            per_series.append(series)
        bounds = sorted({le for s in per_series for le, _ in s})
        summed = []
        for le in bounds:  # sum by (le); a series without this bound counts up to its last ≤ le
            total = 0.0
            for s in per_series:
                below = [c for b, c in s if b <= le]
                total += below[-1] if below else 0.0
            summed.append((le, total))
        count = sum(counts.values()) if counts else summed[-1][1]
        total_sum = sum(sums.values()) * scale if sums else math.nan
        mean = total_sum / count if count > 0 and math.isfinite(total_sum) else None
        qs = [histogram_quantile(q, summed) for q in (0.5, 0.9, 0.99)]
        return MetricSummary(
            metric, "histogram", count, total_sum, mean, *qs, len(per_series), tuple(summed)
        )
    if totals:
        return MetricSummary(
            metric, "counter", math.nan, sum(totals.values()) * scale, None, label_sets=len(totals)
        )
    if plain:
        values = np.array([float(s.value) for _, s in plain]) * scale
        p50, p90, p99 = (float(v) for v in np.percentile(values, [50, 90, 99]))
        return MetricSummary(
            metric,
            "gauge",
            float(len(values)),
            float(values.sum()),
            float(values.mean()),
            p50,
            p90,
            p99,
            len(values),
            samples=tuple(float(v) for v in values),
        )
    if sums and counts:  # a summary type without quantile samples
        count = sum(counts.values())
        total_sum = sum(sums.values()) * scale
        return MetricSummary(
            metric, "histogram", count, total_sum, total_sum / count if count > 0 else None
        )
    return None


def parse_prometheus_metrics(
    text: str, name: str = "metrics", share_target: float = SHARE_TARGET
) -> Metrics:
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
    NIXL transfer time (sums), else SGLang's speed.  ``verdict`` is ``"over"`` when
    gap ÷ TTFT > ``share_target`` (a gap above 20 % of TTFT gives back much of the
    disaggregation gain), ``"under"`` otherwise, None without both.
    """
    if not 0 < share_target < 1:
        raise ValueError(f"share_target must be in (0, 1), got {share_target!r}")
    text = _check_text(text, name)
    samples = _prom_samples(text, name)
    by_metric: dict[str, list] = {m: [] for m in METRIC_SCALES}
    seen: dict[str, None] = {}
    suffixes = ("_bucket", "_sum", "_count", "_total", "_created", "")
    for n, s in samples:
        seen[s.name] = None
        for metric in METRIC_SCALES:
            if s.name.startswith(metric) and s.name[len(metric) :] in suffixes:
                if not s.name.endswith("_created"):
                    by_metric[metric].append((n, s))
                break
    notes: list[str] = []
    summaries = {}
    for metric, rows in by_metric.items():
        if rows:
            summary = _summarise(metric, rows, name, notes)
            if summary is not None:
                summaries[metric] = summary
    if not summaries:
        found = ", ".join(list(seen)[:12]) or "no samples"
        more = f" (and {len(seen) - 12} more)" if len(seen) > 12 else ""
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
    verdict = None if share is None else ("over" if share > share_target else "under")
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
        verdict=verdict,
        share_target=share_target,
        metrics_found=tuple(summaries),
        summaries=summaries,
        notes=tuple(dict.fromkeys(notes)),
    )


# --------------------------------------------------------------------------- perftest

_PERFTEST_HEADER = re.compile(r"#bytes\b", re.I)
_PERFTEST_COLUMN = re.compile(r"#\w+|[A-Za-z][\w ]*?\[[^\]]*\]|\S+")
_AVG_COLUMN = re.compile(r"^bw\s*average\s*\[([^\]]*)\]$", re.I)


def _perftest_scale(unit: str, mb_bytes: float) -> float | None:
    scale = PERFTEST_UNITS.get(unit.strip().lower().replace(" ", ""))
    return mb_bytes if scale == "mb" else scale


def _parse_perftest_table(text: str, name: str, mb_bytes: float) -> list[tuple[float, float]]:
    points: list[tuple[float, float]] = []
    unit = scale = size_col = avg_col = None
    unit_line = 0
    for n, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if _PERFTEST_HEADER.match(line):
            cols = [c.strip() for c in _PERFTEST_COLUMN.findall(line)]
            avg = [(i, m.group(1)) for i, c in enumerate(cols) if (m := _AVG_COLUMN.match(c))]
            if not avg:
                if re.search(r"t_(min|avg|typical)", line):
                    raise MeasureError(
                        f"{name}: line {n} is a perftest latency table (ib_*_lat); expected the "
                        "bandwidth table of ib_send_bw/ib_write_bw/ib_read_bw"
                    )
                raise MeasureError(
                    f"{name}: line {n}: the perftest header has no 'BW average[unit]' column; "
                    "expected '#bytes #iterations BW peak[MB/sec] BW average[MB/sec] "
                    "MsgRate[Mpps]' (or MiB/sec, Gb/sec)"
                )
            col, this_unit = avg[0]
            this_scale = _perftest_scale(this_unit, mb_bytes)
            if this_scale is None:
                raise MeasureError(
                    f"{name}: line {n}: unknown bandwidth unit {this_unit!r}; expected MB/sec, "
                    "MiB/sec or Gb/sec"
                )
            if unit is not None and this_scale != scale:
                raise MeasureError(
                    f"{name}: line {n}: bandwidth in {this_unit} after {unit} on line "
                    f"{unit_line}; expected one unit per file (run perftest once per unit)"
                )
            unit, scale, unit_line, avg_col, size_col = this_unit, this_scale, n, col, 0
            continue
        if not line or not line[0].isdigit():
            continue  # preamble, separators, warnings
        fields = line.split()
        if unit is None:
            raise MeasureError(
                f"{name}: line {n} is a result row before any '#bytes ... BW average[unit]' "
                "header, so its unit is unknown; expected the perftest header above the rows"
            )
        if not fields[0].isdigit():
            continue  # e.g. a date or address line starting with a digit
        if len(fields) <= avg_col:
            raise MeasureError(
                f"{name}: line {n} has {len(fields)} fields ({line[:60]!r}), the row is cut "
                f"short; expected #bytes, #iterations, BW peak, BW average, MsgRate"
            )
        size, bw = _number(fields[size_col]), _number(fields[avg_col])
        if size is None or bw is None:
            raise MeasureError(
                f"{name}: line {n}: {line[:60]!r} is not numbers; expected "
                "'<bytes> <iterations> <BW peak> <BW average> <MsgRate>'"
            )
        if size <= 0 or bw <= 0:
            raise MeasureError(
                f"{name}: line {n}: size {size:g} B at {bw:g} {unit}; expected both > 0"
            )
        points.append((size, bw * scale))
    if not points:
        raise MeasureError(
            f"{name}: no perftest result rows; expected the table under '#bytes #iterations "
            "BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]' (run ib_write_bw -a for all sizes)"
        )
    return points


_UNIT_KEYS = {"unit", "units", "bwunit", "bwunits", "reportunit", "reportfmt", "bandwidthunit"}


def _key(text) -> str:
    return re.sub(r"[^0-9a-z]", "", str(text).lower())


def _json_unit(obj: dict) -> str | None:
    for k, v in obj.items():
        if _key(k) in _UNIT_KEYS and isinstance(v, str):
            return v
    return None


def _parse_perftest_json(
    text: str, name: str, mb_bytes: float, unit: str | None
) -> list[tuple[float, float]]:
    try:
        docs = [(1, json.loads(text))]
    except json.JSONDecodeError as whole:
        docs = []
        for n, line in enumerate(text.splitlines(), start=1):  # JSON Lines: one run per line
            if not line.strip():
                continue
            try:
                docs.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                n_err, msg = (whole.lineno, whole.msg) if not docs else (n, exc.msg)
                raise MeasureError(
                    f"{name}: line {n_err}: not valid JSON ({msg}); expected perftest "
                    '--out_json output like {"test_info": {...}, "results": {"MsgSize": 65536, '
                    '"BW_average": 46557.0, ...}}'
                ) from None
    points: list[tuple[float, float]] = []
    units_seen: dict[float, str] = {}
    for line, doc in docs:
        top = doc if isinstance(doc, dict) else {}
        info = top.get("test_info") if isinstance(top.get("test_info"), dict) else {}
        results = top.get("results", doc) if isinstance(doc, dict) else doc
        container_unit = _json_unit(top) or _json_unit(info)
        if isinstance(results, dict):
            container_unit = container_unit or _json_unit(results)
            results = [results]
        if not isinstance(results, list):
            raise MeasureError(
                f"{name}: line {line}: 'results' is a {type(results).__name__}; expected an "
                "object or a list of objects with MsgSize and BW_average"
            )
        for i, r in enumerate(results):
            where = f"line {line}, result {i + 1}"
            if not isinstance(r, dict):
                raise MeasureError(
                    f"{name}: {where} is not an object; expected MsgSize, BW_average"
                )
            keys = {_key(k): v for k, v in r.items()}
            size = keys.get("msgsize", keys.get("bytes", keys.get("size")))
            avg_key = next((k for k in r if _key(k).startswith("bwaverage")), None)
            if size is None or avg_key is None:
                raise MeasureError(
                    f"{name}: {where} has fields {', '.join(map(str, r))}; expected MsgSize and "
                    "BW_average"
                )
            bracket = re.search(r"\[([^\]]+)\]", avg_key)
            this_unit = (bracket.group(1) if bracket else None) or _json_unit(r)
            this_unit = this_unit or container_unit or unit
            if this_unit is None:
                raise MeasureError(
                    f'{name}: {where}: no bandwidth unit; expected a "unit" field ("MB/sec", '
                    '"MiB/sec" or "Gb/sec") in the result, results or test_info, or pass unit='
                )
            scale = _perftest_scale(this_unit, mb_bytes)
            if scale is None:
                raise MeasureError(
                    f"{name}: {where}: unknown bandwidth unit {this_unit!r}; expected MB/sec, "
                    "MiB/sec or Gb/sec"
                )
            units_seen.setdefault(scale, this_unit)
            if len(units_seen) > 1:
                raise MeasureError(
                    f"{name}: {where}: bandwidth in {this_unit} mixed with "
                    f"{next(iter(units_seen.values()))}; expected one unit per file"
                )
            s, bw = _number(str(size)), _number(str(r[avg_key]))
            if s is None or bw is None or s <= 0 or bw <= 0:
                raise MeasureError(
                    f"{name}: {where}: MsgSize={size!r}, {avg_key}={r[avg_key]!r}; expected "
                    "numbers > 0"
                )
            points.append((s, bw * scale))
    if not points:
        raise MeasureError(f"{name}: no perftest results; expected MsgSize and BW_average fields")
    return points


def parse_perftest(
    text: str,
    name: str = "perftest",
    *,
    unit: str | None = None,
    mb_bytes: float = PERFTEST_MB_BYTES,
) -> list[tuple[float, float]]:
    """``[(message bytes, bandwidth bytes/s), ...]`` from perftest bandwidth output, file order.

    Text: the table under ``#bytes #iterations BW peak[MB/sec] BW average[MB/sec]
    MsgRate[Mpps]`` (also ``MiB/sec``, ``--report_gbits``'s ``Gb/sec``, the per-port and QoS
    variants); the **BW average** column is used.  Lines not starting with a digit (the
    preamble, ``---`` rules, "RDMA_Write BW Test", "Dual-port", CPU-frequency warnings) are
    ignored.  A row before any header, a cut-short row, or a second header in another unit is
    an error naming the line.

    JSON (``--out_json``): one document, or one per line (JSON Lines, e.g. one run per size).
    ``results`` is an object or a list of objects with ``MsgSize`` and ``BW_average``
    (``BW_peak``, ``MsgRate``, ``n_iterations`` are ignored); a top-level list of such objects is
    read too.  The unit comes from a bracket in the key (``"BW_average[Gb/sec]"``), else from a
    ``unit``/``BW_unit``/``units``/``report_unit`` field in the result, in ``results``, in
    ``test_info`` or at the top, else from ``unit=``; none of these is an error.

    ``MB/sec`` is perftest's 2^20 B/s (see the module notes); ``mb_bytes=1e6`` overrides.
    """
    text = _check_text(text, name)
    if text.lstrip()[:1] in ("{", "["):
        return _parse_perftest_json(text, name, mb_bytes, unit)
    return _parse_perftest_table(text, name, mb_bytes)


# --------------------------------------------------------------------------- Nsight Systems


@dataclass(frozen=True)
class NsysResult:
    """Per-transfer durations selected from one ``nsys stats`` CSV report (seconds)."""

    report: str  # "cuda_gpu_kern_sum", "cuda_gpu_trace", "nvtx_sum" or "nvtx_trace"
    selection: str  # "nccl-kernels", "kernels" (user pattern) or "nvtx"
    pattern: str
    names: tuple[str, ...]  # kernel names / NVTX ranges selected
    count: int  # transfers (instances, or trace rows)
    total_s: float
    mean_s: float
    median_s: float | None  # None for a summary with several selected rows
    min_s: float
    max_s: float
    durations_s: tuple[float, ...] = ()  # one per transfer, trace reports only
    notes: tuple[str, ...] = ()


_TIME_UNITS = {
    "ns": 1e-9,
    "nsec": 1e-9,
    "us": 1e-6,
    "usec": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "s": 1.0,
    "sec": 1.0,
}
_NSYS_COL = re.compile(r"^\s*(.*?)\s*(?:\(([^)]*)\))?\s*$")


def _nsys_columns(fields: list[str]) -> dict[str, tuple[int, float]]:
    """Normalised column name → (index, seconds per unit or 1 for unit-less)."""
    out = {}
    for i, f in enumerate(fields):
        m = _NSYS_COL.match(f)
        base, unit = _key(m.group(1)), (m.group(2) or "").strip().lower()
        out.setdefault(base, (i, _TIME_UNITS.get(unit, 1.0)))
    return out


def _is_nsys_header(fields: list[str]) -> bool:
    keys = _nsys_columns(fields)
    has_name = "name" in keys or "range" in keys
    has_time = any(k in keys for k in ("totaltime", "duration")) and any(
        re.search(r"\((ns|us|ms|s|nsec|usec|msec|sec)\)", f) for f in fields
    )
    return has_name and has_time


def _nsys_tables(text: str, name: str):
    """``(header line number, columns, [(line number, fields), ...])`` per table."""
    lines = text.splitlines()
    tables = []
    i = 0
    while i < len(lines):
        fields = next(csv.reader([lines[i]])) if lines[i].strip() else []
        if len(fields) >= 2 and _is_nsys_header(fields):
            header_n, cols, rows = i + 1, fields, []
            i += 1
            while i < len(lines) and lines[i].strip():
                row = next(csv.reader([lines[i]]))
                if len(row) != len(cols):
                    raise MeasureError(
                        f"{name}: line {i + 1} has {len(row)} fields, the header on line "
                        f"{header_n} has {len(cols)}; the row is cut short or garbled "
                        f"({lines[i][:60]!r}); expected one value per column"
                    )
                rows.append((i + 1, row))
                i += 1
            tables.append((header_n, cols, rows))
            continue
        i += 1
    return tables


def parse_nsys_csv(text: str, name: str = "nsys", pattern: str | None = None) -> NsysResult:
    """Per-transfer durations from ``nsys stats --format csv`` output.

    Reports: ``cuda_gpu_kern_sum`` ("Time (%)", "Total Time (ns)", "Instances", "Avg (ns)",
    "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"), ``cuda_gpu_trace``
    ("Start (ns)", "Duration (ns)", …, "Name"), ``nvtx_sum`` (…, "Range") and NVTX traces
    ("Duration (ns)" with "Range" or "Name"/"RangeId").  Lines before the header ("Generating
    SQLite file …", "Processing […] with […]...", the " ** … ** " title, blank lines) are
    skipped; a table ends at a blank line; several tables in one file are read in order and the
    first with a selected row is used.  Column units follow ``--timeunit`` ("(ns)", "(us)",
    "(ms)", "(s)").

    Selection: kernels whose name matches ``pattern`` (default NCCL send/receive kernels,
    ``ncclDevKernel_SendRecv``, ``ncclKernel_SendRecv_*``, ``ncclSendKernel``…), NVTX ranges
    matching ``pattern`` (default ``kv|transfer|send|recv``); case-insensitive regexes.
    Summaries give count (Σ instances), total, mean (total ÷ count), min, max and the median
    when one row is selected; traces give every duration.
    """
    text = _check_text(text, name)
    tables = _nsys_tables(text, name)
    if not tables:
        raise MeasureError(
            f'{name}: no nsys stats CSV header; expected a line like "Time (%)","Total Time '
            '(ns)","Instances","Avg (ns)",…,"Name" (cuda_gpu_kern_sum), "Start (ns)","Duration '
            '(ns)",…,"Name" (cuda_gpu_trace) or …,"Range" (nvtx_sum), from nsys stats --format csv'
        )
    seen: list[str] = []
    notes: list[str] = []
    for header_n, fields, rows in tables:
        cols = _nsys_columns(fields)
        nvtx = "range" in cols or bool({"rangeid", "lvl", "nametree", "rangestack"} & set(cols))
        trace = "duration" in cols
        report = ("nvtx" if nvtx else "cuda_gpu") + ("_trace" if trace else "_sum")
        if report == "cuda_gpu_sum":
            report = "cuda_gpu_kern_sum"
        default = DEFAULT_NVTX_PATTERN if nvtx else NCCL_SENDRECV_PATTERN
        pat = pattern if pattern is not None else default
        try:
            rx = re.compile(pat, re.I)
        except re.error as exc:
            raise MeasureError(
                f"pattern {pat!r} is not a valid regular expression ({exc})"
            ) from None
        name_idx = cols["range"][0] if "range" in cols else cols["name"][0]

        def num(row, n, col, _cols=cols, _fields=fields):
            idx, unit = _cols[col]
            value = _number(row[idx])
            if value is None or value < 0:
                raise MeasureError(
                    f"{name}: line {n}, column {_fields[idx]!r}: {row[idx]!r} is not a number "
                    "≥ 0; expected nsys stats CSV values"
                )
            return value * unit

        selected = [(n, r) for n, r in rows if rx.search(r[name_idx].strip())]
        seen.extend(r[name_idx].strip() for _, r in rows)
        if not selected:
            continue
        names = tuple(dict.fromkeys(r[name_idx].strip() for _, r in selected))
        selection = "nvtx" if nvtx else ("nccl-kernels" if pattern is None else "kernels")
        if trace:
            durations = [num(r, n, "duration") for n, r in selected]
            arr = np.array(durations)
            return NsysResult(
                report=report,
                selection=selection,
                pattern=pat,
                names=names,
                count=len(durations),
                total_s=float(arr.sum()),
                mean_s=float(arr.mean()),
                median_s=float(np.median(arr)),
                min_s=float(arr.min()),
                max_s=float(arr.max()),
                durations_s=tuple(durations),
                notes=tuple(notes),
            )
        missing = [c for c in ("totaltime", "instances") if c not in cols]
        if missing:
            raise MeasureError(
                f"{name}: line {header_n}: the summary header lacks "
                f'{", ".join(missing)}; expected "Total Time (ns)" and "Instances" columns'
            )
        counts = [num(r, n, "instances") for n, r in selected]
        totals = [num(r, n, "totaltime") for n, r in selected]
        count = sum(counts)
        if count <= 0:
            continue
        mins = [num(r, n, "min") for n, r in selected] if "min" in cols else []
        maxs = [num(r, n, "max") for n, r in selected] if "max" in cols else []
        med_col = "med" if "med" in cols else "median" if "median" in cols else None
        median = (
            num(selected[0][1], selected[0][0], med_col) if med_col and len(selected) == 1 else None
        )
        if len(selected) > 1:
            notes.append(
                f"{len(selected)} rows selected ({', '.join(names[:3])}…): median not derivable "
                "from a summary; use cuda_gpu_trace for the distribution"
            )
        mean = sum(totals) / count
        return NsysResult(
            report=report,
            selection=selection,
            pattern=pat,
            names=names,
            count=int(round(count)),
            total_s=float(sum(totals)),
            mean_s=float(mean),
            median_s=median,
            min_s=float(min(mins)) if mins else float(mean),
            max_s=float(max(maxs)) if maxs else float(mean),
            notes=tuple(notes),
        )
    shown = ", ".join(list(dict.fromkeys(seen))[:8]) or "no rows"
    raise MeasureError(
        f"{name}: no row matches {pattern if pattern is not None else 'the default selection'} "
        f"(NCCL send/recv kernels: {NCCL_SENDRECV_PATTERN!r}; NVTX ranges: "
        f"{DEFAULT_NVTX_PATTERN!r}); names found: {shown}; give a regular expression that "
        "matches the transfers' names (the Measured page's 'Transfers to select' box; "
        "pattern= in Python)"
    )


# --------------------------------------------------------------------------- size/time pairs

_BYTES_NAMES = {
    "bytes",
    "size",
    "messagebytes",
    "msgbytes",
    "msgsize",
    "messagesize",
    "sizebytes",
    "nbytes",
    "transferbytes",
    "xferbytes",
    "payloadbytes",
    "bytestransferred",
    "length",
}
_TIME_NAMES = {
    "seconds",
    "time",
    "latency",
    "duration",
    "elapsed",
    "t",
    "xfertime",
    "transfertime",
    "sec",
    "secs",
}
_BYTE_UNITS = {
    "b": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
}


def _column_role(column: str, name: str, n: int) -> tuple[str, float] | None:
    """``("size", bytes per unit)``, ``("time", seconds per unit)`` or None for a header name:
    ``message_bytes``, ``size_kb``, ``seconds``, ``time_s``, ``latency_us``, ``Time (ms)``…"""
    tokens = [t for t in re.split(r"[^0-9a-zµ]+", column.lower()) if t]
    joined = "".join(tokens)
    if joined in _BYTES_NAMES:
        return "size", 1.0
    if joined in ("seconds", "sec", "secs", "s"):
        return "time", 1.0
    if joined in ("ms", "us", "ns", "µs"):
        return "time", _TIME_UNITS[joined]
    base, unit = ("".join(tokens[:-1]), tokens[-1]) if len(tokens) >= 2 else (joined, None)
    if base in _BYTES_NAMES and unit in _BYTE_UNITS:
        return "size", _BYTE_UNITS[unit]
    if base in _TIME_NAMES and unit in _TIME_UNITS:
        return "time", _TIME_UNITS[unit]
    if joined in _TIME_NAMES:
        raise MeasureError(
            f"{name}: line {n}: time column {column!r} has no unit; expected a name like "
            "seconds, time_s, latency_ms or duration_us"
        )
    return None


def _pairs_columns(header: list[str], name: str, n: int) -> tuple[int, float, int, float]:
    found: dict[str, tuple[int, float]] = {}
    for i, col in enumerate(header):
        role = _column_role(col, name, n)
        if role is not None and role[0] not in found:
            found[role[0]] = (i, role[1])
    if "size" not in found or "time" not in found:
        raise MeasureError(
            f"{name}: line {n}: columns {', '.join(header)}; expected a size column (bytes, "
            "size, message_bytes) and a time column (seconds, time_s, latency_s, duration_s, "
            "or ms/us in the name: latency_ms, time_us)"
        )
    return (*found["size"], *found["time"])


def parse_pairs_csv(text: str, name: str = "pairs") -> list[tuple[float, float]]:
    """``[(bytes, seconds), ...]`` from a CSV of transfer size and time, file order.

    With a header, the size column is one of bytes/size/message_bytes/msg_size/nbytes… (a unit
    suffix such as ``_kb``, ``_mib`` is applied) and the time column one of
    seconds/time_s/latency_s/duration_s… or with ``ms``/``us``/``ns`` in the name; a bare
    ``time`` without a unit is an error.  Without a header: two numeric columns, bytes then
    seconds.  Separators: comma, tab, semicolon or spaces.  ``#`` comment lines and blank lines
    are skipped; any other line that is not numbers is an error naming it.
    """
    text = _check_text(text, name)
    lines = [(n, ln) for n, ln in enumerate(text.splitlines(), start=1)]
    body = [(n, ln) for n, ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not body:
        raise MeasureError(f"{name}: no rows; expected 'bytes,seconds' lines")
    first = body[0][1]
    delim = next((d for d in (",", "\t", ";") if d in first), None)

    def split(line: str) -> list[str]:
        if delim is None:
            return line.split()
        return [f.strip() for f in next(csv.reader([line], delimiter=delim))]

    head = split(first)
    if any(_number(f) is None for f in head):
        si, sscale, ti, tscale = _pairs_columns(head, name, body[0][0])
        body = body[1:]
        width = len(head)
    else:
        if len(head) != 2:
            raise MeasureError(
                f"{name}: line {body[0][0]} has {len(head)} columns and no header; expected "
                "two columns (bytes, seconds) or a header naming them"
            )
        si, sscale, ti, tscale, width = 0, 1.0, 1, 1.0, 2
    out = []
    for n, line in body:
        fields = split(line)
        if len(fields) != width:
            raise MeasureError(
                f"{name}: line {n} has {len(fields)} fields ({line[:60]!r}); expected {width}"
            )
        size, t = _number(fields[si]), _number(fields[ti])
        if size is None or t is None:
            raise MeasureError(
                f"{name}: line {n}: {line[:60]!r} is not numbers; expected '<bytes>,<seconds>'"
            )
        if size < 0 or t <= 0:
            raise MeasureError(
                f"{name}: line {n}: size {size:g}, time {t:g}; expected size ≥ 0 and time > 0"
            )
        out.append((size * sscale, t * tscale))
    if not out:
        raise MeasureError(f"{name}: a header but no rows; expected 'bytes,seconds' lines")
    return out


# --------------------------------------------------------------------------- dispatch

_KNOWN_PROM = re.compile(
    r"^\s*(" + "|".join(re.escape(m) for m in METRIC_SCALES) + r")(_bucket|_sum|_count|_total)?"
    r"[\s{]",
    re.M,
)
_NSYS_HINT = re.compile(
    r"(Total Time|Duration)\s*\((ns|us|ms|s)\)|^Processing \[.*\] with \[", re.M
)


def detect_measurement(text: str, name: str | None = None) -> str:
    """``"prometheus"``, ``"perftest"``, ``"perftest-json"``, ``"nsys"`` or ``"pairs"``."""
    label = name or "text"
    text = _check_text(text, label)
    ext = Path(name).suffix.lower() if name else ""
    head = text[: 1 << 16]
    stripped = head.lstrip()
    if stripped[:1] in ("{", "["):
        if re.search(r'"\s*(BW_average|MsgSize)', head, re.I):
            return "perftest-json"
        raise MeasureError(
            f"{label}: JSON without perftest fields; expected perftest --out_json output "
            "with MsgSize and BW_average"
        )
    if re.search(r"^\s*#bytes\b", head, re.M | re.I):
        return "perftest"
    if _NSYS_HINT.search(head):
        return "nsys"
    if ext in (".prom", ".metrics") or _KNOWN_PROM.search(head):
        return "prometheus"
    if re.search(r"^\s*#\s*(TYPE|HELP)\s", head, re.M):
        return "prometheus"
    if ext in (".csv", ".tsv", ".txt") or re.search(
        r"^\s*[+-]?\.?\d[\d.eE+-]*\s*[,;\t ]\s*[+-]?\.?\d", head, re.M
    ):
        return "pairs"
    raise MeasureError(
        f"{label}: cannot tell what this measurement is; expected Prometheus text (/metrics), "
        "perftest ib_*_bw output or --out_json, an nsys stats CSV, or a bytes,seconds CSV"
    )


@dataclass(frozen=True)
class Measurement:
    """One loaded file: ``data`` is :class:`Metrics` (prometheus), a list of (bytes, bytes/s)
    (perftest, perftest-json), :class:`NsysResult` (nsys) or a list of (bytes, seconds)
    (pairs)."""

    kind: str
    name: str
    data: object


def load_measurement(
    src,
    name: str | None = None,
    *,
    kind: str | None = None,
    pattern: str | None = None,
    unit: str | None = None,
    mb_bytes: float = PERFTEST_MB_BYTES,
    share_target: float = SHARE_TARGET,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Measurement:
    """Read ``src`` (path, bytes, text or an upload), detect its kind (or take ``kind``) and
    parse it.  ``pattern`` goes to :func:`parse_nsys_csv`, ``unit``/``mb_bytes`` to
    :func:`parse_perftest`, ``share_target`` to :func:`parse_prometheus_metrics`."""
    text, label = read_text(src, name, max_bytes)
    kind = kind or detect_measurement(text, label)
    if kind == "prometheus":
        data = parse_prometheus_metrics(text, label, share_target)
    elif kind in ("perftest", "perftest-json"):
        data = parse_perftest(text, label, unit=unit, mb_bytes=mb_bytes)
    elif kind == "nsys":
        data = parse_nsys_csv(text, label, pattern)
    elif kind == "pairs":
        data = parse_pairs_csv(text, label)
    else:
        raise MeasureError(f"unknown measurement kind {kind!r}; expected one of {', '.join(KINDS)}")
    return Measurement(kind=kind, name=label, data=data)
