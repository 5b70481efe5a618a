"""The small coloured HTML tables (kvview.tables)."""

from html_tables import read_html_table
from sweeps_ms import link_batch_table

from kvmodel.build import build_scenario
from kvview import tables


def test_band_table_styles_cells():
    sc = build_scenario(model="llama-3-70b", latency_us=0)
    html = tables.band_table(link_batch_table(sc, ["nvlink4", "100gbe"], (1, 32)), (20, 50))
    cells, styles = read_html_table(html)
    assert list(cells.columns) == [
        "Interconnect", "GB/s per direction", "batch 1 [ms]", "batch 32 [ms]"
    ]  # fmt: skip
    # 100GbE: 26.8 ms at batch 1 (within 20-50 ms), 859.0 ms at batch 32 (above); NVLink 4 at
    # batch 32: 23.9 ms (within), batch 1: 0.7 ms (below)
    assert cells.loc[1, "batch 32 [ms]"] == "859.0"
    assert tables.BAND_CELL["above"] in styles.loc[1, "batch 32 [ms]"]
    assert tables.BAND_CELL["within"] in styles.loc[1, "batch 1 [ms]"]
    assert tables.BAND_CELL["below"] in styles.loc[0, "batch 1 [ms]"]
    assert "background" not in styles.loc[0, "Interconnect"]


def test_sideways_table_puts_one_item_per_column_and_marks_notes():
    import pandas as pd
    from html_tables import read_html_table

    from kvview.tables import sideways_table

    frame = pd.DataFrame({"interconnect": ["100 GbE", "NVLink 4"], "GPUs [GPUs]": [20, 24],
                          "need [GB/s]": [11.1977, None], "meets": ["yes", "no"]})  # fmt: skip
    html = sideways_table(frame, label="interconnect", notes={"NVLink 4": "24 GPUs > 8"})
    t = read_html_table(html, index=True)[0]
    assert list(t.columns) == ["100 GbE", "NVLink 4 ⚠ 24 GPUs > 8"]
    assert list(t.index) == ["GPUs [GPUs]", "need [GB/s]", "meets"]
    assert (
        t.loc["need [GB/s]"].tolist() == ["11.2", "—"] and t.loc["GPUs [GPUs]", "100 GbE"] == "20"
    )
    assert html.count("background-color") == 3  # the noted column's three cells


def test_text_width_fits_the_longest_text_up_to_a_bound():
    """~6 px a character and 16 px of padding (14 px Source Sans: 'NVLink 4 (H100) + layer-wise
    (not buildable)' measures 253 px in chromium)."""
    labels = ["Baseline", "NVLink 4 (H100) (not buildable)",
              "NVLink 4 (H100) + layer-wise (not buildable)"]  # fmt: skip
    assert tables.text_width(labels) == 6 * 44 + 16 >= 253 + 16
    assert tables.text_width(["x" * 200]) == 500 and tables.text_width(["x" * 200], most=300) == 300
    assert tables.text_width([]) == 16


def test_a_negative_number_shows_the_minus_sign():
    # a review (session 23): "GPUs saved by disaggregation -4" beside the app's "−" elsewhere
    import pandas as pd

    from kvview.tables import sideways_table

    frame = pd.DataFrame({"interconnect": ["100 GbE"], "GPUs saved [GPUs]": [-4],
                          "utilisation [%]": [-0.25]})  # fmt: skip
    html = sideways_table(frame, label="interconnect")
    assert "−4" in html and "−0.25" in html and ">-4<" not in html
