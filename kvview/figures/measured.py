"""Figures of the Measured page: model against measurement, gap distributions and the fits of
perftest bandwidth and time (pure functions, no ``st.*`` calls)."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from kvview.figures.kit import Fig, base_layout, finished, legend_on_top
from kvview.fmt import fmt_bandwidth

MEASURED_COLOR = "#dc2626"
MODEL_COLOR = "#2563eb"
NOMINAL_COLOR = "#475569"


@finished
def figure_model_vs_measured(
    rows, *, title: str = "Model vs measured, per request", unit: str = "ms"
) -> go.Figure:
    """Grouped bars of (label, model seconds, measured seconds) in ``unit`` ("ms" or "µs"); a
    missing side is left out.  Log y when the values span more than ten times (a TTFT and a
    few-ms gap)."""
    scale = {"ms": 1e3, "µs": 1e6}[unit]
    fig = Fig()
    labels = [r[0] for r in rows]
    for name, idx, color in (("Model", 1, MODEL_COLOR), ("Measured", 2, MEASURED_COLOR)):
        ys = [None if r[idx] is None else r[idx] * scale for r in rows]
        fig.add_bar(
            x=labels,
            y=ys,
            name=name,
            marker_color=color,
            text=[None if y is None else f"{y:,.3g} {unit}" for y in ys],
            textposition="outside",
            cliponaxis=False,
            hovertemplate=f"{name}<br>%{{x}}: %{{y:,.3f}} {unit}<extra></extra>",
        )
    fig.update_layout(barmode="group")
    values = [r[i] * scale for r in rows for i in (1, 2) if r[i] is not None and r[i] > 0]
    log = bool(values) and max(values) / min(values) > 10
    if log:  # a TTFT and a few-ms gap on one chart; labels at powers of ten only
        top = np.log10(max(values)) + 0.35
        fig.update_yaxes(type="log", dtick=1, range=[np.log10(min(values)) - 0.3, top])
    else:
        fig.update_yaxes(rangemode="tozero")
    fig = base_layout(fig, title, "", f"time [{unit}{', log scale' if log else ''}]", height=400)
    legend_on_top(fig, top=90)
    return fig


def _ticks_125(lo: float, hi: float) -> list[float]:
    """1-2-5 ticks covering lo..hi (> 0), one step beyond each end."""
    first, last = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    ticks = [m * 10.0**k for k in range(first, last + 1) for m in (1, 2, 5)]
    inside = [t for t in ticks if lo <= t <= hi]
    below = [t for t in ticks if t < lo][-1:]
    above = [t for t in ticks if t > hi][:1]
    return [float(f"{t:.3g}") for t in below + inside + above]


@finished
def figure_gap_distribution(
    buckets=(), samples=(), *, model_s: float | None = None, source: str = ""
) -> go.Figure:
    """How the measured transfer gap is spread: a histogram's buckets (cumulative
    ``(upper bound [s], count)``, ``+Inf`` last) or a gauge's samples [s], on a log time axis
    [ms], with the model's exposed transfer marked."""
    fig = Fig()
    above = 0.0
    if buckets:
        b = [(float(le), float(c)) for le, c in buckets]
        finite = [(le, c) for le, c in b if np.isfinite(le) and le > 0]
        above = b[-1][1] - finite[-1][1] if finite and not np.isfinite(b[-1][0]) else 0.0
        edges = [finite[0][0] / 2] + [le for le, _ in finite]
        counts = np.diff([0.0] + [c for _, c in finite])
        nonzero = np.flatnonzero(counts)
        if nonzero.size:  # drop the empty buckets at both ends (keep one on each side)
            lo_i, hi_i = max(nonzero[0] - 1, 0), min(nonzero[-1] + 1, len(counts) - 1)
            counts = counts[lo_i : hi_i + 1]
            edges = edges[lo_i : hi_i + 2]
    else:
        s = np.asarray(samples, dtype=float) * 1e3
        s = s[s > 0]
        lo, hi = (float(s.min()), float(s.max())) if s.size else (1.0, 2.0)
        edges_ms = np.geomspace(lo * 0.9, hi * 1.1, min(max(int(np.sqrt(s.size)) + 1, 4), 40))
        counts, _ = np.histogram(s, bins=edges_ms)
        edges = list(edges_ms / 1e3)
    lo_ms = np.asarray(edges[:-1]) * 1e3
    hi_ms = np.asarray(edges[1:]) * 1e3
    fig.add_bar(  # from each bucket's lower edge across its width: exact on a log axis
        x=lo_ms,
        y=counts,
        width=hi_ms - lo_ms,
        offset=0,
        name="measured transfers",
        marker_color=MEASURED_COLOR,
        marker_line={"color": "white", "width": 1},
        customdata=np.stack([lo_ms, hi_ms], axis=1),
        hovertemplate="%{customdata[0]:,.3g}–%{customdata[1]:,.3g} ms: %{y:,.0f} transfers"
        "<extra></extra>",
    )
    fig.update_layout(bargap=0)
    ticks = _ticks_125(float(lo_ms.min()), float(hi_ms.max()))
    # 1, 2, 5, 10, 20, 50 … written out (plotly's dtick "D2" labels 20 and 50 as "2" and "5")
    fig.update_xaxes(type="log", tickvals=ticks, ticktext=[f"{t:,g}" for t in ticks])
    if model_s is not None and model_s > 0:
        x = model_s * 1e3
        fig.add_vline(x=x, line_dash="dash", line_color=MODEL_COLOR)
        fig.add_annotation(
            x=float(np.log10(x)),
            y=1,
            yref="paper",
            yanchor="bottom",
            text=f"model {x:,.3g} ms",
            showarrow=False,
            font={"size": 11, "color": MODEL_COLOR},
        )
    note = f"; {above:,.0f} above {edges[-1] * 1e3:,.3g} ms not drawn" if above else ""
    title = "Measured transfer gap" + (f" ({source})" if source else "") + note
    return base_layout(fig, title, "transfer gap [ms, log scale]", "transfers", height=380)


