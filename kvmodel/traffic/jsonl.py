"""JSON Lines and JSON arrays of objects: the whole file as one table (parsed by Arrow, or line
by line when Arrow refuses it), with each row's line (JSON Lines) or item (array) number."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa

from ..textio import check_nesting, json_kind, numbered_lines
from .checks import Part, check
from .collect import Hints
from .columns import flatten
from .result import MAX_EXAMPLES, TrafficError


def _jsonl_line_numbers(data: bytes, index: list[int]) -> dict[int, int]:
    """1-based line numbers of the given 0-based non-blank JSON lines."""
    want, found, k = set(index), {}, -1
    for n, line in enumerate(io.BytesIO(data), start=1):
        if line.strip():
            k += 1
            if k in want:
                found[k] = n
                if len(found) == len(want):
                    break
    return found


def _table_from_records(records: list) -> pa.Table:
    """A table from JSON objects; a column of mixed types becomes text (checked later)."""
    names: dict[str, None] = {}
    for rec in records:
        if isinstance(rec, dict):
            names.update(dict.fromkeys(rec))
    cols = {}
    for key in names:
        values = [rec.get(key) if isinstance(rec, dict) else None for rec in records]
        try:
            cols[key] = pa.array(values)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            cols[key] = pa.array(
                [v if v is None or isinstance(v, str) else json.dumps(v) for v in values],
                pa.string(),
            )
    return pa.table(cols) if cols else pa.table({})


@dataclass
class JsonTable:
    table: pa.Table
    number: Callable[[int], int]  # data row -> line (JSON Lines) or item (array) number
    dropped: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


# A line whose first non-blank character does not open an object.  Arrow would refuse such a
# file anyway, and pyarrow 26's JSON reader crashes the whole process (a segmentation fault, no
# exception) when the first value is a top-level ``null``: those files go line by line.
_NOT_AN_OBJECT_LINE = re.compile(rb"(?m)^[ \t\r]*[^{ \t\r\n]")


def read_json_lines(data: bytes, name: str) -> JsonTable:
    import pyarrow.json as pajson

    check_nesting(data, name, lines=True, error=TrafficError)  # before pyarrow (C stack)
    try:
        if _NOT_AN_OBJECT_LINE.search(data):
            raise pa.ArrowInvalid("a line is not an object")  # see _NOT_AN_OBJECT_LINE
        block = max(1 << 20, min(len(data) + 1, 1 << 26))
        table = pajson.read_json(pa.BufferReader(data), pajson.ReadOptions(block_size=block))
        rows_are_lines = not re.search(rb"\n\s*\n|^\s*\n", data)

        def number(i: int) -> int:
            return i + 1 if rows_are_lines else _jsonl_line_numbers(data, [i]).get(i, i + 1)

        return JsonTable(flatten(table), number)
    except pa.ArrowInvalid:
        pass  # mixed types or a bad line: parse line by line, skipping what does not parse
    records, numbers, dropped = [], [], []
    text = data.decode("utf-8", errors="replace")
    for n, line in numbered_lines(text):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            dropped.append((n, f"is not valid JSON ({exc.msg}, column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            dropped.append((n, f"is {json_kind(rec)}, expected an object"))
            continue
        records.append(rec)
        numbers.append(n)
    return JsonTable(flatten(_table_from_records(records)), numbers.__getitem__, dropped)


def read_json_array(data: bytes, name: str) -> JsonTable:
    check_nesting(data, name, error=TrafficError)  # before json.loads (RecursionError)
    try:
        records = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        where = f"line {exc.lineno}: " if isinstance(exc, json.JSONDecodeError) else ""
        raise TrafficError(
            f"{name}: {where}malformed JSON ({getattr(exc, 'msg', exc)}); "
            "expected JSON Lines (one object per line) or an array of objects"
        ) from None
    if not isinstance(records, list):
        raise TrafficError(f"{name}: the JSON is a {type(records).__name__}, expected an array")
    return JsonTable(flatten(_table_from_records(records)), lambda i: i + 1)


def json_jobs(jt: JsonTable, needed, det):
    def job(hints: Hints) -> list[Part]:
        part = check(jt.table.select(needed), det, jt.number, hints.time_kind)
        part.n_dropped = len(jt.dropped)
        part.examples = sorted(part.examples + jt.dropped[:MAX_EXAMPLES])[:MAX_EXAMPLES]
        return [part]

    yield job
