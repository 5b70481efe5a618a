"""Every page through AppTest: shown numbers follow kvmodel, links restore, bad links warn."""

import json
from pathlib import Path

import pytest
from html_tables import read_html_table
from streamlit.testing.v1 import AppTest

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvmodel.units import fmt_bytes, fmt_ms, fmt_time, fmt_tokens

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGES = [
    "pages/overview.py",
    "pages/interconnects.py",
    "pages/sequence.py",
    "pages/mitigations.py",
    "pages/models.py",
]
SHARED = ROOT.parent / "shared" / "data" / "model-configs"


def app(query=None, page=None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    if query:
        at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_table(at, index=False):
    """The first HTML table (ui.tables) on the page, as texts."""
    for md in at.markdown:
        if "<table" in md.value:
            return read_html_table(md.value, index=index)[0]
    raise AssertionError("no table on the page")


def metric(at, label):
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r} in {[m.label for m in at.metric]}")


def test_overview_default_is_the_article_example():
    at = app()
    ev = evaluate(build_scenario(model="llama-3.1-70b", link="100gbe"))
    assert metric(at, "Whole cache") == "335.5 MB" == fmt_bytes(335_544_320)
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert metric(at, "Critical sequence length") == "1,145 tokens"
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


def test_exact_sequence_length_input():
    at = app()
    at.number_input(key="seq_exact").set_value(3000).run()
    assert at.select_slider(key="seq").value == 3000
    ev = evaluate(build_scenario(model="llama-3.1-70b", link="100gbe", seq_len=3000))
    assert metric(at, "Whole cache") == fmt_bytes(ev.kv_total_bytes)


LINK = {
    "model": "llama-3.1-8b",
    "seq": "4096",
    "batch": "8",
    "link": "ib-ndr",
    "comp": "int8",
    "step": "25",
    "tp": "2",
    "lw": "1",
    "prefill": "120",
}


@pytest.mark.parametrize("page", PAGES)
def test_link_restores_scenario_on_every_page(page):
    at = app(LINK, page)
    assert at.selectbox(key="model").value == "llama-3.1-8b"
    assert at.select_slider(key="seq").value == 4096
    assert at.number_input(key="batch").value == 8
    assert at.selectbox(key="link").value == "ib-ndr"
    assert at.selectbox(key="comp").value == "int8"
    assert at.toggle(key="lw").value is True
    # the closed "Times" and "Parallelism" expanders do not draw their widgets; the values live
    # in session state (test_closed_sidebar_expanders_keep_their_values opens them)
    assert at.session_state["step"] == 25
    assert at.session_state["tp"] == 2
    assert at.session_state["prefill_ms"] == 120
    assert not at.warning
    for key, value in LINK.items():
        got = at.query_params[key]
        assert (got[0] if isinstance(got, list) else got) == value


def test_link_numbers_on_overview():
    at = app(LINK)
    ev = evaluate(
        build_scenario(
            model="llama-3.1-8b",
            seq_len=4096,
            batch=8,
            link="ib-ndr",
            compression="int8",
            decode_step_ms=25,
            tp=2,
            layerwise=True,
            prefill_ms=120,
        )
    )
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert metric(at, "TTFT") == fmt_time(ev.ttft_s)
    assert metric(at, "Critical sequence length") == fmt_tokens(ev.critical_seq_len)


TAMPERED = {
    "model": "gpt-5",
    "seq": "abc",
    "batch": "-4",
    "link": "warp-drive",
    "tp": "3",
    "comp": "zip",
    "eff": "900",
    "band": "x",
    "links": "nvlink4,bogus",
    "cfg": "not-base64!",
}


def test_tampered_link_warns_and_recovers():
    at = app(TAMPERED)
    text = at.warning[0].value
    for fragment in (
        "model='gpt-5'",
        "seq='abc'",
        "batch=-4",
        "link='warp-drive'",
        "tp",
        "comp",
        "eff=900",
        "bogus",
        "cfg",
    ):
        assert fragment in text, fragment
    assert at.selectbox(key="model").value == "llama-3.1-70b"
    assert at.number_input(key="batch").value == 1
    assert at.slider(key="eff").value == 100
    assert metric(at, "Whole cache") == "335.5 MB"