def _nominal(link: str, nominal: float) -> str:
    """The link and its nominal bandwidth, once ('Custom 48.02 GB/s' already says it)."""
    bw = fmt_bandwidth(nominal)
    return link if bw in link or f"{nominal / 1e9:,.4g} GB/s" in link else f"{link}, {bw}"


@finished
def figure_bandwidth_fit(sizes, bandwidths, fit, *, nominal: float, link: str) -> go.Figure:
    """perftest points (message bytes, bandwidth B/s) with the fitted curve and the link's
    nominal bandwidth, in GB/s over a log message-size axis."""
    x = np.asarray(sizes, dtype=float)
    grid = np.geomspace(x.min(), x.max(), 200)
    fig = Fig()
    fig.add_scatter(
        x=x,
        y=np.asarray(bandwidths, dtype=float) / 1e9,
        mode="markers",
        name="measured",
        marker={"color": MEASURED_COLOR, "size": 8},
        hovertemplate="%{x:,.0f} B: %{y:,.3f} GB/s measured<extra></extra>",
    )
    fig.add_scatter(
        x=grid,
        y=fit.bandwidth_at(grid) / 1e9,
        mode="lines",
        name=(
            f"fit: {fit.bandwidth_bytes_per_s / 1e9:,.4g} GB/s, "
            f"{fit.latency_s * 1e6:,.3g} µs per message"
        ),
        line={"color": MODEL_COLOR, "width": 2},
        hovertemplate="%{x:,.0f} B: %{y:,.3f} GB/s fitted<extra></extra>",
    )
    fig.add_scatter(
        x=[grid[0], grid[-1]],
        y=[nominal / 1e9] * 2,
        mode="lines",
        name=f"nominal ({_nominal(link, nominal)})",
        line={"color": NOMINAL_COLOR, "dash": "dash", "width": 1.5},
        hovertemplate=f"{link} nominal: %{{y:,.4g}} GB/s<extra></extra>",
    )
    fig.update_xaxes(type="log")
    fig = base_layout(
        fig,
        "Measured bandwidth by message size, with the fit",
        "message size [bytes, log scale]",
        "bandwidth [GB/s per direction]",
    )
    legend_on_top(fig, top=90)
    return fig


