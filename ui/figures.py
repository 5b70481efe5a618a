"""Plotly figure builders: pure functions of model output, no ``st.*`` calls.

Every figure has a title, axis titles with units and hover text with units.  Each interconnect
keeps one colour everywhere (``link_color``).
"""

from __future__ import annotations

import functools

import numpy as np
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


_COMPOUND = {"marker", "line", "xaxis", "yaxis", "legend", "title", "hoverlabel", "font",
             "textfont", "error"}  # fmt: skip


def _plain(value):
    """pandas columns as numpy arrays: plotly converts pandas through narwhals (slow) and
    deep-copies Python lists element by element when the chart is sent."""
    if isinstance(value, (pd.Series, pd.Index)):
        return value.to_numpy()
    return value


def _groups(df: pd.DataFrame, key: str, columns: tuple[str, ...]):
    """``(value, {column: array})`` per distinct ``key`` value, in first-seen order.

    What ``df.groupby(key, sort=False)`` gives a chart, without building a sub-frame per group
    (each column access on one costs about 0.3 ms on pandas 3).
    """
    keys = df[key].to_numpy(dtype=object)
    cols = {c: df[c].to_numpy() for c in columns}
    for value in dict.fromkeys(keys):
        mask = keys == value
        yield value, {c: v[mask] for c, v in cols.items()}


def _expand(kwargs: dict) -> dict:
    """Plotly's magic underscores (``marker_color``) as nested dicts (``marker.color``)."""
    out: dict = {}
    for key, value in kwargs.items():
        value = _plain(value)
        parts = key.split("_")
        if len(parts) > 1 and parts[0] in _COMPOUND:
            node = out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        else:
            _merge(out, {key: value})
    return out


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


class _Fig:
    """Collects traces and layout as plain dicts; ``build`` makes one ``go.Figure`` at the end.

    The incremental ``go.Figure`` API validates and re-parses on every call (20-30 ms for a
    small chart); one constructor call over plain dicts costs a few ms.  It offers just the
    calls the builders here use.
    """

    def __init__(self):
        self.data: list[dict] = []
        self.layout: dict = {}

    def _trace(self, kind: str, kwargs: dict) -> None:
        self.data.append({"type": kind, **_expand(kwargs)})

    def add_bar(self, **kw):
        self._trace("bar", kw)

    def add_scatter(self, **kw):
        self._trace("scatter", kw)

    def add_histogram(self, **kw):
        self._trace("histogram", kw)

    def update_layout(self, **kw):
        _merge(self.layout, _expand(kw))

    def update_xaxes(self, **kw):
        _merge(self.layout.setdefault("xaxis", {}), _expand(kw))

    def update_yaxes(self, **kw):
        _merge(self.layout.setdefault("yaxis", {}), _expand(kw))

    def add_annotation(self, **kw):
        self.layout.setdefault("annotations", []).append(_expand(kw))

    def add_vline(self, x, annotation_text=None, annotation_position=None, **kw):
        shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0,
                 "y1": 1}  # fmt: skip
        self.layout.setdefault("shapes", []).append(_merge(shape, _expand(kw)))
        if annotation_text:
            self.add_annotation(x=x, y=1, yref="paper", yanchor="bottom", showarrow=False,
                                text=annotation_text)  # fmt: skip

    def add_vrect(self, x0, x1, **kw):
        shape = {"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0,
                 "y1": 1}  # fmt: skip
        self.layout.setdefault("shapes", []).append(_merge(shape, _expand(kw)))

    def build(self) -> go.Figure:
        return go.Figure({"data": self.data, "layout": self.layout})


def _finished(builder):
    """Decorator: a builder that fills a ``_Fig`` returns the built ``go.Figure``."""

    @functools.wraps(builder)
    def wrapper(*args, **kwargs):
        out = builder(*args, **kwargs)
        return out.build() if isinstance(out, _Fig) else out

    wrapper.unbuilt = builder  # the plain-dict figure, for combining into panels
    return wrapper


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


