"""``make bench``: server-side rerun times (AppTest) and control-to-chart times (browser), one
summary per page with ratios to the trivial one-chart page and PASS/FAIL against the targets;
then the server's memory per browser session (``server_memory.py``, 1 and 20 sessions).

Each part runs in its own process (``page_rerun.py``, ``control_to_chart.py``,
``server_memory.py``), writing JSON to
``bench/out/`` (git-ignored); the browser part is skipped with a message when Debian chromium or
playwright is missing.  ``--profile`` then runs ``profile_rerun.py`` on the pages that missed the
rerun target.  Exit status 1 when any target is missed.

    .venv/bin/python bench/run_all.py [--runs 30] [--repeats 9] [--no-browser] [--profile]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (  # noqa: E402
    COLD_START_RATIO,
    CONTROL_TO_CHART_MS,
    CONTROL_TO_CHART_RATIO,
    PAGE_CONTROL_RATIO,
    RERUN_MEDIAN_MS,
    RERUN_P95_MS,
    RERUN_RATIO,
    ROOT,
    TRIVIAL_LABEL,
    ratio_cell,
    table,
    verdict,
)

BENCH = ROOT / "bench"
OUT = BENCH / "out"


def run(script: str, *args: str) -> int:
    cmd = [sys.executable, str(BENCH / script), *args]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    return subprocess.run(cmd, cwd=ROOT).returncode


def browser_available() -> str | None:
    from control_to_chart import chromium_path

    if not chromium_path():
        return "Debian chromium not found (`make chromium` installs it)"
    if importlib.util.find_spec("playwright") is None:
        return "the playwright package is not installed"
    return None


def _page_mode(r: dict | None) -> str:
    """page_rerun.py's ``page`` mode (a page's own control changed), where the page has one."""
    if r is None:
        return "–"
    return f"{r['median_ms']:.0f} / {r['p95_ms']:.0f} ({r['ratio_median']:.1f}×)"


def summary(rerun: dict, c2c: dict | None) -> tuple[str, list[str]]:
    by = {(r["page"], r["mode"]): r for r in rerun["results"]}
    browser = {r["page"]: r for r in c2c["results"]} if c2c else {}
    rows, missed = [], []
    labels = [TRIVIAL_LABEL] + [r["page"] for r in rerun["results"] if r["page"] != TRIVIAL_LABEL]
    labels += list(rerun.get("errors", {})) + [p for p in browser if p not in labels]
    for label in dict.fromkeys(labels):
        ch, pl = by.get((label, "change")), by.get((label, "plain"))
        if ch is None:
            err = rerun.get("errors", {}).get(label, "not measured")
            rows.append([label, "ERROR", "", "", "", "", "FAIL"] + (["", "", ""] if c2c else []))
            missed.append(f"{label}: rerun ({err})")
            continue
        modes = [r for (page, _m), r in by.items() if page == label]
        rerun_ok = all(r["pass"] for r in modes)
        b = browser.get(label)
        row = [label,
               f"{ch['median_ms']:.0f} / {ch['p95_ms']:.0f}", f"{ch['ratio_median']:.1f}×",
               f"{pl['median_ms']:.0f} / {pl['p95_ms']:.0f}", f"{pl['ratio_median']:.1f}×",
               _page_mode(by.get((label, "page"))), verdict(rerun_ok)]  # fmt: skip
        if c2c:
            if b and b["median_ms"] is not None:
                row += [f"{b['median_ms']:.0f} / {b['max_ms']:.0f}",
                        f"{b['ratio_median']:.1f}×", verdict(b["pass"])]  # fmt: skip
            elif label in c2c.get("no_chart", []):
                row += ["no chart", "", "n/a"]
            else:
                row += ["—", "—", "FAIL"]
        rows.append(row)
        if label != TRIVIAL_LABEL:
            if not rerun_ok:
                missed.append(f"{label}: rerun")
            if c2c and not (b and b["pass"]) and label not in c2c.get("no_chart", []):
                missed.append(f"{label}: control-to-chart")
    head = ["page", "rerun change med/p95 ms", "÷ triv", "rerun plain med/p95 ms", "÷ triv",
            "page control med/p95 ms (÷ triv)",
            f"≤{RERUN_MEDIAN_MS:g}/≤{RERUN_P95_MS:g}"]  # fmt: skip
    if c2c:
        head += ["control→chart med/max ms", "÷ triv", f"≤{CONTROL_TO_CHART_MS:g}"]
    return table(rows, head), missed


def ratio_summary(rerun: dict, c2c: dict | None, cold: dict | None) -> tuple[str, list[str]]:
    """Issue 20 item 6: each page's ratios to the trivial page beside their targets: rerun
    (its worst mode, each ÷ the trivial page's same mode), a page control's rerun, control →
    chart in the browser; and the cold start (one row)."""
    modes: dict[str, dict[str, float]] = {}
    for r in rerun["results"]:
        modes.setdefault(r["page"], {})[r["mode"]] = r["ratio_median"]
    browser = {r["page"]: r for r in c2c["results"]} if c2c else {}
    rows, missed = [], []
    for page, by_mode in modes.items():
        if page == TRIVIAL_LABEL:
            continue
        worst = max((v for m, v in by_mode.items() if m != "page"), default=None)
        cells = [ratio_cell(worst, RERUN_RATIO)]
        names = ["rerun"]
        if "page" in by_mode:
            cells.append(ratio_cell(by_mode["page"], PAGE_CONTROL_RATIO))
            names.append("page control")
        if c2c and page not in c2c.get("no_chart", []):
            cells.append(ratio_cell((browser.get(page) or {}).get("ratio_median"),
                                    CONTROL_TO_CHART_RATIO))  # fmt: skip
            names.append("control→chart")
        missed += [f"{page}: {n} ratio" for n, (_, ok) in zip(names, cells, strict=True) if not ok]
        by_name = dict(zip(names, (c for c, _ in cells), strict=True))
        rows.append([page] + [by_name.get(n, "–") for n in ("rerun", "page control",
                                                             "control→chart")])  # fmt: skip
    if cold:
        cell, ok = ratio_cell(cold.get("ratio"), COLD_START_RATIO)
        rows.append([f"cold start ({cold['app_ms']:.0f} vs {cold['trivial_ms']:.0f} ms)", cell,
                     "", ""])  # fmt: skip
        if not ok:
            missed.append("cold start ratio")
        plain = cold.get("unwarmed")
        if plain:  # streamlit run app.py, without make run's warm-up: printed, not judged
            rows.append([f"cold start without the warm-up ({plain['app_ms']:.0f} ms)",
                         f"{plain['ratio']:.2f}× (info)", "", ""])  # fmt: skip
        first = cold.get("browser")
        if first:  # what a user feels; printed beside it, not held against the target
            rows.append([f"first page, fresh server, chromium ({first['app_ms']:.0f} vs "
                         f"{first['trivial_ms']:.0f} ms)", f"{first['ratio']:.2f}× (info)", "",
                         ""])  # fmt: skip
    head = ["page", "rerun ÷ triv (worst mode)", "page control ÷ triv change",
            "control→chart ÷ triv"]  # fmt: skip
    return table(rows, head), missed


def print_ratios(rerun: dict, c2c: dict | None, cold_json: Path) -> list[str]:
    """Print :func:`ratio_summary`'s table; return the ratios missed."""
    cold = json.loads(cold_json.read_text()) if cold_json.exists() else None
    ratios, missed = ratio_summary(rerun, c2c, cold)
    print()
    print("=== Ratios to the trivial page (issue 20 item 6), this run")
    print(ratios)
    return missed + (["cold start (no result)"] if cold is None else [])


def parse_args(argv) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="AppTest reruns per page and mode")
    ap.add_argument("--repeats", type=int, default=9,
                    help="browser control changes per page (5: medians moved ±10 %%)")
    ap.add_argument("--no-browser", action="store_true", help="skip control_to_chart.py")
    ap.add_argument("--profile", action="store_true",
                    help="profile the pages that miss the rerun target")  # fmt: skip
    return ap.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    OUT.mkdir(exist_ok=True)
    rerun_json, c2c_json = OUT / "page_rerun.json", OUT / "control_to_chart.json"
    mem_json, cold_json = OUT / "server_memory.json", OUT / "cold_start.json"
    for stale in (rerun_json, c2c_json, mem_json, cold_json):
        stale.unlink(missing_ok=True)

    run("page_rerun.py", "--runs", str(args.runs), "--json", str(rerun_json))
    print()
    why_not = "--no-browser" if args.no_browser else browser_available()
    run("cold_start.py", "--json", str(cold_json), *([] if why_not else ["--browser", "3"]))
    print()
    c2c = None
    if why_not:
        print(f"control-to-chart skipped: {why_not}")
    else:
        run("control_to_chart.py", "--repeats", str(args.repeats), "--json", str(c2c_json))
        if c2c_json.exists():
            c2c = json.loads(c2c_json.read_text())
        print()
        run("server_memory.py", "--sessions", "20", "--json", str(mem_json))
    if not rerun_json.exists():
        print("page_rerun.py wrote no results")
        return 1
    rerun = json.loads(rerun_json.read_text())
    text, missed = summary(rerun, c2c)
    m = rerun["machine"]
    print()
    print(f"=== Summary · {m['date']} · {m['cpus']} CPUs · load avg {m['loadavg_1_5_15']} · "
          f"Streamlit {m['streamlit']}")  # fmt: skip
    print(text)
    print(f"rerun: AppTest at.run() with the batch changed to a never-seen value / no change; "
          f"target median ≤ {RERUN_MEDIAN_MS:g} ms, p95 ≤ {RERUN_P95_MS:g} ms on every page and "
          f"mode (toggle mode in {rerun_json.relative_to(ROOT)}).")  # fmt: skip
    if c2c:
        print(f"control→chart: Enter in a sidebar number input → every changed chart drawn with "
              f"its new figure; target median ≤ {CONTROL_TO_CHART_MS:g} ms.")  # fmt: skip
    if mem_json.exists():
        mem = json.loads(mem_json.read_text())
        print(f"server memory: {mem['mb_per_extra_session']:.2f} MB per extra session "
              f"({mem['rss_1_session_mb']:.0f} MB with 1 session, "
              f"{mem['rss_all_sessions_mb']:.0f} MB with {mem['sessions']}); "
              f"target ≤ {mem['target_mb_per_session']:g} MB {verdict(mem['pass'])}")  # fmt: skip
        if not mem["pass"]:
            missed.append("server memory per session")
    elif not why_not:
        missed.append("server memory (no result)")
    missed += print_ratios(rerun, c2c, cold_json)
    print("Targets missed: " + (", ".join(missed) if missed else "none"))
    if args.profile:
        slow = sorted({s.split(":")[0] for s in missed if s.endswith("rerun")})
        if slow:
            print()
            run("profile_rerun.py", "--pages", *slow)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
