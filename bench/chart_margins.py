"""Which charts plotly lays out twice: per chart of every page (and of each tab on it), the
margins the chart was sent with (``kvview.figures.margins.reserve``), the margins plotly drew
it with, and what its axes and legend asked for.  A chart drawn with wider margins than it
was sent was drawn, measured and drawn again (bench/README.md, Session 28); one sent much
wider than it needs wastes room.

Starts the planner as ``make run`` serves it on a free port and opens each page in headless
Debian chromium at ``--width`` × 800 (1280: the desktop the estimates are made for; 390: a
phone, where a wrapped legend may still need a second layout).

    .venv/bin/python bench/chart_margins.py [--width 1280] [--pages Overview Traffic]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from browser import CHROMIUM_ARGS, Server, chromium_path  # noqa: E402
from common import ROOT, pages, quiet_logs, table  # noqa: E402

MARGINS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout, m = fl.margin, s = fl._size;
  let needL = 0, needB = 0, needR = 0;
  for (const [key, p] of Object.entries(fl._pushmargin || {})) {
    if (!key.endsWith('.automargin')) continue;  // axes; a legend under the plot: below
    needL = Math.max(needL, p.l.size);
    needB = Math.max(needB, p.b.size);
    needR = Math.max(needR, p.r.size);
  }
  needB += ((fl._reservedMargin || {}).legend || {}).b || 0;
  return {title: ((gd.layout.title || {}).text || '').replace(/<[^>]+>/g, ''),
          sent: [m.l, m.b, m.r], drawn: [Math.round(s.l), Math.round(s.b), Math.round(s.r)],
          need: [Math.ceil(needL), Math.ceil(needB), Math.ceil(needR)]};
})"""


def _settle(page) -> None:
    page.locator('[data-test-script-state="notRunning"]').wait_for(state="attached",
                                                                   timeout=60_000)  # fmt: skip
    page.wait_for_timeout(2_000)


def _charts(page, where: str) -> list[list]:
    rows = []
    for chart in page.evaluate(MARGINS_JS):
        once = chart["drawn"] == chart["sent"]
        rows.append([where, chart["title"][:48], "/".join(map(str, chart["sent"])),
                     "/".join(map(str, chart["drawn"])), "/".join(map(str, chart["need"])),
                     "once" if once else "TWICE"])  # fmt: skip
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--width", type=int, default=1280)
    ap.add_argument("--pages", nargs="*", help="page titles (default: every page)")
    args = ap.parse_args()
    if not chromium_path():
        print("Debian chromium not found (`make chromium`)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    quiet_logs()
    chosen = [p for p in pages() if not args.pages or p[0] in args.pages]
    rows: list[list] = []
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(ROOT / "app.py", Path(tmp), warm=True)
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_ARGS)
                page = browser.new_context(viewport={"width": args.width, "height": 800}).new_page()
                for title, _, path in chosen:
                    page.goto(server.url + path)
                    _settle(page)
                    rows += _charts(page, title)
                    tabs = page.locator('[data-testid="stMain"] [data-testid="stTab"]')
                    for i in range(1, tabs.count()):
                        name = tabs.nth(i).inner_text().strip()
                        tabs.nth(i).click()
                        _settle(page)
                        rows += _charts(page, f"{title} · {name}")
                browser.close()
        finally:
            server.stop()
    print(f"Chart margins at {args.width} × 800 (px, left/bottom/right): sent, drawn, needed\n")
    print(table(rows, ["page", "chart", "sent", "drawn", "needed", "laid out"]))
    twice = sum(r[-1] == "TWICE" for r in rows)
    print(f"\n{len(rows) - twice} of {len(rows)} charts laid out once.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
