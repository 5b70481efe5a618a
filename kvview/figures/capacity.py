"""Capacity figures: GPUs needed against the request rate, the P:D split, and what binds.

Pure functions of ``kvmodel.capacity.rate_sweep``'s frame (one row per request rate), no
``st.*`` calls.  Every chart has a title, axis titles with units and hover text with units; the
current rate is marked on each.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvview.figures.kit import Fig, base_layout, finished, names_above, panel_figure
from kvview.fmt import fmt_sig

DISAGG_COLOR = "#2563eb"  # disaggregated (prefill + decode pools)
COLOC_COLOR = "#dc2626"  # colocated (chunked prefill)
PREFILL_COLOR = "#94a3b8"  # as the Prefill segment of the TTFT charts (figkit.SEGMENT_COLORS)
DECODE_COLOR = "#2563eb"
SAVES_FILL = "rgba(22, 163, 74, 0.10)"  # rates where disaggregation needs fewer GPUs
LIMIT_COLORS = {  # what binds a pool (kvmodel.capacity plan.limits values)
    "compute": "#64748b",
    "memory": "#7c3aed",
    "tpot": "#ea580c",
    "ttft": "#ca8a04",
    "link": "#dc2626",
    "slo": "#991b1b",
}
LIMIT_NAMES = {
    "compute": "compute",
    "memory": "KV memory",
    "tpot": "TPOT target",
    "ttft": "TTFT target",
    "link": "link",
    "slo": "SLO not met",
}
POOLS = (("colocated_limit", "colocated"), ("decode_limit", "decode"), ("prefill_limit", "prefill"))
RATE_AXIS = "request rate [requests/s, log scale]"


def _rate_marker(fig: Fig, rps: float | None) -> None:
    if rps and rps > 0:
        fig.add_vline(x=float(rps), line_dash="dot", line_color="#111827", line_width=1.5)
        fig.add_annotation(
            x=float(np.log10(rps)),  # annotations on a log axis are placed in log10 units
            y=1,
            yref="paper",
            yanchor="top",
            xanchor="left",
            xshift=4,
            showarrow=False,
            text=f"your rate<br>{fmt_sig(rps, 3)} req/s",
            align="left",
            bgcolor="rgba(255, 255, 255, 0.8)",
            font={"size": 11},
        )


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) index of each run of True in ``mask``."""
    runs, start = [], None
    for i, m in enumerate(mask):
        if m and start is None:
            start = i
        if not m and start is not None:
            runs.append((start, i - 1))
            start = None
    if start is not None:
        runs.append((start, len(mask) - 1))
    return runs


def _rate_axis(fig: Fig, rates) -> None:
    """A log rate axis with ticks at 1, 2 and 5 of each decade, written out in full (plotly's
    own "D2" ticks write 20 and 200 as "2")."""
    r = np.asarray(rates, dtype=float)
    r = r[np.isfinite(r) & (r > 0)]
    if not r.size:
        fig.update_xaxes(type="log")
        return
    lo, hi = float(r.min()) / 1.3, float(r.max()) * 1.3
    vals = [m * 10.0**k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
            for m in (1, 2, 5) if lo <= m * 10.0**k <= hi]  # fmt: skip
    fig.update_xaxes(type="log", tickvals=vals, ticktext=[fmt_sig(v, 3) for v in vals])


def _finish(fig: Fig, rates, rps: float | None, title: str, y_title: str, *,
            height: int) -> Fig:  # fmt: skip
    """What every rate chart ends with: the rate asked marked, the log rate axis, the kit's
    layout and the legend below."""
    _rate_marker(fig, rps)
    _rate_axis(fig, rates)
    base_layout(fig, title, RATE_AXIS, y_title, height=height)  # legend below (kit)
    return fig


def rate_edges(rates: np.ndarray) -> np.ndarray:
    """Cell edges around each rate: geometric midpoints, the ends half a step out."""
    r = np.asarray(rates, dtype=float)
    if len(r) == 1:
        return np.array([r[0] / 1.2, r[0] * 1.2])
    mid = np.sqrt(r[:-1]) * np.sqrt(r[1:])  # not sqrt(a·b): that underflows at 1e-300 req/s
    return np.concatenate([[r[0] * (r[0] / mid[0])], mid, [r[-1] * (r[-1] / mid[-1])]])


