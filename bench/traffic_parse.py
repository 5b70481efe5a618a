"""Traffic analysis speed and memory on a 10-million-request trace (issue: Traffic, item 8).

Generates a CSV and a Parquet file of N requests (timestamp s, prompt_tokens, output_tokens)
under bench/out/, then measures, each in a fresh process so peak memory is its own:

- pyarrow alone: ``pyarrow.csv.read_csv`` of the same CSV (the floor),
- end to end: ``load_traffic`` + ``mix_from_requests`` + ``regions`` + the window, for the
  CSV and for the Parquet file,

and prints the ratios the targets are stated in: CSV end-to-end ≤ 1.3 × pyarrow alone,
Parquet end-to-end ≤ 0.5 s, peak memory ≤ 2 × the parsed columns.

    python bench/traffic_parse.py [--rows 10000000] [--repeat 3]
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
mode, path = sys.argv[1], sys.argv[2]
import numpy as np, pandas, pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet, pyarrow.json
from kvmodel.build import build_scenario
from kvmodel import traffic as tr
from kvmodel.traffic_io import load_traffic
sc = tr.per_request_scenario(build_scenario(model="llama-3.1-70b", link="100gbe"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
if mode == "pyarrow":
    table = pcsv.read_csv(path)
    n = table.num_rows
    parsed = table.nbytes
    t_load = time.perf_counter()
else:
    req = load_traffic(path, max_bytes=10**12)
    t_load = time.perf_counter()
    mix = tr.mix_from_requests(req)
    reg = tr.regions(sc, mix)
    tr.recommended_window(sc, mix)
    n = int(reg.n_requests)
    parsed = sum(a.nbytes for a in (req.prompt_tokens, req.output_tokens, req.arrival_s)
                 if a is not None)
elapsed = time.perf_counter() - t0
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({{"seconds": elapsed, "load_seconds": t_load - t0, "rows": n,
                  "peak_extra_bytes": peak - base, "parsed_bytes": parsed}}))
"""


def generate(rows: int) -> tuple[Path, Path]:
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    OUT.mkdir(parents=True, exist_ok=True)
    csv_path, pq_path = OUT / f"trace_{rows}.csv", OUT / f"trace_{rows}.parquet"
    if csv_path.exists() and pq_path.exists():
        return csv_path, pq_path
    rng = np.random.default_rng(7)
    prompt = np.clip(rng.lognormal(7.0, 1.2, rows), 1, 120_000).astype(np.int64)
    output = np.clip(rng.lognormal(5.0, 1.0, rows), 1, 8_000).astype(np.int64)
    ts = np.round(np.cumsum(rng.exponential(0.001, rows)), 6)
    table = pa.table({"timestamp": ts, "prompt_tokens": prompt, "output_tokens": output})
    pcsv.write_csv(table, csv_path)
    pq.write_table(table, pq_path)
    return csv_path, pq_path


def run(mode: str, path: Path) -> dict:
    code = CHILD.format(root=str(ROOT))
    out = subprocess.run(
        [sys.executable, "-c", code, mode, str(path)], capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    csv_path, pq_path = generate(args.rows)
    results = {}
    for name, mode, path in (
        ("pyarrow alone (CSV)", "pyarrow", csv_path),
        ("end to end (CSV)", "e2e", csv_path),
        ("end to end (Parquet)", "e2e", pq_path),
    ):
        runs = [run(mode, path) for _ in range(args.repeat)]
        results[name] = {
            "median_s": statistics.median(r["seconds"] for r in runs),
            "median_load_s": statistics.median(r["load_seconds"] for r in runs),
            "peak_extra_bytes": max(r["peak_extra_bytes"] for r in runs),
            "parsed_bytes": runs[0]["parsed_bytes"],
            "rows": runs[0]["rows"],
        }
    floor = results["pyarrow alone (CSV)"]["median_s"]
    csv_e2e = results["end to end (CSV)"]
    pq_e2e = results["end to end (Parquet)"]
    checks = {
        "csv_ratio_to_pyarrow": csv_e2e["median_s"] / floor,
        "parquet_seconds": pq_e2e["median_s"],
        "csv_peak_over_parsed": csv_e2e["peak_extra_bytes"] / csv_e2e["parsed_bytes"],
        "parquet_peak_over_parsed": pq_e2e["peak_extra_bytes"] / pq_e2e["parsed_bytes"],
    }
    if args.json:
        print(json.dumps({"rows": args.rows, "results": results, "checks": checks}, indent=2))
        return 0
    print(
        f"{args.rows:,} requests; CSV {csv_path.stat().st_size / 1e6:,.0f} MB, "
        f"Parquet {pq_path.stat().st_size / 1e6:,.0f} MB; median of {args.repeat} fresh processes"
    )
    print(
        f"{'run':24} {'seconds':>8} {'× pyarrow':>10} {'peak extra MB':>14} {'parsed MB':>10} "
        f"{'of which load s':>16}"
    )
    for name, r in results.items():
        print(
            f"{name:24} {r['median_s']:8.2f} {r['median_s'] / floor:10.2f} "
            f"{r['peak_extra_bytes'] / 1e6:14.0f} {r['parsed_bytes'] / 1e6:10.0f} "
            f"{r['median_load_s']:16.2f}"
        )

    def verdict(ok):
        return "PASS" if ok else "FAIL"

    print(
        f"CSV end to end / pyarrow alone = {checks['csv_ratio_to_pyarrow']:.2f} (target ≤ 1.3): "
        f"{verdict(checks['csv_ratio_to_pyarrow'] <= 1.3)}"
    )
    print(
        f"Parquet end to end = {checks['parquet_seconds']:.2f} s (target ≤ 0.5 s): "
        f"{verdict(checks['parquet_seconds'] <= 0.5)}"
    )
    for key in ("csv_peak_over_parsed", "parquet_peak_over_parsed"):
        print(f"{key} = {checks[key]:.2f} (target ≤ 2): {verdict(checks[key] <= 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
