"""The Compare page through AppTest: variants edited from the UI land in ``cmp`` and in the
numbers, old ``cmp`` links read as before, rows are judged better or worse than A, and a link
without ``cmp`` compares variants that each differ from A."""

from html.parser import HTMLParser

import pytest
from app_helpers import app, editing, shown_table

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvview import params as P
from kvview.fmt import fmt_bytes, fmt_ms


class _Cells(HTMLParser):
    """(row label, column label) → the td's class, from Compare's table."""

    def __init__(self):
        super().__init__()
        self.classes: dict[tuple[str, str], str] = {}
        self._row, self._in_th = "", False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "th" and a.get("scope") == "row":
            self._row, self._in_th = "", True
        elif tag == "td":
            self.classes[(self._row, a.get("data-label", ""))] = a.get("class") or ""

    def handle_endtag(self, tag):
        if tag == "th":
            self._in_th = False

    def handle_data(self, data):
        if self._in_th:
            self._row += data


def cell_classes(at) -> dict[tuple[str, str], str]:
    html = next(md.value for md in at.markdown if "<table" in md.value)
    parser = _Cells()
    parser.feed(html)
    return parser.classes


def cmp_of(at) -> str:
    value = at.query_params.get("cmp", "")
    return value[0] if isinstance(value, list) else value


def test_a_variant_changes_model_tp_and_batch_from_the_ui():
    # the article's scenario: TP 1, 30 ms
    at = editing(app({"cmp": "comp:int8"}, "pages/compare.py"))
    at.selectbox(key="cmp0_add").set_value("model").run()
    at.selectbox(key="cmp0_model").set_value("llama-3.1-8b").run()
    at.selectbox(key="cmp0_add").set_value("tp").run()
    at.number_input(key="cmp0_tp").set_value(2).run()  # decode TP follows, as A's does
    at.selectbox(key="cmp0_add").set_value("batch").run()
    at.number_input(key="cmp0_batch").set_value(16).run()
    assert not at.exception
    assert cmp_of(at) == "comp:int8~model:llama-3.1-8b~tp:2~tpd:2~batch:16"
    ev = evaluate(
        build_scenario(model="llama-3.1-8b", tp=2, batch=16, compression="int8", link="100gbe")
    )
    df = shown_table(at, index=True)
    assert (
        df.loc["Model", "B"] == "Llama-3.1-8B" and df.loc["Model", "A (sidebar)"] != "Llama-3.1-8B"
    )
    assert df.loc["Parallelism prefill → decode", "B"] == "TP 2 → TP 2"
    assert df.loc["Prompt × batch", "B"] == "1,024 tokens × 16"
    assert df.loc["Exposed transfer", "B"].startswith(fmt_ms(ev.exposed_s, 2))
    # the link it wrote reads back to the same variant
    values, warnings, _ = P.parse_query({"cmp": cmp_of(at), "stack": "ideal", "tp": "1"})
    assert values["cmp"] == cmp_of(at) and not warnings
    at.button(key="cmp0_rm_batch").click().run()  # remove one change: batch follows A again
    assert cmp_of(at) == "comp:int8~model:llama-3.1-8b~tp:2~tpd:2"
    assert shown_table(at, index=True).loc["Prompt × batch", "B"] == "1,024 tokens × 1"


def test_any_scenario_input_can_be_added_with_a_widget_of_its_kind():
    at = editing(app({"cmp": "comp:int8"}, "pages/compare.py"))
    offered = at.selectbox(key="cmp0_add").options
    # every scenario input but the one B already changes (custom bandwidth and latency only
    # on a custom link), by its label and unit
    assert "Batch [requests]" in offered and "Decode step [ms]" in offered and "GPU" in offered
    assert len(offered) == len(P.SCENARIO_KEYS) - 1 - 2
    at.selectbox(key="cmp0_add").set_value("step").run()
    at.text_input(key="cmp0_step").set_value("25").run()
    at.selectbox(key="cmp0_add").set_value("gpu").run()
    at.selectbox(key="cmp0_gpu").set_value("h200").run()
    at.selectbox(key="cmp0_add").set_value("lw").run()  # a flag starts switched
    assert cmp_of(at) == "comp:int8~step:25~gpu:h200~lw:1"
    assert at.toggle(key="cmp0_lw").value is True
    at.text_input(key="cmp0_step").set_value("soon").run()  # junk: said, not a traceback
    assert not at.exception
    assert any("neither milliseconds nor 'est'" in c.value for c in at.caption)


