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
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

MOONCAKE_BLOCK_TOKENS = 512
GZIP_EXPANSION = 5  # decompressed data may be at most this many times max_bytes
_SNIFF = 1 << 16
_MAX_EXAMPLES = 5

PROMPT_NAMES = (
    "prompt_tokens",
    "input_tokens",
    "num_prefill_tokens",
    "prompt_len",
    "input_len",
    "context_tokens",
    "num_prompt_tokens",
    "request_tokens",
    "isl",
    "input_length",
    "prompt_length",
    "num_input_tokens",
)
OUTPUT_NAMES = (
    "completion_tokens",
    "output_tokens",
    "generated_tokens",
    "response_tokens",
    "osl",
    "num_generated_tokens",
    "output_length",
    "output_len",
    "num_output_tokens",
    "generation_tokens",
)
TIME_NAMES = (
    "timestamp",
    "arrival_time",
    "time",
    "created",
    "start_time",
    "created_at",
    "timestamp_ms",
    "arrival_time_ms",
)
BUCKET_NAMES = ("le", "bucket", "upper", "upper_bound", "max_tokens", "bin", "tokens")
COUNT_NAMES = ("count", "requests", "frequency", "n")
PROBABILITY_NAMES = ("probability", "prob", "fraction", "share", "pct", "percent")
HASH_NAMES = ("hash_ids",)

# Prompt-length histograms of serving engines' /metrics, best first.
PROMETHEUS_PROMPT_METRICS = {
    "vllm:request_prompt_tokens": "prometheus-vllm",
    "sglang:prompt_tokens_histogram": "prometheus-sglang",
    "tgi_request_input_length": "prometheus-tgi",
}


class TrafficError(ValueError):
    """A traffic file cannot be read; the message names the problem, where, and what is expected."""


@dataclass(frozen=True)
class Requests:
    """Request lengths read from one file.  All arrays have one entry per request (or bucket)."""

    prompt_tokens: np.ndarray  # int64 >= 0; per request, or a bucket's upper bound
    weights: np.ndarray | None  # float64 requests per entry (histograms); None = one each
    output_tokens: np.ndarray | None  # int64 >= 0
    arrival_s: np.ndarray | None  # float64 seconds since the earliest request, file order
    cached_tokens: np.ndarray | None  # int64 prefix-cache hit tokens (Mooncake hash_ids)
    fmt: str
    columns: dict = field(default_factory=dict)
    skipped_rows: int = 0
    skipped_examples: tuple[str, ...] = ()

    def __post_init__(self):
        n = len(self.prompt_tokens)
        for name in ("weights", "output_tokens", "arrival_s", "cached_tokens"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"Requests.{name} has {len(arr)} entries; expected {n}")

    @property
    def n_requests(self) -> float:
        """Requests represented: the entry count, or the sum of the histogram weights."""
        return float(len(self.prompt_tokens) if self.weights is None else self.weights.sum())


# --------------------------------------------------------------------------- column detection


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def _find(columns: list[str], names: tuple[str, ...]) -> str | None:
    """The first column (file order) matching the best-ranked name; a dotted (flattened JSON)
    column also matches by its last part."""
    keys = [(_key(c), _key(str(c).rsplit(".", 1)[-1])) for c in columns]
    for name in names:
        want = _key(name)
        for col, (full, last) in zip(columns, keys, strict=True):
            if want in (full, last):
                return col
    return None


