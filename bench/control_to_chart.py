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

The control per page is the first of "Batch [requests]", "Exact tokens" (sequence length) and
"Decode step [ms]" (in the sidebar's "Times and thresholds" expander) whose change alters one of
that page's charts, found with a quick AppTest probe (e.g. Interconnects' batch sweep and Models'
bytes-per-token chart ignore the batch; Traffic's chart ignores batch and sequence length).
Target: median <= 1 s.

    .venv/bin/python bench/control_to_chart.py [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

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

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]  # fmt: skip
VIEWPORT = {"width": 1280, "height": 800}
# sidebar number inputs: (label, expander to open first or None, first value, step, widget key)
BATCH = ("Batch [requests]", None, 10, 1, "batch")
EXACT = ("Exact tokens", None, 3000, 13, "seq_exact")
STEP = ("Decode step [ms]", "Times and thresholds", 11, 1, "step")
CANDIDATES = (BATCH, EXACT, STEP)  # preference order


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
        at.run()
        for control in CANDIDATES:
            before = [c.proto.spec for c in at.get("plotly_chart")]
            at.number_input(key=control[4]).set_value(control[2] + 7 * control[3]).run()
            after = [c.proto.spec for c in at.get("plotly_chart")]
            if not at.exception and before != after:
                return control
    except Exception:  # noqa: BLE001 - the browser run will report the page
        pass
    return BATCH


# Installed once per page load; window.__bench.arm() before each change.
JS_INSTALL = r"""
() => {
  if (window.__bench) return;
  const B = {armed: false, t0: null, first: null, last: null, base: null, prev: null,
             sawRunning: false, runEnd: null, mutations: 0, changes: []};
  const hash = (s) => {  // FNV-1a, 32 bit
    let h = 0x811c9dc5;
    for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 0x01000193); }
    return (h >>> 0).toString(16) + ':' + s.length;
  };
  const fingerprint = () => {
    let s = '';
    document.querySelectorAll('.js-plotly-plot').forEach((el) => {
      el.querySelectorAll('svg.main-svg').forEach((svg) => { s += svg.innerHTML; });
      s += '|';
    });
    return hash(s);
  };
  // per chart (document order): the figure Streamlit handed to plotly (data + layout)
  const dataFingerprints = () => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
    (el) => { try { return hash(JSON.stringify([el.data || null, el.layout || null])); }
              catch (e) { return 'unserialisable'; } });
  const scriptState = () => {
    const el = document.querySelector('[data-test-script-state]');
    return el ? el.getAttribute('data-test-script-state') : null;
  };
  const inPlot = (m) => {
    const t = m.target.nodeType === 1 ? m.target : m.target.parentElement;
    if (t && t.closest && t.closest('.js-plotly-plot')) return true;
    for (const n of m.addedNodes) {
      if (n.nodeType === 1 && (n.matches('.js-plotly-plot') || n.querySelector('.js-plotly-plot')))
        return true;
    }
    for (const n of m.removedNodes) {
      if (n.nodeType === 1 && (n.matches('.js-plotly-plot') || n.querySelector('.js-plotly-plot')))
        return true;
    }
    return false;
  };
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && B.armed && B.t0 === null) B.t0 = performance.now();
  }, true);
  new MutationObserver((muts) => {
    if (B.t0 === null) return;
    const now = performance.now();
    const st = scriptState();
    if (st === 'running') B.sawRunning = true;
    if (B.sawRunning && st === 'notRunning' && B.runEnd === null) B.runEnd = now;
    if (!muts.some(inPlot)) return;
    B.mutations++;
    const d = dataFingerprints();
    d.forEach((fp, i) => {
      if (fp !== B.baseData[i] && B.firstNew[i] === undefined) B.firstNew[i] = now;
    });
    B.lastData = d;
    const f = fingerprint();
    if (f !== B.prev) {
      if (B.first === null && f !== B.base) B.first = now;
      B.last = now;
      B.prev = f;
      B.changes.push(Math.round(now - B.t0));
    }
  }).observe(document.body, {subtree: true, childList: true, attributes: true,
                             characterData: true});
  B.arm = () => {
    B.armed = true; B.t0 = null; B.first = null; B.last = null; B.sawRunning = false;
    B.runEnd = null; B.mutations = 0; B.changes = []; B.base = fingerprint(); B.prev = B.base;
    B.baseData = dataFingerprints(); B.lastData = B.baseData; B.firstNew = [];
  };
  const changed = () => B.lastData.map((fp, i) => i).filter(
    (i) => B.lastData[i] !== B.baseData[i] && B.firstNew[i] !== undefined);
  B.done = (quietMs) => B.t0 !== null && changed().length > 0
    && scriptState() === 'notRunning' && performance.now() - B.last >= quietMs;
  B.result = () => ({data: Math.max(...changed().map((i) => B.firstNew[i])) - B.t0,
                     charts_changed: changed().length, charts: B.lastData.length,
                     first: B.first - B.t0, settled: B.last - B.t0,
                     rerun_end: B.runEnd === null ? null : B.runEnd - B.t0,
                     mutations: B.mutations, changes: B.changes});
  window.__bench = B;
}
"""


def chromium_path() -> str | None:
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    return shutil.which("chromium")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


class Server:
    """``streamlit run <script>`` on a free port, run from the repo root (its .streamlit/)."""

    def __init__(self, script: Path, logdir: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = logdir / f"{script.stem}-{self.port}.log"
        self._log = self.log_path.open("w")
        cmd = [sys.executable, "-m", "streamlit", "run", str(script.relative_to(ROOT)),
               "--server.headless", "true", "--server.port", str(self.port),
               "--server.address", "127.0.0.1", "--server.fileWatcherType", "none"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while not healthy(self.url):
            if self.proc.poll() is not None:
                raise SystemExit(f"streamlit exited ({self.proc.returncode}); see {self.log_path}")
            if time.monotonic() > deadline:
                self.stop()
                raise SystemExit(f"streamlit not healthy after 60 s; see {self.log_path}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self._log.close()


def wait_ready(page, timeout_ms: int) -> None:
    page.get_by_test_id("stApp").wait_for(state="attached", timeout=timeout_ms)
    page.locator('[data-test-script-state="notRunning"]').wait_for(state="attached",
                                                                   timeout=timeout_ms)  # fmt: skip
    page.locator(".js-plotly-plot svg.main-svg").first.wait_for(state="attached",
                                                                timeout=timeout_ms)  # fmt: skip
    page.wait_for_timeout(500)  # let the first plot settle


class PageUnderTest:
    """One page in its own browser context (its own Streamlit session), changed on demand."""

    KEYS = ("data", "settled", "first", "rerun_end", "charts_changed", "charts", "changes")

    def __init__(self, browser, url: str, label: str, control: tuple, timeout_ms: int):
        self.label, self.control, self.timeout_ms = label, control, timeout_ms
        self.control_label, expander = control[0], control[1]
        self.context = browser.new_context(viewport=VIEWPORT)
        self.page = self.context.new_page()
        t0 = time.perf_counter()
        self.page.goto(url, timeout=timeout_ms)
        wait_ready(self.page, timeout_ms)
        self.load_ms = (time.perf_counter() - t0) * 1e3
        self.page.evaluate(JS_INSTALL)
        sidebar = self.page.get_by_test_id("stSidebar")
        if expander:
            exp = sidebar.get_by_test_id("stExpander").filter(has_text=expander)
            exp.locator("summary").click()
        self.box = sidebar.get_by_label(self.control_label, exact=True)
        self.box.wait_for(state="visible", timeout=timeout_ms)
        self.got: dict[str, list] = {k: [] for k in self.KEYS}
        self.values: list[int] = []
        self.errors: list[str] = []

    def change(self, value: int, quiet_ms: int, record: bool) -> None:
        self.page.bring_to_front()
        self.box.fill(str(value))
        self.page.evaluate("window.__bench.arm()")
        self.box.press("Enter")
        try:
            self.page.wait_for_function(f"window.__bench.done({quiet_ms})",
                                        timeout=self.timeout_ms, polling=25)  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - report, do not abort the whole bench
            self.errors.append(f"{self.control_label}={value}: no chart got new data within "
                               f"{self.timeout_ms} ms ({type(exc).__name__})")  # fmt: skip
            return
        res = self.page.evaluate("window.__bench.result()")
        if record:
            self.values.append(value)
            for k in self.KEYS:
                self.got[k].append(res[k])

    def close(self) -> dict:
        self.context.close()
        got = self.got
        rnd = lambda xs: [None if x is None else round(x, 1) for x in xs]  # noqa: E731
        return {"page": self.label, "control": self.control_label, "values": self.values,
                "load_ms": round(self.load_ms), "samples_ms": rnd(got["data"]),
                "settled_ms": rnd(got["settled"]), "first_paint_ms": rnd(got["first"]),
                "script_done_ms": rnd(got["rerun_end"]), "charts_changed": got["charts_changed"],
                "charts": got["charts"], "chart_change_times_ms": got["changes"],
                "errors": self.errors}  # fmt: skip


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
                        open_pages.append(PageUnderTest(browser, servers[script].url + url, label,
                                                   control, timeout_ms))  # fmt: skip
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
                        value = first + 40 * step * k + step * i  # never seen by this session
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
    ap.add_argument("--repeats", type=int, default=5, help="measured changes per page")
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
