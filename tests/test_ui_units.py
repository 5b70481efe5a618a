"""URL parameters, model codec, sweeps, takeaways and figure builders, tested directly."""

import numpy as np
import pandas as pd
import pytest
from html_tables import read_html_table
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.modelcodec import decode_model, encode_model
from kvmodel.sweeps import (
    batch_sweep,
    link_batch_table,
    mitigation_options,
    mitigation_table,
    model_seq_sweep,
    models_table,
    seq_grid,
    seq_sweep,
    timeline,
)
from kvmodel.transfer import evaluate
from kvmodel.units import fmt_bytes, fmt_ms, fmt_time, fmt_tokens
from kvmodel.verdicts import (
    interconnect_takeaway,
    mitigation_takeaway,
    models_takeaway,
    overview_takeaway,
    sequence_takeaway,
    step_verdict,
)
from ui import figures, tables
from ui import params as P

# ---- URL parameters -------------------------------------------------------------------------


def test_defaults_round_trip():
    values, warnings, _ = P.parse_query({})
    assert warnings == []
    again, warnings, _ = P.parse_query(P.to_query(values))
    assert warnings == [] and again == values


def test_valid_link_parsed_exactly():
    q = {
        "model": "qwen3-32b",
        "seq": "8192",
        "batch": "16",
        "link": "ib-xdr",
        "comp": "int4",
        "step": "42.5",
        "lw": "1",
        "tp": "4",
        "tpd": "8",
        "prefill": "350",
        "eff": "85",
    }
    v, warnings, _ = P.parse_query(q)
    assert warnings == []
    assert v["model"] == "qwen3-32b" and v["seq"] == 8192 and v["batch"] == 16
    assert v["link"] == "ib-xdr" and v["comp"] == "int4" and v["step"] == 42.5
    assert v["lw"] == 1 and v["tp"] == 4 and v["tpd"] == 8 and v["prefill"] == 350.0
    assert v["eff"] == 85.0


def test_alias_resolves_to_canonical_id():
    v, warnings, _ = P.parse_query({"model": "LLAMA-3-70B"})
    assert v["model"] == "llama-3.1-70b" and warnings == []


@pytest.mark.parametrize(
    "query, key, expected, fragment",
    [
        ({"seq": "0"}, "seq", 1, "outside"),
        ({"seq": "1e12"}, "seq", 131_072, "outside"),
        ({"seq": "nan"}, "seq", 1024, "not a number"),
        ({"batch": "99999"}, "batch", 4096, "outside"),
        ({"batch": "2.5"}, "batch", 2, "whole number"),
        ({"link": "ib-nd"}, "link", "100gbe", "ib-ndr"),
        ({"model": "llama-3.1-7b"}, "model", "llama-3.1-70b", "closest"),
        ({"kvd": "fp64"}, "kvd", "fp16", "kvd"),
        ({"tp": "3"}, "tp", 1, "does not divide"),
        ({"prefill": "soon"}, "prefill", "est", "neither"),
        ({"band": "50-20"}, "band", "20-50", "LOW-HIGH"),
        ({"links": "bogus"}, "links", P.DEFAULTS["links"], "nothing valid"),
        ({"batches": "1,x,100000"}, "batches", "1", "dropped"),
        ({"cfg": "%%%"}, "cfg", "", "unreadable"),
    ],
)
def test_bad_values_replaced_with_warning(query, key, expected, fragment):
    v, warnings, _ = P.parse_query(query)
    assert v[key] == expected
    assert any(fragment in w for w in warnings), warnings


def test_native_fp8_model_defaults_to_fp8_kv():
    v, _, _ = P.parse_query({"model": "llama-3.1-70b-fp8"})
    assert v["kvd"] == "fp8"


def test_imported_model_in_link():
    spec = catalog.get_model("gemma-3-27b")
    from dataclasses import replace

    spec = replace(spec, id="cfg-my-gemma")
    q = {"model": "cfg-my-gemma", "cfg": encode_model(spec), "seq": "2048"}
    v, warnings, imported = P.parse_query(q)
    assert warnings == [] and v["model"] == "cfg-my-gemma"
    assert imported["cfg-my-gemma"].groups == spec.groups
    assert P.to_query(v)["cfg"] == q["cfg"]


