"""Every page through AppTest: shown numbers follow kvmodel.

Links (tests/test_urlstate.py), the sidebar (tests/test_sidebar.py), config import
(tests/test_config_import.py) and presentation mode (tests/test_present.py) have their own files.
"""

import json

import pytest
from app_helpers import TRAFFIC_BOXES, app, editing, metric, opened, shown_table
from html_tables import read_html_table

from kvmodel.build import build_scenario, scenario_from_inputs
from kvmodel.transfer import evaluate
from kvview import tables
from kvview.fmt import fmt_busy, fmt_bytes, fmt_ms, fmt_time, fmt_tokens


def test_default_is_a_measured_stack_that_fits_and_names_its_wire_speed_twin():
    at = app(article=False)
    ev = evaluate(scenario_from_inputs({}))
    assert ev.scenario.stack.id == "mooncake" and ev.scenario.decode_step_estimated
    assert ev.fits_in_memory and not [w for w in at.warning if "cannot be built" in w.value]
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert metric(at, "At wire speed") == fmt_ms(ev.ideal_exposed_s, 2)
    assert ev.exposed_s > 1.3 * ev.ideal_exposed_s
    assert metric(at, "Decode step (estimated)") == fmt_time(ev.decode_step_s)


def test_infeasible_scenario_is_warned_on_every_page():
    for page in ("pages/overview.py", "pages/mitigations.py", "pages/plan.py"):
        at = app({"tp": "1"}, page)  # Llama-3.1-70B in BF16 on one H100
        assert any("weights do not fit" in w.value for w in at.warning), page
    models = app({"tp": "1"}, "pages/models.py")  # its KV sizes do not depend on it: a line
    assert not models.warning and any(
        "weights do not fit" in c.value and "do not depend on it" in c.value
        for c in models.caption)  # fmt: skip
    at = app({"link": "nvlink4", "tp": "8"})  # 8 + 8 GPUs in an 8-GPU NVLink domain
    assert any("cannot carry the transfer" in w.value for w in at.warning)


def test_overview_default_is_the_article_example():
    at = app()
    ev = evaluate(build_scenario(model="llama-3.1-70b", link="100gbe"))
    assert metric(at, "Whole cache") == "335.5 MB" == fmt_bytes(335_544_320)
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert metric(at, "Critical length [tokens]") == "1,145"
    assert "borderline" in at.info[0].value and "100 GbE" in at.info[0].value


def test_changing_inputs_changes_numbers_as_kvmodel_predicts():
    at = app()
    at.number_input(key="batch").set_value(32).run()
    at.selectbox(key="link").set_value("ib-ndr").run()
    ev = evaluate(build_scenario(model="llama-3.1-70b", link="ib-ndr", batch=32))
    assert metric(at, "Whole cache") == fmt_bytes(335_544_320 * 32)
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert at.query_params["batch"] == ["32"] or at.query_params["batch"] == "32"
    at.selectbox(key="comp").set_value("int8").run()
    ev8 = evaluate(
        build_scenario(model="llama-3.1-70b", link="ib-ndr", batch=32, compression="int8")
    )
    assert metric(at, "On the wire") == fmt_bytes(ev8.wire_bytes)
    assert metric(at, "Exposed transfer") == fmt_ms(ev8.exposed_s, 2)


def test_interconnects_page_table_is_the_articles():
    at = app({"model": "llama-3-70b", "links": "ib-ndr,ib-hdr,100gbe"}, "pages/interconnects.py")
    df = shown_table(at)
    row = df[df["Interconnect"].str.contains("NDR")].iloc[0]
    # article: IB NDR 6.7 ms at batch 1 and 214 ms at batch 32; 10,737,418,240 B ÷ 50 GB/s
    # = 214.748 ms + the catalog's 2 µs latency = 214.750 ms, shown to 0.1 ms
    assert row["batch 1 [ms]"] == "6.7"
    assert row["batch 32 [ms]"] == "214.8"
    assert "At batch 1" in at.info[0].value


