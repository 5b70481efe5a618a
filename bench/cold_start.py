"""Cold start of the planner beside the trivial one-chart page (issue 20 item 6: ≤ 1.2×).

Each sample is a fresh Python process: Streamlit's AppTest is imported first (both apps pay
it alike, untimed), then the clock runs over the first ``AppTest.from_file(app).run()``: the
app's own imports (model, figures, Plotly), its first page and its first chart.  The apps
alternate, ``--repeats`` samples each; the median of each and their ratio are printed.

    .venv/bin/python bench/cold_start.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import APP, COLD_START_RATIO, ROOT, TRIVIAL, loadavg, median, ratio  # noqa: E402

CHILD = """
import sys, time
from streamlit.testing.v1 import AppTest
t0 = time.perf_counter()
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
ms = (time.perf_counter() - t0) * 1e3
if at.exception:
    sys.exit(f"exception on first run: {[e.value for e in at.exception]}")
print(ms)
"""


def sample(path: Path) -> float:
    """One cold first run of ``path`` [ms], in a fresh process."""
    out = subprocess.run([sys.executable, "-c", CHILD, str(path)], cwd=ROOT, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def measure(repeats: int) -> dict:
    times: dict[str, list[float]] = {"app": [], "trivial": []}
    for _ in range(repeats):  # interleaved, so machine noise hits both alike
        times["app"].append(sample(APP))
        times["trivial"].append(sample(TRIVIAL))
    app, triv = median(times["app"]), median(times["trivial"])
    r = ratio(app, triv)
    return {"app_ms": round(app, 1), "trivial_ms": round(triv, 1), "ratio": round(r, 2),
            "target_ratio": COLD_START_RATIO, "pass": r <= COLD_START_RATIO,
            "samples_ms": times, "loadavg": loadavg()}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    data = measure(args.repeats)
    print(f"cold start: planner {data['app_ms']:.0f} ms, trivial {data['trivial_ms']:.0f} ms, "
          f"ratio {data['ratio']:.2f}× (target ≤ {COLD_START_RATIO:g}×)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    return 0 if data["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
