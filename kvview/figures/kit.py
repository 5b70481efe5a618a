"""The kit the figure builders share: colours (one per interconnect everywhere), a light
figure builder that makes one ``go.Figure`` from plain dicts, and layout helpers (titles, unit
axes, threshold lines, legends, panels of several figures in one)."""

from __future__ import annotations

import functools
from base64 import b64encode

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from kvmodel import catalog
from kvview.figures import margins

_LINK_PALETTE = {
    "nvlink3": "#16a34a",
    "nvlink4": "#15803d",
    "nvlink5": "#166534",
    "pcie4": "#a16207",
    "pcie5": "#ca8a04",
    "pcie6": "#eab308",
    "ib-hdr": "#7c3aed",
    "ib-ndr": "#2563eb",
    "ib-xdr": "#0891b2",
    "25gbe": "#9f1239",
    "100gbe": "#dc2626",
    "200gbe": "#ea580c",
    "400gbe": "#f97316",
    "800gbe": "#fb923c",
    "aws-efa-p4d": "#db2777",
    "aws-efa-p5": "#c026d3",
    "infinity-fabric": "#0d9488",
    "custom": "#475569",
}
_FALLBACK = ("#64748b", "#0f766e", "#b45309", "#6d28d9", "#be123c")
LAYOUT_COLORS = {
    "mha": "#dc2626",
    "gqa": "#2563eb",
    "mqa": "#0891b2",
    "mla": "#16a34a",
    "sliding": "#ca8a04",
    "chunked": "#ea580c",
    "sliding+global": "#a16207",
    "hybrid-linear": "#7c3aed",
    "hybrid-mamba": "#db2777",
}
SEGMENT_COLORS = {
    "Prefill": "#94a3b8",
    "KV transfer": "#dc2626",
    "Quantize/dequantize": "#f59e0b",
    "First decode step": "#2563eb",
}
BAND_COLOR = "rgba(37, 99, 235, 0.18)"


# Hover labels opaque, with dark text and full trace names (the app's theme draws them in grey
# on a see-through box, hard to read over lines and bands; session 18's browser review)
HOVER_LABEL = {"namelength": -1, "bgcolor": "white", "bordercolor": "#94a3b8",
               "font": {"color": "#1f2937"}}  # fmt: skip

_COMPOUND = {"marker", "line", "xaxis", "yaxis", "legend", "title", "hoverlabel", "font",
             "textfont", "error"}  # fmt: skip


def _plain(value):
    """pandas columns as numpy arrays: plotly converts pandas through narwhals (slow) and
    deep-copies Python lists element by element when the chart is sent."""
    if isinstance(value, (pd.Series, pd.Index)):
        return value.to_numpy()
    return value


def groups_of(df: pd.DataFrame, key: str, columns: tuple[str, ...]):
    """``(value, {column: array})`` per distinct ``key`` value, in first-seen order.

    What ``df.groupby(key, sort=False)`` gives a chart, without building a sub-frame per group
    (each column access on one costs about 0.3 ms on pandas 3).
    """
    keys = df[key].to_numpy(dtype=object)
    cols = {c: df[c].to_numpy() for c in columns}
    for value in dict.fromkeys(keys):
        mask = keys == value
        yield value, {c: v[mask] for c, v in cols.items()}


def _expand(kwargs: dict) -> dict:
    """Plotly's magic underscores (``marker_color``) as nested dicts (``marker.color``)."""
    out: dict = {}
    for key, value in kwargs.items():
        value = _plain(value)
        parts = key.split("_")
        if len(parts) > 1 and parts[0] in _COMPOUND:
            node = out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = value
        else:
            _merge(out, {key: value})
    return out


def _merge(base: dict, extra: dict) -> dict:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value
    return base


