"""Small tables with coloured cells, as HTML for ``st.markdown``.

``st.dataframe`` of a pandas ``Styler`` cost 15-20 ms per rerun (pandas builds its whole HTML
model to hand Streamlit the cell styles), more than the rest of the Compare page.  These tables
are a dozen rows: plain HTML with inline styles costs well under a millisecond, follows the
theme (text colour is inherited, cell colours are translucent so they read on light and dark
backgrounds) and scrolls inside its own box when narrower screens need it.  The numbers stay
downloadable as CSV next to each table.
"""

from __future__ import annotations

from html import escape

import pandas as pd

from kvmodel.inputs import DEFAULT_BAND_MS
from kvview.fmt import minus_sign

BAND_CELL = {
    "below": "rgba(22, 163, 74, 0.25)",
    "within": "rgba(234, 179, 8, 0.30)",
    "above": "rgba(220, 38, 38, 0.28)",
}

_TABLE = "width: 100%; border-collapse: collapse; font-size: 0.92rem;"
_CELL = "padding: 0.3rem 0.6rem; border: 1px solid rgba(128, 128, 128, 0.3);"


def html_table(
    cells: pd.DataFrame, *, styles: pd.DataFrame | None = None, index: bool = True, label=""
) -> str:
    """``cells`` (already formatted text) as an HTML table; ``styles`` holds CSS per cell.

    ``label`` heads the index column when ``index`` is shown.  Every text is HTML-escaped.
    """
    head = ([label] if index else []) + [str(c) for c in cells.columns]
    rows = []
    for i, (key, row) in enumerate(cells.iterrows()):
        tds = [f'<th scope="row" style="{_CELL} text-align: left;">{escape(str(key))}</th>']
        tds = tds if index else []
        for j, value in enumerate(row):
            css = styles.iat[i, j] if styles is not None else ""
            align = "right" if _numeric(value) else "left"
            tds.append(f'<td style="{_CELL} text-align: {align}; {css}">{escape(str(value))}</td>')
        rows.append("<tr>" + "".join(tds) + "</tr>")
    ths = "".join(
        f'<th scope="col" style="{_CELL} text-align: left;">{escape(h)}</th>' for h in head
    )
    return (
        '<div style="overflow-x: auto;">'
        f'<table style="{_TABLE}"><thead><tr>{ths}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _numeric(value) -> bool:
    text = str(value).replace(",", "").replace(".", "", 1).strip().removeprefix("-")
    return text.isdigit()


BLOCKED_CELL = (  # a row that cannot be built: grey, hatched, never a verdict colour
    "background-image: repeating-linear-gradient(45deg, rgba(128, 128, 128, 0.18) 0 4px, "
    "transparent 4px 8px); color: inherit; opacity: 0.75;"
)


def band_table(table: pd.DataFrame, band_ms=DEFAULT_BAND_MS, blocked: dict | None = None) -> str:
    """Link × batch table of ``sweeps.link_batch_table``: ms cells green below the decode-step
    band, amber within, red above; a link of ``blocked`` (id → why, ``words.not_buildable``)
    is hatched grey with the reason beside its name, never green (issue 24)."""
    from kvmodel.sweeps import decode_band_verdict

    blocked = blocked or {}
    off = [lid in blocked for lid in table["link"]]
    batch_cols = [c for c in table.columns if c.startswith("batch ")]
    cells = pd.DataFrame({"Interconnect": [
        f"{n} ⚠ {blocked[lid]}" if lid in blocked else n
        for lid, n in zip(table["link"], table["name"], strict=True)
    ]})  # fmt: skip
    styles = pd.DataFrame({"Interconnect": [BLOCKED_CELL if o else "" for o in off]},
                          index=table.index)  # fmt: skip
    for col in table.columns:
        if col in ("link", "name"):
            continue
        if col in batch_cols:
            cells[f"{col} [ms]"] = [f"{v:,.1f}" for v in table[col]]
            styles[f"{col} [ms]"] = [
                BLOCKED_CELL if o else
                f"background-color: {BAND_CELL[decode_band_verdict(v, band_ms)]}"
                for v, o in zip(table[col], off, strict=True)
            ]  # fmt: skip
        else:
            fmt = "{:,.4g}" if col == "GB/s per direction" else "{}"
            cells[col] = [fmt.format(v) for v in table[col]]
            styles[col] = ""
    return html_table(cells, styles=styles, index=False)


def frame_height(rows: int) -> int:
    """The pixel height at which ``st.dataframe`` shows ``rows`` rows and its header, with no
    scroll bar and no empty row (Streamlit draws 35 px rows plus a 3 px border)."""
    return 35 * (rows + 1) + 3


def text_width(texts, *, most: int = 500) -> int:
    """The pixel width at which an ``st.dataframe`` column shows the longest of ``texts`` whole
    (~6 px a character of its 14 px Source Sans, 8 px padding a side), at most ``most``.

    Streamlit sizes a column from its cells but skips one at least twice their mean width
    (glide-data-grid), so a long label among short ones was cut: 'NVLink 4 (H100) + lay…'.
    """
    longest = max((len(str(t)) for t in texts), default=0)
    return min(most, 6 * longest + 16)


def _cell_text(value) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return "—"  # None, NA (an Int64 column's gap) or NaN
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int) or (hasattr(value, "is_integer") and float(value).is_integer()):
        return minus_sign(f"{int(value):,}")
    if isinstance(value, float):
        return minus_sign(f"{value:,.4g}" if abs(value) < 1e6 else f"{value:,.0f}")
    return str(value)



def sideways_table(frame: pd.DataFrame, *, label: str, notes: dict | None = None) -> str:
    """``frame`` (one row per item, units in its headers, ``label`` the column naming each
    item) turned sideways: one row per quantity, one column per item, so a dozen quantities
    fit a laptop's width without a scroll bar.  ``notes``: item name → a short warning put
    under its name and shading its column (an optimistic scale-up row)."""
    notes = notes or {}
    names = [str(v) for v in frame[label]]
    heads = [f"{n} ⚠ {notes[n]}" if n in notes else n for n in names]
    body = frame.drop(columns=[label]).T
    cells = pd.DataFrame(
        [[_cell_text(v) for v in row] for row in body.itertuples(index=False)],
        index=body.index,
        columns=heads,
    )
    style = [f"background-color: {BAND_CELL['within']}" if n in notes else "" for n in names]
    styles = pd.DataFrame([style] * len(cells), index=cells.index, columns=heads)
    return html_table(cells, styles=styles, index=True, label="quantity")
