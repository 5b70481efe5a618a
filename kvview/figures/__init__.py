"""Plotly figure builders: pure functions of model output, no ``st.*`` calls.

Every figure has a title, axis titles with units and hover text with units.  Each interconnect
keeps one colour everywhere (``link_color``).  Here: TTFT and the transfer against the decode
step (Overview, Mitigations, Compare).  The shared kit (colours, the figure builder, layout
helpers) is in ``.kit``; the sweeps in ``.sweeps``, the traffic figures in
``kvview.figures.traffic``, the tornado in ``kvview.figures.sensitivity`` and the Measured page's
figures in ``kvview.figures.measured``.  All are re-exported here, so pages use
``figures.<name>`` for every chart.
"""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go

from kvmodel.inputs import DEFAULT_BAND_MS
from kvview.figures.kit import (
    BAND_COLOR,
    LAYOUT_COLORS,
    ROW_PX,
    SEGMENT_COLORS,
    Fig,
    base_layout,
    finished,
    groups_of,
    legend_stacked,
    link_color,
    link_name,
    names_above,
    panel_figure,
)
from kvview.figures.measured import (
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
from kvview.figures.sensitivity import TORNADO_COLORS, figure_tornado, figure_tornado_panels
from kvview.figures.sweeps import (
    figure_batch_sweep,
    figure_bytes_per_token,
    figure_models_seq,
    figure_seq_sweep,
    model_layout_label,
)
from kvview.figures.traffic import (
    REGION_COLORS,
    REGION_NAMES,
    figure_traffic_histogram,
    traffic_comparison_frame,
)

__all__ = [  # the builders defined here and those re-exported from the modules above
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
    "figure_overview_panels",
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
    "model_layout_label",
    "traffic_comparison_frame",
]


REQUEST_COLOR = "#a78bfa"  # the framework's per-request cost (API server, tokenizer, P/D proxy)


@finished
def figure_mitigation_panels(table: pd.DataFrame, *, step_ms: float) -> go.Figure:
    """Mitigations page: exposed transfer per option (left) beside its TTFT breakdown (right)."""
    top = figure_option_transfer.unbuilt(table, step_ms=step_ms)
    bottom = figure_ttft.unbuilt(table, title="TTFT per option")
    # stacked, each panel as wide as the page: side by side, their headings, legend and axis
    # titles ran into each other on a phone (and the headings crowded at 1280 px)
    return panel_figure([top, bottom], title="What each option changes", rows=True)


@finished
def figure_ttft(table: pd.DataFrame, *, title: str = "Time to first token") -> go.Figure:
    """Stacked horizontal bars per option: the framework's request cost (when any), prefill,
    exposed transfer (+codec), first decode step [ms]; they add up to the TTFT.

    ``table`` needs columns option, prefill_ms, exposed_transfer_ms, decode_step_ms, ttft_ms,
    and framework_request_ms when a framework charges one.
    """
    fig = Fig()
    parts = (
        ("Framework/request", "framework_request_ms"),
        ("Prefill", "prefill_ms"),
        ("KV transfer", "exposed_transfer_ms"),
        ("First decode step", "decode_step_ms"),
    )
    colors = {**SEGMENT_COLORS, "Framework/request": REQUEST_COLOR}
    for name, col in parts:
        if col not in table or not (table[col] > 0).any():
            continue  # no such cost (framework none, an older table)
        fig.add_bar(
            y=table["option"],
            x=table[col],
            name=name,
            orientation="h",
            marker_color=colors[name],
            customdata=table["ttft_ms"],
            hovertemplate=f"{name}: %{{x:,.1f}} ms<br>TTFT: %{{customdata:,.1f}} ms"
            "<extra>%{y}</extra>",
        )
    fig.update_layout(barmode="stack")
    if fig.data:  # each bar's total at its end: the TTFT, readable without hovering
        ttft = [float(v) for v in table["ttft_ms"]]
        fig.data[-1].update(text=[f"{v:,.1f} ms" if v == v else "" for v in ttft],
                            textposition="outside", cliponaxis=False)  # fmt: skip
        top = max((v for v in ttft if v == v), default=0.0)
        if top > 0:
            fig.update_xaxes(range=[0, 1.18 * top])  # room for the label past the longest bar
    names_above(fig, table["option"])
    base_layout(fig, title, "time since the request arrived [ms]", "")
    legend_stacked(fig)
    fig.update_layout(height=fig.layout["margin"]["t"] + 70 + ROW_PX * len(table))
    return fig


@finished
def figure_option_transfer(table: pd.DataFrame, *, step_ms: float) -> go.Figure:
    """Exposed transfer (+ quantize/dequantize) per option against one decode step [ms]."""
    fig = Fig()
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
        showlegend=False,
        text=[f"{v:,.2f} ms" for v in xs],
        constraintext="none",
        # ... carries its label inside, so no label sits on the step line
        textposition=["inside" if i else "outside" for i in inside],
        insidetextanchor="end",
        cliponaxis=False,
        hovertemplate="%{y}: exposed transfer %{x:,.3f} ms<extra></extra>",
    )
    fig.add_vline(x=step_ms, line_dash="dash", line_color="#475569", layer="below")
    fig.add_scatter(  # the step line's legend entry (a note beside the line ran into titles)
        x=[None],
        y=[None],
        mode="lines",
        line={"color": "#475569", "dash": "dash"},
        name=f"one decode step ({step_ms:,.1f} ms)",
    )
    fig.update_xaxes(range=[0, top])
    names_above(fig, table["option"])
    base_layout(fig, "Exposed transfer per option", "exposed transfer [ms]", "")
    legend_stacked(fig)
    fig.update_layout(height=fig.layout["margin"]["t"] + 70 + ROW_PX * len(table))
    return fig


