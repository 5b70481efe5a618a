"""The bytes of one input: a path read piece by piece, bytes and uploads without a copy, gzip
inflated as it is read, a UTF-16 export re-encoded, a UTF-8 byte-order mark dropped; all within
a size limit."""

from __future__ import annotations

import gzip
import io
import zlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from .lines import TextError
from .paths import open_regular, regular_file

GZIP_EXPANSION = 5  # decompressed data may be at most this many times max_bytes
SNIFF = 1 << 16  # bytes of the start kept in Source.head
_PIECE = 1 << 22  # bytes per piece handed out by Source.pieces


class Source:
    """The decoded bytes of one input: ``head`` (the start, for sniffing), then the rest whole
    or in newline-aligned pieces.

    Nothing is copied that need not be: a path is read piece by piece, bytes (and an upload's
    ``getvalue()``, which shares its buffer) are sliced with memoryviews, gzip is inflated
    piece by piece within :data:`GZIP_EXPANSION` × ``max_bytes``.  Errors are ``error``
    (a :class:`TextError`), each naming the input.
    """

    def __init__(self, name, max_bytes, data=None, stream=None, path=None, *, error=TextError):
        self.name, self.path, self.gz = name, path, False
        self.error = error
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
            self._limit = max_bytes  # a file that grows while it is read stops here too
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
            self.head = bytes(self._data[:SNIFF])
        else:
            buf = bytearray(SNIFF)
            self.head = bytes(buf[: self._fill(memoryview(buf))])
        if self.head[:2] in (b"\xff\xfe", b"\xfe\xff"):  # UTF-16 (an Excel "Unicode text" export)
            try:
                text = self.whole().decode("utf-16")
            except UnicodeDecodeError:
                raise self.error(f"{self.name}: broken UTF-16 text; expected UTF-8 text") from None
            self.close()
            self._data, self._stream, self.path = text.encode("utf-8"), None, None
            self._raw, self._raw_size = None, len(self._data)
            self.head = bytes(self._data[:SNIFF])
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
            raise self.error(
                f"{self.name}: the gzip data is truncated (it ends before its end marker); "
                "expected a complete .gz file"
            ) from None
        except (OSError, zlib.error) as exc:
            if self.gz:
                raise self.error(
                    f"{self.name}: the gzip data is corrupt ({exc}); expected a valid .gz file"
                ) from None
            raise self.error(f"{self.name}: cannot read it: {exc}") from None
        if self._limit is not None:
            self._got += got
            if self._got > self._limit:
                raise self._too_big()
        return got

    def _too_big(self) -> TextError:
        if not self.gz:
            return self.error(
                f"{self.name}: the file grew past the {self._max_bytes / 1e6:g} MB limit while it "
                "was read; upload a smaller sample"
            )
        why = (
            f"({GZIP_EXPANSION}× the {self._max_bytes / 1e6:g} MB limit)"
            if self._limit > self._max_bytes
            else "(the limit for a file read whole: JSON, JSON Lines, Prometheus text)"
        )
        return self.error(
            f"{self.name}: decompressed, the file is over {self._limit / 1e6:g} MB {why}; "
            "upload a smaller sample"
        )

    def whole(self) -> bytes:
        """Everything after the byte-order mark (JSON, Prometheus text, Parquet from memory).
        Decompressed gzip is held to ``max_bytes`` here (not :data:`GZIP_EXPANSION` × it): the
        formats read whole take a few times their size in memory."""
        if self._data is not None:
            if self._skip:
                self._data, self._skip = self._data[self._skip :], 0
            return self._data
        if self._limit is not None:  # held in memory whole: the plain file's limit
            self._limit = min(self._limit, self._max_bytes)
            if self._got > self._limit:
                raise self._too_big()
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
            cr = self.head.find(b"\r", start, cut if cut >= 0 else len(self.head))
            if 0 <= cr < len(self.head) - 1 and self.head[cr + 1 : cr + 2] != b"\n":
                return cr + 1  # a lone CR ends the line (old Mac files; Arrow reads them too)
            if cut >= 0:
                return cut + 1
            if self._data is not None:
                at = self._skip + len(self.head)
                more = bytes(self._data[at : at + SNIFF])
            else:
                buf = bytearray(SNIFF)
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
        lo = max(0, hi - SNIFF)
        k = bytes(view[lo:hi]).rfind(b"\n")
        if k >= 0:
            return lo + k
        hi = lo
    return -1


def open_source(
    src,
    name: str | None,
    max_bytes: int,
    *,
    error: type[TextError] = TextError,
    advice: str = "upload a smaller sample",
) -> Source:
    """A started :class:`Source` for ``src`` (a path, bytes or a binary file object such as
    Streamlit's ``UploadedFile``); refuses more than ``max_bytes`` with ``advice``."""
    limit_mb = f"{max_bytes / 1e6:g} MB"

    def too_big(name: str, size: str) -> TextError:
        return error(f"{name}: the file is {size}, over the {limit_mb} limit; {advice}")

    if isinstance(src, (str, Path)):
        path = Path(src)
        name = name or path.name
        size = regular_file(path, error).st_size  # no device, pipe, socket or /proc file
        if size > max_bytes:
            raise too_big(name, f"{size / 1e6:.3g} MB")
        stream = open_regular(path, error)
        try:
            source = Source(name, max_bytes, stream=stream, path=path, error=error)
        except OSError as exc:
            stream.close()
            raise error(f"cannot read {path}: {exc.strerror or exc}") from None
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
                raise error(f"{name}: cannot read the upload: {exc}") from None
            if isinstance(data, str):
                data = data.encode("utf-8")
            elif not isinstance(data, (bytes, bytearray)):
                data = bytes(data)
        else:
            raise error(
                f"cannot read a {type(src).__name__}; "
                "expected a path, bytes or a binary file object"
            )
        name = name or "upload"
        if len(data) > max_bytes:
            raise too_big(
                name, f"{len(data) / 1e6:.3g} MB" if len(data) != max_bytes + 1 else "larger"
            )
        source = Source(name, max_bytes, data=data, error=error)
    try:
        source.begin()
    except BaseException:
        source.close()
        raise
    return source
