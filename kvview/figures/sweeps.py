"""Sweep figures: transfer vs batch and vs sequence length per link, attention layouts compared,
KV bytes per token across models (Interconnects, Sequence and Models pages; the report).

Pure functions, no ``st.*`` calls; re-exported by ``kvview.figures``.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kvmodel.inputs import DEFAULT_BAND_MS
from kvview.figures.kit import (
    LAYOUT_COLORS,
    Fig,
    band_trace,
    base_layout,
    finished,
    groups_of,
    link_color,
    link_name,
    threshold_trace,
)


def _line(lid: str, name: str, blocked) -> tuple[str, dict]:
    """A link's legend name and line: dotted and named 'not buildable' when the scenario's TPs
    do not fit its scale-up domain (``blocked``: such link ids), its own colour otherwise."""
    if lid in blocked:
        return f"{name} (not buildable)", {"color": link_color(lid), "dash": "dot", "width": 1.5}
    return name, {"color": link_color(lid)}


@finished
def figure_batch_sweep(
    df: pd.DataFrame, band_ms=DEFAULT_BAND_MS, *, seq_len: int, blocked=()
) -> go.Figure:
    """Transfer vs batch per link, log-log, with the decode-step band; ``blocked``: link ids
    that cannot be built at the scenario's TPs (dotted, named so)."""
    fig = Fig()
    band_trace(
        fig,
        (df["batch"].min(), df["batch"].max()),
        band_ms,
        f"decode step {band_ms[0]:g}–{band_ms[1]:g} ms",
    )
    for lid, part in groups_of(df, "link", ("name", "batch", "transfer_ms")):
        name, line = _line(lid, part["name"][0], blocked)
        fig.add_scatter(
            x=part["batch"],
            y=part["transfer_ms"],
            name=name,
            mode="lines+markers",
            line=line,
            hovertemplate=f"{name}<br>batch %{{x:,}}<br>transfer %{{y:,.2f}} ms<extra></extra>",
        )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    return base_layout(
        fig,
        f"KV transfer time vs batch at {seq_len:,} tokens",
        "batch [requests, log scale]",
        "transfer time [ms, log scale]",
    )


@finished
def figure_seq_sweep(
    curves: pd.DataFrame, critical: pd.DataFrame, *, threshold_ms: float, title: str,
    blocked=(),
) -> go.Figure:  # fmt: skip
    """Transfer vs sequence length per link, the threshold line, critical S marked;
    ``blocked``: link ids that cannot be built at the scenario's TPs (dotted, named so)."""
    fig = Fig()
    for lid, part in groups_of(curves, "link", ("seq_len", "transfer_ms")):
        name, line = _line(lid, link_name(lid), blocked)
        fig.add_scatter(
            x=part["seq_len"],
            y=part["transfer_ms"],
            name=name,
            mode="lines",
            line=line,
            hovertemplate=f"{name}<br>%{{x:,}} tokens<br>transfer %{{y:,.2f}} ms<extra></extra>",
        )
    threshold_trace(
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
    return base_layout(
        fig, title, "sequence length [tokens, log scale]", "exposed transfer time [ms, log scale]"
    )


LAYOUT_NAMES = {"mha": "MHA", "gqa": "GQA", "mla": "MLA"}  # the acronyms as the text writes them


def model_layout_label(model_id: str, layout: str) -> str:
    """'Llama-3.1-70B (GQA)': a model by its display name and attention layout, as the
    Sequence page's legend and its model chips both write it."""
    return f"{_model_name(model_id)} ({LAYOUT_NAMES.get(layout, layout)})"


def _model_name(model_id: str) -> str:
    """A catalog model's display name ('Llama-3.1-70B'), else the id (an imported model)."""
    from kvview.breakdown import catalog_name

    return catalog_name("model", model_id)


@finished
def figure_models_seq(df: pd.DataFrame, *, threshold_ms: float, link: str,
                      threshold_of: str | None = None) -> go.Figure:  # fmt: skip
    """Transfer vs S for several models on one link; dash style by attention layout.
    ``threshold_of``: whose decode step the threshold is (the sidebar's model), named on it."""
    dashes = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
    fig = Fig()
    for n, (mid, part) in enumerate(
        groups_of(df, "model", ("attention", "seq_len", "transfer_ms"))
    ):
        layout = part["attention"][0]
        named = model_layout_label(mid, layout)
        fig.add_scatter(
            x=part["seq_len"],
            y=part["transfer_ms"],
            name=named,
            mode="lines",
            line={"color": LAYOUT_COLORS.get(layout, "#475569"), "dash": dashes[n % len(dashes)]},
            hovertemplate=f"{named}<br>%{{x:,}} tokens<br>transfer %{{y:,.2f}} ms<extra></extra>",
        )
    threshold_trace(
        fig,
        (df["seq_len"].min(), df["seq_len"].max()),
        threshold_ms,
        f"threshold {threshold_ms:,.1f} ms"
        + (f" ({threshold_of}'s decode step)" if threshold_of else ""),
    )
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    return base_layout(
        fig,
        f"Attention layouts compared on {link}",
        "sequence length [tokens, log scale]",
        "transfer time [ms, log scale]",
    )


@finished
def figure_bytes_per_token(
    df: pd.DataFrame, *, highlight: str | None = None, kv_dtype: str = "fp16"
) -> go.Figure:
    """KV bytes per token across models (log bars), coloured by attention layout."""
    d = df.sort_values("bytes_per_token_at_seq", ascending=False)
    fig = Fig()
    for layout, part in groups_of(
        d, "attention", ("model", "bytes_per_token_at_seq", "seq_len", "bytes_per_token_short")
    ):
        fig.add_bar(  # named as the sidebar names them (an imported model by its unique id)
            x=[_model_name(m) for m in part["model"]],
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
    fig.update_xaxes(categoryorder="array", categoryarray=[_model_name(m) for m in d["model"]],
                     tickangle=-45)  # fmt: skip
    seq = int(d["seq_len"].max())
    return base_layout(
        fig,
        f"KV bytes per token ({kv_dtype}), {seq:,}-token prompt",  # fits a phone's chart
        "",
        "mean bytes per token [B, log scale]",  # over the prompt (sliding windows hold less)
        height=480,
    )