def test_sequence_page_takeaway_lists_critical_lengths():
    at = app({"links": "100gbe,ib-ndr"}, "pages/sequence.py")
    assert "1,145 tokens" in at.info[0].value
    # the tabs draw only the open one: the interconnects' chart; the layouts' on opening it
    assert len(at.get("plotly_chart")) == 1
    assert "w_models" not in [m.key for m in at.multiselect]
    at.session_state["seq_tab"] = "Per attention layout"
    at.run()
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    assert len(at.get("plotly_chart")) == 1 and "layout" in spec
    assert "w_models" in [m.key for m in at.multiselect]
    assert not at.info and at.query_params["links"] in ("100gbe,ib-ndr", ["100gbe,ib-ndr"])


MIT_TABLE = "Options as a table"  # Mitigations' tab of the table (drawn when opened)


def mitigations_table(query=None, *, article=True):
    """Mitigations with its table's tab open: (the AppTest, the options table)."""
    at = app(query, "pages/mitigations.py", article=article)
    assert not at.dataframe and len(at.get("plotly_chart")) == 1  # the chart's tab
    at.session_state["mit_tab"] = MIT_TABLE
    at.run()
    assert not at.get("plotly_chart")
    return at, at.dataframe[0].value


def test_mitigations_page_rows_and_timeline():
    at, df = mitigations_table()
    assert list(df["option"])[:4] == ["Baseline", "FP8 transfer", "INT8 transfer", "INT4 transfer"]
    assert "Baseline TTFT" in at.info[0].value
    # the critical lengths are kvmodel's (Evaluation computes them when first asked)
    from kvmodel.sweeps import mitigation_options

    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    assert df["critical"][0] == fmt_tokens(evaluate(mitigation_options(sc)[0].scenario)
                                           .critical_seq_len)  # fmt: skip
    at.session_state["mit_tab"] = "Timeline of one option"
    at.run()
    assert not at.dataframe  # the options' tab is closed now
    at.selectbox(key="w_tl").set_value(0).run()
    assert at.query_params["tl"] in ("0", ["0"])
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert "Baseline" in spec["layout"]["title"]["text"]


@pytest.mark.parametrize(("page", "column"), [("pages/mitigations.py", "option"),
                                              ("pages/traffic.py", "Option")])  # fmt: skip
def test_the_longest_option_sets_its_columns_width(page, column):
    """The last, longest options ('NVLink 4 (H100) + layer-wise (not b…') were cut at 1280 px:
    Streamlit sizes a column from its cells but skips one twice their mean width."""
    if page == "pages/mitigations.py":
        at, _ = mitigations_table(article=False)
    else:
        at = opened(app(article=False, page=page), *TRAFFIC_BOXES)
    longest = max(at.dataframe[0].value[column], key=len)
    if page == "pages/mitigations.py":  # Traffic marks those rows '⚠' (shorter than others)
        assert "not buildable" in longest
    width = json.loads(at.dataframe[0].proto.columns)[column]["width"]
    assert width == tables.text_width([longest])


def test_mitigations_table_says_never_for_no_critical_length():
    """'never', as on Traffic: 'none up to max context' made the eight columns too wide."""
    _, df = mitigations_table(article=False)
    critical = list(df["critical"])
    assert "never" in critical and not any("max context" in c for c in critical)


# ---- Traffic --------------------------------------------------------------------------------


def test_traffic_page_sample_matches_kvmodel():
    from kvmodel import traffic as tr
    from kvmodel.traffic import load_traffic

    at = app(page="pages/traffic.py")
    req = load_traffic(tr.sample_path("azure-conv"))
    reg = tr.regions(tr.per_request_scenario(build_scenario()), tr.mix_from_requests(req))
    assert metric(at, "Requests") == f"{reg.n_requests:,.0f}" == "19,366"
    assert metric(at, "Gain") == f"{reg.fraction_gain:.1%}"
    assert metric(at, "Transfer-bound") == f"{reg.fraction_transfer_bound:.1%}"
    assert "gain from disaggregation" in at.info[0].value
    assert "Prefill locally below 128 tokens" in at.success[0].value


def _boxes(at) -> dict[str, bool]:
    """Traffic's boxes below the histogram: label -> drawn (holds its contents)."""
    return {e.label: len(e.children) > 0 for e in at.expander
            if e.label in ("What moves the share that gains", "Load on the link")}  # fmt: skip


