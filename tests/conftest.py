"""Shared test setup: quiet Streamlit's bare-mode log noise, fresh caches per test."""

import logging

import pytest


class _NoBareModeNoise(logging.Filter):
    def filter(self, record):
        msg = record.getMessage()
        return (
            "missing ScriptRunContext" not in msg and "Session state does not function" not in msg
        )


for name in (
    "streamlit",
    "streamlit.runtime.scriptrunner_utils.script_run_context",
    "streamlit.runtime.state.session_state_proxy",
):
    logging.getLogger(name).addFilter(_NoBareModeNoise())


@pytest.fixture(autouse=True)
def _clear_streamlit_cache():
    import streamlit as st

    from ui import perf

    st.cache_data.clear()
    perf.clear_cache()
    yield
