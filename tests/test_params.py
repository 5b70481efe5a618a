"""URL parameters (ui.params): parsing, clamping with warnings, imported models in a link."""

import pytest

from kvmodel import catalog
from kvmodel.modelcodec import encode_model
from ui import params as P


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
