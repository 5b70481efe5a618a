"""The Capacity page through AppTest: its tiles follow kvmodel.capacity, its inputs travel in the
link, a bad link value is a warning, and its CSVs hold the plan and the rate sweep."""

import base64
import json
from io import BytesIO

import numpy as np
import pandas as pd
import pytest
from app_helpers import APP, app, metric
from html_tables import read_html_table
from streamlit.testing.v1 import AppTest

from kvmodel import capacity as cap
from kvmodel import traffic as tr
from kvmodel.build import scenario_from_inputs
from kvmodel.traffic import load_traffic
from kvview import csv_capacity
from kvview.capacity_words import capacity_takeaway, gpus
from kvview.fmt import fmt_busy, fmt_time

PAGE = "pages/capacity.py"
# A fixed workload with non-default targets and a price: everything the page reads from a link.
FIXED = {
    "stack": "mooncake",  # a version-2 link (without it, a link means version 1's defaults)
    "wl": "fixed",
    "rps": "40",
    "out": "300",
    "seq": "2048",
    "ttft_slo": "1500",
    "ttft_pct": "99",
    "tpot_slo": "60",
    "price": "2.5",
}


@pytest.fixture(autouse=True)
def _fresh_caches():
    from ui import perf

    perf.clear_cache()
    yield
    perf.clear_cache()


def open_at(query: dict) -> AppTest:
    """The app opened straight at the Capacity page's address (where a shared link lands: the
    link's notices show on the first page drawn)."""
    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params.update(query)
    at.switch_page(PAGE)
    at.run()
    return at


def _expected_fixed():
    sc = scenario_from_inputs({"seq": 2048})  # the app's defaults otherwise
    wl = cap.Workload.fixed(40.0, 2048, 300)
    slo = cap.Slo(ttft_s=1.5, tpot_s=0.060, ttft_percentile=99.0)
    return sc, wl, slo, cap.plan(sc, wl, slo, gpu_price_per_hour=2.5)


def test_defaults_render_the_sample_trace_plan():
    at = app(page=PAGE, article=False)
    sc = scenario_from_inputs({})
    req = load_traffic(tr.sample_path("azure-conv"))
    wl = cap.Workload.from_requests(req)
    slo = cap.Slo(
        ttft_s=float(at.session_state["ttft_slo"]) / 1e3,
        tpot_s=float(at.session_state["tpot_slo"]) / 1e3,
        ttft_percentile=float(at.session_state["ttft_pct"]),
    )
    plan = cap.plan(sc, wl, slo)
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    assert metric(at, "Colocated GPUs") == gpus(plan.colocated_gpus)
    assert at.info[0].value == capacity_takeaway(plan, rps=wl.rps, slo=slo)
    assert any("Azure LLM inference 2023: conversation" in c.value for c in at.caption)
    # two tabs, each chart drawn only while its tab is open: GPUs against the rate first; the
    # split over what sizes each pool (one figure of two panels) once its tab is opened
    assert [t.label for t in at.tabs] == ["GPUs against the rate", "How the plan is made up"]
    assert _chart_titles(at) == ["GPUs needed against the request rate"]
    at.session_state["cap_rate_tab"] = "How the plan is made up"
    at.run()
    assert _chart_titles(at) == ["How the disaggregated plan is made up"]


def _chart_titles(at) -> list[str]:
    return [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]


def test_a_rate_of_0_says_which_rate_the_trace_gives():
    """"0.00" in the rate box means the trace's own rate: the page says which, from the
    trace's timestamps (Workload.from_requests of the sample: its n ÷ span); a rate typed in
    replaces it and the note goes."""
    at = app(page=PAGE, article=False)
    rate = cap.Workload.from_requests(load_traffic(tr.sample_path("azure-conv"))).rps
    notes = [c.value for c in at.caption if "the trace's own rate" in c.value]
    assert notes == [f"0: the trace's own rate, {rate:,.2f} requests/s"]
    at.number_input(key="w_rps").set_value(5.0).run()
    assert not any("the trace's own rate" in c.value for c in at.caption)