def test_traffic_draws_what_moves_and_the_load_only_while_open():
    """Closed by default (the page's redraw after a change is ~30 ms shorter in the browser,
    bench/README.md Session 28); a link that sets a box's input opens it; a closed box keeps
    its input in the link."""
    at = app(page="pages/traffic.py")
    assert _boxes(at) == {"What moves the share that gains": False, "Load on the link": False}
    labels = [m.label for m in at.metric]
    assert not at.dataframe and "Arrival rate" not in labels
    opened(at, *TRAFFIC_BOXES)
    assert _boxes(at) == {"What moves the share that gains": True, "Load on the link": True}
    assert at.dataframe and "Arrival rate" in [m.label for m in at.metric]
    shared = app({"rps": "5", "links": "ib-ndr,100gbe"}, "pages/traffic.py")
    assert _boxes(shared) == {"What moves the share that gains": True, "Load on the link": True}
    assert metric(shared, "Arrival rate") == "5.0 req/s"
    options = list(shared.dataframe[0].value["Option"])
    assert options and all(o.startswith(("InfiniBand NDR 400G", "100 GbE")) for o in options)
    shared.session_state[TRAFFIC_BOXES[1]] = False  # closed: the rate stays in the link
    shared.run()
    assert "Arrival rate" not in [m.label for m in shared.metric]
    assert shared.query_params["rps"] in ("5.0", ["5.0"], "5", ["5"])
    shown = app({"present": "1"}, "pages/traffic.py")  # a projector shows both
    assert set(_boxes(shown).values()) == {True}


def test_traffic_controls_after_an_upload_never_parse_again(monkeypatch):
    import ui.traffic_ui

    calls = []
    real = ui.traffic_ui.load_traffic

    def counted(*args, **kwargs):
        calls.append(kwargs.get("name"))
        return real(*args, **kwargs)

    monkeypatch.setattr(ui.traffic_ui, "load_traffic", counted)
    at = app(page="pages/traffic.py")
    at.radio(key="w_traffic_source").set_value("Upload").run()
    csv = b"timestamp,prompt_tokens\n0,100\n1,2000\n2,500\n3,90\n"
    at.file_uploader(key="traffic_upload").set_value(("once.csv", csv, "text/csv")).run()
    assert metric(at, "Requests") == "4" and calls.count("once.csv") == 1
    too_short = metric(at, "Too short")
    at.number_input(key="w_minlen").set_value(1000).run()
    assert metric(at, "Too short") != too_short  # the new threshold is used ...
    assert not any("Cached prompt tokens" in c.value for c in at.caption)  # no prefix yet
    at.slider(key="w_hit").set_value(50.0).run()
    # a 50 % hit ratio: 100, 2000, 500, 90 tokens keep 50, 1000, 250, 45 cached (mean 336)
    said = [c.value for c in at.caption if "Cached prompt tokens" in c.value]
    assert len(said) == 1 and "on average 336 a request" in said[0]
    at.radio(key="w_crit").set_value("share").run()
    opened(at, *TRAFFIC_BOXES)  # the comparison and the load, drawn while open
    at.number_input(key="w_rps").set_value(5.0).run()
    assert metric(at, "Arrival rate") == "5.0 req/s"
    assert not at.exception and calls.count("once.csv") == 1  # ... without reading it again


def test_an_upload_survives_page_switches_and_feeds_compare():
    from kvmodel import traffic as tr
    from kvmodel.traffic import load_traffic

    at = app(page="pages/traffic.py")
    at.radio(key="w_traffic_source").set_value("Upload").run()
    csv = b"prompt_tokens\n100\n2000\n500\n90\n700\n"
    at.file_uploader(key="traffic_upload").set_value(("mine.csv", csv, "text/csv")).run()
    assert metric(at, "Requests") == "5"
    at.switch_page("pages/compare.py").run()
    assert not at.exception
    assert any("mine.csv (the Traffic page's upload)" in c.value for c in at.caption)
    mix = tr.mix_from_requests(load_traffic(csv, name="mine.csv"))
    gain = tr.regions(tr.per_request_scenario(build_scenario()), mix).fraction_gain
    assert gain == 0.4  # 500 and 700 of the five (the critical length is 1,145 tokens)
    # the comparison table's last row (its metrics repeated it until session 21)
    assert shown_table(at, index=True).loc["Traffic that gains", "A (sidebar)"] == f"{gain:.1%}"
    at.switch_page("pages/traffic.py").run()  # the uploader comes back empty ...
    assert at.radio(key="w_traffic_source").value == "Upload"
    assert metric(at, "Requests") == "5"  # ... but the upload is still analysed
    assert any("Showing mine.csv, uploaded earlier" in c.value for c in at.caption)
    at.button(key="traffic_forget").click().run()
    assert "Upload a file" in at.info[0].value and not at.metric
    at.switch_page("pages/compare.py").run()  # back to a sample, and it says why
    assert any("(a sample: no upload is loaded on Traffic)" in c.value for c in at.caption)
    at.switch_page("pages/traffic.py").run()
    at.file_uploader(key="traffic_upload").set_value(("mine.csv", csv, "text/csv")).run()
    assert metric(at, "Requests") == "5"
    at.file_uploader(key="traffic_upload").set_value(None).run()  # the uploader's ✕
    assert "Upload a file" in at.info[0].value and not at.metric