def _ms_label(ms: float, digits: int = 1) -> str:
    """A bar label from milliseconds: in s from ten seconds on, so it fits beside its bar."""
    return f"{ms / 1e3:,.1f} s" if abs(ms) >= 10_000 else f"{ms:,.{digits}f} ms"


@finished
def figure_ttft_waterfall(prefill_ms: float, transfer_ms: float, decode_ms: float,
                          request_ms: float = 0.0) -> go.Figure:  # fmt: skip
    """TTFT as a waterfall [ms]: the framework's per-request cost (when any), the prefill, the
    exposed transfer and the first decode step add up to the TTFT bar."""
    parts = [("Framework/request", request_ms, REQUEST_COLOR)] if request_ms > 0 else []
    parts += [
        (name, ms, SEGMENT_COLORS[name])
        for name, ms in (
            ("Prefill", prefill_ms),
            ("KV transfer", transfer_ms),
            ("First decode step", decode_ms),
        )
    ]
    total = sum(ms for _, ms, _ in parts)
    names = [n for n, _, _ in parts] + ["TTFT"]
    widths = [ms for _, ms, _ in parts] + [total]
    bases = [sum(ms for _, ms, _ in parts[:i]) for i in range(len(parts))] + [0.0]
    colors = [c for _, _, c in parts] + ["#475569"]
    fig = Fig()
    fig.add_bar(
        y=names,
        x=widths,
        base=bases,
        orientation="h",
        marker_color=colors,
        text=[_ms_label(w) for w in widths],
        textposition="outside",
        cliponaxis=False,
        # a based bar's %{x} is where it ends: its length comes from customdata (session 19's
        # review: the prefill's hover read 110.31 ms for a 72.6 ms bar)
        customdata=[[b, b + w, w] for b, w in zip(bases, widths, strict=True)],
        hovertemplate="%{y}: %{customdata[2]:,.2f} ms<br>from %{customdata[0]:,.1f} to "
        "%{customdata[1]:,.1f} ms<extra></extra>",
    )
    names_above(fig, names)  # names over the bars: a 390 px plot keeps its width
    fig.update_xaxes(range=[0, total * 1.3])
    fig.update_layout(showlegend=False)
    # a row per bar with room for its name above it (a phone's narrow plot overlaps them
    # otherwise: tests/e2e/test_phone.py)
    return base_layout(fig, "TTFT waterfall", "time since the request arrived [ms]", "",
                       height=300 + 55 * (len(names) - 4))  # fmt: skip