@pytest.mark.parametrize("page", PAGES[1:])
def test_tampered_link_then_every_page_works(page):
    at = app(TAMPERED, page)
    assert not at.exception and at.info  # the takeaway is there
    got = at.query_params["links"]
    assert (got[0] if isinstance(got, list) else got) == "nvlink4"


def test_seq_clamped_to_model_context_with_warning():
    at = app({"model": "llama-2-7b", "seq": "100000"})
    assert "4096" in at.warning[0].value
    assert at.select_slider(key="seq").value == 4096


def test_model_change_clamps_sequence_and_says_so():
    at = app({"seq": "100000"})
    at.selectbox(key="model").set_value("phi-3-mini").run()
    assert at.select_slider(key="seq").value == 4096
    assert "max context" in at.warning[0].value


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
    assert len(at.get("plotly_chart")) == 2


def test_mitigations_page_rows_and_timeline():
    at = app(page="pages/mitigations.py")
    df = at.dataframe[0].value
    assert list(df["option"])[:4] == ["Baseline", "FP8 transfer", "INT8 transfer", "INT4 transfer"]
    assert "Baseline TTFT" in at.info[0].value
    at.selectbox(key="w_tl").set_value(0).run()
    assert at.query_params["tl"] in ("0", ["0"])
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert "Baseline" in spec["layout"]["title"]["text"]


def test_models_page_imports_a_config_and_carries_it_in_the_link():
    cfg = SHARED / "deepseek-ai--DeepSeek-V3.json"
    if not cfg.exists():
        pytest.skip("shared model configs not present")
    at = app(page="pages/models.py")
    at.text_area(key="cfg_paste").set_value(cfg.read_text())
    at.button(key="cfg_import").click().run()
    assert not at.exception
    assert "Imported" in at.success[0].value
    mid = at.selectbox(key="model").value
    assert mid.startswith("cfg-")
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert query["model"] == mid and query["cfg"]
    # a fresh session opened from that link gets the same model and numbers
    again = app(query)
    assert again.selectbox(key="model").value == mid
    ev = evaluate(build_scenario(model="deepseek-v3", link="100gbe"))
    assert metric(again, "Whole cache") == fmt_bytes(ev.kv_total_bytes)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "Nothing to import"),
        ('{"num_hidden_layers": 2', "malformed JSON"),
        ('{"num_attention_heads": 8, "hidden_size": 64}', "num_hidden_layers"),
        ("not json {", "malformed JSON at line 1 column 1"),  # once read as a file path
    ],
)
def test_models_page_bad_config_shows_error(text, fragment):
    at = app(page="pages/models.py")
    at.text_area(key="cfg_paste").set_value(text)
    at.button(key="cfg_import").click().run()
    assert not at.exception
    assert fragment in at.error[0].value
    assert metric_free_ok(at)


def test_two_pasted_configs_of_one_model_type_stay_two_models():
    small, big = SHARED / "Qwen--Qwen3-8B.json", SHARED / "Qwen--Qwen3-32B.json"
    if not (small.exists() and big.exists()):
        pytest.skip("shared model configs not present")
    at = app(page="pages/models.py")
    ids = []
    for cfg in (small, big):
        at.text_area(key="cfg_paste").set_value(cfg.read_text())
        at.button(key="cfg_import").click().run()
        assert not at.exception
        ids.append(at.selectbox(key="model").value)
    assert ids[0] != ids[1] and ids[1] == ids[0] + "-2"  # the second did not replace the first
    labels = [at.selectbox(key="model").format_func(i) for i in ids]
    assert all(label.startswith("qwen3 (") and "B params)" in label for label in labels)
    assert labels[0] != labels[1]


