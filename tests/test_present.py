"""Presentation mode (ui.present) through AppTest."""

from app_helpers import app


def test_presentation_mode_from_link():
    at = app({"present": "1"})
    assert at.toggle(key="present").value is True
    at.button(key="present_exit").click().run()
    assert "present" not in at.query_params  # off is the default: the short link leaves it out


def _strip(at):
    shown = [h.value for h in at.get("html") if 'data-testid="present-strip"' in h.value]
    return shown[0] if shown else None


def test_strip_names_the_linked_scenario_on_every_page():
    """A non-default scenario (defaults: Llama-3.1-70B, 1,024 tokens, batch 1, 100 GbE)."""
    query = {
        "present": "1",
        "model": "deepseek-v3",
        "seq": "8192",
        "batch": "16",
        "link": "ib-ndr",
        "tp": "8",
        "tpd": "4",
        "stack": "mooncake",
        "comp": "int8",
    }
    at = app(query, article=False)
    for page in ("pages/overview.py", "pages/mitigations.py", "pages/models.py"):
        at.switch_page(page).run()
        text = _strip(at)
        assert text is not None, page
        for words in ("DeepSeek-V3", "prompt 8,192 tokens", "batch 16 requests",
                      "InfiniBand NDR 400G (50 GB/s per direction", "TP 8 → 4 (prefill → decode)",
                      "Mooncake", "int8 transfer"):  # fmt: skip
            assert words in text, (page, words)


def test_no_strip_outside_presentation_mode():
    at = app({"model": "deepseek-v3"})
    assert _strip(at) is None
    at.toggle(key="present").set_value(True).run()
    assert "DeepSeek-V3" in _strip(at)
