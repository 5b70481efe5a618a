"""The router runs once per AppTest run, on every page, with the sidebar around each page.

Before, ``ui.routing`` flipped Streamlit's private ``PagesManager.uses_pages_directory`` and
called ``st.rerun``, so every AppTest run executed app.py twice.  Now a page file opened on its
own (Streamlit's legacy pages/ mode, which AppTest re-enters on every run) routes through
``ui.router.run`` instead: one ``st.navigation`` call and one draw of the page per run.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import streamlit as st
from app_helpers import APP
from streamlit.testing.v1 import AppTest

from ui import router

ROOT = Path(__file__).resolve().parents[1]
PAGE_FILES = [f"pages/{f}.py" for f, *_ in router.PAGES]


@pytest.fixture
def counted(monkeypatch):
    """Counts of the app's executions (calls of ui.router.run, which app.py and a page file
    opened on its own make), of its st.navigation calls and of the page draws."""
    AppTest.from_file(APP, default_timeout=60).run()  # the process's first run (see below)
    counts = Counter()
    run, navigation, page = router.run, st.navigation, router.page

    def counting_run():
        counts["app"] += 1
        return run()

    def counting_navigation(*args, **kwargs):
        counts["router"] += 1
        return navigation(*args, **kwargs)

    def counting_page(render):
        counts["page file"] += 1
        return page(lambda: (counts.update(["draw"]), render()))

    monkeypatch.setattr(router, "run", counting_run)
    monkeypatch.setattr(st, "navigation", counting_navigation)
    monkeypatch.setattr(router, "page", counting_page)
    return counts


def _open(page_file: str | None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    at.run()
    if page_file:
        at.switch_page(page_file).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_the_default_page_runs_the_router_once(counted):
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception
    assert (counted["app"], counted["router"], counted["draw"]) == (1, 1, 1), counted
    assert [t.value for t in at.title][:1] == ["Overview"]


@pytest.mark.parametrize("page_file", PAGE_FILES[1:])
def test_a_page_runs_the_router_once_with_the_sidebar(counted, page_file):
    at = _open(None)
    counted.clear()
    at.switch_page(page_file).run()
    assert not at.exception, [e.value for e in at.exception]
    # the app's router once, not twice; the page drawn once
    assert (counted["app"], counted["router"], counted["draw"]) == (1, 1, 1), counted
    # opened on its own (legacy pages/ mode), the page file routed through the router
    assert counted["page file"] == 2, counted
    assert at.sidebar.selectbox(key="model")  # the shared controls are there
    counted.clear()
    at.run()  # a rerun on the same page: the same once
    assert (counted["app"], counted["router"], counted["draw"]) == (1, 1, 1), counted


FIRST_RUNS = """
import json, sys
from collections import Counter
sys.path.insert(0, "tests")
from app_helpers import APP
from streamlit.testing.v1 import AppTest
from ui import router
counts, run = Counter(), router.run
def counting_run():
    counts["app"] += 1
    return run()
router.run = counting_run
seen = []
for _ in range(3):
    counts.clear()
    at = AppTest.from_file(APP, default_timeout=60).run()
    assert not at.exception, [e.value for e in at.exception]
    seen.append(counts["app"])
print(json.dumps(seen))
"""


def test_only_a_process_first_run_is_run_twice():
    """A fresh process: its first run ends the legacy pages/ mode and reruns before drawing
    (as a fresh server's first request does); every later run executes the app once."""
    out = subprocess.run(
        [sys.executable, "-c", FIRST_RUNS], capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [2, 1, 1]


def test_no_module_touches_streamlits_pages_flag():
    hits = []
    for folder in ("ui", "pages", "kvview", "kvmodel"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr == "uses_pages_directory":
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
                if (
                    isinstance(node, ast.ImportFrom)
                    and node.module == "streamlit.runtime.pages_manager"
                ):
                    hits.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not hits


def test_every_page_file_is_routed():
    """Each file in pages/ is a router page (and the router lists every file there)."""
    files = sorted(p.stem for p in (ROOT / "pages").glob("*.py"))
    assert files == sorted(f for f, *_ in router.PAGES)
    for name in files:
        text = (ROOT / "pages" / f"{name}.py").read_text(encoding="utf-8")
        assert f"router.page({name}.render)" in text, name
