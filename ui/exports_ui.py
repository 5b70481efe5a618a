"""Download buttons for tables (CSV) and charts (PNG, SVG, interactive HTML)."""

from __future__ import annotations

import streamlit as st

from . import export


@st.cache_data(max_entries=32, show_spinner="Rendering the image…")
def _static(fig_json: str, fmt: str):
    import plotly.io as pio

    fig = pio.from_json(fig_json)
    try:
        return (export.figure_png(fig) if fmt == "png" else export.figure_svg(fig)), None
    except export.ExportUnavailable as exc:
        return None, str(exc)


def table_download(df, name: str) -> None:
    st.download_button(
        "Table as CSV",
        export.csv_bytes(df),
        file_name=f"{name}.csv",
        mime="text/csv",
        icon=":material/table:",
        key=f"dl_{name}_csv",
    )


def figure_downloads(fig, name: str) -> None:
    """HTML always; PNG/SVG rendered on request (they need a browser on the server)."""
    c = st.columns(3)
    c[0].download_button(
        "Chart as HTML",
        export.figure_html(fig),
        file_name=f"{name}.html",
        mime="text/html",
        icon=":material/code:",
        key=f"dl_{name}_html",
    )
    for col, fmt in zip(c[1:], ("png", "svg"), strict=True):
        label, key = f"Make {fmt.upper()}", f"img_{name}_{fmt}"
        if col.button(label, key=key, icon=":material/image:"):
            data, problem = _static(fig.to_json(), fmt)
            if problem:
                st.warning(problem)
            else:
                col.download_button(
                    f"Save {fmt.upper()}",
                    data,
                    file_name=f"{name}.{fmt}",
                    mime="image/png" if fmt == "png" else "image/svg+xml",
                    key=f"dl_{name}_{fmt}",
                )
