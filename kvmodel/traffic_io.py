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

import bisect
import gzip
import io
import json
import os
import re
import threading
import zlib
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path

import numpy as np
import pyarrow as pa

MOONCAKE_BLOCK_TOKENS = 512
GZIP_EXPANSION = 5  # decompressed data may be at most this many times max_bytes
_SNIFF = 1 << 16
_MAX_EXAMPLES = 5
_PIECE = 1 << 22  # CSV bytes per parse job
_JOB_ROWS = 1 << 20  # Parquet rows per job (whole row groups)
_BATCH_ROWS = 1 << 17  # Parquet rows decoded at a time: less memory in flight than whole groups
_WORKERS = max(1, min(4, os.cpu_count() or 1))

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


def _too_big(name: str, size: str, max_bytes: int) -> TrafficError:
    return TrafficError(
        f"{name}: the file is {size}, over the {max_bytes / 1e6:g} MB limit; "
        "upload a smaller sample or a pre-binned histogram"
    )


class _Source:
    """The decoded bytes of one input: ``head`` (the start, for sniffing), then the rest whole
    or in newline-aligned pieces.

    Nothing is copied that need not be: a path is read piece by piece, bytes (and an upload's
    ``getvalue()``, which shares its buffer) are sliced with memoryviews, gzip is inflated
    piece by piece within :data:`GZIP_EXPANSION` × ``max_bytes``.
    """

    def __init__(self, name: str, max_bytes: int, data=None, stream=None, path=None):
        self.name, self.path, self.gz = name, path, False
        self._max_bytes = max_bytes
        self._data = data  # the whole input in memory (bytes or bytearray) ...
        self._stream = stream  # ... or a binary stream, read in pieces
        self._raw, self._raw_size = stream, 0  # the undecoded input, for progress
        self._limit: int | None = None  # decompressed bytes allowed
        self._got = 0
        self._skip = 0  # a UTF-8 byte-order mark
        self._pos = 0  # bytes handed out by pieces() (in memory)
        if data is not None:
            self._raw, self._raw_size = None, len(data)
        elif path is not None:
            self._raw_size = path.stat().st_size
        self.head = b""

    # -- setup

    def begin(self) -> None:
        magic = self._data[:2] if self._data is not None else self._stream.read(2)
        if self._data is None:
            self._stream.seek(0)
        if magic == b"\x1f\x8b":
            raw = self._stream if self._data is None else io.BytesIO(self._data)
            self._raw = raw
            self._stream, self._data, self.path = gzip.GzipFile(fileobj=raw, mode="rb"), None, None
            self._limit, self.gz = GZIP_EXPANSION * self._max_bytes, True
        if self._data is not None:
            self.head = bytes(self._data[:_SNIFF])
        else:
            buf = bytearray(_SNIFF)
            self.head = bytes(buf[: self._fill(memoryview(buf))])
        if self.head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 (an Excel "Unicode text" export)
            try:
                text = self.whole().decode("utf-16")
            except UnicodeDecodeError:
                raise TrafficError(
                    f"{self.name}: broken UTF-16 text; expected UTF-8 text"
                ) from None
            self.close()
            self._data, self._stream, self.path = text.encode("utf-8"), None, None
            self._raw, self._raw_size = None, len(self._data)
            self.head = bytes(self._data[:_SNIFF])
        if self.head[:3] == b"\xef\xbb\xbf":
            self._skip, self.head = 3, self.head[3:]

    def close(self) -> None:
        for fh in (self._stream, self._raw):
            if fh is not None:
                fh.close()

    # -- reading

    def _fill(self, view: memoryview) -> int:
        """Read into ``view`` until it is full or the input ends; the bytes read."""
        got = 0
        try:
            while got < len(view):
                n = self._stream.readinto(view[got:])
                if not n:
                    break
                got += n
        except EOFError:
            raise TrafficError(
                f"{self.name}: the gzip data is truncated (it ends before its end marker); "
                "expected a complete .gz file"
            ) from None
        except (OSError, zlib.error) as exc:
            if self.gz:
                raise TrafficError(
                    f"{self.name}: the gzip data is corrupt ({exc}); expected a valid .gz file"
                ) from None
            raise TrafficError(f"{self.name}: cannot read it: {exc}") from None
        if self._limit is not None:
            self._got += got
            if self._got > self._limit:
                raise TrafficError(
                    f"{self.name}: decompressed, the file is over {self._limit / 1e6:g} MB "
                    f"({GZIP_EXPANSION}× the {self._max_bytes / 1e6:g} MB limit); "
                    "upload a smaller sample"
                )
        return got

    def whole(self) -> bytes:
        """Everything after the byte-order mark (JSON, Prometheus text, Parquet from memory)."""
        if self._data is not None:
            if self._skip:
                self._data, self._skip = self._data[self._skip :], 0
            return self._data
        parts = [self.head]
        while True:
            buf = bytearray(_PIECE)
            n = self._fill(memoryview(buf))
            if not n:
                break
            parts.append(bytes(buf[:n]) if n < len(buf) else bytes(buf))
        self._data, self._skip = b"".join(parts), 0  # read once; later calls reuse it
        return self._data

    def fraction(self) -> float | None:
        """How far :meth:`pieces` has read the input (0..1); None when unknown."""
        if self._raw is not None and self._raw_size:
            return min(1.0, self._raw.tell() / self._raw_size)
        if self._data is not None and len(self._data):
            return min(1.0, self._pos / len(self._data))
        return None

    def line_end(self, start: int) -> int:
        """The offset (in ``head`` terms) just past the line that begins at ``start``."""
        while True:
            cut = self.head.find(b"\n", start)
            if cut >= 0:
                return cut + 1
            if self._data is not None:
                at = self._skip + len(self.head)
                more = bytes(self._data[at : at + _SNIFF])
            else:
                buf = bytearray(_SNIFF)
                more = bytes(buf[: self._fill(memoryview(buf))])
            if not more:
                return len(self.head)
            self.head += more

    def pieces(self, start: int) -> Iterator[memoryview]:
        """The input from ``start`` (an offset into ``head``) in pieces of about :data:`_PIECE`
        bytes that end at a line end (the last one may not)."""
        if self._data is not None:
            data, pos, end = self._data, self._skip + start, len(self._data)
            view = memoryview(data)
            while pos < end:
                stop = min(pos + _PIECE, end)
                if stop < end:
                    cut = data.rfind(b"\n", pos, stop)
                    if cut < 0:
                        cut = data.find(b"\n", stop)
                    stop = end if cut < 0 else cut + 1
                self._pos = stop
                yield view[pos:stop]
                pos = stop
            return
        rest = self.head[start:]
        while True:
            view = memoryview(np.empty(len(rest) + _PIECE, np.uint8))  # not zero-filled
            view[: len(rest)] = rest
            filled = len(rest) + self._fill(view[len(rest) :])
            if filled < len(view):  # the end of the input
                if filled:
                    yield view[:filled]
                return
            cut = _last_newline(view)
            if cut < 0:  # a line longer than a piece: read on
                rest = bytes(view)
                continue
            rest = bytes(view[cut + 1 :])
            yield view[: cut + 1]


