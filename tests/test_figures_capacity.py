"""Capacity figures (kvview.figures.capacity) on a hand-made rate sweep."""

import numpy as np
import pandas as pd
import pytest

from kvview.figures import capacity as F

RATES = [1.0, 2.0, 4.0, 8.0]
SWEEP = pd.DataFrame(
    {
        "rps": RATES,
        "prefill_gpus": [4, 4, 8, 16],
        "decode_gpus": [4, 4, 4, 8],
        "disaggregated_gpus": [8, 8, 12, 24],
        "colocated_gpus": [4, 8, 16, 32],  # disaggregation wins at 4 and 8 req/s
        "prefill_limit": ["ttft", "ttft", "compute", "compute"],
        "decode_limit": ["memory"] * 4,
        "colocated_limit": ["tpot", "compute", "compute", "ttft"],
    }
)


def test_gpus_vs_rate_lines_shading_and_marker():
    fig = F.figure_gpus_vs_rate(SWEEP, rps=4.0)
    names = [t.name for t in fig.data]
    assert names[:2] == ["disaggregated (prefill + decode)", "colocated (chunked prefill)"]
    np.testing.assert_array_equal(fig.data[0].y, [8, 8, 12, 24])
    np.testing.assert_array_equal(fig.data[1].y, [4, 8, 16, 32])
    assert list(fig.data[0].customdata) == ["4 + 4", "4 + 4", "8 + 4", "16 + 8"]
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    # one shaded run, from the cell edge between 2 and 4 (√8) past the last rate (8² ÷ √32)
    assert len(rects) == 1
    assert rects[0].x0 == pytest.approx(np.sqrt(8)) and rects[0].x1 == pytest.approx(
        64 / np.sqrt(32)
    )
    assert [s.x0 for s in fig.layout.shapes if s.type == "line"] == [4.0]
    assert fig.layout.xaxis.type == "log"
    assert "requests/s" in fig.layout.xaxis.title.text and fig.layout.yaxis.title.text == "GPUs"
    # one hover box per rate, titled with the rate and its unit; each line says its option
    assert fig.layout.hovermode == "x unified"
    assert fig.layout.xaxis.unifiedhovertitle.text == "%{x:,.3~r} req/s"
    assert fig.data[0].hovertemplate.startswith("disaggregated: %{y:,.0f} GPUs")
    assert fig.layout.hoverlabel.bgcolor == "white"  # opaque (kit.HOVER_LABEL)


def test_no_shading_where_disaggregation_never_wins():
    never = SWEEP.assign(colocated_gpus=[4, 4, 4, 4])
    fig = F.figure_gpus_vs_rate(never, rps=None)
    assert not [s for s in (fig.layout.shapes or ()) if s.type == "rect"]
    assert len(fig.data) == 2  # no legend entry for a shading that is not there


def test_pd_split_is_stacked_with_shares():
    fig = F.figure_pd_split(SWEEP, rps=2.0)
    assert [t.stackgroup for t in fig.data] == ["pd", "pd"]
    np.testing.assert_allclose(fig.data[0].customdata, [50, 50, 200 / 3, 200 / 3])  # 8 ÷ 12
    assert "% of the pool" in fig.data[0].hovertemplate


def test_limits_one_trace_per_constraint_one_bar_per_run():
    fig = F.figure_limits(SWEEP, rps=2.0)
    names = [t.name for t in fig.data]
    assert sorted(names) == ["KV memory", "TPOT target", "TTFT target", "compute"]
    bars = [
        (y, t.name, base, base + x)
        for t in fig.data
        for y, base, x in zip(t.y, t.base, t.x, strict=True)
    ]
    edges = F.rate_edges(np.array(RATES))
    # prefill: TTFT target at 1 and 2 req/s, compute at 4 and 8, split at the edge √8
    prefill = sorted((b for b in bars if b[0] == "prefill"), key=lambda b: b[2])
    assert [b[1] for b in prefill] == ["TTFT target", "compute"]
    assert prefill[0][2] == pytest.approx(edges[0]) and prefill[0][3] == pytest.approx(edges[2])
    assert prefill[1][3] == pytest.approx(edges[-1])
    colocated = sorted((b for b in bars if b[0] == "colocated"), key=lambda b: b[2])
    assert [b[1] for b in colocated] == ["TPOT target", "compute", "TTFT target"]
    assert "sized by" in fig.data[0].hovertemplate and "req/s" in fig.data[0].hovertemplate


def test_edges_are_geometric_midpoints():
    np.testing.assert_allclose(F.rate_edges(np.array([1.0, 4.0])), [0.5, 2.0, 8.0])


