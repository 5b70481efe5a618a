"""Figure builders (kvview.figures and the modules it re-exports), tested directly: titles, units,
hover, one colour per link, every trace where it belongs."""

import numpy as np
import pandas as pd
import pytest
from numpy.testing import assert_allclose
from sweeps_ms import (
    batch_sweep,
    mitigation_options,
    mitigation_table,
    model_seq_sweep,
    models_table,
    seq_grid,
    seq_sweep,
    timeline,
)

from kvmodel.build import build_scenario
from kvview import figures
from kvview.fmt import in_ms


def _axis_titles(fig):
    return fig.layout.xaxis.title.text, fig.layout.yaxis.title.text


def test_figures_have_titles_units_and_hover():
    sc = build_scenario(model="llama-3-70b")
    curves, crit = seq_sweep(sc, ["100gbe", "ib-ndr"])
    figs = [
        figures.figure_seq_sweep(curves, crit, threshold_ms=30, title="t"),
        figures.figure_batch_sweep(batch_sweep(sc, ["100gbe"], [1, 8]), seq_len=1024),
        figures.figure_ttft(mitigation_table(sc, mitigation_options(sc))),
        figures.figure_timeline(timeline(sc), title="tl"),
        figures.figure_bytes_per_token(models_table()),
        figures.figure_models_seq(
            model_seq_sweep(sc, ["llama-2-7b"], [128, 1024]), threshold_ms=30, link="x"
        ),
        figures.figure_transfer_vs_step(26.8, 30),
    ]
    for fig in figs:
        assert fig.layout.title.text
        x, y = _axis_titles(fig)
        assert "[" in (x or "") + (y or "")  # a unit in brackets on at least one axis
        for trace in fig.data:
            if trace.hoverinfo == "skip":  # the shaded decode-step band
                continue
            hover = trace.hovertemplate or ""
            assert any(unit in hover for unit in ("ms", "B/", "tokens")), hover


def test_one_colour_per_link_everywhere():
    sc = build_scenario(model="llama-3-70b")
    curves, crit = seq_sweep(sc, ["100gbe", "ib-ndr"])
    f1 = figures.figure_seq_sweep(curves, crit, threshold_ms=30, title="t")
    f2 = figures.figure_batch_sweep(batch_sweep(sc, ["100gbe", "ib-ndr"], [1, 8]), seq_len=1024)
    names = {"100 GbE (RoCE)", "InfiniBand NDR 400G"}
    c1 = {t.name: t.line.color for t in f1.data if t.name in names}
    c2 = {t.name: t.line.color for t in f2.data if t.name in names}
    assert c1 == c2 and len(set(c1.values())) == 2
    assert figures.link_color("100gbe@20") == figures.link_color("100gbe")


def test_critical_markers_only_for_links_that_reach_it():
    sc = build_scenario(model="llama-3-70b", k=4)
    curves, crit = seq_sweep(sc, ["100gbe", "nvlink4"])  # NVLink never reaches 120 ms
    fig = figures.figure_seq_sweep(curves, crit, threshold_ms=120, title="t")
    markers = [t for t in fig.data if t.mode == "markers"][0]
    assert list(markers.customdata) == ["100 GbE (RoCE)"]


def test_timeline_figure_draws_every_chunk():
    # one bar per timeline row, in its lane (a regression drew 3 of the 80 chunks)
    tl = timeline(build_scenario(model="llama-3-70b", prefill_ms=100, layerwise=True))
    fig = figures.figure_timeline(tl, title="t")
    for trace in fig.data:
        rows = tl[tl["lane"] == trace.name]
        assert len(trace.y) == len(trace.x) == len(trace.base) == len(rows) > 0
        assert set(trace.y) == {trace.name}
        assert_allclose(np.asarray(trace.base, dtype=float), rows["start_ms"])
        assert_allclose(np.asarray(trace.x, dtype=float), rows["end_ms"] - rows["start_ms"])
    assert sum(len(t.x) for t in fig.data) == len(tl) == 82


