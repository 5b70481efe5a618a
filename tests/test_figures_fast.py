"""kvview.figures.kit.Fig.build skips plotly's validation: the figure the browser gets (its JSON,
parsed) must be the validated figure's, on every page's charts and on the cases the kit
rewrites (string titles, bar bases)."""

import json

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest
from app_helpers import app

from kvview.figures import kit, margins


def _spec(fig: go.Figure) -> dict:
    return json.loads(pio.to_json(fig, validate=False))


def _as_sent(spec: dict, layout: dict, data: list) -> dict:
    """A figure's JSON as a chart is sent: its left and bottom margins those plotly's
    automargin will need (``margins.reserve``, tests/test_figure_margins.py), all else equal."""
    reserved = margins.reserve(layout, data)
    if reserved is not layout:
        spec["layout"]["margin"] = reserved["margin"]
    return spec


def test_string_titles_and_array_bases_come_out_as_validation_writes_them():
    fig = kit.Fig()
    fig.add_bar(x=np.array([1.0, 2.5]), y=["a", "b"], base=np.array([0.5, 1.25]),
                orientation="h", marker_color="#123456",
                hovertemplate="%{x}<extra></extra>")  # fmt: skip
    fig.add_scatter(x=np.geomspace(1, 10, 5), y=np.arange(5.0), name="s", line_dash="dot")
    kit.base_layout(fig, "Title", "rate [requests/s]", "GPUs")
    fig.update_layout(legend_title="legend", yaxis2={"title": "second"})
    fig.add_vline(2.0, annotation_text="here")
    fast, slow = fig.build(), fig.validated()
    assert _spec(fast) == _spec(slow)
    assert _spec(fast)["layout"]["xaxis"]["title"] == {"text": "rate [requests/s]"}
    assert _spec(fast)["data"][0]["base"] == [0.5, 1.25]
    # attribute access (exports, the report) works on the fast figure as on a validated one
    assert fast.layout.title.text == "Title" and fast.data[0].marker.color == "#123456"


# every page that draws kit figures, with the links that draw Capacity's optional ones
PAGES = [
    (None, None),
    ("pages/interconnects.py", None),
    ("pages/sequence.py", None),
    ("pages/mitigations.py", None),
    ("pages/plan.py", None),
    ("pages/compare.py", None),
    ("pages/traffic.py", None),
    ("pages/capacity.py", {"price": "2.5", "wl": "fixed", "rps": "20"}),
    ("pages/capacity.py", {"ttft_slo": "100"}),
    ("pages/models.py", None),
    ("pages/measure.py", None),
]


OPENED = {"pages/plan.py": "plan_sensitivity"}  # page -> its chart's expander (session key)


@pytest.mark.parametrize("page, query", PAGES)
def test_every_pages_charts_are_the_validated_figures(monkeypatch, page, query):
    """Whether a page's kit figure is built (``Fig.build``) or drawn from its dicts
    (``Fig.sent``, every page's charts since session 15), the browser gets the validated
    figure's JSON."""
    built = []
    fast_build, fast_sent = kit.Fig.build, kit.Fig.sent

    def both(self):
        built.append((_spec(fast_build(self)), _spec(self.validated())))
        return fast_build(self)

    def drawn(self):
        out = fast_sent(self)
        slow = _as_sent(_spec(self.validated()), self.layout, self.data)
        built.append((json.loads(pio.to_json(out, validate=False)), slow))
        return out

    monkeypatch.setattr(kit.Fig, "build", both)
    monkeypatch.setattr(kit.Fig, "sent", drawn)
    at = app(query, page, article=False)
    if page in OPENED:  # a chart drawn only while its expander is open
        at.session_state[OPENED[page]] = True
        at.run()
    assert built, "the page drew no kit figure"
    for fast, slow in built:
        assert fast == slow


def test_the_chart_gets_the_figures_own_json_made_once():
    """ui.exports_ui.chart hands st.plotly_chart ``kit.sent(fig)``: the JSON of the figure
    itself (arrays as base64, the template shared, not copied) with the margins plotly's
    automargin will need, made once."""
    fig = kit.Fig()
    fig.add_scatter(x=np.geomspace(1, 10, 50), y=np.arange(50, dtype=np.int32), name="s")
    fig.add_bar(x=np.array([1.0, 2.5]), y=["a", "b"], base=np.array([0.5, 1.25]))
    kit.base_layout(fig, "Title", "x [s]", "y")
    fig.add_vline(2.0, annotation_text="here")
    built = fig.build()
    sent = kit.sent(built)
    assert isinstance(sent, go.Figure) and kit.sent(built) is sent
    reserved = margins.reserve(built._layout, built._data)["margin"]
    own = go.Figure(built).update_layout(margin=reserved)
    assert own.layout.margin.b == 96  # x labels and one legend row below (margins.reserve)
    assert json.loads(pio.to_json(sent.to_dict(), validate=False)) == _spec(own)
    assert sent.to_dict()["layout"]["template"] is built._layout["template"]
    assert built.to_dict()["layout"]["template"] is not built._layout["template"]