def _legend_on_top(fig: go.Figure, *, top: int = 90) -> None:
    """A one-row legend between the title and the plot (for charts as wide as the page)."""
    fig.update_layout(
        legend={"orientation": "h", "yanchor": "bottom", "y": 1.0, "x": 0, "xanchor": "left"},
        margin={"t": top},
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


def _panels(figs: list[_Fig], *, title: str, rows: bool, gap: float = 0.1) -> _Fig:
    """Several builders' figures as the panels of one figure.

    One chart element instead of several: plotly builds and Streamlit serialises each figure
    in about 10 ms, so a page redrawn on every input change pays that once.  ``rows``: panels
    stacked, each with its own axes; otherwise side by side on one shared y axis (the option
    labels are written once).  Each panel's title becomes a heading above it; its shapes and
    annotations follow its axes.
    """
    out = _Fig()
    n = len(figs)
    heights = [int(fig.layout.get("height", 420)) for fig in figs]
    top = max(int(fig.layout.get("margin", {}).get("t", 60)) for fig in figs) + 30
    plot_px = (sum(heights) if rows else max(heights)) - top - 10
    if rows:  # room for the axis title above and the next panel's heading, in pixels
        gap = 120 / plot_px
    share = [h / sum(heights) for h in heights] if rows else [1 / n] * n
    span = 1 - gap * (n - 1)
    edges, pos = [], 1.0 if rows else 0.0
    for k in range(n):
        size = share[k] * span
        lo, hi = (pos - size, pos) if rows else (pos, pos + size)
        edges.append((min(max(round(lo, 6), 0.0), 1.0), min(max(round(hi, 6), 0.0), 1.0)))
        pos = pos - size - gap if rows else pos + size + gap
    for k, fig in enumerate(figs):
        suffix = "" if k == 0 else str(k + 1)
        xname, yname = f"x{suffix}", (f"y{suffix}" if rows else "y")
        lay = fig.layout
        hide_legend = lay.get("showlegend") is False or (rows and k > 0)
        for trace in fig.data:
            trace = dict(trace, xaxis=xname, yaxis=yname)
            if hide_legend and not str(trace.get("name", "")).startswith("base"):
                trace["showlegend"] = False
            out.data.append(trace)
        xaxis = dict(lay.get("xaxis", {}), anchor=yname)
        yaxis = dict(lay.get("yaxis", {}))
        lo, hi = edges[k]
        if rows:
            xaxis["anchor"] = yname
            out.layout[f"xaxis{suffix}"] = xaxis
            out.layout[f"yaxis{suffix}"] = dict(yaxis, domain=[lo, hi], anchor=xname)
            ref = {"xref": xname, "yref": f"{yname} domain"}
        else:
            out.layout[f"xaxis{suffix}"] = dict(xaxis, domain=[lo, hi])
            if k == 0:
                out.layout["yaxis"] = yaxis
            ref = {"xref": xname, "yref": "paper"}
        for shape in lay.get("shapes", []):
            out.layout.setdefault("shapes", []).append(
                dict(
                    shape,
                    xref=ref["xref"],
                    yref=ref["yref"] if shape.get("yref") == "paper" else shape.get("yref", yname),
                )  # fmt: skip
            )
        for note in lay.get("annotations", []):
            yref = ref["yref"] if note.get("yref") == "paper" else note.get("yref", yname)
            out.layout.setdefault("annotations", []).append(dict(note, xref=xname, yref=yref))
        heading = lay.get("title", {}).get("text")
        if heading:
            out.add_annotation(
                text=f"<b>{heading}</b>", showarrow=False, x=0 if rows else lo, xref="paper",
                y=1, yref=f"{yname} domain" if rows else "paper", xanchor="left",
                yanchor="bottom", yshift=8 if rows else 34, font={"size": 14},
            )  # fmt: skip
        for key in ("barmode", "hoverlabel"):
            if key in lay:
                out.layout[key] = lay[key]
        if "legend" in lay and not hide_legend:  # above its panel (rows: above its heading)
            legend = dict(lay["legend"], x=0 if rows else lo)
            out.layout["legend"] = dict(legend, y=1 + 34 / plot_px) if rows else legend
    out.layout.update(
        title={"text": title, "x": 0, "xanchor": "left"},
        height=sum(heights) if rows else max(heights),
        margin={"l": 10, "r": 10, "t": top + (40 if rows else 0), "b": 10},
    )
    return out


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
    fig.add_bar(
        y=table["option"],
        x=table["exposed_transfer_ms"],
        orientation="h",
        marker_color=SEGMENT_COLORS["KV transfer"],
        name="exposed transfer",
        text=[f"{v:,.2f} ms" for v in table["exposed_transfer_ms"]],
        textposition="auto",  # inside long bars, so a label never sits on the step line
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
        text=[f"{w:,.1f} ms" for w in widths],
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
    transfer_ms: float, step_ms: float, band_ms=(20.0, 50.0), *, link: str = "", k: float = 1.0
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


@_finished
def figure_batch_sweep(df: pd.DataFrame, band_ms=(20.0, 50.0), *, seq_len: int) -> go.Figure:
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
        height=max(300, 110 + 36 * n_inputs),
    )
    _legend_on_top(fig, top=100)
    return fig


# ---- Measured vs model ----------------------------------------------------------------------

MEASURED_COLOR = "#dc2626"
MODEL_COLOR = "#2563eb"
NOMINAL_COLOR = "#475569"


@_finished
def figure_model_vs_measured(
    rows, *, title: str = "Model vs measured, per request", unit: str = "ms"
) -> go.Figure:
    """Grouped bars of (label, model seconds, measured seconds) in ``unit`` ("ms" or "µs"); a
    missing side is left out.  Log y when the values span more than ten times (a TTFT and a
    few-ms gap)."""
    scale = {"ms": 1e3, "µs": 1e6}[unit]
    fig = _Fig()
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
    fig = _layout(fig, title, "", f"time [{unit}{', log scale' if log else ''}]", height=400)
    _legend_on_top(fig, top=90)
    return fig


@_finished
def figure_gap_distribution(
    buckets=(), samples=(), *, model_s: float | None = None, source: str = ""
) -> go.Figure:
    """How the measured transfer gap is spread: a histogram's buckets (cumulative
    ``(upper bound [s], count)``, ``+Inf`` last) or a gauge's samples [s], on a log time axis
    [ms], with the model's exposed transfer marked."""
    fig = _Fig()
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
    fig.add_bar(
        x=np.sqrt(lo_ms * hi_ms),
        y=counts,
        width=hi_ms - lo_ms,
        name="measured transfers",
        marker_color=MEASURED_COLOR,
        marker_line={"color": "white", "width": 1},
        customdata=np.stack([lo_ms, hi_ms], axis=1),
        hovertemplate="%{customdata[0]:,.3g}–%{customdata[1]:,.3g} ms: %{y:,.0f} transfers"
        "<extra></extra>",
    )
    fig.update_layout(bargap=0)
    fig.update_xaxes(type="log", dtick="D2")  # 1, 2, 5, 10, 20, 50 …
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
    return _layout(fig, title, "transfer gap [ms, log scale]", "transfers", height=380)


@_finished
def figure_bandwidth_fit(sizes, bandwidths, fit, *, nominal: float, link: str) -> go.Figure:
    """perftest points (message bytes, bandwidth B/s) with the fitted curve and the link's
    nominal bandwidth, in GB/s over a log message-size axis."""
    x = np.asarray(sizes, dtype=float)
    grid = np.geomspace(x.min(), x.max(), 200)
    fig = _Fig()
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
        name=f"{link} nominal {nominal / 1e9:,.4g} GB/s",
        line={"color": NOMINAL_COLOR, "dash": "dash", "width": 1.5},
        hovertemplate=f"{link} nominal: %{{y:,.4g}} GB/s<extra></extra>",
    )
    fig.update_xaxes(type="log")
    fig = _layout(
        fig,
        "Measured bandwidth by message size, with the fit",
        "message size [bytes, log scale]",
        "bandwidth [GB/s per direction]",
    )
    _legend_on_top(fig, top=90)
    return fig


