"""From a table's collected columns to :class:`Requests`: per request (times in seconds,
Mooncake prefix hits, BurstGPT's failed requests) or a histogram (bounds, the +Inf bucket)."""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa

from .checks import UNIT_SCALE, prefix_hits
from .collect import Collect
from .columns import MOONCAKE_BLOCK_TOKENS
from .result import Requests, TrafficError, examples


def check_usable(col: Collect, name: str, where: str) -> None:
    """Raise when no row of the table can be used."""
    n = col.n
    if n == 0:
        if col.skipped:
            raise TrafficError(f"{name}: no usable rows; first problem: {examples(col.skipped)[0]}")
        raise TrafficError(
            f"{name}: there is only a header ({where}), no data; expected one row per request"
        )
    if col.n_bad == n:
        shown = "; ".join(examples(col.skipped))
        raise TrafficError(
            f"{name}: none of the {n} data {col.unit}s is usable; first problems: {shown}; "
            "if a column was guessed wrong, pick the columns by hand"
        )


def assemble(col: Collect, det: dict, container: str, name: str, where: str) -> Requests:
    check_usable(col, name, where)
    n = col.n
    keep = None if col.bad is None else ~col.bad[:n]
    values = {}
    fields = dict.fromkeys([*col.cols, *(f for _, values in col.over for f in values)])
    for f in fields:  # one at a time, so only one is ever held twice
        whole = col.column(f)
        values[f] = whole if keep is None else whole[keep]
        del whole
    fields = ("prompt_tokens", "output_tokens", "arrival_s", "weights")
    info = {"container": container, **{f: det[f] for f in fields if det[f]}}
    skipped_rows = col.n_dropped + col.n_bad
    if det["weights"]:
        return _histogram(values, keep, det, info, col, skipped_rows, name)
    prompt_tokens = values["prompt_tokens"]
    output_tokens = values.get("output_tokens")
    arrival_s = span_s = None
    if "arrival_s" in values:
        arrival_s, info["time_unit"] = _seconds(values.pop("arrival_s"), col.time_kind, det)
        span_s = float(arrival_s.max()) if arrival_s.size > 1 else None  # the earliest is 0
        check_span(span_s, info["time_unit"], det)
    cached = None
    if det["fmt"] == "mooncake" and col.hashes:
        hashes = pa.chunked_array(col.hashes)
        if keep is not None:
            hashes = hashes.filter(pa.array(keep))
        cached = prefix_hits(hashes, prompt_tokens)
        info["cached_tokens"] = det["cached_tokens"]
        info["block_tokens"] = MOONCAKE_BLOCK_TOKENS
    if det["fmt"] == "burstgpt" and output_tokens is not None:
        info["failed_requests"] = int((output_tokens == 0).sum())
    return Requests(
        prompt_tokens=prompt_tokens,
        weights=None,
        output_tokens=output_tokens,
        arrival_s=arrival_s,
        cached_tokens=cached,
        fmt=det["fmt"],
        columns=info,
        skipped_rows=skipped_rows,
        skipped_examples=examples(col.skipped),
        span_s=span_s or None,
    )