def test_traffic_load_metrics_match_kvmodel():
    from kvmodel import traffic as tr
    from kvmodel.traffic import load_traffic
    from kvview.fmt import fmt_bandwidth, fmt_sig

    at = app({"trace": "azure-code", "link": "ib-ndr"}, "pages/traffic.py")
    opened(at, TRAFFIC_BOXES[1])
    # the page's framework (vLLM, the app's default): its request cost is part of every TTFT,
    # so of the p99 share of TTFT
    sc = build_scenario(link="ib-ndr", framework="vllm")
    req = load_traffic(tr.sample_path("azure-code"))
    ld = tr.load(tr.per_request_scenario(sc), tr.mix_from_requests(req))
    assert ld.stable and ld.rps > 0
    assert metric(at, "Arrival rate") == f"{ld.rps:,.1f} req/s"
    assert metric(at, "Link utilisation") == fmt_busy(ld.utilization)
    assert metric(at, "p50 transfer incl. queue") == fmt_time(ld.p50_s)
    assert metric(at, "p90 transfer incl. queue") == fmt_time(ld.p90_s)
    assert metric(at, "p99 transfer incl. queue") == fmt_time(ld.p99_s)
    assert metric(at, "p99 share of TTFT") == f"{ld.p99_share_of_ttft:.0%}"
    assert metric(at, "Decode idle per second") == fmt_time(ld.decode_idle_s_per_s)
    assert metric(at, "Decode steps lost") == f"{fmt_sig(ld.decode_steps_lost_per_s, 3)} steps/s"
    assert ld.decode_steps_lost_per_s == pytest.approx(ld.decode_idle_s_per_s / sc.decode_step_s)
    assert metric(at, "Link for p99 ≤ 20% TTFT") == fmt_bandwidth(
        ld.bandwidth_for_target_bytes_per_s
    )
    # per link, and the capacity is the links together (session 20's review): the article's
    # TP 1 has one link; TP 8 eight
    helps = {m.label: m.proto.help for m in at.metric}
    assert "per link and direction (one link of 50 GB/s)" in helps[
        "Link for p99 ≤ 20% TTFT"]
    tp8 = opened(app({"trace": "azure-code", "link": "ib-ndr", "tp": "8"}, "pages/traffic.py"),
                 TRAFFIC_BOXES[1])  # fmt: skip
    helps = {m.label: m.proto.help for m in tp8.metric}
    assert helps["Demanded"].endswith(": 8 parallel links of 50 GB/s together, at the link "
                                      "efficiency")  # fmt: skip


def test_traffic_thresholds_change_numbers_and_link():
    at = app(
        {"trace": "azure-code", "minlen": "512", "crit": "share", "hit": "50"}, "pages/traffic.py"
    )
    from kvmodel import traffic as tr
    from kvmodel.traffic import load_traffic

    req = load_traffic(tr.sample_path("azure-code"))
    reg = tr.regions(
        tr.per_request_scenario(build_scenario()),
        tr.mix_from_requests(req, hit_ratio=0.5),
        min_seq_len=512,
        criterion="share",
    )
    assert metric(at, "Too short") == f"{reg.fraction_too_short:.1%}"
    assert metric(at, "Gain") == f"{reg.fraction_gain:.1%}"
    at.number_input(key="w_minlen").set_value(64).run()
    assert at.query_params["minlen"] in ("64", ["64"])
    assert metric(at, "Too short") != f"{reg.fraction_too_short:.1%}"