def _feasible(sweep: pd.DataFrame, column: str) -> np.ndarray:
    """A sweep's ``meets_slo`` / ``colocated_meets_slo`` column (absent: every rate meets)."""
    if column not in sweep:
        return np.ones(len(sweep), dtype=bool)
    return sweep[column].to_numpy(dtype=bool)


# The unified hover box's title: the rate under the cursor with its unit (plotly.js ≥ 3.1)
RATE_HOVER_TITLE = "%{x:,.3~r} req/s"


def _misses(fig: Fig, r, gpus, mask, name: str, color: str) -> None:
    """Open markers at the rates where an option misses the targets (its line has a gap
    there): the GPUs it fell back to, no saving counted (issue 24)."""
    if not mask.any():
        return
    fig.add_scatter(
        x=r[mask], y=gpus[mask], mode="markers", name=f"{name}: misses the targets",
        marker={"symbol": "x-open", "size": 8, "color": color},
        hovertemplate=f"{name} misses the targets even with %{{y:,.0f}} GPUs<extra></extra>",
    )  # fmt: skip


@finished
def figure_gpus_vs_rate(sweep: pd.DataFrame, *, rps: float | None = None) -> go.Figure:
    """Whole GPUs needed against the request rate, colocated vs disaggregated (step lines:
    GPUs come in whole instances); the rates where disaggregation needs fewer are shaded.
    Where an option misses the targets its line has a gap and an open marker shows the GPUs
    it fell back to; no rate is shaded unless both options meet the targets."""
    fig = Fig()
    r = sweep["rps"].to_numpy(dtype=float)
    dis_all = sweep["disaggregated_gpus"].to_numpy(dtype=float)
    col_all = sweep["colocated_gpus"].to_numpy(dtype=float)
    dis_ok = _feasible(sweep, "meets_slo")
    col_ok = _feasible(sweep, "colocated_meets_slo") & (col_all > 0)  # 0: no colocated shape
    dis = np.where(dis_ok, dis_all, np.nan)
    col = np.where(col_ok, col_all, np.nan)
    edges = rate_edges(r)
    wins = (dis < col) & dis_ok & col_ok
    for first, last in _runs(wins):
        fig.add_vrect(x0=edges[first], x1=edges[last + 1], fillcolor=SAVES_FILL, line_width=0,
                      layer="below")  # fmt: skip
    pd_text = np.array(
        [
            f"{int(p)} + {int(d)}"
            for p, d in zip(sweep["prefill_gpus"], sweep["decode_gpus"], strict=True)
        ],
        dtype=object,
    )
    fig.add_scatter(
        x=r,
        y=dis,
        mode="lines+markers",
        line_shape="hvh",
        name="disaggregated (prefill + decode)",
        line_color=DISAGG_COLOR,
        marker_size=5,
        customdata=pd_text,
        hovertemplate="disaggregated: %{y:,.0f} GPUs (prefill + decode %{customdata})"
        "<extra></extra>",
    )
    fig.add_scatter(
        x=r,
        y=col,
        mode="lines+markers",
        line_shape="hvh",
        name="colocated (chunked prefill)",
        line_color=COLOC_COLOR,
        line_dash="dash",
        marker_size=5,
        hovertemplate="colocated: %{y:,.0f} GPUs<extra></extra>",
    )
    _misses(fig, r, dis_all, ~dis_ok, "disaggregated", DISAGG_COLOR)
    _misses(fig, r, col_all, ~col_ok & (col_all > 0), "colocated", COLOC_COLOR)
    if wins.any():
        fig.add_scatter(  # a legend entry for the shading
            x=[None], y=[None], mode="markers", marker_symbol="square", marker_size=12,
            marker_color="rgba(22, 163, 74, 0.35)", name="disaggregated needs fewer GPUs",
            hoverinfo="skip",
        )  # fmt: skip
    fig.update_yaxes(rangemode="tozero")
    fig.update_layout(hovermode="x unified", xaxis_unifiedhovertitle_text=RATE_HOVER_TITLE)
    return _finish(fig, r, rps, "GPUs needed against the request rate", "GPUs", height=460)