def test_no_colocated_shape_is_a_gap_and_not_shaded():
    # issue 24: no saving is shown against an option that cannot serve the traffic
    gap = SWEEP.assign(colocated_gpus=[4, 4, 0, 0])
    fig = F.figure_gpus_vs_rate(gap, rps=2.0)
    assert np.isnan(fig.data[1].y[2:]).all() and list(fig.data[1].y[:2]) == [4, 4]
    assert not [s for s in fig.layout.shapes if s.type == "rect"]


def test_a_side_that_misses_the_targets_is_a_gap_with_markers_and_never_shaded():
    # disaggregated needs fewer GPUs at every rate, but colocated misses at 4 and 8 req/s and
    # disaggregated at 1 req/s: only 2 req/s (both meet) is shaded
    sweep = SWEEP.assign(disaggregated_gpus=[2, 2, 2, 2], colocated_gpus=[9, 9, 9, 9],
                         meets_slo=[False, True, True, True],
                         colocated_meets_slo=[True, True, False, False])  # fmt: skip
    fig = F.figure_gpus_vs_rate(sweep, rps=2.0)
    assert np.isnan(fig.data[0].y[0]) and list(fig.data[0].y[1:]) == [2, 2, 2]
    assert list(fig.data[1].y[:2]) == [9, 9] and np.isnan(fig.data[1].y[2:]).all()
    missed = {t.name: list(t.x) for t in fig.data if "misses" in (t.name or "")}
    assert missed == {"disaggregated: misses the targets": [1.0],
                      "colocated: misses the targets": [4.0, 8.0]}  # fmt: skip
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    edges = F.rate_edges(np.array([1.0, 2.0, 4.0, 8.0]))
    assert len(rects) == 1 and rects[0].x0 == pytest.approx(edges[1])
    assert rects[0].x1 == pytest.approx(edges[2])


def test_plan_panels_hold_the_split_over_the_limits_on_one_rate_axis():
    # the page's second chart: the two builders' traces, the split's above the limits', each
    # legend entry once, and the lower rate axis following the upper one (their own autoranges
    # differ: the bars run to the cell edges, the areas to the last rate)
    fig = F.figure_plan_panels(SWEEP, rps=2.0)
    split, limits = F.figure_pd_split(SWEEP, rps=2.0), F.figure_limits(SWEEP, rps=2.0)
    assert [t.name for t in fig.data] == [t.name for t in split.data + limits.data]
    assert {t.xaxis for t in fig.data[:2]} == {"x"} and {t.xaxis for t in fig.data[2:]} == {"x2"}
    assert fig.layout.xaxis2.matches == "x"
    assert fig.layout.yaxis.domain[0] > fig.layout.yaxis2.domain[1]  # split on top
    np.testing.assert_array_equal(fig.data[1].y, [4, 4, 4, 8])  # decode GPUs, as the split's
    headings = [a.text for a in fig.layout.annotations if a.text.startswith("<b>")]
    assert headings == ["<b>Prefill : decode split (disaggregated)</b>",
                        "<b>What sizes each pool as the rate grows</b>"]  # fmt: skip
    assert fig.layout.title.text == "How the disaggregated plan is made up"
    assert fig.layout.yaxis.title.text == "GPUs" and fig.layout.xaxis2.type == "log"


def test_rate_axis_writes_every_tick_in_full():
    # sweep_rates(200) runs from 17.8 to 2,154 requests/s: ticks at 1, 2, 5 of each decade
    # within 1.3× of the ends, each written out (plotly's "D2" ticks wrote 200 as "2")
    from kvmodel.capacity import sweep_rates

    sweep = SWEEP.iloc[[0]].copy()
    sweep = pd.concat([sweep] * 26, ignore_index=True)
    sweep["rps"] = sweep_rates(200.0)
    for fig in (F.figure_gpus_vs_rate(sweep, rps=200.0), F.figure_pd_split(sweep, rps=200.0),
                F.figure_limits(sweep, rps=200.0)):  # fmt: skip
        assert list(fig.layout.xaxis.tickvals) == [20, 50, 100, 200, 500, 1000, 2000]
        assert list(fig.layout.xaxis.ticktext) == ["20", "50", "100", "200", "500", "1,000",
                                                   "2,000"]  # fmt: skip
    marker = F.figure_gpus_vs_rate(sweep, rps=1234.0).layout.annotations
    assert any("1,234 req/s" in a.text for a in marker)
    assert "e+" not in F.figure_gpus_vs_rate(sweep, rps=200.0).data[0].hovertemplate
