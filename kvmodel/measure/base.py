"""What every measurement reader shares: :class:`MeasureError`, reading the text of a path,
bytes, text or an upload (through :mod:`kvmodel.textio`), numbers and units."""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..textio import TextError, decode, line_at, open_source

DEFAULT_MAX_BYTES = 50_000_000
EXPECTED = "Prometheus text, perftest output, an nsys stats CSV or a bytes,seconds CSV"
TIME_UNITS = {  # seconds per unit, as the tools write units
    "ns": 1e-9,
    "nsec": 1e-9,
    "us": 1e-6,
    "usec": 1e-6,
    "µs": 1e-6,
    "ms": 1e-3,
    "msec": 1e-3,
    "s": 1.0,
    "sec": 1.0,
}


class MeasureError(TextError):
    """A measurement cannot be read; the message names the problem, where, and what is expected."""


def _looks_like_path(text: str) -> bool:
    """An existing file, or a one-line string without separators that names a file."""
    if "\n" in text or len(text) > 4096:
        return False
    try:
        if Path(text).is_file():
            return True
    except (OSError, ValueError):
        return False
    if re.search(r"[\s,;{}\[\]\"']", text):
        return False
    return "/" in text or "\\" in text or bool(re.search(r"\.[A-Za-z]{2,8}$", text))


def read_text(src, name: str | None = None, max_bytes: int = DEFAULT_MAX_BYTES):
    """``(text, name)`` from a path, bytes, text or a binary/text file object (an upload).

    A ``str`` is a path when it names an existing file (or has no newline and looks like a file
    name), otherwise the text itself.  Bytes are read as :mod:`kvmodel.textio` reads them
    (gzip inflated, a UTF-16 export re-encoded, a byte-order mark dropped, at most
    ``max_bytes``) and must be UTF-8 text.
    """
    if isinstance(src, str) and not _looks_like_path(src):
        return check_text(src, name or "text"), name or "text"
    readable = isinstance(src, (str, Path, bytes, bytearray, memoryview))
    if not (readable or hasattr(src, "getvalue") or hasattr(src, "read")):
        raise MeasureError(
            f"cannot read a {type(src).__name__}; expected a path, bytes, text or a file object"
        )
    source = open_source(src, name, max_bytes, error=MeasureError)
    try:
        data = source.whole()
    finally:
        source.close()
    text = decode(data, source.name, expected=EXPECTED, error=MeasureError)
    return check_text(text, source.name), source.name


def check_text(text: str, name: str) -> str:
    """``text`` without a byte-order mark; an error when it holds a NUL or nothing."""
    text = text.removeprefix("\ufeff")
    if "\x00" in text:
        line = line_at(text, text.index("\x00"))
        raise MeasureError(f"{name}: line {line} holds a NUL byte; expected text")
    if not text.strip():
        raise MeasureError(f"{name}: the file is empty; expected {EXPECTED}")
    return text


def number(text: str) -> float | None:
    """A finite number, or None."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def key(text) -> str:
    """A name compared case-insensitively, ignoring everything but letters and digits."""
    return re.sub(r"[^0-9a-z]", "", str(text).lower())
