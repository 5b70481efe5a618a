"""Tornado sensitivity table and its figure."""

import pytest

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.sensitivity import COLUMNS, outcome, tornado
from kvmodel.topology import is_scale_up, scale_up_feasible
from kvmodel.transfer import evaluate
from kvview.figures import figure_tornado
from kvview.fmt import fmt_setting


def base(**kw):
    return build_scenario(model="llama-3-70b", **kw)


def row(df, name):
    hit = df[df["input"] == name]
    assert len(hit) == 1, f"no single row {name!r} in {list(df['input'])}"
    r = hit.iloc[0].copy()  # kvmodel gives SI settings; the labels are kvview.fmt's
    r["low_label"], r["high_label"] = (fmt_setting(r[k], r["unit"]) for k in ("low", "high"))
    return r


def test_columns_rows_order_and_attrs():
    sc = base()
    df = tornado(sc)
    assert tuple(df.columns) == COLUMNS
    assert set(df["input"]) == {
        "sequence length",
        "batch",
        "link bandwidth (per direction)",
        "link latency",
        "link efficiency",
        "decode step",
        "prefill MFU (estimated prefill)",
        "interconnect",
        "transfer compression",
        "layer-wise sending",
    }
    assert list(df["delta_ttft_s"]) == sorted(df["delta_ttft_s"], reverse=True)
    assert (df["delta_ttft_s"] == (df["ttft_high_s"] - df["ttft_low_s"]).abs()).all()
    ev = evaluate(sc)
    assert df.attrs["ttft_s"] == pytest.approx(ev.ttft_s)
    assert df.attrs["share"] == pytest.approx(ev.transfer_share_of_ttft)
    assert df.attrs["rel"] == 0.5


def test_numeric_rows_hand_computed():
    sc = base(prefill_ms=200.0, latency_us=0.0)
    df = tornado(sc)
    s = row(df, "sequence length")
    assert (s["low_label"], s["high_label"]) == ("512 tokens", "1,536 tokens")
    # prefill is given (200 ms): TTFT = 200 + bytes / 12.5 GB/s + 30 ms
    assert s["ttft_low_s"] == pytest.approx(0.200 + 327_680 * 512 / 12.5e9 + 0.030)
    assert s["ttft_high_s"] == pytest.approx(0.200 + 327_680 * 1536 / 12.5e9 + 0.030)
    b = row(df, "batch")
    assert (b["low_label"], b["high_label"]) == ("1 request", "2 requests")
    p = row(df, "prefill time")
    assert (p["low_label"], p["high_label"]) == ("100 ms", "300 ms")
    assert (p["low"], p["high"], p["unit"]) == (pytest.approx(0.1), pytest.approx(0.3), "s")
    assert p["delta_ttft_s"] == pytest.approx(0.200)
    d = row(df, "decode step")
    assert d["delta_ttft_s"] == pytest.approx(0.030)
    bw = row(df, "link bandwidth (per direction)")
    assert (bw["low_label"], bw["high_label"]) == ("6.25 GB/s", "18.75 GB/s")
    assert bw["ttft_low_s"] > bw["ttft_high_s"]  # more bandwidth, shorter TTFT
    assert "prefill MFU (estimated prefill)" not in set(df["input"])
    assert "quantize/dequantize throughput" not in set(df["input"])


def test_efficiency_and_mfu_are_clamped():
    df = tornado(base(efficiency=0.8, mfu=0.9))
    e = row(df, "link efficiency")
    assert (e["low_label"], e["high_label"]) == ("40 %", "100 %")
    m = row(df, "prefill MFU (estimated prefill)")
    assert m["high_label"] == "MFU 100 %"
    s = row(tornado(base(seq_len=100_000)), "sequence length")
    assert s["high_label"] == "131,072 tokens"  # the model's max context