# ---- model codec ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mid",
    [
        "llama-3.1-70b",
        "deepseek-v3",
        "gemma-4-26b-a4b",
        "qwen3.5-27b",
        "nemotron-h-56b",
        "mistral-7b",
        "llama-3.1-70b-fp8",
    ],
)
def test_codec_round_trip_keeps_every_number(mid):
    spec = catalog.get_model(mid)
    back = decode_model(encode_model(spec))
    for s in (1, 1000, 100_000):
        s = min(s, spec.max_context_tokens)
        assert_allclose(
            evaluate(build_scenario(model=back, seq_len=s)).transfer_s,
            evaluate(build_scenario(model=spec, seq_len=s)).transfer_s,
        )
    assert back.kv_dtype_native == spec.kv_dtype_native


@pytest.mark.parametrize(
    "text", ["", "abc", "e30", "x" * 5000, encode_model(catalog.get_model("llama-3.1-8b"))[:-12]]
)
def test_codec_rejects_garbage(text):
    with pytest.raises(ValueError):
        decode_model(text)


# ---- sweeps ---------------------------------------------------------------------------------


def test_link_batch_table_matches_transfer():
    sc = build_scenario(model="llama-3-70b", latency_us=0)
    t = link_batch_table(sc, ["ib-ndr", "100gbe"], (1, 32))
    # article: IB NDR 6.7 / 214 ms; 100GbE 27 / 856 ms (exact 26.8 / 859.0)
    assert_allclose(t["batch 1"], [6.71, 26.84], atol=0.01)
    assert_allclose(t["batch 32"], [214.75, 859.0], atol=0.01)
    long = batch_sweep(sc, ["ib-ndr"], [1, 32])
    assert_allclose(long["transfer_ms"], [6.71, 214.75], atol=0.01)


def test_seq_grid_and_sweep():
    g = seq_grid(131_072)
    assert g[0] == 128 and g[-1] == 131_072 and np.all(np.diff(g) > 0)
    sc = build_scenario(model="llama-3-70b")
    curves, crit = seq_sweep(sc, ["100gbe", "nvlink4"])
    assert set(curves["link"]) == {"100gbe", "nvlink4"}
    assert dict(zip(crit["link"], crit["critical_seq_len"], strict=True))["100gbe"] == 1145


def test_model_seq_sweep_clips_to_context():
    sc = build_scenario(model="llama-3-70b")
    df = model_seq_sweep(sc, ["llama-2-7b", "llama-3.1-8b"], [1024, 8192])
    assert list(df[df["model"] == "llama-2-7b"]["seq_len"]) == [1024]  # 4,096-token model


def test_models_table_bytes_per_token():
    t = models_table("fp16", 1024).set_index("model")
    assert t.loc["llama-3.1-70b", "bytes_per_token_short"] == 327_680
    assert t.loc["deepseek-v3", "bytes_per_token_short"] == 70_272
    # gemma-3-27b at 8,192 tokens: (10 × 8,192 × 8,192 + 52 × 8,192 × 1,024) / 8,192 B/token
    t8 = models_table("fp16", 8192).set_index("model")
    assert_allclose(
        t8.loc["gemma-3-27b", "bytes_per_token_at_seq"],
        (10 * 8192 * 8192 + 52 * 8192 * 1024) / 8192,
    )


def test_mitigation_table_savings_and_order():
    sc = build_scenario(model="llama-3-70b", prefill_ms=200)
    opts = mitigation_options(sc)
    t = mitigation_table(sc, opts)
    assert t.iloc[0]["option"] == "Baseline" and t.iloc[0]["ttft_saving_ms"] == 0
    base = evaluate(sc)
    int8 = t[t["option"] == "INT8 transfer"].iloc[0]
    ev8 = evaluate(build_scenario(model="llama-3-70b", prefill_ms=200, compression="int8"))
    assert_allclose(int8["ttft_saving_ms"], (base.ttft_s - ev8.ttft_s) * 1e3)
    assert any("NVLink 4" in o for o in t["option"])  # the H100's scale-up link


def test_timeline_ends_where_ttft_ends():
    for kw in ({}, {"layerwise": True}, {"layerwise": True, "compression": "int8"}):
        sc = build_scenario(model="llama-3-70b", prefill_ms=100, **kw)
        tl = timeline(sc)
        ev = evaluate(sc)
        assert_allclose(tl["end_ms"].max(), ev.ttft_s * 1e3, rtol=1e-9)
        n_chunks = (tl["lane"] == "KV transfer").sum()
        assert n_chunks == (80 if kw.get("layerwise") else 1)


# ---- takeaways ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "ratio, word",
    [(0.1, "comfortable"), (0.9, "borderline"), (1.5, "borderline"), (3, "transfer-bound")],
)
def test_step_verdict(ratio, word):
    assert step_verdict(ratio) == word