@_finished
def figure_time_fit(sizes, seconds, fit) -> go.Figure:
    """(bytes, seconds) points with ``t = latency + bytes ÷ bandwidth``, log-log, in µs."""
    x = np.asarray(sizes, dtype=float)
    pos = x[x > 0]
    grid = np.geomspace(pos.min() if pos.size else 1.0, max(x.max(), 2.0), 200)
    fig = _Fig()
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
    fig = _layout(
        fig,
        "Measured transfer time by size, with the fit",
        "transfer size [bytes, log scale]",
        "time [µs, log scale]",
    )
    _legend_on_top(fig, top=90)
    return fig


@_finished
def figure_efficiency_curve(sizes, bandwidths, fit, *, nominal: float, link: str) -> go.Figure:
    """Achieved ÷ nominal bandwidth [%] by message size: measured points and the fit."""
    x = np.asarray(sizes, dtype=float)
    pos = x[x > 0]
    grid = np.geomspace(pos.min() if pos.size else 1.0, max(x.max(), 2.0), 200)
    fig = _Fig()
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
    fig = _layout(
        fig,
        f"Efficiency by message size: achieved ÷ {link}'s nominal {nominal / 1e9:,.4g} GB/s",
        "message size [bytes, log scale]",
        "efficiency [% of nominal]",
    )
    _legend_on_top(fig, top=90)
    return fig


@_finished
def figure_transfer_durations(durations_s, *, model_s: float | None = None) -> go.Figure:
    """Histogram of profiled per-transfer durations [µs] with the model's per-layer time."""
    d = np.asarray(durations_s, dtype=float) * 1e6
    fig = _Fig()
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
    return _layout(
        fig,
        "Profiled transfer durations",
        "duration per transfer [µs]",
        "transfers",
        height=380,
    )