def detect_columns(columns: list[str]) -> dict:
    """Guess which columns hold what, from their names alone.

    Returns ``{"fmt", "prompt_tokens", "output_tokens", "arrival_s", "cached_tokens", "weights",
    "weights_kind"}``: each field maps to a column name or ``None``; ``fmt`` is the layout
    (``"azure2023"``, ``"mooncake"``, ``"burstgpt"``, ``"histogram"``,
    ``"histogram-probability"``, ``"generic-table"``) or ``None`` when no length column is found;
    ``weights_kind`` is ``"count"``, ``"probability"`` or ``None``.
    """
    columns = [str(c) for c in columns]
    keys = {_key(c) for c in columns}
    prompt = _find(columns, PROMPT_NAMES)
    bucket = _find(columns, BUCKET_NAMES)
    count = _find(columns, COUNT_NAMES if bucket else COUNT_NAMES[:-1])  # "n" only beside a bucket
    prob = None if count else _find(columns, PROBABILITY_NAMES)
    out = {
        "fmt": None,
        "prompt_tokens": prompt,
        "output_tokens": _find(columns, OUTPUT_NAMES),
        "arrival_s": _find(columns, TIME_NAMES),
        "cached_tokens": _find(columns, HASH_NAMES),
        "weights": count or prob,
        "weights_kind": "count" if count else "probability" if prob else None,
    }
    if out["weights"] and (bucket or prompt):
        out.update(prompt_tokens=bucket or prompt, output_tokens=None, arrival_s=None)
        out.update(cached_tokens=None)
        out["fmt"] = "histogram" if count else "histogram-probability"
        return out
    out.update(weights=None, weights_kind=None)
    if prompt is None:
        return out
    if {"timestamp", "contexttokens", "generatedtokens"} <= keys:
        out["fmt"] = "azure2023"
    elif {"inputlength", "hashids"} <= keys:
        out["fmt"] = "mooncake"
    elif {"requesttokens", "responsetokens"} <= keys and keys & {"logtype", "model", "totaltokens"}:
        out["fmt"] = "burstgpt"
    else:
        out["fmt"] = "generic-table"
    return out


# --------------------------------------------------------------------------- reading bytes


def _read_source(src, name: str | None, max_bytes: int) -> tuple[bytes, str]:
    """The raw bytes of ``src`` and a display name; refuses more than ``max_bytes``."""
    limit_mb = f"{max_bytes / 1e6:g} MB"
    if isinstance(src, (str, Path)):
        path = Path(src)
        name = name or path.name
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise TrafficError(
                    f"{name}: the file is {size / 1e6:.3g} MB, over the {limit_mb} limit; "
                    "upload a smaller sample or a pre-binned histogram"
                )
            data = path.read_bytes()
        except OSError as exc:
            raise TrafficError(f"cannot read {path}: {exc.strerror or exc}") from None
    elif isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
    elif hasattr(src, "getvalue") or hasattr(src, "read"):
        name = name or Path(str(getattr(src, "name", "") or "upload")).name
        try:
            data = src.getvalue() if hasattr(src, "getvalue") else src.read(max_bytes + 1)
        except OSError as exc:
            raise TrafficError(f"{name}: cannot read the upload: {exc}") from None
        if isinstance(data, str):
            data = data.encode("utf-8")
        data = bytes(data)
    else:
        raise TrafficError(
            f"cannot read a {type(src).__name__}; expected a path, bytes or a binary file object"
        )
    name = name or "upload"
    if len(data) > max_bytes:
        size = f"{len(data) / 1e6:.3g} MB" if len(data) != max_bytes + 1 else "larger"
        raise TrafficError(
            f"{name}: the file is {size}, over the {limit_mb} limit; "
            "upload a smaller sample or a pre-binned histogram"
        )
    return data, name


def _gunzip(data: bytes, name: str, max_bytes: int) -> bytes:
    limit = GZIP_EXPANSION * max_bytes
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
            out = fh.read(limit + 1)
    except EOFError:
        raise TrafficError(
            f"{name}: the gzip data is truncated (it ends before its end marker); "
            "expected a complete .gz file"
        ) from None
    except (OSError, zlib.error) as exc:
        raise TrafficError(
            f"{name}: the gzip data is corrupt ({exc}); expected a valid .gz file"
        ) from None
    if len(out) > limit:
        raise TrafficError(
            f"{name}: decompressed, the file is over {limit / 1e6:g} MB "
            f"({GZIP_EXPANSION}× the {max_bytes / 1e6:g} MB limit); upload a smaller sample"
        )
    return out


def _check_text(data: bytes, name: str) -> None:
    """Raise unless the start of ``data`` is UTF-8 text."""
    head = data[:_SNIFF]
    if head.startswith(b"PK\x03\x04"):
        raise TrafficError(
            f"{name}: this is a zip archive (an Excel workbook?), not a table; "
            "expected CSV, TSV, Parquet, JSON Lines or Prometheus text (export the sheet as CSV)"
        )
    bad = head.find(b"\x00")
    if bad < 0:
        bad = None
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as exc:  # forgive a character cut by the end of the window
            if not (len(head) == _SNIFF and exc.start >= len(head) - 3 and exc.end == len(head)):
                bad = exc.start
    if bad is not None:
        line = head[:bad].count(b"\n") + 1
        raise TrafficError(
            f"{name}: line {line} holds binary data (byte 0x{head[bad]:02x} at offset {bad}), "
            "not UTF-8 text; expected CSV, TSV, Parquet, JSON Lines or Prometheus text"
        )