def _seconds(x: np.ndarray, kind: str, det: dict) -> tuple[np.ndarray, str]:
    """Seconds since the earliest kept arrival, and the unit the column was read in.
    ``x`` is this module's own array (not a view of Arrow memory): it is updated in place."""
    if kind == "datetime":
        x -= x.min()
        secs = x.astype(np.float64)
        secs /= 1e9  # exact for whole seconds, unlike * 1e-9
        return secs, "date-time"
    unit = time_unit(x[:: max(1, len(x) // 100_000)], det)
    x -= x.min()
    if unit != "s":
        x *= UNIT_SCALE[unit]
    return x, unit


MAX_REQUESTS = 1e15  # a histogram's total: 30 million requests a second for a year


def check_total(total: float, column: str, kind: str = "count") -> None:
    """Refuse a histogram whose counts add up to more than :data:`MAX_REQUESTS` (counts near
    1e308 overflow to inf and NaN in every number computed from them)."""
    if not total <= (MAX_REQUESTS if kind == "count" else np.finfo(float).max):
        shown = f"{total:.3g}" if np.isfinite(total) else "more than a number holds (1.8e308)"
        raise TrafficError(
            f"{column}: the counts add up to {shown}, over the limit of {MAX_REQUESTS:.0e} "
            "requests; expected the request counts of one trace or scrape"
            if kind == "count"
            else f"{column}: the shares add up to {shown}; expected shares that sum to about 1"
        )


MAX_SPAN_S = 10 * 365.25 * 86400  # a trace longer than ten years is a misread time column


def check_span(span_s: float | None, unit: str, det: dict) -> None:
    """Refuse arrivals that span more than :data:`MAX_SPAN_S` (times like 1e30 would give a
    rate of 1e-21 requests/s, a number that looks like an answer)."""
    if span_s is not None and not span_s <= MAX_SPAN_S:
        years = f"{span_s / (365.25 * 86400):.3g} years" if np.isfinite(span_s) else "no end"
        raise TrafficError(
            f"{det['arrival_s']}: the arrival times span {years} (read as {unit}); expected the "
            "times of one trace (epoch or relative seconds, ms, us or ns) spanning under 10 "
            "years; check the time column (--time-column, or none)"
        )


def time_unit(sample: np.ndarray, det: dict) -> str:
    """The unit of a numeric time column: from the layout or the column's name, else from the
    magnitude of a sample of its values (epoch ms / us / ns are > 1e11 / 1e14 / 1e17)."""
    column = det["arrival_s"]
    if det["fmt"] == "mooncake":
        return "ms"
    if re.search(r"(^|[^a-z])ms$|millis", column.lower().replace(" ", "_")):
        return "ms"
    mag = float(np.median(np.abs(sample))) if sample.size else 0.0
    return "ns" if mag > 1e17 else "us" if mag > 1e14 else "ms" if mag > 1e11 else "s"


def _histogram(values, keep, det, info, col: Collect, skipped_rows, name) -> Requests:
    bounds, w = values["prompt_tokens"], values["weights"]
    skipped = list(col.skipped)
    overflow = np.isinf(bounds)
    finite_b = bounds[~overflow]
    with np.errstate(over="ignore"):  # checked with the total below
        over = float(w[overflow].sum())
    top = int(np.floor(finite_b.max())) if finite_b.size else 0
    if over > 0:
        rows = np.arange(col.n) if keep is None else np.flatnonzero(keep)
        for k in np.flatnonzero(overflow & (w > 0)):
            num, label = col.label(int(rows[k]))
            reason = (
                f"{label}: {det['prompt_tokens']} is +Inf: {w[k]:g} "
                f"{'requests' if det['weights_kind'] == 'count' else 'share'} above {top} "
                "tokens have no upper bound; left out"
            )
            skipped.append((num, reason))
            skipped_rows += 1
    lengths, inverse = np.unique(np.floor(finite_b).astype(np.int64), return_inverse=True)
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below
        counts = np.bincount(inverse, weights=w[~overflow], minlength=len(lengths))
        total = counts.sum()
        check_total(total + over, det["weights"], det["weights_kind"])
    nonzero = counts > 0
    if total <= 0:
        extra = f" (the +Inf bucket holds {over:g})" if over > 0 else ""
        raise TrafficError(
            f"{name}: the histogram holds no requests: every finite bucket's "
            f"{det['weights']} is 0{extra}; expected some {det['weights']} > 0"
        )
    info["weights_kind"] = det["weights_kind"]
    if det["weights_kind"] == "probability":
        info["total_requests"] = "unknown"
        if over > 0:
            info["overflow_share"] = over / (total + over)
        counts = counts / total
    elif over > 0:
        info["overflow_requests"] = over
    if over > 0:
        info["overflow_above_tokens"] = top
    return Requests(
        prompt_tokens=lengths[nonzero],
        weights=counts[nonzero].astype(np.float64),
        output_tokens=None,
        arrival_s=None,
        cached_tokens=None,
        fmt=det["fmt"],
        columns=info,
        skipped_rows=skipped_rows,
        skipped_examples=examples(skipped),
    )