class Fig:
    """Collects traces and layout as plain dicts; ``build`` makes one ``go.Figure`` at the end.

    The incremental ``go.Figure`` API validates and re-parses on every call (20-30 ms for a
    small chart); one constructor call over plain dicts costs a few ms.  It offers just the
    calls the builders here use.
    """

    def __init__(self):
        self.data: list[dict] = []
        self.layout: dict = {}

    def _trace(self, kind: str, kwargs: dict) -> None:
        self.data.append({"type": kind, **_expand(kwargs)})

    def add_bar(self, **kw):
        self._trace("bar", kw)

    def add_scatter(self, **kw):
        self._trace("scatter", kw)

    def add_histogram(self, **kw):
        self._trace("histogram", kw)

    def update_layout(self, **kw):
        _merge(self.layout, _expand(kw))

    def update_xaxes(self, **kw):
        _merge(self.layout.setdefault("xaxis", {}), _expand(kw))

    def update_yaxes(self, **kw):
        _merge(self.layout.setdefault("yaxis", {}), _expand(kw))

    def add_annotation(self, **kw):
        self.layout.setdefault("annotations", []).append(_expand(kw))

    def add_vline(self, x, annotation_text=None, annotation_position=None, **kw):
        shape = {"type": "line", "xref": "x", "yref": "paper", "x0": x, "x1": x, "y0": 0,
                 "y1": 1}  # fmt: skip
        self.layout.setdefault("shapes", []).append(_merge(shape, _expand(kw)))
        if annotation_text:
            self.add_annotation(x=x, y=1, yref="paper", yanchor="bottom", showarrow=False,
                                text=annotation_text)  # fmt: skip

    def add_vrect(self, x0, x1, **kw):
        shape = {"type": "rect", "xref": "x", "yref": "paper", "x0": x0, "x1": x1, "y0": 0,
                 "y1": 1}  # fmt: skip
        self.layout.setdefault("shapes", []).append(_merge(shape, _expand(kw)))

    def build(self) -> go.Figure:
        """The ``go.Figure``, built without plotly's per-property validation (2-3 ms of a
        small chart, redrawn on every input change): the dicts are already what validation
        makes of them, once a title given as a string is ``{"text": ...}`` (``_titled``).
        tests/test_figures_fast.py checks every builder's figure against a validated one."""
        data = [_listed(trace) for trace in self.data]
        return go.Figure({"data": data, "layout": _titled(self.layout)}, _validate=False)

    def validated(self) -> go.Figure:
        """The same figure through plotly's validation (the reference of the tests)."""
        return go.Figure({"data": self.data, "layout": self.layout})

    def sent(self) -> go.Figure:
        """What ``st.plotly_chart`` is given for this figure, made once: the JSON of
        ``sent(self.build())`` (the same values; keys in this figure's order, which the
        browser does not read), straight from the dicts.  Building the ``go.Figure`` copies
        the layout template and every dict (~0.9 ms a chart, and ~0.4 ms more to copy it
        again into its JSON), which a chart on screen does not need (bench/README.md,
        Session 15, page controls); an export builds it (``figure``)."""
        made = self.__dict__.get("_sent")
        if made is None:
            data = [_jsonable(_listed(trace), top=True) for trace in self.data]
            layout = _jsonable(_titled(margins.reserve(self.layout, self.data)), top=True)
            layout["template"] = _template()  # shared, as ``sent`` shares it
            made = self._sent = _Sent({"data": data, "layout": layout})
        return made

    def figure(self) -> go.Figure:
        """``build()``, made once (an export of a chart drawn from ``sent``)."""
        made = self.__dict__.get("_figure")
        if made is None:
            made = self._figure = self.build()
        return made


_SKIPPED = ("geojson", "layer", "layers", "range")  # _plotly_utils.utils.is_skipped_key's