_PROM_RE = re.compile(
    r"^\s*#\s*(TYPE|HELP)\s|^[A-Za-z_:][A-Za-z0-9_:]*_bucket\{[^}\n]*\ble=\"", re.M
)


def _sniff(data: bytes, name: str) -> str:
    """``parquet``, ``prometheus``, ``jsonl``, ``json``, ``tsv``, ``csv`` or ``ssv``."""
    ext = name.lower().removesuffix(".gz").rsplit(".", 1)[-1] if "." in name else ""
    if data[:4] == b"PAR1":
        return "parquet"
    _check_text(data, name)
    text = data[:_SNIFF].decode("utf-8", errors="ignore")
    first = text.lstrip()[:1]
    if ext in ("prom", "metrics") or _PROM_RE.search(text):
        return "prometheus"
    if first == "[":
        return "json"
    if first == "{" or ext in ("jsonl", "ndjson", "json"):
        return "jsonl"
    header = text.lstrip("\r\n").split("\n", 1)[0]
    counts = {"tsv": header.count("\t"), "csv": header.count(","), "ssv": header.count(";")}
    if ext == "tsv" and counts["tsv"]:
        return "tsv"
    if ext == "csv" and counts["csv"]:
        return "csv"
    return max(counts, key=lambda k: (counts[k], k == "csv"))


# --------------------------------------------------------------------------- tables


