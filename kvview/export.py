"""Downloads: CSV safe to open in a spreadsheet, charts as PNG/SVG/HTML.  No streamlit here.

PNG and SVG go through plotly's own static-image engine, kaleido, which drives a Chromium or
Chrome it finds on the machine (``PATH``, the usual install paths, or ``BROWSER_PATH``).  This
module never downloads a browser; without one it raises ``ExportUnavailable``.  HTML needs no
browser: plotly.js is written into the file, so it opens offline.

A file gets no Streamlit theme: ``for_export`` sets margins, axis automargins and fonts on the
figure itself, so every label fits.  No export asks the network for anything: kaleido 1.x puts
MathJax from a public CDN into its page unless told ``mathjax=False`` (plotly's
``pio.defaults.mathjax = None`` means "kaleido's default", the CDN, and plotly drops a False), so
PNG and SVG call kaleido directly with ``KALEIDO_OPTIONS``.
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
KALEIDO_OPTIONS = {"mathjax": False}  # no MathJax from cdnjs (kaleido 1.5, plotly 7.1)
EXPORT_WIDTH_PX = 1100  # PNG/SVG width when the figure sets none (plotly's 700 thins the ticks)
EXPORT_FONT = {"family": "Arial, Helvetica, 'DejaVu Sans', sans-serif", "size": 13,
               "color": "#111827"}  # fmt: skip
EXPORT_MARGIN_PX = {"l": 20, "r": 30, "t": 80, "b": 30}  # at least; axes grow it to fit labels
TITLE_STANDOFF_PX = 10  # axis title clear of the tick numbers


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


def _axes(layout: dict):
    named = [key for key in layout if key.startswith(("xaxis", "yaxis"))]
    return list(dict.fromkeys(["xaxis", "yaxis", *named]))


SUBTITLE_PX = 22  # the subtitle's line under the title: the top margin grows by it
SUBTITLE_FONT = {"size": 12, "color": "#374151"}


def for_export(
    fig: go.Figure, *, width: int | None = None, subtitle: str | None = None
) -> go.Figure:
    """A copy of ``fig`` laid out for a file, where Streamlit's theme does not reach.

    Every axis grows the margin to fit its tick labels and title (``automargin``), the title
    keeps ``TITLE_STANDOFF_PX`` from the tick numbers, margins are at least
    ``EXPORT_MARGIN_PX`` (a larger top margin of the figure, e.g. for a legend, is kept), fonts
    are ``EXPORT_FONT`` and the background is white.  ``width`` [px] is set when given.
    ``subtitle`` (the scenario in words, ``words.scenario_line``) goes under the title, the
    title pinned to the top and the top margin grown by ``SUBTITLE_PX``, so a file away from
    the app still says what it shows (issue 24).
    """
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly Figure, got {type(fig).__name__}")
    spec = fig.to_plotly_json()
    layout = dict(spec.get("layout", {}))
    for key in _axes(layout):
        axis = dict(layout.get(key, {}))
        title = axis.get("title", {})
        title = {"text": title} if isinstance(title, str) else dict(title)
        axis.update(automargin=True, title=dict(title, standoff=TITLE_STANDOFF_PX))
        layout[key] = axis
    margin = dict(layout.get("margin", {}))
    layout["margin"] = {
        side: max(int(margin.get(side) or 0), least) for side, least in EXPORT_MARGIN_PX.items()
    }
    title = layout.get("title", {})
    title = {"text": title} if isinstance(title, str) else dict(title)
    pad = {"l": EXPORT_MARGIN_PX["l"], **dict(title.get("pad", {}))}
    layout["title"] = {**title, "pad": pad}  # off the image's edge
    font = dict(layout.get("font", {}))
    layout["font"] = {**EXPORT_FONT, **font}
    layout.setdefault("paper_bgcolor", "white")
    if width is not None:
        layout["width"] = width
    if subtitle:
        _subtitle(layout, " ".join(str(subtitle).split()))
    return go.Figure({"data": spec.get("data", []), "layout": layout})


def subtitle_lines(text: str, width_px: int) -> list[str]:
    """``text`` broken at its ' · ' separators into lines that fit ``width_px`` at the
    subtitle's font (~6.5 px a character at 12 px)."""
    room = max(20, int((width_px - EXPORT_MARGIN_PX["l"] - EXPORT_MARGIN_PX["r"]) / 6.5))
    lines: list[str] = []
    for part in text.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= room:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return lines


