"""kvmodel.capacity.result: the plan's JSON form (the issue's keys, ms, no NaN or inf)."""

import math

import pytest

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity import Slo, Workload, plan
from kvmodel.traffic import load_traffic, sample_path

SC = scenario_from_inputs({"stack": "ideal"})
CODE = Workload.from_requests(load_traffic(sample_path("azure-code")))


def test_to_json_has_the_issue_keys_and_is_finite():
    p = plan(SC, CODE, Slo(2.0, 0.05), prefill_tp=8, decode_tp=8)
    out = p.to_json()
    for key in ("prefill_gpus", "decode_gpus", "disaggregated_gpus", "pd_ratio", "colocated_gpus",
                "disaggregation_saves_gpus", "ttft_p90_ms", "tpot_ms", "link_utilization",
                "meets_slo", "limits", "ttft_percentile"):  # fmt: skip
        assert key in out, key
    assert out["ttft_p90_ms"] == pytest.approx(p.ttft_s * 1e3)
    assert all(v in ("compute", "memory", "tpot", "ttft", "link") for v in out["limits"].values())


def test_unreachable_numbers_become_null_and_units_convert():
    # TPOT 2 ms: nothing meets it; every number stays finite or becomes null, never Infinity
    p = plan(SC, Workload.fixed(2, 8192, 64), Slo(2.0, 0.002), prefill_tp=8, decode_tp=8)
    out = p.to_json()
    for key, value in out.items():
        assert not (isinstance(value, float) and not math.isfinite(value)), key
    assert out["tpot_ms"] == pytest.approx(p.tpot_s * 1e3)
    assert out["link_bandwidth_gbs"] == 12.5  # 100 GbE per NIC
    assert out["demanded_gbs"] == pytest.approx(p.demanded_bytes_per_s / 1e9)
    assert out["notes"] == list(p.notes)