def test_takeaways_carry_the_numbers():
    sc = build_scenario(model="llama-3-70b", prefill_ms=200)
    ev = evaluate(sc)
    text = overview_takeaway(ev)
    assert "0.89 decode steps" in text and "borderline" in text and "1,145 tokens" in text
    t = link_batch_table(sc, ["nvlink4", "ib-ndr", "100gbe"], (1, 32))
    it = interconnect_takeaway(t, 32, (20, 50), "100gbe")
    assert "0 of 3" in it and "2 take longer than 50 ms" in it  # NVLink 23.9 ms is within
    _, crit = seq_sweep(sc, ["100gbe"])
    assert "1,145 tokens" in sequence_takeaway(crit, {"100gbe": "100 GbE"}, 0.03)
    mt = mitigation_takeaway(mitigation_table(sc, mitigation_options(sc)))
    assert mt.startswith("Baseline TTFT is 256.8 ms")
    assert "64× spread" in models_takeaway(models_table("fp16", 1024), "llama-3.1-70b")


def test_units():
    assert fmt_bytes(335_544_320) == "335.5 MB" and fmt_bytes(10.7e9) == "10.7 GB"
    assert fmt_bytes(512) == "512 B"
    assert fmt_ms(0.0268435) == "26.8 ms"
    assert (
        fmt_time(2.5e-6) == "2.5 µs" and fmt_time(0.5) == "500 ms" and fmt_time(83.5) == "83.50 s"
    )
    assert fmt_tokens(None) == "none up to max context" and fmt_tokens(1145) == "1,145 tokens"


# ---- figures --------------------------------------------------------------------------------


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


def test_band_table_styles_cells():
    sc = build_scenario(model="llama-3-70b", latency_us=0)
    html = tables.band_table(link_batch_table(sc, ["nvlink4", "100gbe"], (1, 32)), (20, 50))
    cells, styles = read_html_table(html)
    assert list(cells.columns) == [
        "Interconnect", "GB/s per direction", "batch 1 [ms]", "batch 32 [ms]"
    ]  # fmt: skip
    # 100GbE: 26.8 ms at batch 1 (within 20-50 ms), 859.0 ms at batch 32 (above); NVLink 4 at
    # batch 32: 23.9 ms (within), batch 1: 0.7 ms (below)
    assert cells.loc[1, "batch 32 [ms]"] == "859.0"
    assert tables.BAND_CELL["above"] in styles.loc[1, "batch 32 [ms]"]
    assert tables.BAND_CELL["within"] in styles.loc[1, "batch 1 [ms]"]
    assert tables.BAND_CELL["below"] in styles.loc[0, "batch 1 [ms]"]
    assert "background" not in styles.loc[0, "Interconnect"]


def test_differences_table_marks_changed_cells_and_escapes():
    shown = pd.DataFrame({"A": ["1 ms", "<b>x</b>"], "B": ["2 ms", "<b>x</b>"]}, index=["t", "n"])
    differs = shown.apply(lambda col: col != shown["A"])
    cells, styles = read_html_table(tables.differences_table(shown, differs), index=True)
    assert cells.loc["n", "B"] == "<b>x</b>"  # shown as text, not markup
    assert tables.DIFFERS_CELL in styles.loc["t", "B"]
    assert tables.DIFFERS_CELL not in styles.loc["t", "A"] + styles.loc["n", "B"]


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
    from kvmodel.sweeps import model_seq_sweep, seq_grid, seq_sweep

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
    for mid in ("llama-3-70b", "mistral-7b"):
        part = df[df["model"] == mid]
        (trace,) = [t for n, t in named.items() if n.startswith(mid)]
        assert_allclose(trace.y, part["transfer_ms"])


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
    assert {t.xaxis for t in pair.data[: len(left.data)]} == {"x"}
    assert {t.xaxis for t in pair.data[len(left.data) :]} == {"x2"}
    assert_allclose(np.asarray(pair.data[0].x, dtype=float), table["exposed_transfer_ms"])
    lo1, hi1 = pair.layout.xaxis.domain
    lo2, hi2 = pair.layout.xaxis2.domain
    assert 0 <= lo1 < hi1 < lo2 < hi2 <= 1
    # the decode-step line stays on the left panel
    assert [s.xref for s in pair.layout.shapes] == ["x"]

    df = tornado(sc)
    rows = figures.figure_tornado_panels(df)
    ttft, share = (figures.figure_tornado(df, metric=m) for m in ("ttft", "share"))
    assert len(rows.data) == len(ttft.data) + len(share.data)
    assert {(t.xaxis, t.yaxis) for t in rows.data[: len(ttft.data)]} == {("x", "y")}
    assert {(t.xaxis, t.yaxis) for t in rows.data[len(ttft.data) :]} == {("x2", "y2")}
    top, bottom = rows.layout.yaxis.domain, rows.layout.yaxis2.domain
    assert 0 <= bottom[0] < bottom[1] < top[0] < top[1] <= 1
    assert rows.layout.xaxis.range == ttft.layout.xaxis.range
    assert rows.layout.height == ttft.layout.height + share.layout.height


