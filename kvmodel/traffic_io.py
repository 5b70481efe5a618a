"""Read a real request-length distribution (a trace, a table, a histogram, a /metrics scrape).

:func:`load_traffic` turns an uploaded file into :class:`Requests`: prompt lengths (and, where the
source has them, output lengths, arrival times and prefix-cache hits), one entry per request or
one weighted entry per histogram bucket.  Nothing here imports streamlit.

Formats, detected by content first and file name second (``.gz`` by its magic bytes too):

- **Tables**: CSV, TSV (also ``;``-separated), Parquet (magic ``PAR1``), JSON Lines (or one JSON
  array of objects).  Parsed with pyarrow, reading only the columns used.
- **Known layouts** (``Requests.fmt``): ``"azure2023"`` (``TIMESTAMP`` wall clock,
  ``ContextTokens``, ``GeneratedTokens``); ``"mooncake"`` (``timestamp`` in ms, ``input_length``,
  ``output_length``, ``hash_ids``); ``"burstgpt"`` (``Timestamp`` s, ``Request tokens``,
  ``Response tokens``; rows with 0 response tokens are failed requests: they are kept, they still
  prefilled, and ``columns["failed_requests"]`` counts them); anything else with a recognised
  column name (:data:`PROMPT_NAMES`, :data:`OUTPUT_NAMES`, :data:`TIME_NAMES`, compared
  case-insensitively ignoring spaces, ``_`` and ``-``) is ``"generic-table"``.
- **Histograms** (``"histogram"``): a bucket column (:data:`BUCKET_NAMES`) with a count column
  (:data:`COUNT_NAMES`), or a probability column (:data:`PROBABILITY_NAMES`; ``fmt`` is then
  ``"histogram-probability"``, the weights are scaled to sum to 1 and
  ``columns["total_requests"] == "unknown"``).  Counts are per bucket, not cumulative.  A prompt
  column with a count column is read the same way (a value-count table).
- **Prometheus text** (``"prometheus-vllm"``, ``"prometheus-sglang"``, ``"prometheus-tgi"``):
  the cumulative ``_bucket`` series of the prompt-length histogram, parsed with
  ``prometheus_client``, de-cumulated, summed over label sets (models, engines, ranks).

Decisions the analysis should know:

- **A bucket stands for its upper bound**: ``prompt_tokens`` of a histogram entry is the bucket's
  ``le`` rounded down to whole tokens, so lengths are over-estimated, never under-estimated (the
  conservative side for a KV transfer).  Empty buckets are left out.
- **The ``+Inf`` bucket is left out**: its requests have no upper bound.  They are counted in
  ``skipped_rows`` (one per ``+Inf`` bucket), explained in ``skipped_examples`` and totalled in
  ``columns["overflow_requests"]`` (``columns["overflow_above_tokens"]`` is the largest finite
  bound) so the caller can say how many long requests the histogram could not place.
- **Bad rows are skipped, never used**: an empty, NaN, negative, fractional or unparseable length
  (or arrival time, output length, count) drops the row; so does a CSV row with the wrong number
  of fields or a JSON line that does not parse.  ``skipped_rows`` counts them and
  ``skipped_examples`` names the first five: rows as a spreadsheet shows them (header = row 1),
  JSON Lines by line.  A file whose rows are all bad raises :class:`TrafficError`.
- **Times**: ``arrival_s`` is seconds since the earliest kept request, in file order.  Numbers are
  seconds unless the layout says ms (Mooncake), the column name ends in ``ms``, or they are
  epoch milliseconds / microseconds / nanoseconds by magnitude (> 1e11 / 1e14 / 1e17).  Text is
  read as ISO / wall-clock date-times.
- **Mooncake prefix hits**: ``cached_tokens[i] = min(512 × (leading hash_ids of request i that
  an earlier kept request already holds), input_length[i])``; only the leading run counts (a
  prefix cache cannot reuse a block after a miss).

``Requests.columns`` maps each filled field (``prompt_tokens``, ``output_tokens``,
``arrival_s``, ``cached_tokens``, ``weights``) to the source column, plus notes: ``container``
(``csv``, ``tsv``, ``parquet``, ``jsonl``, ``json``, ``prometheus``; ``+gzip`` when
compressed), ``time_unit``, ``weights_kind``, ``overflow_requests``, ``label_sets``.

How it reads (a 10-million-row trace in about the time ``pyarrow.csv.read_csv`` takes, in
under 1.5 × the memory of the columns it returns): a path is read in 4 MB pieces, bytes and an
upload's buffer are sliced without a copy, gzip is inflated piece by piece; each CSV piece or
Parquet batch is parsed and checked on a few threads and written straight into the returned
arrays.  With ``per_request=False`` (what the app and the CLI use) each piece is instead
counted per prompt length on its thread and let go: the columns are never held (0.8 × the
CSV parse alone, 0.4-0.5 × the columns' memory at peak; ``bench/traffic_parse.py``).
Modules: ``traffic_source`` (bytes, limits, format), ``traffic_tables`` (CSV, JSON, Parquet
readers), ``traffic_checks`` (values and bad rows), ``traffic_collect`` (threads, assembly),
``traffic_tally`` (counting instead of keeping), ``traffic_prom`` (Prometheus),
``traffic_base`` (shared types); this module keeps the public API.
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from .traffic_base import (
    BUCKET_NAMES,
    COUNT_NAMES,
    HASH_NAMES,
    MOONCAKE_BLOCK_TOKENS,
    OUTPUT_NAMES,
    PROBABILITY_NAMES,
    PROMPT_NAMES,
    TIME_NAMES,
    Requests,
    TrafficError,
    _arrow_msg,
    _key,
    detect_columns,
)
from .traffic_checks import _time_kind
from .traffic_collect import _assemble, _Collect, _Hints, _run
from .traffic_prom import PROMETHEUS_PROMPT_METRICS, _load_prometheus
from .traffic_source import GZIP_EXPANSION, _prepare, _Source
from .traffic_tables import (
    _csv_jobs,
    _csv_names,
    _flatten,
    _json_jobs,
    _parquet_file,
    _parquet_jobs,
    _parquet_names,
    _PieceError,
    _read_json_array,
    _read_json_lines,
)
from .traffic_tally import _Tally, summarise

__all__ = [
    "BUCKET_NAMES",
    "COUNT_NAMES",
    "GZIP_EXPANSION",
    "HASH_NAMES",
    "MOONCAKE_BLOCK_TOKENS",
    "OUTPUT_NAMES",
    "PROBABILITY_NAMES",
    "PROMETHEUS_PROMPT_METRICS",
    "PROMPT_NAMES",
    "TIME_NAMES",
    "Requests",
    "TrafficError",
    "detect_columns",
    "load_traffic",
    "table_columns",
]


def _resolve(choice: str, columns: list[str], what: str, where: str, name: str) -> str:
    if choice in columns:
        return choice
    matches = [c for c in columns if _key(c) == _key(choice)]
    if len(matches) == 1:
        return matches[0]
    raise TrafficError(
        f"{name}: {where}: there is no column {choice!r} for the {what}; "
        f"columns found: {', '.join(map(repr, columns)) or 'none'}"
    )


def _plan(
    columns: list[str], name: str, where: str, prompt_col, output_col, time_col
) -> tuple[dict, list[str]]:
    det = detect_columns(columns)
    if prompt_col:
        det["prompt_tokens"] = _resolve(prompt_col, columns, "prompt length", where, name)
        if det["fmt"] is None:
            det["fmt"] = "generic-table"
    if output_col is not None:
        det["output_tokens"] = (
            _resolve(output_col, columns, "output length", where, name) if output_col else None
        )
    if time_col is not None:
        det["arrival_s"] = (
            _resolve(time_col, columns, "arrival time", where, name) if time_col else None
        )
    if det["prompt_tokens"] is None:
        expected = ", ".join(PROMPT_NAMES)
        raise TrafficError(
            f"{name}: {where}: no prompt-length column among "
            f"{', '.join(map(repr, columns)) or 'no columns'}; expected one named {expected} "
            f"(any case), or a histogram: a bucket column ({', '.join(BUCKET_NAMES)}) with a "
            f"count ({', '.join(COUNT_NAMES)}) or probability column "
            f"({', '.join(PROBABILITY_NAMES)}); or pick the column by hand"
        )
    fields = ("prompt_tokens", "output_tokens", "arrival_s", "cached_tokens", "weights")
    needed = list(dict.fromkeys(det[f] for f in fields if det[f]))
    return det, needed


def _table_columns(source: _Source, kind: str) -> tuple[list[str], object]:
    """Column names, and what reading them left for the rows: the parsed JSON table, or the
    offset where a CSV's data begins."""
    name = source.name
    if kind == "parquet":
        return _parquet_names(source, name), None
    if kind == "jsonl":
        jt = _read_json_lines(source.whole(), name)
        return jt.table.column_names, jt
    if kind == "json":
        jt = _read_json_array(source.whole(), name)
        return jt.table.column_names, jt
    if kind == "prometheus":
        raise TrafficError(
            f"{name}: this is Prometheus text (a /metrics scrape), not a table; "
            "it is read without picking columns"
        )
    return _csv_names(source, kind)


