"""The sidebar's "Share this scenario" box and the HTML report download button."""

from __future__ import annotations

import streamlit as st

from ui.urlstate import SHARE_OPEN, scenario, share_url, version1_implied


def share_box() -> None:
    """Sidebar: the link to this exact scenario, with a copy button."""
    st.sidebar.toggle(
        "Presentation mode",
        key="present",
        help="For a projector: large type and charts, the sidebar and editing controls "
        "hidden, the scenario named above each page; an Exit button at the top returns. A "
        "link with present=1 opens this way.",
    )
    box = st.sidebar.expander(
        "Share this scenario", icon=":material/link:", key=SHARE_OPEN, on_change="rerun"
    )
    # drawn only while open: the link is built when someone wants it (a lazy menu: bench/README.md,
    # "What made the difference" item 9, 2-4 ms per page)
    if not box.open:
        return
    with box:
        st.code(share_url(), language=None, wrap_lines=True)
        st.caption(
            "Copy the link with the button at the top right of the box; it opens this "
            "page with every input above."
        )
        try:  # the scenario on screen, captured now: the button's callback runs without the
            sc = scenario()  # session (it read the defaults before: issue 13)
        except ValueError as exc:
            st.caption(f"No report: this scenario cannot be computed ({exc}).")
            return
        report_download([("This scenario", sc)], "kv-transfer-report", key="dl_report")


def report_download(labelled, file_stem: str, *, key: str, title: str = "KV transfer report",
                    link: str | None = None):  # fmt: skip
    """A button that builds the standalone HTML report when pressed (offline, self-contained).

    ``labelled`` holds (label, Scenario or a zero-argument function returning one); ``link``:
    the scenario's share link when the page has it already.
    """
    from kvview.report import report_html

    link = share_url() if link is None else link
    version1 = version1_implied()  # captured now: the callback runs without the session

    def build() -> str:
        items = [(label, sc() if callable(sc) else sc) for label, sc in labelled]
        return report_html(
            items,
            share_url=link if link.startswith("http") else None,
            title=title,
            version1=version1,
        )

    st.download_button(
        "Download report (HTML)",
        build,
        file_name=f"{file_stem}.html",
        mime="text/html",
        icon=":material/description:",
        key=key,
        on_click="ignore",
        help="One self-contained page: inputs, verdicts, charts, assumptions and a link back.",
    )
