"""Version-1 links (scenario keys, no ``stack``): kept in meaning, said on the page with a
one-click way to today's defaults, and named in the handouts (issue 24 item 2)."""

from datetime import UTC, datetime

import pytest
from app_helpers import app

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.build import build_scenario
from kvview import link_version as L
from kvview import params as P
from kvview.report import report_html

V1_LINK = {"seq": "2000", "rps": "20", "out": "300", "wl": "fixed"}  # the link


def test_a_version_1_link_implies_version_1_defaults():
    assert L.implied(V1_LINK) == {  # kvmodel.inputs.V1_DEFAULTS, all left out by the link
        **{k: v for k, v in I.V1_DEFAULTS.items() if k not in ("stack", "attn", "step", "tp",
                                                               "tpd", "cmp")},
        "stack": "ideal", "attn": "tp", "step": 30.0, "tp": 1, "tpd": 1,
        "cmp": "comp:int8;link:ib-ndr;link:nvlink4",
    }  # fmt: skip
    assert L.implied({**V1_LINK, "tp": "4"})["tpd"] == 1 and "tp" not in L.implied(
        {**V1_LINK, "tp": "4"}
    )
    assert L.implied({**V1_LINK, "stack": "ideal"}) == {}  # version 2
    assert L.implied({}) == {} and L.implied({"rps": "20"}) == {}  # no scenario key


def test_old_links_keep_their_meaning():
    values = P.parse_query(V1_LINK)[0]
    assert (values["stack"], values["tp"], values["step"], values["attn"]) == ("ideal", 1, 30.0,
                                                                                "tp")  # fmt: skip


def test_current_defaults_rewrite_the_link_as_version_2():
    values = P.parse_query(V1_LINK)[0]
    now = L.with_current_defaults(values, L.implied(V1_LINK))
    assert (now["stack"], now["tp"], now["tpd"], now["step"], now["cmp"]) == (
        P.DEFAULTS["stack"], P.DEFAULTS["tp"], P.DEFAULTS["tp"], "est", "auto")  # fmt: skip
    assert (now["seq"], now["rps"], now["out"], now["wl"]) == (2000, 20.0, 300, "fixed")
    link = P.to_link_query(now)
    assert link == {"seq": "2000", "stack": "mooncake", "rps": "20", "out": "300", "wl": "fixed"}
    assert not P.is_version1(link) and P.parse_query(link)[0] == now


def test_current_defaults_give_deepseek_its_own_attention():
    q = {"model": "deepseek-v3", "seq": "2000"}  # version 1 read DeepSeek with tp attention
    values = P.parse_query(q)[0]
    assert values["attn"] == "tp"
    assert L.with_current_defaults(values, L.implied(q))["attn"] == "dp"


def test_inputs_changed_since_are_no_longer_implied():
    implied = L.implied(V1_LINK)
    values = {**P.parse_query(V1_LINK)[0], "tp": 2, "stack": "mooncake"}
    assert set(L.still_implied(implied, values)) == set(I.V1_DEFAULTS) - {"tp", "stack"}


def test_the_notice_names_what_the_link_implies_and_what_today_gives():
    text = L.notice(L.implied(V1_LINK), P.parse_query(V1_LINK)[0])
    ideal = catalog.get_stack("ideal").name
    for part in ("version-1 link", ideal, "prefill TP 1", "a 30 ms decode step",
                 "tensor-parallel attention",
                 "prefill TP 8", catalog.get_stack("mooncake").name):  # fmt: skip
        assert part in text, part
    # Compare's old variants and the framework in words, not link codes ("comp:int8", "fw none")
    for part in ("INT8 compression", "no serving framework's own costs",
                 "the vLLM (V1 engine) serving framework"):  # fmt: skip
        assert part in text, part
    assert "comp:" not in text and "link:" not in text
    # today's estimated step for Llama-3.1-70B at TP 8 on H100, as the Overview shows it
    step = build_scenario(tp=8, decode_step_ms=None, stack="mooncake").decode_step_s
    assert f"estimated {step * 1e3:.1f} ms step" in text


def test_the_report_says_which_defaults_it_used():
    sc = build_scenario(tp=1, decode_step_ms=30, stack="ideal")
    when = datetime(2026, 12, 1, tzinfo=UTC)
    v1 = report_html([("A", sc)], generated_at=when, version1=L.implied(V1_LINK))
    assert "version-1 link" in v1 and "a 30 ms decode step" in v1 and "prefill TP 1" in v1
    v2 = report_html([("A", sc)], generated_at=when)
    assert "Link version 2" in v2 and "version-1" not in v2


@pytest.mark.parametrize("page", ["pages/capacity.py", "pages/overview.py"])
def test_a_version_1_link_opens_with_a_notice_and_a_button(page):
    at = app(V1_LINK, page, article=False)
    notes = [i.value for i in at.info if "version-1 link" in i.value]
    assert notes and "a 30 ms decode step" in notes[0] and "prefill TP 1" in notes[0]
    at.button(key="v1_use_defaults").click().run()
    assert not at.exception
    q = {k: at.query_params[k] for k in at.query_params}
    q = {k: v[0] if isinstance(v, list) else v for k, v in q.items()}
    assert q == {"seq": "2000", "stack": "mooncake", "rps": "20", "out": "300", "wl": "fixed"}
    assert not [i for i in at.info if "version-1 link" in i.value]
    assert at.session_state["tp"] == 8 and at.session_state["step_mode"] == "Estimate"


def test_keep_version_1_hides_the_notice_and_keeps_the_link():
    at = app(V1_LINK, "pages/overview.py", article=False)
    at.button(key="v1_keep").click().run()
    assert not [i for i in at.info if "version-1 link" in i.value]
    assert at.session_state["stack"] == "ideal" and at.session_state["tp"] == 1


def test_a_version_2_link_has_no_notice():
    at = app({"seq": "2000", "stack": "ideal"}, "pages/overview.py", article=False)
    assert not [i for i in at.info if "version-1 link" in i.value]
