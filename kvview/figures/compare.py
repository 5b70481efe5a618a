"""Compare's charts of what differs: the exposed transfer with its share of TTFT, and each
variant's change against A.

TTFT bars are mostly prefill (97 % in the default scenario), so a variant that halves the
transfer looks the same as A there.  These charts draw the transfer on its own axis and the
change against A (milliseconds and per cent), coloured by better (blue) or worse (orange) as
``kvmodel.compare.DIRECTIONS`` defines, with the word in the bar's label so colour is not the
only cue.  Pure functions of ``kvmodel.sweeps.compare_table`` (SI units) and
``kvmodel.compare.changes``.
"""

from __future__ import annotations

import math

import pandas as pd
import plotly.graph_objects as go

from kvview.figures.kit import SEGMENT_COLORS, Fig, base_layout, finished, panel_figure
from kvview.fmt import fmt_sig

VERDICT_COLORS = {"better": "#0072B2", "worse": "#D55E00", "same": "#94a3b8"}  # Okabe-Ito


def _signed_ms(ms: float) -> str:
    """'−6.5 ms', '+279 ms', '+7.36 s': three significant digits, seconds from 1 s on."""
    sign = "+" if ms > 0 else "−" if ms < 0 else "±"
    a = abs(ms)
    return f"{sign}{fmt_sig(a, 3)} ms" if a < 1000 else f"{sign}{fmt_sig(a / 1e3, 3)} s"


def _placed(xs: list[float], span: float) -> dict:
    """Bar labels inside a long bar (white), outside a short one, small type: they stay in
    the plot at phone width (390 px) too."""
    inside = [abs(x) >= 0.5 * span for x in xs]
    return {
        "textposition": ["inside" if i else "outside" for i in inside],
        "insidetextanchor": "middle",
        "textfont": {"size": 11},
        "insidetextfont": {"color": "white", "size": 11},
        "cliponaxis": False,
    }


def _pct(r: float) -> str:
    text = f"{r:+.0%}" if abs(r) >= 0.01 or r == 0 else f"{r * 100:+.2g}%"
    return text.replace("-", "−")


@finished
def figure_compare_transfer(table: pd.DataFrame) -> go.Figure:
    """Exposed transfer per scenario [ms], each bar labelled with its share of TTFT.

    ``table``: ``sweeps.compare_table`` (index = scenario label, SI units)."""
    fig = Fig()
    labels = [str(i) for i in table.index]
    ms = [float(v) * 1e3 for v in table["exposed_transfer_s"]]
    share = [float(v) for v in table["transfer_share_of_ttft"]]
    ttft = [float(v) * 1e3 for v in table["ttft_s"]]
    fig.add_bar(
        y=labels,
        x=ms,
        orientation="h",
        marker_color=SEGMENT_COLORS["KV transfer"],
        name="exposed transfer",
        text=[f"{m:,.2f} ms · {s:.1%} of TTFT" for m, s in zip(ms, share, strict=True)],
        **_placed(ms, max(ms + [1e-9])),
        customdata=[[s * 100, t] for s, t in zip(share, ttft, strict=True)],
        hovertemplate="%{y}: exposed transfer %{x:,.2f} ms<br>"
        "%{customdata[0]:.1f} % of TTFT (%{customdata[1]:,.1f} ms)<extra></extra>",
    )
    top = max(ms) if ms and max(ms) > 0 else 1.0
    fig.update_xaxes(range=[0, top * 1.15], rangemode="tozero")
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(showlegend=False)
    return base_layout(
        fig,
        "Exposed transfer and its share of TTFT",
        "exposed transfer [ms]",
        "",
        height=max(220, 90 + 40 * len(labels)),
    )


def _change_panel(ch: pd.DataFrame, key: str, title: str) -> Fig:
    rows = ch[ch["key"] == key]
    fig = Fig()
    ms = [float(v) * 1e3 if math.isfinite(v) else 0.0 for v in rows["change"]]
    rel = list(rows["relative"])
    verdicts = list(rows["verdict"])
    texts = [
        _signed_ms(m) + (f" ({_pct(r)})" if math.isfinite(r) else "") + f" {v}"
        for m, r, v in zip(ms, rel, verdicts, strict=True)
    ]
    fig.add_bar(
        y=[str(x) for x in rows["label"]],
        x=ms,
        orientation="h",
        marker_color=[VERDICT_COLORS[v] for v in verdicts],
        text=texts,
        **_placed(ms, max([abs(m) for m in ms] + [1e-9])),
        customdata=[
            [r * 100 if math.isfinite(r) else 0.0, v] for r, v in zip(rel, verdicts, strict=True)
        ],
        hovertemplate="%{y}: %{x:+,.2f} ms vs A (%{customdata[0]:+.1f} %), "
        "%{customdata[1]}<extra></extra>",
        name=title,
    )
    span = max([abs(m) for m in ms] + [1e-3])
    lo, hi = min(ms + [0.0]), max(ms + [0.0])
    # room for a short bar's label beside it: a long bar (≥ half the span) carries its own
    fig.update_xaxes(range=[-1.25 * span if lo < 0 else -0.05 * span,
                            1.25 * span if hi > 0 else 0.05 * span],
                     zeroline=True, zerolinecolor="#475569", title=f"{title} [ms]")  # fmt: skip
    fig.update_yaxes(autorange="reversed", title=None)
    fig.update_layout(showlegend=False)
    return base_layout(fig, title, f"{title} [ms]", "", height=max(200, 110 + 40 * len(rows)))


@finished
def figure_compare_change(changes: pd.DataFrame) -> go.Figure:
    """Each variant's change against A: TTFT and exposed transfer [ms], bar labels with the
    relative change and the verdict.

    ``changes``: ``kvmodel.compare.changes`` of the compare table (A's own rows are dropped)."""
    ch = changes[changes["label"] != changes["label"].iloc[0]]
    panels = [
        _change_panel(ch, "ttft_s", "Change in TTFT vs A"),
        _change_panel(ch, "exposed_transfer_s", "Change in exposed transfer vs A"),
    ]
    fig = panel_figure(panels, title="Change against A (lower is better)", rows=True)
    fig.update_layout(showlegend=False, hoverlabel={"namelength": -1})
    return fig