def test_a_link_with_capacity_inputs_shows_the_models_numbers():
    at = app(FIXED, PAGE, article=False)
    _, wl, slo, plan = _expected_fixed()
    assert at.radio(key="w_wl").value == "fixed"
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    assert metric(at, "Colocated GPUs") == gpus(plan.colocated_gpus)
    saves = plan.disaggregation_saves_gpus
    if saves < 0:  # said as a cost (session 19: no "saves −4 GPUs")
        assert metric(at, "Disaggregation costs") == gpus(-saves)
    else:
        assert metric(at, "Disaggregation saves") == gpus(saves)
    assert metric(at, "TTFT p99") == fmt_time(plan.ttft_s)
    assert metric(at, "TPOT") == fmt_time(plan.tpot_s)
    assert metric(at, "Link utilisation") == fmt_busy(plan.link_utilization)
    assert metric(at, "Meets the targets") == ("yes" if plan.meets_slo else "no")
    assert metric(at, "Cost per hour") == f"${plan.cost_per_hour:,.0f}"
    assert at.info[0].value == capacity_takeaway(plan, rps=40.0, slo=slo, price=2.5)
    for key, value in FIXED.items():  # the inputs stay in the link
        assert at.query_params[key] in (value, [value]), key


def test_changing_a_target_redraws_and_rewrites_the_link():
    at = app(FIXED, PAGE, article=False)
    at.number_input(key="w_tpot_slo").set_value(20.0).run()
    sc, wl, _, _ = _expected_fixed()
    slo = cap.Slo(ttft_s=1.5, tpot_s=0.020, ttft_percentile=99.0)
    plan = cap.plan(sc, wl, slo, gpu_price_per_hour=2.5)
    assert metric(at, "TPOT").startswith(fmt_time(plan.tpot_s))
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    assert at.query_params["tpot_slo"] in ("20", ["20"])


def test_moving_the_rate_back_and_forth_shows_each_rates_plan():
    """The page keeps one sizing per targets and looks rates up (a rate drawn before is not
    sized again): every rate must still show exactly its own plan and the grid around it."""
    at = app(FIXED, PAGE, article=False)
    sc, _, slo, _ = _expected_fixed()
    for rps in (55.0, 40.0, 7.5, 55.0):
        at.number_input(key="w_rps").set_value(rps).run()
        plan = cap.plan(sc, cap.Workload.fixed(rps, 2048, 300), slo, gpu_price_per_hour=2.5)
        assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus), rps
        assert metric(at, "Colocated GPUs") == gpus(plan.colocated_gpus), rps
        assert metric(at, "TTFT p99") == fmt_time(plan.ttft_s), rps
        assert at.info[0].value == capacity_takeaway(plan, rps=rps, slo=slo, price=2.5)
        x = json.loads(at.get("plotly_chart")[0].proto.spec)["data"][0]["x"]
        drawn = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"])  # plotly's binary
        np.testing.assert_allclose(drawn, cap.sweep_rates(rps), rtol=1e-12)
        # the rate reruns the results only (its callback): AppTest's tree then holds them
        # alone, where a browser keeps the controls drawn; the whole page, for the next one
        at.run()


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ({"ttft_slo": "-5"}, "ttft_slo"),
        ({"tp": "banana"}, "tp"),
        ({"ttft_pct": "abc"}, "ttft_pct"),
        ({"wl": "nope"}, "wl"),
    ],
)
def test_a_bad_link_value_is_a_warning_not_a_traceback(query, says):
    at = open_at({"stack": "mooncake", **query})
    assert not at.exception
    warned = " ".join(w.value for w in at.warning)
    assert f"{says}=" in warned or f"{says}:" in warned, warned
    assert at.metric  # the page still sizes a deployment


