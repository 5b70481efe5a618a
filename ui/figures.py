"""Plotly figure builders: pure functions of model output, no ``st.*`` calls.

Every figure has a title, axis titles with units and hover text with units.  Each interconnect
keeps one colour everywhere (``link_color``).
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kvmodel import catalog

_LINK_PALETTE = {
    "nvlink3": "#16a34a",
    "nvlink4": "#15803d",
    "nvlink5": "#166534",
    "pcie4": "#a16207",
    "pcie5": "#ca8a04",
    "pcie6": "#eab308",
    "ib-hdr": "#7c3aed",
    "ib-ndr": "#2563eb",
    "ib-xdr": "#0891b2",
    "25gbe": "#9f1239",
    "100gbe": "#dc2626",
    "200gbe": "#ea580c",
    "400gbe": "#f97316",
    "800gbe": "#fb923c",
    "aws-efa-p4d": "#db2777",
    "aws-efa-p5": "#c026d3",
    "infinity-fabric": "#0d9488",
    "custom": "#475569",
}
_FALLBACK = ("#64748b", "#0f766e", "#b45309", "#6d28d9", "#be123c")
LAYOUT_COLORS = {
    "mha": "#dc2626",
    "gqa": "#2563eb",
    "mqa": "#0891b2",
    "mla": "#16a34a",
    "sliding": "#ca8a04",
    "chunked": "#ea580c",
    "sliding+global": "#a16207",
    "hybrid-linear": "#7c3aed",
    "hybrid-mamba": "#db2777",
}
SEGMENT_COLORS = {
    "Prefill": "#94a3b8",
    "KV transfer": "#dc2626",
    "Quantize/dequantize": "#f59e0b",
    "First decode step": "#2563eb",
}
BAND_COLOR = "rgba(37, 99, 235, 0.18)"


def link_color(link_id: str) -> str:
    base = link_id.split("@")[0]
    if base in _LINK_PALETTE:
        return _LINK_PALETTE[base]
    return _FALLBACK[sum(map(ord, base)) % len(_FALLBACK)]


def link_name(link_id: str) -> str:
    try:
        return catalog.get_link(link_id).name
    except ValueError:
        return link_id


def _band_trace(fig: go.Figure, x_range, band_ms, label: str) -> None:
    """A horizontal band as a filled trace (data coordinates: safe on log axes)."""
    lo, hi = band_ms
    x0, x1 = x_range
    fig.add_scatter(
        x=[x0, x1, x1, x0, x0],
        y=[lo, lo, hi, hi, lo],
        fill="toself",
        mode="none",
        fillcolor=BAND_COLOR,
        name=label,
        hoverinfo="skip",
    )


def _threshold_trace(fig: go.Figure, x_range, y_ms: float, label: str) -> None:
    fig.add_scatter(
        x=list(x_range),
        y=[y_ms, y_ms],
        mode="lines",
        name=label,
        line={"color": "#475569", "dash": "dash", "width": 1.5},
        hovertemplate=f"{label}<extra></extra>",
    )


def _layout(fig: go.Figure, title: str, x: str, y: str, *, height: int = 420) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        legend={"orientation": "v", "yanchor": "top", "y": 1, "x": 1.02, "traceorder": "normal"},
        hoverlabel={"namelength": -1},
    )
    return fig


def figure_ttft(table: pd.DataFrame, *, title: str = "Time to first token") -> go.Figure:
    """Stacked horizontal bars per option: prefill, exposed transfer (+codec), first decode [ms].

    ``table`` needs columns option, prefill_ms, exposed_transfer_ms, decode_step_ms, ttft_ms.
    """
    fig = go.Figure()
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
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"},
        margin={"t": 90},
    )
    return fig


def figure_option_transfer(table: pd.DataFrame, *, step_ms: float) -> go.Figure:
    """Exposed transfer (+ quantize/dequantize) per option against one decode step [ms]."""
    fig = go.Figure()
    fig.add_bar(
        y=table["option"],
        x=table["exposed_transfer_ms"],
        orientation="h",
        marker_color=SEGMENT_COLORS["KV transfer"],
        name="exposed transfer",
        text=[f"{v:,.2f} ms" for v in table["exposed_transfer_ms"]],
        textposition="outside",
        cliponaxis=False,
        hovertemplate="%{y}: exposed transfer %{x:,.3f} ms<extra></extra>",
    )
    fig.add_vline(x=step_ms, line_dash="dash", line_color="#475569")
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
    top = max(float(table["exposed_transfer_ms"].max()), step_ms)
    fig.update_xaxes(range=[0, top * 1.3])
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(showlegend=False)
    return _layout(
        fig,
        "What the decode node waits for, per option",
        "exposed transfer [ms]",
        "",
        height=max(260, 80 + 40 * len(table)),
    )


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
    fig = go.Figure(
        go.Bar(
            y=names,
            x=widths,
            base=bases,
            orientation="h",
            marker_color=colors,
            text=[f"{w:,.1f} ms" for w in widths],
            textposition="outside",
            cliponaxis=False,
            customdata=[[b, b + w] for b, w in zip(bases, widths, strict=True)],
            hovertemplate="%{y}: %{x:,.2f} ms<br>from %{customdata[0]:,.1f} to "
            "%{customdata[1]:,.1f} ms<extra></extra>",
        )
    )
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_xaxes(range=[0, total * 1.3])
    fig.update_layout(showlegend=False)
    return _layout(fig, "TTFT waterfall", "time since the request arrived [ms]", "", height=300)


def figure_transfer_vs_step(
    transfer_ms: float, step_ms: float, band_ms=(20.0, 50.0), *, link: str = "", k: float = 1.0
) -> go.Figure:
    """One bar for the exposed transfer against the decode step and the usual band [ms]."""
    fig = go.Figure()
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
        text=[f"{transfer_ms:,.2f} ms", f"{step_ms:,.1f} ms"],
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


def figure_batch_sweep(df: pd.DataFrame, band_ms=(20.0, 50.0), *, seq_len: int) -> go.Figure:
    """Transfer vs batch per link, log-log, with the decode-step band."""
    fig = go.Figure()
    _band_trace(
        fig,
        (df["batch"].min(), df["batch"].max()),
        band_ms,
        f"decode step {band_ms[0]:g}–{band_ms[1]:g} ms",
    )
    for lid, part in df.groupby("link", sort=False):
        name = part["name"].iloc[0]
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


def figure_seq_sweep(
    curves: pd.DataFrame, critical: pd.DataFrame, *, threshold_ms: float, title: str
) -> go.Figure:
    """Transfer vs sequence length per link, the threshold line, critical S marked."""
    fig = go.Figure()
    for lid, part in curves.groupby("link", sort=False):
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


def figure_models_seq(df: pd.DataFrame, *, threshold_ms: float, link: str) -> go.Figure:
    """Transfer vs S for several models on one link; dash style by attention layout."""
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    fig = go.Figure()
    for n, (mid, part) in enumerate(df.groupby("model", sort=False)):
        layout = part["attention"].iloc[0]
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


def figure_timeline(tl: pd.DataFrame, *, title: str) -> go.Figure:
    """Gantt of prefill compute, KV transfer chunks and the first decode step [ms]."""
    colors = {
        "Prefill compute": SEGMENT_COLORS["Prefill"],
        "KV transfer": SEGMENT_COLORS["KV transfer"],
        "Decode": SEGMENT_COLORS["First decode step"],
    }
    fig = go.Figure()
    for lane, part in tl.groupby("lane", sort=False):
        fig.add_bar(
            y=[lane] * len(part),
            x=part["end_ms"] - part["start_ms"],
            base=part["start_ms"],
            orientation="h",
            name=lane,
            marker_color=colors.get(lane, "#64748b"),
            marker_line={"width": 0.5, "color": "white"},
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


def figure_bytes_per_token(
    df: pd.DataFrame, *, highlight: str | None = None, kv_dtype: str = "fp16"
) -> go.Figure:
    """KV bytes per token across models (log bars), coloured by attention layout."""
    d = df.sort_values("bytes_per_token_at_seq", ascending=False)
    fig = go.Figure()
    for layout, part in d.groupby("attention", sort=False):
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


BAND_CELL = {
    "below": "rgba(22, 163, 74, 0.25)",
    "within": "rgba(234, 179, 8, 0.30)",
    "above": "rgba(220, 38, 38, 0.28)",
}


def style_band_table(table: pd.DataFrame, band_ms=(20.0, 50.0)):
    """Styler for a link × batch table: cells green below, amber within, red above the band."""
    from kvmodel.sweeps import decode_band_verdict

    cols = [c for c in table.columns if c.startswith("batch ")]
    shown = table.drop(columns=["link"]).rename(
        columns={"name": "Interconnect", **{c: f"{c} [ms]" for c in cols}}
    )
    ms_cols = [f"{c} [ms]" for c in cols]
    return (
        shown.style.format({c: "{:,.1f}" for c in ms_cols} | {"GB/s per direction": "{:,.4g}"})
        .map(
            lambda v: f"background-color: {BAND_CELL[decode_band_verdict(v, band_ms)]}",
            subset=ms_cols,
        )
        .hide(axis="index")
    )


REGION_COLORS = {"too short": "#94a3b8", "gains": "#16a34a", "transfer-bound": "#dc2626"}
REGION_NAMES = ("too short", "gains", "transfer-bound")


def figure_traffic_histogram(
    tokens, weights, region, *, min_seq_len: int, critical: int | None, bins: int = 60
) -> go.Figure:
    """Requests per log-spaced length bin, stacked by region, with the two boundaries marked.

    ``tokens``/``weights`` are the distinct moved-token counts and their request counts;
    ``region`` is 0/1/2 (too short / gains / transfer-bound) per distinct length.
    """
    import numpy as np

    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    edges = np.unique(np.geomspace(1, max(t.max() * 1.001, 2), bins + 1))
    fig = go.Figure()
    for r, name in enumerate(REGION_NAMES):
        sel = region == r
        counts, _ = np.histogram(t[sel], bins=edges, weights=np.asarray(weights)[sel])
        mids = np.sqrt(edges[:-1] * edges[1:])
        fig.add_bar(
            x=mids,
            y=counts,
            width=np.diff(edges),
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


def style_differences(shown: pd.DataFrame, differs: pd.DataFrame):
    """Styler that marks cells differing from the first scenario."""
    return shown.style.apply(
        lambda _: differs.map(
            lambda d: "background-color: rgba(234, 179, 8, 0.28); font-weight: 600" if d else ""
        ),
        axis=None,
    )


TORNADO_COLORS = {"low": "#60a5fa", "high": "#dc2626"}


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
    lo_col, hi_col = (
        ("ttft_low_s", "ttft_high_s") if metric == "ttft" else ("share_low", "share_high")
    )
    d = df.assign(_spread=(df[hi_col] - df[lo_col]).abs())
    d = d.sort_values("_spread", ascending=False, kind="stable")
    b = float(base) * scale
    what = "TTFT" if metric == "ttft" else "transfer share of TTFT"
    values = [b, *(d[lo_col] * scale), *(d[hi_col] * scale)]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.35 or max(abs(b) * 0.1, 1e-9)
    fig = go.Figure()
    for side, col, label_col, width, name in (
        ("low", lo_col, "low_label", 0.7, "low setting (categories: best option)"),
        ("high", hi_col, "high_label", 0.4, "high setting (categories: worst option)"),
    ):
        v = d[col].to_numpy(dtype=float) * scale
        # label a bar only when it is long enough to tell which label belongs to it
        long = abs(v - b) >= 0.01 * (hi - lo)
        text = [lab if ok else "" for lab, ok in zip(d[label_col], long, strict=True)]
        fig.add_bar(
            y=d["input"],
            x=v - b,
            base=[b] * len(d),
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
    fig.update_xaxes(range=[lo - pad, hi + pad])
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(barmode="overlay")
    rel = df.attrs.get("rel")
    span = f": each input ±{rel:.0%}, categories over all options" if rel else ""
    fig = _layout(
        fig,
        f"What moves the {what}{span}",
        f"{what} [{unit}]",
        "",
        height=max(300, 110 + 36 * len(d)),
    )
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"},
        margin={"t": 100},
    )
    return fig
