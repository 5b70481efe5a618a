"""Traffic analysis speed and memory on a 10-million-request trace (issue: Traffic, item 8).

Generates a CSV and a Parquet file of N requests (timestamp s, prompt_tokens, output_tokens)
under bench/out/, then measures, each in a fresh process so peak memory is its own, and the
configurations interleaved (run 1 of each, run 2 of each, ...) so a machine that speeds up or
slows down during the bench affects them alike:

- pyarrow alone: ``pyarrow.csv.read_csv`` of the CSV (the floor the CSV target is stated in)
  and ``pyarrow.parquet.read_table`` of the Parquet file (shown for comparison);
- end to end, as the app and the CLI run it: ``load_traffic(..., per_request=False)`` +
  ``mix_from_requests`` + ``regions`` + the window, for the CSV and for the Parquet file;
- the same with ``per_request=True`` (the library default, which also returns every request's
  output length and arrival time), for comparison.

and prints the ratios the targets are stated in: CSV end-to-end ≤ 1.3 × pyarrow alone,
Parquet end-to-end ≤ 0.5 s, peak memory ≤ 2 × the parsed columns (the three columns as pyarrow
parses them: int64 and float64, the size of pyarrow's own table of the same file).

The child imports numpy, pandas and pyarrow before its clock starts, as the app's server has
them loaded before any file arrives. A one-off ``python -m kvmodel traffic`` run pays for the
imports once on top: pyarrow imports pandas the first time it converts a column to numpy,
and that import alone takes 0.3-0.5 s here.

    python bench/traffic_parse.py [--rows 10000000] [--repeat 5]
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
import numpy as np, pandas, pyarrow as pa, pyarrow.csv as pcsv, pyarrow.parquet as pq, pyarrow.json
from kvmodel.build import build_scenario
from kvmodel import traffic as tr
from kvmodel.traffic import load_traffic
sc = tr.per_request_scenario(build_scenario(model="llama-3.1-70b", link="100gbe"))
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
t0 = time.perf_counter()
if mode == "pyarrow":
    table = pcsv.read_csv(path) if path.endswith(".csv") else pq.read_table(path)
    n = table.num_rows
    parsed = table.nbytes
    t_load = time.perf_counter()
else:
    req = load_traffic(path, max_bytes=10**12, per_request=mode == "per-request")
    t_load = time.perf_counter()
    mix = tr.mix_from_requests(req)
    reg = tr.regions(sc, mix)
    tr.recommended_window(sc, mix)
    n = int(reg.n_requests)
    parsed = None
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


CONFIGS = (  # name, child mode, file kind
    ("pyarrow alone (CSV)", "pyarrow", "csv"),
    ("pyarrow alone (Parquet)", "pyarrow", "parquet"),
    ("end to end (CSV)", "e2e", "csv"),
    ("end to end (Parquet)", "e2e", "parquet"),
    ("per request (CSV)", "per-request", "csv"),
    ("per request (Parquet)", "per-request", "parquet"),
)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    paths = dict(zip(("csv", "parquet"), generate(args.rows), strict=True))
    runs: dict[str, list[dict]] = {name: [] for name, _, _ in CONFIGS}
    for _ in range(args.repeat):  # interleaved
        for name, mode, kind in CONFIGS:
            runs[name].append(run(mode, paths[kind]))
    parsed = {
        kind: runs[f"pyarrow alone ({label})"][0]["parsed_bytes"]
        for kind, label in (("csv", "CSV"), ("parquet", "Parquet"))
    }
    results = {}
    for name, _, kind in CONFIGS:
        rs = runs[name]
        results[name] = {
            "median_s": statistics.median(r["seconds"] for r in rs),
            "min_s": min(r["seconds"] for r in rs),
            "max_s": max(r["seconds"] for r in rs),
            "median_load_s": statistics.median(r["load_seconds"] for r in rs),
            "peak_extra_bytes": max(r["peak_extra_bytes"] for r in rs),
            "parsed_bytes": parsed[kind],
            "rows": rs[0]["rows"],
        }
    floor = results["pyarrow alone (CSV)"]["median_s"]
    csv_e2e = results["end to end (CSV)"]
    pq_e2e = results["end to end (Parquet)"]
    checks = {
        "csv_ratio_to_pyarrow": csv_e2e["median_s"] / floor,
        "parquet_seconds": pq_e2e["median_s"],
        "parquet_ratio_to_pyarrow_read_table": pq_e2e["median_s"]
        / results["pyarrow alone (Parquet)"]["median_s"],
        "csv_peak_over_parsed": csv_e2e["peak_extra_bytes"] / csv_e2e["parsed_bytes"],
        "parquet_peak_over_parsed": pq_e2e["peak_extra_bytes"] / pq_e2e["parsed_bytes"],
    }
    if args.json:
        print(json.dumps({"rows": args.rows, "results": results, "checks": checks}, indent=2))
        return 0
    print(
        f"{args.rows:,} requests; CSV {paths['csv'].stat().st_size / 1e6:,.0f} MB, "
        f"Parquet {paths['parquet'].stat().st_size / 1e6:,.0f} MB; "
        f"{args.repeat} fresh processes per row, interleaved"
    )
    print(
        f"{'run':26} {'median s':>8} {'min-max s':>11} {'× pyarrow':>10} {'peak extra MB':>14} "
        f"{'× parsed':>9} {'of which load s':>16}"
    )
    for name, _, kind in CONFIGS:
        r = results[name]
        base = results[f"pyarrow alone ({'CSV' if kind == 'csv' else 'Parquet'})"]["median_s"]
        print(
            f"{name:26} {r['median_s']:8.2f} {r['min_s']:5.2f}-{r['max_s']:<5.2f} "
            f"{r['median_s'] / base:10.2f} {r['peak_extra_bytes'] / 1e6:14.0f} "
            f"{r['peak_extra_bytes'] / r['parsed_bytes']:9.2f} {r['median_load_s']:16.2f}"
        )
    print(
        f"(parsed columns: {parsed['csv'] / 1e6:,.0f} MB; × pyarrow: against pyarrow alone "
        "on the same file)"
    )

    def verdict(ok):
        return "PASS" if ok else "FAIL"

    print(
        f"CSV end to end / pyarrow alone = {checks['csv_ratio_to_pyarrow']:.2f} (target ≤ 1.3): "
        f"{verdict(checks['csv_ratio_to_pyarrow'] <= 1.3)}"
    )
    print(
        f"Parquet end to end = {checks['parquet_seconds']:.2f} s (target ≤ 0.5 s): "
        f"{verdict(checks['parquet_seconds'] <= 0.5)}; "
        f"{checks['parquet_ratio_to_pyarrow_read_table']:.2f} × pyarrow's read_table"
    )
    for key in ("csv_peak_over_parsed", "parquet_peak_over_parsed"):
        print(f"{key} = {checks[key]:.2f} (target ≤ 2): {verdict(checks[key] <= 2)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
