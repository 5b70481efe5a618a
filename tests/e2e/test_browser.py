"""The app in a real browser: shared links, page switches, controls, tampered links, no egress.

Pages other than Overview are still being written, so on them only the title heading and the
sidebar/URL scenario are checked.  Overview's metrics are checked against kvmodel directly.
"""

from __future__ import annotations

import re
import time
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvview.fmt import fmt_bytes, fmt_ms

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402

from tests.e2e.conftest import assert_charts_laid_out_once  # noqa: E402

SHARED = {
    "model": "llama-3.1-8b",
    "seq": "4096",
    "batch": "8",
    "link": "ib-ndr",
    "comp": "int8",
    "step": "25",
}
# (path, top-navigation link text, title heading pattern); stubs may title in lower case.
PAGES = [
    ("/", "Overview", r"overview"),
    ("/interconnects", "Interconnects", r"interconnect"),
    ("/sequence", "Sequence", r"sequence"),
    ("/mitigations", "Mitigations", r"mitigation"),
    ("/plan", "Plan", r"plan"),
    ("/compare", "Compare", r"compare"),
    ("/traffic", "Traffic", r"traffic"),
    ("/capacity", "Capacity", r"capacity"),
    ("/measure", "Measured", r"measured"),
    ("/recipes", "Recipes", r"recipes"),
    ("/models", "Models", r"model"),
]
URL_TIMEOUT_S = 20


def predicted(values: dict) -> tuple[str, str]:
    """What Overview should show for these URL values: (whole cache, exposed transfer)."""
    sc = build_scenario(
        model=values["model"],
        link=values["link"],
        seq_len=int(values["seq"]),
        batch=int(values["batch"]),
        compression=values["comp"],
        decode_step_ms=float(values["step"]),
    )
    ev = evaluate(sc)
    return fmt_bytes(ev.kv_total_bytes), fmt_ms(ev.exposed_s, 2)


def query(page) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlparse(page.url).query).items()}


def wait_for_url(page, path: str, subset: dict[str, str]) -> dict[str, str]:
    """Poll until the page's path is ``path`` and its query holds ``subset``; return the query."""
    deadline = time.monotonic() + URL_TIMEOUT_S
    while True:
        q = query(page)
        current = urlparse(page.url).path or "/"
        if current == path and all(q.get(k) == v for k, v in subset.items()):
            return q
        if time.monotonic() > deadline:
            got = {k: q.get(k) for k in subset}
            raise AssertionError(
                f"URL {page.url!r}: path {current!r} ≠ {path!r} or {got} ≠ {subset}"
            )
        page.wait_for_timeout(100)


def metric_value(page, label: str):
    metric = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True))
    return metric.get_by_test_id("stMetricValue")


def title(page, pattern: str):
    return page.get_by_role("heading", level=1, name=re.compile(pattern, re.I))


def expect_sidebar(page, values: dict[str, str]) -> None:
    """The sidebar widgets show the scenario of ``values`` (the shared-link subset)."""
    sidebar = page.get_by_test_id("stSidebar")
    names = {"llama-3.1-8b": "Llama-3.1-8B"}
    model = sidebar.get_by_role("combobox", name="Model")
    expect(model).to_have_value(re.compile(re.escape(names[values["model"]])))
    expect(sidebar.get_by_label("Batch [requests]")).to_have_value(values["batch"])
    seq = sidebar.get_by_role("slider", name="Sequence length [tokens]")
    expect(seq).to_have_attribute("aria-valuetext", f"{int(values['seq']):,}")
    expect(sidebar.get_by_role("combobox", name="Interconnect")).to_have_value(
        re.compile(r"InfiniBand NDR"))  # fmt: skip
    expect(sidebar.get_by_role("combobox", name="Transfer compression")).to_have_value(
        values["comp"])  # fmt: skip


def wait_charts(page) -> None:
    """Plotly charts drawn (for screenshots)."""
    charts = page.get_by_test_id("stPlotlyChart")
    for i in range(charts.count()):
        expect(charts.nth(i).locator(".main-svg").first).to_be_visible()


