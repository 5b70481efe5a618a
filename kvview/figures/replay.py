"""The replay's peak: per minute of the trace, its arrivals, the TTFT p90 of the requests that
arrived in it (against the target) and the decode pool's KV memory in use, on one time axis.

A pure function of ``kvmodel.replay.Series``; no ``st.*`` calls.  Titles, axis units, hover
with units.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

ARRIVALS_COLOR = "#64748b"
TTFT_COLOR = "#2563eb"
MEMORY_COLOR = "#7c3aed"
TARGET_COLOR = "#dc2626"


def figure_replay(series, *, ttft_slo_s: float, title: str = "") -> go.Figure:
    """Three panels over the trace's minutes (module doc); the TTFT target as a dashed line."""
    minute = np.asarray(series.minute, dtype=float)
    ttft_ms = np.asarray(series.ttft_p90_s, dtype=float) * 1e3
    memory = np.asarray(series.decode_memory, dtype=float) * 100
    fig = make_subplots(rows=3, cols=1, shared_xaxes=True, vertical_spacing=0.06,
                        subplot_titles=("Arrivals", "TTFT p90 of the minute's arrivals",
                                        "Decode KV memory in use (peak)"))  # fmt: skip
    fig.add_trace(go.Bar(x=minute, y=np.asarray(series.arrivals), name="arrivals",
                         marker_color=ARRIVALS_COLOR,
                         hovertemplate="minute %{x:.0f}: %{y:,.0f} requests<extra></extra>"),
                  row=1, col=1)  # fmt: skip
    fig.add_trace(go.Scatter(x=minute, y=ttft_ms, name="TTFT p90", mode="lines+markers",
                             marker={"size": 4}, line={"color": TTFT_COLOR},
                             hovertemplate="minute %{x:.0f}: TTFT p90 %{y:,.0f} ms"
                             "<extra></extra>"), row=2, col=1)  # fmt: skip
    fig.add_trace(go.Scatter(x=minute, y=np.full(len(minute), ttft_slo_s * 1e3),
                             name="TTFT target", mode="lines",
                             line={"color": TARGET_COLOR, "dash": "dash", "width": 1.5},
                             hovertemplate="target %{y:,.0f} ms<extra></extra>"),
                  row=2, col=1)  # fmt: skip
    fig.add_trace(go.Scatter(x=minute, y=memory, name="decode KV memory", mode="lines",
                             line={"color": MEMORY_COLOR}, fill="tozeroy",
                             hovertemplate="minute %{x:.0f}: %{y:.0f} % of the pool's KV "
                             "memory<extra></extra>"), row=3, col=1)  # fmt: skip
    fig.update_yaxes(title_text="requests / min", row=1, col=1, rangemode="tozero")
    fig.update_yaxes(title_text="TTFT p90 [ms]", row=2, col=1, rangemode="tozero")
    fig.update_yaxes(title_text="in use [%]", row=3, col=1, range=[0, 105])
    fig.update_xaxes(title_text="minute of the trace [min]", row=3, col=1)
    fig.update_layout(
        title={"text": title or "The replay minute by minute", "x": 0, "xanchor": "left"},
        height=660,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        legend={"orientation": "h", "yanchor": "top", "y": -0.1, "x": 0},
        hoverlabel={"namelength": -1},
        bargap=0.1,
    )
    return fig
