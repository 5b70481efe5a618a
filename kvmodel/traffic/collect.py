"""Putting a table's pieces together: the jobs on a few threads, each piece's values written
in place into one array per field, then :class:`Requests` (per request or a histogram)."""

from __future__ import annotations

import bisect
import os
import re
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from .checks import UNIT_SCALE, Part, prefix_hits
from .columns import MOONCAKE_BLOCK_TOKENS
from .result import MAX_EXAMPLES, Requests, TrafficError, examples

_WORKERS = max(1, min(4, os.cpu_count() or 1))


@dataclass
class Hints:
    """What the first piece of a table tells the readers of the others."""

    types: dict | None = None  # CSV column types
    time_kind: str | None = None  # "numeric" or "datetime"


def run_jobs(jobs: Iterator[Callable[[Hints], list[Part]]], hints: Hints, timed: bool):
    """Run the jobs on a few threads and yield their parts in order.

    Unless ``hints`` already say what the first piece would tell (the column types of a CSV,
    the kind of a time column), the first job runs alone and its parts fix them for the
    others; while a time column's kind is still open (empty so far) jobs run one at a time.
    """

    def learn(parts: list[Part]) -> list[Part]:
        for part in parts:
            if hints.types is None:
                hints.types = {c: t for c, t in part.types.items() if not pa.types.is_null(t)}
            hints.time_kind = hints.time_kind or part.time_kind
        return parts

    def open_kind() -> bool:
        return timed and hints.time_kind is None

    jobs = iter(jobs)
    if hints.types is None or open_kind():
        first = next(jobs, None)
        if first is None:
            return
        yield from learn(first(hints))
    pending: deque = deque()
    pool = None
    try:
        for job in jobs:
            while pending and open_kind():
                yield from learn(pending.popleft().result())
            if pool is None:
                pool = ThreadPoolExecutor(_WORKERS, thread_name_prefix="traffic")
            pending.append(pool.submit(job, replace(hints)))
            while pending and (len(pending) > _WORKERS or pending[0].done()):
                yield from learn(pending.popleft().result())
        while pending:
            yield from learn(pending.popleft().result())
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


class Collect:
    """The table's columns, one array per field, filled piece by piece.

    Each piece's values are written straight into place, by the thread that parsed it where it
    can (so copying and first touching the memory run in parallel too), and Arrow's memory
    for the piece is then reused by the next one: the table never exists twice.  ``cap`` rows
    are reserved (exact for Parquet and JSON, estimated from the first piece for CSV; pages
    never written cost no memory); rows beyond it are kept aside and joined at the end.
    """

    def __init__(self, unit: str, first_row: int, capacity: int = 0):
        self.unit, self.offset, self.cap = unit, first_row, capacity
        self.n = self.n_bad = self.n_dropped = 0
        self.cols: dict[str, np.ndarray] = {}
        self.over: list[tuple[int, dict]] = []  # (first row, values) of parts beyond cap
        self.bad: np.ndarray | None = None
        self.skipped: list[tuple[int, str]] = []  # (row number, reason), the first few
        self.hashes: list = []
        self.time_kind: str | None = None
        self.starts: list[int] = []  # first data row of each part, for labels
        self.labels: list[tuple[int, Callable[[int], int]]] = []  # (offset, number)
        self._turn = threading.Condition()
        self._next_job = self._next_row = 0

    def prepare(self, det: dict, time_kind: str | None) -> None:
        """Make the arrays before any part arrives, so that every part can be written in place."""
        dtypes = {"prompt_tokens": np.float64 if det["weights"] else np.int64}
        if det["weights"]:
            dtypes["weights"] = np.float64
        if det["output_tokens"]:
            dtypes["output_tokens"] = np.int64
        if det["arrival_s"] and time_kind:
            dtypes["arrival_s"] = np.int64 if time_kind == "datetime" else np.float64
        for f, dtype in dtypes.items():
            self.cols[f] = np.empty(self.cap, dtype)

    def claim(self, job: int, n: int) -> int:
        """The first row of job ``job``'s ``n`` rows: jobs get their rows in job order."""
        with self._turn:
            self._turn.wait_for(lambda: self._next_job == job)
            start = self._next_row
            self._next_row += n
            self._next_job += 1
            self._turn.notify_all()
        return start

    def put(self, part: Part, start: int) -> None:
        """Write a part's values at row ``start`` if the arrays are there and hold them (any
        thread: parts never overlap); otherwise :meth:`add` does it."""
        cols = self.cols
        if start + part.n > self.cap:
            return
        if any(f not in cols or cols[f].dtype != v.dtype for f, v in part.values.items()):
            return
        for f, v in part.values.items():
            cols[f][start : start + part.n] = v
        part.values = {}

    def add(self, part: Part) -> None:
        """Take the next part in row order (the main thread only)."""
        a, b = self.n, self.n + part.n
        self.keep(part, a, b)
        self.n_bad += part.n_bad
        self.n_dropped += part.n_dropped
        if len(self.skipped) < MAX_EXAMPLES:
            self.skipped += [
                (self.offset + num, f"{self.unit} {self.offset + num}: {reason}")
                for num, reason in part.examples
            ]
        if part.hashes is not None:
            self.hashes += part.hashes.chunks
        self.time_kind = self.time_kind or part.time_kind
        self.starts.append(a)
        self.labels.append((self.offset, part.number))
        self.offset += part.rows_seen
        self.n = b

    def keep(self, part: Part, a: int, b: int) -> None:
        """Keep the values and bad rows of the part that holds rows ``a:b``."""
        if part.values and b <= self.cap and not self.over:
            for f, v in part.values.items():
                if f not in self.cols:
                    self.cols[f] = np.empty(self.cap, v.dtype)
            self.put(part, a)
        if b > self.cap or self.over:
            self.over.append((a, part.values))
        else:
            for f, v in part.values.items():  # a kind of time the arrays do not hold
                self.cols[f][a:b] = v
        if part.bad is not None or (self.bad is not None and len(self.bad) < b):
            if self.bad is None or len(self.bad) < b:
                grown = np.zeros(max(b, self.cap, 0 if self.bad is None else 2 * b), bool)
                if self.bad is not None:
                    grown[:a] = self.bad[:a]
                self.bad = grown
            if part.bad is not None:
                self.bad[a:b] = part.bad

    def column(self, f: str) -> np.ndarray:
        """All rows of field ``f`` (handing the array over: the collector lets go of it)."""
        buf = self.cols.pop(f, None)
        if not self.over:
            return buf[: self.n]
        later = [(a, values.pop(f)) for a, values in self.over if f in values]
        out = np.empty(self.n, buf.dtype if buf is not None else later[0][1].dtype)
        head = self.over[0][0]
        if buf is not None:
            out[:head] = buf[:head]
        del buf
        for a, v in later:
            out[a : a + len(v)] = v
        return out

    def label(self, i: int) -> tuple[int, str]:
        k = bisect.bisect_right(self.starts, i) - 1
        offset, number = self.labels[k]
        num = offset + number(i - self.starts[k])
        return num, f"{self.unit} {num}"


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
    counts = np.bincount(inverse, weights=w[~overflow], minlength=len(lengths))
    nonzero = counts > 0
    total = counts.sum()
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