# What today's parser made of these links before the editor changed (taken from the code at
# 2564cd5): the clean cmp value and, per variant, (model, link, seq, batch, tp, tpd, comp,
# layer-wise, stack, gpu, decode step [s], attention).  The estimated decode steps follow the
# step model (session 8: 11.71 ms for Llama-3.1-70B at TP 8; issue 21 made it 11.33, was 11.81;
# one request paying the tensor cores' 64 rows, 11.79).
L70, H100 = "llama-3.1-70b", "h100-sxm"
OLD_LINKS = [
    ({"cmp": "comp:int8;link:ib-ndr;stack:ideal"}, "comp:int8;link:ib-ndr;stack:ideal", [
        (L70, "100gbe", 1024, 1, 8, 8, "int8", False, "mooncake", H100, 0.011791, "tp"),
        (L70, "ib-ndr", 1024, 1, 8, 8, "none", False, "mooncake", H100, 0.011791, "tp"),
        (L70, "100gbe", 1024, 1, 8, 8, "none", False, "ideal", H100, 0.011791, "tp"),
    ]),
    ({"cmp": "comp:INT8;link:ib-ndr~lw:1;tp:2~batch:16", "stack": "ideal", "tp": "8"},
     "comp:int8;link:ib-ndr~lw:1;tp:2~batch:16", [
        (L70, "100gbe", 1024, 1, 8, 8, "int8", False, "ideal", H100, 0.011791, "tp"),
        (L70, "ib-ndr", 1024, 1, 8, 8, "none", True, "ideal", H100, 0.011791, "tp"),
        (L70, "100gbe", 1024, 16, 2, 8, "none", False, "ideal", H100, 0.012226, "tp"),
    ]),
    ({"cmp": "model:llama-3.1-8b~seq:999999;gpu:a100-sxm~step:25;prefill:est~attn:dp",
      "stack": "mooncake"},
     "model:llama-3.1-8b~seq:131072;gpu:h100-sxm~step:25;prefill:est~attn:dp", [
        ("llama-3.1-8b", "100gbe", 131072, 1, 8, 8, "none", False, "mooncake", H100, 0.003595,
         "tp"),
        (L70, "100gbe", 1024, 1, 8, 8, "none", False, "mooncake", H100, 0.025, "tp"),
        (L70, "100gbe", 1024, 1, 8, 8, "none", False, "mooncake", H100, 0.011791, "dp"),
    ]),
    ({"cmp": "link:warp;oops", "stack": "ideal"}, "link:100gbe", [
        (L70, "100gbe", 1024, 1, 8, 8, "none", False, "ideal", H100, 0.011791, "tp"),
    ]),
    ({"cmp": "", "stack": "ideal"}, "", []),
    # a link from before transfer stacks (no stack): version 1's comparison
    ({"link": "ib-ndr"}, "comp:int8;link:ib-ndr;link:nvlink4", [
        (L70, "ib-ndr", 1024, 1, 1, 1, "int8", False, "ideal", H100, 0.03, "tp"),
        (L70, "ib-ndr", 1024, 1, 1, 1, "none", False, "ideal", H100, 0.03, "tp"),
        (L70, "nvlink4", 1024, 1, 1, 1, "none", False, "ideal", H100, 0.03, "tp"),
    ]),
]  # fmt: skip


@pytest.mark.parametrize(("query", "clean", "scenarios"), OLD_LINKS)
def test_old_cmp_links_read_as_before(query, clean, scenarios):
    values, _, _ = P.parse_query(query)
    assert values["cmp"] == clean
    got = []
    for over in P.compared(values["cmp"], values):
        sc = P.scenario_from_values(P.variant_values(values, over)[0])
        got.append((sc.model.id, sc.link.id, sc.seq_len, sc.batch, sc.tp_prefill, sc.tp_decode,
                    sc.compression, sc.layerwise, sc.stack.id, sc.gpu.id,
                    round(sc.decode_step_s, 6), sc.attention_parallel))  # fmt: skip
    assert got == scenarios


