"""Decimal unit formatting for the edges (app, report, CLI tables).  1 GB = 10^9 bytes.

The one place numbers become text with units: kvmodel returns SI numbers (bytes, seconds,
bytes/s); the CLI formats through kvmodel/cli/edge.py, which imports this module lazily.
"""

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


def minus_sign(text: str) -> str:
    """A formatted number's leading hyphen as the minus sign the app writes ("−4", not "-4")."""
    return "−" + text[1:] if text.startswith("-") else text


def fmt_ratio(x: float) -> str:
    """A ratio such as transfer ÷ decode step: two decimals, none from a thousand on."""
    return f"{x:,.2f}×" if abs(x) < 1000 else f"{x:,.0f}×"


def fmt_busy(fraction: float) -> str:
    """A link's utilisation in whole percent; a load too small for 1 % reads "<1%", not "0%"
    (a link carrying traffic is never idle)."""
    shown = f"{fraction:.0%}"
    return "<1%" if fraction > 0 and shown == "0%" else shown


def fmt_dollars(amount: float) -> str:
    """Dollars as a reader expects them: whole ("$16", "$1,200") when the amount is whole, with
    cents otherwise ("$8.50", "$0.50"): a half-dollar difference must not read "$0"."""
    cents = round(abs(amount) * 100)
    sign = "-" if amount < 0 and cents else ""
    if cents % 100 == 0:
        return f"{sign}${cents // 100:,}"
    return f"{sign}${cents / 100:,.2f}"


def fmt_bandwidth(bytes_per_s: float) -> str:
    return f"{fmt_sig(bytes_per_s / 1e9)} GB/s"


def fmt_tokens(n: float | None) -> str:
    if n is None or n != n:  # None, or NaN (a None that went through a DataFrame)
        return "none up to max context"
    return "1 token" if int(n) == 1 else f"{int(n):,} tokens"


NEVER = "never"  # a critical length that no prompt up to the model's max context reaches


def fmt_critical(n: float | None) -> str:
    """A critical length in a table cell: '1,145 tokens', or 'never' (None or NaN): 'none up
    to max context' made the tables' columns too wide at 1280 px."""
    return NEVER if n is None or n != n else fmt_tokens(n)


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit}{'' if n == 1 else 's'}"


def _pct(x: float) -> str:
    return f"{x * 100:,.3g} %"


def fmt_setting(value, unit: str) -> str:
    """A tornado setting (``kvmodel.sensitivity.tornado``'s ``low``/``high`` and ``unit``):
    ``(512, "token")`` → ``'512 tokens'``, ``(0.1, "s")`` → ``'100 ms'``, a name as it is."""
    if unit in ("token", "request"):
        return _count(int(value), unit)
    if unit == "bytes/s":
        return fmt_bandwidth(value)
    if unit == "s":
        return fmt_time(value)
    if unit == "fraction":
        return _pct(value)
    if unit == "mfu":
        return f"MFU {_pct(value)}"
    return str(value)


def setting_labels(df) -> tuple[list[str], list[str]]:
    """The low and high setting labels of every row of a tornado table."""
    return tuple(
        [fmt_setting(v, u) for v, u in zip(df[col], df["unit"], strict=True)]
        for col in ("low", "high")
    )


def _is_batch(col: str) -> bool:
    return col.startswith("batch ") and col[6:].isdigit()


def _ms_name(col: str) -> str:
    return col[:-2] + "_ms" if col.endswith("_s") else col


def _ms_column(df, col: str):
    """Column ``col`` of ``df`` as ``in_ms`` writes it, as an array (no index to align)."""
    values = df[col].array
    if col.endswith("_s"):
        return values * 1e3
    if _is_batch(col):
        return values.astype(float) * 1e3
    return values


def records(table, columns=None) -> list[dict]:
    """``table.to_dict("records")`` for ``columns`` (default: all) that it has: the same Python
    values (each column's ``tolist``), without a Series per row or boxing every cell of the
    rest (~0.3-0.5 ms a rerun on Mitigations and Compare; Session 19)."""
    from kvmodel.frames import column_lists

    names = list(table.columns) if columns is None else [c for c in columns if c in table.columns]
    cols = column_lists(table, names)
    return [dict(zip(names, cells, strict=True)) for cells in zip(*cols, strict=True)]


def in_ms(df):
    """An SI table of ``kvmodel.sweeps`` as the pages show and export it: every ``<name>_s``
    column becomes ``<name>_ms`` (× 1000), and ``link_batch_table``'s ``batch N`` columns
    (seconds) are given in milliseconds under the same name.  Column order and the rest kept.

    Made as one new frame from the columns (~0.3 ms for a sweep's table, against ~1 ms for a
    copy, a column assignment per converted column and a rename); the step-by-step way is kept
    for the tables where names would clash or are not all strings."""
    import pandas as pd

    plain = df.columns.name is None and all(isinstance(c, str) for c in df.columns)
    names = [_ms_name(c) for c in df.columns] if plain else []
    if plain and len(set(names)) == len(names) == len(set(df.columns)):
        cols = {n: _ms_column(df, c) for c, n in zip(df.columns, names, strict=True)}
        return pd.DataFrame(cols, index=df.index)
    out = df.copy()
    for col in df.columns:
        if col.endswith("_s"):
            out[col] = df[col] * 1e3
        elif col.startswith("batch ") and col[6:].isdigit():
            out[col] = df[col].astype(float) * 1e3
    return out.rename(columns={c: c[:-2] + "_ms" for c in df.columns if c.endswith("_s")})
