"""Checking one piece of a table: each field's values as numpy, the rows that are bad and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from .columns import MOONCAKE_BLOCK_TOKENS
from .result import MAX_EXAMPLES, TrafficError


@dataclass
class Part:
    """The checked columns of one piece of a table (a CSV piece, a Parquet batch, a JSON file).

    Row numbers here are local: the reader adds the piece's offset.  ``number(i)`` is the
    local number of data row ``i`` (as a spreadsheet or editor shows it, counting rows the
    parser dropped); ``examples`` are (local number, reason) for the first problems.
    """

    n: int
    values: dict[str, np.ndarray]
    bad: np.ndarray | None  # bool per row; None when every row is good
    n_bad: int
    examples: list[tuple[int, str]]
    number: Callable[[int], int]
    rows_seen: int  # rows the parser read, dropped ones included
    n_dropped: int = 0  # rows the parser dropped (wrong field count, bad JSON)
    hashes: pa.ChunkedArray | None = None
    time_kind: str | None = None
    types: dict = field(default_factory=dict)


@dataclass
class _Checked:
    values: np.ndarray
    bad: np.ndarray | None  # bool per row; None when every row is good
    arr: pa.ChunkedArray
    column: str
    expected: str
    time_kind: str | None = None  # a time column's kind ("numeric" or "datetime")

    def reason(self, i: int) -> str:
        raw = self.arr[i].as_py()
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            shown = "empty"
        elif isinstance(raw, float) and raw != raw:
            shown = "NaN"
        elif isinstance(raw, str):
            shown = raw.strip() if _is_number(raw) else repr(raw)
        else:
            shown = raw
        other = _time_kind_of(raw) if self.time_kind and shown not in ("empty", "NaN") else None
        if other and other != self.time_kind:
            return (
                f"{self.column} is {shown}, {_KIND_WORDS[other][0]}, but the column's other "
                f"rows hold {_KIND_WORDS[self.time_kind][1]} (expected one kind of time per column)"
            )
        return f"{self.column} is {shown} (expected {self.expected})"


_KIND_WORDS = {"numeric": ("a number", "numbers"), "datetime": ("a date-time", "date-times")}


def _time_kind_of(raw) -> str | None:
    """What kind of time one value is: ``"numeric"``, ``"datetime"`` or None (neither)."""
    if isinstance(raw, int | float) or (isinstance(raw, str) and _is_number(raw)):
        return "numeric"
    if not isinstance(raw, str):
        return "datetime"  # a date or timestamp value
    import pandas as pd

    try:
        pd.Timestamp(raw.strip())
    except (ValueError, TypeError, OverflowError):
        return None
    return "datetime"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _np(arr) -> np.ndarray:
    """A column as numpy: a view of Arrow's memory where it allows one (one chunk, no nulls)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.chunk(0) if arr.num_chunks == 1 else arr.combine_chunks()
    return arr.to_numpy(zero_copy_only=False)


def _any(mask: np.ndarray | None) -> np.ndarray | None:
    return mask if mask is not None and mask.any() else None


def _nonfinite(x: np.ndarray) -> np.ndarray | None:
    """Where ``x`` is NaN or infinite; None when nowhere (one pass: a finite sum says so)."""
    with np.errstate(over="ignore", invalid="ignore"):
        if np.isfinite(np.add.reduce(x)):
            return None
    return _any(~np.isfinite(x))


def _numbers(arr: pa.ChunkedArray, column: str, what: str) -> np.ndarray:
    """float64 values of a column (NaN where null or unparseable)."""
    t = arr.type
    if pa.types.is_null(t) or pa.types.is_boolean(t):
        return np.full(len(arr), np.nan)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        if t != pa.float64():
            arr = arr.cast(pa.float64())
        return np.asarray(_np(arr), dtype=np.float64)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        import pandas as pd

        text = pd.Series(_np(arr), dtype=object)
        return pd.to_numeric(text.str.strip(), errors="coerce").to_numpy(np.float64)
    raise TrafficError(
        f"column {column!r} holds {t} values; expected {what} (pick another column by hand)"
    )


