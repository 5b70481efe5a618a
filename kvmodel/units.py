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


def fmt_sig(value: float, digits: int = 4) -> str:
    """``value`` with ``digits`` significant digits and thousands separators, never in
    scientific notation (293,287 rather than 2.933e+05)."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_ms_or_s(seconds: float, digits: int = 2) -> str:
    """Milliseconds with ``digits`` decimals below ten seconds (tiles compare them); seconds
    above, where a millisecond figure outgrows its tile."""
    if seconds is not None and math.isfinite(seconds) and abs(seconds) >= 10:
        return f"{seconds:,.{digits}f} s"
    return fmt_ms(seconds, digits)


def fmt_ratio(x: float) -> str:
    """A ratio such as transfer ÷ decode step: two decimals, none from a thousand on."""
    return f"{x:,.2f}×" if abs(x) < 1000 else f"{x:,.0f}×"


def fmt_bandwidth(bytes_per_s: float) -> str:
    return f"{fmt_sig(bytes_per_s / 1e9)} GB/s"


def fmt_tokens(n: float | None) -> str:
    if n is None:
        return "none up to max context"
    return "1 token" if int(n) == 1 else f"{int(n):,} tokens"
