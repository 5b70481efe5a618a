"""Download buttons for tables (CSV) and charts (HTML, PNG, SVG).

Chart files are made only when the button is pressed (deferred ``data``), so a rerun never
renders images or inlines plotly.js for nothing.
"""

from __future__ import annotations

import os
import shutil

import streamlit as st

from kvview import csv_tables, export

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def static_export_problem() -> str | None:
    """Why PNG/SVG cannot be made here (None when a browser is available)."""
    if os.environ.get("BROWSER_PATH") or any(shutil.which(b) for b in BROWSERS):
        return None
    return export.UNAVAILABLE + "."


def table_download(table, name: str, link: str | None = None) -> None:
    """A "Table as CSV" button: ``table`` is a DataFrame, or a function making one when pressed
    (a ``kvview.csv_tables`` builder over the page's SI table).  The file's first line is the
    scenario's share link (``link``, when the page has it already), captured now: the button's
    callback runs without the session."""
    from ui.urlstate import share_url

    link = share_url() if link is None else link

    def build() -> bytes:
        df = table() if callable(table) else table
        return csv_tables.csv_handout(df, scenario_link=link)

    st.download_button(
        "Table as CSV",
        build,  # made when pressed
        file_name=f"{name}.csv",
        mime="text/csv",
        icon=":material/table:",
        key=f"dl_{name}_csv",
        on_click="ignore",
    )


def scenario_subtitle() -> str | None:
    """The sidebar's scenario in one line (``words.scenario_line``), for an exported chart;
    None when it cannot be built."""
    from kvview.words import scenario_line
    from ui.urlstate import scenario

    try:
        return scenario_line(scenario())
    except ValueError:
        return None


def figure_downloads(fig, name: str) -> None:
    """An Export menu under a chart: interactive HTML always, PNG and SVG with a browser.

    The menu draws its buttons only while open (opening it reruns the page), so a rerun of a
    page with several charts does not pay for menus nobody opened.  Each file carries the
    sidebar's scenario in a subtitle (``scenario_subtitle``).
    """
    menu = st.popover(
        "Export chart", icon=":material/download:", key=f"export_{name}", on_change="rerun"
    )
    if not menu.open:
        return
    from kvview.figures.kit import Fig

    if isinstance(fig, Fig):
        fig = fig.figure()  # a kit figure drawn from its dicts: built for the files, once
    problem = static_export_problem()
    subtitle = scenario_subtitle()  # captured now: the buttons' callbacks run without it
    with menu:
        st.download_button(
            "Interactive HTML (opens offline)",
            lambda: export.figure_html(fig, subtitle=subtitle),
            file_name=f"{name}.html",
            mime="text/html",
            key=f"dl_{name}_html",
            on_click="ignore",
        )
        for fmt, make, mime in (
            ("PNG", export.figure_png, "image/png"),
            ("SVG", export.figure_svg, "image/svg+xml"),
        ):
            st.download_button(
                fmt,
                lambda make=make: make(fig, subtitle=subtitle),
                file_name=f"{name}.{fmt.lower()}",
                mime=mime,
                key=f"dl_{name}_{fmt.lower()}",
                on_click="ignore",
                disabled=problem is not None,
                help=problem,
            )
        if problem:
            st.caption(problem)


def chart(fig, name: str, container=None) -> None:
    """A chart with its Export menu (in ``container``, e.g. a column; default the page).

    ``fig``: a ``go.Figure``, or a kit figure not built yet (a builder's ``unbuilt``, memoised:
    its JSON is made straight from its dicts, ``Fig.sent``, and the ``go.Figure`` only for an
    export).  In presentation mode the chart is drawn at projector scale and without the menu."""
    from kvview.figures import scale as figscale
    from kvview.figures.kit import Fig, sent
    from ui import perf, present

    target = container if container is not None else st.container()
    if present.active():  # memoised by the figure's identity: pages pass cached figures
        built = fig.figure() if isinstance(fig, Fig) else fig
        target.plotly_chart(sent(perf.cached(figscale.presentation, built)), width="stretch")
        return
    # its JSON made once per figure
    target.plotly_chart(fig.sent() if isinstance(fig, Fig) else sent(fig), width="stretch")
    with target:
        figure_downloads(fig, name)