def test_grouped_figures_keep_each_group_whole():
    from sweeps_ms import model_seq_sweep, seq_sweep

    sc = build_scenario(model="llama-3-70b")
    curves, critical = seq_sweep(sc, ["100gbe", "ib-ndr"])
    fig = figures.figure_seq_sweep(curves, critical, threshold_ms=30, title="t")
    lines = [t for t in fig.data if t.mode == "lines" and t.name.startswith(("100", "Infini"))]
    assert [len(t.x) for t in lines] == [
        int((curves["link"] == k).sum()) for k in ("100gbe", "ib-ndr")
    ]
    df = model_seq_sweep(sc, ["llama-3-70b", "mistral-7b"], seq_grid(32_768, points=40))
    fig = figures.figure_models_seq(df, threshold_ms=30, link="x")
    named = {t.name: t for t in fig.data if t.name and "(" in t.name}
    from kvmodel import catalog

    for mid in ("llama-3-70b", "mistral-7b"):  # named as the sidebar names them (session 22)
        part = df[df["model"] == mid]
        (trace,) = [t for n, t in named.items() if n.startswith(catalog.get_model(mid).name)]
        assert_allclose(trace.y, part["transfer_ms"])
    # the threshold says whose decode step it is (session 18's review: it read as every model's)
    fig = figures.figure_models_seq(df, threshold_ms=30, link="x", threshold_of="Llama-3-70B")
    assert any(t.name == "threshold 30.0 ms (Llama-3-70B's decode step)" for t in fig.data)


@pytest.mark.parametrize(
    "kw",
    [{}, {"batch": 64, "seq_len": 32_768}, {"model": "deepseek-v3", "layerwise": True}],
)
def test_panel_figures_keep_every_trace_on_its_own_axes(kw):
    from kvmodel.sensitivity import tornado

    sc = build_scenario(**({"model": "llama-3.1-70b"} | kw))
    table = mitigation_table(sc, mitigation_options(sc))
    pair = figures.figure_mitigation_panels(table, step_ms=30.0)
    left = figures.figure_option_transfer(table, step_ms=30.0)
    right = figures.figure_ttft(table, title="t")
    assert len(pair.data) == len(left.data) + len(right.data)
    assert {(t.xaxis, t.yaxis) for t in pair.data[: len(left.data)]} == {("x", "y")}
    assert {(t.xaxis, t.yaxis) for t in pair.data[len(left.data) :]} == {("x2", "y2")}
    assert_allclose(np.asarray(pair.data[0].x, dtype=float), table["exposed_transfer_ms"])
    # stacked (side by side, the panels' texts ran into each other on a phone)
    top, bottom = pair.layout.yaxis.domain, pair.layout.yaxis2.domain
    assert 0 <= bottom[0] < bottom[1] < top[0] < top[1] <= 1
    # the decode-step line stays on the top panel; each option is named above its bars in
    # both panels, at the panel's left edge
    assert [(s.xref, s.yref) for s in pair.layout.shapes] == [("x", "y domain")]
    names = [a for a in pair.layout.annotations if a.text in set(table["option"])]
    assert [a.xref for a in names] == ["x domain"] * len(table) + ["x2 domain"] * len(table)
    # one legend: the step line and the TTFT parts, each once
    shown = [t.name for t in pair.data if t.showlegend is not False]
    assert shown == ["one decode step (30.0 ms)", "Prefill", "KV transfer", "First decode step"]

    df = tornado(sc)
    rows = figures.figure_tornado_panels(df)
    ttft, share = (figures.figure_tornado(df, metric=m) for m in ("ttft", "share"))
    assert len(rows.data) == len(ttft.data) + len(share.data)
    assert {(t.xaxis, t.yaxis) for t in rows.data[: len(ttft.data)]} == {("x", "y")}
    assert {(t.xaxis, t.yaxis) for t in rows.data[len(ttft.data) :]} == {("x2", "y2")}
    top, bottom = rows.layout.yaxis.domain, rows.layout.yaxis2.domain
    assert 0 <= bottom[0] < bottom[1] < top[0] < top[1] <= 1
    assert rows.layout.xaxis.range == ttft.layout.xaxis.range
    # each panel keeps its plot's height; one legend above both (the panels' own were alike)
    plots = [f.layout.height - f.layout.margin.t - 10 for f in (ttft, share)]
    assert rows.layout.height == rows.layout.margin.t + sum(plots) + 120 + 10


