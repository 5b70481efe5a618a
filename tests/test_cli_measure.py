"""The CLI's measurement commands (kvmodel.cli: calibrate, metrics): JSON keys, tables, one-line
errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kvmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_calibrate_json(capsys):
    out = run_json(capsys, "calibrate", str(DATA / "ib_write_bw.txt"), "--link", "ib-ndr")
    for key in (
        "bandwidth_gbs",
        "latency_us",
        "efficiency",
        "rms_relative_error",
        "n_points",
        "kind",
    ):
        assert key in out
    assert out["kind"] == "perftest" and out["n_points"] == 23
    assert out["bandwidth_gbs"] == pytest.approx(48.0, rel=0.01)
    assert out["efficiency"] == pytest.approx(out["bandwidth_gbs"] / 50)
    out = run_json(capsys, "calibrate", str(DATA / "transfer_pairs.csv"))
    assert out["efficiency"] is None and out["kind"] == "pairs"
    assert out["latency_us"] == pytest.approx(2.1, rel=0.05)


def test_cli_metrics_json(capsys):
    out = run_json(capsys, "metrics", str(DATA / "vllm_pd_metrics.prom"))
    for key in (
        "gap_mean_ms",
        "ttft_mean_ms",
        "transfer_share_of_ttft",
        "verdict",
        "gap_p50_ms",
        "gap_p90_ms",
        "gap_p99_ms",
        "ttft_p99_ms",
        "effective_bandwidth_gbs",
        "metrics_found",
    ):
        assert key in out
    assert out["verdict"] == "under"
    assert out["transfer_share_of_ttft"] == pytest.approx(out["gap_mean_ms"] / out["ttft_mean_ms"])
    out = run_json(capsys, "metrics", str(DATA / "sglang_pd_metrics.prom"))
    assert out["verdict"] == "over"


def test_cli_tables(capsys):
    assert main(["calibrate", str(DATA / "ib_read_bw_gbits.txt"), "--link", "ib-ndr"]) == 0
    assert "per-message cost" in capsys.readouterr().out
    assert main(["metrics", str(DATA / "gap_gauge.prom")]) == 0
    assert "under the 20% line" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["calibrate", str(DATA / "nsys_nvtx_sum.csv")], "no (size, time) pairs"),
        (["calibrate", str(DATA / "vllm_pd_metrics.prom")], "kvmodel metrics"),
        (["metrics", str(DATA / "ib_write_bw.txt")], "not Prometheus text"),
        (["metrics", "/no/such/file.prom"], "cannot read"),
        (["calibrate", str(DATA / "ib_write_bw.txt"), "--link", "nope"], "unknown link"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_cli_garbled_file_no_traceback(tmp_path):
    bad = tmp_path / "scrape.prom"
    bad.write_text(
        '# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first{le="0.5\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "kvmodel", "metrics", str(bad), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "line 2" in proc.stderr


def test_calibrate_nics_divides_and_over_100_percent_is_a_warning(capsys):
    import json as _json

    from kvmodel.cli import main as _main

    sample = str(ROOT / "data/measurements/ib_write_bw.txt")  # 48.02 GB/s fitted
    assert _main(["calibrate", sample, "--link", "ib-ndr", "--json"]) == 0
    one = _json.loads(capsys.readouterr().out)
    assert one["efficiency"] == pytest.approx(48.02e9 / 50e9, rel=1e-3) and one["warnings"] == []
    assert _main(["calibrate", sample, "--link", "25gbe", "--json"]) == 0
    over = _json.loads(capsys.readouterr().out)  # 48 GB/s on one 3.125 GB/s NIC: not possible
    assert over["efficiency"] is None and "NICs" in over["warnings"][0]
    assert _main(["calibrate", sample, "--link", "200gbe", "--nics", "4", "--json"]) == 0
    four = _json.loads(capsys.readouterr().out)  # 48.02 ÷ (4 × 25 GB/s)
    assert four["nics"] == 4 and four["efficiency"] == pytest.approx(48.02e9 / 100e9, rel=1e-3)
