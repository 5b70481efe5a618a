"""`python -m kvmodel`: article numbers, JSON keys, exit code 2 with one line on bad input."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
from refdata import model_config

from kvmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]


# The source article's arithmetic: wire speed and a 30 ms decode step (no longer the defaults).
ARTICLE = ("--stack", "ideal", "--decode-step-ms", "30", "--tp", "1", "--framework", "none")


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_transfer_json_reproduces_the_article(capsys):
    out = run_json(
        capsys,
        "transfer",
        *ARTICLE,
        "--model",
        "llama-3-70b",
        "--seq-len",
        "1024",
        "--link",
        "100gbe",
        "--latency-us",
        "0",
        "--prefill-ms",
        "200",
    )
    for key in (
        "kv_bytes",
        "transfer_ms",
        "decode_step_ms",
        "transfer_over_decode",
        "critical_seq_len",
        "ttft_ms",
        "transfer_share_of_ttft",
    ):
        assert key in out
    assert out["kv_bytes"] == 335_544_320
    assert out["transfer_ms"] == pytest.approx(26.8435456)  # 335,544,320 B / 12.5 GB/s
    assert out["decode_step_ms"] == 30
    assert out["transfer_over_decode"] == pytest.approx(26.8435456 / 30)
    assert out["critical_seq_len"] == 1145  # article: "S > ~1,143" with 336 MB rounded
    assert out["ttft_ms"] == pytest.approx(200 + 26.8435456 + 30)


def test_critical_json(capsys):
    out = run_json(capsys, "critical", *ARTICLE, "--model", "llama-3-70b", "--link", "100gbe")
    assert out["critical_seq_len"] == 1145


def test_table_json_article_grid(capsys):
    out = run_json(
        capsys,
        "table",
        *ARTICLE,
        "--model",
        "llama-3-70b",
        "--latency-us",
        "0",
        "--links",
        "ib-ndr,ib-hdr,100gbe",
    )
    assert out["batches"] == [1, 8, 32]
    ms = {row["id"]: row["transfer_ms"] for row in out["links"]}
    # article: IB NDR 6.7 ms at 1, 214 ms at 32; IB HDR 13 ms at 1; 100GbE 27 ms / 856 ms
    assert ms["ib-ndr"]["1"] == pytest.approx(6.71, abs=0.01)
    assert ms["ib-ndr"]["32"] == pytest.approx(214.75, abs=0.01)
    assert ms["ib-hdr"]["1"] == pytest.approx(13.42, abs=0.01)
    assert ms["100gbe"]["32"] == pytest.approx(858.99, abs=0.01)


def test_table_with_article_nvlink_bandwidth(capsys):
    out = run_json(
        capsys,
        "table",
        *ARTICLE,
        "--model",
        "llama-3-70b",
        "--latency-us",
        "0",
        "--bandwidth-gbs",
        "900",
    )
    assert out["links"][0]["transfer_ms"]["32"] == pytest.approx(11.93, abs=0.01)


def test_size_json(capsys):
    out = run_json(capsys, "size", "--model", "llama-3.1-70b", "--tp", "8")
    assert out["kv_bytes"] == 335_544_320
    assert out["kv_bytes_per_gpu_prefill"] == 335_544_320 / 8


def test_listings(capsys):
    assert len(run_json(capsys, "models")) >= 20
    assert len(run_json(capsys, "links")) >= 14
    gpus = {g["id"]: g for g in run_json(capsys, "gpus")}
    assert set(gpus) >= {"h100-sxm", "mi300x", "l40s"}
    # the shares of the datasheet peaks each GPU is costed at (data/gpus.csv, docs/model.md)
    assert (gpus["h100-sxm"]["hbm_efficiency"], gpus["h100-sxm"]["flops_efficiency"]) == (0.8, 0.7)
    assert gpus["b200"]["flops_efficiency"] == 0.61 and gpus["l40s"]["flops_efficiency"] == 0.54


def test_gpus_text_shows_the_peak_shares(capsys):
    main(["gpus"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[-4:] == ["HBM", "share", "FLOP", "share"]
    b200 = next(line for line in lines if line.startswith("b200 "))
    assert b200.split()[-2:] == ["0.8", "0.61"]


def test_config_import(capsys):
    cfg = model_config("meta-llama--Meta-Llama-3.1-70B")
    out = run_json(capsys, "transfer", "--config", str(cfg), "--link", "100gbe")
    assert out["kv_bytes"] == 335_544_320


def test_readable_default_output(capsys):
    assert main(["transfer", "--model", "llama-3-70b"]) == 0
    text = capsys.readouterr().out
    assert "335.5 MB" in text and "critical sequence length" in text


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["transfer", "--model", "llama-3-7b"], "closest"),
        (["transfer", "--link", "100gb"], "100gbe"),
        (["transfer", "--seq-len", "-5"], "-5"),
        (["transfer", "--seq-len", "abc"], "not a whole number"),
        (["transfer", "--efficiency", "2"], "efficiency"),
        (["transfer", "--tp", "3"], "tp=3"),
        (["transfer", "--config", "/nonexistent/config.json"], "config"),
        (["transfer", "--bandwidth-gbs", "nan"], "finite"),
        (["frobnicate"], "invalid choice"),
        # session 23's fuzz: each once a traceback, a silent empty table, an ignored flag or a
        # message naming what the user never typed
        (["table", "--links", ",,,"], "--links: no link id given"),
        (["table", "--batches", " ,"], "--batches: no batch size given"),
        (["table", "--batches", "0"], "--batches: '0' must be >= 1"),
        (["size", "--quant-config", "/nonexistent.json"], "--quant-config needs --config"),
        (["size", "--tp-decode", "3"], "tp_decode=3 does not divide the 8 KV heads"),
        (["size", "--tp", "3"], "tp=3 does not divide the 8 KV heads"),
        (["transfer", "--seq-len", "131072", "--batch", "100000000"],
         "the estimated decode step of 100,000,000 requests × 131,072 tokens"),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, fragment):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert fragment in err


def test_module_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "kvmodel", "critical", *ARTICLE, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["critical_seq_len"] == 1145
    bad = subprocess.run(
        [sys.executable, "-m", "kvmodel", "transfer", "--model", "nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "Traceback" not in bad.stderr


def test_traffic_json(capsys):
    out = run_json(
        capsys,
        "traffic",
        str(ROOT / "data/traces/azure2023/AzureLLMInferenceTrace_conv.csv"),
        *ARTICLE,
        "--model",
        "llama-3-70b",
        "--link",
        "100gbe",
    )
    for key in (
        "n_requests",
        "fraction_requests_gain",
        "fraction_tokens_gain",
        "fraction_too_short",
        "fraction_transfer_bound",
        "critical_seq_len",
        "min_seq_len",
        "link_utilization",
        "p99_transfer_ms",
    ):
        assert key in out
    assert out["n_requests"] == 19_366 and out["critical_seq_len"] == 1145
    assert isinstance(out["n_requests"], int)  # a count, not 19366.0
    assert out["requests_over_max_context"] == 0
    assert out["min_seq_len"] == 128
    total = (
        out["fraction_requests_gain"] + out["fraction_too_short"] + out["fraction_transfer_bound"]
    )
    assert total == pytest.approx(1.0)
    assert 0 < out["link_utilization"] < 1 and out["p99_transfer_ms"] > 26.8


def test_traffic_histogram_of_shares_has_no_request_count(capsys, tmp_path):
    hist = tmp_path / "shares.csv"
    hist.write_text("le,probability\n128,0.5\n1024,0.3\n8192,0.2\n")
    out = run_json(capsys, "traffic", str(hist))
    assert out["format"] == "histogram-probability" and out["n_requests"] is None
    assert out["fraction_too_short"] == 0.0  # 128 is not below the 128-token minimum
    assert out["fraction_requests_gain"] == pytest.approx(0.8)  # 128 and 1024 < 1,145
    assert main(["traffic", str(hist)]) == 0
    assert "unknown: the histogram gives shares" in capsys.readouterr().out


def test_traffic_bad_file_exit_2(capsys, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_bytes(b"\x00\x01\x02garbage\xff\xfe")
    assert main(["traffic", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "bad.csv" in err