def open_nav(page, text: str) -> None:
    """Click a top-navigation link; fall back to the overflow popover if it is collapsed."""
    nav = page.get_by_test_id("stTopNav")
    link = nav.get_by_role("link", name=text, exact=True)
    if not link.is_visible():  # collapsed into the "N more" menu at this width
        nav.get_by_text(re.compile(r"^\d+ more$")).click()
        body = page.get_by_test_id("stTopNavPopoverBody")
        link = body.get_by_test_id("stTopNavDropdownLink").filter(
            has_text=re.compile(rf"^\W*{re.escape(text)}$")
        )
        if not link.count():
            link = body.get_by_text(text, exact=True)
    link.first.click()


@pytest.mark.parametrize(("path", "nav", "heading"), PAGES, ids=[p[1] for p in PAGES])
def test_shared_link_on_each_page(page, app_url, wait_ready, screenshot, path, nav, heading):
    page.goto(f"{app_url}{path}?{urlencode(SHARED)}")
    wait_ready(page)
    expect(title(page, heading)).to_be_visible()
    wait_for_url(page, path, SHARED)
    expect_sidebar(page, SHARED)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    if path == "/":
        whole, exposed = predicted(SHARED)
        expect(metric_value(page, "Whole cache")).to_have_text(whole)
        expect(metric_value(page, "Exposed transfer")).to_have_text(exposed)
    wait_charts(page)
    page.wait_for_timeout(300)  # plotly's layout done (a second layout would show here)
    assert_charts_laid_out_once(page, path)
    shot = screenshot(page, nav.lower().replace(" ", "-"))
    assert shot.stat().st_size > 0


def test_scenario_survives_top_navigation(page, app_url, wait_ready):
    """The known trap: a page switch must not lose the scenario (URL or sidebar)."""
    page.goto(f"{app_url}/?{urlencode(SHARED)}")
    wait_ready(page)
    expect(metric_value(page, "Whole cache")).to_be_visible()
    for path, nav, heading in PAGES[1:] + PAGES[:1]:
        open_nav(page, nav)
        expect(title(page, heading)).to_be_visible()
        wait_for_url(page, path, SHARED)
        expect_sidebar(page, SHARED)
        expect(page.get_by_test_id("stException")).to_have_count(0)
    whole, exposed = predicted(SHARED)
    expect(metric_value(page, "Whole cache")).to_have_text(whole)
    expect(metric_value(page, "Exposed transfer")).to_have_text(exposed)


def test_controls_update_url_and_metrics(page, app_url, wait_ready):
    page.goto(f"{app_url}/?{urlencode(SHARED)}")
    wait_ready(page)
    whole, _ = predicted(SHARED)
    expect(metric_value(page, "Whole cache")).to_have_text(whole)

    batch = page.get_by_test_id("stSidebar").get_by_label("Batch [requests]")
    batch.fill("16")
    batch.press("Enter")
    changed = {**SHARED, "batch": "16"}
    new_whole, new_exposed = predicted(changed)
    assert new_whole != whole
    expect(metric_value(page, "Whole cache")).to_have_text(new_whole)
    expect(metric_value(page, "Exposed transfer")).to_have_text(new_exposed)
    wait_for_url(page, "/", changed)

    seq = page.get_by_test_id("stSidebar").get_by_role("slider", name="Sequence length [tokens]")
    seq.focus()
    seq.press("ArrowRight")
    # The next log-spaced step after 4,096 is 6,144 (1.5 × 4,096).
    expect(seq).to_have_attribute("aria-valuetext", "6,144")
    changed = {**changed, "seq": "6144"}
    expect(metric_value(page, "Whole cache")).to_have_text(predicted(changed)[0])
    wait_for_url(page, "/", changed)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_tampered_link_warns_and_still_computes(page, app_url, wait_ready):
    page.goto(f"{app_url}/?seq=abc&model=nope&link=zzz&tp=3")
    wait_ready(page)
    expect(page.get_by_test_id("stAlert").filter(has_text="adjusted")).to_be_visible()
    expect(metric_value(page, "Whole cache")).to_be_visible()
    expect(metric_value(page, "Whole cache")).not_to_have_text("–")
    expect(page.get_by_test_id("stException")).to_have_count(0)
    q = wait_for_url(page, "/", {"tp": "1"})
    assert q.get("model") != "nope" and q.get("link") != "zzz" and q.get("seq") != "abc"