def test_an_explicit_old_default_keeps_exactly_its_variants():
    # the old default written out, on IB NDR: C is A itself, and the page says so
    at = app(
        {"link": "ib-ndr", "cmp": "comp:int8;link:ib-ndr;stack:ideal", "stack": "mooncake"},
        "pages/compare.py",
        article=False,
    )
    assert cmp_of(at) == "comp:int8;link:ib-ndr;stack:ideal"
    assert any("C is the same scenario as A" in c.value for c in at.caption)


def test_rows_are_judged_better_or_worse_than_a():
    # B: 8 prompts (8 × the bytes, longer prefill: worse); C: INT8 on the wire (better)
    at = app({"cmp": "batch:8;comp:int8"}, "pages/compare.py")
    cls = cell_classes(at)
    df = shown_table(at, index=True)
    for row in ("TTFT", "Exposed transfer", "On the wire", "Transfer ÷ decode step"):
        assert df.loc[row, "Better"] == "lower is better"
        assert cls[(row, "B")] == "cmp-worse", row
        assert cls[(row, "C")] == "cmp-better", row
        assert cls[(row, "A (sidebar)")] == ""
    assert df.loc["Critical sequence length", "Better"] == "higher is better"
    assert cls[("Critical sequence length", "C")] == "cmp-better"  # longer: better
    assert cls[("KV cache", "C")] == "cmp-same"  # INT8 is for the trip only
    assert "worse" in df.loc["TTFT", "B"] and "▲" in df.loc["TTFT", "B"]  # words and arrows
    assert "better" in df.loc["Exposed transfer", "C"] and "▼" in df.loc["Exposed transfer", "C"]
    assert cls[("Prompt × batch", "B")] == "cmp-input"  # an input that differs: neither


@pytest.mark.parametrize("stack", ["ideal", "mooncake"])
def test_defaults_differ_from_a_when_a_is_on_ib_ndr(stack):
    at = app({"link": "ib-ndr", "stack": stack}, "pages/compare.py", article=False)
    assert cmp_of(at) in ("auto", "")  # made from A, not written out
    assert not [c.value for c in at.caption if "same scenario as A" in c.value]
    df = shown_table(at, index=True)
    assert list(df.columns) == ["Better", "A (sidebar)", "B", "C", "D"]
    assert df.loc["KV dtype / compression", "B"] == "fp16 / int8"
    assert df.loc["Interconnect", "C"] == "InfiniBand XDR 800G"  # the next faster link
    assert df.loc["Layer-wise", "D"] == "on"
    cls = cell_classes(at)
    for label in ("B", "C", "D"):
        assert "cmp-input" in {v for (_, col), v in cls.items() if col == label}, label


def test_editing_a_default_variant_writes_the_comparison_out():
    at = editing(app({"link": "ib-ndr"}, "pages/compare.py"))  # the article's scenario on IB NDR
    at.button(key="cmp2_rm").click().run()
    assert cmp_of(at) == "comp:int8;link:ib-xdr"
    next(b for b in at.button if b.label == "Add a scenario").click().run()
    assert cmp_of(at) == "comp:int8;link:ib-xdr;lw:1"  # the unused default comes back


def test_presentation_mode_names_the_changes_without_controls():
    at = app({"cmp": "comp:int8~batch:16;lw:1", "present": "1"}, "pages/compare.py")
    texts = [m.value for m in at.markdown]
    assert "**B** · Transfer compression: int8; Batch: 16 requests" in texts
    assert "**C** · Send layer by layer: on" in texts
    assert not [b for b in at.button if b.label.startswith("Remove")]
    assert not [s for s in at.selectbox if s.label == "Add a change"]


