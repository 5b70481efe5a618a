"""Per-GPU rate of grouped MoE GEMMs at wide expert slices, from measured MoE kernels.

data/gpus.csv's ``moe_gemm_tflops`` (``kvmodel.timing.routed_gemm_flops``): a prefill's routed
experts run at ``min(dense rate, R × w ÷ (w + 300))``, ``w`` the columns of one expert a GPU
holds (its intermediate size ÷ the TP ranks that share it).  R is fitted here, per GPU, on the
kernel tables aiconfigurator-core (PyPI, Apache-2.0) ships for each system and framework,
``aiconfigurator_core/systems/data/<system>/moe/<framework>/<version>/moe_perf.parquet``
(hidden size, intermediate size, top-k, experts, TP and EP, tokens and measured latency of a
whole MoE layer's experts, collected by NVIDIA's team on real GPUs).

Rows: balanced routing, no EP (``moe_ep_size`` 1: the tokens' meaning with EP is not stated),
8,192 tokens, block-FP8 and BF16 kernels, the DeepSeek (hidden 7,168) and Qwen3 (4,096) shapes,
widths ``w`` = intermediate ÷ TP from 96 to 4,096; the median latency over frameworks and
versions per (dtype, hidden, w).  Achieved FLOP/s = 2 × 3 × hidden × w × top-k × tokens ÷
latency.  R minimises the squared log error of ``min(peak(dtype) × flops_efficiency,
R × w ÷ (w + 300))`` on a 5 TFLOP/s grid; the knee 300 is shared by every GPU.

Run: ``.venv/bin/pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip -q
/tmp/aic/*.whl 'aiconfigurator_core/systems/data/*/moe/*' -d /tmp/aic/x`` then
``.venv/bin/python bench/moe_gemm_rate.py /tmp/aic/x/aiconfigurator_core/systems/data``.
Nothing here runs in the app or the tests: the printed values go into data/gpus.csv with this
script named in the row's source (H100 and H200, one die, take their pooled fit).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvmodel import catalog  # noqa: E402
from kvmodel.timing import MOE_GEMM_HALF_WIDTH  # noqa: E402

SYSTEMS = {"a100_sxm": "a100-80", "h100_sxm": "h100-sxm", "h200_sxm": "h200",
           "b200_sxm": "b200", "gb200": "gb200", "l40s": "l40s"}  # fmt: skip
SHAPES = ((7168, 2048, 8, 256), (4096, 1536, 8, 128))  # hidden, intermediate, top-k, experts
TOKENS = 8192


def rows(root: Path, system: str) -> pd.DataFrame:
    frames = []
    for f in sorted((root / system / "moe").glob("*/*/moe_perf.parquet")):
        d = pd.read_parquet(f)
        d = d[(d.distribution == "balanced") & (d.moe_ep_size == 1) & (d.num_tokens == TOKENS)
              & d.moe_dtype.isin(["fp8_block", "bfloat16"])]  # fmt: skip
        keep = np.zeros(len(d), dtype=bool)
        for h, i, k, e in SHAPES:
            keep |= ((d.hidden_size == h) & (d.inter_size == i) & (d.topk == k)
                     & (d.num_experts == e)).to_numpy()  # fmt: skip
        frames.append(d[keep])
    d = pd.concat(frames) if frames else pd.DataFrame()
    if d.empty:
        return d
    d = d.assign(w=d.inter_size / d.moe_tp_size)
    d = d[(d.w >= 96) & (d.w <= 4096)]
    g = d.groupby(["moe_dtype", "hidden_size", "w", "topk"]).latency.median().reset_index()
    g["tflops"] = 2 * 3 * g.hidden_size * g.w * g.topk * TOKENS / (g.latency * 1e-3) / 1e12
    return g


def fit(g: pd.DataFrame, gpu) -> tuple[float, np.ndarray]:
    fp8 = (gpu.fp8_flops or gpu.bf16_flops) / 1e12
    peak = np.where(g.moe_dtype == "bfloat16", gpu.bf16_flops / 1e12, fp8)
    dense = peak * gpu.flops_efficiency
    knee = g.w / (g.w + MOE_GEMM_HALF_WIDTH)
    grid = np.arange(50.0, 3000.0, 5.0)
    err = [float(np.sum(np.log(np.minimum(dense, r * knee) / g.tflops) ** 2)) for r in grid]
    best = float(grid[int(np.argmin(err))])
    return best, np.minimum(dense, best * knee) / g.tflops


def main(root: Path) -> None:
    print(f"{'system':10s} {'gpu':9s} {'points':>6s} {'R [TFLOP/s]':>12s} "
          f"{'model ÷ table':>14s} {'within ±25 %':>13s}")  # fmt: skip
    for system, gid in SYSTEMS.items():
        g = rows(root, system)
        if g.empty:
            print(f"{system:10s} {gid:9s} no rows")
            continue
        best, ratio = fit(g, catalog.get_gpu(gid))
        inside = float(np.mean(np.abs(np.log(ratio)) < np.log(1.25)))
        print(f"{system:10s} {gid:9s} {len(g):6d} {best:12.0f} "
              f"{ratio.min():6.2f}–{ratio.max():.2f} {inside:12.0%}")  # fmt: skip
    # H100 SXM and H200 are one die (GH100, the same SMs and clocks): one value for both
    pooled = pd.concat([rows(root, "h100_sxm"), rows(root, "h200_sxm")])
    best, ratio = fit(pooled, catalog.get_gpu("h100-sxm"))  # same peaks and efficiency
    inside = float(np.mean(np.abs(np.log(ratio)) < np.log(1.25)))
    print(f"{'hopper':10s} {'pooled':9s} {len(pooled):6d} {best:12.0f} "
          f"{ratio.min():6.2f}–{ratio.max():.2f} {inside:12.0%}")  # fmt: skip


if __name__ == "__main__":
    default = "/tmp/aic/x/aiconfigurator_core/systems/data"
    main(Path(sys.argv[1] if len(sys.argv) > 1 else default))
