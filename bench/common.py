"""Helpers shared by the bench scripts: statistics, targets, machine facts, table printing."""

from __future__ import annotations

import functools
import logging
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "app.py"
TRIVIAL = ROOT / "bench" / "trivial_app.py"

# (label, page file for AppTest.switch_page, URL path in the browser); None = app.py's default.
KNOWN_PAGES = [
    ("Overview", None, "/"),
    ("Interconnects", "pages/interconnects.py", "/interconnects"),
    ("Sequence length", "pages/sequence.py", "/sequence"),
    ("Mitigations", "pages/mitigations.py", "/mitigations"),
    ("Models", "pages/models.py", "/models"),
]


class _Quiet(logging.Filter):
    NOISE = ("missing ScriptRunContext", "Session state does not function", "No runtime found")

    def filter(self, record):
        msg = record.getMessage()
        return not any(n in msg for n in self.NOISE)


def quiet_logs() -> None:
    """Silence Streamlit's bare-mode warnings (AppTest outside a server)."""
    for name in ("streamlit", "streamlit.runtime.scriptrunner_utils.script_run_context",
                 "streamlit.runtime.state.session_state_proxy",
                 "streamlit.runtime.caching.cache_data_api"):  # fmt: skip
        logging.getLogger(name).addFilter(_Quiet())


def _pages_from_navigation() -> list[tuple[str, str | None, str]]:
    """Run app.py once in AppTest and record what it hands to ``st.navigation``."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    found: list[tuple[str, str | None, str]] = []
    orig = st.navigation

    def spy(pages, *args, **kwargs):
        flat = [p for group in pages.values() for p in group] if isinstance(pages, dict) else pages
        found.clear()
        for p in flat:
            path = getattr(p, "_page", None)
            if not isinstance(path, Path):
                continue
            rel = path.resolve().relative_to(ROOT).as_posix() if path.is_absolute() else str(path)
            if getattr(p, "_default", False):
                found.append((p.title, None, "/"))
            else:
                found.append((p.title, rel, "/" + p.url_path))
        return orig(pages, *args, **kwargs)

    st.navigation = spy
    try:
        AppTest.from_file(str(APP), default_timeout=60).run()
    finally:
        st.navigation = orig
    return found


def _pages_from_source() -> list[tuple[str, str | None, str]]:
    """``st.Page("literal path", title=..., url_path=..., default=...)`` calls in app.py."""
    import ast

    try:
        tree = ast.parse(APP.read_text(encoding="utf-8"))
    except (OSError, SyntaxError):
        return []
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "Page"):
            continue
        if not (node.args and isinstance(node.args[0], ast.Constant)):
            continue
        path = str(node.args[0].value)
        kw = {k.arg: k.value.value for k in node.keywords if isinstance(k.value, ast.Constant)}
        title = str(kw.get("title") or Path(path).stem)
        if kw.get("default") is True:
            found.append((title, None, "/"))
        else:
            found.append((title, path, "/" + str(kw.get("url_path") or Path(path).stem)))
    return found


@functools.lru_cache(maxsize=1)
def pages() -> list[tuple[str, str | None, str]]:
    """The pages app.py registers, in order, so a new page is benchmarked without editing the
    bench: recorded from ``st.navigation`` in one AppTest run, else read from app.py's source,
    else KNOWN_PAGES."""
    quiet_logs()
    try:
        found = _pages_from_navigation()
    except Exception:  # noqa: BLE001 - fall back to reading the source
        found = []
    return found or _pages_from_source() or KNOWN_PAGES


TRIVIAL_LABEL = "trivial (1 chart)"

# Targets from the issue, for a 2-core machine.
RERUN_MEDIAN_MS = 100.0
RERUN_P95_MS = 200.0
CONTROL_TO_CHART_MS = 1000.0
# Issue 20 item 6: the same targets as ratios to the trivial page, measured in the same run.
RERUN_RATIO = 4.0  # every page's rerun median ÷ the trivial page's
PAGE_CONTROL_RATIO = 4.0  # a page control's rerun median ÷ the trivial page's change
CONTROL_TO_CHART_RATIO = 2.0  # browser control → chart median ÷ the trivial page's
COLD_START_RATIO = 1.2  # the planner's first run ÷ the trivial page's (bench/cold_start.py)


def median(xs: list[float]) -> float:
    return statistics.median(xs)


def p95(xs: list[float]) -> float:
    """Nearest-rank 95th percentile (with 30 samples: the 29th smallest)."""
    s = sorted(xs)
    return s[max(0, math.ceil(0.95 * len(s)) - 1)]


def ratio(x: float, base: float) -> float:
    return x / base if base > 0 else float("nan")


def machine() -> dict:
    import streamlit

    try:
        load = os.getloadavg()
    except OSError:  # pragma: no cover - not on Linux
        load = (float("nan"),) * 3
    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
        "cpus": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "streamlit": streamlit.__version__,
        "loadavg_1_5_15": [round(v, 2) for v in load],
        "git": git_state(),
    }


def git_state() -> str:
    """HEAD and whether app code differs from it (numbers belong to the code as measured)."""
    import subprocess

    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True,
                              capture_output=True, check=True).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "app.py", "pages", "ui",
                                "kvmodel", "data"], cwd=ROOT, text=True,
                               capture_output=True, check=True).stdout.split("\n")  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    n = len([line for line in dirty if line.strip()])
    return f"{head}" + (f" + {n} uncommitted app file(s)" if n else "")


def loadavg() -> list[float]:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:  # pragma: no cover
        return []


def table(rows: list[list[str]], header: list[str]) -> str:
    """Plain fixed-width table (first column left-aligned, the others right-aligned)."""
    cells = [header] + rows
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]

    def line(r):
        return "  ".join(
            r[i].ljust(widths[i]) if i == 0 else r[i].rjust(widths[i]) for i in range(len(r))
        )

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def ratio_cell(r: float | None, target: float) -> tuple[str, bool]:
    """(``"2.1× ≤4× PASS"``, passed) for a ratio and its target; a missing ratio fails."""
    if r is None or r != r:
        return f"– ≤{target:g}× FAIL", False
    ok = r <= target
    return f"{r:.2f}× ≤{target:g}× {verdict(ok)}", ok