def _last_newline(view: memoryview) -> int:
    """The index of the last newline in ``view``, or -1; reads from the end, 64 kB at a time."""
    hi = len(view)
    while hi > 0:
        lo = max(0, hi - _SNIFF)
        k = bytes(view[lo:hi]).rfind(b"\n")
        if k >= 0:
            return lo + k
        hi = lo
    return -1


def _open(src, name: str | None, max_bytes: int) -> _Source:
    """A :class:`_Source` for ``src``; refuses more than ``max_bytes``."""
    limit_mb = f"{max_bytes / 1e6:g} MB"
    if isinstance(src, (str, Path)):
        path = Path(src)
        name = name or path.name
        try:
            size = path.stat().st_size
            if size > max_bytes:
                raise _too_big(name, f"{size / 1e6:.3g} MB", max_bytes)
            source = _Source(name, max_bytes, stream=open(path, "rb", buffering=0), path=path)
        except OSError as exc:
            raise TrafficError(f"cannot read {path}: {exc.strerror or exc}") from None
    else:
        if isinstance(src, (bytes, bytearray)):
            data = src
        elif isinstance(src, memoryview):
            data = bytes(src)
        elif hasattr(src, "getvalue") or hasattr(src, "read"):
            name = name or Path(str(getattr(src, "name", "") or "upload")).name
            try:  # BytesIO.getvalue() (Streamlit's UploadedFile) shares its buffer: no copy
                data = src.getvalue() if hasattr(src, "getvalue") else src.read(max_bytes + 1)
            except OSError as exc:
                raise TrafficError(f"{name}: cannot read the upload: {exc}") from None
            if isinstance(data, str):
                data = data.encode("utf-8")
            elif not isinstance(data, (bytes, bytearray)):
                data = bytes(data)
        else:
            raise TrafficError(
                f"cannot read a {type(src).__name__}; "
                "expected a path, bytes or a binary file object"
            )
        name = name or "upload"
        if len(data) > max_bytes:
            size = f"{len(data) / 1e6:.3g} MB" if len(data) != max_bytes + 1 else "larger"
            raise TrafficError(
                f"{name}: the file is {size}, over the {limit_mb} limit; "
                "upload a smaller sample or a pre-binned histogram"
            )
        source = _Source(name, max_bytes, data=data)
    try:
        source.begin()
    except BaseException:
        source.close()
        raise
    return source


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
class _Part:
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
class _Hints:
    """What the first piece of a table tells the readers of the others."""

    types: dict | None = None  # CSV column types
    time_kind: str | None = None  # "numeric" or "datetime"