@finished
def figure_pd_split(sweep: pd.DataFrame, *, rps: float | None = None) -> go.Figure:
    """Prefill and decode GPUs of the disaggregated plan, stacked, against the rate."""
    fig = Fig()
    r = sweep["rps"].to_numpy(dtype=float)
    p = sweep["prefill_gpus"].to_numpy(dtype=float)
    d = sweep["decode_gpus"].to_numpy(dtype=float)
    share = np.divide(p, p + d, out=np.zeros_like(p), where=(p + d) > 0)
    for name, y, color, extra in (
        ("prefill GPUs", p, PREFILL_COLOR, share),
        ("decode GPUs", d, DECODE_COLOR, 1 - share),
    ):
        fig.add_scatter(
            x=r,
            y=y,
            mode="lines",
            line_shape="hvh",
            stackgroup="pd",
            name=name,
            line_color=color,
            customdata=extra * 100,
            hovertemplate=f"{name}: %{{y:,.0f}} (%{{customdata:.0f}} % of the pool)<extra></extra>",
        )
    fig.update_layout(hovermode="x unified", xaxis_unifiedhovertitle_text=RATE_HOVER_TITLE)
    return _finish(fig, r, rps, "Prefill : decode split (disaggregated)", "GPUs", height=400)


@finished
def figure_limits(sweep: pd.DataFrame, *, rps: float | None = None) -> go.Figure:
    """Which constraint sizes each pool as the rate grows: one row per pool, coloured by the
    binding constraint over the rates where it binds (one bar trace per constraint: a trace
    per run made dozens of traces, slow to draw in the browser)."""
    fig = Fig()
    r = sweep["rps"].to_numpy(dtype=float)
    edges = rate_edges(r)
    runs: dict[str, dict[str, list]] = {}  # constraint -> its bars (in first-seen order)
    for col, pool in POOLS:
        if col not in sweep.columns:
            continue
        limits = sweep[col].astype(str).to_numpy(dtype=object)
        start = 0
        for i in range(1, len(limits) + 1):
            if i < len(limits) and limits[i] == limits[start]:
                continue
            bars = runs.setdefault(limits[start], {"y": [], "base": [], "x": [], "cd": []})
            bars["y"].append(pool)
            bars["base"].append(edges[start])
            bars["x"].append(edges[i] - edges[start])
            bars["cd"].append([r[start], r[i - 1]])
            start = i
    for what, bars in runs.items():
        label = LIMIT_NAMES.get(what, what)
        fig.add_bar(
            y=bars["y"],
            x=bars["x"],
            base=bars["base"],
            orientation="h",
            name=label,
            marker_color=LIMIT_COLORS.get(what, "#475569"),
            customdata=bars["cd"],
            hovertemplate=f"%{{y}}: sized by {label}<br>%{{customdata[0]:,.3~r}}–"
            "%{customdata[1]:,.3~r} req/s<extra></extra>",
        )
    fig.update_layout(barmode="overlay")
    pools = [pool for col, pool in POOLS if col in sweep.columns]
    fig.update_yaxes(categoryorder="array", categoryarray=pools)
    names_above(fig, pools)  # names over the bars: the plot keeps a phone's width
    return _finish(fig, r, rps, "What sizes each pool as the rate grows", "", height=400)


@finished
def figure_plan_panels(sweep: pd.DataFrame, *, rps: float | None = None) -> go.Figure:
    """The Capacity page's second chart: the prefill : decode split (top) over what sizes each
    pool (bottom), one figure whose two rate axes match.  Side by side they were two plotly charts
    for the browser to draw on every change of a target (~25 ms each on 2 CPUs, as the
    Overview's panels, bench/README.md Session 21); stacked, both rate axes line up and each
    panel keeps the page's width on a phone.  The report draws the two as before."""
    top = figure_pd_split.unbuilt(sweep, rps=rps)
    bottom = figure_limits.unbuilt(sweep, rps=rps)
    top.update_layout(height=320)  # the panels' plots: 250 and 200 px (kit.panel_figure)
    bottom.update_layout(height=270)
    fig = panel_figure([top, bottom], title="How the disaggregated plan is made up", rows=True)
    fig.layout["xaxis2"]["matches"] = "x"  # one rate range: the areas' and the bars' differ
    return fig