def _nulls(arr: pa.ChunkedArray) -> np.ndarray | None:
    return None if arr.null_count == 0 else _np(arr.is_null())


def _filled(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    return arr if arr.null_count == 0 else arr.fill_null(0)


def _whole(arr: pa.ChunkedArray, column: str) -> _Checked:
    expected = "a whole number >= 0"
    t = arr.type
    if pa.types.is_integer(t):
        filled = _filled(arr)
        if filled.type != pa.int64():  # a cast is not free even when it changes nothing
            filled = filled.cast(pa.int64())
        values = _np(filled)
        bad = _any(values < 0) if values.size and values.min() < 0 else None
        nulls = _nulls(arr)
        if nulls is not None:
            bad = nulls if bad is None else bad | nulls
        return _Checked(values, bad, arr, column, expected)
    x = _numbers(arr, column, expected)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(x) | (x < 0) | (x != np.floor(x)) | (x > 2**62)
    values = np.where(bad, 0, x).astype(np.int64)
    return _Checked(values, _any(bad), arr, column, expected)


def _weights(arr: pa.ChunkedArray, column: str) -> _Checked:
    expected = "a number >= 0"
    x = _numbers(arr, column, expected)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(x) | (x < 0)
    return _Checked(np.where(bad, 0.0, x), _any(bad), arr, column, expected)


def _bounds(arr: pa.ChunkedArray, column: str) -> _Checked:
    """Bucket upper bounds: numbers >= 0 or +Inf (the overflow bucket)."""
    expected = "a bucket upper bound >= 0, or +Inf"
    x = _numbers(arr, column, expected)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        text = np.asarray(_np(arr), dtype=object)
        inf = np.array([str(v).strip().lower() in ("+inf", "inf", "infinity") for v in text])
        x = np.where(inf, np.inf, x) if len(x) else x
    with np.errstate(invalid="ignore"):
        bad = np.isnan(x) | (x < 0) | (np.isfinite(x) & (x > 2**62))  # as prompt lengths do
    return _Checked(np.where(bad, 0.0, x), _any(bad), arr, column, expected)


UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_NS = {"s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
_TIME = "a time: seconds, epoch milliseconds or a date-time"


def _times(arr: pa.ChunkedArray, column: str, kind: str | None) -> tuple[_Checked, str | None]:
    """Arrival times as they are in the file, and their kind: ``"numeric"`` (float64 numbers,
    unit not yet known) or ``"datetime"`` (int64 nanoseconds since the epoch).  ``kind`` is what
    earlier pieces of the column were; a value of the other kind is a bad row."""
    t = arr.type
    if pa.types.is_date(t):
        arr, t = arr.cast(pa.timestamp("ms")), pa.timestamp("ms")
    text_col = pa.types.is_string(t) or pa.types.is_large_string(t)
    if pa.types.is_timestamp(t) and kind != "numeric":
        ticks = _np(_filled(arr.cast(pa.int64()))).astype(np.int64, copy=False)
        limit = np.iinfo(np.int64).max // _NS[t.unit]
        bad = _nulls(arr)
        if _NS[t.unit] > 1:
            out = np.abs(ticks) > limit
            bad = out if bad is None else bad | out
            ticks = np.where(out, 0, ticks) * _NS[t.unit]
        return _Checked(ticks, _any(bad), arr, column, _TIME), "datetime"
    if pa.types.is_timestamp(t) or pa.types.is_null(t):
        x = np.zeros(len(arr), np.int64 if kind == "datetime" else np.float64)
        return _Checked(x, _any(np.ones(len(arr), bool)), arr, column, _TIME), kind
    x = _numbers(arr, column, _TIME)
    if kind is None:
        kind = "datetime" if text_col and np.isnan(x).mean() > 0.5 else "numeric"
    if kind == "numeric":
        return _Checked(x, _nonfinite(x), arr, column, _TIME, kind), kind
    if not text_col:  # numbers in a date-time column
        return _Checked(
            np.zeros(len(x), np.int64), _any(np.ones(len(x), bool)), arr, column, _TIME, kind
        ), kind
    import pandas as pd

    text = pd.Series(_np(arr), dtype=object)
    try:
        stamps = pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601")
        if stamps.isna().mean() > 0.5:
            stamps = pd.to_datetime(text, errors="coerce", utc=True, format="mixed")
        ticks = stamps.dt.as_unit("ns").to_numpy(dtype="datetime64[ns]").view(np.int64)
    except (ValueError, TypeError, OverflowError):
        ticks = np.full(len(text), np.iinfo(np.int64).min)
    nat = ticks == np.iinfo(np.int64).min
    return _Checked(np.where(nat, 0, ticks), _any(nat), arr, column, _TIME, kind), kind


def schema_time_kind(schema_table: pa.Table, det: dict) -> str | None:
    """The kind of time column a type alone tells (None for text: its values tell)."""
    t = schema_table.schema.field(det["arrival_s"]).type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "datetime"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numeric"
    return None


def check(table: pa.Table, det: dict, number: Callable[[int], int], time_kind) -> Part:
    """Check one piece's columns: values per field, the bad rows, the first problems."""
    checks: list[tuple[str, _Checked]] = []
    p = det["prompt_tokens"]
    if det["weights"]:
        checks += [("prompt_tokens", _bounds(table[p], p))]
        checks += [("weights", _weights(table[det["weights"]], det["weights"]))]
    else:
        checks.append(("prompt_tokens", _whole(table[p], p)))
    if det["output_tokens"]:
        checks.append(("output_tokens", _whole(table[det["output_tokens"]], det["output_tokens"])))
    if det["arrival_s"]:
        arrival, time_kind = _times(table[det["arrival_s"]], det["arrival_s"], time_kind)
        checks.append(("arrival_s", arrival))
    bad = None
    for _, check in checks:
        if check.bad is not None:
            bad = check.bad.copy() if bad is None else bad | check.bad
    examples, n_bad = [], 0
    if bad is not None:
        n_bad = int(bad.sum())
        for i in np.flatnonzero(bad)[:MAX_EXAMPLES]:
            first = next(c for _, c in checks if c.bad is not None and c.bad[i])
            examples.append((number(int(i)), first.reason(int(i))))
    hashes = None
    if det["fmt"] == "mooncake" and det["cached_tokens"]:
        column = table[det["cached_tokens"]]
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            hashes = column
    return Part(
        n=table.num_rows,
        values={f: c.values for f, c in checks if f != "arrival_s" or time_kind},
        bad=bad,
        n_bad=n_bad,
        examples=examples,
        number=number,
        rows_seen=table.num_rows,
        hashes=hashes,
        time_kind=time_kind,
        types={c: table.schema.field(c).type for c in table.column_names},
    )


def prefix_hits(lists: pa.ChunkedArray, prompt: np.ndarray) -> np.ndarray:
    """Mooncake prefix-cache hits: 512 × the leading blocks an earlier request already holds."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    import pyarrow.compute as pc

    n = len(lists)
    lengths = pc.list_value_length(lists).fill_null(0).to_numpy(zero_copy_only=False)
    lengths = lengths.astype(np.int64)
    values = pc.list_flatten(lists).to_numpy(zero_copy_only=False)
    if n == 0 or values.size == 0:
        return np.zeros(n, dtype=np.int64)
    row_of = np.repeat(np.arange(n), lengths)
    _, first_pos, inverse = np.unique(values, return_index=True, return_inverse=True)
    seen = row_of[first_pos][inverse] < row_of  # some earlier request held this block
    starts = np.cumsum(lengths) - lengths
    lead = lengths.copy()  # rows whose blocks were all seen
    miss = np.flatnonzero(~seen)
    rows, first = np.unique(row_of[miss], return_index=True)
    lead[rows] = miss[first] - starts[rows]
    return np.minimum(lead * MOONCAKE_BLOCK_TOKENS, prompt)