def test_traffic_upload_and_bad_upload():
    at = app(page="pages/traffic.py")
    at.radio(key="w_traffic_source").set_value("Upload").run()
    assert "Upload a file" in at.info[0].value
    opened(at, TRAFFIC_BOXES[1])  # the load on the link: it says when there are no timestamps
    csv = b"prompt_tokens,completion_tokens\n100,5\n2000,10\n500,7\n-3,1\n"
    at.file_uploader(key="traffic_upload").set_value(("t.csv", csv, "text/csv")).run()
    assert not at.exception
    assert metric(at, "Requests") == "3"
    skipped = [w.value for w in at.warning if "Skipped" in w.value]
    assert "Skipped 1" in skipped[0] and "row 5" in skipped[0]
    assert "no timestamps" in at.info[-1].value
    huge = b"prompt_tokens\n100\n2000\n1000000000000\n"
    at.file_uploader(key="traffic_upload").set_value(("huge.csv", huge, "text/csv")).run()
    assert any(
        "1 request is longer than Llama-3.1-70B's max context of 131,072 tokens" in w.value
        for w in at.warning
    )
    said = at.info[0].value
    assert "in huge.csv gain from disaggregation (holding 0% of all prompt tokens)" in said
    shares = b"le,probability\n128,0.5\n1024,0.3\n8192,0.2\n"
    at.file_uploader(key="traffic_upload").set_value(("h.csv", shares, "text/csv")).run()
    assert metric(at, "Requests") == "shares only" and metric(at, "Gain") == "80.0%"
    assert "80% of the requests in h.csv gain" in at.info[0].value
    at.file_uploader(key="traffic_upload").set_value(("x.csv", b"a,b\n1,2\n", "text/csv")).run()
    assert not at.exception
    assert "no prompt-length column" in at.error[0].value
    # the manual column picker appears and fixes it; the page says which column it read, and
    # the pickers stay at hand to change it
    at.selectbox(key="pick_prompt").set_value("b").run()
    assert metric(at, "Requests") == "1"
    assert any("prompt lengths from 'b'" in c.value for c in at.caption)
    at.selectbox(key="pick_prompt").set_value("a").run()
    assert any("prompt lengths from 'a'" in c.value for c in at.caption)
    # a new file starts with detected columns, not the last file's pick ('a' is not in it)
    at.file_uploader(key="traffic_upload").set_value(("n.csv", csv, "text/csv")).run()
    assert metric(at, "Requests") == "3" and not at.error


# ---- Compare and presentation ---------------------------------------------------------------


def test_compare_page_from_link_and_edits():
    at = editing(app({"cmp": "comp:int8;link:ib-ndr~lw:1", "batch": "8"}, "pages/compare.py"))
    df = shown_table(at, index=True)
    assert list(df.columns) == ["Better", "A (sidebar)", "B", "C"]
    evb = evaluate(
        build_scenario(model="llama-3.1-70b", link="100gbe", batch=8, compression="int8")
    )
    assert df.loc["Exposed transfer", "B"].startswith(fmt_ms(evb.exposed_s, 2))
    assert df.loc["Prompt × batch", "C"] == "1,024 tokens × 8"  # follows A's batch
    assert df.loc["Layer-wise", "C"] == "on"
    at.selectbox(key="cmp0_comp").set_value("fp8").run()  # B's one change, edited
    assert at.query_params["cmp"] in (["comp:fp8;link:ib-ndr~lw:1"], "comp:fp8;link:ib-ndr~lw:1")
    at.button(key="cmp1_rm").click().run()
    assert list(shown_table(at, index=True).columns) == ["Better", "A (sidebar)", "B"]


def test_compare_bad_link_part_warns():
    at = app({"cmp": "link:warp;oops"}, "pages/compare.py")
    assert not at.exception
    again = app({"cmp": "link:warp;oops"})
    text = again.warning[0].value
    assert "cmp scenario B: link='warp'" in text and "scenario C 'oops'" in text
    # B lost its only change, so it equals A: the takeaway does not compare A with itself
    assert at.info[0].value.startswith("A (the sidebar) already has the lowest TTFT")