def test_plan_csv_holds_both_options_with_units_and_the_link():
    from kvview.csv_tables import csv_handout

    _, _, slo, plan = _expected_fixed()
    df = csv_capacity.plan_frame(plan, rps=40.0, slo=slo, price=2.5)
    raw = csv_handout(df, scenario_link="http://x/capacity?wl=fixed&rps=40")
    back = pd.read_csv(BytesIO(raw)).set_index("quantity")  # pandas' defaults (issue 24)
    assert list(back.columns) == ["disaggregated", "colocated", "scenario link"]
    assert set(back["scenario link"]) == {"http://x/capacity?wl=fixed&rps=40"}
    assert float(back.loc["GPUs [GPUs]", "disaggregated"]) == plan.disaggregated_gpus
    assert float(back.loc["GPUs [GPUs]", "colocated"]) == plan.colocated_gpus
    assert float(back.loc["prefill GPUs [GPUs]", "disaggregated"]) == plan.prefill_gpus
    assert float(back.loc["TPOT target [ms]", "disaggregated"]) == 60.0
    assert float(back.loc["cost [$ per hour]", "disaggregated"]) == pytest.approx(
        plan.cost_per_hour, rel=1e-3
    )
    assert float(back.loc["TTFT at p99 [ms]", "disaggregated"]) == pytest.approx(
        plan.ttft_s * 1e3, rel=1e-3
    )


def test_rate_csv_is_the_sweep_with_units():
    from kvview.csv_tables import csv_handout

    sc, wl, slo, _ = _expected_fixed()
    rates = (10.0, 40.0, 160.0)
    sweep = cap.rate_sweep(sc, wl, slo, rates, gpu_price_per_hour=2.5)
    raw = csv_handout(csv_capacity.sweep_frame(sweep, ttft_percentile=99.0))
    back = pd.read_csv(BytesIO(raw))
    assert back.columns[0] == "request rate [requests/s]"
    np.testing.assert_allclose(back["request rate [requests/s]"], rates)
    np.testing.assert_array_equal(back["disaggregated GPUs [GPUs]"], sweep["disaggregated_gpus"])
    np.testing.assert_array_equal(back["colocated GPUs [GPUs]"], sweep["colocated_gpus"])
    assert set(back["disaggregated meets the SLO"]) <= {"yes", "no"}
    assert "disaggregated TTFT at p99 [ms]" in back.columns


def test_an_upload_on_traffic_is_sized_and_a_missing_one_falls_back_to_the_sample():
    at = app(page="pages/traffic.py", article=False)
    at.radio(key="w_traffic_source").set_value("Upload").run()
    csv = b"timestamp,prompt_tokens,output_tokens\n0,1000,200\n1,3000,100\n2,500,300\n3,800,50\n"
    at.file_uploader(key="traffic_upload").set_value(("mine.csv", csv, "text/csv")).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("mine.csv (the Traffic page's upload)" in c.value for c in at.caption)
    # the Traffic page keeps an upload as counts per prompt length with each length's output
    # moments: the plan is the one of the requests themselves, their outputs included
    assert not any("every request generates" in c.value for c in at.caption)
    assert at.number_input(key="w_out").disabled  # the trace's own outputs are used
    per_request = cap.Workload.from_requests(load_traffic(csv, name="mine.csv"))
    assert per_request.mean_output_tokens == 162.5  # (200 + 100 + 300 + 50) / 4
    slo = cap.Slo(
        ttft_s=float(at.session_state["ttft_slo"]) / 1e3,
        tpot_s=float(at.session_state["tpot_slo"]) / 1e3,
        ttft_percentile=float(at.session_state["ttft_pct"]),
    )
    plan = cap.plan(scenario_from_inputs({}), per_request, slo)
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    assert metric(at, "TTFT p90") == fmt_time(plan.ttft_s)
    assert metric(at, "TPOT").startswith(fmt_time(plan.tpot_s))
    # an upload without output lengths is sized with the output-length input, and says so
    at.switch_page("pages/traffic.py").run()
    bare = b"timestamp,prompt_tokens\n0,1000\n1,3000\n2,500\n3,800\n"
    at.file_uploader(key="traffic_upload").set_value(("bare.csv", bare, "text/csv")).run()
    at.switch_page(PAGE).run()
    assert any("every request generates 256 tokens" in c.value for c in at.caption)
    assert not at.number_input(key="w_out").disabled
    wl = cap.Workload.from_requests(load_traffic(bare, name="bare.csv"), output_len=256)
    plan = cap.plan(scenario_from_inputs({}), wl, slo)
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    at.switch_page("pages/traffic.py").run()
    at.button(key="traffic_forget").click().run()  # Upload still chosen, no file loaded
    at.switch_page(PAGE).run()
    assert any("a sample: no upload is loaded" in c.value for c in at.caption)
    assert at.metric


