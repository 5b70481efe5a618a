"""Control-to-chart time in a real browser: from pressing Enter in a sidebar number input to the
page's plotly chart(s) showing the new data, on every page and on the trivial one-chart page.

Starts ``streamlit run app.py`` and ``streamlit run bench/trivial_app.py`` on free ports (health
polled), opens each page in its own context of headless Debian chromium (1280×800, never
``playwright install``), and then, round-robin over the pages (so load drift hits them alike),
types a value never used before into a sidebar number input and presses Enter.  Measured inside
the page, on its own ``performance.now()`` clock, by a capture-phase keydown listener and a
MutationObserver:

* ``t0``           the Enter keydown, before Streamlit's own handler sees it;
* control→chart    (the reported figure) the first DOM mutation after which EVERY chart whose
                   figure changed holds its new figure (``gd.data`` + ``gd.layout`` of each
                   ``.js-plotly-plot`` differ from before the change) — plotly draws
                   synchronously, so this is when the new data is on screen;
* ``script done``  ``data-test-script-state`` back to ``notRunning``;
* ``settled``      the last mutation that changed any chart's SVG, once the charts have been
                   quiet for ``--quiet`` ms (later re-draws, e.g. a re-mount or resize).

The control per page is the first of "Batch [requests]", "Exact tokens" (sequence length),
"Decode step [ms]" (in the sidebar's "Times and thresholds" expander) and the Capacity page's
own "TPOT target [ms]" whose change alters one of that page's charts, found with a quick
AppTest probe (e.g. Interconnects' batch sweep and Models' bytes-per-token chart ignore the
batch; Traffic's chart ignores batch and sequence length).
Target: median <= 1 s.

    .venv/bin/python bench/control_to_chart.py [--repeats 9] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import CHROMIUM_ARGS, MAIN, PageUnderTest, Server, chromium_path  # noqa: E402
from common import (  # noqa: E402
    CONTROL_TO_CHART_MS,
    ROOT,
    TRIVIAL,
    TRIVIAL_LABEL,
    loadavg,
    machine,
    median,
    pages,
    quiet_logs,
    ratio,
    table,
    verdict,
)

# sidebar number inputs: (label, expander to open first or None, first value, step, widget key)
BATCH = ("Batch [requests]", None, 10, 1, "batch")
EXACT = ("Exact tokens", None, 3000, 13, "seq_exact")
# The decode step is estimated by default: its input shows once the step is given (a link with
# step=30 opens that way, STEP_QUERY).
STEP = ("Decode step [ms]", "Times and thresholds", 11, 1, "step_ms")
STEP_QUERY = "?step=30&stack=mooncake"
# A page's own input, for a page whose charts no sidebar input above moves (Capacity: its plan
# ignores the batch, and a trace sets the prompt lengths).
# Its values are not offset per page (only Capacity has it): 20, 23, … ms all move its charts,
# while the offset put them past 350 ms, where nothing in the plan changes (timeouts).
TPOT = ("TPOT target [ms]", MAIN, 20, 3, "w_tpot_slo")
CANDIDATES = (BATCH, EXACT, STEP, TPOT)  # preference order


def choose_control(page: str | None) -> tuple | None:
    """The first candidate input whose change alters one of the page's charts (AppTest probe);
    None when the page draws no plotly chart."""
    from streamlit.testing.v1 import AppTest

    try:
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
        at.run()
        if page:
            at.switch_page(page).run()
        if not at.exception and not at.get("plotly_chart"):
            return None
        from ui.sidebar import HARDWARE_OPEN, TIMES_OPEN

        for key in (HARDWARE_OPEN, TIMES_OPEN):  # lazy expanders draw their inputs when open
            at.session_state[key] = True
        at.session_state["step_mode"] = "Given"  # as STEP_QUERY opens it in the browser
        at.run()
        for control in CANDIDATES:
            before = [c.proto.spec for c in at.get("plotly_chart")]
            try:
                box = at.number_input(key=control[4])
            except KeyError:  # a page input on another page
                continue
            box.set_value(control[2] + 7 * control[3]).run()
            after = [c.proto.spec for c in at.get("plotly_chart")]
            if not at.exception and before != after:
                return control
    except Exception:  # noqa: BLE001 - the browser run will report the page
        pass
    return BATCH


def _median(xs):
    xs = [x for x in xs if x is not None]
    return round(median(xs), 1) if xs else None


def measure(repeats: int, warmup: int, quiet_ms: int, timeout_ms: int,
            only: list[str] | None = None) -> dict:  # fmt: skip
    path = chromium_path()
    if not path:
        raise SystemExit("control_to_chart: Debian chromium not found (`make chromium`)")
    from playwright.sync_api import sync_playwright

    quiet_logs()
    logdir = Path(tempfile.mkdtemp(prefix="kv-bench-"))
    targets = [(TRIVIAL_LABEL, TRIVIAL, "/")] + [(label, ROOT / "app.py", url)
                                                 for label, _p, url in pages()]  # fmt: skip
    page_of = {label: page for label, page, _url in pages()}
    if only:
        targets = [t for t in targets if t[0] == TRIVIAL_LABEL or t[0] in only]
    servers: dict[Path, Server] = {}
    results, broken, no_chart = [], [], []
    try:
        for _label, script, _url in targets:
            if script not in servers:
                servers[script] = Server(script, logdir)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
            try:
                open_pages = []
                for label, script, url in targets:
                    control = BATCH if script == TRIVIAL else choose_control(page_of[label])
                    if control is None:
                        no_chart.append(label)
                        continue
                    try:
                        query = STEP_QUERY if control is STEP else ""
                        page_url = servers[script].url + url + query
                        open_pages.append(PageUnderTest(browser, page_url, label, control,
                                                        timeout_ms))  # fmt: skip
                    except Exception as exc:  # noqa: BLE001 - report the page, measure the others
                        broken.append({"page": label, "control": control[0],
                                       "samples_ms": [], "settled_ms": [], "first_paint_ms": [],
                                       "script_done_ms": [], "values": [],
                                       "errors": [f"page did not load: {type(exc).__name__}: "
                                                  f"{str(exc).splitlines()[0]}"]})  # fmt: skip
                # round-robin: one change per page in turn, so load drift hits every page alike
                for i in range(warmup + repeats):
                    for k, put in enumerate(open_pages):
                        _label, _exp, first, step, _key = put.control
                        offset = 0 if put.control is TPOT else 40 * step * k
                        value = first + offset + step * i  # never seen by this session
                        put.change(value, quiet_ms, record=i >= warmup)
                results = [put.close() for put in open_pages] + broken
            finally:
                browser.close()
    finally:
        for s in servers.values():
            s.stop()
    trivial = [r for r in results if r["page"] == TRIVIAL_LABEL]
    base_med = _median(trivial[0]["samples_ms"]) if trivial else None
    for r in results:
        xs = [x for x in r["samples_ms"] if x is not None]
        r["median_ms"] = _median(xs)
        r["max_ms"] = round(max(xs), 1) if xs else None
        r["over_target"] = sum(x > CONTROL_TO_CHART_MS for x in xs)
        r["settled_median_ms"] = _median(r["settled_ms"])
        r["first_paint_median_ms"] = _median(r["first_paint_ms"])
        r["script_done_median_ms"] = _median(r["script_done_ms"])
        r["ratio_median"] = round(ratio(r["median_ms"], base_med), 2) if xs and base_med else None
        r["pass"] = bool(xs) and not r["errors"] and r["median_ms"] <= CONTROL_TO_CHART_MS
    return {"results": results, "no_chart": no_chart, "server_logs": str(logdir)}


def report(data: dict) -> str:
    def f(v):
        return "—" if v is None else f"{v:.0f}"

    rows = [[r["page"], r["control"], str(len(r["samples_ms"])), f(r["median_ms"]), f(r["max_ms"]),
             f"{r['over_target']}/{len(r['samples_ms'])}", f(r["script_done_median_ms"]),
             f(r["settled_median_ms"]),
             "—" if r["ratio_median"] is None else f"{r['ratio_median']:.1f}×",
             verdict(r["pass"])] for r in data["results"]]  # fmt: skip
    head = ["page", "control changed", "n", "median ms", "max ms", f">{CONTROL_TO_CHART_MS:g}",
            "script done ms", "settled ms", "med ÷ trivial",
            f"median ≤{CONTROL_TO_CHART_MS:g}"]  # fmt: skip
    m = data["machine"]
    lines = [
        f"Control → chart with new data, headless chromium ({data['repeats']} changes per page "
        f"after {data['warmup']} warm-up)",
        f"{m['date']} · {m['cpus']} CPUs (server and browser share them) · Streamlit "
        f"{m['streamlit']} · load avg before {m['loadavg_1_5_15']} after {data['loadavg_after']}",
        "",
        table(rows, head),
        "",
        "median/max: Enter keydown → every changed chart drawn with its new figure (page clock).",
        "script done: data-test-script-state back to notRunning; settled: last redraw of any "
        f"chart ({data['quiet_ms']} ms quiet).",
    ]
    for r in data["results"]:
        lines += [f"  {r['page']}: {e}" for e in r["errors"]]
    if data.get("no_chart"):
        lines.append(f"Not applicable (no plotly chart): {', '.join(data['no_chart'])}")
    fails = [r["page"] for r in data["results"] if r["page"] != TRIVIAL_LABEL and not r["pass"]]
    if fails:
        lines.append(f"Control-to-chart target missed on: {', '.join(fails)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=9, help="measured changes per page")
    ap.add_argument("--warmup", type=int, default=1, help="unmeasured changes first")
    ap.add_argument(
        "--quiet",
        type=int,
        default=500,
        help="ms without any chart redraw before a change counts as finished",
    )
    ap.add_argument("--timeout", type=int, default=20_000, help="ms to wait for one change")
    ap.add_argument("--pages", nargs="*", help="only these page labels (plus the trivial page)")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    mach = machine()
    data = measure(args.repeats, args.warmup, args.quiet, args.timeout, args.pages)
    data.update(machine=mach, repeats=args.repeats, warmup=args.warmup, quiet_ms=args.quiet,
                loadavg_after=loadavg(), target_ms=CONTROL_TO_CHART_MS)  # fmt: skip
    print(report(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
        print(f"JSON: {args.json}")
    return 0 if all(r["pass"] for r in data["results"]) else 1


if __name__ == "__main__":
    sys.exit(main())
