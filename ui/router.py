"""The router: the pages, the shared controls around them, and the one way a page is drawn.

Every run goes through :func:`run`, whichever file Streamlit starts it with.  Streamlit 1.67
treats an entrypoint with a ``pages/`` folder beside it as a legacy (MPA v1) app until the
first ``st.navigation`` call of the process: ``PagesManager`` sets ``uses_pages_directory`` when
``main_script_parent / "pages"`` exists, and while it holds the script runner runs the app
through ``_mpa_v1``, which runs a requested ``pages/<name>.py`` as the entrypoint itself
(``streamlit/runtime/pages_manager.py``, ``streamlit/runtime/scriptrunner/script_runner.py``;
no config option changes it; AppTest resets it before every run).  Two public steps handle it:

- a page file calls :func:`page`: run by the router's ``page.run()`` it draws its view; run by
  Streamlit on its own (a first request straight to /models) it runs the router, whose
  ``st.navigation`` picks that same page by its URL and runs the file again, inside;
- the first run of a process calls ``st.navigation`` (which ends the legacy mode for the
  process) and reruns before drawing anything: widgets drawn in a legacy run carry another
  page id than in every later run, and the browser would keep both copies of the sidebar
  (tests/e2e/test_router_browser.py).  Later runs execute the app once (AppTest's included:
  tests/test_router.py counts them).

No private flag is touched.
"""

from __future__ import annotations

import base64
import threading
from collections.abc import Callable
from pathlib import Path

import streamlit as st

from ui import perf, present

ROOT = Path(__file__).resolve().parents[1]
# the tab's icon as a data: URL, read once per process: Streamlit passes such a URL through as it
# is, where a file path is opened with Pillow and stored among its media files on every run
ICON = "data:image/png;base64," + base64.b64encode(
    (ROOT / "data" / "icon.png").read_bytes()
).decode("ascii")
PAGES = (  # file in pages/, title, material icon, url path (None: the default page, at /)
    ("overview", "Overview", "dashboard", None),
    ("interconnects", "Interconnects", "lan", "interconnects"),
    ("sequence", "Sequence", "straighten", "sequence"),
    ("mitigations", "Mitigations", "build", "mitigations"),
    ("plan", "Plan", "target", "plan"),
    ("compare", "Compare", "compare_arrows", "compare"),
    ("traffic", "Traffic", "bar_chart", "traffic"),
    ("capacity", "Capacity", "dns", "capacity"),
    ("measure", "Measured", "monitoring", "measure"),
    ("recipes", "Recipes", "menu_book", "recipes"),
    ("models", "Models", "neurology", "models"),
)
_RUNNING = threading.local()  # per script thread: .page is True while the router runs a page
_NAVIGATED = threading.Event()  # process-wide: set once a run has called st.navigation


_PAGES_MADE = "_router_pages"  # session key: this session's st.Page objects


def _pages() -> list:
    """The pages for ``st.navigation``, made once per session: each ``st.Page`` resolves its
    file on the disk (1.5-3 ms for the eleven, on every rerun of every page; bench/README.md,
    Session 8).  Kept per session, not per process: ``st.navigation`` marks the page it picks."""
    ss = st.session_state
    if _PAGES_MADE not in ss:
        ss[_PAGES_MADE] = [
            st.Page(f"pages/{f}.py", title=t, icon=f":material/{i}:", url_path=u,
                    default=u is None)
            for f, t, i, u in PAGES
        ]  # fmt: skip
    return ss[_PAGES_MADE]


def run() -> None:
    """One run of the app: page config, the shared controls, navigation, the page."""
    # the page config first, every run: without it the first run's st.navigation makes the
    # page's material icon the tab's icon, which the browser fetches from a font host
    # (tests/e2e/test_browser.py::test_no_outbound_requests_with_exports)
    st.set_page_config(
        page_title="KV Transfer Planner",
        page_icon=ICON,
        layout="wide",
    )
    if not _NAVIGATED.is_set():  # this run may have started in the legacy pages/ mode
        st.navigation(_pages(), position="top")  # ends that mode for the process
        _NAVIGATED.set()
        st.rerun()  # before any widget, so widget ids never change between runs
    # imported here, not at the top: the model, pandas and the figures load after the first
    # run's st.rerun, whose first element makes Streamlit walk the call stack once per process
    # (inspect.stack, looking each frame up among the loaded modules): ~60 ms more with them
    # loaded (bench/README.md, Session 8, cold start)
    from ui import share, sidebar, urlstate

    urlstate.init_from_url()
    sidebar.sidebar_controls()
    chosen = st.navigation(_pages(), position="top")
    urlstate.sync_url()
    share.share_box()
    present.presentation_mode()
    _RUNNING.page = True
    try:
        chosen.run()
    finally:
        _RUNNING.page = False
    perf.settle_gc()  # once per process, after the first full run


def page(render: Callable[[], None]) -> None:
    """A page file's body: draw the view inside the router, or route this run through it."""
    if getattr(_RUNNING, "page", False):
        render()
    else:
        run()