# Issue 24 item 1: a variant on another model takes that model's attention parallelism (and
# KV dtype), as its own page does, not A's.  DeepSeek-V3 is served data-parallel (MLA: one
# decode rank holds a request's whole latent cache), Llama-3.1-70B tensor-parallel.
@pytest.mark.parametrize(
    ("a_model", "b_model", "b_attn"),
    [("deepseek-v3", "llama-3.1-70b", "tp"), ("llama-3.1-70b", "deepseek-v3", "dp")],
)
def test_a_variant_on_another_model_derives_its_own_attention(a_model, b_model, b_attn):
    base = {"link": "ib-ndr", "batch": "8", "stack": "mooncake"}
    at = app({**base, "model": a_model, "cmp": f"model:{b_model}"}, "pages/compare.py",
             article=False)  # fmt: skip
    own = P.parse_query({**base, "model": b_model})[0]  # B's own page (Overview)
    assert own["attn"] == b_attn
    ev = evaluate(P.scenario_from_values(own))
    df = shown_table(at, index=True)
    assert df.loc["Attention parallelism", "B"] == b_attn  # the derived row is shown
    assert df.loc["Attention parallelism", "A (sidebar)"] != b_attn
    assert df.loc["Exposed transfer", "B"].startswith(fmt_ms(ev.exposed_s, 2))
    assert df.loc["On the wire", "B"].startswith(fmt_bytes(ev.wire_bytes))
    assert cell_classes(at)[("Attention parallelism", "B")] == "cmp-input"
    assert any(
        "B derives from its own model" in c.value and "Attention" in c.value for c in at.caption
    )


def test_wire_bytes_of_deepseek_v3_dp_against_tp_by_hand():
    # DeepSeek-V3 (config.json): 61 layers, MLA latent 512 + rope 64 = 576 values per token
    # and layer, fp16 (2 B): 1,024 tokens × 61 × 576 × 2 B = 71.96 MB per request, sent once
    # under dp; under tp each of the 8 decode ranks receives the whole latent: 8 × 71.96 MB.
    # Batch 8: 575.7 MB (dp) against 4.6 GB (tp) — the two numbers.
    base = {"link": "ib-ndr", "batch": "8", "stack": "mooncake", "model": "deepseek-v3"}
    dp = evaluate(P.scenario_from_values(P.parse_query(base)[0])).wire_bytes
    from_llama = P.variant_values(P.parse_query({**base, "model": "llama-3.1-70b"})[0],
                                  {"model": "deepseek-v3"})[0]  # fmt: skip
    assert from_llama["attn"] == "dp"
    assert evaluate(P.scenario_from_values(from_llama)).wire_bytes == dp
    assert dp == pytest.approx(8 * 1024 * 61 * 576 * 2)
    tp = evaluate(P.scenario_from_values(P.parse_query({**base, "attn": "tp"})[0])).wire_bytes
    assert tp == pytest.approx(8 * dp)


def test_a_user_set_attention_of_a_is_kept_by_the_variant():
    # A = Llama-3.1-70B with dp set by hand (not its model's tp): the variant keeps it
    a, _, _ = P.parse_query({"model": "llama-3.1-70b", "attn": "dp", "stack": "mooncake"})
    assert P.variant_values(a, {"link": "ib-ndr"})[0]["attn"] == "dp"
    assert P.variant_values(a, {"model": "llama-3.1-8b"})[0]["attn"] == "dp"


def test_a_variant_slower_than_an_unbuildable_a_is_not_said_to_be_below_it():
    # A = DeepSeek-V3 at TP 8 on H100: its weights do not fit (83.9 GB > 72 GB per GPU), so
    # A is not ranked; B (Llama-3.1-70B) is the lowest buildable TTFT but slower than A's
    # number: 'above', never '−349.9 ms below A' (seen on the page)
    base = {"link": "ib-ndr", "batch": "8", "stack": "mooncake", "model": "deepseek-v3"}
    at = app({**base, "cmp": "model:llama-3.1-70b"}, "pages/compare.py", article=False)
    said = next(i.value for i in at.info if "TTFT" in i.value)
    assert said.startswith("Lowest TTFT among the buildable scenarios: B at ")
    assert "above A's (A cannot be built as set)" in said and "below" not in said
    assert "Not buildable as set, so not ranked: A (sidebar)." in said


