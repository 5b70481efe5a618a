"""The margins a chart is sent with, so that the browser lays it out once.

Streamlit's chart theme turns on plotly's ``automargin`` for both axes: plotly first draws the
figure inside the margins it was given, then measures the tick labels, axis titles and a
legend placed on the figure's container, and when they need more room it computes new
margins and draws the whole figure a second time.  Streamlit mounts a new chart for every
new figure, so every change of an input paid both draws.  In chromium on this project's
2-core machine the second draw is about half of a chart's plotly time (the Overview figure,
``Plotly.newPlot`` alone: 24-25 ms with the kit's 10 px margins, 11-12 ms with the margins
plotly ends with; bench/README.md, Session 28).

``reserve`` writes into a figure's layout the margins plotly would end with at a desktop
width, estimated from the texts the figure holds: the widest y tick label (categories as
given, numbers as plotly's automatic ticks print them) and the rows of a legend under the
plot.  ``automargin`` stays on: where the estimate falls short (another width, a phone, an
unusual label) plotly still grows the margin and draws twice, as before; where it is a few
pixels over, the plot is that much narrower.  Nothing is ever clipped.

The constants are Streamlit 1.67's theme as chromium draws it, read from every chart of the
app (bench/chart_margins.py prints, per chart, the margins sent and the margins plotly
drew; tests/e2e/test_browser.py holds every page's charts to one draw).
"""

from __future__ import annotations

import math

import numpy as np

# Streamlit's sans-serif ("Source Sans") at the theme's 12 px tick and legend font: the
# advance of each character in px, measured in chromium with getComputedTextLength.
_ADVANCE_PX = {" ": 2.4, "!": 3.47, "'": 2.99, "(": 3.64, ")": 3.64, ",": 2.99, "-": 3.73,
               ".": 2.99, "/": 4.2, ":": 2.99, ";": 2.99, "[": 3.64, "]": 3.64, "I": 3.16,
               "f": 3.46, "i": 2.95, "j": 2.96, "l": 3.06, "r": 4.16, "t": 3.83, "|": 2.89,
               "{": 3.64, "}": 3.64, "·": 2.99, "°": 3.97, "’": 2.99, "%": 9.89, "&": 7.31,
               "@": 10.16, "B": 7.06, "D": 7.38, "G": 7.4, "H": 7.82, "M": 8.72, "N": 7.76,
               "O": 7.97, "Q": 7.97, "U": 7.74, "W": 9.43, "m": 9.95, "w": 8.63, "—": 9.6,
               "…": 11.38, "→": 7.43, "a": 6.05, "b": 6.64, "c": 5.23, "d": 6.66, "e": 5.95,
               "g": 6.05, "h": 6.53, "k": 5.94, "n": 6.56, "o": 6.5, "p": 6.66, "q": 6.66,
               "s": 5.03, "u": 6.53, "v": 5.6, "x": 5.35, "y": 5.6, "z": 5.1, "A": 6.44,
               "C": 6.53, "E": 6.32, "F": 5.93, "J": 5.29, "K": 6.95, "L": 5.83, "P": 6.79,
               "R": 6.83, "S": 6.25, "T": 6.43, "V": 6.29, "X": 6.16, "Y": 5.71, "Z": 6.28,
               "*": 5.02, "?": 5.1, "_": 6.0, "–": 5.76, "µ": 6.74, "μ": 6.74}  # fmt: skip
_OTHER_PX = 6.8  # any other character: at least the widest of the common letters (b, d, p, q)
DIGIT_PX = 5.96  # digits, + − × ÷ < = > ≤ ≥ ~ # $ ^: one advance in this font

