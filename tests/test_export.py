"""Downloads: CSV formula-injection neutralised, PNG/SVG via kaleido, offline HTML."""

import csv
import io

import pandas as pd
import plotly.graph_objects as go
import plotly.offline
import pytest

from ui.export import ExportUnavailable, csv_bytes, figure_html, figure_png, figure_svg


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


def _static_or_skip(fn):
    try:
        return fn(fig())
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
