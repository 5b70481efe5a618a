"""Per-GPU achievable fractions of the datasheet peaks, from measured GEMM kernels.

data/gpus.csv gives every GPU two efficiencies: ``hbm_efficiency`` (the share of HBM bandwidth
a decode step's weight stream reaches) and ``flops_efficiency`` (the share of the dense tensor
peak a prefill's GEMMs reach).  The values 0.8 / 0.7 were fitted on Hopper (H100, H200) served
runs.  Other GPUs do not reach the same shares of their datasheets, and their served runs are
too few to fit on, so this scales the Hopper values by what each GPU's own GEMM kernels reach
relative to Hopper's, from an independent source: the kernel tables aiconfigurator-core
(PyPI, Apache-2.0) ships for each system and framework,
``aiconfigurator_core/systems/data/<system>/gemm/<framework>/<version>/gemm_perf.parquet``
(m, n, k, dtype and measured latency of each GEMM, collected by NVIDIA's team on real GPUs).

Two regimes, each a median over a framework's rows of one dtype (BF16 and FP8 per-tensor):
- *stream*: m ≤ 8 tokens and ≥ 128 MB of weights (beyond every L2): (weights + activations
  in and out) bytes ÷ latency ÷ datasheet HBM bandwidth;
- *compute*: m, n, k ≥ 4,096: 2mnk ÷ latency ÷ the dtype's dense datasheet peak.
A GPU's ratio is the mean, over the (framework, dtype) pairs it shares with the reference, of
its median ÷ the reference's (H100 SXM and H200 pooled); the value for gpus.csv is the Hopper
anchor × that ratio, to two decimals.

Run: ``.venv/bin/pip download aiconfigurator-core==0.12.0 --no-deps -d /tmp/aic && unzip -q
/tmp/aic/*.whl 'aiconfigurator_core/systems/data/*/gemm/*' -d /tmp/aic/x`` then
``.venv/bin/python bench/gemm_efficiency.py /tmp/aic/x/aiconfigurator_core/systems/data``.
Nothing here runs in the app or the tests: the printed values are copied into data/gpus.csv
with this script named in the row's source.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvmodel import catalog  # noqa: E402

SYSTEMS = {"a100_sxm": "a100-80", "h100_sxm": "h100-sxm", "h200_sxm": "h200",
           "b200_sxm": "b200", "gb200": "gb200", "l40s": "l40s"}  # fmt: skip
REFERENCE = ("h100-sxm", "h200")
ANCHOR = {"stream": 0.8, "compute": 0.7}  # the Hopper-fitted hbm_efficiency, flops_efficiency
DTYPES = {"bfloat16": 2.0, "fp8": 1.0}  # bytes per weight
STREAM_MAX_M, STREAM_MIN_BYTES, COMPUTE_MIN = 8, 128e6, 4096


def newest(paths: list[Path]) -> list[Path]:
    """One table per (system, framework): the newest version collected."""
    best: dict = {}
    for p in paths:
        key = (p.parts[-5], p.parts[-3])
        ver = tuple(int(x) if x.isdigit() else 0 for x in p.parts[-2].replace("rc", ".").split("."))
        if key not in best or ver > best[key][0]:
            best[key] = (ver, p)
    return [p for _, p in best.values()]


def _median(values: np.ndarray) -> float:
    return float(np.median(values)) if values.size else float("nan")


def medians(root: Path) -> pd.DataFrame:
    """(gpu, framework, dtype) → median stream and compute efficiency."""
    specs = catalog.gpus()
    rows = []
    for path in newest(sorted(root.glob("*/gemm/*/*/gemm_perf.parquet"))):
        gpu_id = SYSTEMS.get(path.parts[-5])
        if gpu_id is None:
            continue
        gpu, frame = specs[gpu_id], pd.read_parquet(path)
        for dtype, size in DTYPES.items():
            peak = gpu.bf16_flops if size == 2.0 else gpu.fp8_flops
            g = frame[frame["gemm_dtype"] == dtype]
            if g.empty or peak is None:
                continue
            m, n, k = (g[c].to_numpy(float) for c in ("m", "n", "k"))
            s = g["latency"].to_numpy(float) * 1e-3  # the table's latency is in ms
            stream = (m <= STREAM_MAX_M) & (n * k * size >= STREAM_MIN_BYTES)
            compute = (m >= COMPUTE_MIN) & (n >= COMPUTE_MIN) & (k >= COMPUTE_MIN)
            moved = (n * k * size + 2.0 * m * (k + n)) / s / gpu.hbm_bytes_per_s
            done = 2.0 * m * n * k / s / peak
            rows.append({"gpu": gpu_id, "framework": path.parts[-3], "dtype": dtype,
                         "stream": _median(moved[stream]), "compute": _median(done[compute])})
    return pd.DataFrame(rows)


def efficiencies(table: pd.DataFrame) -> pd.DataFrame:
    """Per GPU: the ratio to the reference in each regime and the value for gpus.csv."""
    hopper = table[table["gpu"].isin(REFERENCE)]
    ref = hopper.groupby(["framework", "dtype"])[["stream", "compute"]].mean()
    out = []
    for gpu_id, g in table.groupby("gpu"):
        row = {"gpu": gpu_id}
        for regime in ("stream", "compute"):
            own = g.set_index(["framework", "dtype"])[regime]
            ratio = (own / ref[regime].reindex(own.index)).dropna()
            row[f"{regime}_pairs"] = len(ratio)
            row[f"{regime}_ratio"] = float(ratio.mean()) if len(ratio) else np.nan
            row[f"{regime}_value"] = round(ANCHOR[regime] * row[f"{regime}_ratio"], 2)
        out.append(row)
    return pd.DataFrame(out)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not Path(argv[0]).is_dir():
        print(__doc__.split("Run: ")[1])
        return 2
    table = medians(Path(argv[0]))
    print(table.round(3).to_string(index=False))
    print()
    print(efficiencies(table).round(3).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