@dataclass
class _Table:
    """Parsed columns plus where each row came from."""

    table: pa.Table
    container: str
    skipped: list[tuple[int, str]] = field(default_factory=list)  # (row order key, reason)
    label: Callable[[int], str] = str  # table index -> "row 7" / "line 7"
    unit: str = "row"


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _arrow_msg(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg.removeprefix("CSV parse error: ").removeprefix("JSON parse error: ")


_DELIMS = {"csv": ",", "tsv": "\t", "ssv": ";"}


def _csv_header(data: bytes, kind: str) -> list[str]:
    text = data[:_SNIFF].decode("utf-8", errors="replace").lstrip("\ufeff")
    for row in csv.reader(io.StringIO(text), delimiter=_DELIMS[kind]):
        if any(cell.strip() for cell in row):
            return row
    return []


def _read_csv(data: bytes, kind: str, name: str, needed: list[str]) -> _Table:
    import pyarrow.csv as pacsv

    def read(threads: bool, as_text: bool):
        bad: list = []

        def on_bad(row):
            bad.append((row.number, row.actual_columns, row.expected_columns, row.text))
            return "skip"

        opts = pacsv.ConvertOptions(
            include_columns=needed,
            column_types={c: pa.string() for c in needed} if as_text else None,
            null_values=[""],  # "NaN", "NA", "null" stay visible in the skip reasons
            strings_can_be_null=False,
        )
        table = pacsv.read_csv(
            pa.BufferReader(data),
            read_options=pacsv.ReadOptions(use_threads=threads, block_size=1 << 22),
            parse_options=pacsv.ParseOptions(delimiter=_DELIMS[kind], invalid_row_handler=on_bad),
            convert_options=opts,
        )
        return table, bad

    table = bad = None
    for as_text in (False, True):  # a late unparseable value breaks type inference: retry as text
        try:
            table, bad = read(True, as_text)
            if any(b[0] is None for b in bad):  # row numbers are known only single-threaded
                table, bad = read(False, as_text)
            break
        except pa.ArrowInvalid as exc:
            if as_text:
                raise TrafficError(f"{name}: cannot parse the table: {_arrow_msg(exc)}") from None
    skipped_numbers = sorted(b[0] for b in bad)
    skipped = [
        (num, f"row {num}: has {got} field(s), expected {want}: {text[:60]!r}")
        for num, got, want, text in bad
    ]

    def label(i: int) -> str:
        row = i + 2  # the header is row 1
        for num in skipped_numbers:
            if num <= row:
                row += 1
        return f"row {row}"

    return _Table(table, kind, skipped, label)


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


def _read_json_lines(data: bytes, name: str) -> _Table:
    import pyarrow.json as pajson

    try:
        block = max(1 << 20, min(len(data) + 1, 1 << 26))
        table = pajson.read_json(pa.BufferReader(data), pajson.ReadOptions(block_size=block))
        rows_are_lines = not re.search(rb"\n\s*\n|^\s*\n", data)

        def label(i: int) -> str:
            if rows_are_lines:
                return f"line {i + 1}"
            return f"line {_jsonl_line_numbers(data, [i]).get(i, i + 1)}"

        return _Table(_flatten(table), "jsonl", [], label, "line")
    except pa.ArrowInvalid:
        pass  # mixed types or a bad line: parse line by line, skipping what does not parse
    records, numbers, skipped = [], [], []
    text = data.decode("utf-8", errors="replace")
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            skipped.append((n, f"line {n}: is not valid JSON ({exc.msg}, column {exc.colno})"))
            continue
        if not isinstance(rec, dict):
            skipped.append((n, f"line {n}: is a JSON {type(rec).__name__}, expected an object"))
            continue
        records.append(rec)
        numbers.append(n)
    table = _flatten(_table_from_records(records))
    return _Table(table, "jsonl", skipped, lambda i: f"line {numbers[i]}", "line")


def _read_json_array(data: bytes, name: str) -> _Table:
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
    return _Table(_flatten(_table_from_records(records)), "json", [], lambda i: f"item {i + 1}")


def _parquet_names(data: bytes, name: str) -> list[str]:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(pa.BufferReader(data))
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(f"{name}: not a readable Parquet file ({_arrow_msg(exc)})") from None
    return _flatten(schema.empty_table()).column_names


def _read_parquet(data: bytes, name: str, needed: list[str]) -> _Table:
    import pyarrow.parquet as pq

    top = list(dict.fromkeys(c.split(".", 1)[0] for c in needed))
    try:
        table = pq.read_table(pa.BufferReader(data), columns=top)
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(f"{name}: cannot read the Parquet data ({_arrow_msg(exc)})") from None
    return _Table(_flatten(table).select(needed), "parquet", [], lambda i: f"row {i + 1}")


# --------------------------------------------------------------------------- column values


@dataclass
class _Checked:
    values: np.ndarray
    bad: np.ndarray  # bool per row
    arr: pa.ChunkedArray
    column: str
    expected: str

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
        return f"{self.column} is {shown} (expected {self.expected})"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numbers(arr: pa.ChunkedArray, column: str, what: str) -> np.ndarray:
    """float64 values of a column (NaN where null or unparseable)."""
    t = arr.type
    if pa.types.is_null(t):
        return np.full(len(arr), np.nan)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        if t != pa.float64():
            arr = arr.cast(pa.float64())
        return np.asarray(arr.to_numpy(zero_copy_only=False), dtype=np.float64)
    if pa.types.is_boolean(t):
        return np.full(len(arr), np.nan)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        import pandas as pd

        text = pd.Series(arr.to_numpy(zero_copy_only=False), dtype=object)
        return pd.to_numeric(text.str.strip(), errors="coerce").to_numpy(np.float64)
    raise TrafficError(
        f"column {column!r} holds {t} values; expected {what} (pick another column by hand)"
    )


def _nulls(arr: pa.ChunkedArray) -> np.ndarray:
    if arr.null_count == 0:
        return np.zeros(len(arr), dtype=bool)
    return arr.is_null().to_numpy(zero_copy_only=False)


def _filled(arr: pa.ChunkedArray) -> pa.ChunkedArray:
    return arr if arr.null_count == 0 else arr.fill_null(0)


def _whole(arr: pa.ChunkedArray, column: str) -> _Checked:
    expected = "a whole number >= 0"
    t = arr.type
    if pa.types.is_integer(t):
        nulls = _nulls(arr)
        filled = _filled(arr)
        if filled.type != pa.int64():  # a cast is not free even when it changes nothing
            filled = filled.cast(pa.int64())
        values = filled.to_numpy(zero_copy_only=False)
        return _Checked(values, nulls | (values < 0), arr, column, expected)
    x = _numbers(arr, column, expected)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(x) | (x < 0) | (x != np.floor(x)) | (x > 2**62)
    values = np.where(bad, 0, x).astype(np.int64)
    return _Checked(values, bad, arr, column, expected)


def _weights(arr: pa.ChunkedArray, column: str) -> _Checked:
    expected = "a number >= 0"
    x = _numbers(arr, column, expected)
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(x) | (x < 0)
    return _Checked(np.where(bad, 0.0, x), bad, arr, column, expected)


def _bounds(arr: pa.ChunkedArray, column: str) -> _Checked:
    """Bucket upper bounds: numbers >= 0 or +Inf (the overflow bucket)."""
    expected = "a bucket upper bound >= 0, or +Inf"
    x = _numbers(arr, column, expected)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        text = np.asarray(arr.to_numpy(zero_copy_only=False), dtype=object)
        inf = np.array([str(v).strip().lower() in ("+inf", "inf", "infinity") for v in text])
        x = np.where(inf, np.inf, x)
    with np.errstate(invalid="ignore"):
        bad = np.isnan(x) | (x < 0)
    return _Checked(np.where(bad, 0.0, x), bad, arr, column, expected)


_UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def _times(arr: pa.ChunkedArray, column: str, unit: str | None) -> tuple[_Checked, str]:
    """Arrival times as float seconds relative to the earliest readable one, and the unit."""
    expected = "a time: seconds, epoch milliseconds or a date-time"
    t = arr.type
    if pa.types.is_date(t):
        arr, t = arr.cast(pa.timestamp("ms")), pa.timestamp("ms")
    if pa.types.is_timestamp(t):
        nulls = _nulls(arr)
        ticks = _filled(arr.cast(pa.int64())).to_numpy(zero_copy_only=False)
        base = ticks[~nulls].min() if (~nulls).any() else 0
        secs = (ticks - base).astype(np.float64) * _UNIT_SCALE[t.unit]
        return _Checked(secs, nulls, arr, column, expected), "date-time"
    x = _numbers(arr, column, expected)
    text_col = pa.types.is_string(t) or pa.types.is_large_string(t)
    if text_col and np.isnan(x).mean() > 0.5:
        import pandas as pd

        text = pd.Series(arr.to_numpy(zero_copy_only=False), dtype=object)
        try:
            stamps = pd.to_datetime(text, errors="coerce", utc=True, format="ISO8601")
            if stamps.isna().mean() > 0.5:
                stamps = pd.to_datetime(text, errors="coerce", utc=True, format="mixed")
        except (ValueError, TypeError, OverflowError):
            stamps = pd.Series(pd.NaT, index=text.index, dtype="datetime64[ns, UTC]")
        secs = (stamps - stamps.min()).dt.total_seconds().to_numpy(np.float64)
        return _Checked(secs, np.isnan(secs), arr, column, expected), "date-time"
    finite_mask = np.isfinite(x)
    if unit is None:
        if re.search(r"(^|[^a-z])ms$|millis", column.lower().replace(" ", "_")):
            unit = "ms"
        else:  # the magnitude of a (strided) sample tells the unit
            sample = x[:: max(1, len(x) // 100_000)]
            sample = np.abs(sample[np.isfinite(sample)])
            mag = float(np.median(sample)) if sample.size else 0.0
            unit = "ns" if mag > 1e17 else "us" if mag > 1e14 else "ms" if mag > 1e11 else "s"
    base = float(np.min(x, where=finite_mask, initial=np.inf)) if finite_mask.any() else 0.0
    if not x.flags.writeable:  # a zero-copy view of Arrow memory
        x = x.copy()
    x -= base  # x is now this function's own array: update in place
    if unit != "s":
        x *= _UNIT_SCALE[unit]
    return _Checked(x, ~finite_mask, arr, column, expected), unit


def _prefix_hits(lists: pa.ChunkedArray, prompt: np.ndarray) -> np.ndarray:
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


# --------------------------------------------------------------------------- assembly


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


def _examples(skipped: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(reason for _, reason in sorted(skipped, key=lambda s: s[0])[:_MAX_EXAMPLES])


def _from_table(tab: _Table, det: dict, name: str, where: str) -> Requests:
    table, n = tab.table, tab.table.num_rows
    if n == 0:
        if tab.skipped:
            raise TrafficError(
                f"{name}: no usable rows; first problem: {_examples(tab.skipped)[0]}"
            )
        raise TrafficError(
            f"{name}: there is only a header ({where}), no data; expected one row per request"
        )
    col = {f: det[f] for f in ("prompt_tokens", "output_tokens", "arrival_s", "weights")}
    histogram = det["weights"] is not None
    checks: list[_Checked] = []
    if histogram:
        prompt = _bounds(table[col["prompt_tokens"]], col["prompt_tokens"])
        weights = _weights(table[col["weights"]], col["weights"])
        checks += [prompt, weights]
    else:
        prompt = _whole(table[col["prompt_tokens"]], col["prompt_tokens"])
        checks.append(prompt)
    output = arrival = None
    unit = None
    if col["output_tokens"]:
        output = _whole(table[col["output_tokens"]], col["output_tokens"])
        checks.append(output)
    if col["arrival_s"]:
        ms = "ms" if det["fmt"] == "mooncake" else None
        arrival, unit = _times(table[col["arrival_s"]], col["arrival_s"], ms)
        checks.append(arrival)
    bad = np.zeros(n, dtype=bool)
    for check in checks:
        bad |= check.bad
    skipped = list(tab.skipped)
    for i in np.flatnonzero(bad)[:_MAX_EXAMPLES]:
        first = next(c for c in checks if c.bad[i])
        label = tab.label(int(i))
        skipped.append((int(label.split()[-1]), f"{label}: {first.reason(int(i))}"))
    n_bad = int(bad.sum())
    if n_bad == n:
        shown = "; ".join(_examples(skipped))
        raise TrafficError(
            f"{name}: none of the {n} data {tab.unit}s is usable; first problems: {shown}; "
            "if a column was guessed wrong, pick the columns by hand"
        )
    keep = ~bad if n_bad else slice(None)  # no copies when every row is good
    info = {"container": tab.container, **{f: c for f, c in col.items() if c}}
    skipped_rows = len(tab.skipped) + n_bad
    if histogram:
        return _histogram(prompt, weights, ~bad, det, info, skipped, skipped_rows, tab, name)
    prompt_tokens = prompt.values[keep]
    output_tokens = output.values[keep] if output else None
    arrival_s = None
    if arrival:
        arrival_s = arrival.values[keep]
        if n_bad:
            arrival_s = arrival_s - arrival_s.min()
        info["time_unit"] = unit
    cached = None
    if det["fmt"] == "mooncake" and det["cached_tokens"]:
        hashes = table[det["cached_tokens"]]
        if pa.types.is_list(hashes.type) or pa.types.is_large_list(hashes.type):
            if n_bad:
                hashes = hashes.filter(pa.array(~bad))
            cached = _prefix_hits(hashes, prompt_tokens)
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
        skipped_examples=_examples(skipped),
    )


def _histogram(prompt, weights, keep, det, info, skipped, skipped_rows, tab, name) -> Requests:
    bounds, w = prompt.values[keep], weights.values[keep]
    overflow = np.isinf(bounds)
    finite_b = bounds[~overflow]
    over = float(w[overflow].sum())
    top = int(np.floor(finite_b.max())) if finite_b.size else 0
    if over > 0:
        for i in np.flatnonzero(keep)[overflow & (w > 0)]:
            label = tab.label(int(i))
            reason = (
                f"{label}: {prompt.column} is +Inf: {weights.values[i]:g} "
                f"{'requests' if det['weights_kind'] == 'count' else 'share'} above {top} "
                "tokens have no upper bound; left out"
            )
            skipped.append((int(label.split()[-1]), reason))
            skipped_rows += 1
    lengths, inverse = np.unique(np.floor(finite_b).astype(np.int64), return_inverse=True)
    counts = np.bincount(inverse, weights=w[~overflow], minlength=len(lengths))
    nonzero = counts > 0
    total = counts.sum()
    if total <= 0:
        extra = f" (the +Inf bucket holds {over:g})" if over > 0 else ""
        raise TrafficError(
            f"{name}: the histogram holds no requests: every finite bucket's "
            f"{weights.column} is 0{extra}; expected some {weights.column} > 0"
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
        skipped_examples=_examples(skipped),
    )


# --------------------------------------------------------------------------- Prometheus


def _prom_parse(text: str, name: str) -> list:
    from prometheus_client.parser import text_string_to_metric_families

    try:
        return list(text_string_to_metric_families(text))
    except Exception as exc:  # the parser raises several types on malformed text
        for n, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                list(text_string_to_metric_families(line + "\n"))
            except Exception:
                raise TrafficError(
                    f"{name}: line {n} is not Prometheus text exposition ({line[:80]!r}); "
                    'expected lines like vllm:request_prompt_tokens_bucket{le="100.0"} 42'
                ) from None
        raise TrafficError(f"{name}: not valid Prometheus text ({exc})") from None


def _prom_line(text: str, sample_name: str, labels: dict) -> int | None:
    """The line number of a sample, for error messages."""
    from prometheus_client.parser import text_string_to_metric_families

    for n, line in enumerate(text.splitlines(), start=1):
        if not line.startswith(sample_name + "{") and not line.startswith(sample_name + " "):
            continue
        try:
            for fam in text_string_to_metric_families(line + "\n"):
                if any(s.labels == labels for s in fam.samples):
                    return n
        except Exception:  # a line the parser refuses is not the one sought
            continue
    return None


def _labels_text(labels: dict) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def _load_prometheus(text: str, name: str) -> Requests:
    families = _prom_parse(text, name)
    series: dict[str, dict[tuple, list]] = {}
    for fam in families:
        for s in fam.samples:
            if s.name.endswith("_bucket") and "le" in s.labels:
                base = s.name.removesuffix("_bucket")
                key = tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))
                series.setdefault(base, {}).setdefault(key, []).append(s)
    metric = next((m for m in PROMETHEUS_PROMPT_METRICS if m in series), None)
    if metric is None:
        found = ", ".join(sorted(series)) or "none"
        wanted = ", ".join(f"{m}_bucket" for m in PROMETHEUS_PROMPT_METRICS)
        raise TrafficError(
            f"{name}: no prompt-length histogram in this Prometheus text; expected {wanted}; "
            f"histograms found: {found}"
        )
    fmt, bucket_name = PROMETHEUS_PROMPT_METRICS[metric], metric + "_bucket"
    per_bound: dict[int, float] = {}
    skipped: list[tuple[int, str]] = []
    overflow, top = 0.0, 0
    for key, samples in series[metric].items():
        rows = []
        for s in samples:
            try:
                le = float(s.labels["le"])
            except ValueError:
                n = _prom_line(text, bucket_name, s.labels)
                raise TrafficError(
                    f"{name}: line {n}: le={s.labels['le']!r} is not a number; "
                    "expected a bucket upper bound such as 100.0 or +Inf"
                ) from None
            rows.append((le, float(s.value), s))
        rows.sort(key=lambda r: r[0])
        prev_le, prev = None, 0.0
        bucket_counts = []
        for le, value, s in rows:
            if not np.isfinite(value) or value < prev or le < 0:
                n = _prom_line(text, bucket_name, s.labels)
                problem = (
                    f'is {value:g}, below {prev:g} at le="{prev_le:g}"'
                    if value < prev
                    else f"is {value:g}"
                    if le >= 0
                    else f"has a negative bound le={le:g}"
                )
                raise TrafficError(
                    f"{name}: line {n}: {bucket_name}{_labels_text(s.labels)} {problem}; "
                    "expected cumulative counts that never decrease as le grows"
                )
            bucket_counts.append((le, value - prev, s))
            prev_le, prev = le, value
        finite = [(le, c) for le, c, _ in bucket_counts if np.isfinite(le)]
        label_top = int(np.floor(finite[-1][0])) if finite else 0
        top = max(top, label_top)
        for le, c in finite:
            per_bound[int(np.floor(le))] = per_bound.get(int(np.floor(le)), 0.0) + c
        for le, c, s in bucket_counts:
            if np.isinf(le) and c > 0:
                n = _prom_line(text, bucket_name, s.labels) or 0
                overflow += c
                skipped.append(
                    (
                        n,
                        f"line {n}: +Inf bucket {_labels_text(dict(key))}: {c:g} requests above "
                        f"{label_top} tokens have no upper bound; left out",
                    )
                )
    lengths = np.array(sorted(per_bound), dtype=np.int64)
    counts = np.array([per_bound[b] for b in lengths], dtype=np.float64)
    if counts.sum() <= 0:
        extra = f" (+Inf holds {overflow:g})" if overflow else ""
        raise TrafficError(
            f"{name}: {bucket_name} holds no requests in its finite buckets{extra}; "
            "expected a scrape from a server that has served requests"
        )
    nonzero = counts > 0
    info = {
        "container": "prometheus",
        "prompt_tokens": f"{bucket_name} (le, upper bound)",
        "weights": f"{bucket_name} (de-cumulated)",
        "weights_kind": "count",
        "label_sets": "; ".join(_labels_text(dict(k)) for k in series[metric]),
    }
    if overflow:
        info["overflow_requests"] = overflow
        info["overflow_above_tokens"] = top
    return Requests(
        prompt_tokens=lengths[nonzero],
        weights=counts[nonzero],
        output_tokens=None,
        arrival_s=None,
        cached_tokens=None,
        fmt=fmt,
        columns=info,
        skipped_rows=len(skipped),
        skipped_examples=_examples(skipped),
    )


# --------------------------------------------------------------------------- public API


def _prepare(src, name, max_bytes) -> tuple[bytes, str, str, bool]:
    data, name = _read_source(src, name, max_bytes)
    gz = data[:2] == b"\x1f\x8b"
    if gz:
        data = _gunzip(data, name, max_bytes)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 (an Excel "Unicode text" export)
        try:
            data = data.decode("utf-16").encode("utf-8")
        except UnicodeDecodeError:
            raise TrafficError(f"{name}: broken UTF-16 text; expected UTF-8 text") from None
    if data[:3] == b"\xef\xbb\xbf":
        data = data[3:]
    if not data[:_SNIFF].strip() and not data.strip():
        raise TrafficError(f"{name}: the file is empty; expected a header and one row per request")
    return data, name, _sniff(data, name), gz


def _table_columns(data: bytes, name: str, kind: str) -> tuple[list[str], _Table | None]:
    """Column names, and the parsed table when reading them already parsed it (JSON)."""
    if kind == "parquet":
        return _parquet_names(data, name), None
    if kind == "jsonl":
        tab = _read_json_lines(data, name)
        return tab.table.column_names, tab
    if kind == "json":
        tab = _read_json_array(data, name)
        return tab.table.column_names, tab
    if kind == "prometheus":
        raise TrafficError(
            f"{name}: this is Prometheus text (a /metrics scrape), not a table; "
            "it is read without picking columns"
        )
    return _csv_header(data, kind), None


def table_columns(src, *, name: str | None = None, max_bytes: int = 200_000_000) -> list[str]:
    """Column names of a tabular file (CSV/TSV/Parquet/JSON Lines), for a manual column picker.

    JSON objects nested in a column are flattened to ``outer.inner`` names.
    """
    data, name, kind, _ = _prepare(src, name, max_bytes)
    return _table_columns(data, name, kind)[0]


def load_traffic(
    src,
    *,
    name: str | None = None,
    prompt_column: str | None = None,
    output_column: str | None = None,
    time_column: str | None = None,
    max_bytes: int = 200_000_000,
    progress: Callable[[float], object] | None = None,
) -> Requests:
    """Read a trace, table, histogram or Prometheus scrape into :class:`Requests`.

    ``src`` is a path, bytes or a binary file object (e.g. Streamlit's ``UploadedFile``);
    ``name`` is the file name used for detection when ``src`` is bytes.  ``prompt_column``,
    ``output_column`` and ``time_column`` override the detected columns (``""`` = none).
    ``progress(fraction)`` is called a few times with 0..1.  Raises :class:`TrafficError`.
    """

    try:
        return _load(src, name, prompt_column, output_column, time_column, max_bytes, progress)
    except TrafficError:
        raise
    except (pa.ArrowException, ValueError, TypeError, KeyError, IndexError, OverflowError) as exc:
        shown = name or getattr(src, "name", None) or "the file"
        raise TrafficError(
            f"{shown}: cannot read it ({type(exc).__name__}: {_arrow_msg(exc)}); expected CSV, "
            "TSV, Parquet, JSON Lines or Prometheus text with one prompt length per request"
        ) from None


def _load(src, name, prompt_column, output_column, time_column, max_bytes, progress) -> Requests:
    def step(fraction: float) -> None:
        if progress is not None:
            progress(fraction)

    step(0.0)
    data, name, kind, gz = _prepare(src, name, max_bytes)
    step(0.15)
    if kind == "prometheus":
        if prompt_column or output_column or time_column:
            raise TrafficError(
                f"{name}: is Prometheus text; column choices apply to tables only "
                "(leave them empty)"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise TrafficError(f"{name}: line {line} is not UTF-8 text") from None
        result = _load_prometheus(text, name)
        step(1.0)
        return result
    columns, tab = _table_columns(data, name, kind)
    if not columns:
        raise TrafficError(f"{name}: no columns found; expected a header row naming the columns")
    where = "line 1" if kind == "jsonl" else "row 1 (the header)"
    det, needed = _plan(columns, name, where, prompt_column, output_column, time_column)
    step(0.25)
    if tab is not None:
        tab.table = tab.table.select(needed)
    elif kind == "parquet":
        tab = _read_parquet(data, name, needed)
    else:
        tab = _read_csv(data, kind, name, needed)
    step(0.7)
    if gz:
        tab.container += "+gzip"
    result = _from_table(tab, det, name, where)
    step(1.0)
    return result