# Where plotly puts things under Streamlit's theme (px), read from the app's charts at
# 1280 × 800: a y axis needs its widest tick label + 53 on the left (tick padding, the
# title's 24 px standoff and its 19 px line, whether the title is set or not), 44 with its
# tick labels hidden; an x axis with horizontal tick labels needs 65 at the bottom (label
# line, 20 px standoff, title line), whether titled or not.  A legend under the plot
# (yref "container") takes 10 + 19 per row below that; its entries are 43 px plus their
# text, 2.5 px apart, and wrap into equal columns when one row does not fit the plot width.
Y_LABELS_PX = 53.0
Y_HIDDEN_PX = 44.0
X_BOTTOM_PX = 65.0
X_LINE_PX = 16.0  # one tick label's line
LEGEND_BASE_PX = 10.0
LEGEND_ROW_PX = 19.0
LEGEND_ITEM_PX = 43.0
LEGEND_GAP_PX = 2.5
DESKTOP_WIDTH_PX = 820.0  # the page's main column at a 1280 px wide window (wide layout off)
SLACK_PX = 2.0  # rounding of plotly's own text measures


def text_px(text: str) -> float:
    """The width of ``text`` in the theme's 12 px sans-serif (an estimate to within a few %;
    unknown characters are taken as wide)."""
    total = 0.0
    for ch in str(text):
        if ch.isdigit() or ch in "+−×÷<=>≤≥~#$^":
            total += DIGIT_PX
        else:
            total += _ADVANCE_PX.get(ch, _OTHER_PX)
    return total


def _values(trace: dict, key: str) -> np.ndarray | None:
    """A trace's numbers on one coordinate, or None when they are not plain numbers."""
    v = trace.get(key)
    if v is None:
        return None
    try:
        arr = np.asarray(v, dtype=float).ravel()
    except (TypeError, ValueError):
        return None
    arr = arr[np.isfinite(arr)]
    return arr if arr.size else None


def _on_axis(trace: dict, letter: str, axis_id: str) -> bool:
    return trace.get(f"{letter}axis", letter) == axis_id


def _numeric_extent(data: list[dict], letter: str, axis_id: str):
    """(lo, hi, has bars) of the numbers on one axis, or None when any trace on it is not
    known (a histogram's counts, categories, text)."""
    lo, hi, bars = math.inf, -math.inf, False
    for trace in data:
        if not _on_axis(trace, letter, axis_id):
            continue
        kind = trace.get("type", "scatter")
        horizontal = trace.get("orientation") == "h"
        value_axis = "x" if horizontal else "y"
        if kind == "histogram" and letter == value_axis:
            return None
        if kind not in ("bar", "scatter", "histogram"):
            return None
        v = _values(trace, letter)
        if v is None:
            if trace.get(letter) is None:
                continue  # e.g. a bar's unused axis
            return None
        if kind == "bar" and letter == value_axis:
            bars = True
            base = _values(trace, "base")
            if base is not None and base.size == v.size:
                v = np.concatenate([v + base, base])
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    if lo > hi:
        return None
    return lo, hi, bars


def _nice_step(span: float, length_px: float) -> float:
    """Plotly's automatic tick step for a linear axis: about one tick per 40 px of a y axis
    (4-9 intervals), rounded up to 1, 2 or 5 × a power of ten."""
    n = min(max(length_px / 40.0, 4.0), 9.0) + 1.0
    rough = span / n
    base = 10.0 ** math.floor(math.log10(rough))
    for m in (1.0, 2.0, 5.0, 10.0):
        if m * base >= rough * (1 - 1e-9):
            return m * base
    return 10.0 * base


_SI = {3: "k", 6: "M", 9: "G", 12: "T"}


def _label(v: float, decimals: int, exponent: int) -> str:
    """A tick value as plotly's default format prints it (SI suffix from 10⁴ up)."""
    sign = "−" if v < 0 else ""
    v = abs(v)
    if exponent >= 3:
        v /= 10.0**exponent
        text = f"{v:.{max(0, decimals - exponent)}f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return sign + text + _SI.get(exponent, "")
    return f"{sign}{v:.{decimals}f}"


