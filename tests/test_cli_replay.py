"""`python -m kvmodel capacity --replay` / `--size-by replay` (issue 22): keys, text, errors."""

import json

import pytest

from kvmodel.cli import main

REPLAY_KEYS = {"requests", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "tpot_p90_ms",
               "transfer_p90_ms", "peak_link_utilization", "max_decode_queue", "meets_slo",
               "series"}  # fmt: skip


def run_json(capsys, *argv):
    assert main(["capacity", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_replay_adds_exactly_the_issue_keys(capsys):
    out = run_json(capsys, "--rps", "20", "--seq-len", "2048", "--output-len", "256",
                   "--replay", "--replay-requests", "5000")  # fmt: skip
    assert set(out["replay"]) == REPLAY_KEYS
    assert out["replay"]["requests"] == 5000 and out["size_by"] == "analytic"
    assert set(out["replay"]["series"]) == {"minute", "arrivals", "ttft_p90_ms",
                                            "decode_memory_use"}  # fmt: skip
    assert sum(out["replay"]["series"]["arrivals"]) == 5000
    # Poisson at the plan's rate: the replay within 25 % of the formulas (measured 0.97)
    assert 0.75 < out["replay"]["ttft_p90_ms"] / out["ttft_p90_ms"] < 1.25


def test_the_plans_first_step_is_the_step_the_pool_runs_at(capsys):
    # Llama-3.1-70B FP8 on H100, ib-ndr, 20 req/s of 1,024/256 tokens: one decode instance runs
    # at a 9.5 ms step (TPOT), far below B*'s 50 ms (the TPOT target).  The plan's TTFT now
    # carries that 9.5 ms first step (it carried 50 ms: 524 ms at p90 against the replay's
    # 478 ms), after half a step in flight (the pool is busy); the replay, which runs the
    # pool step by step, agrees within 3 %
    out = run_json(capsys, "--model", "llama-3.1-70b-fp8", "--gpu", "h100-sxm", "--link",
                   "ib-ndr", "--rps", "20", "--replay")  # fmt: skip
    assert out["decode_instances"] == 1
    assert out["ttft_breakdown_ms"]["first_step"] == pytest.approx(1.5 * out["tpot_ms"], rel=1e-6)
    assert out["tpot_ms"] < 0.25 * out["tpot_slo_ms"]
    assert sum(out["ttft_breakdown_ms"].values()) == pytest.approx(out["ttft_p90_ms"])
    assert out["replay"]["ttft_p90_ms"] / out["ttft_p90_ms"] == pytest.approx(1.0, abs=0.03)


def test_without_replay_no_key(capsys):
    out = run_json(capsys, "--rps", "2", "--seq-len", "2048", "--output-len", "128")
    assert "replay" not in out and "size_by" not in out


def test_trace_replays_its_own_requests(capsys):
    out = run_json(capsys, "--trace", "azure-conv", "--replay")
    assert out["replay"]["requests"] == 19_366  # every request of the trace (README table)


def test_size_by_replay_on_a_tight_target_grows_or_says_so(capsys):
    out = run_json(capsys, "--trace", "mooncake", "--size-by", "replay")
    r = out["replay"]
    assert r["meets_slo"] is True  # the formulas' plan misses in replay: 2,285 ms > 2,000 ms
    grown = out["replay_sized"]
    assert grown["disaggregated_gpus"] > out["disaggregated_gpus"]
    assert any(n.startswith("replay and formulas disagree") for n in out["notes"])


def test_text_section(capsys):
    assert main(["capacity", "--rps", "5", "--replay", "--replay-requests", "1000"]) == 0
    text = capsys.readouterr().out
    assert "replay TTFT" in text and "Poisson arrivals (seeded)" in text and " ms" in text


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--replay-requests", "1000000000"], "--replay-requests must be 1 – 10,000,000"),
        (["--replay-requests", "0"], "--replay-requests"),
        (["--size-by", "guess"], "--size-by"),
    ],
)
def test_absurd_replay_options_exit_2(capsys, argv, needle):
    assert main(["capacity", "--rps", "5", "--replay", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err


def test_decode_gpu_and_its_price(capsys):
    argv = ["--rps", "20", "--seq-len", "2048", "--output-len", "256", "--gpu-decode", "h20"]
    out = run_json(capsys, *argv, "--gpu-price", "3", "--gpu-price-decode", "1.5")
    assert (out["prefill_gpu"], out["decode_gpu"]) == ("h100-sxm", "h20")
    assert out["cost_per_hour"] == out["prefill_gpus"] * 3 + out["decode_gpus"] * 1.5
    assert out["cost_per_million_output_tokens"] > 0


@pytest.mark.parametrize(
    ("argv", "needle"),
    [(["--gpu-decode", "h2"], "h20"), (["--gpu-price-decode", "1e300"], "--gpu-price-decode")],
)
def test_bad_decode_gpu_options_exit_2(capsys, argv, needle):
    assert main(["capacity", "--rps", "5", *argv]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
