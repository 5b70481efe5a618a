import streamlit as st

st.title("interconnects")
