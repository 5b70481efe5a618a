"""Transfer size and time pairs: a CSV (or tab-, semicolon- or space-separated table) of bytes
and seconds, with or without a header (:class:`TransferPairs`)."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from ..textio import numbered_lines
from .base import TIME_UNITS, MeasureError, check_text, number


@dataclass(frozen=True)
class TransferPairs:
    """Measured transfers, file order."""

    sizes_bytes: tuple[float, ...]
    seconds: tuple[float, ...]

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        """``((bytes, seconds), ...)``."""
        return tuple(zip(self.sizes_bytes, self.seconds, strict=True))


_BYTES_NAMES = {
    "bytes",
    "size",
    "messagebytes",
    "msgbytes",
    "msgsize",
    "messagesize",
    "sizebytes",
    "nbytes",
    "transferbytes",
    "xferbytes",
    "payloadbytes",
    "bytestransferred",
    "length",
}
_TIME_NAMES = {
    "seconds",
    "time",
    "latency",
    "duration",
    "elapsed",
    "t",
    "xfertime",
    "transfertime",
    "sec",
    "secs",
}
_BYTE_UNITS = {
    "b": 1.0,
    "bytes": 1.0,
    "kb": 1e3,
    "mb": 1e6,
    "gb": 1e9,
    "kib": 2.0**10,
    "mib": 2.0**20,
    "gib": 2.0**30,
}


def _column_role(column: str, name: str, n: int) -> tuple[str, float] | None:
    """``("size", bytes per unit)``, ``("time", seconds per unit)`` or None for a header name:
    ``message_bytes``, ``size_kb``, ``seconds``, ``time_s``, ``latency_us``, ``Time (ms)``…"""
    tokens = [t for t in re.split(r"[^0-9a-zµ]+", column.lower()) if t]
    joined = "".join(tokens)
    if joined in _BYTES_NAMES:
        return "size", 1.0
    if joined in ("seconds", "sec", "secs", "s"):
        return "time", 1.0
    if joined in ("ms", "us", "ns", "µs"):
        return "time", TIME_UNITS[joined]
    base, unit = ("".join(tokens[:-1]), tokens[-1]) if len(tokens) >= 2 else (joined, None)
    if base in _BYTES_NAMES and unit in _BYTE_UNITS:
        return "size", _BYTE_UNITS[unit]
    if base in _TIME_NAMES and unit in TIME_UNITS:
        return "time", TIME_UNITS[unit]
    if joined in _TIME_NAMES:
        raise MeasureError(
            f"{name}: line {n}: time column {column!r} has no unit; expected a name like "
            "seconds, time_s, latency_ms or duration_us"
        )
    return None


def _pairs_columns(header: list[str], name: str, n: int) -> tuple[int, float, int, float]:
    found: dict[str, tuple[int, float]] = {}
    for i, col in enumerate(header):
        role = _column_role(col, name, n)
        if role is not None and role[0] not in found:
            found[role[0]] = (i, role[1])
    if "size" not in found or "time" not in found:
        raise MeasureError(
            f"{name}: line {n}: columns {', '.join(header)}; expected a size column (bytes, "
            "size, message_bytes) and a time column (seconds, time_s, latency_s, duration_s, "
            "or ms/us in the name: latency_ms, time_us)"
        )
    return (*found["size"], *found["time"])


def parse_pairs_csv(text: str, name: str = "pairs") -> TransferPairs:
    """(bytes, seconds) of each transfer from a CSV of transfer size and time, file order.

    With a header, the size column is one of bytes/size/message_bytes/msg_size/nbytes… (a unit
    suffix such as ``_kb``, ``_mib`` is applied) and the time column one of
    seconds/time_s/latency_s/duration_s… or with ``ms``/``us``/``ns`` in the name; a bare
    ``time`` without a unit is an error.  Without a header: two numeric columns, bytes then
    seconds.  Separators: comma, tab, semicolon or spaces.  ``#`` comment lines and blank lines
    are skipped; any other line that is not numbers is an error naming it.
    """
    text = check_text(text, name)
    lines = list(numbered_lines(text))
    body = [(n, ln) for n, ln in lines if ln.strip() and not ln.lstrip().startswith("#")]
    if not body:
        raise MeasureError(f"{name}: no rows; expected 'bytes,seconds' lines")
    first = body[0][1]
    delim = next((d for d in (",", "\t", ";") if d in first), None)

    def split(line: str) -> list[str]:
        if delim is None:
            return line.split()
        return [f.strip() for f in next(csv.reader([line], delimiter=delim))]

    head = split(first)
    if any(number(f) is None for f in head):
        si, sscale, ti, tscale = _pairs_columns(head, name, body[0][0])
        body = body[1:]
        width = len(head)
    else:
        if len(head) != 2:
            raise MeasureError(
                f"{name}: line {body[0][0]} has {len(head)} columns and no header; expected "
                "two columns (bytes, seconds) or a header naming them"
            )
        si, sscale, ti, tscale, width = 0, 1.0, 1, 1.0, 2
    out = []
    for n, line in body:
        fields = split(line)
        if len(fields) != width:
            raise MeasureError(
                f"{name}: line {n} has {len(fields)} fields ({line[:60]!r}); expected {width}"
            )
        size, t = number(fields[si]), number(fields[ti])
        if size is None or t is None:
            raise MeasureError(
                f"{name}: line {n}: {line[:60]!r} is not numbers; expected '<bytes>,<seconds>'"
            )
        if size < 0 or t <= 0:
            raise MeasureError(
                f"{name}: line {n}: size {size:g}, time {t:g}; expected size ≥ 0 and time > 0"
            )
        out.append((size * sscale, t * tscale))
    if not out:
        raise MeasureError(f"{name}: a header but no rows; expected 'bytes,seconds' lines")
    sizes, seconds = zip(*out, strict=True)
    return TransferPairs(tuple(sizes), tuple(seconds))
