"""Scenario.with_transfer: a copy that changes only how the KV crosses the link checks only what
changed (session 20: the mitigation ladder and the bandwidth searches make ~100 copies a page
rerun) and must equal what ``dataclasses.replace`` builds and checks."""

from dataclasses import fields, replace

import pytest

from kvmodel import catalog
from kvmodel.build import scenario_from_inputs
from kvmodel.evaluation import evaluate
from kvmodel.scenario import TRANSFER_FIELDS, Scenario

BASE = {"model": "deepseek-v3", "seq": 6000, "batch": 3, "stack": "mooncake", "gpu": "h200"}

CHANGES = [
    {"link": catalog.get_link("nvlink4")},
    {"compression": "int8", "layerwise": True},
    {"compression": "int4"},
    {"efficiency": 0.6, "codec_bytes_per_s": 2e11},
    {"stack": catalog.get_stack("ideal")},
    {"descriptor_s": 2e-6},
]


@pytest.mark.parametrize("changes", CHANGES, ids=lambda c: ",".join(c))
def test_a_transfer_copy_equals_the_whole_copy(changes):
    sc = scenario_from_inputs(BASE)
    fast, whole = sc.with_transfer(**changes), replace(sc, **changes)
    assert fast == whole and hash(fast) == hash(whole)
    assert {f.name: getattr(fast, f.name) for f in fields(Scenario)} == {
        f.name: getattr(whole, f.name) for f in fields(Scenario)
    }
    assert evaluate(fast).ttft_s == evaluate(whole).ttft_s
    assert fast.decode_step_s == whole.decode_step_s  # the step reads none of these fields


@pytest.mark.parametrize(
    ("changes", "says"),
    [
        ({"compression": "int3"}, "compression"),
        ({"efficiency": 0.0}, "efficiency"),
        ({"efficiency": 1.5}, "efficiency"),
        ({"codec_bytes_per_s": -1.0}, "codec"),
        ({"stack": "mooncake"}, "StackSpec"),
    ],
)
def test_a_transfer_copy_checks_what_it_changes_as_a_whole_copy_does(changes, says):
    sc = scenario_from_inputs(BASE)
    with pytest.raises(ValueError) as whole:
        replace(sc, **changes)
    with pytest.raises(ValueError) as fast:
        sc.with_transfer(**changes)
    assert str(fast.value) == str(whole.value) and says in str(fast.value)


def test_other_fields_take_the_whole_copy():
    sc = scenario_from_inputs(BASE)
    longer = sc.with_transfer(seq_len=12000)
    assert longer == replace(sc, seq_len=12000)
    assert longer.decode_step_s > sc.decode_step_s  # re-estimated at the longer context
    assert "seq_len" not in TRANSFER_FIELDS and "batch" not in TRANSFER_FIELDS