def _jsonable(value, top: bool = False):
    """``value`` as ``go.Figure(value, _validate=False).to_dict()`` writes it: dicts and lists
    copied, a trace's or the layout's own key (``top``) set to None left out (plotly does not
    set it; nested ones it keeps), a numpy array under a key in base64 (``convert_to_base64``:
    not under the keys it skips, nor inside a list)."""
    if isinstance(value, dict):
        out = {}
        for key, v in value.items():
            if v is None and top:
                continue
            if key in _SKIPPED:
                out[key] = v
            elif isinstance(v, np.ndarray):  # what plotly's is_homogeneous_array finds here
                out[key] = typed_array(v)
            elif isinstance(v, (dict, list, tuple)):
                out[key] = _jsonable(v)
            else:
                out[key] = v
        return out
    return [_jsonable(v) if isinstance(v, (dict, list, tuple)) else v for v in value]


def typed_array(v: np.ndarray):
    """``_plotly_utils.utils.to_typed_array_spec(v)``, straight for a 1-D array of a type
    plotly.js reads as it is (float64, float32, int8-32, uint8-32): plotly's own way first
    passes every array through narwhals and a read-only copy (~40 µs an array, ~0.4 ms a chart
    of a dozen traces, on every rerun that draws a new figure: bench/README.md, Session 19).
    An array of objects (labels) is its read-only copy, as there.  Anything else (64-bit
    integers, which it narrows, 2-D, empty, other types) goes to it."""
    if type(v) is np.ndarray and v.ndim == 1 and v.size:
        short = _SHORT_TYPES.get(str(v.dtype))
        if short is not None:
            return {"dtype": short, "bdata": b64encode(np.ascontiguousarray(v)).decode("ascii")}
        if v.dtype.kind == "O":  # labels: plotly keeps a read-only copy (written as a list)
            out = v.copy()
            out.flags.writeable = False
            return out
    from _plotly_utils.utils import to_typed_array_spec

    return to_typed_array_spec(v)


_SHORT_TYPES = {"int8": "i1", "uint8": "u1", "int16": "i2", "uint16": "u2", "int32": "i4",
                "uint32": "u4", "float32": "f4", "float64": "f8"}  # fmt: skip  # plotly's own


_TEMPLATES: dict = {}  # plotly's default template by name, as a built figure's layout holds it


def _template() -> dict:
    import plotly.io as pio

    name = pio.templates.default
    if name not in _TEMPLATES:
        _TEMPLATES[name] = go.Figure(_validate=False)._layout["template"]
    return _TEMPLATES[name]


_LISTED = ("base",)  # trace keys validation writes as a list (an array stays binary elsewhere)


def _listed(trace: dict) -> dict:
    """``trace`` with its :data:`_LISTED` arrays as lists, as validation writes them."""
    if not any(isinstance(trace.get(key), np.ndarray) for key in _LISTED):
        return trace
    return {k: v.tolist() if k in _LISTED and isinstance(v, np.ndarray) else v
            for k, v in trace.items()}  # fmt: skip


_TITLED = ("xaxis", "yaxis", "legend", "coloraxis")  # layout keys whose ``title`` may be a str


def _titled(layout: dict) -> dict:
    """``layout`` with every title given as a string written as ``{"text": ...}``: what plotly's
    validation does (plotly.js 3 reads no string title), for the layout's own title and its
    axes' and legend's."""
    out = dict(layout)
    for key, value in layout.items():
        if key == "title" and isinstance(value, str):
            out[key] = {"text": value}
        elif key.startswith(_TITLED) and isinstance(value, dict):
            title = value.get("title")
            if isinstance(title, str):
                out[key] = dict(value, title={"text": title})
    return out


def finished(builder):
    """Decorator: a builder that fills a ``Fig`` returns the built ``go.Figure``."""

    @functools.wraps(builder)
    def wrapper(*args, **kwargs):
        out = builder(*args, **kwargs)
        return out.build() if isinstance(out, Fig) else out

    wrapper.unbuilt = builder  # the plain-dict figure, for combining into panels
    return wrapper


