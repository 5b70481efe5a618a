"""Putting a table's pieces together: the jobs on a few threads, each piece's values written
in place into one array per field (:class:`Collect`); :mod:`.assemble` makes the result."""

from __future__ import annotations

import bisect
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from .checks import Part
from .result import MAX_EXAMPLES

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