def table_columns(src, *, name: str | None = None, max_bytes: int = 200_000_000) -> list[str]:
    """Column names of a tabular file (CSV/TSV/Parquet/JSON Lines), for a manual column picker.

    JSON objects nested in a column are flattened to ``outer.inner`` names.
    """
    source, kind = _prepare(src, name, max_bytes)
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
    table's columns (see :mod:`kvmodel.traffic_tally`).  Skipped rows are the same either way.
    """

    try:
        columns = (prompt_column, output_column, time_column)
        return _load(src, name, columns, max_bytes, progress, per_request)
    except TrafficError:
        raise
    except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        shown = name or getattr(src, "name", None) or "the file"
        raise TrafficError(
            f"{shown}: cannot read it ({type(exc).__name__}: {_arrow_msg(exc)}); expected CSV, "
            "TSV, Parquet, JSON Lines or Prometheus text with one prompt length per request"
        ) from None


def _load(src, name, columns, max_bytes, progress, per_request) -> Requests:
    shown = [-1.0]

    def step(fraction: float) -> None:  # a few calls, not one per piece
        if progress is not None and (fraction in (0.0, 1.0) or fraction >= shown[0] + 0.02):
            shown[0] = fraction
            progress(fraction)

    step(0.0)
    source, kind = _prepare(src, name, max_bytes)
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


def _load_source(source, kind, picks, step, per_request) -> Requests:
    name = source.name
    prompt_column, output_column, time_column = picks
    if kind == "prometheus":
        if prompt_column or output_column or time_column:
            raise TrafficError(
                f"{name}: is Prometheus text; column choices apply to tables only "
                "(leave them empty)"
            )
        data = source.whole()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise TrafficError(f"{name}: line {line} is not UTF-8 text") from None
        result = _load_prometheus(text, name)
        step(1.0)
        return result
    columns, rest = _table_columns(source, kind)
    if not columns:
        raise TrafficError(f"{name}: no columns found; expected a header row naming the columns")
    where = "line 1" if kind == "jsonl" else "row 1 (the header)"
    det, needed = _plan(columns, name, where, prompt_column, output_column, time_column)
    step(0.25)
    rows = None  # known in advance for JSON and Parquet
    hints = _Hints()
    hashed = det["fmt"] == "mooncake" and det["cached_tokens"]  # prefix hits need every row
    Col = _Collect if per_request or det["weights"] or hashed else _Tally
    if kind in ("jsonl", "json"):
        rows = rest.table.num_rows
        col = Col("line" if kind == "jsonl" else "item", 0, rows)
        jobs = _json_jobs(rest, needed, det)
    elif kind == "parquet":
        pf = _parquet_file(source, name)
        rows = pf.metadata.num_rows
        col = Col("row", 0, rows)
        hints.types = {}  # Parquet columns have one type throughout
        if det["arrival_s"]:
            hints.time_kind = _time_kind(_flatten(pf.schema_arrow.empty_table()), det)
        col.prepare(det, hints.time_kind)
        jobs = _parquet_jobs(source, needed, det, name, col)
    else:
        col = Col("row", 1)
        jobs = _csv_jobs(source, kind, columns, rest, needed, det, name, col)
    try:
        for part in _run(jobs, hints, bool(det["arrival_s"])):
            if rows is None and not col.starts:  # rows to expect, from the first piece
                done = source.fraction() or 1.0
                col.cap = int(part.n / done * 1.2) + 1024 if done < 1 else part.n
            col.add(part)
            done = col.n / rows if rows else source.fraction()
            if done is not None:
                step(0.25 + 0.65 * done)
    except _PieceError as exc:  # the parts before it are in: col.offset is where it starts
        raise TrafficError(exc.message(name, col.offset)) from None
    container = kind
    if source.gz:
        container += "+gzip"
    if isinstance(col, _Tally):
        result = col.assemble(det, container, name, where)
    else:
        result = _assemble(col, det, container, name, where)
    step(1.0)
    return result
