"""Charts at a projector's scale (kvview.figures.scale): every chart in presentation mode."""

import pytest
from sweeps_ms import mitigation_options, mitigation_table

from kvmodel.build import build_scenario
from kvmodel.sensitivity import tornado
from kvview import figures
from kvview.figures.scale import PRESENT_FLOOR_PX, PRESENT_FONT_PX, presentation


def _sizes(node, out):
    """Every font size set anywhere in a figure's JSON (template left aside)."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "template":
                continue
            if key.endswith("font") and isinstance(value, dict) and "size" in value:
                sizes = value["size"]
                out.extend(sizes if isinstance(sizes, list) else [sizes])
            _sizes(value, out)
    elif isinstance(node, list):
        for item in node:
            _sizes(item, out)
    return out


def _figures():
    sc = build_scenario(model="llama-3.1-70b")
    table = mitigation_table(sc, mitigation_options(sc))
    return {
        "mitigations": figures.figure_mitigation_panels(table, step_ms=30.0),
        "tornado": figures.figure_tornado_panels(tornado(sc)),
        "overview": figures.figure_transfer_vs_step(26.8, 30.0, k=2.0),
    }


@pytest.mark.parametrize("name", ["mitigations", "tornado", "overview"])
def test_presented_figure_sets_every_size_above_the_floor(name):
    fig = _figures()[name]
    before = fig.to_json()
    out = presentation(fig)
    spec = out.to_plotly_json()
    sizes = _sizes(spec, [])
    assert sizes and min(sizes) >= PRESENT_FLOOR_PX
    lay = spec["layout"]
    assert lay["font"]["size"] == PRESENT_FONT_PX
    # plotly shrinks bar text to fit its bar unless a minimum is set (tornado labels at ~7 px)
    assert lay["uniformtext"] == {"minsize": PRESENT_FLOOR_PX, "mode": "show"}
    for key in (k for k in lay if k.startswith(("xaxis", "yaxis"))):
        assert lay[key]["tickfont"]["size"] == PRESENT_FONT_PX
    # 20 px type instead of 14: the figure and its pixel margins grow by 20/14
    scale = PRESENT_FONT_PX / 14
    assert lay["height"] == round(fig.layout.height * scale)
    assert lay["margin"]["t"] == round(fig.layout.margin.t * scale)
    # the cached original is shared between sessions: it is left as it was
    assert fig.to_json() == before


def test_kit_sizes_scale_and_small_ones_reach_the_floor():
    fig = figures.figure_transfer_vs_step(26.8, 30.0)  # its band note is 11 px

    def band_note(f):  # the other annotations name the bars (kit._names_above)
        (note,) = [a for a in f.layout.annotations if a.text.startswith("typical")]
        return note

    assert band_note(fig).font.size == 11
    assert band_note(presentation(fig, font_px=21, floor_px=16)).font.size == 16.5  # 11 × 21/14
    # 11 × 1, raised to the floor
    assert band_note(presentation(fig, font_px=14, floor_px=16)).font.size == 16
