"""Cold start of the planner beside the trivial one-chart page (issue 20 item 6: ≤ 1.2×).

Each sample is a fresh Python process: Streamlit's AppTest is imported first (both apps pay
it alike, untimed), then the clock runs over the first ``AppTest.from_file(app).run()``: the
app's first page and its first chart.  The planner is sampled as ``make run`` serves it
(``python -m ui.serve``): its warm-up (``ui.serve.warm``: the pages' modules, the catalogs)
runs before the clock, as it runs before the server answers its health check; the trivial
page is a plain Streamlit app, its imports (Plotly) inside its first run.  That ratio is held
against the target.  The planner without the warm-up (plain ``streamlit run app.py``: the
model, pandas, numpy and the figures imported by the first page) is printed beside it.  The
project's bytecode is written first (``compile_sources``), as a machine that ran it before has
it.  The samples alternate, ``--repeats`` of each; medians and ratios are printed.

``--browser N`` adds what a user feels: the first page in headless chromium on a server that
has just started (``python -m ui.serve`` and ``streamlit run bench/trivial_app.py``, health
polled, then the clock runs from the address typed to the first chart's SVG), N samples of
each app, each on its own fresh server and browser.  It includes what both apps pay alike
(Streamlit's page and scripts, the WebSocket), so its ratio is printed and not held against
the target.

    .venv/bin/python bench/cold_start.py [--repeats 5] [--browser 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import APP, COLD_START_RATIO, ROOT, TRIVIAL, loadavg, median, ratio  # noqa: E402

CHILD = """
import sys, time
from streamlit.testing.v1 import AppTest
if sys.argv[2] == "warm":  # the server's start (make run), before its health check answers
    from ui import serve
    serve.warm()
t0 = time.perf_counter()
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
ms = (time.perf_counter() - t0) * 1e3
if at.exception:
    sys.exit(f"exception on first run: {[e.value for e in at.exception]}")
print(ms)
"""


def sample(path: Path, warm: bool = False) -> float:
    """One cold first run of ``path`` [ms], in a fresh process (``warm``: after the planner's
    warm-up, untimed, as ``make run`` starts it)."""
    mode = "warm" if warm else "plain"
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), mode], cwd=ROOT, check=True,
                         capture_output=True, text=True)  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def browser_sample(path: Path) -> float:
    """The first page of ``path`` on a server just started (the planner as ``make run`` starts
    it), in a fresh browser [ms]: from the address typed to the first chart drawn."""
    import tempfile

    from browser import CHROMIUM_ARGS, VIEWPORT, Server, chromium_path
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as logdir, sync_playwright() as pw:
        server = Server(path, Path(logdir), warm=path == APP)
        try:
            chromium = pw.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
            page = chromium.new_context(viewport=VIEWPORT).new_page()
            t0 = time.perf_counter()
            page.goto(server.url + "/")
            chart = page.locator(".js-plotly-plot svg.main-svg").first
            chart.wait_for(state="attached", timeout=120_000)
            ms = (time.perf_counter() - t0) * 1e3
            chromium.close()
            return ms
        finally:
            server.stop()


def measure_browser(repeats: int) -> dict:
    """``--browser``: the apps alternate, a fresh server and browser each sample."""
    times: dict[str, list[float]] = {"app": [], "trivial": []}
    for _ in range(repeats):
        times["app"].append(browser_sample(APP))
        times["trivial"].append(browser_sample(TRIVIAL))
    app, triv = median(times["app"]), median(times["trivial"])
    return {"app_ms": round(app, 1), "trivial_ms": round(triv, 1),
            "ratio": round(ratio(app, triv), 2), "samples_ms": times}  # fmt: skip


def compile_sources() -> None:
    """Write the project's bytecode (``__pycache__``) before the samples, as any machine that
    has run the app once has it: with ``PYTHONDONTWRITEBYTECODE`` set (as on the development
    machine) Python never writes it, and every fresh process compiled the app's ~60 modules
    again (~75 ms of the planner's first run; the trivial page has none)."""
    subprocess.run([sys.executable, "-m", "compileall", "-q", "kvmodel", "kvview", "ui",
                    "pages", "app.py"], cwd=ROOT, check=True)  # fmt: skip


def measure(repeats: int) -> dict:
    compile_sources()
    times: dict[str, list[float]] = {"app": [], "trivial": [], "app_unwarmed": []}
    for _ in range(repeats):  # interleaved, so machine noise hits them alike
        times["app"].append(sample(APP, warm=True))
        times["trivial"].append(sample(TRIVIAL))
        times["app_unwarmed"].append(sample(APP))
    app, triv, plain = (median(times[k]) for k in ("app", "trivial", "app_unwarmed"))
    r = ratio(app, triv)
    return {"app_ms": round(app, 1), "trivial_ms": round(triv, 1), "ratio": round(r, 2),
            "target_ratio": COLD_START_RATIO, "pass": r <= COLD_START_RATIO,
            "unwarmed": {"app_ms": round(plain, 1), "ratio": round(ratio(plain, triv), 2)},
            "samples_ms": times, "loadavg": loadavg()}  # fmt: skip


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--browser", type=int, default=0, metavar="N",
                    help="also N first pages on a fresh server, in chromium")  # fmt: skip
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    data = measure(args.repeats)
    plain = data["unwarmed"]
    print(f"cold start: planner as make run serves it {data['app_ms']:.0f} ms, trivial "
          f"{data['trivial_ms']:.0f} ms, ratio {data['ratio']:.2f}× (target ≤ "
          f"{COLD_START_RATIO:g}×); without the warm-up (streamlit run app.py) "
          f"{plain['app_ms']:.0f} ms, {plain['ratio']:.2f}×")  # fmt: skip
    if args.browser:
        data["browser"] = first = measure_browser(args.browser)
        print(f"first page on a fresh server, in chromium: planner {first['app_ms']:.0f} ms, "
              f"trivial {first['trivial_ms']:.0f} ms, ratio {first['ratio']:.2f}× "
              "(what a user feels; not held against the target)")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    return 0 if data["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