def test_number_formats_read_without_scientific_notation():
    from kvmodel.units import fmt_bandwidth, fmt_sig, fmt_tokens

    assert fmt_bandwidth(2.933e14) == "293,300 GB/s"  # was "2.933e+05 GB/s"
    assert fmt_bandwidth(12.5e9) == "12.5 GB/s" and fmt_bandwidth(450e9) == "450 GB/s"
    assert fmt_bandwidth(48.0213e9) == "48.02 GB/s" and fmt_bandwidth(1e9) == "1 GB/s"
    assert fmt_sig(0.000123456) == "0.0001235" and fmt_sig(-1234.5) == "-1,234"
    assert fmt_tokens(1) == "1 token" and fmt_tokens(1145) == "1,145 tokens"


def test_option_labels_never_sit_on_the_decode_step_line():
    from ui.figures import figure_option_transfer

    table = pd.DataFrame({"option": ["a", "b", "c"], "exposed_transfer_ms": [20.0, 100.0, 2.0]})
    bar = figure_option_transfer(table, step_ms=30.0).data[0]
    # axis 0-130 ms: 20 ms ends just before the 30 ms line, so its label goes inside the bar
    # (outside it would cross the line); 100 ms is long; 2 ms is far from the line
    assert list(bar.textposition) == ["inside", "inside", "outside"]


def test_efficiency_chart_names_the_nominal_bandwidth_once():
    from types import SimpleNamespace

    from ui.figures import figure_efficiency_curve

    fit = SimpleNamespace(bandwidth_at=lambda s: np.full(np.shape(s), 40e9))
    sizes, bws = [1e3, 1e6], [20e9, 40e9]
    title = figure_efficiency_curve(sizes, bws, fit, nominal=48.02e9, link="Custom 48.02 GB/s")
    assert title.layout.title.text.endswith("achieved ÷ nominal (Custom 48.02 GB/s)")
    ndr = figure_efficiency_curve(sizes, bws, fit, nominal=50e9, link="InfiniBand NDR 400G")
    assert ndr.layout.title.text.endswith("achieved ÷ nominal (InfiniBand NDR 400G, 50 GB/s)")


def test_histogram_bars_cover_their_buckets_exactly_on_a_log_axis():
    from ui.figures import figure_gap_distribution

    buckets = [(0.001, 0), (0.0025, 10), (0.005, 30), (float("inf"), 30)]  # cumulative, s
    bar = figure_gap_distribution(buckets).data[0]
    # drawn from each lower edge across its width (a centre and a width were asymmetric on a
    # log axis: the 1-2.5 ms bucket started at 0.83 ms)
    assert list(bar.x) == [0.5, 1.0, 2.5] and bar.offset == 0
    assert_allclose(np.add(bar.x, bar.width), [1.0, 2.5, 5.0])
    assert list(bar.y) == [0, 10, 20]


def test_huge_times_and_ratios_fit_their_tiles():
    from kvmodel.units import fmt_ms_or_s, fmt_ratio

    assert fmt_ms_or_s(0.02685) == "26.85 ms" and fmt_ms_or_s(9.5) == "9,500.00 ms"
    assert fmt_ms_or_s(14_073.74884) == "14,073.75 s"  # not "14,073,748.84 ms"
    assert fmt_ratio(0.895) == "0.90×" and fmt_ratio(469_124.96) == "469,125×"


def test_overview_bar_labels_switch_to_seconds_when_huge():
    from ui.figures import figure_transfer_vs_step, figure_ttft_waterfall

    assert list(figure_transfer_vs_step(26.85, 30.0).data[0].text) == ["26.85 ms", "30.0 ms"]
    big = figure_ttft_waterfall(339_819_204.9, 14_073_748.8, 30.0).data[0].text
    assert list(big) == ["339,819.2 s", "14,073.7 s", "30.0 ms", "353,893.0 s"]
