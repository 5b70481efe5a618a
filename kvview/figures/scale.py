"""Charts at a projector's scale (presentation mode, ``ui.present``): the figure kit's
presentation scale, applied to every chart where it is drawn (``ui.exports_ui.chart``).

A pure function of a built figure, no ``st.*`` calls.
"""

from __future__ import annotations

import copy

import plotly.graph_objects as go

# Presentation mode (ui.present): fonts a projector's back row reads.  Streamlit's own chart
# theme draws labels at 0.75 rem; the kit's explicit sizes (annotations at 11 px, panel headings
# at 14 px) and plotly's shrinking of bar text to fit a bar (down to ~7 px on the tornado) do
# not follow the page's type, so a presented figure gets every size itself.
PRESENT_FONT_PX = 20  # ticks, legend, axis titles, bar text
PRESENT_FLOOR_PX = 16  # no chart text smaller, bar text included (plotly's uniformtext)
_BASE_FONT_PX = 14  # what the kit's sizes are relative to (the panels' headings)


def _scale_fonts(node, scale: float, floor: float) -> None:
    """Every ``size`` under a ``*font`` key, times ``scale`` and at least ``floor`` (in place)."""
    if isinstance(node, list):
        for item in node:
            _scale_fonts(item, scale, floor)
        return
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        if key.endswith("font") and isinstance(value, dict) and "size" in value:
            size = value["size"]
            if isinstance(size, (int, float)):
                value["size"] = max(size * scale, floor)
            elif isinstance(size, (list, tuple)):
                value["size"] = [max(s * scale, floor) for s in size]
        _scale_fonts(value, scale, floor)


def presentation(
    fig: go.Figure, *, font_px: float = PRESENT_FONT_PX, floor_px: float = PRESENT_FLOOR_PX
) -> go.Figure:
    """A copy of ``fig`` at projector scale (the cached original is shared and left alone).

    Every text gets an explicit size: the base font ``font_px``, titles 1.3 × that, the kit's
    own sizes scaled by ``font_px / 14`` and none under ``floor_px`` (bar text too: plotly
    shrinks a bar's label to fit the bar unless ``uniformtext`` sets a minimum).  The height and
    every pixel offset (margins, annotation shifts) grow by the same factor, so titles, legends
    and headings keep their room.
    """
    scale = font_px / _BASE_FONT_PX
    spec = copy.deepcopy(fig.to_plotly_json())
    layout, data = spec.get("layout", {}), spec.get("data", [])
    _scale_fonts(layout, scale, floor_px)
    _scale_fonts(data, scale, floor_px)
    layout["font"] = dict(layout.get("font", {}), size=font_px)
    layout["uniformtext"] = {"minsize": floor_px, "mode": "show"}
    title = layout.get("title")
    if isinstance(title, dict) and title.get("text"):
        title["font"] = dict(title.get("font", {}), size=round(font_px * 1.3))
    layout["legend"] = dict(layout.get("legend", {}), font={"size": font_px})
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            axis["tickfont"] = dict(axis.get("tickfont", {}), size=font_px)
            axis_title = axis.get("title")
            if isinstance(axis_title, dict):
                axis_title["font"] = dict(axis_title.get("font", {}), size=font_px)
    if "height" in layout:
        layout["height"] = round(layout["height"] * scale)
    if "margin" in layout:
        layout["margin"] = {k: round(v * scale) for k, v in layout["margin"].items()}
    for note in layout.get("annotations", []):
        for shift in ("xshift", "yshift"):
            if shift in note:
                note[shift] = note[shift] * scale
    return go.Figure({"data": data, "layout": layout})
