"""Extract data/fidelity/silicon_agg.csv from aiconfigurator's measured silicon table.

aiconfigurator-core (PyPI, Apache-2.0) ships ``aiconfigurator_core/systems/silicon_sample.csv``:
thousands of served runs (TTFT, TPOT) measured by NVIDIA's team on real clusters.  This keeps
the aggregated (colocated) runs of models and GPUs in this project's catalogs, one row each
with the columns kvmodel.fidelity needs, and the row id to find it again.

Kept: ``mode`` agg; models DeepSeek-R1/V3, Llama-3.1-70B/8B, Qwen3-32B, Qwen3-235B-A22B-FP8,
gpt-oss-120b; systems H100 SXM, H200 SXM, B200 SXM.  Left out, with why:
- GB200 NVL72 runs (wide TP over 36-72 GPUs, and a second source whose concurrency column
  disagrees with its batch size);
- rows without ``silicon_concurrency`` (the served concurrency is the input that matters);
- MoE rows whose attention TP and MoE TP differ without EP (``tp 2, moe_tp 4``): the number
  of GPUs is ambiguous;
- attention-DP rows whose DP × TP is not the EP size (layouts this model does not express).

Run: ``.venv/bin/pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip
/tmp/aic/*.whl -d /tmp/aic/x`` then ``.venv/bin/python bench/silicon_extract.py
/tmp/aic/x/aiconfigurator_core/systems/silicon_sample.csv``.
"""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

MODELS = {
    "deepseek-ai/DeepSeek-R1": "deepseek-r1",
    "deepseek-ai/DeepSeek-V3": "deepseek-v3",
    "meta-llama/Llama-3.1-70B": "llama-3.1-70b",
    "meta-llama/Llama-3.1-8B-Instruct": "llama-3.1-8b",
    "Qwen/Qwen3-32B": "qwen3-32b",
    "Qwen/Qwen3-235B-A22B-FP8": "qwen3-235b-a22b",
    "openai/gpt-oss-120b": "gpt-oss-120b",
}
MOE = {"deepseek-r1", "deepseek-v3", "qwen3-235b-a22b", "gpt-oss-120b"}
GPUS = {"h100_sxm": "h100-sxm", "h200_sxm": "h200", "b200_sxm": "b200"}
OUT = Path(__file__).resolve().parents[1] / "data" / "fidelity" / "silicon_agg.csv"
FIELDS = ("id", "model", "gpu", "framework", "version", "precision", "tp", "ep",
          "concurrency", "input_tokens", "output_tokens", "tpot_ms", "ttft_ms")  # fmt: skip


def keep(r: dict) -> dict | None:
    """The row in this project's terms, or None when it is left out (module doc)."""
    if r["mode"] != "agg" or r["model_path"] not in MODELS or r["system"] not in GPUS:
        return None
    m = re.search(r"silicon_concurrency=(\d+)", r["silicon_data_source"])
    if not m:
        return None
    model = MODELS[r["model_path"]]
    tp, adp = int(r["tp_size"] or 1), int(r["attention_dp_size"] or 1)
    mtp, mep = int(r["moe_tp_size"] or 1), int(r["moe_ep_size"] or 1)
    ep = mep if mep > 1 else 1
    if ep > 1 and ep != tp * adp or ep == 1 and adp > 1:
        return None
    if model in MOE and ep == 1 and mtp != tp:
        return None
    quant = (r["gemm_quant_mode"] or r["precision"]).lower()
    return dict(id=r["id"], model=model, gpu=GPUS[r["system"]], framework=r["backend"],
                version=r["backend_version"], precision="fp8" if "fp8" in quant else quant,
                tp=tp, ep=ep, concurrency=int(m.group(1)), input_tokens=int(r["isl"]),
                output_tokens=int(r["osl"]), tpot_ms=round(float(r["silicon_tpot_ms"]), 4),
                ttft_ms=round(float(r["silicon_ttft_ms"]), 3))  # fmt: skip


def main(path: str) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        rows = [k for r in csv.DictReader(fh) if (k := keep(r))]
    with OUT.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=FIELDS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{len(rows)} rows → {OUT}")


if __name__ == "__main__":
    main(sys.argv[1])