def test_equal_memo_keys_give_equal_plans():
    """The page keys its memo on ``plan_key(sc)``: scenarios with equal keys (they differ in
    what the plan does not read) must have equal plans, and a fixed prefill time (which the
    plan notes) must change the key."""
    from ui.views.capacity import plan_key

    wl = cap.Workload.fixed(20.0, 2048, 300)
    slo = cap.Slo(ttft_s=2.0, tpot_s=0.05)
    base = scenario_from_inputs({})
    for inputs in ({"batch": 32}, {"batch": 32, "seq": 8192}, {"seq": 300}):
        sc = scenario_from_inputs(inputs)
        assert plan_key(sc) == plan_key(base), inputs
        for kw in ({}, {"prefill_tp": 8, "decode_tp": 8}):
            assert cap.plan(sc, wl, slo, **kw) == cap.plan(base, wl, slo, **kw), (inputs, kw)
    given = scenario_from_inputs({"prefill": 120.0})
    assert plan_key(given) != plan_key(base)
    assert cap.plan(given, wl, slo).notes != cap.plan(base, wl, slo).notes
    assert plan_key(scenario_from_inputs({"comp": "int8"})) != plan_key(base)


def test_the_sidebars_tp_when_asked():
    at = open_at({**FIXED, "ctp": "sidebar", "tp": "4", "tpd": "2"})
    sc = scenario_from_inputs({"seq": 2048, "tp": 4, "tpd": 2})
    _, wl, slo, _ = _expected_fixed()
    plan = cap.plan(sc, wl, slo, prefill_tp=4, decode_tp=2, gpu_price_per_hour=2.5)
    assert (plan.prefill_tp, plan.decode_tp) == (4, 2)
    assert metric(at, "Disaggregated GPUs") == gpus(plan.disaggregated_gpus)
    assert at.radio(key="w_ctp").value == "sidebar"


@pytest.mark.parametrize(
    ("query", "says"),
    [
        # a Prometheus scrape has no timestamps: without a rate there is nothing to size
        ({"trace": "vllm-prom", "rps": "0"}, "give the rate"),
        ({"wl": "fixed", "rps": "0"}, "Enter a request rate above 0"),
    ],
)
def test_no_rate_says_what_to_enter(query, says):
    at = open_at({"stack": "mooncake", **query})
    assert not at.exception
    shown = " ".join(e.value for e in [*at.warning, *at.info])
    assert says in shown, shown
    assert not at.metric


def test_rate_csv_costs_only_with_a_price():
    sc, wl, slo, _ = _expected_fixed()
    with_price = cap.rate_sweep(sc, wl, slo, (10.0, 40.0), gpu_price_per_hour=2.5)
    df = csv_capacity.sweep_frame(with_price, ttft_percentile=99.0)
    # 2.5 $/GPU-hour × the GPUs (the model's cost_per_hour)
    np.testing.assert_allclose(
        df["disaggregated cost [$ per hour]"], 2.5 * with_price["disaggregated_gpus"]
    )
    no_price = cap.rate_sweep(sc, wl, slo, (10.0, 40.0))
    assert "disaggregated cost [$ per hour]" not in csv_capacity.sweep_frame(
        no_price, ttft_percentile=99.0
    )


