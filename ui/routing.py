"""The route guard: every request, even one straight to a page's address, runs through app.py."""

from __future__ import annotations

import streamlit as st


def ensure_router() -> None:
    """Call first on every page: make sure app.py (router + sidebar) drives this run.

    Streamlit treats an app with a ``pages/`` folder as an old-style multipage app until the
    first ``st.navigation`` call in the process; a first request straight to /models then runs
    the page file alone, without the sidebar or the scenario.  AppTest resets that flag on every
    run.  When it happens, switch the flag off and rerun, so app.py routes the request.
    """
    try:
        from streamlit.runtime.pages_manager import PagesManager
    except ImportError:  # pragma: no cover - a future Streamlit without the old flag
        return
    if getattr(PagesManager, "uses_pages_directory", False):
        PagesManager.uses_pages_directory = False
        st.rerun()
