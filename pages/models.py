import streamlit as st

st.title("models")