def test_which_network_opens_on_demand_with_the_plan_per_interconnect():
    at = app(FIXED, PAGE, article=False)
    tables = [md.value for md in at.markdown if "<table" in md.value]
    assert len(tables) == 1 and not at.dataframe  # closed: only the pool table
    at.session_state["cap_networks_open"] = True
    at.run()
    assert not at.exception
    # sideways HTML: every column shows at 1280 px (issue 24)
    assert len([md for md in at.markdown if "<table" in md.value]) == 2 and not at.dataframe
    html = next(md.value for md in at.markdown if "per NIC and direction" in md.value)
    table = read_html_table(html, index=True)[0]
    sc, wl, slo, _ = _expected_fixed()
    nets = cap.network_plans(sc, wl, slo, ["nvlink4", "ib-ndr", "ib-hdr", "100gbe"],
                             gpu_price_per_hour=2.5)  # fmt: skip
    names = [c.split(" ⚠ ")[0] for c in table.columns]
    assert names == list(nets.link_name)  # sidebar's link first
    row = table.loc["disaggregated GPUs [GPUs]"]
    assert [int(v.replace(",", "")) for v in row] == list(nets.disaggregated_gpus)
    assert [float(v.replace(",", "")) for v in table.loc["cost [$ per hour]"]] == pytest.approx(
        list(nets.cost_per_hour), rel=1e-3
    )
    need = table.loc["per-NIC bandwidth the p99 needs [GB/s]"]  # both ends (kvmodel.capacity)
    assert float(need.iloc[0]) == pytest.approx(
        nets.nic_bandwidth_needed_bytes_per_s[0] / 1e9, rel=1e-3
    )
    optimistic = [c for c in table.columns if " ⚠ " in c]  # NVLink: more GPUs than a domain
    big = nets[(nets.domain_gpus > 0) & (nets.disaggregated_gpus > nets.domain_gpus)]
    assert [c.split(" ⚠ ")[0] for c in optimistic] == list(big.link_name)
    assert any(c.value.startswith("Fewest GPUs disaggregated") for c in at.caption)


def test_a_hostile_upload_gives_a_plan_with_a_note_not_a_traceback():
    # an answer of 10^12 tokens (seen: Erlang C allocated 117 GiB and the page showed a
    # MemoryError): outputs are clipped at the context and the plan says so
    at = app(page="pages/traffic.py", article=False)
    at.radio(key="w_traffic_source").set_value("Upload").run()
    csv = b"timestamp,prompt_tokens,output_tokens\n0,1000,999999999999\n1,3000,5\n3,800,40\n"
    at.file_uploader(key="traffic_upload").set_value(("big.csv", csv, "text/csv")).run()
    at.switch_page(PAGE).run()
    assert not at.exception
    assert any("longer than the model's context" in c.value for c in at.caption)
    assert at.metric


# Issue 21's case: Llama-3.1-70B on H200 at TP 2, 8,000/500 tokens, TTFT 2 s, 5 req/s, with
# a TPOT target below the colocated TP-2 iteration of one request (tests/
# test_capacity_feasible.py): colocated at TP 2 meets it with no number of GPUs
def _tp2() -> dict:
    from test_capacity_feasible import colocated_floor_ms

    return {"stack": "mooncake", "model": "llama-3.1-70b", "gpu": "h200", "tp": "2",
            "tpd": "2", "ctp": "sidebar", "wl": "fixed", "seq": "8000", "out": "500",
            "rps": "5", "ttft_slo": "2000",
            "tpot_slo": f"{0.95 * colocated_floor_ms(2):.1f}"}  # fmt: skip


# Issue 24's case: a 100 ms TTFT target that neither side meets (the app's defaults otherwise)
TTFT100 = {"stack": "mooncake", "wl": "fixed", "seq": "2000", "out": "300", "rps": "20",
           "ttft_slo": "80"}  # fmt: skip


def _metrics(at) -> dict:
    return {m.label: m for m in at.metric}