class _Sent(go.Figure):
    """A figure's JSON-ready dict as ``st.plotly_chart`` takes it: Streamlit calls ``to_dict()``
    of any plotly figure (a deep copy of data and layout, template included, then every array
    to base64: ~2.3 ms a figure, on every rerun that draws it) and serialises the result.  This
    holds that dict, made once (``sent``); nothing else is read from it."""

    def __init__(self, spec: dict):  # noqa: D107 -- plotly's own __init__ is not wanted here
        self._spec = spec

    def to_dict(self) -> dict:
        return self._spec  # Streamlit only serialises it (and pops the absent trace uids)


def sent(fig: go.Figure) -> go.Figure:
    """What ``st.plotly_chart`` is given for ``fig``: the same JSON as ``fig.to_dict()``, made
    once per figure object (figures from the memo are shared and read-only), with the layout
    template, which holds no arrays, shared rather than copied and walked (~1 ms a figure).
    bench/README.md, Session 11."""
    made = fig.__dict__.get("_sent")
    if made is None:
        made = _Sent(_sent_spec(fig))
        fig._sent = made
    return made


def _sent_spec(fig: go.Figure) -> dict:
    """``fig.to_dict()`` without copying the template (same keys, same order, same values)."""
    from copy import deepcopy

    from _plotly_utils.utils import convert_to_base64

    if fig._frame_objs or not isinstance(fig._layout.get("template"), dict):
        return fig.to_dict()
    data = deepcopy(fig._data)
    reserved = margins.reserve(fig._layout, fig._data)  # the layout itself is not changed
    rest = {k: deepcopy(v) for k, v in reserved.items() if k != "template"}
    convert_to_base64(data)
    convert_to_base64(rest)
    layout = {k: fig._layout["template"] if k == "template" else rest[k] for k in reserved}
    return {"data": data, "layout": layout}


def link_color(link_id: str) -> str:
    base = link_id.split("@")[0]
    if base in _LINK_PALETTE:
        return _LINK_PALETTE[base]
    return _FALLBACK[sum(map(ord, base)) % len(_FALLBACK)]


def link_name(link_id: str) -> str:
    try:
        return catalog.get_link(link_id).name
    except ValueError:
        return link_id


def band_trace(fig: go.Figure, x_range, band_ms, label: str) -> None:
    """A horizontal band as a filled trace (data coordinates: safe on log axes)."""
    lo, hi = band_ms
    x0, x1 = x_range
    fig.add_scatter(
        x=[x0, x1, x1, x0, x0],
        y=[lo, lo, hi, hi, lo],
        fill="toself",
        mode="none",
        fillcolor=BAND_COLOR,
        name=label,
        hoverinfo="skip",
    )


def threshold_trace(fig: go.Figure, x_range, y_ms: float, label: str) -> None:
    fig.add_scatter(
        x=list(x_range),
        y=[y_ms, y_ms],
        mode="lines",
        name=label,
        line={"color": "#475569", "dash": "dash", "width": 1.5},
        hovertemplate=f"{label}<extra></extra>",
    )


def legend_on_top(fig: go.Figure, *, top: int = 90) -> None:
    """A one-row legend between the title and the plot (for charts as wide as the page)."""
    fig.update_layout(
        legend={
            "orientation": "h",
            "yanchor": "bottom",
            "y": 1.0,
            "x": 0,
            "xanchor": "left",
            "yref": "paper",
        },  # fmt: skip
        margin={"t": top},
    )


ROW_PX = 46  # one category row of a bar chart with names above its bars
NAME_BAND = 0.45  # the top share of a row that holds its name; the bar sits below it
LEGEND_ROW_PX = 21  # one entry of a legend stacked one per line
TITLE_PX = 40  # the figure's title, at the top of the figure


