"""A warehouse export (a directory of Parquet files) against the same rows in one file (issue 15,
item 5): end-to-end time and peak memory, and that memory does not grow with the data.

Writes under bench/out/ the requests of ``traffic_parse.py``'s distribution (timestamp s,
prompt_tokens, output_tokens) as one Parquet file and as a directory of files of ``--per-file``
rows each, for N and 2 × N requests (10 and 20 files by default), in constant memory. Then runs,
each in a fresh process (imports first, then the clock, as in ``traffic_parse.py``) and
interleaved: ``load_traffic(path, per_request=False)`` + the mix, the regions and the window, as
``python -m kvmodel traffic`` runs them, for the four inputs. Peak memory is the process's peak
resident set above what it held after the imports (median and max of the runs: on a shared
machine it varies by ±30 MB from run to run), and the peak of Arrow's own allocations
(``pyarrow.default_memory_pool().max_memory()``, steadier). Prints the medians and:

- directory ÷ one file, time and peak memory, at N (the cost of many files);
- 2N ÷ N peak memory, for the directory (flat: streaming holds no column of the trace).

    python bench/traffic_dataset.py [--rows 10000000] [--per-file 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
path = sys.argv[1]
import numpy as np, pandas, pyarrow as pa, pyarrow.parquet, pyarrow.dataset
from kvmodel.build import build_scenario
from kvmodel import traffic as tr
from kvmodel.traffic import load_traffic
sc = tr.per_request_scenario(build_scenario(model="llama-3.1-70b", link="100gbe"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
req = load_traffic(path, max_bytes=10**12, per_request=False)
mix = tr.mix_from_requests(req)
reg = tr.regions(sc, mix)
tr.recommended_window(sc, mix)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": elapsed, "rows": int(reg.n_requests), "peak_extra_bytes": peak - base,
                  "arrow_peak_bytes": pa.default_memory_pool().max_memory()}}))
"""


def run(path: Path) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", CHILD.format(root=str(ROOT)), str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def chunk(rows: int, seed: int, t0: float):
    """``rows`` requests of traffic_parse.py's distribution, arrivals continuing from ``t0``."""
    import numpy as np
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    prompt = np.clip(rng.lognormal(7.0, 1.2, rows), 1, 120_000).astype(np.int64)
    output = np.clip(rng.lognormal(5.0, 1.0, rows), 1, 8_000).astype(np.int64)
    ts = np.round(t0 + np.cumsum(rng.exponential(0.001, rows)), 6)
    return pa.table({"timestamp": ts, "prompt_tokens": prompt, "output_tokens": output})


def generate(rows: int, per_file: int) -> tuple[Path, Path]:
    """One file and a directory of ``rows / per_file`` files holding the same rows in order."""
    import pyarrow.parquet as pq

    one, folder = OUT / f"dataset_{rows}.parquet", OUT / f"dataset_{rows}"
    if one.exists() and folder.is_dir():
        return one, folder
    folder.mkdir(parents=True, exist_ok=True)
    t0, writer = 0.0, None
    for i in range(rows // per_file):
        table = chunk(per_file, seed=i, t0=t0)
        t0 = float(table["timestamp"][-1].as_py())
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
        writer = writer or pq.ParquetWriter(one, table.schema)
        writer.write_table(table)
    writer.close()
    return one, folder


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--per-file", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    n = args.rows
    inputs = {}
    for rows in (n, 2 * n):
        one, folder = generate(rows, args.per_file)
        files = rows // args.per_file
        inputs[f"one file, {rows / 1e6:g} M"] = one
        inputs[f"{files} files, {rows / 1e6:g} M"] = folder
    runs: dict[str, list[dict]] = {k: [] for k in inputs}
    for _ in range(args.repeat):  # interleaved
        for name, path in inputs.items():
            runs[name].append(run(path))
    results = {
        name: {
            "median_s": statistics.median(r["seconds"] for r in rs),
            "min_s": min(r["seconds"] for r in rs),
            "max_s": max(r["seconds"] for r in rs),
            "peak_extra_bytes": statistics.median(r["peak_extra_bytes"] for r in rs),
            "max_peak_extra_bytes": max(r["peak_extra_bytes"] for r in rs),
            "arrow_peak_bytes": max(r["arrow_peak_bytes"] for r in rs),
            "rows": rs[0]["rows"],
        }
        for name, rs in runs.items()
    }
    one_n, dir_n, one_2n, dir_2n = (results[k] for k in inputs)
    checks = {
        "dir_over_one_file_seconds": dir_n["median_s"] / one_n["median_s"],
        "dir_over_one_file_peak": dir_n["peak_extra_bytes"] / one_n["peak_extra_bytes"],
        "dir_2n_over_n_peak": dir_2n["peak_extra_bytes"] / dir_n["peak_extra_bytes"],
        "dir_2n_over_n_arrow_peak": dir_2n["arrow_peak_bytes"] / dir_n["arrow_peak_bytes"],
        "dir_2n_over_n_seconds": dir_2n["median_s"] / dir_n["median_s"],
    }
    if args.json:
        print(json.dumps({"rows": n, "results": results, "checks": checks}, indent=2))
        return 0
    print(f"{args.repeat} fresh processes per row, interleaved; end to end as the CLI runs it")
    print(
        f"{'input':24} {'median s':>8} {'min-max s':>11} {'peak MB (max)':>14} "
        f"{'Arrow peak MB':>14} {'rows':>12}"
    )
    for name, r in results.items():
        peak = f"{r['peak_extra_bytes'] / 1e6:.0f} ({r['max_peak_extra_bytes'] / 1e6:.0f})"
        print(
            f"{name:24} {r['median_s']:8.2f} {r['min_s']:5.2f}-{r['max_s']:<5.2f} {peak:>14} "
            f"{r['arrow_peak_bytes'] / 1e6:14.0f} {r['rows']:12,}"
        )
    print(
        f"directory ÷ one file at {n / 1e6:g} M: time {checks['dir_over_one_file_seconds']:.2f}, "
        f"peak memory {checks['dir_over_one_file_peak']:.2f}"
    )
    print(
        f"directory {2 * n / 1e6:g} M ÷ {n / 1e6:g} M: peak memory "
        f"{checks['dir_2n_over_n_peak']:.2f}, Arrow's peak "
        f"{checks['dir_2n_over_n_arrow_peak']:.2f} (flat is 1), "
        f"time {checks['dir_2n_over_n_seconds']:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
