"""KV Transfer Planner: router and the shared scenario controls (rendered on every page)."""

from pathlib import Path

import streamlit as st

from ui import state

st.set_page_config(
    page_title="KV Transfer Planner",
    page_icon=str(Path(__file__).parent / "data" / "icon.png"),
    layout="wide",
)

state.ensure_router()  # before any widget, so widget ids never change between runs
state.init_from_url()
state.sidebar_controls()

pages = [
    st.Page("pages/overview.py", title="Overview", icon=":material/dashboard:", default=True),
    st.Page(
        "pages/interconnects.py",
        title="Interconnects",
        icon=":material/lan:",
        url_path="interconnects",
    ),
    st.Page(
        "pages/sequence.py",
        title="Sequence length",
        icon=":material/straighten:",
        url_path="sequence",
    ),
    st.Page(
        "pages/mitigations.py", title="Mitigations", icon=":material/build:", url_path="mitigations"
    ),
    st.Page(
        "pages/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"
    ),
    st.Page("pages/traffic.py", title="Traffic", icon=":material/bar_chart:", url_path="traffic"),
    st.Page("pages/models.py", title="Models", icon=":material/neurology:", url_path="models"),
]
page = st.navigation(pages, position="top")
state.sync_url()
state.share_box()
state.presentation_mode()
page.run()
