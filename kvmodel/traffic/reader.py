"""Reading one traffic file into :class:`~.result.Requests`: open it, tell its format, pick
the columns, run the format's reader on a few threads and assemble (or count) what it read.
The formats and the decisions are documented in :mod:`kvmodel.traffic`."""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from ..textio import Source
from .assemble import assemble
from .checks import schema_time_kind
from .collect import Collect, Hints, run_jobs
from .columns import flatten, plan
from .csv import PieceError, csv_jobs, csv_names
from .dataset import is_dataset, load_dataset
from .jsonl import json_jobs, read_json_array, read_json_lines
from .parquet import parquet_file, parquet_jobs, parquet_names
from .prometheus import load_prometheus
from .result import Requests, TrafficError, arrow_message
from .source import prepare
from .tally import Tally, summarise


def _table_columns(source: Source, kind: str) -> tuple[list[str], object]:
    """Column names, and what reading them left for the rows: the parsed JSON table, or the
    offset where a CSV's data begins."""
    name = source.name
    if kind == "parquet":
        return parquet_names(source, name), None
    if kind == "jsonl":
        jt = read_json_lines(source.whole(), name)
        return jt.table.column_names, jt
    if kind == "json":
        jt = read_json_array(source.whole(), name)
        return jt.table.column_names, jt
    if kind == "prometheus":
        raise TrafficError(
            f"{name}: this is Prometheus text (a /metrics scrape), not a table; "
            "it is read without picking columns"
        )
    return csv_names(source, kind)


def table_columns(src, *, name: str | None = None, max_bytes: int = 200_000_000) -> list[str]:
    """Column names of a tabular file (CSV/TSV/Parquet/JSON Lines), for a manual column picker.

    JSON objects nested in a column are flattened to ``outer.inner`` names.
    """
    source, kind = prepare(src, name, max_bytes)
    try:
        return _table_columns(source, kind)[0]
    finally:
        source.close()


def load_traffic(
    src,
    *,
    name: str | None = None,
    prompt_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    max_bytes: int = 200_000_000,
    progress: Callable[[float], object] | None = None,
    per_request: bool = True,
) -> Requests:
    """Read a trace, table, histogram or Prometheus scrape into :class:`Requests`.

    ``src`` is a path, bytes or a binary file object (e.g. Streamlit's ``UploadedFile``);
    ``name`` is the file name used for detection when ``src`` is bytes.  ``prompt_column``,
    ``output_column`` and ``time_column`` override the detected columns (``""`` = none).
    ``progress(fraction)`` is called a few times with 0..1.  Raises :class:`TrafficError`.

    ``per_request=False`` returns the requests as one weighted entry per distinct length (per
    distinct (prompt, cached) pair for Mooncake ``hash_ids``), with ``span_s`` but without
    ``output_tokens`` and ``arrival_s``: all the analyses need, read without ever holding the
    table's columns (see :mod:`kvmodel.traffic.tally`).  Skipped rows are the same either way.

    A directory or a glob of Parquet files is read as one table, streamed
    (:mod:`kvmodel.traffic.dataset`).
    """

    try:
        columns = (prompt_column, output_column, time_column)
        if is_dataset(src):
            return load_dataset(
                src, columns, max_bytes=max_bytes, progress=progress, per_request=per_request
            )
        return _load(src, name, columns, max_bytes, progress, per_request)
    except TrafficError:
        raise
    except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        path = src if isinstance(src, str) else getattr(src, "name", None)
        shown = name or (str(path).rsplit("/", 1)[-1] if path else "the file")
        raise TrafficError(
            f"{shown}: cannot read it ({type(exc).__name__}: {arrow_message(exc)}); expected CSV, "
            "TSV, Parquet, JSON Lines or Prometheus text with one prompt length per request"
        ) from None


def _load(src, name, columns, max_bytes, progress, per_request) -> Requests:
    shown = [-1.0]

    def step(fraction: float) -> None:  # a few calls, not one per piece
        if progress is not None and (fraction in (0.0, 1.0) or fraction >= shown[0] + 0.02):
            shown[0] = fraction
            progress(fraction)

    step(0.0)
    source, kind = prepare(src, name, max_bytes)
    try:
        step(0.15)
        result = _load_source(source, kind, columns, step, per_request)
        return result if per_request else summarise(result)
    except TrafficError as exc:  # every message starts with the file's name
        if str(exc).startswith(f"{source.name}:"):
            raise
        raise TrafficError(f"{source.name}: {exc}") from None
    finally:
        source.close()


def _no_columns(name: str, kind: str, rest) -> TrafficError:
    """The error of a table without columns: for JSON, what its first skipped value was."""
    if kind in ("jsonl", "json"):
        dropped = getattr(rest, "dropped", None) or []
        unit = "line" if kind == "jsonl" else "item"
        first = f" ({unit} {dropped[0][0]} {dropped[0][1]})" if dropped else ""
        return TrafficError(
            f"{name}: no JSON objects with fields found{first}; expected "
            'one object per request, e.g. {"prompt_tokens": 812, "output_tokens": 128}'
        )
    return TrafficError(f"{name}: no columns found; expected a header row naming the columns")


def _load_source(source, kind, picks, step, per_request) -> Requests:
    name = source.name
    prompt_column, output_column, time_column = picks
    if kind == "prometheus":
        if prompt_column or output_column or time_column:
            raise TrafficError(
                f"{name}: is Prometheus text; column choices apply to tables only "
                "(leave them empty)"
            )
        result = load_prometheus(source.whole(), name)
        step(1.0)
        return result
    columns, rest = _table_columns(source, kind)
    if not columns:
        raise _no_columns(name, kind, rest)
    where = "line 1" if kind == "jsonl" else "row 1 (the header)"
    det, needed = plan(columns, name, where, prompt_column, output_column, time_column)
    step(0.25)
    rows = None  # known in advance for JSON and Parquet
    hints = Hints()
    hashed = det["fmt"] == "mooncake" and det["cached_tokens"]  # prefix hits need every row
    Col = Collect if per_request or det["weights"] or hashed else Tally
    if kind in ("jsonl", "json"):
        rows = rest.table.num_rows
        col = Col("line" if kind == "jsonl" else "item", 0, rows)
        jobs = json_jobs(rest, needed, det)
    elif kind == "parquet":
        pf = parquet_file(source, name)
        rows = pf.metadata.num_rows
        col = Col("row", 0, rows)
        hints.types = {}  # Parquet columns have one type throughout
        if det["arrival_s"]:
            hints.time_kind = schema_time_kind(flatten(pf.schema_arrow.empty_table()), det)
        col.prepare(det, hints.time_kind)
        jobs = parquet_jobs(source, needed, det, name, col)
    else:
        col = Col("row", 1)
        jobs = csv_jobs(source, kind, columns, rest, needed, det, name, col)
    try:
        for part in run_jobs(jobs, hints, bool(det["arrival_s"])):
            if rows is None and not col.starts:  # rows to expect, from the first piece
                done = source.fraction() or 1.0
                col.cap = int(part.n / done * 1.2) + 1024 if done < 1 else part.n
            col.add(part)
            done = col.n / rows if rows else source.fraction()
            if done is not None:
                step(0.25 + 0.65 * done)
    except PieceError as exc:  # the parts before it are in: col.offset is where it starts
        raise TrafficError(exc.message(name, col.offset)) from None
    container = kind
    if source.gz:
        container += "+gzip"
    if isinstance(col, Tally):
        result = col.assemble(det, container, name, where)
    else:
        result = assemble(col, det, container, name, where)
    step(1.0)
    return result