def test_plan_page_numbers_follow_the_solver():
    from kvmodel import solve

    at = app({"batch": "8"}, "pages/plan.py")
    # the page's framework (vLLM, the app's default): the share target counts its request cost
    sc = build_scenario(model="llama-3.1-70b", link="100gbe", batch=8, framework="vllm")
    need = solve.min_bandwidth(sc, criterion="step")
    assert metric(at, "Minimum bandwidth per link") == f"{need / 1e9:,.4g} GB/s"
    assert "falls short" in at.info[0].value and "7.2× its 12.5 GB/s" in at.info[0].value
    eight = app(page="pages/plan.py", article=False).info[0].value  # TP 8: eight NICs a side
    assert "per direction on each of its 8 parallel links, of the 12.5 GB/s each offers" in eight
    assert "layer-wise" in at.success[0].value
    at.radio(key="w_crit").set_value("share").run()
    assert at.query_params["crit"] in ("share", ["share"])
    need_share = solve.min_bandwidth(sc, criterion="share")
    assert metric(at, "Minimum bandwidth per link") == f"{need_share / 1e9:,.4g} GB/s"


def test_lazy_menus_draw_their_contents_when_opened():
    at = app({"batch": "8"}, "pages/plan.py")
    buttons = len(at.get("download_button"))
    assert not at.dataframe and not at.sidebar.code  # closed: not drawn
    assert not at.get("plotly_chart")  # the sensitivity chart waits for its expander
    at.session_state["plan_tried"] = True  # "Options tried" expander
    at.session_state["sb_share_open"] = True  # "Share this scenario"
    at.session_state["plan_sensitivity"] = True  # "Sensitivity" expander
    at.run()
    assert len(at.get("plotly_chart")) == 1
    # the sensitivity CSV, the options-tried CSV, the report in the share box
    assert len(at.get("download_button")) == buttons + 3
    at.session_state["export_sensitivity"] = True  # the chart's Export menu
    at.run()
    assert not at.exception
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) >= 2
    assert "batch=8" in at.sidebar.code[0].value
    assert len(at.get("download_button")) == buttons + 6  # and HTML, PNG, SVG in Export


def test_compare_marks_an_unbuildable_variant_and_never_picks_it():
    # TP 8 + TP 8 over NVLink 4 needs 16 GPUs in one 8-GPU domain: shown, marked, not chosen
    at = editing(app({"cmp": "link:nvlink4;stack:ideal", "tp": "8"}, "pages/compare.py"))
    notes = [c.value for c in at.caption if "Not buildable" in c.value]
    assert notes and "cannot carry the transfer" in notes[0]
    assert not at.info[0].value.startswith("Lowest TTFT: B")
    assert at.selectbox(key="cmp1_stack").value == "ideal"


def test_interconnects_says_how_many_links_and_what_cannot_be_built():
    at = app(article=False, page="pages/interconnects.py")
    text = " ".join(c.value for c in at.caption)
    assert "over 8 parallel links" in text and "Mooncake" in text
    # the band is the user's; the caption gives the scenario's own step beside it (session 22)
    import re

    assert re.search(r"own decode step is \d+(\.\d+)? ms \(estimated\): move the band", text)
    assert "prefill + decode exceed one scale-up domain at this TP/EP" in text
    assert "NVLink 4 (H100)" in text


# Issue 24 item 5: at TP 8 → 8 on H100 (an 8-GPU NVLink domain) an NVLink row is no
# deployment: it is marked on every page that lists links, never coloured as a verdict.
NVLINK_BLOCKED = "NVLink 4 (H100) ⚠ not buildable: TP 8 + TP 8 > one 8-GPU domain"


def test_interconnects_marks_the_unbuildable_nvlink_row_not_green():
    at = app(article=False, page="pages/interconnects.py")

    html = next(md.value for md in at.markdown if "<table" in md.value)
    cells, styles = read_html_table(html)
    row = cells.index[cells["Interconnect"] == NVLINK_BLOCKED]
    assert len(row) == 1
    for col in [c for c in cells.columns if c.startswith("batch ")]:
        css = styles.loc[row[0], col]
        assert "repeating-linear-gradient" in css and tables.BAND_CELL["below"] not in css
    ok = cells.index[cells["Interconnect"] == "InfiniBand NDR 400G"][0]
    assert "background-color" in styles.loc[ok, "batch 1 [ms]"]  # the others keep verdicts