def test_kv_dtype_follows_an_fp8_checkpoint_and_comes_back():
    at = app({"model": "llama-3.1-70b-fp8"})
    assert at.session_state["kvd"] == "fp8" and metric(at, "Whole cache") == "167.8 MB"
    at.selectbox(key="model").set_value("llama-3.1-70b").run()
    assert at.session_state["kvd"] == "fp16"  # was left at fp8: half the bytes
    assert metric(at, "Whole cache") == "335.5 MB"
    assert any("KV cache dtype set to fp16" in w.value for w in at.warning)
    # a dtype the user chose stays when the model changes
    at.session_state["kvd"] = "fp8"
    at.selectbox(key="model").set_value("llama-3.1-8b").run()
    assert at.session_state["kvd"] == "fp8"


def metric_free_ok(at) -> bool:
    """The page still renders its takeaway after an error."""
    return bool(at.info) and "kB per token" in at.info[0].value


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
    at.slider(key="w_hit").set_value(50.0).run()
    at.radio(key="w_crit").set_value("share").run()
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
    assert metric(at, "A (sidebar)") == f"{gain:.1%}"
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
    from kvmodel.units import fmt_bandwidth, fmt_sig

    at = app({"trace": "azure-code", "link": "ib-ndr"}, "pages/traffic.py")
    sc = build_scenario(link="ib-ndr")
    req = load_traffic(tr.sample_path("azure-code"))
    ld = tr.load(tr.per_request_scenario(sc), tr.mix_from_requests(req))
    assert ld.stable and ld.rps > 0
    assert metric(at, "Arrival rate") == f"{ld.rps:,.1f} req/s"
    assert metric(at, "Link utilisation") == f"{ld.utilization:.0%}"
    assert metric(at, "p50 transfer incl. queue") == fmt_time(ld.p50_s)
    assert metric(at, "p90 transfer incl. queue") == fmt_time(ld.p90_s)
    assert metric(at, "p99 transfer incl. queue") == fmt_time(ld.p99_s)
    assert metric(at, "p99 share of TTFT") == f"{ld.p99_share_of_ttft:.0%}"
    assert metric(at, "Decode idle per second") == fmt_time(ld.decode_idle_s_per_s)
    assert metric(at, "Decode steps lost") == f"{fmt_sig(ld.decode_steps_lost_per_s, 3)} steps/s"
    assert ld.decode_steps_lost_per_s == pytest.approx(ld.decode_idle_s_per_s / sc.decode_step_s)
    assert metric(at, "Link for p99 ≤ 20% of TTFT") == fmt_bandwidth(
        ld.bandwidth_for_target_bytes_per_s
    )


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
    csv = b"prompt_tokens,completion_tokens\n100,5\n2000,10\n500,7\n-3,1\n"
    at.file_uploader(key="traffic_upload").set_value(("t.csv", csv, "text/csv")).run()
    assert not at.exception
    assert metric(at, "Requests") == "3"
    assert "Skipped 1" in at.warning[0].value and "row 5" in at.warning[0].value
    assert "no timestamps" in at.info[-1].value
    huge = b"prompt_tokens\n100\n2000\n1000000000000\n"
    at.file_uploader(key="traffic_upload").set_value(("huge.csv", huge, "text/csv")).run()
    assert "1 request is longer than Llama-3.1-70B's max context of 131,072 tokens" in (
        at.warning[0].value
    )
    assert "in huge.csv gain from disaggregation (0% of their tokens)" in at.info[0].value
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
    at = app({"cmp": "comp:int8;link:ib-ndr~lw:1", "batch": "8"}, "pages/compare.py")
    df = shown_table(at, index=True)
    assert list(df.columns) == ["A (sidebar)", "B", "C"]
    evb = evaluate(
        build_scenario(model="llama-3.1-70b", link="100gbe", batch=8, compression="int8")
    )
    assert df.loc["Exposed transfer", "B"] == fmt_ms(evb.exposed_s, 2)
    assert df.loc["Prompt × batch", "C"] == "1,024 tokens × 8"  # follows A's batch
    assert df.loc["Layer-wise", "C"] == "on"
    at.selectbox(key="cmp0_link").set_value("nvlink4").run()
    assert at.query_params["cmp"] in (
        ["comp:int8~link:nvlink4~lw:0;link:ib-ndr~lw:1"],
        "comp:int8~link:nvlink4~lw:0;link:ib-ndr~lw:1",
    )
    at.button(key="cmp1_rm").click().run()
    assert list(shown_table(at, index=True).columns) == ["A (sidebar)", "B"]


