"""KV Transfer Planner: router and the shared scenario controls (rendered on every page)."""

from pathlib import Path

import streamlit as st

from ui import perf, present, routing, share, sidebar, urlstate

st.set_page_config(
    page_title="KV Transfer Planner",
    page_icon=str(Path(__file__).parent / "data" / "icon.png"),
    layout="wide",
)

routing.ensure_router()  # before any widget, so widget ids never change between runs
urlstate.init_from_url()
sidebar.sidebar_controls()

PAGES = (  # file, title, icon, url path
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
pages = [
    st.Page(f"pages/{f}.py", title=t, icon=f":material/{i}:", url_path=u, default=u is None)
    for f, t, i, u in PAGES
]
page = st.navigation(pages, position="top")
urlstate.sync_url()
share.share_box()
present.presentation_mode()
page.run()
perf.settle_gc()  # once per process, after the first full run
