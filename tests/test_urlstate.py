"""URL ⇄ session state (ui.urlstate) through AppTest: a link restores the scenario on every
page, a tampered link warns and recovers."""

import pytest
from app_helpers import LINK, PAGES, app, metric

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvview.fmt import fmt_bytes, fmt_ms, fmt_time


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
            framework="vllm",  # the app's default (the Python API's is "none")
        )
    )
    assert metric(at, "Exposed transfer") == fmt_ms(ev.exposed_s, 2)
    assert metric(at, "TTFT") == fmt_time(ev.ttft_s)
    assert metric(at, "Critical length [tokens]") == f"{ev.critical_seq_len:,}"


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
    assert "4,096" in at.warning[0].value
    assert at.select_slider(key="seq").value == 4096


@pytest.mark.parametrize("back", [True, False])
def test_back_reads_the_entry_link_again(monkeypatch, back):
    """Back/Forward (a history-navigation run) reads the entry's link into the sidebar; any
    other run keeps session state, whatever the URL says (the sidebar owns the scenario)."""
    from ui import urlstate

    at = app({"batch": "16", "seq": "4096"}, article=False)
    assert at.number_input(key="batch").value == 16
    monkeypatch.setattr(urlstate, "history_navigation", lambda: back)
    at.query_params.clear()
    at.query_params.update({"batch": "4", "stack": "mooncake"})  # the earlier entry's link
    at.run()
    assert at.number_input(key="batch").value == (4 if back else 16)
    assert at.select_slider(key="seq").value == (1024 if back else 4096)
    whole = evaluate(build_scenario(seq_len=1024 if back else 4096, batch=4 if back else 16))
    assert metric(at, "Whole cache") == fmt_bytes(whole.kv_total_bytes)
