"""Sharing and presenting in the browser: report and PNG downloads, a base-path deployment."""

import re
from urllib.parse import parse_qs, urlparse

from playwright.sync_api import expect

from tests.e2e.conftest import BASE_PATH


def _open_share_box(page):
    page.get_by_test_id("stSidebar").get_by_text("Share this scenario").click()


def test_report_download_is_standalone(page, app_url, wait_ready, tmp_path):
    page.goto(f"{app_url}/?model=llama-3-70b&link=100gbe&seq=1024")
    wait_ready(page)
    _open_share_box(page)
    with page.expect_download(timeout=60_000) as dl:
        page.get_by_role("button", name="Download report (HTML)").click()
    path = tmp_path / "report.html"
    dl.value.save_as(path)
    html = path.read_text()
    assert "335.5 MB" in html and "1,145 tokens" in html  # the article's scenario
    assert "https://cdn" not in html
    markup = re.sub(r"<script[^>]*>.*?</script>", "", html, flags=re.S)  # plotly.js source aside
    assert "<script src=" not in html
    for attr in re.findall(r'(?:src|href)="([^"]*)"', markup):
        assert not attr.startswith(("http://", "https://", "//")) or attr.startswith(app_url), attr


def test_chart_png_download(page, app_url, wait_ready, tmp_path):
    page.goto(f"{app_url}/")
    wait_ready(page)
    page.get_by_role("button", name="Export chart").first.click()
    with page.expect_download(timeout=90_000) as dl:
        page.get_by_role("button", name="PNG", exact=True).click()
    path = tmp_path / "chart.png"
    dl.value.save_as(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_served_under_a_path_prefix(page, base_path_url, wait_ready, screenshot):
    """Behind a reverse proxy: pages, the URL sync and the copied link keep the prefix."""
    page.goto(f"{base_path_url}/interconnects?seq=2048&link=ib-ndr&batch=0")  # batch clamped
    wait_ready(page)
    expect(page.get_by_role("heading", level=1, name="Interconnects")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    page.wait_for_function("() => location.search.includes('stack=')")  # the short link
    url = urlparse(page.url)
    assert url.path == f"/{BASE_PATH}/interconnects"
    assert parse_qs(url.query)["seq"] == ["2048"] and parse_qs(url.query)["link"] == ["ib-ndr"]
    _open_share_box(page)
    code = page.get_by_test_id("stSidebar").locator("code").first
    expect(code).to_contain_text(f"{base_path_url}/interconnects?")
    expect(code).to_contain_text("seq=2048")
    screenshot(page, "base-path-interconnects")


def test_compare_page_and_presentation_mode(page, app_url, wait_ready, screenshot):
    page.goto(f"{app_url}/compare?cmp=comp:int8;link:ib-ndr;link:nvlink4~lw:1")
    wait_ready(page)
    expect(page.get_by_role("heading", level=1, name="Compare")).to_be_visible()
    expect(page.get_by_text("Lowest TTFT:")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    screenshot(page, "compare")
    page.goto(f"{app_url}/?present=1")
    wait_ready(page)
    expect(page.get_by_role("button", name="Exit presentation mode")).to_be_visible()
    expect(page.get_by_test_id("stSidebar")).to_be_hidden()
    screenshot(page, "presentation-mode")
    page.get_by_role("button", name="Exit presentation mode").click()
    expect(page.get_by_test_id("stSidebar")).to_be_visible()
    page.wait_for_function("() => !location.search.includes('present=')")  # off: the default


def test_a_click_right_after_opening_a_link_keeps_its_scenario(browser, app_url, wait_ready):
    """A click that reaches the server before the browser has drawn the sidebar used to leave
    the sidebar at its widgets' defaults (first model, NVLink 3, batch 1), and the next
    interaction sent those back: the shared scenario was lost in about half the tries."""
    from tests.e2e.conftest import VIEWPORT

    for _ in range(4):
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        page.goto(f"{app_url}/plan?model=llama-2-7b&seq=4096&batch=4096")
        wait_ready(page)
        page.get_by_text("Options tried").click()  # at once, as a hurried reader would
        sidebar = page.get_by_test_id("stSidebar")
        expect(sidebar.get_by_role("combobox", name="Model")).to_have_value("Llama-2-7B · mha")
        batch = sidebar.get_by_role("spinbutton", name="Batch [requests]")
        expect(batch).to_have_value("4096")
        page.get_by_text("transfer ≤", exact=False).first.click()  # the next interaction
        wait_ready(page)
        expect(batch).to_have_value("4096")
        assert "model=llama-2-7b" in page.url and "batch=4096" in page.url
        context.close()


def test_a_page_control_rewrites_the_link_and_the_open_share_box(page, app_url, wait_ready):
    """Capacity's and Traffic's own controls rerun their page's fragment only (the sidebar and
    the router do not run): the fragment writes the link itself, and with the share box open
    the whole app reruns so that the box shows the new link too."""
    page.goto(f"{app_url}/traffic?minlen=200")
    wait_ready(page)
    _open_share_box(page)
    code = page.get_by_test_id("stSidebar").locator("code").first
    expect(code).to_contain_text("minlen=200")
    box = page.get_by_role("spinbutton", name=re.compile("too short", re.I))
    box.fill("333")
    box.press("Enter")
    page.wait_for_function("() => location.search.includes('minlen=333')")
    expect(code).to_contain_text("minlen=333")
    page.get_by_text("Load on the link").first.click()  # its box, drawn while open
    rate = page.get_by_role("spinbutton", name=re.compile("Arrival rate"))
    rate.fill("4.5")
    rate.press("Enter")
    page.wait_for_function("() => location.search.includes('rps=4.5')")
    expect(code).to_contain_text("rps=4.5")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    # Capacity's controls sit outside its results fragment; their callbacks rerun it alone
    page.goto(f"{app_url}/capacity?wl=fixed&rps=20")
    wait_ready(page)
    _open_share_box(page)
    ttft = page.get_by_role("spinbutton", name=re.compile("TTFT target"))
    ttft.fill("1234")
    ttft.press("Enter")
    page.wait_for_function("() => location.search.includes('ttft_slo=1234')")
    expect(page.get_by_test_id("stSidebar").locator("code").first).to_contain_text("ttft_slo=1234")
    expect(ttft).to_have_value("1234")  # as typed ("%g" since session 19): not redrawn
    expect(page.get_by_test_id("stException")).to_have_count(0)