@finished
def figure_overview_panels(transfer_ms: float, step_ms: float, prefill_ms: float,
                           request_ms: float = 0.0, *, link: str = "", k: float = 1.0,
                           band_ms=DEFAULT_BAND_MS) -> go.Figure:  # fmt: skip
    """Overview: the transfer against one decode step (top) over the TTFT waterfall (bottom),
    as one chart: the browser draws one plotly figure instead of two on every input change
    (~25 ms each on 2 CPUs; bench/README.md, Session 21). Stacked, each panel as wide as the
    page (side by side, a phone's panels were under 200 px wide)."""
    top = figure_transfer_vs_step.unbuilt(transfer_ms, step_ms, band_ms, k=k, band_in_axis=True)
    bottom = figure_ttft_waterfall.unbuilt(prefill_ms, transfer_ms, step_ms, request_ms)
    title = f"KV transfer and TTFT{' on ' + link if link else ''}"
    return panel_figure([top, bottom], title=title, rows=True)


@finished
def figure_transfer_vs_step(
    transfer_ms: float, step_ms: float, band_ms=DEFAULT_BAND_MS, *, link: str = "", k: float = 1.0,
    band_in_axis: bool = False,
) -> go.Figure:
    """One bar for the exposed transfer against the decode step and the usual band [ms].
    ``band_in_axis``: the band is named in the x axis's title, not in a note above the plot
    (a panel of ``figure_overview_panels``, whose heading sits where the note would)."""
    fig = Fig()
    fig.add_vrect(x0=band_ms[0], x1=band_ms[1], fillcolor=BAND_COLOR, line_width=0, layer="below")
    band = f"typical decode step {band_ms[0]:g}–{band_ms[1]:g} ms"
    if not band_in_axis:
        fig.add_annotation(  # from the band's left edge: centred on a band near 0 of a long
            x=band_ms[0],  # axis, it ran past the plot's left edge ("pical decode step")
            xanchor="left",
            y=1,
            yref="paper",
            yanchor="bottom",
            text=band,
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
    names_above(fig, ["KV transfer", "Decode step"])  # over the bars, as the waterfall's
    title = f"KV transfer vs one decode step{' on ' + link if link else ''}"
    fig.update_layout(showlegend=False)
    fig.update_xaxes(range=[0, max(transfer_ms, step_ms, band_ms[1]) * 1.25])
    xtitle = f"time [ms]; shaded: {band}" if band_in_axis else "time [ms]"
    return base_layout(fig, title, xtitle, "", height=300)


@finished
def figure_timeline(tl: pd.DataFrame, *, title: str) -> go.Figure:
    """Gantt of the framework's request cost, prefill compute, KV transfer chunks and the first
    decode step [ms]."""
    colors = {
        "Framework/request": REQUEST_COLOR,
        "Prefill compute": SEGMENT_COLORS["Prefill"],
        "KV transfer": SEGMENT_COLORS["KV transfer"],
        "Decode": SEGMENT_COLORS["First decode step"],
    }
    fig = Fig()
    for lane, part in groups_of(tl, "lane", ("start_ms", "end_ms", "label")):
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
    order = ("Framework/request", "Prefill compute", "KV transfer", "Decode")
    lanes = [n for n in order if n in set(tl["lane"])]
    lanes += [n for n in dict.fromkeys(tl["lane"]) if n not in lanes]
    fig.update_yaxes(categoryorder="array", categoryarray=lanes)
    names_above(fig, lanes)  # lane names over the bars: a 390 px plot keeps its width
    return base_layout(fig, title, "time since the request arrived [ms]", "", height=260)
