"""KV Transfer Planner: entry point (minimal until the dashboard pages land)."""

import streamlit as st

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvmodel.units import fmt_bytes, fmt_ms, fmt_tokens

st.set_page_config(page_title="KV Transfer Planner", layout="wide")
st.title("KV Transfer Planner")
st.caption("What moving the KV cache from prefill to decode costs, for your model and network.")

ids = catalog.model_ids()
col1, col2, col3, col4 = st.columns(4)
model = col1.selectbox("Model", ids, index=ids.index("llama-3.1-70b"), key="model")
link_ids = list(dict.fromkeys(lk.id for lk in catalog.links().values()))
link = col2.selectbox("Interconnect", link_ids, index=link_ids.index("100gbe"), key="link")
seq = col3.number_input("Sequence length [tokens]", 1, 10_000_000, 1024, key="seq")
batch = col4.number_input("Batch [requests]", 1, 4096, 1, key="batch")

try:
    ev = evaluate(build_scenario(model=model, link=link, seq_len=int(seq), batch=int(batch)))
except ValueError as exc:
    st.error(str(exc))
    st.stop()
m1, m2, m3, m4 = st.columns(4)
m1.metric("KV cache", fmt_bytes(ev.kv_total_bytes))
m2.metric("Transfer", fmt_ms(ev.transfer_s, 2))
m3.metric("Transfer ÷ decode step (30 ms)", f"{ev.transfer_over_decode:.2f}×")
m4.metric("Critical sequence length", fmt_tokens(ev.critical_seq_len))
