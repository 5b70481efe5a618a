"""Prometheus text: the prompt-length histogram of a serving engine's /metrics scrape."""

from __future__ import annotations

import numpy as np

from ..textio import decode, labels_text, parse_exposition
from .assemble import check_total
from .result import Requests, TrafficError, examples

PROMETHEUS_PROMPT_METRICS = {
    "vllm:request_prompt_tokens": "prometheus-vllm",
    "sglang:prompt_tokens_histogram": "prometheus-sglang",
    "tgi_request_input_length": "prometheus-tgi",
}


_EXPECTED = 'expected lines like vllm:request_prompt_tokens_bucket{le="100.0"} 42'


def load_prometheus(data: bytes, name: str) -> Requests:
    """The prompt-length histogram of a /metrics scrape: the first of
    :data:`PROMETHEUS_PROMPT_METRICS` found, de-cumulated, summed over label sets."""
    text = decode(data, name, expected="Prometheus text", error=TrafficError)
    series: dict[str, dict[tuple, list]] = {}
    seen: dict[str, None] = {}  # the histograms found, for the message when none is read

    def keep(sample_name: str) -> bool:
        if sample_name.endswith("_bucket") and len(seen) <= 12:
            seen[sample_name.removesuffix("_bucket")] = None
        return sample_name.removesuffix("_bucket") in PROMETHEUS_PROMPT_METRICS

    for s in parse_exposition(text, name, expected=_EXPECTED, error=TrafficError, keep=keep):
        if s.name.endswith("_bucket") and "le" in s.labels:
            base = s.name.removesuffix("_bucket")
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
            series.setdefault(base, {}).setdefault(key, []).append(s)
    metric = next((m for m in PROMETHEUS_PROMPT_METRICS if m in series), None)
    if metric is None:
        found = ", ".join(sorted(seen)[:12]) or "none"
        wanted = ", ".join(f"{m}_bucket" for m in PROMETHEUS_PROMPT_METRICS)
        raise TrafficError(
            f"{name}: no prompt-length histogram in this Prometheus text; expected {wanted}; "
            f"histograms found: {found}"
        )
    fmt, bucket_name = PROMETHEUS_PROMPT_METRICS[metric], metric + "_bucket"
    per_bound: dict[int, float] = {}
    skipped: list[tuple[int, str]] = []
    overflow, top = 0.0, 0
    for key, samples in series[metric].items():
        rows = []
        for s in samples:
            try:
                le = float(s.labels["le"])
                if le != le:  # NaN: no bound, and it sorts nowhere
                    raise ValueError
            except ValueError:
                raise TrafficError(
                    f"{name}: line {s.line}: le={s.labels['le']!r} is not a number; "
                    "expected a bucket upper bound such as 100.0 or +Inf"
                ) from None
            if 2**62 < le < np.inf:
                raise TrafficError(
                    f"{name}: line {s.line}: le={s.labels['le']!r} is over 2^62 tokens, not a "
                    "prompt length; expected a bucket upper bound such as 100.0 or +Inf"
                )
            rows.append((le, float(s.value), s))
        rows.sort(key=lambda r: r[0])
        prev_le, prev = None, 0.0
        bucket_counts = []
        for le, value, s in rows:
            if not np.isfinite(value) or value < prev or le < 0:
                problem = (
                    f'is {value:g}, below {prev:g} at le="{prev_le:g}"'
                    if value < prev
                    else f"is {value:g}"
                    if le >= 0
                    else f"has a negative bound le={le:g}"
                )
                raise TrafficError(
                    f"{name}: line {s.line}: {bucket_name}{labels_text(s.labels)} {problem}; "
                    "expected cumulative counts that never decrease as le grows"
                )
            bucket_counts.append((le, value - prev, s))
            prev_le, prev = le, value
        finite = [(le, c) for le, c, _ in bucket_counts if np.isfinite(le)]
        label_top = int(np.floor(finite[-1][0])) if finite else 0
        top = max(top, label_top)
        for le, c in finite:
            per_bound[int(np.floor(le))] = per_bound.get(int(np.floor(le)), 0.0) + c
        for le, c, s in bucket_counts:
            if np.isinf(le) and c > 0:
                n = s.line
                overflow += c
                skipped.append(
                    (
                        n,
                        f"line {n}: +Inf bucket {labels_text(dict(key))}: {c:g} requests above "
                        f"{label_top} tokens have no upper bound; left out",
                    )
                )
    lengths = np.array(sorted(per_bound), dtype=np.int64)
    counts = np.array([per_bound[b] for b in lengths], dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        check_total(counts.sum() + overflow, bucket_name)
    if counts.sum() <= 0:
        extra = f" (+Inf holds {overflow:g})" if overflow else ""
        raise TrafficError(
            f"{name}: {bucket_name} holds no requests in its finite buckets{extra}; "
            "expected a scrape from a server that has served requests"
        )
    nonzero = counts > 0
    info = {
        "container": "prometheus",
        "prompt_tokens": f"{bucket_name} (le, upper bound)",
        "weights": f"{bucket_name} (de-cumulated)",
        "weights_kind": "count",
        "label_sets": "; ".join(labels_text(dict(k)) for k in list(series[metric])[:20])
        + (f"; … ({len(series[metric]):,} in all)" if len(series[metric]) > 20 else ""),
    }
    if overflow:
        info["overflow_requests"] = overflow
        info["overflow_above_tokens"] = top
    return Requests(
        prompt_tokens=lengths[nonzero],
        weights=counts[nonzero],
        output_tokens=None,
        arrival_s=None,
        cached_tokens=None,
        fmt=fmt,
        columns=info,
        skipped_rows=len(skipped),
        skipped_examples=examples(skipped),
    )
