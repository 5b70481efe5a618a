"""Presentation mode: large type and no sidebar (``present=1`` in the link)."""

from __future__ import annotations

import streamlit as st

PRESENTATION_CSS = """
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] { display: none; }
html { font-size: 19px; }
.stMainBlockContainer { max-width: 96%; padding-top: 5rem; }
[data-testid="stMetricValue"] { font-size: 2.6rem; }
</style>
"""


def presentation_mode() -> None:
    """Large type and no sidebar when ``present`` is on (also from the link: ``present=1``)."""
    if not st.session_state.get("present"):
        return
    st.html(PRESENTATION_CSS)
    st.button(
        "Exit presentation mode",
        icon=":material/close_fullscreen:",
        key="present_exit",
        on_click=lambda: st.session_state.update(present=False),
    )
