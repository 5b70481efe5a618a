"""Reading a per-request table straight into counts per length (``load_traffic(...,
per_request=False)``): what every analysis uses, without holding the table's columns.

Every traffic analysis works on the moved-token histogram (``traffic.Mix``) and the time from
the first to the last arrival.  A per-request table can therefore be reduced as it is read:
each CSV piece or Parquet batch, on the thread that parsed it, becomes counts per prompt
length, its earliest and latest arrival and a small sample of times (for their unit).  Bad rows
are found, counted and named exactly as when the columns are kept.  The result is a
:class:`Requests` with one weighted entry per distinct length; the analyses give the same
numbers as from the per-request arrays, at a fraction of the memory and time.

A Mooncake trace with ``hash_ids`` is read per request first (a prefix hit depends on every
earlier request) and then reduced to distinct (prompt, cached) pairs by :func:`summarise`.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, replace

import numpy as np

from .assemble import check_span, check_usable, time_unit
from .checks import UNIT_SCALE, Part
from .collect import Collect
from .result import Requests, examples

_DENSE_MAX = 50_000_000  # counts by bincount up to this length, by sorting above it
_SAMPLE = 4_096  # times kept per part to tell their unit


def _counts(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct lengths (ascending) and how many times each occurs."""
    counts = _dense(lengths)
    if counts is not None:
        nz = np.flatnonzero(counts)
        return nz, counts[nz]
    return np.unique(lengths, return_counts=True)


def _dense(lengths: np.ndarray) -> np.ndarray | None:
    """Requests per length 0, 1, …, max (None when the lengths are too large for that)."""
    if lengths.size and lengths.max() < _DENSE_MAX:
        return np.bincount(lengths)
    return None


@dataclass
class _PartTally:
    dense: np.ndarray | None  # requests per length 0, 1, …; else the two arrays below
    lengths: np.ndarray | None
    counts: np.ndarray | None
    n: int  # requests kept
    time_kind: str | None = None
    first: float | int | None = None  # earliest and latest arrival, as in the file
    last: float | int | None = None
    sample: np.ndarray | None = None
    failed: int = 0  # rows with 0 output tokens (BurstGPT's failed requests)
    # output tokens summed per distinct prompt length of the part, and their squares summed
    # over the part: (lengths, sums, sum of squares); None without an output column
    outputs: tuple[np.ndarray, np.ndarray, float] | None = None