def test_option_labels_never_sit_on_the_decode_step_line():
    from kvview.figures import figure_option_transfer

    table = pd.DataFrame({"option": ["a", "b", "c"], "exposed_transfer_ms": [20.0, 100.0, 2.0]})
    bar = figure_option_transfer(table, step_ms=30.0).data[0]
    # axis 0-130 ms: 20 ms ends just before the 30 ms line, so its label goes inside the bar
    # (outside it would cross the line); 100 ms is long; 2 ms is far from the line
    assert list(bar.textposition) == ["inside", "inside", "outside"]


def test_efficiency_chart_names_the_nominal_bandwidth_once():
    from types import SimpleNamespace

    from kvview.figures import figure_efficiency_curve

    fit = SimpleNamespace(bandwidth_at=lambda s: np.full(np.shape(s), 40e9))
    sizes, bws = [1e3, 1e6], [20e9, 40e9]
    title = figure_efficiency_curve(sizes, bws, fit, nominal=48.02e9, link="Custom 48.02 GB/s")
    assert title.layout.title.text.endswith("achieved ÷ nominal (Custom 48.02 GB/s)")
    ndr = figure_efficiency_curve(sizes, bws, fit, nominal=50e9, link="InfiniBand NDR 400G")
    assert ndr.layout.title.text.endswith("achieved ÷ nominal (InfiniBand NDR 400G, 50 GB/s)")


def test_histogram_bars_cover_their_buckets_exactly_on_a_log_axis():
    from kvview.figures import figure_gap_distribution

    buckets = [(0.001, 0), (0.0025, 10), (0.005, 30), (float("inf"), 30)]  # cumulative, s
    bar = figure_gap_distribution(buckets).data[0]
    # drawn from each lower edge across its width (a centre and a width were asymmetric on a
    # log axis: the 1-2.5 ms bucket started at 0.83 ms)
    assert list(bar.x) == [0.5, 1.0, 2.5] and bar.offset == 0
    assert_allclose(np.add(bar.x, bar.width), [1.0, 2.5, 5.0])
    assert list(bar.y) == [0, 10, 20]


def test_overview_bar_labels_switch_to_seconds_when_huge():
    from kvview.figures import figure_transfer_vs_step, figure_ttft_waterfall

    assert list(figure_transfer_vs_step(26.85, 30.0).data[0].text) == ["26.85 ms", "30.0 ms"]
    big = figure_ttft_waterfall(339_819_204.9, 14_073_748.8, 30.0).data[0].text
    assert list(big) == ["339,819.2 s", "14,073.7 s", "30.0 ms", "353,893.0 s"]


def test_traffic_boundaries_are_named_lines_in_the_legend_not_notes_above_the_plot():
    # issue 24: 'min 128 tokens' and 'critical 2,577 tokens' as notes overprinted at 390 px
    from kvview.figures import figure_traffic_histogram

    tokens, weights = np.array([50, 500, 5000]), np.array([3, 7, 2])
    fig = figure_traffic_histogram(tokens, weights, np.array([0, 1, 2]), min_seq_len=128,
                                   critical=2577)  # fmt: skip
    lines = [t for t in fig.data if t.type == "scatter"]
    assert [t.name for t in lines] == ["min 128 tokens", "critical 2,577 tokens"]
    assert [list(t.x) for t in lines] == [[128.0, 128.0], [2577.0, 2577.0]]
    assert lines[0].line.dash != lines[1].line.dash  # told apart without colour
    assert max(lines[0].y) >= 7  # across the tallest bar (7 requests)
    assert not fig.layout.annotations


@pytest.mark.parametrize(
    "build",
    [
        lambda F: F.figure_seq_sweep(
            pd.DataFrame(
                {
                    "link": ["100gbe"] * 2,
                    "seq_len": [1, 10],
                    "exposed_ms": [1.0, 2.0],
                    "transfer_ms": [1.0, 2.0],
                }
            ),
            pd.DataFrame({"link": ["100gbe"], "critical_seq_len": [5]}),
            threshold_ms=1.5,
            title="t",
        ),
        lambda F: F.figure_traffic_histogram(
            np.array([5, 50]), np.array([1, 1]), np.array([0, 1]), min_seq_len=10, critical=None
        ),
    ],
    ids=["sequence", "traffic"],
)
def test_legends_sit_below_the_plot_on_any_width(build):
    # beside the plot a legend left it 80-100 px on a 390 px phone (issue 24): it goes to the
    # bottom of the figure, where plotly reserves rows for it
    from kvview import figures as F

    legend = build(F).layout.legend
    assert legend.orientation == "h" and legend.yref == "container" and legend.y == 0
    assert legend.yanchor == "bottom"


