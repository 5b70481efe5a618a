"""Presentation mode (``present=1`` in the link): a projector's view of every page.

- type readable from the back of a room: the root font is 24 px, so body text is 24 px and the
  smallest label Streamlit draws (0.75 rem) is 18 px; charts get the kit's presentation scale
  (``kvview.figures.scale.presentation``, applied in ``ui.exports_ui.chart``);
- a scenario strip above every page names what the numbers are about (the sidebar is hidden);
- editing controls are hidden (buttons, downloads, export menus, uploaders, Compare's variant
  editors); one "Exit presentation mode" button stays.
"""

from __future__ import annotations

import html

import streamlit as st

ROOT_FONT_PX = 24  # body text at 1920×1080; Streamlit's smallest text (0.75 rem) is then 18 px
EXIT_KEY = "present_exit"
STRIP_KEY = "present_strip"

# Hidden: the sidebar; every button but the exit; download buttons; the charts' export menus;
# uploaders; Compare's variant editors (the row of columns whose widget keys start with "cmp").
PRESENTATION_CSS = f"""
<style>
[data-testid="stSidebar"], [data-testid="stSidebarCollapsedControl"] {{ display: none; }}
html {{ font-size: {ROOT_FONT_PX}px; }}
.stMainBlockContainer {{ max-width: 96%; padding-top: 4.5rem; }}
[data-testid="stMetricValue"] {{ font-size: 2.4rem; }}
[data-testid="stElementContainer"]:has([data-testid="stDataFrame"]) {{
  zoom: 1.4; width: 71.4% !important;  /* a data grid draws 14 px text on a canvas */
}}
[data-testid="stTable"] th, [data-testid="stTable"] td {{
  font-size: 0.75rem; padding: 0.25rem 0.35rem;  /* Overview's three tables side by side */
}}
[data-testid="stElementContainer"]:has([data-testid="stButton"]):not(.st-key-{EXIT_KEY}),
[data-testid="stElementContainer"]:has([data-testid="stDownloadButton"]),
[data-testid="stElementContainer"]:has([data-testid="stPopover"]),
[data-testid="stElementContainer"]:has([data-testid="stFileUploader"]),
[data-testid="stElementContainer"][class*="st-key-cmp"],
[data-testid="stHorizontalBlock"]:has([class*="st-key-cmp"]) {{ display: none; }}
.st-key-{STRIP_KEY} {{
  border-left: 0.3rem solid #2563eb; background: rgba(37, 99, 235, 0.08);
  padding: 0.4rem 0.9rem; border-radius: 0.4rem;
}}
.st-key-{STRIP_KEY} p {{ font-size: 1rem; margin: 0; }}
</style>
"""


def active() -> bool:
    """Whether this session shows presentation mode."""
    return bool(st.session_state.get("present"))


def strip_parts(sc) -> list[str]:
    """What the scenario strip names, each value with its unit (``sc``: a ``Scenario``)."""
    from kvview.fmt import fmt_bandwidth, fmt_tokens
    from kvview.words import pd_parallelism

    parts = [
        sc.model.name,
        f"prompt {fmt_tokens(sc.seq_len)}",
        f"batch {sc.batch:,} request{'' if sc.batch == 1 else 's'}",
        f"{sc.link.name} ({fmt_bandwidth(sc.link.bandwidth_bytes_per_s)} per direction"
        f" × {sc.streams:,} parallel link{'' if sc.streams == 1 else 's'})",
        f"{pd_parallelism(sc)} (prefill → decode) on {sc.gpu.name}",
        f"{sc.stack.name} stack",
    ]
    if sc.compression != "none":
        parts.append(f"{sc.compression} transfer")
    if sc.layerwise:
        parts.append("layer-wise sending")
    return parts


def scenario_strip() -> None:
    """One line above the page that names the scenario every number on it is about."""
    from ui.urlstate import current_values, scenario

    try:
        parts = strip_parts(scenario())
    except ValueError as exc:  # the page itself says what is wrong; the strip names the inputs
        v = current_values()
        parts = [str(v["model"]), f"prompt {v['seq']} tokens", f"batch {v['batch']}",
                 str(v["link"]), f"cannot be computed: {exc}"]  # fmt: skip
    with st.container(key=STRIP_KEY):
        st.html(
            '<p data-testid="present-strip"><b>Scenario:</b> '
            + " · ".join(html.escape(p) for p in parts)
            + "</p>"
        )


def presentation_mode() -> None:
    """Large type, no sidebar, no editing controls, the scenario named (``present=1``)."""
    if not active():
        return
    st.html(PRESENTATION_CSS)
    st.button(
        "Exit presentation mode",
        icon=":material/close_fullscreen:",
        key=EXIT_KEY,
        on_click=lambda: st.session_state.update(present=False),
    )
    scenario_strip()
