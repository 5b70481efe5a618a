"""Where a page's control → chart time goes in the browser: Chrome's sampling profiler over
``--changes`` changes of the sidebar batch (``control_to_chart.py``'s own page driver).

Prints, per change, the JavaScript time by bundle (Plotly's chart component, React, the
styling libraries, Streamlit's markdown), the browser's own work (``(program)``: style, layout,
paint) and the garbage collector, beside the page's median control → chart time.  Read it with
``control_to_chart.py``'s table: a page's time above the trivial page's is either Plotly
drawing a bigger figure or React and the styling redrawing more elements (each element of a
rerun, a markdown line, a metric, a widget, costs ~0.7-1 ms here on 2 CPUs).

    .venv/bin/python bench/profile_browser.py [--page /plan] [--app bench/trivial_app.py]
                                              [--changes 8] [--top 12]

The profiler's own cost inflates the times (~20 %); compare pages with each other, not with
``control_to_chart.py``'s figures.
"""

from __future__ import annotations

import argparse
import collections
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import CHROMIUM_ARGS, PageUnderTest, Server, chromium_path  # noqa: E402
from common import ROOT, TRIVIAL, median, pages  # noqa: E402
from control_to_chart import BATCH, STEP, STEP_QUERY, choose_control  # noqa: E402


def bundle(frame: dict) -> str:
    """A call frame's bundle ("PlotlyChart", "react-dom", ...) or the native function's name."""
    url = frame["url"].rsplit("/", 1)[-1]
    if not url:
        return frame["functionName"] or "(anonymous)"
    return url.split(".", 1)[0]


def self_time_by(profile: dict) -> collections.Counter:
    """Self time [µs] per bundle, from a CDP ``Profiler.stop`` profile."""
    nodes = {n["id"]: n["callFrame"] for n in profile["nodes"]}
    out: collections.Counter = collections.Counter()
    for node_id, dt in zip(profile["samples"], profile["timeDeltas"], strict=False):
        out[bundle(nodes[node_id])] += dt
    return out


def _control(app: Path, page_url: str) -> tuple:
    """The control ``control_to_chart.py`` changes on this page (the batch on the trivial
    page; Capacity's TPOT target, whose charts ignore the batch)."""
    if app.resolve() == TRIVIAL.resolve():
        return BATCH
    page_of = {url: page for _label, page, url in pages()}
    control = choose_control(page_of.get(page_url))
    if control is None:
        raise SystemExit(f"profile_browser: no control changes a chart on {page_url}")
    return control


def measure(page_url: str, app: Path, changes: int) -> tuple[collections.Counter, list]:
    path = chromium_path()
    if not path:
        raise SystemExit("profile_browser: Debian chromium not found (`make chromium`)")
    from playwright.sync_api import sync_playwright

    server = Server(app, Path(tempfile.mkdtemp(prefix="kv-prof-")))
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
            try:
                control = _control(app, page_url)
                query = STEP_QUERY if control is STEP else ""
                put = PageUnderTest(browser, server.url + page_url + query, page_url, control,
                                    30000)  # fmt: skip
                first, step = control[2], control[3]
                for i in range(3):  # warm-up, unprofiled
                    put.change(first + step * i, 300, record=False)
                cdp = put.page.context.new_cdp_session(put.page)
                cdp.send("Profiler.enable")
                cdp.send("Profiler.setSamplingInterval", {"interval": 100})
                cdp.send("Profiler.start")
                for i in range(changes):
                    put.change(first + step * (10 + i), 300, record=True)
                profile = cdp.send("Profiler.stop")["profile"]
                result = put.close()
            finally:
                browser.close()
    finally:
        server.stop()
    return self_time_by(profile), result["samples_ms"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--page", default="/", help="the page's path, e.g. /plan (default: Overview)")
    ap.add_argument("--app", type=Path, default=ROOT / "app.py",
                    help="the app to serve (bench/trivial_app.py for the baseline)")  # fmt: skip
    ap.add_argument("--changes", type=int, default=8)
    ap.add_argument("--top", type=int, default=12)
    args = ap.parse_args(argv)
    by, samples = measure(args.page, args.app.resolve(), args.changes)
    busy = {k: v for k, v in by.items() if k != "(idle)"}
    done = [x for x in samples if x is not None]
    print(f"{args.app.name} {args.page}: control → chart median "
          f"{median(done):.0f} ms (profiled) over {len(done)} changes")  # fmt: skip
    print(f"busy main thread per change: {sum(busy.values()) / 1e3 / args.changes:.1f} ms")
    for name, us in collections.Counter(busy).most_common(args.top):
        print(f"  {us / 1e3 / args.changes:7.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
