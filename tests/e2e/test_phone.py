"""Charts on a phone (390×844) and a laptop (1280×800): no chart text runs into another.

Every text of every chart (title, subplot headings, legend entries, axis titles, tick and bar
labels, notes) is measured in the browser; no two boxes may overlap and none may leave the
chart.  On main, Mitigations' headings, legend and axis titles overlapped at 390 px (and its
headings crowded at 1280 px), and the tornado's input names ran into its bar labels.
"""

from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402

PHONE = {"width": 390, "height": 844}
LAPTOP = {"width": 1280, "height": 800}
SLACK_PX = 1.0  # boxes may touch, not overlap

# Per chart: the boxes of its visible texts and the chart's own box.
CHART_TEXTS_JS = r"""() => [...document.querySelectorAll('.js-plotly-plot')].map((plot) => {
  const texts = [];
  for (const el of plot.querySelectorAll('svg text')) {
    const text = el.textContent.trim();
    if (!text || !el.checkVisibility({opacityProperty: true, visibilityProperty: true})) continue;
    if (el.closest('.hoverlayer')) continue;
    const b = el.getBoundingClientRect();
    if (b.width < 1 || b.height < 1) continue;
    const g = el.closest('g[class]');
    const turned = /rotate\((-?[\d.]+)/.exec(el.getAttribute('transform') || '');
    texts.push({text: text.slice(0, 50), kind: g ? g.getAttribute('class') : '',
                angle: turned ? Number(turned[1]) : 0,
                l: b.left, t: b.top, r: b.right, b: b.bottom});
  }
  const c = plot.getBoundingClientRect();
  return {texts, box: {l: c.left, t: c.top, r: c.right, b: c.bottom}};
})"""


def _overlap(a, b) -> bool:
    return (
        min(a["r"], b["r"]) - max(a["l"], b["l"]) > SLACK_PX
        and min(a["b"], b["b"]) - max(a["t"], b["t"]) > SLACK_PX
    )


def _parallel_turned(a, b) -> bool:
    """Two tick labels turned by the same angle (Models' model names at -45°): their upright
    boxes overlap where their glyphs do not, so the pair is not compared."""
    ticks = "tick" in a["kind"] and "tick" in b["kind"]
    return ticks and a.get("angle", 0) != 0 and a.get("angle") == b.get("angle")


def clashes(chart) -> list[str]:
    """Pairs of overlapping texts and texts outside the chart, as readable lines."""
    texts, box = chart["texts"], chart["box"]
    out = [
        f"{a['text']!r} ({a['kind']}) overlaps {b['text']!r} ({b['kind']})"
        for i, a in enumerate(texts)
        for b in texts[i + 1 :]
        if _overlap(a, b) and not _parallel_turned(a, b)
    ]
    out += [
        f"{a['text']!r} ({a['kind']}) leaves the chart"
        for a in texts
        if a["l"] < box["l"] - SLACK_PX or a["r"] > box["r"] + SLACK_PX
    ]
    return out


TITLES_JS = """() => [...document.querySelectorAll('.js-plotly-plot .gtitle')]
  .map((t) => t.textContent).join('|')"""


def _open_tab(page, tab: str, wait_ready) -> None:
    """Open one of the page's tabs, or an expander whose label starts with ``tab`` (content
    drawn on opening: a rerun), and wait until the charts on the page are the ones it holds
    (their titles change), not the last tab's."""
    before = page.evaluate(TITLES_JS)
    tabs = page.get_by_role("tab", name=tab)
    if tabs.count():
        tabs.click()
        expect(tabs).to_have_attribute("aria-selected", "true")
    else:
        page.get_by_test_id("stExpander").locator("summary").filter(has_text=tab).click()
    page.wait_for_function(f"() => ({TITLES_JS})() !== {json.dumps(before)} && "
                           f"({TITLES_JS})() !== ''", timeout=30_000)  # fmt: skip
    wait_ready(page)


@pytest.mark.parametrize(
    ("path", "viewport", "charts"),
    [
        ("/plan#Sensitivity", PHONE, 1),
        ("/mitigations", LAPTOP, 1),
        ("/mitigations#Timeline of one option", LAPTOP, 1),
        ("/plan#Sensitivity", LAPTOP, 1),
        ("/capacity", LAPTOP, 1),
        ("/capacity#How the plan is made up", LAPTOP, 1),
        ("/compare", PHONE, 1),
        ("/compare#Change against A", PHONE, 1),
        ("/compare#TTFT", PHONE, 1),
    ],
    ids=[
        "plan-390",
        "mitigations-1280",
        "mitigations-timeline-1280",
        "plan-1280",
        "capacity-1280",
        "capacity-made-up-1280",
        "compare-390",
        "compare-change-390",
        "compare-ttft-390",
    ],  # fmt: skip
)
def test_chart_texts_do_not_overlap(browser, app_url, wait_ready, screenshot, path, viewport,
                                    charts):  # fmt: skip
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    path, _, tab = path.partition("#")  # a page's tab to open first (drawn only while open)
    try:
        page.goto(f"{app_url}{path}")
        wait_ready(page)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        if tab:
            _open_tab(page, tab, wait_ready)
            path = f"{path}-{tab.split()[0].lower()}"
        expect(page.locator(".js-plotly-plot .main-svg").nth(charts - 1)).to_be_attached()
        page.wait_for_timeout(1500)  # let plotly finish laying its text out
        found = page.evaluate(CHART_TEXTS_JS)
        assert len(found) >= charts
        problems = [p for chart in found for p in clashes(chart)]
        assert all(len(chart["texts"]) > 5 for chart in found), "chart text not measured"
        name = f"charts-{viewport['width']}{path.replace('/', '-').rstrip('-')}"
        screenshot(page, name)
        assert not problems, f"{path} at {viewport['width']} px:\n" + "\n".join(problems[:15])
    finally:
        context.close()