def test_no_outbound_requests(page, app_url, wait_ready, outside_requests):
    """Loading the app and visiting every page stays on this machine (no CDN, no telemetry)."""
    page.goto(f"{app_url}/?{urlencode(SHARED)}")
    wait_ready(page)
    expect(metric_value(page, "Whole cache")).to_be_visible()
    wait_charts(page)
    for _, nav, heading in PAGES[1:]:
        open_nav(page, nav)
        expect(title(page, heading)).to_be_visible()
        wait_ready(page)
        wait_charts(page)
    page.wait_for_timeout(500)
    hosts = {urlparse(u).hostname for u in page.requested}
    assert "127.0.0.1" in hosts, f"no request to the app was recorded: {page.requested[:5]}"
    outside = outside_requests(page.requested)
    assert not outside, f"the app made outbound requests: {sorted(set(outside))}"


def test_traffic_upload_in_the_browser(page, app_url, wait_ready, screenshot, tmp_path):
    """Upload a trace on the Traffic page: the numbers are kvmodel's; bad rows are reported."""
    from types import SimpleNamespace

    import numpy as np

    from kvmodel import traffic as tr
    from kvmodel.build import scenario_from_inputs

    lengths = [50, 300, 900, 1100, 1200, 4000, 9000]
    csv = tmp_path / "my_trace.csv"
    csv.write_text("timestamp,prompt_tokens,completion_tokens\n"
                   + "".join(f"{i * 0.5},{n},20\n" for i, n in enumerate(lengths))
                   + "9,-5,1\n")  # fmt: skip
    page.goto(f"{app_url}/traffic")
    wait_ready(page)
    page.get_by_text("Upload", exact=True).click()
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(csv))
    expect(metric_value(page, "Requests")).to_have_text("7")
    req = SimpleNamespace(prompt_tokens=np.array(lengths), weights=None, cached_tokens=None,
                          arrival_s=None)  # fmt: skip
    # the app's own defaults (no link): a measured stack, an estimated step, TP 8
    app_default = scenario_from_inputs({})
    reg = tr.regions(tr.per_request_scenario(app_default), tr.mix_from_requests(req))
    expect(metric_value(page, "Gain")).to_have_text(f"{reg.fraction_gain:.1%}")
    expect(page.get_by_text(re.compile(r"Skipped 1 row"))).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    wait_charts(page)
    screenshot(page, "traffic-upload")
    # A control changed after the upload reruns on the parsed file (this once raised
    # CacheReplayClosureError): 50, 300 and 900 of the 7 lengths are below 1,000 tokens.
    minlen = page.get_by_role("spinbutton", name="Too short below [tokens]")
    minlen.fill("1000")
    minlen.press("Enter")
    expect(metric_value(page, "Too short")).to_have_text("42.9%")
    expect(metric_value(page, "Requests")).to_have_text("7")
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_measure_upload_in_the_browser(page, app_url, wait_ready, screenshot):
    """Upload perftest output on the Measured page: the fitted bandwidth is kvmodel's."""
    from pathlib import Path

    from kvmodel.calibrate import fit_from_bandwidth_points
    from kvmodel.measure import load_measurement
    from kvview.fmt import fmt_bandwidth

    sample = Path(__file__).resolve().parents[2] / "data" / "measurements" / "ib_write_bw.txt"
    fit = fit_from_bandwidth_points(load_measurement(sample).data.points)
    page.goto(f"{app_url}/measure?link=ib-ndr")
    wait_ready(page)
    expect(title(page, r"measured")).to_be_visible()
    page.get_by_text("Upload", exact=True).click()
    page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(sample))
    expect(metric_value(page, "Fitted bandwidth")).to_have_text(
        fmt_bandwidth(fit.bandwidth_bytes_per_s))  # fmt: skip
    expect(page.get_by_text(re.compile(r"Read ib_write_bw\.txt as perftest"))).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
    wait_charts(page)
    screenshot(page, "measure-upload")


