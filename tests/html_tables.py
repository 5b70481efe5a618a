"""Read back the HTML tables of ``kvview.tables`` (what the pages show) in tests."""

from __future__ import annotations

from html.parser import HTMLParser

import pandas as pd


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows: list[list[tuple[str, str]]] = []
        self._cell: list[str] | None = None
        self._style = ""

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell, self._style = [], dict(attrs).get("style", "")

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(("".join(self._cell), self._style))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def read_html_table(html: str, *, index: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(cell texts, cell styles) of the first table in ``html``; the first column becomes the
    index when ``index``."""
    reader = _Reader()
    reader.feed(html)
    head, *body = reader.rows
    columns = [text for text, _ in head]
    texts = pd.DataFrame([[t for t, _ in row] for row in body], columns=columns)
    styles = pd.DataFrame([[s for _, s in row] for row in body], columns=columns)
    if index:
        labels = list(texts[columns[0]])
        texts, styles = (df.drop(columns=columns[0]).set_axis(labels) for df in (texts, styles))
    return texts, styles