def test_sequence_names_the_unbuildable_nvlink_in_its_takeaway():
    at = app(article=False, page="pages/sequence.py")
    said = next(i.value for i in at.info if "threshold" in i.value)
    assert "NVLink 4 (H100) (not buildable: TP 8 + TP 8 > one 8-GPU domain)" in said


def test_traffic_lists_the_unbuildable_nvlink_options_last_and_marked():
    at = opened(app(article=False, page="pages/traffic.py"), TRAFFIC_BOXES[0])
    options = list(at.dataframe[0].value["Option"])
    nv = [i for i, o in enumerate(options) if o.startswith("NVLink 4")]
    assert nv and all(options[i].endswith(" ⚠") for i in nv)  # the caption says what ⚠ is
    assert nv == list(range(len(options) - len(nv), len(options)))  # after every buildable one
    said = [c.value for c in at.caption if c.value.startswith("⚠ Not buildable")]
    assert said and "NVLink 4 (H100), not buildable: TP 8 + TP 8 > one 8-GPU domain" in said[0]


def test_compare_says_when_a_variant_equals_a():
    # the default comparison's IB NDR variant is A itself when A is on IB NDR
    at = app({"link": "ib-ndr", "cmp": "comp:int8;link:ib-ndr"}, "pages/compare.py")
    same = [c.value for c in at.caption if "same scenario as A" in c.value]
    assert same == [":material/info: C is the same scenario as A: change one of its inputs."]


def test_an_expert_parallel_deployment_counts_its_ep_gpus_against_the_nvlink_domain():
    """Session 19's review: DeepSeek-V3 at EP 32 (prefill) and EP 72 (decode), TP 1 each, is
    32 + 72 = 104 GPUs; an H200's NVLink 4 domain holds 8, so NVLink rows are not buildable and
    never recommended (the check counted TP 1 + 1 = 2 GPUs and Mitigations named NVLink 4 +
    layer-wise as the lowest TTFT)."""
    from kvmodel import catalog
    from kvmodel.build import scenario_from_inputs
    from kvmodel.evaluation import evaluate
    from kvmodel.sweeps import mitigation_options
    from kvmodel.topology import scale_up_feasible, unbuildable_links
    from kvview.words import not_buildable

    inputs = {"model": "deepseek-v3", "gpu": "h200", "tp": 1, "tpd": 1, "ep": 32, "epd": 72,
              "seq": 8192, "batch": 8, "stack": "mooncake", "link": "ib-ndr"}  # fmt: skip
    sc = scenario_from_inputs(inputs)
    assert (sc.gpus_prefill, sc.gpus_decode) == (32, 72)
    nv = catalog.get_link("nvlink4")
    assert not scale_up_feasible(sc.gpu, sc.gpus_prefill, sc.gpus_decode, nv)
    assert unbuildable_links(sc.gpu, sc.gpus_prefill, sc.gpus_decode, [nv]) == ("nvlink4",)
    assert not_buildable(sc, ["nvlink4"]) == {
        "nvlink4": "not buildable: EP 32 + EP 72 > one 8-GPU domain"}
    assert [o.buildable for o in mitigation_options(sc)][-2:] == [False, False]
    on_nv = scenario_from_inputs({**inputs, "link": "nvlink4"})
    assert evaluate(on_nv).problems[0].startswith(
        "NVLink 4 (H100) joins at most 8 GPUs: prefill EP 32 + decode EP 72 do not fit")
    at = app({k: str(v) for k, v in inputs.items()}, "pages/mitigations.py", article=False)
    assert "NVLink" not in at.info[0].value.split("Lowest TTFT here: ")[1].split(";")[0]
    said = [c.value for c in at.caption if "Not buildable" in c.value]
    assert said and ("prefill EP 32 + decode EP 72 = 104 GPUs do not fit in one 8-GPU NVLink 4"
                     in said[0])  # fmt: skip


