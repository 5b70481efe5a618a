"""Presentation mode (ui.present) through AppTest."""

from app_helpers import app


def test_presentation_mode_from_link():
    at = app({"present": "1"})
    assert at.toggle(key="present").value is True
    at.button(key="present_exit").click().run()
    assert at.query_params["present"] in ("0", ["0"])