def _flatten(table: pa.Table) -> pa.Table:
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _arrow_msg(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg.removeprefix("CSV parse error: ").removeprefix("JSON parse error: ")


def _run(jobs: Iterator[Callable[[_Hints], list[_Part]]], hints: _Hints, timed: bool):
    """Run the jobs on a few threads and yield their parts in order.

    Unless ``hints`` already say what the first piece would tell (the column types of a CSV,
    the kind of a time column), the first job runs alone and its parts fix them for the
    others; while a time column's kind is still open (empty so far) jobs run one at a time.
    """

    def learn(parts: list[_Part]) -> list[_Part]:
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
    notes = [
        (num or 0, f"has {got} field(s), expected {want}: {text[:60]!r}")
        for num, got, want, text in dropped[:_MAX_EXAMPLES]
    ]
    part.examples = sorted(part.examples + notes)[:_MAX_EXAMPLES]
    return part


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
            return pq.ParquetFile(source.path)
        return pq.ParquetFile(pa.BufferReader(pa.py_buffer(source.whole())))
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


# --------------------------------------------------------------------------- column values


@dataclass
class _Checked:
    values: np.ndarray
    bad: np.ndarray | None  # bool per row; None when every row is good
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
        bad = np.isnan(x) | (x < 0)
    return _Checked(np.where(bad, 0.0, x), _any(bad), arr, column, expected)


_UNIT_SCALE = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
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
        return _Checked(x, _nonfinite(x), arr, column, _TIME), kind
    if not text_col:  # numbers in a date-time column
        return _Checked(
            np.zeros(len(x), np.int64), _any(np.ones(len(x), bool)), arr, column, _TIME
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
    return _Checked(np.where(nat, 0, ticks), _any(nat), arr, column, _TIME), kind


def _time_kind(schema_table: pa.Table, det: dict) -> str | None:
    """The kind of time column a type alone tells (None for text: its values tell)."""
    t = schema_table.schema.field(det["arrival_s"]).type
    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return "datetime"
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return "numeric"
    return None


def _check(table: pa.Table, det: dict, number: Callable[[int], int], time_kind) -> _Part:
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
        for i in np.flatnonzero(bad)[:_MAX_EXAMPLES]:
            first = next(c for _, c in checks if c.bad is not None and c.bad[i])
            examples.append((number(int(i)), first.reason(int(i))))
    hashes = None
    if det["fmt"] == "mooncake" and det["cached_tokens"]:
        column = table[det["cached_tokens"]]
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            hashes = column
    return _Part(
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


class _Collect:
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

    def put(self, part: _Part, start: int) -> None:
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

    def add(self, part: _Part) -> None:
        """Take the next part in row order (the main thread only)."""
        a, b = self.n, self.n + part.n
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
        self.n_bad += part.n_bad
        self.n_dropped += part.n_dropped
        if len(self.skipped) < _MAX_EXAMPLES:
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


def _assemble(col: _Collect, det: dict, container: str, name: str, where: str) -> Requests:
    n = col.n
    if n == 0:
        if col.skipped:
            raise TrafficError(
                f"{name}: no usable rows; first problem: {_examples(col.skipped)[0]}"
            )
        raise TrafficError(
            f"{name}: there is only a header ({where}), no data; expected one row per request"
        )
    if col.n_bad == n:
        shown = "; ".join(_examples(col.skipped))
        raise TrafficError(
            f"{name}: none of the {n} data {col.unit}s is usable; first problems: {shown}; "
            "if a column was guessed wrong, pick the columns by hand"
        )
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
    arrival_s = None
    if "arrival_s" in values:
        arrival_s, info["time_unit"] = _seconds(values.pop("arrival_s"), col.time_kind, det)
    cached = None
    if det["fmt"] == "mooncake" and col.hashes:
        hashes = pa.chunked_array(col.hashes)
        if keep is not None:
            hashes = hashes.filter(pa.array(keep))
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
        skipped_examples=_examples(col.skipped),
    )


def _seconds(x: np.ndarray, kind: str, det: dict) -> tuple[np.ndarray, str]:
    """Seconds since the earliest kept arrival, and the unit the column was read in.
    ``x`` is this module's own array (not a view of Arrow memory): it is updated in place."""
    if kind == "datetime":
        x -= x.min()
        secs = x.astype(np.float64)
        secs /= 1e9  # exact for whole seconds, unlike * 1e-9
        return secs, "date-time"
    column = det["arrival_s"]
    if det["fmt"] == "mooncake":
        unit = "ms"
    elif re.search(r"(^|[^a-z])ms$|millis", column.lower().replace(" ", "_")):
        unit = "ms"
    else:  # the magnitude of a (strided) sample tells the unit
        sample = np.abs(x[:: max(1, len(x) // 100_000)])
        mag = float(np.median(sample)) if sample.size else 0.0
        unit = "ns" if mag > 1e17 else "us" if mag > 1e14 else "ms" if mag > 1e11 else "s"
    x -= x.min()
    if unit != "s":
        x *= _UNIT_SCALE[unit]
    return x, unit


def _histogram(values, keep, det, info, col: _Collect, skipped_rows, name) -> Requests:
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


def _prepare(src, name, max_bytes) -> tuple[_Source, str]:
    source = _open(src, name, max_bytes)
    try:
        head = source.head
        if not head.strip() and (len(head) < _SNIFF or not source.whole().strip()):
            raise TrafficError(
                f"{source.name}: the file is empty; expected a header and one row per request"
            )
        return source, _sniff(head, source.name)
    except BaseException:
        source.close()
        raise


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
    shown = [-1.0]

    def step(fraction: float) -> None:  # a few calls, not one per piece
        if progress is not None and (fraction in (0.0, 1.0) or fraction >= shown[0] + 0.02):
            shown[0] = fraction
            progress(fraction)

    step(0.0)
    source, kind = _prepare(src, name, max_bytes)
    try:
        step(0.15)
        return _load_source(source, kind, prompt_column, output_column, time_column, step)
    finally:
        source.close()


def _load_source(source, kind, prompt_column, output_column, time_column, step) -> Requests:
    name = source.name
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
    if kind in ("jsonl", "json"):
        rows = rest.table.num_rows
        col = _Collect("line" if kind == "jsonl" else "item", 0, rows)
        jobs = _json_jobs(rest, needed, det)
    elif kind == "parquet":
        pf = _parquet_file(source, name)
        rows = pf.metadata.num_rows
        col = _Collect("row", 0, rows)
        hints.types = {}  # Parquet columns have one type throughout
        if det["arrival_s"]:
            hints.time_kind = _time_kind(_flatten(pf.schema_arrow.empty_table()), det)
        col.prepare(det, hints.time_kind)
        jobs = _parquet_jobs(source, needed, det, name, col)
    else:
        col = _Collect("row", 1)
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
    result = _assemble(col, det, container, name, where)
    step(1.0)
    return result