def test_an_expert_parallel_scenario_is_described_with_its_ep():
    """Session 19's review: Compare's A line read 'TP 1 → 1' for a 104-GPU EP deployment."""
    from kvmodel.build import scenario_from_inputs
    from kvview.words import pd_parallelism, scenario_line

    moe = {"model": "deepseek-v3", "gpu": "h200", "tp": 1, "tpd": 1, "ep": 32, "epd": 72}
    sc = scenario_from_inputs(moe)
    assert pd_parallelism(sc) == "EP 32 → EP 72" and " · EP 32 → EP 72 · " in scenario_line(sc)
    assert pd_parallelism(scenario_from_inputs({})) == "TP 8 → 8"  # as before without EP
    at = app({k: str(v) for k, v in moe.items()} | {"stack": "mooncake"}, "pages/compare.py",
             article=False)  # fmt: skip
    assert any("EP 32 → EP 72, DP attention" in m.value for m in at.markdown)
    # and the table's row, which read '1 → 1' (session 20's review)
    assert shown_table(at, index=True).loc["Parallelism prefill → decode", "A (sidebar)"] == (
        "EP 32 → EP 72")


def test_overviews_per_gpu_tiles_name_the_ep_of_an_expert_parallel_deployment():
    """Session 20's review: an EP 32 → EP 72 deployment's tiles read 'Per prefill GPU (TP 1)'."""
    moe = {"model": "deepseek-v3", "gpu": "h200", "tp": "1", "tpd": "1", "ep": "32",
           "epd": "72", "stack": "mooncake"}  # fmt: skip
    labels = [m.label for m in app(moe, article=False).metric]
    assert "Per prefill GPU (EP 32)" in labels and "Per decode GPU (EP 72)" in labels
    dense = [m.label for m in app(article=False).metric]
    assert "Per prefill GPU (TP 8)" in dense and "Per decode GPU (TP 8)" in dense


@pytest.mark.parametrize("page", ["pages/interconnects.py", "pages/sequence.py"])
def test_the_sidebars_interconnect_is_offered_when_not_listed(page):
    """Session 20's review: with InfiniBand XDR in the sidebar, Interconnects and Sequence
    showed their default four links and never said why the sidebar's choice was missing."""
    at = app({"link": "ib-xdr"}, page, article=False)
    said = [c.value for c in at.caption if "sidebar's interconnect" in c.value]
    assert said == [":material/info: The sidebar's interconnect, InfiniBand XDR 800G, is not in "
                    "this list."]  # fmt: skip
    at.button(key="add_own_link").click().run()
    assert not at.exception
    assert at.query_params["links"] in (["nvlink4,ib-ndr,ib-hdr,100gbe,ib-xdr"],
                                        "nvlink4,ib-ndr,ib-hdr,100gbe,ib-xdr")  # fmt: skip
    assert not [c for c in at.caption if "sidebar's interconnect" in c.value]
    assert "add_own_link" not in [b.key for b in at.button]
    listed = app({"link": "100gbe"}, page, article=False)  # listed: nothing said
    assert not [c for c in listed.caption if "sidebar's interconnect" in c.value]
    shown = app({"link": "ib-xdr", "present": "1"}, page, article=False)  # no editing there
    assert "add_own_link" not in [b.key for b in shown.button]


def test_plan_says_why_the_largest_batch_is_none():
    # session 23's browser review: "Largest batch at 1,024 tokens: none" with no reason beside
    # it (Llama-3.1-8B on one H20-3e over 100 GbE: one request's transfer already misses)
    at = app({"model": "llama-3.1-8b", "gpu": "h20-3e", "tp": "1", "batch": "1", "step": "est",
              "stack": "mooncake", "fw": "vllm"}, "pages/plan.py", article=False)  # fmt: skip
    largest = next(m for m in at.metric if m.label.startswith("Largest batch"))
    assert largest.value == "none"
    assert largest.proto.help.startswith("None: even one request misses the target on this link.")
    fitting = app({"tp": "8", "stack": "mooncake", "fw": "vllm"}, "pages/plan.py", article=False)
    fits = next(m for m in fitting.metric if m.label.startswith("Largest"))
    assert fits.value != "none" and not fits.proto.help.startswith("None")


def test_mitigations_table_groups_thousands():
    # session 23's browser review: "3698.1 ms" in the table beside "3,698.1 ms" in the sentence
    at, _ = mitigations_table()
    config = json.loads(at.dataframe[0].proto.columns)
    formats = {k: v.get("type_config", {}).get("format") for k, v in config.items()}
    assert {formats.get("ttft_ms"), formats.get("ttft_saving_ms")} == {"%,.1f ms"}, formats
    assert formats.get("exposed_transfer_ms") == "%,.2f ms"
