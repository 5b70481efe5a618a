"""One control change, message by message: when the browser handled each message from the
server and how long each React render took, on the page's clock from the Enter keydown.

``control_to_chart.py`` says how long a change takes and ``profile_browser.py`` which bundles
spend it; this says in what order.  Per change it prints the server's messages as the page
handled them (a run's start, its status, each element, the run's end) and the main thread's
long tasks from a Chrome trace (React renders, Plotly's draw, garbage collection), then one
line per page: the main thread's busy time inside the control → chart window, and the number
and total of React renders in it.

    .venv/bin/python bench/change_timeline.py [--page /capacity] [--changes 3] [--quiet]

What it showed (bench/README.md, Session 29): during a change the main thread is busy ~95 % of
the window on every page, and each render of the page's whole tree costs 12-27 ms on a real
page against ~6 ms on the trivial one.  A page control whose callback names a fragment
(``st.rerun(key)``, Capacity's) first starts a whole-app run that ends at once; its start,
status and end cost the page one or two renders before the fragment's first element.
"""

from __future__ import annotations

import argparse
import base64
import collections
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import CHROMIUM_ARGS, PageUnderTest, Server, chromium_path  # noqa: E402
from common import ROOT, TRIVIAL, pages, quiet_logs  # noqa: E402
from control_to_chart import BATCH, STEP, STEP_QUERY, choose_control  # noqa: E402

# Every message the page receives, on its own clock, while window.__wsrec is set (bytes in
# base64: the server's ForwardMsg, decoded here); the keydown and the page's own sends too.
WS_HOOK = r"""
(() => {
  const Native = window.WebSocket;
  window.__wslog = [];
  function Hooked(...args) {
    const ws = new Native(...args);
    ws.addEventListener('message', (e) => {
      if (!window.__wsrec || !(e.data instanceof ArrayBuffer)) return;
      const bytes = new Uint8Array(e.data);
      let s = '';
      for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i]);
      window.__wslog.push([performance.now(), btoa(s)]);
    });
    const send = ws.send.bind(ws);
    ws.send = (d) => {
      if (window.__wsrec) window.__wslog.push([performance.now(), 'SEND']);
      return send(d);
    };
    return ws;
  }
  Hooked.prototype = Native.prototype;
  Object.assign(Hooked, Native);
  window.WebSocket = Hooked;
  document.addEventListener('keydown', (e) => {
    if (window.__wsrec && e.key === 'Enter') window.__wslog.push([performance.now(), 'KEYDOWN']);
  }, true);
})();
"""
TRACE_CATEGORIES = ["devtools.timeline", "disabled-by-default-devtools.timeline", "v8"]
LONG_TASK_US = 3000  # tasks and calls under 3 ms are left out of the timeline


def message_name(data: str) -> str:
    """A ForwardMsg (base64) as a short name: 'new_session', 'delta metric', 'script_finished 3'."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    msg = ForwardMsg()
    msg.ParseFromString(base64.b64decode(data))
    kind = msg.WhichOneof("type")
    if kind == "delta":
        what = msg.delta.WhichOneof("type")
        if what == "new_element":
            return f"delta {msg.delta.new_element.WhichOneof('type')}"
        return f"delta {what}"
    if kind == "script_finished":  # 0 whole run, 2 ended early for a rerun, 3 fragment run
        return f"script_finished {msg.script_finished}"
    if kind == "session_status_changed":
        return "status running" if msg.session_status_changed.script_is_running else "status idle"
    return kind


def main_thread(events: list) -> list:
    """The complete ('X') events of the page's renderer main thread (the busiest one)."""
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
             if e.get("ph") == "M" and e.get("name") == "thread_name"}  # fmt: skip
    count = collections.Counter((e["pid"], e["tid"]) for e in events
                                if names.get((e["pid"], e["tid"])) == "CrRendererMain")  # fmt: skip
    if not count:
        return []
    tid = count.most_common(1)[0][0]
    return [e for e in events if (e["pid"], e["tid"]) == tid and e.get("ph") == "X"]


def tasks_in(events: list, t0_us: float, end_ms: float) -> dict:
    """Busy time, React renders and the long tasks from the keydown (``t0_us``, trace clock) to
    ``end_ms`` after it."""
    end_us = t0_us + end_ms * 1e3
    runs = [e for e in events if e["name"] == "RunTask" and e["ts"] + e["dur"] > t0_us
            and e["ts"] < end_us]  # fmt: skip
    busy = sum(min(e["ts"] + e["dur"], end_us) - max(e["ts"], t0_us) for e in runs)
    renders, long = [], []
    for e in sorted(events, key=lambda e: e["ts"]):
        if not t0_us <= e["ts"] < end_us or e.get("dur", 0) < LONG_TASK_US:
            continue
        at, ms = (e["ts"] - t0_us) / 1e3, e["dur"] / 1e3
        url = e.get("args", {}).get("data", {}).get("url", "")
        if e["name"] == "FunctionCall" and "react-dom" in url:
            renders.append((at, ms))
            long.append((at, ms, "React render"))
        elif e["name"] in ("MinorGC", "MajorGC"):
            long.append((at, ms, e["name"]))
        elif e["name"] == "FunctionCall" and "PlotlyChart" in url:
            long.append((at, ms, "Plotly"))
    return {"busy_ms": busy / 1e3, "renders": renders, "long": long}