OPENED = {"pages/plan.py": "plan_sensitivity"}  # page -> its chart's expander (session key)


@pytest.mark.parametrize("page, query", PAGES)
def test_every_pages_charts_are_sent_as_their_figures_json(monkeypatch, page, query):
    """What each page's st.plotly_chart gets (``kit.sent``) serialises byte for byte as the
    figure itself does (plotly's ``to_dict``: a deep copy, arrays in base64)."""
    sent = []
    made = kit.sent

    def checked(fig):
        out = made(fig)
        sent.append((pio.to_json(out.to_dict(), validate=False), pio.to_json(fig, validate=False)))
        return out

    from_dicts = []
    made_from_dicts = kit.Fig.sent

    def counted(self):
        from_dicts.append(self)
        return made_from_dicts(self)

    monkeypatch.setattr(kit, "sent", checked)
    monkeypatch.setattr(kit.Fig, "sent", counted)
    app(query, page, article=False)
    assert sent or from_dicts, "the page drew no chart"
    for ours, plotly_own in sent:  # a built figure's (a chart drawn from its dicts: below)
        assert ours == plotly_own


def test_a_figure_drawn_from_its_dicts_is_the_built_figures_json():
    """``Fig.sent`` (Capacity's and Traffic's charts): the JSON made straight from the dicts,
    without the go.Figure, parses as the built figure's (values, arrays in base64, a None left
    out, the template shared); the figure itself is built only for an export, once."""
    fig = kit.Fig()
    fig.add_scatter(x=np.geomspace(1, 10, 50), y=np.arange(50, dtype=np.int64), name="s",
                    customdata=np.arange(100.0).reshape(50, 2), hovertemplate=None,
                    marker_color=None, line={"dash": "dot", "width": None})  # fmt: skip
    fig.add_bar(x=np.array([1.0, 2.5]), y=["a", "b"], base=np.array([0.5, 1.25]))
    kit.base_layout(fig, "Title", "x [s]", "y")
    fig.update_layout(xaxis_range=np.array([0.0, 2.0]), yaxis2={"title": "second"})
    fig.add_vline(2.0, annotation_text="here")
    sent = fig.sent()
    assert fig.sent() is sent and isinstance(sent, go.Figure)
    assert json.loads(pio.to_json(sent, validate=False)) == _as_sent(
        _spec(fig.build()), fig.layout, fig.data
    )
    assert sent.to_dict()["layout"]["template"] is kit.Fig().sent().to_dict()["layout"]["template"]
    assert fig.figure() is fig.figure() and _spec(fig.figure()) == _spec(fig.build())


OPENED = {"pages/plan.py": "plan_sensitivity"}  # page -> its chart's expander (session key)


@pytest.mark.parametrize("page, query", PAGES)
def test_every_chart_drawn_from_its_dicts_is_its_figures_json(monkeypatch, page, query):
    """Every page draws its charts from the kit's dicts (``ui.exports_ui.chart`` of a builder's
    ``unbuilt``), each the built figure's JSON."""
    seen = []
    made = kit.Fig.sent

    def checked(self):
        out = made(self)
        built = _as_sent(_spec(self.build()), self.layout, self.data)
        seen.append((json.loads(pio.to_json(out, validate=False)), built))
        return out

    monkeypatch.setattr(kit.Fig, "sent", checked)
    app(query, page, article=False)
    assert seen, "the page drew no chart from its dicts"
    for ours, built in seen:
        assert ours == built


@pytest.mark.parametrize(
    "array",
    [
        np.array([1.0, 2.5, np.nan, np.inf]),
        np.arange(5.0, dtype=np.float32),
        np.array([1, -2, 3], dtype=np.int8),
        np.array([1, 70000], dtype=np.int32),
        np.array([1, 2], dtype=np.uint16),
        np.array([3, 300, 70000]),  # int64: plotly narrows it
        np.array([2**40, 1]),  # int64 too wide for int32: sent as is
        np.array([1, 2], dtype=np.uint64),
        np.arange(6.0).reshape(2, 3),  # 2-D: with its shape
        np.arange(10.0)[::3],  # not contiguous
        np.array([1.0, 2.0]).astype(">f8"),  # big-endian
        np.array([], dtype=float),
        np.array([True, False]),
        np.array([1.5, 2.5], dtype=np.float16),
        np.array(["a", "b"], dtype=object),
        np.array(["a", None, 1.5], dtype=object),
        np.array(["x", "yz"]),  # unicode
    ],
)
def test_typed_arrays_are_plotlys_own(array):
    """``kit.typed_array``, the chart JSON's arrays made without plotly's detour through
    narwhals, writes what plotly's ``to_typed_array_spec`` writes."""
    from _plotly_utils.utils import to_typed_array_spec

    mine, plotly = kit.typed_array(array), to_typed_array_spec(array)
    if isinstance(plotly, np.ndarray):
        assert isinstance(mine, np.ndarray) and mine.tolist() == plotly.tolist()
        assert mine.dtype == plotly.dtype and not mine.flags.writeable
        assert mine is not array  # a copy, as plotly's
    else:
        assert mine == plotly