def test_categorical_rows_cover_every_option():
    sc = base(compression="int8")
    df = tornado(sc)
    assert "quantize/dequantize throughput" in set(df["input"])
    links = list(dict.fromkeys(catalog.links().values()))
    # every link the pair can be built on (session 20: NVLink 5 was the best setting of an
    # H100 pair, which has no NVLink 5, nor any other GPU's fabric)
    pair = (sc.gpu, sc.gpus_prefill, sc.gpus_decode)
    built = [lk for lk in links if not is_scale_up(lk) or scale_up_feasible(*pair, lk)]
    assert {lk.id for lk in links} - {lk.id for lk in built} >= {"nvlink5", "infinity-fabric"}
    ttfts = {lk.name: outcome(sc.with_link(lk))[0] for lk in built}
    ic = row(df, "interconnect")
    assert ic["low_label"] not in ("NVLink 5 (B200)", "NVLink 3 (A100)")
    assert ic["ttft_low_s"] == pytest.approx(min(ttfts.values()))
    assert ic["ttft_high_s"] == pytest.approx(max(ttfts.values()))
    assert ic["low_label"] == min(ttfts, key=ttfts.get)
    assert ic["high_label"] == "25 GbE (TCP)"
    comp = row(df, "transfer compression")
    assert comp["high_label"] == "no compression" and comp["low_label"] == "INT4"
    lw = row(df, "layer-wise sending")
    assert {lw["low_label"], lw["high_label"]} == {"layer-wise on", "layer-wise off"}


@pytest.mark.parametrize("rel", [0, 1, -0.1, 1.5, "0.5", True])
def test_bad_rel(rel):
    with pytest.raises(ValueError, match="rel"):
        tornado(base(), rel=rel)


@pytest.mark.parametrize("metric, unit", [("ttft", "ms"), ("share", "%")])
def test_figure_tornado(metric, unit):
    df = tornado(base())
    fig = figure_tornado(df, metric=metric)
    assert fig.layout.title.text
    assert f"[{unit}]" in fig.layout.xaxis.title.text
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 2
    for t in bars:
        assert unit in t.hovertemplate
        assert len(t.y) == len(df)
    scale = 1e3 if metric == "ttft" else 100
    key = "ttft_s" if metric == "ttft" else "share"
    assert bars[0].base[0] == pytest.approx(df.attrs[key] * scale)
    shown = f"{df.attrs[key] * scale:,.1f} ms" if metric == "ttft" else f"{df.attrs[key]:.2%}"
    assert any(f"base {shown}".replace("%", " %") in (t.name or "") for t in fig.data)


def test_figure_tornado_axes_never_read_negative_and_long_ttft_in_seconds():
    share = figure_tornado(tornado(base()), metric="share")
    assert share.layout.xaxis.range[0] < 0  # room for the labels left of the bars ...
    assert min(share.layout.xaxis.tickvals) == 0  # ... but no negative share on the axis
    huge = tornado(build_scenario(model="llama-2-7b", seq_len=4096, batch=4096))
    assert huge.attrs["ttft_s"] > 10
    ttft = figure_tornado(huge, metric="ttft")
    assert "[s]" in ttft.layout.xaxis.title.text  # 1,197 s, not "1,197,500.4 ms"


def test_figure_tornado_bad_input():
    df = tornado(base())
    with pytest.raises(ValueError, match="metric"):
        figure_tornado(df, metric="bytes")
    bare = df.copy()
    bare.attrs = {}
    with pytest.raises(ValueError, match="base"):
        figure_tornado(bare)
    assert figure_tornado(bare, base=0.3).data[0].base[0] == pytest.approx(300)


def test_every_ttft_counts_the_frameworks_request_cost():
    # One definition (Scenario.ttft_s): the Overview's TTFT, the tornado's base, the share
    # target's solver, the options table and the timeline all include vLLM's request cost
    # (data/frameworks.csv: 37.7 ms for a P/D request); the tornado once left it out (a 3.7 %
    # share on the Overview read 5.25 % on Plan).
    from kvmodel.evaluation import evaluate
    from kvmodel.solve import try_mitigations
    from kvmodel.sweeps import Option, mitigation_table, timeline

    sc = build_scenario(model="llama-3.1-70b", link="100gbe", framework="vllm")
    ev = evaluate(sc)
    assert sc.request_cost_s == ev.framework_request_s > 0.03
    assert ev.ttft_s == pytest.approx(
        sc.request_cost_s + ev.prefill_s + ev.exposed_s + sc.decode_step_s)
    df = tornado(sc)
    assert df.attrs["ttft_s"] == pytest.approx(ev.ttft_s)
    assert df.attrs["share"] == pytest.approx(ev.transfer_share_of_ttft)
    first = try_mitigations(sc, criterion="share")[0]  # the ladder starts at the scenario
    assert first.transfer_share == pytest.approx(ev.transfer_share_of_ttft)
    row = mitigation_table(sc, [Option("this", sc)]).iloc[0]
    parts = ("framework_request_s", "prefill_s", "exposed_transfer_s", "decode_step_s")
    assert sum(row[c] for c in parts) == pytest.approx(row["ttft_s"])
    tl = timeline(sc)
    assert tl["lane"].iloc[0] == "Framework/request"
    assert tl["end_s"].iloc[0] == pytest.approx(sc.request_cost_s)
    assert tl["end_s"].iloc[-1] == pytest.approx(ev.ttft_s)  # the first decode step ends at TTFT