# Issue 24 item 5: at 390 px a legend beside the plot left Sequence's, Interconnects' and
# Models' plots 80-100 px wide.  Each plot area (plotly's drag rectangle of each subplot) must
# keep at least MIN_PLOT_PX, and Traffic's two boundaries must not overprint.
MIN_PLOT_PX = 250
PLOT_WIDTHS_JS = r"""() => [...document.querySelectorAll('.js-plotly-plot')].map((plot) => {
  const drags = [...plot.querySelectorAll('.draglayer .nsewdrag')];
  const legend = plot.querySelector('.legend');
  const title = plot.querySelector('.gtitle');
  const c = plot.getBoundingClientRect();
  const l = legend ? legend.getBoundingClientRect() : null;
  return {
    title: title ? title.textContent.slice(0, 60) : '',
    widths: drags.map((d) => d.getBoundingClientRect().width),
    legend: l ? l.width : 0,
    legendInside: !l || (l.top >= c.top - 1 && l.bottom <= c.bottom + 1),
  };
})"""


@pytest.mark.parametrize(
    ("path", "charts"),
    [
        ("/sequence?stack=mooncake", 1),
        ("/sequence?stack=mooncake#Per attention layout", 1),
        ("/interconnects?stack=mooncake", 1),
        ("/models?stack=mooncake", 1),
        ("/traffic?stack=mooncake", 1),
        ("/", 1),  # these on the default scenario, as the 390 px overlap cases they replace
        ("/capacity", 1),
        ("/capacity#How the plan is made up", 1),
        ("/mitigations", 1),
        ("/mitigations#Timeline of one option", 1),
    ],
    ids=["sequence", "sequence-layouts", "interconnects", "models", "traffic", "overview",
         "capacity", "capacity-made-up", "mitigations", "mitigations-timeline"],  # fmt: skip
)
def test_phone_charts_keep_their_width_and_texts_apart(browser, app_url, wait_ready, screenshot,
                                                       path, charts):  # fmt: skip
    """At 390 px: each plot keeps MIN_PLOT_PX with its legend inside its chart, and no chart
    text overlaps another (test_chart_texts_do_not_overlap's check, made here so each page
    opens once); on Traffic both boundary labels are drawn apart."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    path, _, tab = path.partition("#")  # a page's tab to open first (drawn only while open)
    try:
        page.goto(f"{app_url}{path}")
        wait_ready(page)
        expect(page.get_by_test_id("stException")).to_have_count(0)
        path = path.partition("?")[0]
        if tab:
            _open_tab(page, tab, wait_ready)
            path = f"{path}-{tab.split()[0].lower()}"
        expect(page.locator(".js-plotly-plot .main-svg").nth(charts - 1)).to_be_attached()
        page.wait_for_timeout(1500)  # let plotly finish laying out
        found = page.evaluate(PLOT_WIDTHS_JS)
        texts = page.evaluate(CHART_TEXTS_JS)
        screenshot(page, f"plot-width-390{path.replace('/', '-').rstrip('-')}")
        assert len(found) >= charts and len(texts) >= charts
        _assert_plots_wide(path, found)
        assert all(len(chart["texts"]) > 5 for chart in texts), "chart text not measured"
        problems = [p for chart in texts for p in clashes(chart)]
        assert not problems, f"{path} at 390 px:\n" + "\n".join(problems[:15])
        if path == "/traffic":
            _assert_boundaries_apart(texts[0])
    finally:
        context.close()


def _assert_plots_wide(path: str, found: list) -> None:
    narrow = [
        f"{c['title']!r}: plot {w:.0f} px (legend {c['legend']:.0f} px)"
        for c in found
        for w in c["widths"]
        if w < MIN_PLOT_PX
    ]
    # a chart of two panels (Capacity, Overview) has a plot width per panel
    assert all(c["widths"] for c in found), "no plot area measured"
    assert not narrow, f"{path} at 390 px:\n" + "\n".join(narrow)
    lost = [c["title"] for c in found if not c["legendInside"]]  # e.g. pushed off the top
    assert not lost, f"{path}: legend outside its chart: {lost}"


def _assert_boundaries_apart(chart: dict) -> None:
    """Traffic's two boundaries on a phone: both labels drawn, neither over the other."""
    texts = [t for t in chart["texts"] if t["text"].startswith(("min ", "critical "))]
    # both boundary labels are drawn (the critical length's value is the model's: it moved
    # from 2,577 to 2,468 tokens with issue 21's step model; tests/test_traffic_* pin it)
    shown = [t["text"] for t in texts]
    assert shown[0] == "min 128 tokens" and len(shown) == 2
    assert re.fullmatch(r"critical \d{1,3}(,\d{3})* tokens", shown[1]), shown
    assert not _overlap(*texts)
    assert not clashes({"texts": texts, "box": chart["box"]})