def _no_saving_and_no_green(at) -> None:
    """No tile claims a saving, none of the plan's verdict tiles is green, the summary is not
    a success box (issue 24)."""
    tiles = _metrics(at)
    saves = tiles["Disaggregation saves"]
    assert saves.value == "not counted" and saves.delta == "a side misses the targets"
    assert saves.proto.color != saves.proto.GREEN  # MetricColor: grey, not green
    for label, tile in tiles.items():  # not even a met TPOT is green on such a page
        assert tile.proto.color != tile.proto.GREEN, label
    assert not at.success
    assert "saves" not in at.info[0].value and "cheaper" not in at.info[0].value


def test_issue_21_colocated_infeasible_at_tp_2_shows_no_saving_and_the_nearest_tp():
    query = _tp2()
    at = open_at(query)
    assert not at.exception
    _no_saving_and_no_green(at)
    tiles = _metrics(at)
    sc = scenario_from_inputs({"model": "llama-3.1-70b", "gpu": "h200", "seq": 8000,
                               "tp": 2, "tpd": 2})  # fmt: skip
    slo = cap.Slo(2.0, float(query["tpot_slo"]) / 1e3)
    p = cap.plan(sc, cap.Workload.fixed(5, 8000, 500), slo, prefill_tp=2, decode_tp=2)
    assert not p.colocated_feasible and p.colocated_nearest is not None
    n = p.colocated_nearest
    # no big count for the side that cannot meet the targets: "infeasible" and the nearest TP
    assert tiles["Colocated GPUs"].value == "infeasible"
    assert tiles["Colocated GPUs"].delta == f"TP {n.tp}: {gpus(n.gpus)} meet them"
    text = at.info[0].value
    assert "colocated serving at TP 2 does not meet the targets" in text
    assert f"The nearest parallelism that meets them is TP {n.tp}: {gpus(n.gpus)}" in text


def test_issue_24_a_100_ms_ttft_neither_side_meets_shows_no_saving_and_no_green():
    at = open_at(TTFT100)
    assert not at.exception
    _no_saving_and_no_green(at)
    tiles = _metrics(at)
    assert tiles["Meets the targets"].value == "no"
    assert tiles["Disaggregated GPUs"].value == "infeasible"
    assert "3,080" not in tiles["Colocated GPUs"].value
    assert "no disaggregated plan meets the targets" in at.info[0].value
    assert "so no saving is counted" in at.info[0].value


def test_a_target_reruns_the_results_only_and_rewrites_the_link():
    """The targets, the rate, the prices and the TP choice rerun the results below the
    controls only (their callbacks name the fragment): not the controls, the sidebar or the
    router; the link is written all the same.  The rate moving to or from 0 (the trace's own
    rate, named under its box) reruns the whole page."""
    at = app(FIXED, PAGE, article=False)
    at.number_input(key="w_ttft_slo").set_value(1234.0).run()
    assert not at.exception
    assert at.query_params["ttft_slo"] == "1234"
    assert not at.sidebar.number_input and not at.get("number_input")  # the results alone
    assert any(m.label == "Disaggregated GPUs" for m in at.metric)
    at.run()
    assert at.number_input(key="w_ttft_slo").value == 1234.0  # the whole page: as set
    trace = app({"stack": "mooncake"}, PAGE, article=False)  # a trace at its own rate (0)
    assert any(c.value.startswith("0: the trace's own rate") for c in trace.caption)
    trace.number_input(key="w_rps").set_value(3.0).run()  # from 0: the whole page
    assert trace.number_input(key="w_rps").value == 3.0
    assert not any(c.value.startswith("0: the trace's own rate") for c in trace.caption)


