"""Decimal unit formatting for the edges (CLI tables, app).  1 GB = 10^9 bytes."""

from __future__ import annotations

import math

_BYTE_UNITS = (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3))


def fmt_bytes(n: float) -> str:
    """``335544320`` → ``'335.5 MB'`` (decimal units)."""
    if n is None or not math.isfinite(n):
        return "–"
    for unit, scale in _BYTE_UNITS:
        if abs(n) >= scale:
            return f"{n / scale:,.1f} {unit}"
    return f"{n:,.0f} B"


def fmt_time(seconds: float) -> str:
    """Seconds → the most readable of µs, ms, s."""
    if seconds is None or not math.isfinite(seconds):
        return "–"
    if abs(seconds) < 1e-3:
        return f"{seconds * 1e6:,.1f} µs"
    if abs(seconds) < 1:
        return f"{seconds * 1e3:,.1f} ms" if seconds * 1e3 < 100 else f"{seconds * 1e3:,.0f} ms"
    return f"{seconds:,.2f} s"


def fmt_ms(seconds: float, digits: int = 1) -> str:
    return (
        "–" if seconds is None or not math.isfinite(seconds) else f"{seconds * 1e3:,.{digits}f} ms"
    )


def fmt_bandwidth(bytes_per_s: float) -> str:
    return f"{bytes_per_s / 1e9:,.4g} GB/s"


def fmt_tokens(n: float | None) -> str:
    return "none up to max context" if n is None else f"{int(n):,} tokens"