def test_no_outbound_requests_with_exports(browser, app_url, wait_ready, tmp_path):
    """Exports included (issue 14): every request the browser makes leaves nothing outside
    (anything not on this machine is aborted and recorded), and the files downloaded (chart
    HTML, PNG, SVG; the report; a CSV table) point at nothing outside either."""
    from tests.e2e.conftest import VIEWPORT

    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    blocked: list[str] = []

    def guard(route):
        host = urlparse(route.request.url).hostname
        if urlparse(route.request.url).scheme in ("data", "blob") or host in (
            "127.0.0.1",
            "localhost",
        ):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    page = context.new_page()
    sockets: list[str] = []
    page.on("websocket", lambda ws: sockets.append(ws.url))
    try:
        page.goto(f"{app_url}/?{urlencode(SHARED)}")
        wait_ready(page)
        expect(metric_value(page, "Whole cache")).to_be_visible()
        files = {}
        page.get_by_role("button", name="Export chart").first.click()
        for name in ("Interactive HTML (opens offline)", "PNG", "SVG"):
            with page.expect_download(timeout=90_000) as dl:
                page.get_by_role("button", name=name, exact=True).click()
            files[name] = tmp_path / dl.value.suggested_filename
            dl.value.save_as(files[name])
        page.keyboard.press("Escape")
        page.get_by_test_id("stSidebar").get_by_text("Share this scenario").click()
        with page.expect_download(timeout=90_000) as dl:
            page.get_by_role("button", name="Download report (HTML)").click()
        files["report"] = tmp_path / "report.html"
        dl.value.save_as(files["report"])
        open_nav(page, "Models")
        expect(title(page, r"model")).to_be_visible()
        with page.expect_download(timeout=90_000) as dl:
            # the page's own CSV button (a data frame's toolbar also says "Download as CSV")
            page.get_by_role("button", name=re.compile(r"Table as CSV")).first.click()
        files["csv"] = tmp_path / "table.csv"
        dl.value.save_as(files["csv"])
        page.wait_for_timeout(500)
    finally:
        context.close()
    assert not blocked, f"outbound requests from the browser: {sorted(set(blocked))}"
    assert all(urlparse(u).hostname == "127.0.0.1" for u in sockets), sockets
    assert files["PNG"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = files["SVG"].read_text()
    assert svg.lstrip().startswith("<svg") and "MathJax" not in svg
    # xmlns values are names, not requests; a src, <link href> or url() to the network is one
    for name in ("Interactive HTML (opens offline)", "SVG", "report"):
        text = files[name].read_text()
        text = re.sub(r"<script[^>]*>.*?</script>", "", text, flags=re.S)  # plotly.js itself
        text = re.sub(r"<a\s[^>]*>", "", text)  # a link the reader may follow is no request
        fetched = re.findall(r"""(?:src|href)\s*=\s*["']?((?:https?:)?//[^"'\s>]+)""", text)
        fetched += re.findall(r"url\(\s*['\"]?((?:https?:)?//[^)'\"]+)", text)
        assert not fetched, f"{name} would fetch {fetched[:3]}"
    urls = re.findall(r"https?://[^\s,\"]+", files["csv"].read_text())
    assert all(u.startswith(app_url) for u in urls), urls  # the scenario's own link only


def test_kaleido_page_loads_nothing_from_the_network(chromium_path, monkeypatch):
    """The PNG/SVG engine (kaleido, server side) renders a page of its own in a Chromium the
    browser above never sees.  That page must load plotly.js from the installed package and no
    MathJax: by default kaleido 1.x adds MathJax from cdnjs (issue 14 saw it in DNS)."""
    import kaleido
    import plotly.graph_objects as go

    from kvview import export

    pages: list[str] = []
    original = kaleido.PageGenerator.generate_index

    def spy(self):
        pages.append(original(self))
        return pages[-1]

    monkeypatch.setattr(kaleido.PageGenerator, "generate_index", spy)
    fig = go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"title": "$x^2$ stays text"})
    assert export.figure_svg(fig).lstrip().startswith(b"<svg")
    assert export.figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"
    assert pages, "kaleido generated no page (a new kaleido version?)"
    for html in pages:
        sources = re.findall(r'<script src="([^"]+)"', html)
        assert sources and all(s.startswith("file://") for s in sources), sources
        assert "mathjax" not in html.lower()
