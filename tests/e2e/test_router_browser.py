"""A fresh server's very first request goes straight to a page, and still runs through the
router (ui.router): the sidebar and the link's scenario are there, and the first change made
in the sidebar sticks (the next run is a normal st.navigation run: its widgets must be the
same widgets as those of the first, legacy-mode run)."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from test_browser import (
    SHARED,
    expect_sidebar,
    metric_value,
    open_nav,
    predicted,
    title,
    wait_for_url,
)

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402


# each launcher once: plain `streamlit run app.py` (nothing imported before the first request)
# and `python -m ui.serve` (make run: the pages' modules loaded before it)
@pytest.mark.parametrize(
    ("fresh_app_url", "path", "heading"),
    [("streamlit", "/models", r"model"), ("serve", "/", r"overview")],
    indirect=["fresh_app_url"],
)
def test_first_request_straight_to_a_page_goes_through_the_router(
    page, fresh_app_url, wait_ready, screenshot, path, heading
):
    page.goto(f"{fresh_app_url}{path}?{urlencode(SHARED)}")
    wait_ready(page)
    expect(title(page, heading)).to_be_visible()
    expect_sidebar(page, SHARED)  # the shared controls, with the link's scenario
    expect(page.get_by_test_id("stTopNav")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, f"router-first-request{path.replace('/', '-')}")

    batch = page.get_by_test_id("stSidebar").get_by_label("Batch [requests]")
    batch.fill("16")
    batch.press("Enter")
    changed = {**SHARED, "batch": "16"}
    wait_for_url(page, path, changed)
    expect(batch).to_have_value("16")

    open_nav(page, "Overview")
    expect(metric_value(page, "Whole cache")).to_have_text(predicted(changed)[0])
    expect_sidebar(page, changed)
