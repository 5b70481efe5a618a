"""Each chart is laid out once: the margins it is sent with (kvview.figures.margins) are what
plotly's automargin needs at 1280 × 800, so plotly draws it once instead of drawing, measuring
and drawing again (half of a chart's browser time on every input change; bench/README.md,
Session 28).  And they are tight: at most a few pixels more than plotly measured."""

from __future__ import annotations

import pytest

# Per chart: the margins sent, the margins drawn, and what the axes and a legend under the
# plot asked for (plotly's own pushes, measured from the drawn text).
MARGINS_JS = """() => Array.from(document.querySelectorAll('.js-plotly-plot')).map((gd) => {
  const fl = gd._fullLayout, m = fl.margin, s = fl._size;
  let needL = 0, needB = 0;
  for (const [key, p] of Object.entries(fl._pushmargin || {})) {
    if (!key.endsWith('.automargin')) continue;  // axes; a legend under the plot: below
    needL = Math.max(needL, p.l.size);
    needB = Math.max(needB, p.b.size);
  }
  needB += ((fl._reservedMargin || {}).legend || {}).b || 0;
  return {title: ((gd.layout.title || {}).text || '').replace(/<[^>]+>/g, ''),
          sent: [m.l, m.b], drawn: [Math.round(s.l), Math.round(s.b)],
          need: [Math.ceil(needL), Math.ceil(needB)]};
})"""

# Each page's charts as a link opens it (tabs: the first).  Measured's second chart (the
# transfer gaps' histogram) asks for a few more pixels on the right for its last tick label:
# only the left and bottom margins are estimated.
PAGES = ["/", "/interconnects", "/sequence", "/mitigations", "/compare", "/traffic",
         "/capacity", "/measure", "/models"]  # fmt: skip
SLACK_PX = 6  # at most this much wider than plotly measured (the estimate's own slack: 2-3 px)


@pytest.mark.parametrize("path", PAGES)
def test_charts_drawn_once_with_tight_margins(page, app_url, wait_ready, path):
    page.goto(f"{app_url}{path}")
    wait_ready(page)
    page.locator(".js-plotly-plot .main-svg").first.wait_for()
    page.wait_for_timeout(500)
    charts = page.evaluate(MARGINS_JS)
    assert charts, f"no chart on {path}"
    for chart in charts:
        left, bottom = chart["sent"]
        assert chart["drawn"] == [left, bottom], (
            f"{path} '{chart['title']}': sent l/b {chart['sent']}, plotly drew with "
            f"{chart['drawn']} (it measured {chart['need']}): the chart was laid out twice"
        )
        need_l, need_b = chart["need"]
        assert left - need_l <= SLACK_PX and bottom - need_b <= SLACK_PX, (
            f"{path} '{chart['title']}': margins l/b {chart['sent']} where plotly needs "
            f"{chart['need']}: wasted room"
        )
