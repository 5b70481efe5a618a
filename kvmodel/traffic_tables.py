"""The readers of each table format (CSV/TSV, JSON Lines and arrays, Parquet): jobs that turn
a piece of the file into checked parts, with row numbers as the file shows them."""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa

from .traffic_base import _MAX_EXAMPLES, TrafficError, _arrow_msg
from .traffic_checks import _check, _Part
from .traffic_collect import _Collect, _Hints
from .traffic_source import _Source

_JOB_ROWS = 1 << 20  # Parquet rows per job (whole row groups)
_BATCH_ROWS = 1 << 18  # Parquet rows decoded at a time: less memory in flight than whole groups


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


_DELIMS = {"csv": ",", "tsv": "\t", "ssv": ";"}


def _csv_names(source: _Source, kind: str) -> tuple[list[str], int]:
    """The header's column names and the offset (in ``source.head``) where the data begins."""
    import pyarrow.csv as pacsv

    start = 0
    while True:  # Arrow skips empty lines before the header
        end = source.line_end(start)
        if end <= start or source.head[start:end].strip(b"\r\n"):
            break
        start = end
    line = source.head[start:end]
    if not line.strip():
        return [], end
    table = pacsv.read_csv(
        pa.py_buffer(line),
        read_options=pacsv.ReadOptions(use_threads=False),
        parse_options=pacsv.ParseOptions(delimiter=_DELIMS[kind]),
    )
    return table.column_names, end


def _parse_csv(piece, names, needed, delim, types, name) -> tuple[pa.Table, list]:
    """One piece of CSV (no header) as a table of the needed columns, and the dropped rows."""
    import pyarrow.csv as pacsv

    def read(column_types):
        dropped: list = []

        def on_bad(row):
            dropped.append((row.number, row.actual_columns, row.expected_columns, row.text))
            return "skip"

        table = pacsv.read_csv(
            pa.BufferReader(pa.py_buffer(piece)),
            read_options=pacsv.ReadOptions(
                use_threads=False, block_size=min(len(piece) + 1, 2**31 - 1), column_names=names
            ),
            parse_options=pacsv.ParseOptions(delimiter=delim, invalid_row_handler=on_bad),
            convert_options=pacsv.ConvertOptions(
                include_columns=needed,
                column_types=column_types,
                null_values=[""],  # "NaN", "NA", "null" stay visible in the skip reasons
                strings_can_be_null=False,
            ),
        )
        return table, dropped

    try:
        return read(types)
    except pa.ArrowInvalid:  # a value the first piece's types cannot hold: read it as text
        try:
            return read({c: pa.string() for c in needed})
        except pa.ArrowInvalid as exc:
            raise _PieceError(_arrow_msg(exc)) from None


class _PieceError(Exception):
    """A CSV piece that cannot be parsed even as text; Arrow's message counts rows from the
    start of the piece, the reader turns that into the file's row."""

    def message(self, name: str, offset: int) -> str:
        msg = re.sub(r"Row #(\d+)", lambda m: f"row {offset + int(m.group(1))}", str(self))
        return f"{name}: cannot parse the table: {msg}"


def _csv_part(piece, names, needed, delim, det, hints: _Hints, name: str) -> _Part:
    table, dropped = _parse_csv(piece, names, needed, delim, hints.types, name)
    numbers = sorted(d[0] or 0 for d in dropped)

    def number(i: int) -> int:
        row = i + 1
        for num in numbers:
            if num <= row:
                row += 1
        return row

    part = _check(table, det, number, hints.time_kind)
    part.rows_seen, part.n_dropped = table.num_rows + len(dropped), len(dropped)
    notes = [(num or 0, _dropped_reason(got, want, text)) for num, got, want, text in dropped]
    notes = notes[:_MAX_EXAMPLES]
    part.examples = sorted(part.examples + notes)[:_MAX_EXAMPLES]
    return part


def _dropped_reason(got: int, want: int, text: str) -> str:
    """Why a row with the wrong number of fields was skipped.  A quote left open makes one row
    (as a spreadsheet counts rows) of the lines up to the next quote or the piece's end."""
    lines = text.count("\n")
    if not lines:
        return f"has {got} field(s), expected {want}: {text[:60]!r}"
    return (
        f'has a quote (") that does not close on its line, so it and the {lines:,} '
        f"line{'s' if lines > 1 else ''} after it were read as one row and skipped "
        f"({text.splitlines()[0][:40]!r}…); expected each quote to close on its own line"
    )


