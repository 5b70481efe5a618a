"""Server-side rerun time of every page (AppTest), beside a trivial one-chart page.

For each page of the planner and for ``bench/trivial_app.py`` one AppTest is created and warmed
up; then, in ``--runs`` rounds that each visit every app and every mode (so machine noise hits
them all alike), three kinds of rerun are timed (``at.run()`` only, wall clock):

* ``change``  the sidebar's "Batch [requests]" is set to a value never used before in this
              process (disjoint ranges per page), so no ``st.cache_data`` entry can hide the
              work an input change causes;
* ``toggle``  batch set to 1 or 2 (both seen in warm-up: a cache keyed on the inputs may help);
* ``plain``   a rerun with no change at all (what a cache should make cheap);
* ``page``    (pages in ``PAGE_CONTROLS``) one of the page's own controls set to a value never
              used before, the controls taken in turn: on Capacity the TTFT target, the TPOT
              target and the request rate (a new target re-sizes every rate drawn, a new rate
              only the rates it has not drawn before); on Traffic the "too short" length and
              the arrival rate (the batch does not reach its analysis).  Its ratio is to the
              trivial page's ``change``.  A control inside an ``st.fragment`` is timed as the
              browser reruns it: that fragment alone (``fragments.py``), not the whole script.

The pages are those app.py hands to ``st.navigation`` (recorded in one AppTest run), so new
pages are included without editing the bench.
A page that raises or draws no chart is reported as an error; the others are still measured.

(Within a round the order is change, toggle, plain, so "toggle" always follows a change.)

One ``at.run()`` executes the app once (``ui.router``: only a process's first run, done in the
warm-up, is run twice; before, every AppTest run executed app.py twice).  Targets (2-core
machine): median <= 100 ms and p95 <= 200 ms for every page and mode.  Every figure is also
given as a ratio to the trivial page.

    .venv/bin/python bench/page_rerun.py [--runs 30] [--warmup 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fragments  # noqa: E402
from common import (  # noqa: E402
    APP,
    RERUN_MEDIAN_MS,
    RERUN_P95_MS,
    TRIVIAL,
    TRIVIAL_LABEL,
    loadavg,
    machine,
    median,
    p95,
    pages,
    quiet_logs,
    ratio,
    table,
    verdict,
)

MODES = ("change", "toggle", "plain")
PAGE_MODE = "page"
MAX_BATCH = 4096  # the sidebar's (and trivial_app's) maximum batch

# A page's own controls: (widget key, value in round k of that control), k < 0 in warm-up, so
# no timed value was seen before.  A page widget's key is "w_" + its input's URL name
# (ui.widgets).
PAGE_CONTROLS = {
    "Capacity": (
        ("w_ttft_slo", lambda r: 1500.0 + 7.0 * r),  # TTFT target [ms]
        ("w_tpot_slo", lambda r: 60.0 + 0.5 * r),  # TPOT target [ms]
        ("w_rps", lambda r: 12.0 + 0.37 * r),  # request rate [requests/s]
    ),
    # the batch does not reach Traffic's analysis (one request at a time): its own controls do
    "Traffic": (
        ("w_minlen", lambda r: 129 + r),  # too short below [tokens]: the regions and window
        ("w_rps", lambda r: 3.0 + 0.21 * r),  # arrival rate [requests/s]: the link queue
    ),
}


# Boxes drawn only while open that hold a page control above (session key of each): opened
# once before the clock, so every mode of that page is timed with them drawn (the heavier view).
PAGE_OPENED = {"pages/traffic.py": ("traffic_load_open",)}  # the arrival rate's box


def new_app(path: Path, page: str | None):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(path), default_timeout=120)
    fragments.run(at)
    if page:
        fragments.run(at.switch_page(page))
    for key in PAGE_OPENED.get(page, ()):
        at.session_state[key] = True
        fragments.run(at)
    check(at, path, page)
    return at


class BenchError(RuntimeError):
    """A page cannot be benchmarked (exception, or the batch input was not applied)."""


def check(at, path, page, batch: int | None = None) -> None:
    where = f"{path.name} {page or ''}".strip()
    if at.exception:
        raise BenchError(f"{where}: exception {[e.value for e in at.exception]}")
    if batch is not None and at.number_input(key="batch").value != batch:
        raise BenchError(f"{where}: batch did not change to {batch}")


def page_control(label: str, r: int) -> tuple[str, float] | None:
    """(widget key, value) of round ``r``'s page-control change (None: the page has none)."""
    controls = PAGE_CONTROLS.get(label)
    if not controls:
        return None
    key, value = controls[r % len(controls)]
    return key, value(r // len(controls))


def timed_set(at, key: str, value) -> float:
    """Set a page control and time the rerun the browser would ask for: the fragment that holds
    the control when it is inside one (``fragments.py``: what a user waits for), else the whole
    script (which the control's callback may turn into a named fragment's rerun).  After a
    fragment rerun the whole page runs once more, untimed, so that the next change finds every
    widget in AppTest's element tree."""
    at.number_input(key=key).set_value(value)
    fragment = fragments.holding(at, key)
    t0 = time.perf_counter()
    fragments.run(at, fragment)
    ms = (time.perf_counter() - t0) * 1e3
    if at.exception:
        raise BenchError(f"{key} = {value}: exception {[e.value for e in at.exception]}")
    if fragment or fragments.partial(at):  # a fragment only: the whole page again, untimed
        fragments.run(at)
        if at.exception:
            raise BenchError(f"{key} = {value}: the whole page after the fragment raised")
    if at.number_input(key=key).value != value:
        raise BenchError(f"{key} did not change to {value}")
    return ms


def timed_run(at, batch: int | None) -> float:
    if batch is not None:
        at.number_input(key="batch").set_value(batch)
    t0 = time.perf_counter()
    fragments.run(at)  # the whole script (it records which widgets sit in a fragment)
    return (time.perf_counter() - t0) * 1e3


def measure(runs: int, warmup: int, only: list[str] | None = None) -> dict:
    import streamlit as st

    quiet_logs()
    found = pages()
    st.cache_data.clear()
    from ui import perf

    perf.clear_cache()
    apps = [(TRIVIAL_LABEL, TRIVIAL, None)] + [(label, APP, page) for label, page, _ in found]
    if only:
        apps = [a for a in apps if a[0] == TRIVIAL_LABEL or a[0] in only]
    tests, errors = {}, {}
    for label, path, page in apps:
        try:
            tests[label] = new_app(path, page)
        except Exception as exc:  # noqa: BLE001 - report the page, measure the others
            errors[label] = f"{type(exc).__name__}: {exc}"
    if TRIVIAL_LABEL in errors:
        raise SystemExit(f"the trivial page failed: {errors[TRIVIAL_LABEL]}")
    apps = [a for a in apps if a[0] not in errors]
    # warm-up: imports, first figure templates, caches of the values the toggle mode uses
    for w in range(warmup):
        for label, _path, _page in apps:
            timed_run(tests[label], 1 + (w % 2))
            timed_run(tests[label], None)
            for key, value in PAGE_CONTROLS.get(label, ()):  # each control, values never timed
                try:
                    timed_set(tests[label], key, value(-1 - w))
                except (BenchError, KeyError) as exc:
                    errors[label] = f"{type(exc).__name__}: {exc}"
    apps = [a for a in apps if a[0] not in errors]
    samples = {(label, mode): [] for label, *_ in apps for mode in MODES}
    samples.update({(label, PAGE_MODE): [] for label, *_ in apps if label in PAGE_CONTROLS})
    stride = (MAX_BATCH - 10) // len(apps)  # a disjoint range of batch values per app
    gc.collect()
    for r in range(runs):  # interleaved: round r runs every app in every mode
        for k, (label, path, page) in enumerate(apps):
            at = tests[label]
            for mode in MODES:
                if mode == "change":
                    batch = 10 + k * stride + (r % stride)  # never seen before by any app
                elif mode == "toggle":
                    batch = 1 + (r % 2)
                else:
                    batch = None
                if label in errors:
                    continue
                samples[(label, mode)].append(timed_run(at, batch))
                if r == 0 or r == runs - 1:
                    try:
                        check(at, path, page, batch)
                    except BenchError as exc:
                        errors[label] = str(exc)
            if (label, PAGE_MODE) in samples and label not in errors:
                key, value = page_control(label, r)
                try:
                    samples[(label, PAGE_MODE)].append(timed_set(at, key, value))
                except (BenchError, KeyError) as exc:
                    errors[label] = f"{type(exc).__name__}: {exc}"
    base = {mode: median(samples[(TRIVIAL_LABEL, mode)]) for mode in MODES}
    base_p95 = {mode: p95(samples[(TRIVIAL_LABEL, mode)]) for mode in MODES}
    results = []
    base[PAGE_MODE], base_p95[PAGE_MODE] = base["change"], base_p95["change"]
    for label, *_ in apps:
        if label in errors:
            continue
        for mode in (*MODES, PAGE_MODE):
            xs = samples.get((label, mode))
            if not xs:
                continue
            med, q95 = median(xs), p95(xs)
            results.append({
                "page": label, "mode": mode, "runs": len(xs),
                "median_ms": round(med, 2), "p95_ms": round(q95, 2),
                "min_ms": round(min(xs), 2), "max_ms": round(max(xs), 2),
                "ratio_median": round(ratio(med, base[mode]), 2),
                "ratio_p95": round(ratio(q95, base_p95[mode]), 2),
                "pass": med <= RERUN_MEDIAN_MS and q95 <= RERUN_P95_MS,
                "samples_ms": [round(x, 2) for x in xs],
            })  # fmt: skip
    return {"results": results, "errors": errors}


def page_verdicts(results: list[dict]) -> dict[str, bool]:
    out: dict[str, bool] = {}
    for r in results:
        out[r["page"]] = out.get(r["page"], True) and r["pass"]
    return out


def report(data: dict) -> str:
    rows = [
        [r["page"], r["mode"], f"{r['median_ms']:.1f}", f"{r['p95_ms']:.1f}", f"{r['max_ms']:.1f}",
         f"{r['ratio_median']:.1f}×", f"{r['ratio_p95']:.1f}×", verdict(r["pass"])]
        for r in data["results"]
    ]  # fmt: skip
    head = ["page", "mode", "median ms", "p95 ms", "max ms", "med ÷ trivial", "p95 ÷ trivial",
            f"≤{RERUN_MEDIAN_MS:g}/≤{RERUN_P95_MS:g}"]  # fmt: skip
    m = data["machine"]
    lines = [
        f"Server-side rerun (AppTest, {data['runs']} timed reruns per page and mode, "
        f"{data['warmup']} warm-up rounds)",
        f"{m['date']} · {m['cpus']} CPUs · Python {m['python']} · Streamlit {m['streamlit']} · "
        f"load avg before {m['loadavg_1_5_15']} after {data['loadavg_after']}",
        "",
        table(rows, head),
        "",
        "change = batch set to a never-seen value; toggle = batch 1↔2; plain = rerun, no change;",
        "page = one of the page's own controls set to a never-seen value, in turn ("
        + "; ".join(
            f"{p}: {', '.join(k.removeprefix('w_') for k, _ in c)}"
            for p, c in PAGE_CONTROLS.items()
        )
        + "), its ratio to the trivial page's change.",
    ]
    verdicts = page_verdicts(data["results"])
    fails = [p for p, ok in verdicts.items() if not ok]
    verdicts.pop(TRIVIAL_LABEL, None)
    for label, err in data.get("errors", {}).items():
        verdicts[label] = False
        lines.append(f"ERROR {label}: {err}")
    lines.append("Pages: " + ", ".join(f"{p} {verdict(ok)}" for p, ok in verdicts.items()))
    if fails:
        lines.append(f"Rerun target missed on: {', '.join(fails)}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=30, help="timed reruns per page and mode")
    ap.add_argument("--warmup", type=int, default=3, help="warm-up rounds per page")
    ap.add_argument("--pages", nargs="*", help="only these page labels (plus the trivial page)")
    ap.add_argument("--json", type=Path, help="write the results as JSON here")
    args = ap.parse_args(argv)
    mach = machine()
    t0 = time.perf_counter()
    data = measure(args.runs, args.warmup, args.pages)
    data.update(machine=mach, runs=args.runs, warmup=args.warmup, loadavg_after=loadavg(),
                wall_s=round(time.perf_counter() - t0, 1),
                targets={"median_ms": RERUN_MEDIAN_MS, "p95_ms": RERUN_P95_MS})  # fmt: skip
    print(report(data))
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
        print(f"JSON: {args.json}")
    verdicts = page_verdicts(data["results"])
    verdicts.pop(TRIVIAL_LABEL, None)
    return 0 if all(verdicts.values()) and not data["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
