"""Compare in the browser: a change added through the editor reaches the comparison CSV."""

import io
from urllib.parse import parse_qs, urlparse

import pandas as pd
from playwright.sync_api import expect


def test_a_change_added_in_the_ui_reaches_the_comparison_csv(
    page, app_url, wait_ready, screenshot, tmp_path
):
    page.goto(f"{app_url}/compare?seq=4096&stack=ideal&tp=8&cmp=comp:int8")  # not the default
    wait_ready(page)
    main = page.get_by_test_id("stMain")
    expect(main.get_by_text("4,096 tokens × 1").first).to_be_visible()
    expect(main.get_by_role("combobox", name="Add a change")).to_have_count(0)  # read-only
    main.get_by_text("Edit B–D").click()
    main.get_by_role("combobox", name="Add a change").first.click()
    page.get_by_role("option", name="Batch [requests]").click()
    batch = main.get_by_role("spinbutton", name="Batch [requests]")
    expect(batch).to_have_value("1")  # starts at A's batch
    batch.fill("8")
    batch.press("Enter")
    expect(main.get_by_text("4,096 tokens × 8")).to_be_visible()
    page.wait_for_function("() => decodeURIComponent(location.search).includes('batch:8')")
    expect(main.locator("td.cmp-worse").first).to_be_visible()  # 8 prompts: a longer TTFT
    screenshot(page, "compare-edited")

    with page.expect_download(timeout=60_000) as dl:
        main.get_by_role("button", name="Table as CSV").click()
    path = tmp_path / "comparison.csv"
    dl.value.save_as(path)
    text = path.read_text(encoding="utf-8")
    table = pd.read_csv(io.StringIO(text)).set_index("quantity")  # pandas' defaults
    (link,) = set(table.pop("scenario link"))
    query = parse_qs(urlparse(link).query)
    assert query["cmp"] == ["comp:int8~batch:8"] and query["seq"] == ["4096"]
    assert list(table.columns) == ["A (sidebar)", "B"]
    assert table.loc["Batch [requests]"].tolist() == ["1", "8"]
    assert table.loc["Prompt [tokens]"].tolist() == ["4096", "4096"]
    assert table.loc["Compression"].tolist() == ["none", "int8"]
    ttft = table.loc["TTFT [ms]"].astype(float)
    assert ttft["B"] > ttft["A (sidebar)"] > 0  # numbers, not "107.4 ms"