def test_the_ttft_chart_draws_the_request_cost_only_when_there_is_one():
    from kvmodel.sweeps import Option, mitigation_table, timeline
    from kvview.figures import figure_timeline, figure_ttft
    from kvview.fmt import in_ms

    for fw, drawn in (("vllm", True), ("none", False)):
        sc = build_scenario(framework=fw)
        names = {t.name for t in figure_ttft(in_ms(mitigation_table(sc, [Option("a", sc)]))).data}
        assert ("Framework/request" in names) is drawn
        assert {"Prefill", "KV transfer", "First decode step"} <= names
        lanes = {t.name for t in figure_timeline(in_ms(timeline(sc)), title="t").data}
        assert ("Framework/request" in lanes) is drawn


def test_ttft_bars_end_with_their_total():
    """Each option's stacked TTFT bar ends with its TTFT in ms (session 22's review: the
    stacks could not be read as numbers without hovering); the axis leaves room for it."""
    from kvmodel.sweeps import Option, mitigation_table
    from kvview.figures import figure_ttft
    from kvview.fmt import in_ms

    sc = build_scenario(stack="mooncake", tp=8, framework="vllm")
    lw = build_scenario(stack="mooncake", tp=8, framework="vllm", layerwise=True)
    table = in_ms(mitigation_table(sc, [Option("a", sc), Option("b", lw)], critical=False))
    fig = figure_ttft(table)
    want = [f"{evaluate(s).ttft_s * 1e3:,.1f} ms" for s in (sc, lw)]
    assert list(fig.data[-1].text) == want and fig.data[-1].textposition == "outside"
    assert all(not t.text for t in fig.data[:-1])
    assert fig.layout.xaxis.range[1] > max(table["ttft_ms"])


def test_layouts_legend_names_models_as_the_sidebar_does():
    """'Llama-3.1-70B (GQA)', not the id 'llama-3.1-70b (gqa)' (session 22's review); a model
    not in the catalog (an imported config) keeps its id."""
    import pandas as pd

    from kvview.figures.sweeps import figure_models_seq

    df = pd.DataFrame({"model": ["llama-3.1-70b", "llama-3.1-70b", "my-import", "my-import"],
                       "attention": ["gqa", "gqa", "sliding", "sliding"],
                       "seq_len": [1024, 2048, 1024, 2048],
                       "transfer_ms": [1.0, 2.0, 0.5, 0.6]})  # fmt: skip
    names = [t.name for t in figure_models_seq(df, threshold_ms=10.0, link="100 GbE").data]
    assert names[:2] == ["Llama-3.1-70B (GQA)", "my-import (sliding)"]


def test_model_chips_and_bytes_chart_name_models_as_the_legend_does():
    """Session 23's review: Sequence's model chips read 'llama-2-7b (mha)' beside the legend's
    'Llama-2-7B (MHA)'; the Models chart's axis read ids.  An imported model keeps its id."""
    from app_helpers import app

    from kvmodel.sweeps import models_table
    from kvview.figures import figure_bytes_per_token, model_layout_label

    assert model_layout_label("llama-2-7b", "mha") == "Llama-2-7B (MHA)"
    assert model_layout_label("cfg-mine", "gqa") == "cfg-mine (GQA)"
    at = app({"models": "llama-2-7b,llama-3.1-70b"}, "pages/sequence.py")
    at.session_state["seq_tab"] = "Per attention layout"  # the tab is drawn once opened
    at.run()
    chips = at.multiselect(key="w_models")
    assert "Llama-2-7B (MHA)" in chips.options and "llama-2-7b (mha)" not in chips.options
    fig = figure_bytes_per_token(models_table())
    shown = {x for t in fig.data for x in t.x}
    assert "Llama-3.1-70B" in shown and "llama-3.1-70b" not in shown
    assert list(fig.layout.xaxis.categoryarray)[0] in shown