def _csv_jobs(source: _Source, kind: str, names, start: int, needed, det, name, col: _Collect):
    delim = _DELIMS[kind]

    def job(index: int, piece, hints: _Hints) -> list[_Part]:
        part = None
        try:
            part = _csv_part(piece, names, needed, delim, det, hints, name)
        finally:  # even when this piece fails: the pieces after it wait for their rows
            start = col.claim(index, 0 if part is None else part.n)
        col.put(part, start)
        return [part]

    for index, piece in enumerate(source.pieces(start)):
        yield partial(job, index, piece)


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
class _JsonTable:
    table: pa.Table
    number: Callable[[int], int]  # data row -> line (JSON Lines) or item (array) number
    dropped: list[tuple[int, str]] = field(default_factory=list)  # (line, reason)


def _read_json_lines(data: bytes, name: str) -> _JsonTable:
    import pyarrow.json as pajson

    try:
        block = max(1 << 20, min(len(data) + 1, 1 << 26))
        table = pajson.read_json(pa.BufferReader(data), pajson.ReadOptions(block_size=block))
        rows_are_lines = not re.search(rb"\n\s*\n|^\s*\n", data)

        def number(i: int) -> int:
            return i + 1 if rows_are_lines else _jsonl_line_numbers(data, [i]).get(i, i + 1)

        return _JsonTable(_flatten(table), number)
    except pa.ArrowInvalid:
        pass  # mixed types or a bad line: parse line by line, skipping what does not parse
    records, numbers, dropped = [], [], []
    text = data.decode("utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            dropped.append((n, f"is not valid JSON ({exc.msg}, column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            dropped.append((n, f"is a JSON {type(rec).__name__}, expected an object"))
            continue
        records.append(rec)
        numbers.append(n)
    return _JsonTable(_flatten(_table_from_records(records)), numbers.__getitem__, dropped)


def _read_json_array(data: bytes, name: str) -> _JsonTable:
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
    return _JsonTable(_flatten(_table_from_records(records)), lambda i: i + 1)


def _json_jobs(jt: _JsonTable, needed, det):
    def job(hints: _Hints) -> list[_Part]:
        part = _check(jt.table.select(needed), det, jt.number, hints.time_kind)
        part.n_dropped = len(jt.dropped)
        part.examples = sorted(part.examples + jt.dropped[:_MAX_EXAMPLES])[:_MAX_EXAMPLES]
        return [part]

    yield job


def _parquet_file(source: _Source, name: str):
    import pyarrow.parquet as pq

    try:
        if source.path is not None:
            return pq.ParquetFile(source.path, pre_buffer=True)
        return pq.ParquetFile(pa.BufferReader(pa.py_buffer(source.whole())), pre_buffer=True)
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(f"{name}: not a readable Parquet file ({_arrow_msg(exc)})") from None


def _parquet_names(source: _Source, name: str) -> list[str]:
    return _flatten(_parquet_file(source, name).schema_arrow.empty_table()).column_names


def _parquet_jobs(source: _Source, needed, det, name, col: _Collect):
    """One job per run of row groups of about :data:`_JOB_ROWS` rows; each reads its own handle
    (a ParquetFile is not shared between threads) in batches of :data:`_BATCH_ROWS` rows."""
    meta = _parquet_file(source, name).metadata
    top = list(dict.fromkeys(c.split(".", 1)[0] for c in needed))

    def job(groups: list[int], start: int, hints: _Hints) -> list[_Part]:
        parts = []
        try:
            batches = _parquet_file(source, name).iter_batches(
                batch_size=_BATCH_ROWS, row_groups=groups, columns=top, use_threads=False
            )
            for batch in batches:
                table = _flatten(pa.Table.from_batches([batch])).select(needed)
                parts.append(_check(table, det, _row_number, hints.time_kind))
                col.put(parts[-1], start)
                start += batch.num_rows
                hints.time_kind = hints.time_kind or parts[-1].time_kind
        except (pa.ArrowException, OSError) as exc:
            raise TrafficError(
                f"{name}: cannot read the Parquet data ({_arrow_msg(exc)})"
            ) from None
        return parts

    run, rows, start = [], 0, 0
    for g in range(meta.num_row_groups):
        run.append(g)
        rows += meta.row_group(g).num_rows
        if rows >= _JOB_ROWS:
            yield partial(job, run, start)
            run, rows, start = [], 0, start + rows
    if run:
        yield partial(job, run, start)


def _row_number(i: int) -> int:
    return i + 1
