"""The Capacity page in a real browser: opened from a link, a control redraws the numbers and the
charts and rewrites the link, and the plan's CSV downloads with the scenario link in it."""

from __future__ import annotations

import re
from io import BytesIO
from urllib.parse import urlencode

import pandas as pd
import pytest

from kvmodel import capacity as cap
from kvmodel.build import scenario_from_inputs
from kvview.capacity_words import gpus
from kvview.fmt import fmt_time

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402

from tests.e2e.test_browser import metric_value, wait_charts, wait_for_url  # noqa: E402

LINK = {
    "stack": "mooncake",
    "seq": "2048",
    "wl": "fixed",
    "rps": "30",
    "out": "300",
    "ttft_slo": "1500",
    "tpot_slo": "60",
    "price": "2",
}

# each chart's y values as sent: plain lists, or base64 typed arrays ({dtype, bdata}), which
# Array.from would read as empty (the GPUs chart's are)
CHART_DATA_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(
    gd => JSON.stringify((gd.data || []).map(t => t.y || [])))"""


def _plan(tpot_ms: float):
    sc = scenario_from_inputs({"seq": 2048})
    wl = cap.Workload.fixed(30.0, 2048, 300)
    slo = cap.Slo(ttft_s=1.5, tpot_s=tpot_ms / 1e3, ttft_percentile=90.0)
    return cap.plan(sc, wl, slo, gpu_price_per_hour=2.0)


def test_capacity_from_a_link_redraws_and_downloads(
    page, app_url, wait_ready, screenshot, tmp_path
):
    page.goto(f"{app_url}/capacity?{urlencode(LINK)}")
    wait_ready(page)
    expect(page.get_by_role("heading", level=1, name="Capacity")).to_be_visible()
    plan = _plan(60.0)
    expect(metric_value(page, "Disaggregated GPUs")).to_have_text(gpus(plan.disaggregated_gpus))
    expect(metric_value(page, "TPOT")).to_have_text(fmt_time(plan.tpot_s))
    wait_charts(page)
    wait_for_url(page, "/capacity", LINK)
    screenshot(page, "capacity-fixed-workload")
    before = page.evaluate(CHART_DATA_JS)

    tighter = _plan(25.0)  # a tighter TPOT never needs fewer decode GPUs (issue 15)
    tpot = page.get_by_role("spinbutton", name="TPOT target [ms]")
    tpot.fill("25")
    tpot.press("Enter")
    expect(metric_value(page, "TPOT")).to_have_text(fmt_time(tighter.tpot_s))
    expect(metric_value(page, "Disaggregated GPUs")).to_have_text(gpus(tighter.disaggregated_gpus))
    page.wait_for_function(
        f"(before) => ({CHART_DATA_JS})().join('|') !== before.join('|')", arg=before
    )
    wait_for_url(page, "/capacity", {**LINK, "tpot_slo": "25"})
    expect(page.get_by_test_id("stException")).to_have_count(0)

    with page.expect_download(timeout=60_000) as dl:
        page.locator(".st-key-dl_capacity-plan_csv").get_by_role("button").click()
    path = tmp_path / "plan.csv"
    dl.value.save_as(path)
    raw = path.read_bytes()
    table = pd.read_csv(BytesIO(raw)).set_index("quantity")  # pandas' defaults (issue 24)
    (link,) = set(table.pop("scenario link"))
    assert re.match(r"http://127\.0\.0\.1:\d+/capacity\?", link), link
    assert "tpot_slo=25" in link and "wl=fixed" in link
    assert float(table.loc["GPUs [GPUs]", "disaggregated"]) == tighter.disaggregated_gpus
    assert float(table.loc["GPUs [GPUs]", "colocated"]) == tighter.colocated_gpus
    assert float(table.loc["TPOT target [ms]", "disaggregated"]) == 25.0

    with page.expect_download(timeout=90_000) as dl:
        page.get_by_role("button", name="Download capacity plan (HTML)").click()
    report = tmp_path / "capacity-plan.html"
    dl.value.save_as(report)
    html = report.read_text()
    assert "<h1>Capacity plan</h1>" in html and gpus(tighter.disaggregated_gpus) in html
    assert re.search(r'href="http://127\.0\.0\.1:\d+/capacity\?[^"]*tpot_slo=25', html)
