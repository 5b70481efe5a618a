"""Sensitivity figures (Plan page, the report): the tornado of ``kvmodel.sensitivity.tornado``
for TTFT and for the transfer share, alone or as two panels of one figure.

Pure functions, no ``st.*`` calls; re-exported by ``kvview.figures``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvview.figures.kit import (
    NAME_BAND,
    ROW_PX,
    Fig,
    base_layout,
    finished,
    legend_stacked,
    names_above,
    panel_figure,
)
from kvview.fmt import setting_labels


@finished
def figure_tornado_panels(df: pd.DataFrame) -> go.Figure:
    """Plan page: what moves TTFT (top) and the transfer share of TTFT (bottom)."""
    panels = [figure_tornado.unbuilt(df, metric=m) for m in ("ttft", "share")]
    for panel, what in zip(panels, ("TTFT", "transfer share of TTFT"), strict=True):
        panel.layout["title"]["text"] = f"What moves the {what}"  # short: a phone's width
    rel = df.attrs.get("rel")
    span = f"each input ±{rel:.0%} on its own" if rel else "each input moved on its own"
    return panel_figure(panels, title=f"Sensitivity: {span}", rows=True)


def _ticks_from_zero(top: float, most: int = 8) -> list[float]:
    """Round ticks 0, step, 2·step … up to ``top`` (step 1, 2 or 5 × a power of ten)."""
    if not top > 0:
        return [0.0]
    step = 10.0 ** np.floor(np.log10(top / most))
    step *= next(m for m in (1, 2, 5, 10) if top / (step * m) <= most)
    return [float(f"{v:.6g}") for v in np.arange(0.0, top + step * 1e-9, step)]


TORNADO_COLORS = {"low": "#60a5fa", "high": "#dc2626"}


@finished
def figure_tornado(df: pd.DataFrame, *, metric: str = "ttft", base: float | None = None):
    """Tornado chart of ``kvmodel.sensitivity.tornado``: per input, bars from the base value to
    the outcome at its low and at its high setting, largest spread on top.

    ``metric`` "ttft" draws TTFT [ms], "share" the transfer share of TTFT [%].  ``base`` is the
    base value in the table's units (TTFT [s] or share 0-1); default ``df.attrs``.
    """
    if metric not in ("ttft", "share"):
        raise ValueError(f"metric must be 'ttft' or 'share', got {metric!r}")
    key = "ttft_s" if metric == "ttft" else "share"
    if base is None:
        base = df.attrs.get(key)
    if base is None:
        raise ValueError(f"base is required when df.attrs has no {key!r}")
    scale, unit, fmt = (1e3, "ms", ",.1f") if metric == "ttft" else (100.0, "%", ",.2f")
    if metric == "ttft" and float(base) >= 10:  # ten seconds and more read better in s
        scale, unit, fmt = 1.0, "s", ",.2f"
    lo_col, hi_col = (
        ("ttft_low_s", "ttft_high_s") if metric == "ttft" else ("share_low", "share_high")
    )
    spread = np.abs(df[hi_col].to_numpy(dtype=float) - df[lo_col].to_numpy(dtype=float))
    order = np.argsort(-spread, kind="stable")  # largest spread on top, ties in table order
    d = {c: df[c].to_numpy()[order] for c in ("input", lo_col, hi_col)}
    d["low_label"], d["high_label"] = (
        np.asarray(x, dtype=object)[order] for x in setting_labels(df)
    )
    n_inputs = len(order)
    b = float(base) * scale
    what = "TTFT" if metric == "ttft" else "transfer share of TTFT"
    values = [b, *(d[lo_col] * scale), *(d[hi_col] * scale)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.5 or max(abs(b) * 0.1, 1e-9)  # room for the labels beside the bars
    fig = Fig()
    for side, col, label_col, width, name in (
        ("low", lo_col, "low_label", 0.5, "low setting (categories: best option)"),
        ("high", hi_col, "high_label", 0.28, "high setting (categories: worst option)"),
    ):
        v = d[col].astype(float) * scale
        # label a bar only when it is long enough to tell which label belongs to it
        long = abs(v - b) >= 0.01 * (hi - lo)
        text = [lab if ok else "" for lab, ok in zip(d[label_col], long, strict=True)]
        fig.add_bar(
            y=d["input"],
            x=v - b,
            base=[b] * n_inputs,
            orientation="h",
            width=width,
            offset=NAME_BAND - 0.5 + (0.5 - width) / 2,  # both centred below the input's name
            name=name,
            marker_color=TORNADO_COLORS[side],
            text=text,
            textposition="outside",
            constraintext="none",  # plotly shrank these to the bar's thickness (~7 px)
            cliponaxis=False,
            customdata=list(zip(d[label_col], v, v - b, strict=True)),
            hovertemplate=f"%{{y}}<br>%{{customdata[0]}}: {what} %{{customdata[1]:{fmt}}} "
            f"{unit}<br>%{{customdata[2]:+{fmt}}} {unit} vs base<extra></extra>",
        )
    fig.add_vline(x=b, line_dash="dash", line_color="#475569")
    fig.add_scatter(  # legend entry for the base line
        x=[None],
        y=[None],
        mode="lines",
        line={"color": "#475569", "dash": "dash"},
        name=f"base {b:{fmt}} {unit}",
    )
    fig.update_xaxes(range=[lo - pad, hi + pad])  # room on the left for outside labels ...
    if lo >= 0 > lo - pad:  # ... but no tick below 0: a time or a share is never negative
        fig.update_xaxes(tickvals=_ticks_from_zero(hi + pad))
    fig.update_layout(barmode="overlay")
    rel = df.attrs.get("rel")
    span = f": each input ±{rel:.0%}, categories over all options" if rel else ""
    names_above(fig, d["input"])
    base_layout(fig, f"What moves the {what}{span}", f"{what} [{unit}]", "")
    legend_stacked(fig)
    fig.update_layout(height=fig.layout["margin"]["t"] + 70 + ROW_PX * n_inputs)
    return fig