def test_a_comparison_opens_read_only_and_edit_shows_the_editor():
    """A shared comparison opens with each variant's changes in words; "Edit B–D" brings the
    widgets (and the link is unchanged by opening them)."""
    at = app({"cmp": "comp:int8~batch:16;lw:1"}, "pages/compare.py")
    keys = {getattr(w, "key", None) for w in [*at.selectbox, *at.number_input, *at.button]}
    assert not any(str(k).startswith("cmp0_") or str(k).startswith("cmp1_") for k in keys)
    words = [m.value for m in at.markdown if m.value.startswith("**B** · ")]
    assert words and "int8" in words[0] and "16" in words[0], words
    before = cmp_of(at)
    editing(at)
    assert at.selectbox(key="cmp0_comp").value == "int8"
    assert at.number_input(key="cmp0_batch").value == 16
    assert at.selectbox(key="cmp1_add") is not None and cmp_of(at) == before


def test_the_ttft_tab_draws_each_scenario_s_ttft_when_opened():
    """The TTFT chart's table is made only while its tab is open; opened, it shows A's and each
    variant's TTFT (kvmodel's evaluate, in ms) and says which one the sentence ranks first."""
    import base64
    import json

    import numpy as np

    at = app({"cmp": "comp:int8;lw:1"}, "pages/compare.py")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert not any("TTFT per scenario" in t for t in titles)
    at.session_state["cmp_tab"] = "TTFT"
    at.run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert "TTFT per scenario" in spec["layout"]["title"]["text"]
    a = build_scenario(link="100gbe", framework="vllm")  # a link without fw: vLLM (issue 21)
    expected = {"A (sidebar)": evaluate(a).ttft_s * 1e3}
    total = {}
    for trace in spec["data"]:  # stacked parts add up to each scenario's TTFT
        x = trace["x"]  # plotly's binary array
        xs = np.frombuffer(base64.b64decode(x["bdata"]), dtype=x["dtype"]) if "bdata" in x else x
        for label, v in zip(trace["y"], xs, strict=True):
            total[label] = total.get(label, 0.0) + v
    assert total["A (sidebar)"] == pytest.approx(expected["A (sidebar)"], rel=1e-9)
    assert set(total) == {"A (sidebar)", "B", "C"}


def test_the_change_tab_shows_each_variant_against_a_when_opened():
    """Its frame (``changes``) is made only while the tab is open: each variant's TTFT change
    against A, in ms, as evaluate gives them."""
    import json

    at = app({"cmp": "comp:int8;lw:1"}, "pages/compare.py")
    at.session_state["cmp_tab"] = "Change against A"
    at.run()
    assert not at.exception
    spec = json.loads(at.get("plotly_chart")[-1].proto.spec)
    assert spec["layout"]["title"]["text"].startswith("Change against A")
    ttft = next(t for t in spec["data"] if t["name"] == "Change in TTFT vs A")
    a = build_scenario(link="100gbe", framework="vllm")  # a link without fw: vLLM (issue 21)
    b = build_scenario(link="100gbe", framework="vllm", compression="int8")
    assert ttft["y"] == ["B", "C"]
    want = (evaluate(b).ttft_s - evaluate(a).ttft_s) * 1e3
    assert ttft["x"][0] == pytest.approx(want, rel=1e-9) and want < 0


def test_a_link_whose_variants_are_all_wrong_says_why_and_opens_the_editor():
    """cmp=foo:bar names an unknown input: the notice says which, and with no variant left the
    editor opens on its "Add a scenario" button (the sentence asks to add one)."""
    at = app({"cmp": "foo:bar"})  # the notice shows once, on the page the link opens
    said = " ".join(w.value for w in at.warning)
    assert "scenario B 'foo:bar': unknown input 'foo', ignored" in said, said
    at.switch_page("pages/compare.py").run()
    assert at.toggle(key="cmp_edit").value is True
    assert any(b.label == "Add a scenario" for b in at.button)
    assert "add a variant above" in at.info[0].value