def test_a_legend_above_the_plot_stays_on_the_paper():
    # _layout puts the legend on the container's bottom; a chart that moves it above the plot
    # must move its reference too (on the container, y = 1 put it off the top: invisible)
    sc = build_scenario()
    from kvmodel.sweeps import mitigation_options, mitigation_table

    fig = figures.figure_ttft(in_ms(mitigation_table(sc, mitigation_options(sc))))
    assert fig.layout.legend.yref == "paper" and fig.layout.legend.y == 1


def test_ttft_waterfall_starts_with_the_framework_cost_and_adds_up_to_the_ttft():
    # the Overview's waterfall: its TTFT bar is evaluate()'s TTFT, framework cost included
    # (vLLM's 18.5 + 19.2 ms per P/D request), so it agrees with the breakdown table beside it
    from kvmodel.build import scenario_from_inputs
    from kvmodel.evaluation import evaluate
    from kvview.figures import figure_ttft_waterfall

    ev = evaluate(scenario_from_inputs({"stack": "mooncake"}))
    fig = figure_ttft_waterfall(ev.prefill_s * 1e3, ev.exposed_s * 1e3, ev.decode_step_s * 1e3,
                                ev.framework_request_s * 1e3)  # fmt: skip
    bar = fig.data[0]
    assert list(bar.y) == ["Framework/request", "Prefill", "KV transfer", "First decode step",
                           "TTFT"]  # fmt: skip
    assert bar.x[0] == pytest.approx(21.3 + 25.4)  # vLLM's P/D request (frameworks.csv)
    assert bar.x[-1] == pytest.approx(ev.ttft_s * 1e3, rel=1e-12)
    assert sum(bar.x[:-1]) == pytest.approx(bar.x[-1], rel=1e-12)
    # each bar starts where the one before it ends
    assert list(bar.base[1:4]) == pytest.approx([bar.x[0], bar.x[0] + bar.x[1], sum(bar.x[:3])])
    # the hover gives each bar's length, not where it ends (a based bar's %{x} is its end)
    assert "%{customdata[2]:,.2f} ms" in bar.hovertemplate and "%{x" not in bar.hovertemplate
    assert [c[2] for c in bar.customdata] == pytest.approx(list(bar.x))
    assert bar.customdata[1][2] == pytest.approx(ev.prefill_s * 1e3)


def test_the_decode_step_band_note_starts_inside_the_plot():
    """Session 20's review: on a 995 ms transfer the band note, centred on the 20-50 ms band
    near 0 of the axis, ran past the plot's left edge ('pical decode step 20-50 ms')."""
    fig = figures.figure_transfer_vs_step(994.8, 11.9)
    (note,) = [a for a in fig.layout.annotations if "typical decode step" in a.text]
    assert note.xanchor == "left" and note.x == 20 >= fig.layout.xaxis.range[0] == 0


def test_overview_draws_its_two_charts_as_one_figure():
    """One plotly figure, not two: the browser drew each in ~25 ms on every input change
    (session 21: Overview's control -> chart 2.13x -> 1.9x the trivial page's). The band is
    named in the top panel's axis title, where its note would sit under the panel heading."""
    fig = figures.figure_overview_panels(4.93, 11.7, 72.6, 37.7, link="100 GbE (RoCE)")
    assert fig.layout.title.text == "KV transfer and TTFT on 100 GbE (RoCE)"
    assert {t.xaxis for t in fig.data} == {"x", "x2"}
    assert fig.layout.xaxis.title.text == "time [ms]; shaded: typical decode step 20–50 ms"
    assert not [a for a in fig.layout.annotations if "typical decode step" in (a.text or "")]
    widths = [w for t in fig.data if t.xaxis == "x2" for w in t.x]
    assert widths[-1] == pytest.approx(37.7 + 72.6 + 4.93 + 11.7)  # the TTFT bar: the sum
