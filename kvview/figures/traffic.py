"""Traffic figures: request lengths by region, and the comparison of options as a table.

Pure functions, no ``st.*`` calls; re-exported by ``kvview.figures``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvview.figures.kit import Fig, base_layout, finished
from kvview.fmt import fmt_critical

REGION_COLORS = {"too short": "#94a3b8", "gains": "#16a34a", "transfer-bound": "#dc2626"}
REGION_NAMES = ("too short", "gains", "transfer-bound")


@finished
def figure_traffic_histogram(
    tokens, weights, region, *, min_seq_len: int, critical: int | None, bins: int = 60
) -> go.Figure:
    """Requests per log-spaced length bin, stacked by region, with the two boundaries marked.

    ``tokens``/``weights`` are the distinct moved-token counts and their request counts;
    ``region`` is 0/1/2 (too short / gains / transfer-bound) per distinct length.
    """
    t = np.maximum(np.asarray(tokens, dtype=float), 1.0)
    edges = np.unique(np.geomspace(1, max(t.max() * 1.001, 2), bins + 1))
    fig = Fig()
    top = np.zeros(len(edges) - 1)
    for r, name in enumerate(REGION_NAMES):
        sel = region == r
        counts, _ = np.histogram(t[sel], bins=edges, weights=np.asarray(weights)[sel])
        top += counts
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
    _boundaries(fig, min_seq_len, critical, float(top.max()) if top.size else 1.0)
    return base_layout(
        fig,
        "Request lengths by region (tokens to move)",  # fits a phone's chart (390 px)
        "tokens per request [log scale]",
        "requests",
    )


BOUNDARY_DASH = {"min": "dash", "critical": "dashdot"}


def _boundaries(fig: Fig, min_seq_len: int, critical: int | None, top: float) -> None:
    """The two boundaries as dashed lines named in the legend ('min 128 tokens', 'critical
    2,577 tokens'): as notes above the plot they overprinted each other on a 390 px phone,
    where 128 and 2,577 tokens lie ~60 px apart (issue 24)."""
    marks = [("min", min_seq_len, f"min {min_seq_len:,} tokens")]
    if critical:
        marks.append(("critical", critical, f"critical {critical:,} tokens"))
    for kind, x, label in marks:
        if x and x > 0:
            fig.add_scatter(
                x=[float(x), float(x)],
                y=[0.0, top * 1.05],
                mode="lines",
                name=label,
                line={"color": "#475569", "dash": BOUNDARY_DASH[kind], "width": 1.5},
                hovertemplate=f"{label}<extra></extra>",
            )


def traffic_comparison_frame(rows) -> pd.DataFrame:
    """traffic.comparison rows → a readable table, best first among the buildable options;
    an option on a link that cannot be built at the scenario's TPs (``buildable`` False)
    comes after them, marked '⚠' (the caption under the table says what it means and why:
    the whole mark cut the table's last column inside its box, 34 px narrower than the page)."""
    df = pd.DataFrame(rows)
    ok = df["buildable"] if "buildable" in df else pd.Series(True, index=df.index)
    df = df.assign(_ok=ok.astype(bool)).sort_values(
        ["_ok", "fraction_requests_gain"], ascending=[False, False], kind="stable"
    )
    why = ["" if good else " ⚠" for good in df["_ok"]]
    return pd.DataFrame(
        {
            "Option": [
                f"{n} + {c.upper() if c != 'none' else 'no compression'}"
                + (" + layer-wise" if lw else "")
                + w
                for n, c, lw, w in zip(
                    df["link_name"], df["compression"], df["layerwise"], why, strict=True
                )
            ],
            # 'gaining', not 'that gain': with the longest option whole, the row fits 1280 px
            "Requests gaining": df["fraction_requests_gain"].map("{:.1%}".format),
            "Tokens gaining": df["fraction_tokens_gain"].map("{:.1%}".format),
            "Transfer-bound": df["fraction_transfer_bound"].map("{:.1%}".format),
            "Critical length": [fmt_critical(c) for c in df["critical_seq_len"]],
        }
    )
