"""The Capacity page's "Replay the trace" section, its figure, CSV and handout (issue 22)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from app_helpers import app

from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import scenario_from_inputs
from kvmodel.traffic import load_traffic, sample_path
from kvview.capacity_report import capacity_report_html
from kvview.figures.replay import figure_replay
from kvview.replay_words import replay_frame

PAGE = "pages/capacity.py"


@pytest.fixture(autouse=True)
def _fresh_caches():
    from ui import perf

    perf.clear_cache()
    yield
    perf.clear_cache()


def _replayed(size_by="analytic"):
    sc = scenario_from_inputs({})
    req = load_traffic(sample_path("azure-conv"), per_request=True)
    wl = cap.Workload.from_requests(req)
    slo = cap.Slo(2.0, 0.05)
    plan = cap.plan(sc, wl, slo)
    stream = rp.stream_for(wl, sc.model.max_context_tokens, req)
    return sc, slo, plan, rp.replay_plan(sc, plan, stream, slo, size_by=size_by)


def test_replay_is_drawn_only_when_opened():
    at = app(page=PAGE, article=False)
    charts = len(at.get("plotly_chart"))
    assert not any("Replay and formulas" in c.value for c in at.caption)
    at.session_state["cap_replay_open"] = True
    at.run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == charts + 1
    table = at.dataframe[-1].value
    _, slo, _, done = _replayed()
    rows = dict(zip(table["quantity"], table["value"], strict=True))
    assert rows["Requests replayed"].startswith(f"{done.result.requests:,}")  # 19,366
    assert "the trace's own arrivals" in rows["Requests replayed"]
    verdict = "meets" if done.result.meets_slo else "misses"
    assert any(m.value.startswith(f"**The replay {verdict}") for m in at.markdown)


def test_size_by_replay_from_the_link():
    at = app({"size": "replay", "ttft_slo": "300", "stack": "mooncake"}, page=PAGE,
             article=False)  # fmt: skip
    at.session_state["cap_replay_open"] = True
    at.run()
    assert not at.exception
    assert at.radio(key="w_size").value == "replay"


def test_figure_has_titles_units_and_hover():
    _, slo, _, done = _replayed()
    fig = figure_replay(done.result.series, ttft_slo_s=slo.ttft_s)
    assert fig.layout.title.text
    assert fig.layout.yaxis2.title.text == "TTFT p90 [ms]"
    assert fig.layout.xaxis3.title.text == "minute of the trace [min]"
    assert all(t.hovertemplate and ("ms" in t.hovertemplate or "requests" in t.hovertemplate
                                    or "%" in t.hovertemplate) for t in fig.data)  # fmt: skip
    target = [t for t in fig.data if t.name == "TTFT target"][0]
    assert np.allclose(target.y, 2000.0)


def test_csv_of_the_series():
    _, _, _, done = _replayed()
    df = replay_frame(done.result.series)
    assert list(df.columns) == ["minute of the trace [min]", "arrivals [requests]",
                                "TTFT p90 [ms]", "decode KV memory in use [%]"]  # fmt: skip
    assert df["arrivals [requests]"].sum() == 19_366


def test_handout_carries_the_replay():
    sc, slo, plan, done = _replayed()
    sweep = cap.rate_sweep(sc, cap.Workload.fixed(1.0, 1024, 256), slo, [1.0, 2.0])
    html = capacity_report_html(plan, sweep, sc=sc, slo=slo, rps=plan.rps, price=None,
                                traffic="azure", tp_mode="searched", replayed=done)  # fmt: skip
    assert 'id="replay"' in html and "chart-replay" in html and "Requests replayed" in html
    plain = capacity_report_html(plan, sweep, sc=sc, slo=slo, rps=plan.rps, price=None,
                                 traffic="azure", tp_mode="searched")  # fmt: skip
    assert 'id="replay"' not in plain


def test_which_decode_gpu_opens_on_demand():
    from kvmodel import catalog

    at = app(page=PAGE, article=False)
    n = len(at.dataframe)
    at.session_state["cap_gpus_open"] = True
    at.run()
    assert not at.exception
    table = at.dataframe[-1].value
    assert len(at.dataframe) == n + 1
    assert set(table["decode GPU"]) == {g.name for g in catalog.gpus().values()}
    ok = table[table["meets the targets"] == "yes"]
    assert list(ok["GPUs [GPUs]"]) == sorted(ok["GPUs [GPUs]"])  # no price: fewest first
    # shown with short labels, the unit in the cells and rounded times (the CSV keeps the
    # headers with units); no price set: no cost columns (session 20's review)
    shown = json.loads(at.dataframe[-1].proto.columns)
    assert shown["TTFT p90 [ms]"]["label"] == "TTFT p90"
    assert shown["TTFT p90 [ms]"]["type_config"]["format"] == "%.0f ms"
    assert shown["meets the targets"]["label"] == "Meets targets"
    assert shown["cost [$ per hour]"]["hidden"] is True


def test_the_replay_says_which_arrivals_it_plays():
    """Session 20's review: the expander said 'the trace's own arrivals' for a fixed workload
    (Poisson arrivals), and a timestamped trace showed the 'Requests (no timestamps)' box."""
    at = app({"wl": "trace", "trace": "azure-code"}, page=PAGE, article=False)
    at.session_state["cap_replay_open"] = True
    at.run()
    labels = [e.label for e in at.expander]
    assert "Replay: the plan under the trace's own arrivals" in labels
    assert "w_rn" not in [n.key for n in at.number_input]
    assert any("all of its requests are replayed" in c.value for c in at.caption)
    fixed = app({"wl": "fixed", "rps": "5"}, page=PAGE, article=False)
    fixed.session_state["cap_replay_open"] = True
    fixed.run()
    assert not fixed.exception
    assert "Replay: the plan under Poisson arrivals at 5 requests/s" in [
        e.label for e in fixed.expander]
    assert "w_rn" in [n.key for n in fixed.number_input]
    disagree = [c.value for c in [*at.caption, *fixed.caption] if "disagree" in c.value]
    assert len(disagree) <= 2 and all(c.count("Replay and formulas") == 1 for c in disagree)