def keydown_ts(events: list) -> float | None:
    for e in events:
        data = e.get("args", {}).get("data", {})
        if e["name"] == "EventDispatch" and data.get("type") == "keydown":
            return e["ts"]
    return None


def record(browser, url: str, label: str, control: tuple, changes: int) -> list[dict]:
    """``changes`` changes of ``control`` after 3 warm-up ones, each traced."""
    put = PageUnderTest(browser, url, label, control, 60000, init_script=WS_HOOK)
    first, step = control[2], control[3]
    for i in range(3):
        put.change(first + step * i, 300, record=False)
    out = []
    for i in range(changes):
        cdp = put.page.context.new_cdp_session(put.page)
        events, done = [], []
        cdp.on("Tracing.dataCollected", lambda e: events.extend(e["value"]))  # noqa: B023
        cdp.on("Tracing.tracingComplete", lambda e: done.append(True))  # noqa: B023
        cdp.send("Tracing.start", {"traceConfig": {"includedCategories": TRACE_CATEGORIES},
                                   "transferMode": "ReportEvents"})  # fmt: skip
        put.page.evaluate("window.__wslog = []; window.__wsrec = true")
        put.change(first + step * (10 + i), 300, record=True)
        put.page.evaluate("window.__wsrec = false")
        log = put.page.evaluate("window.__wslog")
        cdp.send("Tracing.end")
        for _ in range(600):  # the trace arrives within a second or two; 30 s at most
            if done:
                break
            put.page.wait_for_timeout(50)
        else:
            raise SystemExit("change_timeline: Chrome sent no trace within 30 s")
        cdp.detach()
        c2c = put.got["data"][-1]
        main = main_thread(events)
        t0_trace = keydown_ts(main)
        t0_page = next((t for t, d in log if d == "KEYDOWN"), None)
        if c2c is None or t0_trace is None or t0_page is None:
            continue
        messages = [(t - t0_page, d if d == "SEND" else message_name(d)) for t, d in log
                    if d != "KEYDOWN"]  # fmt: skip
        out.append({"c2c_ms": c2c, "messages": messages, **tasks_in(main, t0_trace, c2c)})
    put.close()
    return out


def print_change(label: str, k: int, ch: dict, quiet: bool) -> None:
    total = sum(ms for _at, ms in ch["renders"])
    print(f"{label} change {k}: control → chart {ch['c2c_ms']:.0f} ms, main thread busy "
          f"{ch['busy_ms']:.0f} ms of it, {len(ch['renders'])} React renders "
          f"({total:.0f} ms)")  # fmt: skip
    if quiet:
        return
    rows = [(at, f"message  {name}") for at, name in ch["messages"]]
    rows += [(at, f"task     {what} {ms:.1f} ms") for at, ms, what in ch["long"]]
    elements = 0
    for at, text in sorted(rows):
        if text.startswith("message  delta"):  # elements in a row: counted, not listed
            elements += 1
            continue
        if elements:
            print(f"{'':>9}  message  … {elements} delta(s)")
            elements = 0
        print(f"{at:8.1f}   {text}")
    if elements:
        print(f"{'':>9}  message  … {elements} delta(s)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--page", default="/capacity", help="the page's path (default: Capacity)")
    ap.add_argument("--changes", type=int, default=3, help="traced changes per page")
    ap.add_argument("--quiet", action="store_true", help="one summary line per change")
    args = ap.parse_args(argv)
    path = chromium_path()
    if not path:
        raise SystemExit("change_timeline: Debian chromium not found (`make chromium`)")
    from playwright.sync_api import sync_playwright

    quiet_logs()
    page_of = {url: page for _label, page, url in pages()}
    logdir = Path(tempfile.mkdtemp(prefix="kv-timeline-"))
    app, trivial = Server(ROOT / "app.py", logdir), Server(TRIVIAL, logdir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=path, headless=True, args=CHROMIUM_ARGS)
            try:
                control = choose_control(page_of.get(args.page)) or BATCH
                query = STEP_QUERY if control is STEP else ""
                runs = [("trivial", record(browser, trivial.url + "/", "trivial", BATCH,
                                           args.changes)),
                        (args.page, record(browser, app.url + args.page + query, args.page,
                                           control, args.changes))]  # fmt: skip
            finally:
                browser.close()
    finally:
        app.stop()
        trivial.stop()
    for label, changes in runs:
        for k, ch in enumerate(changes, 1):
            print_change(label, k, ch, args.quiet)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
