"""Baseline for the benchmarks: one number input and one small plotly chart, nothing else.

It uses the same widget key ("batch") and label ("Batch [requests]") as the planner's sidebar,
so ``page_rerun.py`` and ``control_to_chart.py`` drive it exactly like the real pages.
Every figure of the benchmarks is printed as a ratio to this page.
"""

import plotly.graph_objects as go
import streamlit as st

st.set_page_config(page_title="Trivial baseline", layout="wide")
st.title("Trivial baseline")
batch = st.sidebar.number_input("Batch [requests]", 1, 4096, value=1, key="batch", step=1)
st.metric("Batch", f"{batch:,}")
y = [1, batch, batch * 2, batch * 3]
fig = go.Figure(go.Scatter(x=[1, 2, 3, 4], y=y, mode="lines+markers"))
fig.update_layout(title=f"Trivial chart (batch {batch})", height=300)
st.plotly_chart(fig, width="stretch")
