"""Downloads: CSV formula-injection neutralised, PNG/SVG via kaleido, offline HTML."""

import csv
import html
import io
import re

import pandas as pd
import plotly.graph_objects as go
import plotly.offline
import pytest

from kvview.export import (
    ExportUnavailable,
    csv_bytes,
    figure_html,
    figure_png,
    figure_svg,
    for_export,
)


def read(data: bytes):
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def test_csv_neutralises_formulas():
    df = pd.DataFrame(
        {
            "text": ["=SUM(1)", "+1", "-x", "@a", "\tTAB", "\rCR", "plain", "a=b"],
            "number": [-1.5, -2.0, 3.0, 0.0, 1e9, -7.25, 2.0, 1.0],
            "count": [-3, 1, 2, 3, 4, 5, 6, 7],
        }
    )
    rows = read(csv_bytes(df))
    assert rows[0] == ["text", "number", "count"]
    texts = [r[0] for r in rows[1:]]
    assert texts == ["'=SUM(1)", "'+1", "'-x", "'@a", "'\tTAB", "'\rCR", "plain", "a=b"]
    # negative numbers stay numbers: no quote, parse back as floats/ints
    assert rows[1][1] == "-1.5" and float(rows[1][1]) == -1.5
    assert rows[1][2] == "-3" and int(rows[1][2]) == -3
    back = pd.read_csv(io.BytesIO(csv_bytes(df)))
    assert back["number"].dtype.kind == "f" and back["count"].dtype.kind == "i"
    assert back["number"].iloc[0] == -1.5


def test_csv_headers_and_objects():
    df = pd.DataFrame({"=HYPERLINK()": ["x"], "mixed": pd.Series([-4], dtype=object)})
    rows = read(csv_bytes(df))
    assert rows[0] == ["'=HYPERLINK()", "mixed"]
    assert rows[1] == ["x", "-4"]  # an int in an object column is still a number
    with pytest.raises(ValueError, match="df"):
        csv_bytes([1, 2])


def fig():
    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2]), layout={"title": {"text": "T <&>"}})


def _static_or_skip(fn, figure=None):
    try:
        return fn(fig() if figure is None else figure)
    except ExportUnavailable as exc:
        pytest.skip(f"no Chromium/Chrome for kaleido here: {exc}")


@pytest.mark.slow  # kaleido drives chromium: ~4 s per image
def test_png():
    data = _static_or_skip(figure_png)
    assert data.startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.slow  # kaleido drives chromium: ~4 s per image
def test_svg():
    data = _static_or_skip(figure_svg)
    assert b"<svg" in data


def test_static_export_without_a_browser(monkeypatch):
    # choreographer takes BROWSER_PATH first: a missing file means no browser to drive
    monkeypatch.setenv("BROWSER_PATH", "/nonexistent/chromium")
    with pytest.raises(ExportUnavailable, match="Chromium/Chrome browser"):
        figure_png(fig())
    with pytest.raises(ValueError, match="fig"):
        figure_svg("not a figure")


def test_html_is_standalone_and_offline():
    html = figure_html(fig())
    js = plotly.offline.get_plotlyjs()
    assert len(html) > len(js) * 0.99
    assert js[:2000] in html  # the plotly.js source itself, inlined
    assert "https://cdn" not in html
    assert "<script src" not in html
    assert "<title>T &lt;&amp;&gt;</title>" in html
    assert "Plotly.newPlot" in html


# --------------------------------------------------------------------------- exported layout

SVG_BOX = re.compile(
    r'<g class="cursor-pointer" transform="translate\(([-\d.]+),([-\d.]+)\)">'
    r'<rect class="bg" x="[-\d.]+" y="[-\d.]+" width="([\d.]+)" height="([\d.]+)"'
    r".*?>([^<]*)</text>"
)
YTICK = re.compile(
    r'<g class="y\d*tick"><text text-anchor="end" x="([-\d.]+)"[^>]*font-size: ([\d.]+)px[^>]*>'
    r"([^<]*)</text>"
)


def _panel_figures():
    from kvmodel.build import build_scenario
    from kvmodel.sensitivity import tornado
    from kvmodel.sweeps import mitigation_options, mitigation_table
    from kvview import figures
    from kvview.fmt import in_ms

    sc = build_scenario(model="deepseek-v3", layerwise=True)
    table = in_ms(mitigation_table(sc, mitigation_options(sc)))
    return {
        "mitigations": figures.figure_mitigation_panels(table, step_ms=30.0),
        "tornado": figures.figure_tornado_panels(tornado(sc)),
    }


