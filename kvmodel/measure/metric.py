"""One Prometheus metric summed over its label sets (:class:`MetricSummary`), and Prometheus'
``histogram_quantile``."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..textio import PromSample
from .base import MeasureError


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


_MEANING = "a duration, size or speed"  # every metric read is one of these


def summarise_metric(
    metric: str, scale: float, rows: list[PromSample], name: str, notes: list
) -> MetricSummary | None:
    """Sum one metric's samples into a :class:`MetricSummary` in SI units (values × ``scale``);
    ``notes`` gets what the caller should know (a label set without a ``+Inf`` bucket).
    Negative values, and totals beyond a float's range (values near 1e308), are a
    :class:`MeasureError`."""
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below
        summary = _summarise(metric, scale, rows, name, notes)
    if summary is not None:
        shown = (summary.count, summary.sum, summary.mean, summary.p50, summary.p90, summary.p99)
        inner = [c for _, c in summary.buckets] + list(summary.samples)
        if any(x is not None and math.isinf(x) for x in shown) or not all(
            math.isfinite(x) for x in inner
        ):
            raise MeasureError(
                f"{name}: {metric}: the values add up beyond what a number holds (over "
                "1.8e308); expected the counts and sums of one scrape"
            )
    return summary


def _summarise(
    metric: str, scale: float, rows: list[PromSample], name: str, notes: list
) -> MetricSummary | None:
    buckets: dict[tuple, list] = {}
    sums: dict[tuple, float] = {}
    counts: dict[tuple, float] = {}
    totals: dict[tuple, float] = {}
    plain: list[PromSample] = []
    for s in rows:
        n, value = s.line, s.value
        suffix = s.name[len(metric) :]
        if suffix in ("_bucket", "_sum", "_count", "_total", "") and not math.isfinite(value):
            raise MeasureError(f"{name}: line {n}: {s.name} is {value}; expected a finite number")
        if value < 0 and suffix in ("_bucket", "_sum", "_count", "_total", ""):
            what = "a count" if suffix in ("_bucket", "_count") else _MEANING
            raise MeasureError(
                f"{name}: line {n}: {s.name} is {value:g}; expected {what} ≥ 0 "
                f"({metric} cannot be negative)"
            )
        if suffix == "_bucket":
            if "le" not in s.labels:
                raise MeasureError(
                    f'{name}: line {n}: {s.name} has no le label; expected {s.name}{{le="0.5"}} 42'
                )
            try:
                le = float(s.labels["le"])
                if le != le:
                    raise ValueError
            except ValueError:
                raise MeasureError(
                    f"{name}: line {n}: le={s.labels['le']!r} is not a number; expected a bucket "
                    "upper bound such as 0.5 or +Inf"
                ) from None
            buckets.setdefault(_label_key(s.labels), []).append((le, value, n))
        elif suffix == "_sum":
            sums[_label_key(s.labels)] = value
        elif suffix == "_count":
            counts[_label_key(s.labels)] = value
        elif suffix == "_total":
            totals[_label_key(s.labels)] = value
        elif suffix == "":
            plain.append(s)
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
        # sum by (le): a series without a bound counts up to its last bound below it, so
        # each series adds its increments at its own bounds; linear in the samples
        steps: dict[float, float] = {}
        for s in per_series:
            prev = 0.0
            for le, c in s:
                steps[le] = steps.get(le, 0.0) + (c - prev)
                prev = c
        summed, running = [], 0.0
        for le in sorted(steps):
            running += steps[le]
            summed.append((le, running))
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
        values = np.array([s.value for s in plain]) * scale
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
