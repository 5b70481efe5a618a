"""Is the CLI output byte-identical to an earlier commit's? (issue 20: a refactor changes none)

    python bench/cli_identical.py BASE_REV            # compare HEAD's work tree against BASE_REV
    python bench/cli_identical.py BASE_REV --list     # print the invocations only

The invocation set is generated (not random: the same list every time) over every subcommand,
text and ``--json``, good input and errors.  BASE_REV is checked out into a temporary git worktree;
each invocation runs in both trees with the same interpreter, and stdout, stderr and the exit code
must all match.  Prints ``N identical of M`` and the first differences; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import itertools
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

MODELS = ["llama-3.1-70b", "deepseek-v3", "qwen3-235b-a22b", "mistral-7b", "gpt-oss-120b"]
SCENARIO_VARIANTS = [
    [],
    ["--seq-len", "8192", "--batch", "16"],
    ["--link", "ib-ndr", "--compression", "int8", "--layerwise"],
    ["--stack", "nixl", "--gpu", "h200", "--tp", "4", "--tp-decode", "8"],
    ["--stack", "ideal", "--decode-step-ms", "30", "--prefill-ms", "200"],
    ["--kv-dtype", "fp8", "--attention-parallel", "tp", "--window-transfer", "full"],
    ["--bandwidth-gbs", "40", "--latency-us", "5", "--efficiency", "0.8"],
]
ERRORS = [
    ["transfer", "--model", "nope"],
    ["transfer", "--seq-len", "-5"],
    ["transfer", "--seq-len", "1e9"],
    ["transfer", "--batch", "abc"],
    ["transfer", "--link", "warp-drive"],
    ["transfer", "--stack", "carrier-pigeon"],
    ["transfer", "--gpu", "tpu"],
    ["transfer", "--mfu", "7"],
    ["capacity", "--rps", "-1"],
    ["capacity", "--ttft-slo-ms", "0"],
    ["capacity", "--trace", "no/such/file.csv"],
    ["traffic", "no/such/file.csv"],
    ["size", "--config", "no/such/config.json"],
    ["calibrate", "no/such/perftest.txt"],
    ["metrics", "no/such/metrics.prom"],
]
FILES = [
    ["traffic", "data/traces/samples/burstgpt_sample.csv"],
    ["traffic", "data/traces/samples/histogram_sample.csv"],
    ["traffic", "data/traces/samples/vllm_metrics_sample.prom"],
    ["traffic", "data/traces/mooncake/conversation_trace.jsonl"],
    ["traffic", "data/traces/azure2023/AzureLLMInferenceTrace_conv.csv", "--rps", "20"],
    ["capacity", "--trace", "data/traces/azure2023/AzureLLMInferenceTrace_conv.csv"],
    ["capacity", "--trace", "data/traces/mooncake/conversation_trace.jsonl", "--rps", "2"],
    ["capacity", "--rps", "40", "--output-len", "300", "--gpu-price", "2.5"],
    ["capacity", "--rps", "5", "--seq-len", "8000", "--tp", "2", "--gpu", "h200"],
    ["capacity", "--rps", "20", "--ttft-slo-ms", "100"],
    ["calibrate", "data/measurements/ib_write_bw.txt"],
    ["calibrate", "data/measurements/ib_write_bw.json", "--nics", "8"],
    ["calibrate", "data/measurements/transfer_pairs.csv"],
    ["calibrate", "data/measurements/ib_send_bw_mib.txt"],
    ["metrics", "data/measurements/vllm_pd_metrics.prom"],
    ["metrics", "data/measurements/sglang_pd_metrics.prom"],
    ["metrics", "data/measurements/gap_gauge.prom"],
    ["size", "--config", "tests/data/model-configs/Meta-Llama-3.1-8B-Instruct.json"],
    ["size", "--config", "tests/data/hostile/config-layers-1e9.json"],
    ["traffic", "tests/data/hostile/open-quote.csv"],
    ["traffic", "tests/data/hostile/counts-1e308.csv"],
]


def invocations() -> list[list[str]]:
    """The recorded set: listings, every scenario subcommand × models × variants, files, errors."""
    out: list[list[str]] = [
        ["--help"],
        ["inputs"],
        ["inputs", "--json"],
        ["inputs", "--markdown"],
        ["models"],
        ["models", "--json"],
        ["links"],
        ["links", "--json"],
        ["gpus"],
        ["gpus", "--json"],
        ["stacks"],
        ["stacks", "--json"],
    ]
    for cmd, model, variant in itertools.product(
        ["size", "transfer", "critical"], MODELS, SCENARIO_VARIANTS
    ):
        out.append([cmd, "--model", model, *variant])
    for model, variant in itertools.product(MODELS, SCENARIO_VARIANTS[:4]):
        out.append(["table", "--model", model, *variant])
        out.append(["capacity", "--model", model, "--rps", "10", *variant])
    for base in FILES + ERRORS:
        out.append(base)
    with_json = []
    for inv in out:
        with_json.append(inv)
        if inv[0] not in ("--help",) and "--json" not in inv and not inv[0].startswith("inputs"):
            with_json.append([*inv, "--json"])
    return with_json


def _run(tree: Path, inv: list[str]) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "kvmodel", *inv],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return proc.returncode, proc.stdout, proc.stderr.replace(str(tree), "<tree>")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base", nargs="?", default="HEAD")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    invs = invocations()
    if args.list:
        for inv in invs:
            print(" ".join(inv))
        print(f"{len(invs)} invocations")
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="cli-identical-"))
    base = tmp / "base"
    subprocess.run(
        ["git", "worktree", "add", "--detach", str(base), args.base],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            old = list(pool.map(lambda i: _run(base, i), invs))
            new = list(pool.map(lambda i: _run(ROOT, i), invs))
    finally:
        subprocess.run(
            ["git", "worktree", "remove", "--force", str(base)], cwd=ROOT, capture_output=True
        )
        shutil.rmtree(tmp, ignore_errors=True)
    diffs = [(inv, a, b) for inv, a, b in zip(invs, old, new, strict=True) if a != b]
    print(
        f"{len(invs) - len(diffs)} identical of {len(invs)} invocations "
        f"(text and --json; stdout, stderr and exit code) against {args.base}"
    )
    for inv, a, b in diffs[:10]:
        print("DIFFERS:", " ".join(inv))
        for name, x, y in zip(("exit", "stdout", "stderr"), a, b, strict=True):
            if x != y:
                print(f"  {name}: {str(x)[:300]!r}\n  vs     {str(y)[:300]!r}")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