def names_above(fig: Fig, names, *, bar: float = 0.5) -> None:
    """Horizontal bars named by a line of text above each bar instead of tick labels on the
    left.  The names then take height, not width: on a 390 px phone the bars keep the whole
    width and no name runs into a bar label.  Every bar trace is moved into the lower part of
    its row (``offset``) with thickness ``bar`` (in rows) unless it sets its own; the names
    sit in the top ``NAME_BAND`` of the row.
    """
    names = list(names)
    for trace in fig.data:
        if trace.get("type") == "bar":
            trace.setdefault("width", bar)
            trace.setdefault("offset", NAME_BAND - 0.5)
    fig.update_yaxes(
        showticklabels=False, range=[len(names) - 0.5, -0.5], title=None, autorange=False
    )
    for i, name in enumerate(names):
        fig.add_annotation(text=name, x=0, xref="x domain", xanchor="left", y=i - 0.5,
                           yanchor="top", showarrow=False)  # fmt: skip


def _legend_entries(fig: Fig) -> int:
    return sum(1 for t in fig.data if t.get("name") and t.get("showlegend") is not False)


def legend_stacked(fig: Fig, *, above_px: int = 0) -> None:
    """A legend of one entry per line between the title and the plot (or ``above_px`` higher):
    it is as wide as its longest entry, so it fits a phone and never wraps into the title."""
    fig.update_layout(
        legend={
            "orientation": "v",
            "yanchor": "bottom",
            "xanchor": "left",
            "x": 0,
            "y": 1.0,
            "yref": "paper",  # above the plot (``_layout`` put it on the container's bottom)
            "traceorder": "normal",
        },  # fmt: skip
        title={"y": 1, "yref": "container", "yanchor": "top", "pad": {"t": 10}},
        margin={"t": TITLE_PX + LEGEND_ROW_PX * _legend_entries(fig) + 12 + above_px},
    )


def legend_below(fig: Fig) -> None:
    """A horizontal legend at the bottom of the figure, under the x-axis title, wrapping into
    rows as the width needs.

    Beside the plot (plotly's place) a legend took up to 70 % of a 390 px phone's width and
    left the plot 80-100 px (issue 24); above it, it ran into the title.  Placed on the
    figure's container (``yref="container"``), plotly reserves the bottom margin for its rows
    and puts the axis title above them, at any width."""
    fig.update_layout(
        legend={
            "orientation": "h",
            "yref": "container",
            "yanchor": "bottom",
            "y": 0,
            "x": 0,
            "xanchor": "left",
            "traceorder": "normal",
        },  # fmt: skip
    )


def base_layout(fig: go.Figure, title: str, x: str, y: str, *, height: int = 420) -> go.Figure:
    """The kit's layout: title at the left, axis titles, margins, the legend below the plot
    (``legend_below``; ``legend_stacked`` and ``legend_on_top`` move it where a chart
    needs), full names in hover labels."""
    fig.update_layout(
        title={"text": title, "x": 0, "xanchor": "left"},
        xaxis_title=x,
        yaxis_title=y,
        height=height,
        margin={"l": 10, "r": 10, "t": 60, "b": 10},
        hoverlabel=HOVER_LABEL,
    )
    legend_below(fig)
    return fig


