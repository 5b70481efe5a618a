"""Presentation mode (ui.present) through AppTest."""

from app_helpers import app


def test_presentation_mode_from_link():
    at = app({"present": "1"})
    assert at.toggle(key="present").value is True
    at.button(key="present_exit").click().run()
    assert "present" not in at.query_params  # off is the default: the short link leaves it out
