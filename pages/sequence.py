import streamlit as st

st.title("sequence")