def panel_figure(figs: list[Fig], *, title: str, rows: bool, gap: float = 0.1) -> Fig:
    """Several builders' figures as the panels of one figure.

    One chart element instead of several: plotly builds and Streamlit serialises each figure
    in about 10 ms, so a page redrawn on every input change pays that once.  ``rows``: panels
    stacked, each with its own axes; otherwise side by side on one shared y axis (the option
    labels are written once).  Each panel's title becomes a heading above it; its shapes and
    annotations follow its axes.
    """
    out = Fig()
    named: set[str] = set()
    n = len(figs)
    heights = [int(fig.layout.get("height", 420)) for fig in figs]
    top = max(int(fig.layout.get("margin", {}).get("t", 60)) for fig in figs) + 30
    plot_px = (sum(heights) if rows else max(heights)) - top - 10
    if rows:  # each panel keeps its plot's pixels; between panels, room for the axis title
        # above and the next panel's heading; one legend above all (its margin: at the end)
        tops = [int(fig.layout.get("margin", {}).get("t", 60)) for fig in figs]
        plots = [h - t - 10 for h, t in zip(heights, tops, strict=True)]
        plot_px = sum(plots) + 120 * (n - 1)
        gap = 120 / plot_px
    share = [p / sum(plots) for p in plots] if rows else [1 / n] * n
    span = 1 - gap * (n - 1)
    edges, pos = [], 1.0 if rows else 0.0
    for k in range(n):
        size = share[k] * span
        lo, hi = (pos - size, pos) if rows else (pos, pos + size)
        edges.append((min(max(round(lo, 6), 0.0), 1.0), min(max(round(hi, 6), 0.0), 1.0)))
        pos = pos - size - gap if rows else pos + size + gap
    for k, fig in enumerate(figs):
        suffix = "" if k == 0 else str(k + 1)
        xname, yname = f"x{suffix}", (f"y{suffix}" if rows else "y")
        lay = fig.layout
        hide_legend = lay.get("showlegend") is False
        for trace in fig.data:
            trace = dict(trace, xaxis=xname, yaxis=yname)
            name = str(trace.get("name", ""))
            if hide_legend or (rows and name in named):  # rows: each entry once
                trace["showlegend"] = False
            elif trace.get("showlegend") is not False and name:
                named.add(name)
            out.data.append(trace)
        xaxis = dict(lay.get("xaxis", {}), anchor=yname)
        yaxis = dict(lay.get("yaxis", {}))
        lo, hi = edges[k]
        if rows:
            xaxis["anchor"] = yname
            out.layout[f"xaxis{suffix}"] = xaxis
            out.layout[f"yaxis{suffix}"] = dict(yaxis, domain=[lo, hi], anchor=xname)
            ref = {"xref": xname, "yref": f"{yname} domain"}
        else:
            out.layout[f"xaxis{suffix}"] = dict(xaxis, domain=[lo, hi])
            if k == 0:
                out.layout["yaxis"] = yaxis
            ref = {"xref": xname, "yref": "paper"}
        for shape in lay.get("shapes", []):
            out.layout.setdefault("shapes", []).append(
                dict(
                    shape,
                    xref=ref["xref"],
                    yref=ref["yref"] if shape.get("yref") == "paper" else shape.get("yref", yname),
                )  # fmt: skip
            )
        for note in lay.get("annotations", []):
            yref = ref["yref"] if note.get("yref") == "paper" else note.get("yref", yname)
            xref = f"{xname} domain" if str(note.get("xref", "")).endswith("domain") else xname
            out.layout.setdefault("annotations", []).append(dict(note, xref=xref, yref=yref))
        heading = lay.get("title", {}).get("text")
        if heading:
            out.add_annotation(
                text=f"<b>{heading}</b>", showarrow=False, x=0 if rows else lo, xref="paper",
                y=1, yref=f"{yname} domain" if rows else "paper", xanchor="left",
                yanchor="bottom", yshift=8 if rows else 34, font={"size": 14},
            )  # fmt: skip
        for key in ("barmode", "hoverlabel"):
            if key in lay:
                out.layout[key] = lay[key]
        if "legend" in lay and not hide_legend and not rows:  # above its panel
            out.layout["legend"] = dict(lay["legend"], x=lo)
    out.layout.update(
        title={"text": title, "x": 0, "xanchor": "left"},
        height=sum(heights) if rows else max(heights),
        margin={"l": 10, "r": 10, "t": top + (40 if rows else 0), "b": 10},
    )
    if rows:  # one legend, one entry per line, above the first panel's heading
        entries = _legend_entries(out)
        out.layout["legend"] = {"orientation": "v", "x": 0, "xanchor": "left", "yanchor": "bottom",
                                "y": 1 + 40 / plot_px, "traceorder": "normal"}  # fmt: skip
        out.layout["title"].update(y=1, yref="container", yanchor="top", pad={"t": 10})
        out.layout["margin"]["t"] = TITLE_PX + 40 + LEGEND_ROW_PX * entries + 12
        out.layout["height"] = out.layout["margin"]["t"] + plot_px + 10
    return out