def _subtitle(layout: dict, text: str) -> None:
    """The title pinned to the top of the image with ``text`` on lines under it."""
    lines = subtitle_lines(text, int(layout.get("width") or EXPORT_WIDTH_PX))
    title = layout["title"]
    pad = {**dict(title.get("pad", {})), "t": 10}
    layout["title"] = {**title, "y": 1, "yref": "container", "yanchor": "top", "pad": pad,
                       "subtitle": {"text": "<br>".join(escape(x) for x in lines),
                                    "font": SUBTITLE_FONT}}  # fmt: skip
    layout["margin"]["t"] += SUBTITLE_PX * len(lines)


def _static(fig: go.Figure, fmt: str, scale: float, subtitle: str | None = None) -> bytes:
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly Figure, got {type(fig).__name__}")
    out = for_export(fig, width=fig.layout.width or EXPORT_WIDTH_PX, subtitle=subtitle)
    try:
        import kaleido

        return kaleido.calc_fig_sync(
            out.to_dict(),
            opts={
                "format": fmt,
                "width": out.layout.width,
                "height": out.layout.height or 500,
                "scale": scale,
            },  # fmt: skip
            topojson=None,
            kopts=dict(KALEIDO_OPTIONS),  # calc_fig adds to it
        )
    except Exception as exc:  # noqa: BLE001 - kaleido/choreographer raise many kinds
        detail = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        raise ExportUnavailable(
            f"{UNAVAILABLE} ({type(exc).__name__}{': ' + detail if detail else ''})"
        ) from exc


def figure_png(fig: go.Figure, *, scale: float = 2.0, subtitle: str | None = None) -> bytes:
    """The figure as PNG bytes (``scale`` × its pixel size), ``subtitle`` under its title
    (``for_export``).  Raises ``ExportUnavailable``."""
    if not (isinstance(scale, (int, float)) and 0 < scale <= 10):
        raise ValueError(f"scale must be in (0, 10], got {scale!r}")
    return _static(fig, "png", scale, subtitle)


def figure_svg(fig: go.Figure, *, subtitle: str | None = None) -> bytes:
    """The figure as SVG bytes, ``subtitle`` under its title.  Raises ``ExportUnavailable``."""
    return _static(fig, "svg", 1.0, subtitle)


def plotlyjs_inline() -> str:
    """plotly.js for an inline ``<script>``.

    plotly.js carries two default addresses on a CDN (topojson for geo maps, icons for map
    symbols) that these charts never load; they are written with ``\\/`` escapes, which mean
    the same in a JavaScript string, so the file holds no CDN address at all.
    """
    return plotly.offline.get_plotlyjs().replace("https://cdn", "https:\\/\\/cdn")


def figure_div(fig: go.Figure, *, div_id: str | None = None) -> str:
    """The figure as a ``<div>`` + ``<script>`` for a page that already loaded plotly.js."""
    fig = for_export(fig)  # raises ValueError for a non-figure
    return fig.to_html(full_html=False, include_plotlyjs=False, div_id=div_id, config=HTML_CONFIG)


def figure_html(fig: go.Figure, *, subtitle: str | None = None) -> str:
    """A standalone interactive HTML page of the figure, plotly.js inlined (opens offline),
    ``subtitle`` under its title."""
    if not isinstance(fig, go.Figure):
        raise ValueError(f"fig must be a plotly Figure, got {type(fig).__name__}")
    div = for_export(fig, subtitle=subtitle).to_html(
        full_html=False, include_plotlyjs=False, config=HTML_CONFIG
    )
    title = fig.layout.title.text or "Chart"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f"<title>{escape(title)}</title>\n"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>\n"
        f"<script>{plotlyjs_inline()}</script>\n</head>\n<body>\n{div}\n</body>\n</html>\n"
    )
