"""Plotly figure builders: pure functions of model output, no ``st.*`` calls.

Every figure has a title, axis titles with units and hover text with units.  Each interconnect
keeps one colour everywhere (``link_color``).  The shared kit (colours, the figure builder,
layout helpers) is in ``ui.figkit``, the Measured page's figures in ``ui.figures_measured``;
both are re-exported here, so pages use ``figures.<name>`` for every chart.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvmodel.inputs import DEFAULT_BAND_MS

from .figkit import (
    BAND_COLOR,
    LAYOUT_COLORS,
    SEGMENT_COLORS,
    _band_trace,
    _Fig,
    _finished,
    _groups,
    _layout,
    _legend_on_top,
    _panels,
    _threshold_trace,
    link_color,
    link_name,
)
from .figures_measured import (
    MEASURED_COLOR,
    MODEL_COLOR,
    NOMINAL_COLOR,
    figure_bandwidth_fit,
    figure_efficiency_curve,
    figure_gap_distribution,
    figure_model_vs_measured,
    figure_time_fit,
    figure_transfer_durations,
)

__all__ = [  # the builders defined here and those re-exported from the two modules above
    "BAND_COLOR",
    "LAYOUT_COLORS",
    "MEASURED_COLOR",
    "MODEL_COLOR",
    "NOMINAL_COLOR",
    "REGION_COLORS",
    "REGION_NAMES",
    "SEGMENT_COLORS",
    "TORNADO_COLORS",
    "figure_bandwidth_fit",
    "figure_batch_sweep",
    "figure_bytes_per_token",
    "figure_efficiency_curve",
    "figure_gap_distribution",
    "figure_mitigation_panels",
    "figure_model_vs_measured",
    "figure_models_seq",
    "figure_option_transfer",
    "figure_seq_sweep",
    "figure_time_fit",
    "figure_timeline",
    "figure_tornado",
    "figure_tornado_panels",
    "figure_traffic_histogram",
    "figure_transfer_durations",
    "figure_transfer_vs_step",
    "figure_ttft",
    "figure_ttft_waterfall",
    "link_color",
    "link_name",
    "traffic_comparison_frame",
]


@_finished
def figure_mitigation_panels(table: pd.DataFrame, *, step_ms: float) -> go.Figure:
    """Mitigations page: exposed transfer per option (left) beside its TTFT breakdown (right)."""
    left = figure_option_transfer.unbuilt(table, step_ms=step_ms)
    right = figure_ttft.unbuilt(table, title="TTFT per option")
    return _panels([left, right], title="Each option: what decode waits for, and TTFT", rows=False)


@_finished
def figure_tornado_panels(df: pd.DataFrame) -> go.Figure:
    """Plan page: what moves TTFT (top) and the transfer share of TTFT (bottom)."""
    panels = [figure_tornado.unbuilt(df, metric=m) for m in ("ttft", "share")]
    return _panels(panels, title="Sensitivity: each input moved on its own", rows=True)


@_finished
def figure_ttft(table: pd.DataFrame, *, title: str = "Time to first token") -> go.Figure:
    """Stacked horizontal bars per option: prefill, exposed transfer (+codec), first decode [ms].

    ``table`` needs columns option, prefill_ms, exposed_transfer_ms, decode_step_ms, ttft_ms.
    """
    fig = _Fig()
    parts = (
        ("Prefill", "prefill_ms"),
        ("KV transfer", "exposed_transfer_ms"),
        ("First decode step", "decode_step_ms"),
    )
    for name, col in parts:
        fig.add_bar(
            y=table["option"],
            x=table[col],
            name=name,
            orientation="h",
            marker_color=SEGMENT_COLORS[name],
            customdata=table["ttft_ms"],
            hovertemplate=f"{name}: %{{x:,.1f}} ms<br>TTFT: %{{customdata:,.1f}} ms"
            "<extra>%{y}</extra>",
        )
    fig.update_layout(barmode="stack")
    fig.update_yaxes(autorange="reversed", title=None)
    fig = _layout(
        fig,
        title,
        "time since the request arrived [ms]",
        "",
        height=max(240, 100 + 40 * len(table)),
    )
    _legend_on_top(fig, top=90)
    return fig


@_finished
def figure_option_transfer(table: pd.DataFrame, *, step_ms: float) -> go.Figure:
    """Exposed transfer (+ quantize/dequantize) per option against one decode step [ms]."""
    fig = _Fig()
    xs = [float(v) for v in table["exposed_transfer_ms"]]
    top = max(max(xs), step_ms) * 1.3  # the axis range
    near = 0.22 * top  # about a label's width: a bar ending this close before the line ...
    inside = [v >= 0.25 * top or (step_ms - near <= v <= step_ms and v >= 0.1 * top) for v in xs]
    fig.add_bar(
        y=table["option"],
        x=xs,
        orientation="h",
        marker_color=SEGMENT_COLORS["KV transfer"],
        name="exposed transfer",
        text=[f"{v:,.2f} ms" for v in xs],
        # ... carries its label inside, so no label sits on the step line
        textposition=["inside" if i else "outside" for i in inside],
        insidetextanchor="end",
        cliponaxis=False,
        hovertemplate="%{y}: exposed transfer %{x:,.3f} ms<extra></extra>",
    )
    fig.add_vline(x=step_ms, line_dash="dash", line_color="#475569", layer="below")
    fig.add_annotation(
        x=step_ms,
        y=1,
        yref="paper",
        yanchor="bottom",
        xanchor="right",
        showarrow=False,
        text=f"one decode step ({step_ms:,.1f} ms)",
        font={"size": 11},
    )
    fig.update_xaxes(range=[0, top])
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(showlegend=False)
    return _layout(
        fig,
        "What the decode node waits for, per option",
        "exposed transfer [ms]",
        "",
        height=max(260, 80 + 40 * len(table)),
    )


def _ms_label(ms: float, digits: int = 1) -> str:
    """A bar label from milliseconds: in s from ten seconds on, so it fits beside its bar."""
    return f"{ms / 1e3:,.1f} s" if abs(ms) >= 10_000 else f"{ms:,.{digits}f} ms"


@_finished
def figure_ttft_waterfall(prefill_ms: float, transfer_ms: float, decode_ms: float) -> go.Figure:
    """TTFT as a waterfall: prefill, exposed transfer and first decode step add up [ms]."""
    total = prefill_ms + transfer_ms + decode_ms
    names = ["Prefill", "KV transfer", "First decode step", "TTFT"]
    widths = [prefill_ms, transfer_ms, decode_ms, total]
    bases = [0.0, prefill_ms, prefill_ms + transfer_ms, 0.0]
    colors = [
        SEGMENT_COLORS["Prefill"],
        SEGMENT_COLORS["KV transfer"],
        SEGMENT_COLORS["First decode step"],
        "#475569",
    ]
    fig = _Fig()
    fig.add_bar(
        y=names,
        x=widths,
        base=bases,
        orientation="h",
        marker_color=colors,
        text=[_ms_label(w) for w in widths],
        textposition="outside",
        cliponaxis=False,
        customdata=[[b, b + w] for b, w in zip(bases, widths, strict=True)],
        hovertemplate="%{y}: %{x:,.2f} ms<br>from %{customdata[0]:,.1f} to "
        "%{customdata[1]:,.1f} ms<extra></extra>",
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(range=[0, total * 1.3])
    fig.update_layout(showlegend=False)
    return _layout(fig, "TTFT waterfall", "time since the request arrived [ms]", "", height=300)


@_finished
def figure_transfer_vs_step(
    transfer_ms: float, step_ms: float, band_ms=DEFAULT_BAND_MS, *, link: str = "", k: float = 1.0
) -> go.Figure:
    """One bar for the exposed transfer against the decode step and the usual band [ms]."""
    fig = _Fig()
    fig.add_vrect(x0=band_ms[0], x1=band_ms[1], fillcolor=BAND_COLOR, line_width=0, layer="below")
    fig.add_annotation(
        x=(band_ms[0] + band_ms[1]) / 2,
        y=1,
        yref="paper",
        yanchor="bottom",
        text=f"typical decode step {band_ms[0]:g}–{band_ms[1]:g} ms",
        showarrow=False,
        font={"size": 11},
    )
    fig.add_bar(
        y=["KV transfer", "Decode step"],
        x=[transfer_ms, step_ms],
        orientation="h",
        text=[_ms_label(transfer_ms, 2), _ms_label(step_ms)],
        textposition="outside",
        cliponaxis=False,
        marker_color=[SEGMENT_COLORS["KV transfer"], SEGMENT_COLORS["First decode step"]],
        hovertemplate="%{y}: %{x:,.2f} ms<extra></extra>",
    )
    if k != 1:
        fig.add_vline(x=k * step_ms, line_dash="dash", annotation_text=f"{k:g} × step")
    fig.update_yaxes(autorange="reversed", title=None)
    title = f"KV transfer vs one decode step{' on ' + link if link else ''}"
    fig.update_layout(showlegend=False)
    fig.update_xaxes(range=[0, max(transfer_ms, step_ms, band_ms[1]) * 1.25])
    return _layout(fig, title, "time [ms]", "", height=300)


@_finished
def figure_batch_sweep(df: pd.DataFrame, band_ms=DEFAULT_BAND_MS, *, seq_len: int) -> go.Figure:
    """Transfer vs batch per link, log-log, with the decode-step band."""
    fig = _Fig()
    _band_trace(
        fig,
        (df["batch"].min(), df["batch"].max()),
        band_ms,
        f"decode step {band_ms[0]:g}–{band_ms[1]:g} ms",
    )
    for lid, part in _groups(df, "link", ("name", "batch", "transfer_ms")):
        name = part["name"][0]
        fig.add_scatter(
            x=part["batch"],
            y=part["transfer_ms"],
            name=name,
            mode="lines+markers",
            line_color=link_color(lid),
            hovertemplate=f"{name}<br>batch %{{x:,}}<br>transfer %{{y:,.2f}} ms<extra></extra>",
        )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    return _layout(
        fig,
        f"KV transfer time vs batch at {seq_len:,} tokens",
        "batch [requests, log scale]",
        "transfer time [ms, log scale]",
    )


@_finished
def figure_seq_sweep(
    curves: pd.DataFrame, critical: pd.DataFrame, *, threshold_ms: float, title: str
) -> go.Figure:
    """Transfer vs sequence length per link, the threshold line, critical S marked."""
    fig = _Fig()
    for lid, part in _groups(curves, "link", ("seq_len", "transfer_ms")):
        name = link_name(lid)
        fig.add_scatter(
            x=part["seq_len"],
            y=part["transfer_ms"],
            name=name,
            mode="lines",
            line_color=link_color(lid),
            hovertemplate=f"{name}<br>%{{x:,}} tokens<br>transfer %{{y:,.2f}} ms<extra></extra>",
        )
    _threshold_trace(
        fig,
        (curves["seq_len"].min(), curves["seq_len"].max()),
        threshold_ms,
        f"threshold {threshold_ms:,.1f} ms",
    )
    hits = critical.dropna(subset=["critical_seq_len"])
    if len(hits):
        fig.add_scatter(
            x=hits["critical_seq_len"],
            y=[threshold_ms] * len(hits),
            mode="markers",
            name="critical length",
            marker={
                "size": 11,
                "symbol": "diamond",
                "color": [link_color(i) for i in hits["link"]],
                "line": {"width": 1, "color": "#111827"},
            },
            customdata=[link_name(i) for i in hits["link"]],
            hovertemplate="%{customdata}: critical at %{x:,} tokens<extra></extra>",
        )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    return _layout(
        fig, title, "sequence length [tokens, log scale]", "exposed transfer time [ms, log scale]"
    )


@_finished
def figure_models_seq(df: pd.DataFrame, *, threshold_ms: float, link: str) -> go.Figure:
    """Transfer vs S for several models on one link; dash style by attention layout."""
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    fig = _Fig()
    for n, (mid, part) in enumerate(_groups(df, "model", ("attention", "seq_len", "transfer_ms"))):
        layout = part["attention"][0]
        fig.add_scatter(
            x=part["seq_len"],
            y=part["transfer_ms"],
            name=f"{mid} ({layout})",
            mode="lines",
            line={"color": LAYOUT_COLORS.get(layout, "#475569"), "dash": dashes[n % len(dashes)]},
            hovertemplate=f"{mid} ({layout})<br>%{{x:,}} tokens<br>"
            "transfer %{y:,.2f} ms<extra></extra>",
        )
    _threshold_trace(
        fig,
        (df["seq_len"].min(), df["seq_len"].max()),
        threshold_ms,
        f"threshold {threshold_ms:,.1f} ms",
    )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    return _layout(
        fig,
        f"Attention layouts compared on {link}",
        "sequence length [tokens, log scale]",
        "transfer time [ms, log scale]",
    )


@_finished
def figure_timeline(tl: pd.DataFrame, *, title: str) -> go.Figure:
    """Gantt of prefill compute, KV transfer chunks and the first decode step [ms]."""
    colors = {
        "Prefill compute": SEGMENT_COLORS["Prefill"],
        "KV transfer": SEGMENT_COLORS["KV transfer"],
        "Decode": SEGMENT_COLORS["First decode step"],
    }
    fig = _Fig()
    for lane, part in _groups(tl, "lane", ("start_ms", "end_ms", "label")):
        fig.add_bar(
            y=[lane] * len(part["label"]),
            x=part["end_ms"] - part["start_ms"],
            base=part["start_ms"],
            orientation="h",
            name=lane,
            marker_color=colors.get(lane, "#64748b"),
            # a white edge separates chunks; on 80 sub-pixel chunks it would wash them out
            marker_line={"width": 0.5 if len(part["label"]) <= 16 else 0, "color": "white"},
            customdata=list(zip(part["label"], part["start_ms"], part["end_ms"], strict=True)),
            hovertemplate="%{customdata[0]}<br>%{customdata[1]:,.2f} → %{customdata[2]:,.2f} ms"
            "<extra></extra>",
        )
    fig.update_layout(barmode="overlay", showlegend=False)
    fig.update_yaxes(
        autorange="reversed",
        title=None,
        categoryorder="array",
        categoryarray=["Prefill compute", "KV transfer", "Decode"],
    )
    return _layout(fig, title, "time since the request arrived [ms]", "", height=260)


@_finished
def figure_bytes_per_token(
    df: pd.DataFrame, *, highlight: str | None = None, kv_dtype: str = "fp16"
) -> go.Figure:
    """KV bytes per token across models (log bars), coloured by attention layout."""
    d = df.sort_values("bytes_per_token_at_seq", ascending=False)
    fig = _Fig()
    for layout, part in _groups(
        d, "attention", ("model", "bytes_per_token_at_seq", "seq_len", "bytes_per_token_short")
    ):
        fig.add_bar(
            x=part["model"],
            y=part["bytes_per_token_at_seq"],
            name=layout,
            marker_color=LAYOUT_COLORS.get(layout, "#64748b"),
            marker_line={
                "width": [3 if m == highlight else 0 for m in part["model"]],
                "color": "#111827",
            },
            customdata=list(zip(part["seq_len"], part["bytes_per_token_short"], strict=True)),
            hovertemplate="%{x}<br>%{y:,.0f} B/token at %{customdata[0]:,} tokens"
            "<br>%{customdata[1]:,.0f} B/token while every layer holds all tokens"
            "<extra>" + layout + "</extra>",
        )
    fig.update_yaxes(type="log", dtick=1)
    fig.update_xaxes(categoryorder="array", categoryarray=list(d["model"]), tickangle=-45)
    seq = int(d["seq_len"].max())
    return _layout(
        fig,
        f"KV bytes per token ({kv_dtype}) averaged over a {seq:,}-token prompt",
        "",
        "bytes per token [B, log scale]",
        height=480,
    )


REGION_COLORS = {"too short": "#94a3b8", "gains": "#16a34a", "transfer-bound": "#dc2626"}
REGION_NAMES = ("too short", "gains", "transfer-bound")


@_finished
def figure_traffic_histogram(
    tokens, weights, region, *, min_seq_len: int, critical: int | None, bins: int = 60
) -> go.Figure:
    """Requests per log-spaced length bin, stacked by region, with the two boundaries marked.

    ``tokens``/``weights`` are the distinct moved-token counts and their request counts;
    ``region`` is 0/1/2 (too short / gains / transfer-bound) per distinct length.
    """
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    edges = np.unique(np.geomspace(1, max(t.max() * 1.001, 2), bins + 1))
    fig = _Fig()
    for r, name in enumerate(REGION_NAMES):
        sel = region == r
        counts, _ = np.histogram(t[sel], bins=edges, weights=np.asarray(weights)[sel])
        fig.add_bar(  # from each bin's lower edge across its width: exact on a log axis
            x=edges[:-1],
            y=counts,
            width=np.diff(edges),
            offset=0,
            name=name,
            marker_color=REGION_COLORS[name],
            customdata=np.stack([edges[:-1], edges[1:]], axis=1),
            hovertemplate=f"{name}<br>%{{customdata[0]:,.0f}}–%{{customdata[1]:,.0f}} tokens"
            "<br>%{y:,.0f} requests<extra></extra>",
        )
    fig.update_layout(barmode="stack", bargap=0)
    fig.update_xaxes(type="log", dtick=1)
    marks = [(min_seq_len, f"min {min_seq_len:,} tokens")]
    if critical:
        marks.append((critical, f"critical {critical:,} tokens"))
    for x, label in marks:
        if x and x > 0:
            fig.add_vline(x=float(x), line_dash="dash", line_color="#475569")  # data units
            fig.add_annotation(
                x=float(np.log10(x)),
                y=1,
                yref="paper",
                yanchor="bottom",
                text=label,
                showarrow=False,
                font={"size": 11},
            )
    return _layout(
        fig,
        "Request lengths by region (tokens that must move)",
        "tokens per request [log scale]",
        "requests",
    )


def _ticks_from_zero(top: float, most: int = 8) -> list[float]:
    """Round ticks 0, step, 2·step … up to ``top`` (step 1, 2 or 5 × a power of ten)."""
    if not top > 0:
        return [0.0]
    step = 10.0 ** np.floor(np.log10(top / most))
    step *= next(m for m in (1, 2, 5, 10) if top / (step * m) <= most)
    return [float(f"{v:.6g}") for v in np.arange(0.0, top + step * 1e-9, step)]


def traffic_comparison_frame(rows) -> pd.DataFrame:
    """traffic.comparison rows → a readable table, best first."""
    df = pd.DataFrame(rows)
    df = df.sort_values("fraction_requests_gain", ascending=False)
    return pd.DataFrame(
        {
            "Option": [
                f"{n} + {c.upper() if c != 'none' else 'no compression'}"
                + (" + layer-wise" if lw else "")
                for n, c, lw in zip(
                    df["link_name"], df["compression"], df["layerwise"], strict=True
                )
            ],
            "Requests that gain": df["fraction_requests_gain"].map("{:.1%}".format),
            "Tokens that gain": df["fraction_tokens_gain"].map("{:.1%}".format),
            "Transfer-bound": df["fraction_transfer_bound"].map("{:.1%}".format),
            "Critical length": [
                ("never" if c is None or c != c else f"{int(c):,} tokens")
                for c in df["critical_seq_len"]
            ],
        }
    )


TORNADO_COLORS = {"low": "#60a5fa", "high": "#dc2626"}


@_finished
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
    d = {c: df[c].to_numpy()[order] for c in ("input", lo_col, hi_col, "low_label", "high_label")}
    n_inputs = len(order)
    b = float(base) * scale
    what = "TTFT" if metric == "ttft" else "transfer share of TTFT"
    values = [b, *(d[lo_col] * scale), *(d[hi_col] * scale)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.35 or max(abs(b) * 0.1, 1e-9)
    fig = _Fig()
    for side, col, label_col, width, name in (
        ("low", lo_col, "low_label", 0.7, "low setting (categories: best option)"),
        ("high", hi_col, "high_label", 0.4, "high setting (categories: worst option)"),
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
            name=name,
            marker_color=TORNADO_COLORS[side],
            text=text,
            textposition="outside",
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
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(barmode="overlay")
    rel = df.attrs.get("rel")
    span = f": each input ±{rel:.0%}, categories over all options" if rel else ""
    fig = _layout(
        fig,
        f"What moves the {what}{span}",
        f"{what} [{unit}]",
        "",
        height=max(300, 110 + 36 * n_inputs),
    )
    _legend_on_top(fig, top=100)
    return fig