def _tally(part: Part) -> _PartTally:
    keep = None if part.bad is None else ~part.bad

    def kept(x: np.ndarray) -> np.ndarray:
        return x if keep is None else x[keep]

    prompt = kept(part.values["prompt_tokens"])
    dense = _dense(prompt)
    out = _PartTally(dense, None, None, prompt.size)
    if dense is None:
        out.lengths, out.counts = np.unique(prompt, return_counts=True)
    times = part.values.get("arrival_s")
    if times is not None:
        t = kept(times)
        if t.size:
            out.time_kind, out.first, out.last = part.time_kind, t.min(), t.max()
            out.sample = t[:: max(1, t.size // _SAMPLE)].copy()
    output = part.values.get("output_tokens")
    if output is not None:
        o = kept(output)
        out.failed = int(np.count_nonzero(o == 0))
        out.outputs = _output_sums(prompt, o, dense, out.lengths)
    return out


def _output_sums(prompt, o, dense, lengths):
    """(distinct lengths, Σ output per length, Σ output² over the part) of one part: one
    weighted bincount over the lengths when they are counted densely, else over their index
    among the distinct ones."""
    # Σ o² in whole numbers while it cannot overflow (3× faster than converting to floats)
    top = int(o.max()) if o.size else 0
    sq = float(np.dot(o, o)) if o.dtype.kind in "iu" and top * top * o.size < 2**62 else float(
        np.dot(o.astype(np.float64), o.astype(np.float64)))  # fmt: skip
    if dense is not None:
        nz = np.flatnonzero(dense)
        return nz, np.bincount(prompt, weights=o, minlength=len(dense))[nz], sq
    idx = np.searchsorted(lengths, prompt)
    return lengths, np.bincount(idx, weights=o, minlength=len(lengths)), sq


def _output_moments(tallies: list[_PartTally], lengths: np.ndarray, weights: np.ndarray):
    """Per distinct length of the whole read, the mean of its requests' output tokens and a
    mean square: the mean squared plus the trace's spread within lengths (one figure, carried
    by the lengths with outputs), so that the weighted sums of both over the lengths are those
    of the requests.  None when a part had no output column."""
    parts = [t.outputs for t in tallies if t.n]
    if not parts or any(p is None for p in parts):
        return None
    at = np.searchsorted(lengths, np.concatenate([p[0] for p in parts]))
    s1 = np.bincount(at, weights=np.concatenate([p[1] for p in parts]), minlength=len(lengths))
    mean = s1 / weights
    within = max(sum(p[2] for p in parts) - float((s1 * mean).sum()), 0.0)
    some = mean > 0  # a length whose outputs are all 0 has no spread to carry
    spread = within / float(weights[some].sum()) if some.any() else 0.0
    return np.stack([mean, mean * mean + np.where(some, spread, 0.0)], axis=1)


class Tally(Collect):
    """A :class:`Collect` that keeps counts instead of columns: each part is tallied by the
    thread that parsed it (or by :meth:`add` when its reader does not), then let go."""

    def __init__(self, unit: str, first_row: int, capacity: int = 0):
        super().__init__(unit, first_row, capacity)
        self.tallies: list[_PartTally] = []
        self.dense = np.zeros(0, np.int64)  # requests per length, summed over parts
        self._lock = threading.Lock()

    def prepare(self, det: dict, time_kind: str | None) -> None:
        pass  # nothing to reserve

    def put(self, part: Part, start: int) -> None:
        if not part.values:
            return
        tally = _tally(part)
        part.values = {}
        with self._lock:
            if tally.dense is not None:
                if len(tally.dense) > len(self.dense):
                    grown = np.zeros(len(tally.dense), np.int64)
                    grown[: len(self.dense)] = self.dense
                    self.dense = grown
                self.dense[: len(tally.dense)] += tally.dense
                tally.dense = None
            self.tallies.append(tally)

    def keep(self, part: Part, a: int, b: int) -> None:
        self.put(part, a)

    def assemble(self, det: dict, container: str, name: str, where: str) -> Requests:
        check_usable(self, name, where)
        nz = np.flatnonzero(self.dense)
        sparse = [t for t in self.tallies if t.lengths is not None]  # parts with huge lengths
        if sparse:
            lengths, inverse = np.unique(
                np.concatenate([nz, *(t.lengths for t in sparse)]), return_inverse=True
            )
            counts = np.concatenate([self.dense[nz], *(t.counts for t in sparse)])
            weights = np.bincount(inverse, weights=counts)
        else:
            lengths, weights = nz, self.dense[nz].astype(np.float64)
        lengths = lengths.astype(np.int64, copy=False)
        fields = ("prompt_tokens", "output_tokens", "arrival_s")
        info = {"container": container, **{f: det[f] for f in fields if det[f]}}
        span = None
        timed = [t for t in self.tallies if t.time_kind and t.time_kind == self.time_kind]
        if det["arrival_s"] and timed:
            span, info["time_unit"] = _span(timed, self.time_kind, det)
            check_span(span, info["time_unit"], det)
        if det["fmt"] == "burstgpt" and det["output_tokens"]:
            info["failed_requests"] = sum(t.failed for t in self.tallies)
        moments = _output_moments(self.tallies, lengths, weights) if det["output_tokens"] else None
        return Requests(
            prompt_tokens=lengths,
            weights=weights,
            output_tokens=None,
            arrival_s=None,
            cached_tokens=None,
            fmt=det["fmt"],
            columns=info,
            skipped_rows=self.n_dropped + self.n_bad,
            skipped_examples=examples(self.skipped),
            span_s=span,
            output_moments=moments,
        )


def _span(tallies: list[_PartTally], kind: str, det: dict) -> tuple[float | None, str]:
    """Seconds from the first to the last arrival (computed as :mod:`.collect` computes the
    latest arrival, so both ways agree to the last bit), and the column's unit."""
    n = sum(t.n for t in tallies)
    first = min(t.first for t in tallies)
    last = max(t.last for t in tallies)
    if kind == "datetime":
        span, unit = float(np.int64(last) - np.int64(first)) / 1e9, "date-time"
    else:
        unit = time_unit(np.concatenate([t.sample for t in tallies]), det)
        span = float((np.float64(last) - np.float64(first)) * UNIT_SCALE[unit])
    return (span or None) if n > 1 else None, unit


def summarise(req: Requests) -> Requests:
    """The same requests as one weighted entry per distinct (prompt, cached) pair: all an
    analysis needs.  Histograms come back unchanged."""
    if req.weights is not None:
        return req
    prompt = np.asarray(req.prompt_tokens, dtype=np.int64)
    cached, inverse = None, None
    with_outputs = req.output_tokens is not None
    if req.cached_tokens is None and not with_outputs:
        lengths, counts = _counts(prompt)
    elif req.cached_tokens is None:
        lengths, inverse, counts = np.unique(prompt, return_inverse=True, return_counts=True)
    else:
        pairs, inverse, counts = np.unique(
            np.stack([prompt, np.asarray(req.cached_tokens, dtype=np.int64)], axis=1),
            axis=0,
            return_inverse=True,
            return_counts=True,
        )
        lengths, cached = pairs[:, 0].copy(), pairs[:, 1].copy()
    moments = None
    if with_outputs:  # each entry's mean and mean square of output tokens
        o = np.asarray(req.output_tokens, dtype=np.float64)
        inverse = inverse.ravel()
        moments = np.stack([np.bincount(inverse, weights=o, minlength=len(counts)) / counts,
                            np.bincount(inverse, weights=o * o, minlength=len(counts)) / counts],
                           axis=1)  # fmt: skip
    span = req.span_s
    if span is None and req.arrival_s is not None and len(req.arrival_s) > 1:
        span = float(np.nanmax(req.arrival_s) - np.nanmin(req.arrival_s)) or None
    return replace(
        req,
        prompt_tokens=lengths,
        weights=counts.astype(np.float64),
        output_tokens=None,
        arrival_s=None,
        cached_tokens=cached,
        span_s=span,
        output_moments=moments,
    )