def test_compare_bad_link_part_warns():
    at = app({"cmp": "link:warp;oops"}, "pages/compare.py")
    assert not at.exception
    again = app({"cmp": "link:warp;oops"})
    text = again.warning[0].value
    assert "cmp scenario B: link='warp'" in text and "scenario C 'oops'" in text
    # B lost its only change, so it equals A: the takeaway does not compare A with itself
    assert at.info[0].value.startswith("A (the sidebar) already has the lowest TTFT")


def test_presentation_mode_from_link():
    at = app({"present": "1"})
    assert at.toggle(key="present").value is True
    at.button(key="present_exit").click().run()
    assert at.query_params["present"] in ("0", ["0"])


def test_plan_page_numbers_follow_the_solver():
    from kvmodel import solve

    at = app({"batch": "8"}, "pages/plan.py")
    sc = build_scenario(model="llama-3.1-70b", link="100gbe", batch=8)
    need = solve.min_bandwidth(sc, criterion="step")
    assert metric(at, "Minimum bandwidth") == f"{need / 1e9:,.4g} GB/s"
    assert "falls short" in at.info[0].value
    assert "layer-wise" in at.success[0].value
    at.radio(key="w_crit").set_value("share").run()
    assert at.query_params["crit"] in ("share", ["share"])
    need_share = solve.min_bandwidth(sc, criterion="share")
    assert metric(at, "Minimum bandwidth") == f"{need_share / 1e9:,.4g} GB/s"


def test_closed_sidebar_expanders_keep_their_values():
    at = app(LINK)
    assert "step" not in [n.key for n in at.number_input]  # closed: not drawn
    for batch in (3, 4):  # reruns with the expanders closed keep the values
        at.number_input(key="batch").set_value(batch).run()
    assert (at.session_state["step"], at.session_state["tp"]) == (25, 2)
    at.session_state["sb_times_open"] = True
    at.session_state["sb_hardware_open"] = True
    at.run()
    assert at.number_input(key="step").value == 25
    assert at.selectbox(key="tp").value == 2
    assert "roofline" in " ".join(c.value for c in at.sidebar.caption).lower()
    at.number_input(key="step").set_value(40).run()
    at.session_state["sb_times_open"] = False
    at.run()
    at.number_input(key="batch").set_value(5).run()
    assert at.session_state["step"] == 40
    assert at.query_params["step"] in ("40", ["40"], "40.0", ["40.0"])
    # the shown numbers use the hidden value: a 40 ms step in the Overview's ratio
    sc = build_scenario(
        model="llama-3.1-8b",
        link="ib-ndr",
        seq_len=4096,
        batch=5,
        compression="int8",
        layerwise=True,
        decode_step_ms=40,
        tp=2,
        prefill_ms=120,
    )
    ev = evaluate(sc)
    assert fmt_ms(ev.exposed_s, 2) in " ".join(m.value for m in at.metric)


def test_lazy_menus_draw_their_contents_when_opened():
    at = app({"batch": "8"}, "pages/plan.py")
    buttons = len(at.get("download_button"))
    assert not at.dataframe and not at.sidebar.code  # closed: not drawn
    at.session_state["plan_tried"] = True  # "Options tried" expander
    at.session_state["sb_share_open"] = True  # "Share this scenario"
    at.session_state["export_sensitivity"] = True  # the chart's Export menu
    at.run()
    assert not at.exception
    assert len(at.dataframe) == 1 and len(at.dataframe[0].value) >= 2
    assert "batch=8" in at.sidebar.code[0].value
    # HTML, PNG, SVG in the Export menu, the CSV of the options, the report in the share box
    assert len(at.get("download_button")) == buttons + 5
