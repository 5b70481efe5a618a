"""Links in a real browser: short links, Back/Forward between scenarios, CSV handouts."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlparse

import pytest

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from ui.fmt import fmt_bytes

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402


def query(page) -> dict[str, str]:
    return dict(parse_qsl(urlparse(page.url).query))


def whole_cache(seq: int, batch: int) -> str:
    """Overview's "Whole cache" for the default model at ``seq`` × ``batch`` (kvmodel's)."""
    return fmt_bytes(evaluate(build_scenario(seq_len=seq, batch=batch)).kv_total_bytes)


def metric(page, label: str):
    box = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True))
    return box.get_by_test_id("stMetricValue")


def test_back_and_forward_move_between_scenarios(page, app_url, wait_ready, screenshot):
    page.goto(f"{app_url}/")
    wait_ready(page)
    assert urlparse(page.url).query == ""  # the default scenario is the bare address
    sidebar = page.get_by_test_id("stSidebar")
    batch = sidebar.get_by_label("Batch [requests]")
    exact = sidebar.get_by_label("Exact tokens")
    seq = sidebar.get_by_role("slider", name="Sequence length [tokens]")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(1024, 1))

    batch.fill("16")
    batch.press("Enter")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(1024, 16))
    page.wait_for_function("() => location.search.includes('batch=16')")
    assert query(page) == {"batch": "16", "stack": "mooncake"}  # the short link
    exact.fill("4096")
    exact.press("Enter")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(4096, 16))
    page.wait_for_function("() => location.search.includes('seq=4096')")
    assert query(page) == {"seq": "4096", "batch": "16", "stack": "mooncake"}

    page.go_back()  # the scenario before the prompt-length change
    expect(seq).to_have_attribute("aria-valuetext", "1,024")
    expect(batch).to_have_value("16")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(1024, 16))
    assert query(page) == {"batch": "16", "stack": "mooncake"}
    page.go_back()  # ...and the one before the batch change: the defaults
    expect(batch).to_have_value("1")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(1024, 1))
    assert query(page) == {}

    page.go_forward()
    expect(batch).to_have_value("16")
    expect(seq).to_have_attribute("aria-valuetext", "1,024")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(1024, 16))
    page.go_forward()
    expect(seq).to_have_attribute("aria-valuetext", "4,096")
    expect(exact).to_have_value("4096")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(4096, 16))
    assert query(page) == {"seq": "4096", "batch": "16", "stack": "mooncake"}
    # after Forward, a change still makes a new entry and keeps the restored scenario
    batch.fill("32")
    batch.press("Enter")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(4096, 32))
    page.go_back()
    expect(batch).to_have_value("16")
    expect(metric(page, "Whole cache")).to_have_text(whole_cache(4096, 16))
    expect(page.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "links-after-back")
