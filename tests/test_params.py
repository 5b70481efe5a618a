"""URL parameters (kvview.params): parsing, clamping with warnings, imported models in a link."""

import pytest

from kvmodel import catalog
from kvmodel.modelcodec import encode_model
from kvview import params as P


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


def test_a_version_1_link_keeps_its_meaning():
    # scenario keys but no stack: wire speed, TP attention, and version 1's defaults for what
    # the link left out (30 ms step, TP 1, the old comparison)
    v, warnings, _ = P.parse_query({"model": "deepseek-v3", "seq": "4096"})
    assert warnings == []
    assert (v["stack"], v["attn"], v["step"], v["tp"], v["tpd"]) == ("ideal", "tp", 30.0, 1, 1)
    assert v["cmp"] == "comp:int8;link:ib-ndr;link:nvlink4"
    given = P.parse_query({"model": "llama-3-70b", "step": "25", "tp": "2"})[0]
    assert (given["step"], given["tp"], given["tpd"]) == (25.0, 2, 2)
    # a new link always carries its stack, so it is read with today's defaults
    new = P.parse_query(P.to_query(P.parse_query({})[0]))[0]
    assert (new["stack"], new["step"], new["tp"]) == ("mooncake", "est", 8)
    assert P.parse_query({"model": "deepseek-v3", "stack": "nixl"})[0]["attn"] == "dp"


# Real links, as the app wrote them before links were shortened (every default spelled out).
LONG_DEFAULT = (
    "model=llama-3.1-70b&seq=1024&batch=1&link=100gbe&eff=100&par=0&kvd=fp16&comp=none&lw=0"
    "&codec=1000&tp=8&tpd=8&step=est&prefill=est&gpu=h100-sxm&k=1&share=20&stack=mooncake"
    "&attn=tp&win=window&links=nvlink4%2Cib-ndr%2Cib-hdr%2C100gbe&batches=1%2C8%2C32"
    "&band=20-50&tl=4&trace=azure-conv&minlen=128&crit=step&hit=0&rps=0"
    "&cmp=comp%3Aint8%3Blink%3Aib-ndr%3Bstack%3Aideal&present=0&models=llama-2-7b%2C"
    "llama-3.1-70b%2Cdeepseek-v3%2Cmistral-7b%2Cgemma-3-27b%2Cqwen3.5-27b"
)
LONG_DEEPSEEK = (
    "model=deepseek-v3&seq=8192&batch=16&link=ib-ndr&eff=100&par=0&kvd=fp16&comp=none&lw=0"
    "&codec=1000&tp=8&tpd=8&step=est&prefill=est&gpu=h100-sxm&k=1&share=20&stack=mooncake"
    "&attn=dp&win=window&links=nvlink4%2Cib-ndr%2Cib-hdr%2C100gbe&batches=1%2C8%2C32"
    "&band=20-50&tl=2&trace=azure-conv&minlen=128&crit=share&hit=0&rps=0"
    "&cmp=comp%3Aint8%3Blink%3Aib-ndr%3Bstack%3Aideal&present=0&models=llama-2-7b%2C"
    "llama-3.1-70b%2Cdeepseek-v3%2Cmistral-7b%2Cgemma-3-27b%2Cqwen3.5-27b"
)
V1_LINK = "model=llama-3-70b&seq=4096&batch=4&link=ib-ndr&comp=int8&lw=1"


def query(text: str) -> dict:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(text))


def test_old_long_links_read_exactly_as_before():
    default, warnings, _ = P.parse_query(query(LONG_DEFAULT))
    assert warnings == []  # every default spelled out, Compare's variants included
    assert default["cmp"] == "comp:int8;link:ib-ndr;stack:ideal"  # explicit: kept as written
    assert {**default, "cmp": "auto"} == P.parse_query({})[0]  # today's default is cmp=auto
    v, warnings, _ = P.parse_query(query(LONG_DEEPSEEK))
    assert warnings == []
    assert (v["model"], v["seq"], v["batch"], v["link"], v["tp"], v["tpd"]) == (
        "deepseek-v3", 8192, 16, "ib-ndr", 8, 8)  # fmt: skip
    assert (v["stack"], v["attn"], v["step"], v["tl"], v["crit"]) == (
        "mooncake", "dp", "est", 2, "share")  # fmt: skip
    assert v["kvd"] == "fp16" and v["eff"] == 100.0
    # the short link of that scenario reads back the same values
    short = P.to_link_query(v)
    assert short == {"model": "deepseek-v3", "seq": "8192", "batch": "16", "link": "ib-ndr",
                     "stack": "mooncake", "tl": "2", "crit": "share",
                     "cmp": "comp:int8;link:ib-ndr;stack:ideal"}  # fmt: skip
    assert P.parse_query(short)[0] == v


def test_version_1_link_still_reads_with_version_1_defaults():
    v, warnings, _ = P.parse_query(query(V1_LINK))
    assert warnings == []
    assert (v["stack"], v["attn"], v["step"], v["tp"], v["tpd"]) == ("ideal", "tp", 30.0, 1, 1)
    assert (v["seq"], v["batch"], v["comp"], v["lw"]) == (4096, 4, "int8", 1)
    short = P.to_link_query(v)  # written again, it carries stack=ideal and the v1 values
    assert short["stack"] == "ideal" and short["step"] == "30" and short["tp"] == "1"
    assert P.parse_query(short)[0] == v