def test_a_costlier_disaggregation_is_a_cost_not_a_negative_saving():
    """Session 19 (browser review): 'Disaggregation saves −2 GPUs' read as a double negative.
    At 5.53 req/s of 1,024 + 256 tokens with the default targets the planner's searched TPs
    give colocated 4 GPUs against 6 disaggregated (kvmodel.capacity.plan, below)."""
    query = {"stack": "mooncake", "wl": "fixed", "rps": "5.53", "seq": "1024", "out": "256"}
    at = open_at(query)
    plan = cap.plan(scenario_from_inputs({}), cap.Workload.fixed(5.53, 1024, 256),
                    cap.Slo(ttft_s=2.0, tpot_s=0.05, ttft_percentile=90.0))  # fmt: skip
    assert plan.disaggregation_saves_gpus == plan.colocated_gpus - plan.disaggregated_gpus < 0
    tiles = _metrics(at)
    assert "Disaggregation saves" not in tiles
    cost = tiles["Disaggregation costs"]
    assert cost.value == gpus(-plan.disaggregation_saves_gpus)
    assert cost.delta == "more: colocated is cheaper" and "−" not in cost.value
    assert "disaggregation costs 2 more GPUs" in at.info[0].value


def test_a_tpot_target_under_one_requests_step_says_so_and_shows_no_split():
    """A TPOT target below the batch-1 decode step (11.7 ms at TP 8 on H100 for Llama-3.1-70B,
    kvmodel.timing; the default scenario) cannot be met by any number of GPUs: the summary
    leads with that, not with a 'best' count, and the P:D tile shows no split."""
    query = {"stack": "mooncake", "wl": "fixed", "rps": "5.53", "seq": "1024", "out": "256",
             "tpot_slo": "5"}  # fmt: skip
    at = open_at(query)
    text = at.info[0].value
    assert "no disaggregated plan meets the targets: one decode step at TP 8 takes " in text
    assert "even for one request, over the TPOT target of 5.0 ms" in text
    assert "No number of GPUs meets them at this parallelism" in text and "best" not in text
    split = _metrics(at)["P:D split"]
    assert split.value == "–" and split.delta == "misses the targets"


def test_an_unbuildable_sidebar_tp_is_a_caption_while_the_plan_searches_its_own():
    """Session 18's review: the sidebar's 'cannot be built' warning (TP 1: Llama-3.1-70B's
    141.2 GB of BF16 weights on an 80 GB H100) stood above a plan that searches its own TP.
    With the search it is a caption that says the plan is not limited by it; with the
    sidebar's TP chosen it is the warning, as on every other page."""
    query = {"stack": "mooncake", "tp": "1", "tpd": "1", "wl": "fixed", "rps": "2"}
    at = open_at(query)
    assert not at.warning or all("cannot be built" not in w.value for w in at.warning)
    said = [c.value for c in at.caption if "cannot be built as set" in c.value]
    assert len(said) == 1 and "(the weights do not fit on the prefill GPUs: " in said[0]
    assert said[0].endswith("searches its own TP and EP (Tensor parallelism: search), so this "
                            "does not limit it; pick the sidebar's TP there to plan the "
                            "deployment as set.")  # fmt: skip
    at = open_at({**query, "ctp": "sidebar"})
    assert any("This deployment cannot be built as set" in w.value for w in at.warning)
    assert not any("cannot be built as set" in c.value for c in at.caption)


def test_the_plan_per_pool_is_an_html_table_of_the_plan():
    """The per-pool table is plain HTML (kvview.tables; the grid of st.dataframe cost ~10 ms
    of every redraw): its cells are the plan's, one row per pool, targets checked per pool."""
    from kvview.figures.capacity import pool_table

    at = app(FIXED, PAGE, article=False)
    html = next(md.value for md in at.markdown if "Meets the targets" in md.value)
    shown = read_html_table(html, index=True)[0]
    _, _, slo, plan = _expected_fixed()
    want = pool_table(plan, ttft_percentile=slo.ttft_percentile, ttft_target_s=slo.ttft_s,
                      tpot_target_s=slo.tpot_s).set_index("Pool")  # fmt: skip
    assert list(shown.index) == ["Prefill", "Decode", "Colocated (chunked prefill)"]
    assert list(shown.columns) == list(want.columns)
    assert shown.astype(str).equals(want.astype(str))
