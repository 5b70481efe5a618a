import streamlit as st

st.title("mitigations")
