"""CSV, TSV and ``;``-separated tables: the header, then newline-aligned pieces parsed by Arrow
on a few threads, with rows numbered as a spreadsheet shows them (header = row 1)."""

from __future__ import annotations

import re
from functools import partial

import numpy as np
import pyarrow as pa

from ..textio import Source
from .checks import Part, check
from .collect import Collect, Hints
from .result import MAX_EXAMPLES, TrafficError, arrow_message

_DELIMS = {"csv": ",", "tsv": "\t", "ssv": ";"}
MAX_COLUMNS = 10_000  # a header with more is not a request table (and Arrow's message is obscure)


def csv_names(source: Source, kind: str) -> tuple[list[str], int]:
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
    columns = line.count(_DELIMS[kind].encode()) + 1
    if columns > MAX_COLUMNS:
        raise TrafficError(
            f"row 1 (the header) has {columns:,} columns, over the {MAX_COLUMNS:,} limit; "
            "expected a table with one request per row and a column for its prompt length"
        )
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
            raise PieceError(arrow_message(exc)) from None


class PieceError(Exception):
    """A CSV piece that cannot be parsed even as text; Arrow's message counts rows from the
    start of the piece, the reader turns that into the file's row."""

    def message(self, name: str, offset: int) -> str:
        msg = re.sub(r"Row #(\d+)", lambda m: f"row {offset + int(m.group(1))}", str(self))
        return f"{name}: cannot parse the table: {msg}"


def _fields(delim: str) -> re.Pattern:
    """Text up to the first quoted field that never closes, in one match: runs without
    quotes, quoted fields (a quote after a delimiter or a line break, to its closing quote,
    ``""`` inside an escaped quote) and quotes inside a field (``27"``, as Arrow reads them).
    Possessive, so it never backtracks."""
    sep = re.escape(delim.encode())
    return re.compile(
        rb'(?:[^"]++|"(?<=[' + sep + rb'\n]")(?:[^"]++|"")*+"|"(?<![' + sep + rb'\n]"))*+'
    )


_FIELDS = {d: _fields(d) for d in _DELIMS.values()}
_FIRST = re.compile(rb'"(?:[^"]++|"")*+(")?')  # a quoted field at the very start


def _open_quote(piece, delim: str) -> None:
    """Raise :class:`PieceError` when a quoted field in ``piece`` never closes: Arrow would
    read the rest of the piece as one value and the rows in it would vanish without a word.
    Quoted fields pair their quotes, so an even count of quotes is passed at once (a field that
    never closes together with an odd count of quotes inside fields is not caught)."""
    if np.count_nonzero(np.frombuffer(piece, np.uint8) == 34) % 2 == 0:  # 34: '"'
        return
    first = _FIRST.match(piece)
    if first is not None and first.group(1) is None:
        at = 0
    else:
        at = _FIELDS[delim].match(piece, 0 if first is None else first.end()).end()
        if at == len(piece):
            return
    rest = bytes(piece[at:])
    lines = rest.count(b"\n")
    row = bytes(piece[:at]).count(b"\n") + 1
    raise PieceError(
        f'Row #{row}: a quote (") opens here and never closes, so the {lines:,} '
        f"line{'' if lines == 1 else 's'} after it would be read as one value "
        f"({rest[:40].decode('utf-8', 'replace')!r}…); expected every quote that starts a "
        'value to close (write a quote inside a quoted value as "")'
    )


def _csv_part(piece, names, needed, delim, det, hints: Hints, name: str) -> Part:
    _open_quote(piece, delim)
    table, dropped = _parse_csv(piece, names, needed, delim, hints.types, name)
    numbers = sorted(d[0] or 0 for d in dropped)

    def number(i: int) -> int:
        row = i + 1
        for num in numbers:
            if num <= row:
                row += 1
        return row

    part = check(table, det, number, hints.time_kind)
    part.rows_seen, part.n_dropped = table.num_rows + len(dropped), len(dropped)
    notes = [(num or 0, _dropped_reason(got, want, text)) for num, got, want, text in dropped]
    notes = notes[:MAX_EXAMPLES]
    part.examples = sorted(part.examples + notes)[:MAX_EXAMPLES]
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


def csv_jobs(source: Source, kind: str, names, start: int, needed, det, name, col: Collect):
    delim = _DELIMS[kind]

    def job(index: int, piece, hints: Hints) -> list[Part]:
        part = None
        try:
            part = _csv_part(piece, names, needed, delim, det, hints, name)
        finally:  # even when this piece fails: the pieces after it wait for their rows
            start = col.claim(index, 0 if part is None else part.n)
        col.put(part, start)
        return [part]

    for index, piece in enumerate(source.pieces(start)):
        yield partial(job, index, piece)
