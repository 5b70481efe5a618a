"""KV Transfer Planner: router and the shared scenario controls (rendered on every page)."""

import streamlit as st

from ui import state

st.set_page_config(page_title="KV Transfer Planner", page_icon="🔀", layout="wide")

state.ensure_router()  # before any widget, so widget ids never change between runs
state.init_from_url()
state.sidebar_controls()

pages = [
    st.Page("pages/overview.py", title="Overview", icon="🧮", default=True),
    st.Page("pages/interconnects.py", title="Interconnects", icon="🔌", url_path="interconnects"),
    st.Page("pages/sequence.py", title="Sequence length", icon="📏", url_path="sequence"),
    st.Page("pages/mitigations.py", title="Mitigations", icon="🛠️", url_path="mitigations"),
    st.Page("pages/models.py", title="Models", icon="🧠", url_path="models"),
]
page = st.navigation(pages, position="top")
state.sync_url()
page.run()