def test_short_link_leaves_defaults_out_and_always_marks_version_2():
    assert P.to_link_query(P.parse_query({})[0]) == {}  # the default scenario: no query at all
    v = P.parse_query({"batch": "32", "stack": "mooncake"})[0]
    assert P.to_link_query(v) == {"batch": "32", "stack": "mooncake"}
    # a scenario key without stack would read as a version-1 link: stack is always written
    v["stack"] = "ideal"
    assert P.to_link_query(v) == {"batch": "32", "stack": "ideal"}
    page_only = P.parse_query({"tl": "0"})[0]
    assert P.to_link_query(page_only) == {"stack": "mooncake", "tl": "0"}


@pytest.mark.parametrize(
    "q",
    [
        {"tp": "4", "tpd": "8"},  # decode TP equal to the default 8, but not to the prefill TP
        {"tp": "2"},  # decode TP follows prefill TP: left out
        {"model": "deepseek-v3", "attn": "tp"},  # not the model's own attention layout
        {"model": "llama-3.1-70b-fp8"},  # an FP8 checkpoint: its fp8 KV is implicit
        {"model": "llama-3.1-70b-fp8", "kvd": "fp16"},  # ...fp16 is not
        {"link": "custom", "bw": "40", "lat": "3"},
        {"link": "custom"},  # a custom link at the default bandwidth and latency
        {"step": "25", "prefill": "300", "eff": "80.5", "present": "1", "cmp": "comp:fp8"},
        {"links": "nvlink4", "batches": "4,64", "band": "10-30", "models": "llama-2-7b"},
        {"trace": "azure-code", "minlen": "64", "hit": "50", "rps": "20"},
    ],
)
def test_short_link_round_trips(q):
    v, warnings, _ = P.parse_query({**q, "stack": "mooncake"})
    assert warnings == []
    short = P.to_link_query(v)
    assert P.parse_query(short)[0] == v
    assert len(short) < len(P.to_query(v))


def test_imported_model_link_carries_its_attention_and_dtype():
    spec = catalog.get_model("llama-3-70b")
    from dataclasses import replace

    cfg = encode_model(replace(spec, id="cfg-mine"))
    v, warnings, imported = P.parse_query({"cfg": cfg, "model": "cfg-mine", "stack": "ideal"})
    short = P.to_link_query(v)
    assert {"cfg", "model", "attn", "kvd"} <= set(short)
    assert P.parse_query(short)[0] == v


def test_link_mistakes_that_used_to_stop_or_mislead_are_read_with_a_notice():
    """Session 18's browser review: a TP that does not fit falls back to the default TP (8 for
    a version-2 link, not an unbuildable TP 1); a step that is not a number is estimated as
    the notice says (a version-1 link implied 30 ms); an EP on a dense model is dropped (the
    page stopped with no sidebar control to undo it); bw/lat without the custom link are
    named as unused."""
    v, w, _ = P.parse_query({"stack": "mooncake", "tpd": "3"})
    assert (v["tp"], v["tpd"]) == (8, 8)
    assert w == ["tpd=3 (Decode TP [GPUs]) does not divide Llama-3.1-70B's 8 KV heads and is "
                 "not a multiple of them; using 8."]  # fmt: skip
    v, w, _ = P.parse_query({"seq": "2048", "step": "abc"})  # version 1: no stack
    assert v["step"] == "est" and "estimating it" in w[0]
    v, w, _ = P.parse_query({"stack": "mooncake", "ep": "7", "epd": "16"})
    assert (v["ep"], v["epd"]) == (1, 1) and len(w) == 2 and "dense model" in w[0]
    v, w, _ = P.parse_query({"model": "deepseek-v3", "stack": "mooncake", "epd": "16"})
    assert v["epd"] == 16 and not w
    v, w, _ = P.parse_query({"stack": "mooncake", "bw": "1", "lat": "9"})
    assert v["bw"] == 1.0 and w == ["bw and lat set the custom interconnect only (link=custom); "
                                    "this link uses 100gbe, so they are not used."]  # fmt: skip
    v, w, _ = P.parse_query({"stack": "mooncake", "link": "custom", "bw": "1"})
    assert not w


def test_an_ep_that_is_not_a_multiple_of_its_tp_becomes_the_nearest_one():
    """Session 18 left it: a link's EP that is not a multiple of its TP stopped every page of
    an MoE model.  It now becomes the nearest multiple (12 at TP 8 → 16: 12 ÷ 8 = 1.5, the
    larger on a tie; 20 → 24; 9 → 8), with a notice naming the key; a valid EP is kept."""
    q = {"stack": "mooncake", "model": "deepseek-v3", "tp": "8", "ep": "12", "epd": "9"}
    v, w, _ = P.parse_query(q)
    assert (v["ep"], v["epd"]) == (16, 8)
    assert w[0] == ("ep=12 (Prefill EP [GPUs]) is not a multiple of its TP (8): attention runs "
                    "on EP ÷ TP data-parallel groups of TP GPUs; using 16.")  # fmt: skip
    assert w[1].startswith("epd=9 (Decode EP [GPUs]) is not a multiple") and len(w) == 2
    assert P.ep_multiple(20, 8) == 24 and P.ep_multiple(3, 8) == 8
    assert P.ep_multiple(999, 16) == 320  # within the row's bound (320 = 20 × 16)
    v, w, _ = P.parse_query({**q, "ep": "32", "epd": "64"})
    assert (v["ep"], v["epd"], w) == (32, 64, [])
