"""Downloads: CSV safe to open in a spreadsheet, charts as PNG/SVG/HTML.  No streamlit here.

PNG and SVG go through plotly's own static-image engine, kaleido, which drives a Chromium or
Chrome it finds on the machine (``PATH``, the usual install paths, or ``BROWSER_PATH``).  This
module never downloads a browser; without one it raises ``ExportUnavailable``.  HTML needs no
browser: plotly.js is written into the file, so it opens offline.
"""

from __future__ import annotations

from html import escape

import pandas as pd
import plotly.graph_objects as go
import plotly.offline

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
UNAVAILABLE = (
    "PNG/SVG export needs a Chromium/Chrome browser on this machine (e.g. Debian's chromium "
    "package); HTML export works without one"
)
HTML_CONFIG = {"displaylogo": False, "responsive": True}


class ExportUnavailable(RuntimeError):
    """Static-image export cannot run here (no browser found, or kaleido failed)."""


def _neutralise(value):
    if isinstance(value, str) and value.startswith(FORMULA_PREFIXES):
        return "'" + value
    return value


def csv_bytes(df: pd.DataFrame) -> bytes:
    """UTF-8 CSV of ``df`` (no index) with spreadsheet formula injection neutralised.

    A text cell (or header) starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
    gets a leading ``'`` so a spreadsheet shows it as text instead of running it.  Numbers are
    left alone: a negative number stays a number.  Rows end in CRLF (RFC 4180), so a cell
    holding a line break is quoted.
    """
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    safe = df.map(_neutralise)
    safe.columns = [_neutralise(str(c)) for c in df.columns]
    return safe.to_csv(index=False, lineterminator="\r\n").encode("utf-8")  # RFC 4180


def _static(fig: go.Figure, fmt: str, scale: float) -> bytes:
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly Figure, got {type(fig).__name__}")
    try:
        return fig.to_image(format=fmt, scale=scale)
    except Exception as exc:  # noqa: BLE001 - kaleido/choreographer raise many kinds
        detail = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        raise ExportUnavailable(
            f"{UNAVAILABLE} ({type(exc).__name__}{': ' + detail if detail else ''})"
        ) from exc


def figure_png(fig: go.Figure, *, scale: float = 2.0) -> bytes:
    """The figure as PNG bytes (``scale`` × its pixel size).  Raises ``ExportUnavailable``."""
    if not (isinstance(scale, (int, float)) and 0 < scale <= 10):
        raise ValueError(f"scale must be in (0, 10], got {scale!r}")
    return _static(fig, "png", scale)


def figure_svg(fig: go.Figure) -> bytes:
    """The figure as SVG bytes.  Raises ``ExportUnavailable``."""
    return _static(fig, "svg", 1.0)


def plotlyjs_inline() -> str:
    """plotly.js for an inline ``<script>``.

    plotly.js carries two default addresses on a CDN (topojson for geo maps, icons for map
    symbols) that these charts never load; they are written with ``\\/`` escapes, which mean
    the same in a JavaScript string, so the file holds no CDN address at all.
    """
    return plotly.offline.get_plotlyjs().replace("https://cdn", "https:\\/\\/cdn")


def figure_div(fig: go.Figure, *, div_id: str | None = None) -> str:
    """The figure as a ``<div>`` + ``<script>`` for a page that already loaded plotly.js."""
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly Figure, got {type(fig).__name__}")
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=HTML_CONFIG)


def figure_html(fig: go.Figure) -> str:
    """A standalone interactive HTML page of the figure, plotly.js inlined (opens offline)."""
    div = figure_div(fig)
    title = fig.layout.title.text or "Chart"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
        f"<script>{plotlyjs_inline()}</script>\n</head>\n<body>\n{div}\n</body>\n</html>\n"
    )
