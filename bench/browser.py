"""The browser half of ``control_to_chart.py``: a Streamlit server on a free port, headless Debian
chromium's flags, and one page in its own context with the in-page timing script (``JS_INSTALL``)
that measures control-to-chart time on the page's own ``performance.now()`` clock."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from common import ROOT

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]  # fmt: skip
VIEWPORT = {"width": 1280, "height": 800}


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
    """A free port: the first free one of ``$BENCH_PORTS`` ("8621-8629") when it is set (a
    machine shared by several people, each with their own ports), else any the OS gives."""
    lo, _, hi = os.environ.get("BENCH_PORTS", "").partition("-")
    for port in range(int(lo), int(hi or lo) + 1) if lo else [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise RuntimeError(f"no free port in BENCH_PORTS={os.environ['BENCH_PORTS']}")


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as resp:
            return resp.read().decode().strip() == "ok"
    except (urllib.error.URLError, OSError):
        return False


class Server:
    """``streamlit run <script>`` on a free port, run from the repo root (its .streamlit/);
    with ``warm`` the planner as ``make run`` serves it (``python -m ui.serve``: app.py with
    the pages' modules loaded before the server listens)."""

    def __init__(self, script: Path, logdir: Path, *, warm: bool = False):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = logdir / f"{script.stem}-{self.port}.log"
        self._log = self.log_path.open("w")
        if warm and script != ROOT / "app.py":
            raise ValueError("only the planner (app.py) has a warm-up (ui.serve)")
        start = ["ui.serve"] if warm else ["streamlit", "run", str(script.relative_to(ROOT))]
        cmd = [sys.executable, "-m", *start,
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


MAIN = "main"  # a control's "expander" value for an input in the page body, not the sidebar


class PageUnderTest:
    """One page in its own browser context (its own Streamlit session), changed on demand."""

    KEYS = ("data", "settled", "first", "rerun_end", "charts_changed", "charts", "changes")

    def __init__(self, browser, url: str, label: str, control: tuple, timeout_ms: int,
                 init_script: str | None = None):  # fmt: skip
        """``init_script``: JavaScript run in the page before its own (change_timeline.py's
        websocket log)."""
        self.label, self.control, self.timeout_ms = label, control, timeout_ms
        self.control_label, expander = control[0], control[1]
        self.context = browser.new_context(viewport=VIEWPORT)
        if init_script:
            self.context.add_init_script(init_script)
        self.page = self.context.new_page()
        t0 = time.perf_counter()
        self.page.goto(url, timeout=timeout_ms)
        wait_ready(self.page, timeout_ms)
        self.load_ms = (time.perf_counter() - t0) * 1e3
        self.page.evaluate(JS_INSTALL)
        sidebar = self.page.get_by_test_id("stSidebar")
        if expander == MAIN:  # a page's own input, in the page body
            sidebar = self.page.get_by_test_id("stMain")
        elif expander:
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
