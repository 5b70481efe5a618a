"""Server memory per browser session: the Streamlit process's RSS after 1 and after N sessions.

Starts ``streamlit run app.py`` on a free port, opens one session from a shared link, waits until
its page is fully drawn (numbers and charts), reads the server's resident set size, then opens
N - 1 more sessions, each from a different link (model, sequence length, batch and interconnect
vary), keeps them all open, waits until every one is drawn, and reads it again.  Prints the
memory per extra session with PASS/FAIL against the issue's target (≤ 5 MB per extra session).

RSS is psutil's when installed, else ``VmRSS`` from ``/proc/<pid>/status``; the server's child
processes are added (it normally has none).  Each reading is the median of five taken 0.2 s
apart after a 2 s settle.

    .venv/bin/python bench/server_memory.py [--sessions 20] [--json bench/out/server_memory.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from browser import CHROMIUM_ARGS, VIEWPORT, Server, chromium_path  # noqa: E402
from common import APP, machine, verdict  # noqa: E402

TARGET_MB_PER_SESSION = 5.0
TIMEOUT_MS = 180_000  # 20 first renders on 2 busy cores
MODELS = ["llama-3.1-8b", "llama-3.1-70b", "qwen3-32b", "mistral-7b", "deepseek-v3",
          "gemma-3-27b", "mixtral-8x7b", "qwen2.5-72b", "phi-3-mini", "gpt-oss-20b"]  # fmt: skip
LINKS = ["ib-ndr", "100gbe", "400gbe", "pcie5", "ib-xdr"]


def links(n: int) -> list[dict[str, str]]:
    """``n`` different shared-link queries, written by the app's own link writer."""
    from kvmodel.build import scenario_from_inputs
    from kvview.scenario_link import share_query

    out = []
    for i in range(n):
        values = {"model": MODELS[i % len(MODELS)], "link": LINKS[i % len(LINKS)],
                  "seq": 1024 * (1 + i % 8), "batch": 1 + i}  # fmt: skip
        query, gaps = share_query(scenario_from_inputs(values))
        if query is None:
            raise SystemExit(f"no link for {values}: {gaps}")
        out.append(query)
    return out


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def _children(pid: int) -> list[int]:
    kids = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            kids += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return kids


def rss_mb(pid: int) -> float:
    """Resident memory of ``pid`` and its children [MB, decimal]."""
    try:
        import psutil
    except ImportError:
        psutil = None
    if psutil is not None:
        proc = psutil.Process(pid)
        return sum(p.memory_info().rss for p in [proc, *proc.children(recursive=True)]) / 1e6
    todo, total = [pid], 0
    while todo:
        p = todo.pop()
        total += _rss_kb(p) * 1024
        todo += _children(p)
    return total / 1e6


def settled_rss_mb(pid: int) -> float:
    time.sleep(2.0)
    readings = []
    for _ in range(5):
        readings.append(rss_mb(pid))
        time.sleep(0.2)
    return statistics.median(readings)


def drawn(page) -> None:
    """The page's numbers and its first chart are on screen."""
    page.get_by_test_id("stMetricValue").first.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.locator(".js-plotly-plot svg.main-svg").first.wait_for(state="attached",
                                                                timeout=TIMEOUT_MS)  # fmt: skip
    page.locator('[data-test-script-state="notRunning"]').wait_for(state="attached",
                                                                   timeout=TIMEOUT_MS)  # fmt: skip


def measure(sessions: int) -> dict:
    from playwright.sync_api import sync_playwright

    queries = links(sessions)
    logdir = Path(tempfile.mkdtemp(prefix="server_memory-"))
    server = Server(APP, logdir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium_path(), headless=True,
                                        args=CHROMIUM_ARGS)  # fmt: skip
            started = rss_mb(server.proc.pid)
            pages = []

            def open_session(query):
                ctx = browser.new_context(viewport=VIEWPORT)
                page = ctx.new_page()
                page.goto(f"{server.url}/?{urlencode(query)}", wait_until="commit")
                pages.append(page)
                return page

            t0 = time.monotonic()
            drawn(open_session(queries[0]))
            first_s = time.monotonic() - t0
            one = settled_rss_mb(server.proc.pid)
            t0 = time.monotonic()
            for query in queries[1:]:  # all at once
                open_session(query)
            for page in pages[1:]:
                drawn(page)
            rest_s = time.monotonic() - t0
            many = settled_rss_mb(server.proc.pid)
            alive = server.proc.poll() is None
            browser.close()
    finally:
        server.stop()
    per = (many - one) / (sessions - 1)
    return {
        "machine": machine(),
        "sessions": sessions,
        "rss_server_started_mb": round(started, 1),
        "rss_1_session_mb": round(one, 1),
        "rss_all_sessions_mb": round(many, 1),
        "mb_per_extra_session": round(per, 2),
        "target_mb_per_session": TARGET_MB_PER_SESSION,
        "first_session_drawn_s": round(first_s, 1),
        "other_sessions_drawn_s": round(rest_s, 1),
        "server_alive": alive,
        "pass": alive and per <= TARGET_MB_PER_SESSION,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20, help="sessions kept open at the end")
    ap.add_argument("--json", type=Path, help="also write the result here")
    args = ap.parse_args(argv)
    if args.sessions < 2:
        ap.error("--sessions must be at least 2")
    if not chromium_path():
        print("server memory skipped: Debian chromium not found (`make chromium` installs it)")
        return 0
    r = measure(args.sessions)
    n = r["sessions"]
    print(
        f"server RSS: {r['rss_server_started_mb']:.0f} MB started, "
        f"{r['rss_1_session_mb']:.0f} MB after 1 session "
        f"(drawn in {r['first_session_drawn_s']:.1f} s), "
        f"{r['rss_all_sessions_mb']:.0f} MB after {n} sessions "
        f"(the other {n - 1} drawn in {r['other_sessions_drawn_s']:.1f} s, opened at once)"
    )
    print(f"memory per extra session: {r['mb_per_extra_session']:.2f} MB "
          f"(target ≤ {TARGET_MB_PER_SESSION:g} MB) {verdict(r['pass'])}"
          + ("" if r["server_alive"] else " (the server exited)"))  # fmt: skip
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(r, indent=2))
    return 0 if r["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
