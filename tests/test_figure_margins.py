"""The margins a chart is sent with (kvview.figures.margins): plotly's automargin needs under
Streamlit's theme, estimated from the figure's own texts.  Expected values are what chromium
measured on the app's charts at 1280 × 800 (tests/e2e/test_browser.py checks the pages
themselves): a y axis with tick labels "0 … 4000" pushed the left margin to 77 px, hidden
tick labels to 44 px, horizontal x tick labels the bottom to 65 px, a legend under the plot
added 29 px for one row and 48 px for two."""

from __future__ import annotations

import numpy as np
import pytest

from kvview.figures import margins as M
from kvview.figures.kit import Fig, base_layout, names_above, sent


def test_text_width_of_digits_and_letters():
    # chromium: "1000" 23.9 px, "10k" 17.9 px at the theme's 12 px tick font
    assert M.text_px("1000") == pytest.approx(23.84)
    assert M.text_px("10k") == pytest.approx(17.86)
    assert M.text_px("A (sidebar)") == pytest.approx(53.5, abs=1.0)  # chromium: 53.5 px


@pytest.mark.parametrize(
    ("lo", "hi", "bars", "widest"),
    [
        (0, 3900, True, "4000"),  # the Traffic histogram's axis: 0|1000|…|4000
        (0, 24, True, "25"),  # Capacity's GPUs: 0|5|…|25
        (0, 1.4, False, "1.4"),
        (0, 48_000, True, "50k"),
        (-30, 30, False, "−30"),
    ],
)
def test_linear_tick_labels_as_plotly_prints_them(lo, hi, bars, widest):
    labels = M.linear_labels(lo, hi, bars, 300)
    assert widest in labels
    assert max(M.text_px(t) for t in labels) == M.text_px(widest)


def test_log_tick_labels_use_si_suffixes_from_ten_thousand():
    assert M.log_labels(3.9, 5.8, True) == ["10k", "100k"]  # Models: 10k|100k
    assert M.log_labels(-0.4, 1.8, False) == ["0.5", "1", "2", "5", "10", "20", "50"]
    assert M.log_labels(0, 3, True) == ["1", "10", "100", "1000"]


def _histogram_like() -> Fig:
    fig = Fig()
    for name, top in (("too short", 900), ("gains", 3900), ("transfer-bound", 1200)):
        fig.add_bar(x=[10, 100, 1000], y=[top / 3, top, top / 2], name=name)
    fig.update_xaxes(type="log", dtick=1)
    return base_layout(fig, "Request lengths", "tokens per request", "requests", height=420)


def test_left_and_bottom_margins_of_a_bar_chart_with_a_legend_below():
    fig = _histogram_like()
    out = M.reserve(fig.layout, fig.data)
    # left: "4000" (23.8 px) + 53 + 2 of slack; bottom: 65 + one legend row (29) + 2
    assert out["margin"] == {"l": 79, "r": 10, "t": 60, "b": 96}
    assert fig.layout["margin"]["l"] == 10  # the figure itself is not changed


def test_a_legend_that_does_not_fit_one_row_wraps_into_columns():
    fig = Fig()  # Interconnects' five entries: 763 px in one row, wider than its 733 px plot
    for name in ("decode step 20–50 ms", "NVLink 4 (H100) (not buildable)",
                 "InfiniBand NDR 400G", "InfiniBand HDR 200G", "100 GbE (RoCE)"):  # fmt: skip
        fig.add_scatter(x=[1, 10, 100], y=[1, 10, 1000], name=name)
    fig.update_xaxes(type="log", dtick=1)
    fig.update_yaxes(type="log", dtick=1)
    base_layout(fig, "KV transfer time vs batch", "batch", "transfer time [ms, log scale]")
    out = M.reserve(fig.layout, fig.data)
    assert out["margin"]["b"] == 65 + 48 + 2  # three columns, two rows (chromium: 48 px)
    assert out["margin"]["l"] == 79  # "1000": 23.8 px + 53 + 2 (chromium: 77)


def test_hidden_tick_labels_and_names_above_bars():
    fig = Fig()
    fig.add_bar(y=["KV transfer", "Decode step"], x=[295.3, 30.0], orientation="h")
    base_layout(fig, "Transfer", "time [ms]", "")
    names_above(fig, ["KV transfer", "Decode step"])
    assert M.reserve(fig.layout, fig.data)["margin"] == {"l": 46, "r": 10, "t": 60, "b": 67}


def test_unknown_needs_leave_the_margins_as_given():
    fig = Fig()
    fig.add_histogram(x=np.arange(50.0))  # plotly counts the bins: their labels are unknown
    base_layout(fig, "Gaps", "gap [ms]", "transfers")
    assert M.reserve(fig.layout, fig.data)["margin"]["l"] == 10
    coded = Fig()  # arrays already in plotly's base64 form ({"dtype", "bdata"}) are not read
    coded.add_bar(x={"dtype": "f8", "bdata": "AAAAAAAA8D8="}, y={"dtype": "f8", "bdata": "AA=="})
    base_layout(coded, "Coded", "x", "y")
    assert M.reserve(coded.layout, coded.data)["margin"]["l"] == 10
    big = Fig()  # presentation mode sets its own font sizes: the 12 px estimates do not hold
    big.add_bar(x=[1, 2], y=[3, 4])
    base_layout(big, "Big", "x", "y")
    big.update_layout(font={"size": 24})
    assert M.reserve(big.layout, big.data) is big.layout


def test_both_ways_of_sending_a_figure_carry_the_same_margins():
    fig = _histogram_like()
    assert fig.sent().to_dict()["layout"]["margin"] == {"l": 79, "r": 10, "t": 60, "b": 96}
    assert (
        sent(fig.build()).to_dict()["layout"]["margin"] == fig.sent().to_dict()["layout"]["margin"]
    )
    assert fig.build().to_dict()["layout"]["margin"]["l"] == 10  # exports keep plotly's own
