"""Links in a real browser: short links, Back/Forward between scenarios, CSV handouts."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlparse

import pytest

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvview.fmt import fmt_bytes

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


def test_an_opened_link_is_kept_and_back_leaves_it(page, app_url, wait_ready):
    """A link that already means its scenario (here a version-1 link) is not rewritten on
    opening: that would add a history entry showing the same scenario."""
    v1 = "model=llama-3.1-8b&seq=4096&batch=8&link=ib-ndr"
    page.goto(f"{app_url}/?{v1}")
    wait_ready(page)
    batch = page.get_by_test_id("stSidebar").get_by_label("Batch [requests]")
    expect(batch).to_have_value("8")
    page.wait_for_timeout(1000)
    assert urlparse(page.url).query == v1
    entries = page.evaluate("history.length")
    batch.fill("16")
    batch.press("Enter")
    page.wait_for_function("() => location.search.includes('batch=16')")
    assert page.evaluate("history.length") == entries + 1  # one change, one entry
    assert query(page)["stack"] == "ideal" and query(page)["tp"] == "1"  # v1's meaning kept
    page.go_back()
    expect(batch).to_have_value("8")
    assert urlparse(page.url).query == v1
    page.go_back()
    assert page.url == "about:blank"  # the next Back leaves the app


SCENARIO = "model=deepseek-v3&seq=8192&batch=16&link=ib-ndr&tp=8&stack=mooncake"
EXPECTED = {"model": "deepseek-v3", "seq": 8192, "batch": 16, "link": "ib-ndr", "tp": 8,
            "stack": "mooncake"}  # fmt: skip
# (page path, extra query, CSV file stem, the label column, a number column, what opens it)
HANDOUTS = [
    ("/interconnects", "", "link-by-batch", "interconnect", "batch 8 [ms]", None),
    ("/mitigations", "", "mitigations", "option", "TTFT [ms]", "Options as a table"),
    ("/plan", "", "sensitivity", "input", "TTFT spread [ms]", "Sensitivity"),
    ("/plan", "", "options-tried", "option (cheapest first)", "exposed transfer [ms]",
     "Options tried"),
    ("/traffic", "", "traffic-options", "interconnect", "requests that gain [%]",
     "What moves the share that gains"),
    ("/models", "", "models", "model", "KV at the prompt [GB]", None),
    ("/measure", "", "model-vs-measured", "quantity", "model", None),
    ("/measure", "&meas=nsys_cuda_gpu_kern_sum.csv", "nsys-vs-model", "quantity",
     "measured [ms]", None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("path", "extra", "stem", "label", "number", "opener"), HANDOUTS, ids=[h[2] for h in HANDOUTS]
)
def test_csv_handouts_carry_the_scenario(
    page, app_url, wait_ready, tmp_path, path, extra, stem, label, number, opener
):
    """Each page's CSV for a non-default scenario, read by pandas with its defaults: a label
    column, units in the headers, numbers as numbers, and a last column holding a link that
    reproduces the scenario."""
    import io

    import pandas as pd

    from kvview import params as P

    page.goto(f"{app_url}{path}?{SCENARIO}{extra}")
    wait_ready(page)
    if opener:
        page.get_by_text(opener).first.click()
        wait_ready(page)
    button = page.locator(f".st-key-dl_{stem}_csv").get_by_role("button", name="Table as CSV")
    expect(button).to_be_visible(timeout=60_000)  # an opener's content comes with a rerun
    with page.expect_download(timeout=60_000) as dl:
        button.click()
    assert dl.value.suggested_filename == f"{stem}.csv"
    path_ = tmp_path / f"{stem}.csv"
    dl.value.save_as(path_)
    text = path_.read_text(encoding="utf-8")
    df = pd.read_csv(io.StringIO(text))  # pandas' defaults read it (issue 24)
    (link,) = set(df.pop("scenario link"))  # the last column, the same on every row
    assert link.startswith(f"{app_url}{path}?"), link
    values, warnings, _ = P.parse_query(dict(parse_qsl(urlparse(link).query)))
    assert warnings == []
    assert {k: values[k] for k in EXPECTED} == EXPECTED  # the link reproduces the scenario
    if extra:
        assert values["meas"] == "nsys_cuda_gpu_kern_sum.csv"
    assert df.columns[0] == label
    assert df[number].dtype.kind in "fi", df[number].tolist()  # numbers, not "107.38 ms"
    assert df[label].notna().all()
    numeric = [c for c in df.columns if df[c].dtype.kind in "fi"]
    if stem == "model-vs-measured":  # its rows differ in unit: the unit ends each row's label
        assert all(q.endswith("]") for q in df[label]), df[label].tolist()
    else:  # the unit in the header (counts of layers and heads have none)
        assert all("[" in c or "÷" in c or c in ("layers", "KV heads") for c in numeric), numeric
    if stem == "link-by-batch":  # the numbers are kvmodel's for the link's scenario
        from kvmodel.sweeps import link_batch_table

        table = link_batch_table(P.scenario_from_values(values), ["ib-ndr"], [8])
        row = df[df["link id"] == "ib-ndr"]
        assert abs(row[number].iloc[0] / (table["batch 8"].iloc[0] * 1e3) - 1) < 5e-4