def _times_par(instances: int, tp: int, ep: int) -> str:
    return f"{instances} × {tp}" if ep <= 1 else f"{instances} × EP {ep}"


def _pool_meets(plan, ttft_target_s, tpot_target_s) -> tuple[bool, bool]:
    """(prefill row, decode row) of "Meets the targets": each pool against the target of the
    time its row shows (TTFT, TPOT), when the targets are given and the rows account for the
    plan's verdict; else the plan's verdict on both (session 19's review: a decode row read
    "no" beside a TPOT under its target, the TTFT having missed)."""
    whole = bool(plan.meets_slo)
    if ttft_target_s is None or tpot_target_s is None:
        return whole, whole
    ttft_ok = bool(plan.ttft_s <= ttft_target_s)
    tpot_ok = bool(plan.tpot_s <= tpot_target_s)
    if (ttft_ok and tpot_ok) != whole:  # a miss neither time shows (or the reverse)
        return whole, whole
    return ttft_ok, tpot_ok


NOT_THIS_POOL = "–"  # a pool's cell for a latency another pool sets (the prefill pool's TPOT)


def pool_table(plan, *, ttft_percentile: float, ttft_target_s: float | None = None,
               tpot_target_s: float | None = None) -> pd.DataFrame:  # fmt: skip
    """The plan per pool as text: GPUs, instances × TP, latency, targets met and what binds.
    ``ttft_target_s``, ``tpot_target_s``: the targets, for each pool's own verdict (the
    prefill row's TTFT, the decode row's TPOT: :func:`_pool_meets`)."""
    from kvview.capacity_words import limit_text, pct_label, pool_gpu_names
    from kvview.fmt import fmt_time

    def yes(flag) -> str:
        return "yes" if flag else "no"

    def ep(name: str) -> int:
        return getattr(plan, name, 1)

    table = pd.DataFrame(
        {
            "Pool": ["Prefill", "Decode", "Colocated (chunked prefill)"],
            "GPUs": [
                f"{plan.prefill_gpus:,}",
                f"{plan.decode_gpus:,}",
                f"{plan.colocated_gpus:,}",
            ],
            "Instances × TP": [  # an expert-parallel pool: "2 × EP 32"
                _times_par(plan.prefill_instances, plan.prefill_tp, ep("prefill_ep")),
                _times_par(plan.decode_instances, plan.decode_tp, ep("decode_ep")),
                _times_par(plan.colocated_instances, plan.colocated_tp, ep("colocated_ep")),
            ],
            f"TTFT {pct_label(ttft_percentile)}": [  # NOT_THIS_POOL: decode sets no TTFT
                fmt_time(plan.ttft_s),
                NOT_THIS_POOL,
                fmt_time(plan.colocated_ttft_s),
            ],
            "TPOT": [NOT_THIS_POOL, fmt_time(plan.tpot_s), fmt_time(plan.colocated_tpot_s)],
            "Meets the targets": [
                *map(yes, _pool_meets(plan, ttft_target_s, tpot_target_s)),
                yes(plan.colocated_meets_slo),
            ],
            "Sized by": [
                limit_text(plan.limits, "prefill"),
                limit_text(plan.limits, "decode"),
                limit_text(plan.limits, "colocated"),
            ],
        }
    )
    names = pool_gpu_names(plan)
    if names:  # decode on a GPU of its own: say which pool runs where (colocated: prefill's)
        table.insert(1, "GPU", [n.removeprefix("NVIDIA ") for n in (*names, names[0])])
    return table


def pool_table_html(plan, **targets) -> str:
    """:func:`pool_table` as the page shows it: a plain HTML table (``kvview.tables``), one
    row per pool.  ``targets``: :func:`pool_table`'s keywords."""
    from kvview.tables import html_table

    return html_table(pool_table(plan, **targets).set_index("Pool"), label="Pool")
