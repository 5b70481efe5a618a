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


def test_trace_by_sample_id_with_auto_tp_and_price(capsys):
    out = run_json(capsys, "--trace", "azure-code", "--tp", "auto", "--gpu-price", "2.5")
    assert out["format"] == "azure2023" and out["trace"] == "azure-code"
    # the rate from the trace's timestamps: 8,819 requests over its span
    assert out["rps"] == pytest.approx(2.567, rel=1e-3)
    assert out["cost_per_hour"] == out["disaggregated_gpus"] * 2.5
    assert out["colocated_cost_per_hour"] == out["colocated_gpus"] * 2.5
    assert out["prefill_tp"] in (2, 4, 8, 16) and out["decode_tp"] in (2, 4, 8, 16)


def test_fixed_tp_is_kept_and_decode_tp_follows(capsys):
    out = run_json(capsys, "--rps", "4", "--tp", "4")
    assert out["prefill_tp"] == out["decode_tp"] == out["colocated_tp"] == 4
    out = run_json(capsys, "--rps", "4", "--tp", "8", "--tp-decode", "auto")
    assert out["prefill_tp"] == 8


def test_targets_and_percentile_reach_the_plan(capsys):
    out = run_json(capsys, "--rps", "2", "--ttft-slo-ms", "900", "--ttft-percentile", "99",
                   "--tpot-slo-ms", "30")  # fmt: skip
    assert out["ttft_slo_ms"] == 900 and out["tpot_slo_ms"] == 30
    assert out["ttft_percentile"] == 99 and out["meets_slo"]
    assert out["ttft_p90_ms"] <= 900 and out["tpot_ms"] <= 30


def test_impossible_slo_is_false_with_the_reason_not_a_hang(capsys):
    out = run_json(capsys, "--rps", "2", "--seq-len", "8192", "--ttft-slo-ms", "20",
                   "--tpot-slo-ms", "2")  # fmt: skip
    assert out["meets_slo"] is False and out["colocated_meets_slo"] is False
    assert out["limits"]["decode"] == "tpot" and out["limits"]["prefill"] == "ttft"
    assert any("TTFT" in n for n in out["notes"]) and any("TPOT" in n for n in out["notes"])


def test_strict_json_without_nan(capsys):
    assert main(["capacity", "--rps", "2", "--seq-len", "8192", "--tpot-slo-ms", "2",
                 "--json"]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert "NaN" not in text and "Infinity" not in text
    json.loads(text)


def test_text_output_carries_units(capsys):
    assert main(["capacity", "--rps", "3", "--gpu-price", "1.5"]) == 0
    text = capsys.readouterr().out
    for needle in ("requests/s", "GPUs = ", "ms disaggregated", "GB/s per NIC", "$", "/h"):
        assert needle in text, needle


def test_trace_without_outputs_uses_output_len_and_says_so(capsys):
    out = run_json(capsys, "--trace", "data/traces/samples/histogram_sample.csv", "--rps", "1",
                   "--output-len", "64")  # fmt: skip
    assert out["mean_output_tokens"] == 64
    assert any("--output-len" in n for n in out["notes"])


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--rps", "1", "--tp", "three"], "--tp"),
        (["--rps", "-2"], "--rps"),
        (["--rps", "1", "--gpu-price", "-1"], "--gpu-price"),
        (["--rps", "1", "--output-len", "0"], "--output-len"),
        (["--trace", "no/such/file.csv", "--rps", "1"], "no/such/file.csv"),
        # EP 0 or below once planned silently as EP 1 ("off"); `transfer` refused them
        (["--rps", "1", "--ep", "0"], "--ep must be 1 – 65,536 GPUs, got 0"),
        (["--rps", "1", "--ep-decode", "-3"], "--ep-decode must be 1 – 65,536 GPUs, got -3"),
    ],
)
def test_bad_options_exit_2_with_one_line(capsys, argv, needle):
    assert main(["capacity", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err and err.count("\n") == 1


def test_ttft_breakdown_adds_up_to_the_planned_percentile(capsys):
    # a trace of many lengths: the parts are one request's (at the unloaded percentile) plus
    # the queues, so they sum to ttft_p90_ms exactly, and the text names each of them
    assert main(["capacity", "--trace", "azure-conv", "--rps", "5", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    parts = d["ttft_breakdown_ms"]
    assert list(parts) == ["request", "queue", "prefill", "transfer", "first_step"]
    assert sum(parts.values()) == pytest.approx(d["ttft_p90_ms"], rel=1e-12)
    assert parts["request"] == pytest.approx(21.3 + 25.4)  # vLLM, P/D (data/frameworks.csv)
    assert all(v >= 0 for v in parts.values()) and parts["prefill"] > 0
    assert main(["capacity", "--trace", "azure-conv", "--rps", "5"]) == 0
    text = capsys.readouterr().out
    assert "TTFT p90 parts" in text and "framework 46.7 + queues" in text


def test_a_negative_saving_says_what_it_means(capsys):
    # session 23's fuzz: "disaggregation saves   -8 GPUs" read as a saving; the number stays
    # first (scripts read it) and the words follow
    assert main(["capacity", "--rps", "1"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines()
                if x.startswith("disaggregation saves"))  # fmt: skip
    assert "-8 GPUs (disaggregated needs 8 more)" in line
