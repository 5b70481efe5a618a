"""`python -m kvmodel capacity`: flags, JSON keys, clear errors."""

import json

import pytest

from kvmodel.cli import main

ISSUE_KEYS = {
    "prefill_gpus",
    "decode_gpus",
    "disaggregated_gpus",
    "pd_ratio",
    "colocated_gpus",
    "disaggregation_saves_gpus",
    "ttft_p90_ms",
    "tpot_ms",
    "link_utilization",
    "meets_slo",
    "limits",
}


def run_json(capsys, *argv):
    assert main(["capacity", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fixed_workload_has_the_issue_keys(capsys):
    out = run_json(capsys, "--rps", "2", "--seq-len", "2048", "--output-len", "128")
    assert ISSUE_KEYS <= set(out)
    assert out["disaggregated_gpus"] == out["prefill_gpus"] + out["decode_gpus"]
    assert out["disaggregation_saves_gpus"] == out["colocated_gpus"] - out["disaggregated_gpus"]
    assert set(out["limits"]) == {"prefill", "decode", "colocated"}
    assert out["ttft_percentile"] == 90


def test_trace_without_timestamps_and_no_rps_is_a_clear_error(capsys):
    assert main(["capacity", "--trace", "data/traces/samples/histogram_sample.csv"]) == 2
    err = capsys.readouterr().err
    assert "--rps" in err and "timestamps" in err and "Traceback" not in err


def test_neither_trace_nor_rps_is_a_clear_error(capsys):
    assert main(["capacity"]) == 2
    err = capsys.readouterr().err
    assert "--trace" in err and "--rps" in err


@pytest.mark.parametrize("flag", ["--ttft-slo-ms", "--tpot-slo-ms", "--ttft-percentile"])
def test_bad_target_names_the_flag(capsys, flag):
    assert main(["capacity", "--rps", "1", flag, "0"]) == 2
    assert flag in capsys.readouterr().err
