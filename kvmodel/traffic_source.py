"""Reading the bytes of a traffic file: a path piece by piece, bytes and uploads without a
copy, gzip inflated as it is read, within the size limits; and telling the format."""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .traffic_base import TrafficError

GZIP_EXPANSION = 5  # decompressed data may be at most this many times max_bytes
_SNIFF = 1 << 16
_PIECE = 1 << 22  # CSV bytes per parse job


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
    if ext in ("parquet", "pq"):
        raise TrafficError(
            f"{name}: not a Parquet file (it does not start with Parquet's 'PAR1' marker; "
            "the file may be damaged or in another format); expected a Parquet file written by "
            "pandas, pyarrow, Spark or DuckDB"
        )
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