def linear_labels(lo: float, hi: float, bars: bool, length_px: float) -> list[str]:
    if bars:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    span = hi - lo or abs(hi) or 1.0
    lo, hi = lo - 0.06 * span * (lo < 0 or not bars), hi + 0.06 * span  # autorange's padding
    step = _nice_step(hi - lo, length_px)
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    ticks = np.arange(math.ceil(lo / step), math.floor(hi / step) + 1) * step
    biggest = max(abs(lo), abs(hi))
    exponent = 3 * (math.floor(math.log10(biggest)) // 3) if biggest >= 1e4 else 0
    return [_label(t, decimals, exponent) for t in ticks]


def log_labels(lo_exp: float, hi_exp: float, every_decade: bool) -> list[str]:
    """Labels of a log axis between 10**lo_exp and 10**hi_exp: powers of ten (with
    ``dtick=1``), else also 2 and 5 times them, as plotly prints them."""
    out = []
    for e in range(math.floor(lo_exp), math.ceil(hi_exp) + 1):
        for m in (1,) if every_decade else (1, 2, 5):
            v = m * 10.0**e
            if 10.0**lo_exp * 0.999 <= v <= 10.0**hi_exp * 1.001:
                exponent = 3 * (e // 3) if v >= 1e4 else 0
                out.append(_label(v, max(0, -e), exponent))
    return out


def _axis_labels(layout: dict, data: list[dict], name: str, length_px: float):
    """The tick labels an axis will show (to within their width), or None when unknown."""
    axis = layout.get(name) or {}
    letter, axis_id = name[0], name[0] + name[5:]
    if axis.get("ticktext") is not None:
        return [str(t) for t in axis["ticktext"]]
    if axis.get("tickformat") or axis.get("ticksuffix") or axis.get("tickprefix"):
        return None
    kind = axis.get("type")
    if kind == "category" or (kind is None and _categories(data, letter, axis_id)):
        return _categories(data, letter, axis_id)
    if axis.get("range") is not None and kind == "log":
        lo, hi = (float(r) for r in axis["range"])
        return log_labels(min(lo, hi), max(lo, hi), axis.get("dtick") in (1, "1"))
    extent = _numeric_extent(data, letter, axis_id)
    if extent is None:
        return None
    lo, hi, bars = extent
    if axis.get("range") is not None:
        lo, hi, bars = (*sorted(float(r) for r in axis["range"]), False)
        return linear_labels(lo, hi, bars, length_px * 10)  # no padding: widest at the ends
    if kind == "log":
        if hi <= 0:
            return None
        lo = lo if lo > 0 else hi / 1e3
        pad = 0.06 * (math.log10(hi) - math.log10(lo) or 1.0)
        return log_labels(math.log10(lo) - pad, math.log10(hi) + pad,
                           axis.get("dtick") in (1, "1"))  # fmt: skip
    return linear_labels(lo, hi, bars, length_px)


def _categories(data: list[dict], letter: str, axis_id: str) -> list[str] | None:
    """The category names on an axis when its values are text, else None."""
    names: list[str] = []
    for trace in data:
        if not _on_axis(trace, letter, axis_id):
            continue
        v = trace.get(letter)
        if v is None:
            continue
        if isinstance(v, dict):  # an array already in plotly's base64 form: not read here
            return None
        values = list(v) if not isinstance(v, np.ndarray) else v.tolist()
        if not values or not all(isinstance(x, str) for x in values):
            return None
        names += values
    return names or None


def _axes(layout: dict, letter: str, data: list[dict]) -> list[str]:
    names = {k for k in layout if k.startswith(f"{letter}axis")}
    for trace in data:
        ref = trace.get(f"{letter}axis", letter)
        names.add(f"{letter}axis{ref[1:]}")
    return sorted(names)


def _at_home(axis: dict, far_side: str) -> bool:
    """An axis on its usual side (left, bottom), drawn, not overlaying another: the only kind
    estimated here."""
    return not (axis.get("side") == far_side or axis.get("overlaying")
                or axis.get("visible") is False)  # fmt: skip


def _left_px(layout: dict, data: list[dict], plot_h: float) -> float | None:
    need = 0.0
    for name in _axes(layout, "y", data):
        axis = layout.get(name) or {}
        if not _at_home(axis, "right"):
            return None
        if axis.get("showticklabels") is False:
            need = max(need, Y_HIDDEN_PX)
            continue
        labels = _axis_labels(layout, data, name, plot_h)
        if not labels:
            return None
        need = max(need, max(text_px(t) for t in labels) + Y_LABELS_PX)
    return need or None


def _bottom_px(layout: dict, data: list[dict], plot_w: float) -> float | None:
    need = 0.0
    for name in _axes(layout, "x", data):
        axis = layout.get(name) or {}
        if not _at_home(axis, "top") or axis.get("showticklabels") is False:
            return None
        angle = axis.get("tickangle")
        if angle in (None, "auto", 0):
            need = max(need, X_BOTTOM_PX)
            continue
        labels = _axis_labels(layout, data, name, plot_w)
        if not labels:
            return None
        a = math.radians(abs(float(angle)))
        widest = max(text_px(t) for t in labels)
        need = max(need, X_BOTTOM_PX - X_LINE_PX + widest * math.sin(a)
                   + X_LINE_PX * math.cos(a))  # fmt: skip
    return need or None


def _legend_entries(layout: dict, data: list[dict]) -> list[str]:
    names = [str(t.get("name", "")) for t in data
             if t.get("showlegend") is not False and t.get("name")]  # fmt: skip
    shown = layout.get("showlegend")
    if shown is False or (shown is None and len(data) < 2):
        return []
    return names


def _legend_below_px(layout: dict, data: list[dict], plot_w: float) -> float | None:
    """The rows a legend on the container's bottom takes, 0 for no such legend, None when its
    size is not known."""
    legend = layout.get("legend") or {}
    if legend.get("yref") != "container":
        return 0.0
    if legend.get("orientation") != "h" or legend.get("font") or legend.get("entrywidth"):
        return None
    entries = _legend_entries(layout, data)
    if not entries:
        return 0.0
    widths = [LEGEND_ITEM_PX + text_px(name) for name in entries]
    if sum(widths) + LEGEND_GAP_PX * (len(widths) - 1) <= plot_w:
        rows = 1
    else:
        columns = max(1, int(plot_w // (max(widths) + LEGEND_GAP_PX)))
        rows = math.ceil(len(widths) / columns)
    return LEGEND_BASE_PX + LEGEND_ROW_PX * rows


def _has_own_fonts(layout: dict) -> bool:
    """True when the layout sets font sizes (presentation mode): the estimates are for the
    theme's 12 px."""
    if (layout.get("font") or {}).get("size"):
        return True
    return any(isinstance(v, dict) and (v.get("tickfont") or {}).get("size")
               for k, v in layout.items() if k[1:5] == "axis")  # fmt: skip


def reserve(layout: dict, data: list[dict], *, width: float = DESKTOP_WIDTH_PX) -> dict:
    """``layout`` with its left and bottom margins raised to what plotly's automargin needs
    at ``width`` (a new dict; ``layout`` is not changed).  A margin whose need is not known
    is left as given."""
    if _has_own_fonts(layout) or layout.get("grid") or not data:
        return layout
    margin = dict(layout.get("margin") or {})
    left, right = float(margin.get("l", 80)), float(margin.get("r", 80))
    top, bottom = float(margin.get("t", 100)), float(margin.get("b", 80))
    height = float(layout.get("height") or 450)
    need_l = _left_px(layout, data, max(height - top - bottom - 65, 100.0))
    if need_l is not None:
        left = max(left, math.ceil(need_l + SLACK_PX))
    plot_w = width - left - right
    need_b = _bottom_px(layout, data, plot_w)
    legend = _legend_below_px(layout, data, plot_w)
    if need_b is not None and legend is not None:
        bottom = max(bottom, math.ceil(need_b + legend + SLACK_PX))
    if left == float(margin.get("l", 80)) and bottom == float(margin.get("b", 80)):
        return layout
    return {**layout, "margin": {**margin, "l": round(left), "b": round(bottom)}}