@pytest.mark.slow  # kaleido drives chromium: ~5 s per image
@pytest.mark.parametrize("name", ["mitigations", "tornado"])
def test_exported_chart_fits_every_label(name):
    fig = _panel_figures()[name]
    svg = html.unescape(_static_or_skip(figure_svg, fig).decode("utf-8"))
    width = float(re.search(r'<svg[^>]* width="([\d.]+)"', svg).group(1))
    # annotations (panel headings, line labels): plotly measured each text's box in the browser
    boxes = [
        (float(x), float(y), float(w), float(h), text) for x, y, w, h, text in SVG_BOX.findall(svg)
    ]
    assert len(boxes) >= 2
    for x, _, w, _, text in boxes:
        assert 0 <= x and x + w <= width + 1, f"{text!r} runs off the image ({x}+{w} > {width})"
    headings = [b for b in boxes if b[4].startswith("What ")]
    for i, a in enumerate(headings):
        for b in headings[i + 1 :]:
            same_row = a[1] < b[1] + b[3] and b[1] < a[1] + a[3]
            apart = a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0]
            assert apart or not same_row, f"{a[4]!r} overlaps {b[4]!r}"
    # every category label is drawn whole: its left edge (at least 0.4 em per character, about
    # the average width of these lower-case labels in Arial and DejaVu Sans)
    # stays inside the image
    ticks = YTICK.findall(svg)
    categories = {str(c) for t in fig.data if t.orientation == "h" for c in t.y}
    # bar charts name their categories above the bars (annotations, checked above) or by ticks
    assert categories <= {text for _, _, text in ticks} | {b[4] for b in boxes}
    for x, size, text in ticks:
        assert float(x) - 0.4 * float(size) * len(text) >= 0, f"{text!r} is cut off"


def test_export_layout_fits_labels():
    fig = _panel_figures()["mitigations"]
    out = for_export(fig, width=900)
    assert out.layout.width == 900 and fig.layout.width is None  # a copy
    for key in ("xaxis", "xaxis2", "yaxis"):
        axis = out.layout[key]
        assert axis.automargin is True and axis.title.standoff > 0
    m = out.layout.margin
    assert (m.l, m.r, m.b) >= (20, 30, 30) and m.t >= fig.layout.margin.t
    assert out.layout.font.family and out.layout.font.size >= 12
    assert '"standoff":10' in figure_html(fig).replace(" ", "")


# --------------------------------------------------------------------------- no network


def test_static_export_asks_kaleido_for_no_mathjax(monkeypatch):
    import kaleido

    calls = []

    def fake(fig, *args, **kwargs):
        calls.append(kwargs)
        return b"<svg></svg>"

    monkeypatch.setattr(kaleido, "calc_fig_sync", fake)
    figure_svg(fig())
    figure_png(fig())
    assert len(calls) == 2
    for kw in calls:
        assert kw["kopts"]["mathjax"] is False
        assert kw.get("topojson") is None
        # the page kaleido loads into chromium then holds no address on the network
        page = kaleido.PageGenerator(**kw["kopts"]).generate_index()
        assert "mathjax" not in page.lower()
        assert not re.search(r"https?://", page), page


# Issue 24 item 5: an exported chart names its scenario in a subtitle under the title.
SUB = (
    "Llama-3.1-70B · 1,024 tokens × 1 · 100 GbE (RoCE) · Mooncake Transfer Engine (vLLM "
    "MooncakeConnector) stack · TP 8 → 8 · tp attention · fp16 KV · compression none"
)


def test_the_subtitle_goes_under_the_title_on_lines_that_fit():
    plain = for_export(fig(), width=1100)
    out = for_export(fig(), width=1100, subtitle=SUB)
    lines = out.layout.title.subtitle.text.split("<br>")
    assert len(lines) == 2 and all(len(x) * 6.5 <= 1100 - 50 for x in lines)  # ~6.5 px a char
    assert " · ".join(lines) == SUB  # nothing to escape in it
    assert out.layout.margin.t == plain.layout.margin.t + 2 * 22  # room for both lines
    assert out.layout.title.yref == "container" and out.layout.title.y == 1
    phone = for_export(fig(), width=390, subtitle=SUB).layout.title.subtitle.text.split("<br>")
    # a line holds one part at least (a part is never cut), more only when they fit
    assert len(phone) == 3 and all(len(x) * 6.5 <= 390 - 50 or " · " not in x for x in phone)


def test_html_export_carries_the_subtitle():
    assert "Mooncake Transfer Engine" in figure_html(fig(), subtitle=SUB)


@pytest.mark.slow  # kaleido drives chromium: ~4 s per image
def test_svg_shows_the_subtitle():
    data = _static_or_skip(lambda f: figure_svg(f, subtitle=SUB))
    assert b"TP 8 \xe2\x86\x92 8" in data and b"Llama-3.1-70B" in data


def test_export_menu_captures_the_scenario_subtitle(monkeypatch):
    from kvmodel.build import scenario_from_inputs
    from kvview.words import scenario_line
    from ui import exports_ui

    got = {}

    class Menu:
        open = True

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

    sc = scenario_from_inputs({})
    monkeypatch.setattr("ui.urlstate.scenario", lambda: sc)
    monkeypatch.setattr(exports_ui.st, "popover", lambda *a, **k: Menu())
    monkeypatch.setattr(exports_ui.st, "caption", lambda *a, **k: None)
    monkeypatch.setattr(exports_ui, "static_export_problem", lambda: None)
    monkeypatch.setattr(exports_ui.st, "download_button",
                        lambda label, data, **kw: got.update({label: data}))  # fmt: skip
    exports_ui.figure_downloads(fig(), "x")
    monkeypatch.setattr("ui.urlstate.scenario", lambda: scenario_from_inputs({"tp": 2}))
    page = got["Interactive HTML (opens offline)"]()  # pressed later: the scenario drawn
    page = page.replace("\\u2192", "→")  # plotly's JSON escapes the arrow
    assert scenario_line(sc).split(" · ")[0] in page
    assert "TP 8 → 8" in page and "TP 2 → 2" not in page