@finished
def figure_time_fit(sizes, seconds, fit) -> go.Figure:
    """(bytes, seconds) points with ``t = latency + bytes ÷ bandwidth``, log-log, in µs."""
    x = np.asarray(sizes, dtype=float)
    pos = x[x > 0]
    grid = np.geomspace(pos.min() if pos.size else 1.0, max(x.max(), 2.0), 200)
    fig = Fig()
    fig.add_scatter(
        x=x,
        y=np.asarray(seconds, dtype=float) * 1e6,
        mode="markers",
        name="measured",
        marker={"color": MEASURED_COLOR, "size": 8},
        hovertemplate="%{x:,.0f} B in %{y:,.3f} µs<extra></extra>",
    )
    fig.add_scatter(
        x=grid,
        y=fit.time_s(grid) * 1e6,
        mode="lines",
        name=(
            f"fit: {fit.latency_s * 1e6:,.3g} µs + bytes ÷ "
            f"{fit.bandwidth_bytes_per_s / 1e9:,.4g} GB/s"
        ),
        line={"color": MODEL_COLOR, "width": 2},
        hovertemplate="%{x:,.0f} B in %{y:,.3f} µs fitted<extra></extra>",
    )
    fig.update_xaxes(type="log")
    fig.update_yaxes(type="log")
    fig = base_layout(
        fig,
        "Measured transfer time by size, with the fit",
        "transfer size [bytes, log scale]",
        "time [µs, log scale]",
    )
    legend_on_top(fig, top=90)
    return fig


@finished
def figure_efficiency_curve(sizes, bandwidths, fit, *, nominal: float, link: str) -> go.Figure:
    """Achieved ÷ nominal bandwidth [%] by message size: measured points and the fit."""
    x = np.asarray(sizes, dtype=float)
    pos = x[x > 0]
    grid = np.geomspace(pos.min() if pos.size else 1.0, max(x.max(), 2.0), 200)
    fig = Fig()
    fig.add_scatter(
        x=x,
        y=np.asarray(bandwidths, dtype=float) / nominal * 100,
        mode="markers",
        name="measured",
        marker={"color": MEASURED_COLOR, "size": 8},
        hovertemplate="%{x:,.0f} B: %{y:,.1f} % of nominal<extra></extra>",
    )
    fig.add_scatter(
        x=grid,
        y=fit.bandwidth_at(grid) / nominal * 100,
        mode="lines",
        name="fit",
        line={"color": MODEL_COLOR, "width": 2},
        hovertemplate="%{x:,.0f} B: %{y:,.1f} % of nominal (fit)<extra></extra>",
    )
    fig.add_scatter(
        x=[grid[0], grid[-1]],
        y=[100, 100],
        mode="lines",
        name="nominal (100 %)",
        line={"color": NOMINAL_COLOR, "dash": "dash", "width": 1.5},
        hoverinfo="skip",
    )
    fig.update_xaxes(type="log")
    fig = base_layout(
        fig,
        f"Efficiency by message size: achieved ÷ nominal ({_nominal(link, nominal)})",
        "message size [bytes, log scale]",
        "efficiency [% of nominal]",
    )
    legend_on_top(fig, top=90)
    return fig


@finished
def figure_transfer_durations(durations_s, *, model_s: float | None = None) -> go.Figure:
    """Histogram of profiled per-transfer durations [µs] with the model's per-layer time."""
    d = np.asarray(durations_s, dtype=float) * 1e6
    fig = Fig()
    fig.add_histogram(
        x=d,
        nbinsx=min(max(int(np.sqrt(d.size)) * 2, 10), 60),
        name="profiled transfers",
        marker_color=MEASURED_COLOR,
        marker_line={"color": "white", "width": 1},
        hovertemplate="%{x} µs: %{y:,.0f} transfers<extra></extra>",
    )
    if model_s is not None:
        x = model_s * 1e6
        fig.add_vline(x=x, line_dash="dash", line_color=MODEL_COLOR)
        fig.add_annotation(
            x=x,
            y=1,
            yref="paper",
            yanchor="bottom",
            text=f"model per layer {x:,.3g} µs",
            showarrow=False,
            font={"size": 11, "color": MODEL_COLOR},
        )
    if d.size and np.histogram(d, bins=min(max(int(np.sqrt(d.size)) * 2, 10), 60))[0].max() < 8:
        fig.update_yaxes(dtick=1)  # whole transfers
    return base_layout(
        fig,
        "Profiled transfer durations",
        "duration per transfer [µs]",
        "transfers",
        height=380,
    )
