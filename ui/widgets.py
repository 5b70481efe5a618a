"""The widget factory (``input_widget``: every input's widget from its row), page-level inputs
kept in session state, and the keep/forget helpers of uploads.

A page's own inputs (``page_widget``) are stored under their URL name, so they survive pages
that do not draw them; ``kept_widget`` does the same for inputs outside the URL.
"""

from __future__ import annotations

import streamlit as st

from kvmodel import inputs as I
from kvview.mdtext import md_escape

NUMBER_WIDGETS = ("number_input", "slider")
CHOICE_WIDGETS = ("selectbox", "radio")


def input_widget(widget, name: str, *, model=None, label: str | None = None, key=None, **kw):
    """The widget of input ``name``: label, range, help, step, format and options from its row
    (``kvmodel.inputs``); ``kw`` adds or overrides Streamlit arguments.

    ``widget`` is a Streamlit widget function (``st.sidebar.slider``, ``c1.number_input``, …);
    ``model`` caps the range where the row says so (``max_from``).  A scenario input is keyed
    by its name (or ``key``); a page input goes through ``page_widget`` (``w_<name>``)."""
    row = I.get(name)
    kind = getattr(widget, "__name__", "")
    kw.setdefault("help", row.widget_help)
    if kind in NUMBER_WIDGETS:
        cast = int if row.kind in ("int", "flag") else float
        lo, hi = row.wrange or (row.lo, row.hi_for(model))
        kw.setdefault("min_value", cast(lo))
        kw.setdefault("max_value", cast(hi))
        if row.wstep is not None:
            kw.setdefault("step", cast(row.wstep))
        if row.wfmt:
            kw.setdefault("format", row.wfmt)
    if kind in CHOICE_WIDGETS and "options" not in kw:
        kw["options"] = list(row.allowed())
    label = row.widget_label if label is None else label
    if row.page:
        return page_widget(widget, label, name, **kw)
    key = key or name
    if kind == "number_input":  # the first paint shows the session's value (number_value)
        kw.setdefault("value", number_value(key, kw["min_value"], kw["max_value"]))
    return widget(label, key=key, **kw)


def number_value(key: str, lo, hi):
    """The session's value for a number box, within its range and of its range's type.

    Streamlit's number box paints its proto ``default`` (the minimum, when no ``value`` is
    given) before it applies the value set through session state.  Under load that first
    paint lasted long enough to be seen, and clicked: 20 sessions opened from links at once
    showed Batch = 1 in 11 of them (tests/e2e/test_load.py).  Passing the session's value as
    the default makes both paints agree; the key still holds the state.
    """
    value = min(max(st.session_state[key], lo), hi)
    return float(value) if isinstance(lo, float) else int(value)


ESTIMATE, GIVEN = "Estimate", "Given"


def est_widgets(name: str) -> None:
    """An input that the model can estimate (``est``): a radio Estimate/Given (``<name>_mode``)
    and, when given, its number box (``<name>_ms``, in the row's unit)."""
    row = I.get(name)
    st.radio(row.widget_label, (ESTIMATE, GIVEN), key=f"{name}_mode", horizontal=True,
             help=row.widget_help)  # fmt: skip
    if st.session_state[f"{name}_mode"] == GIVEN:
        input_widget(st.number_input, name, key=f"{name}_ms", label=row.label_unit, help=None)


def page_widget(widget, label: str, name: str, *, to_widget=None, from_widget=None, then=None,
                **kwargs):  # fmt: skip
    """A page-level input stored under its URL name, so it survives pages that do not draw it.

    The widget gets the key ``w_<name>``; its value is copied to ``name`` on change, and then
    ``then(old value, new value)`` is called (a callback: ``st.rerun`` of a named fragment
    there reruns that fragment only, not the app).
    """
    ss = st.session_state
    to_widget = to_widget or (lambda v: v)
    from_widget = from_widget or (lambda v: v)
    wkey = f"w_{name}"
    ss[wkey] = to_widget(ss[name])

    def _store():
        old = ss[name]
        ss[name] = from_widget(ss[wkey])
        if then is not None:
            then(old, ss[name])

    kind = getattr(widget, "__name__", "")
    if kind in NUMBER_WIDGETS:
        ss[wkey] = _typed_numbers(name, ss[wkey], kwargs)
    if kind == "number_input":  # first paint shows the value, not the minimum (see
        kwargs.setdefault("value", ss[wkey])  # ui.sidebar._number_input)
    return from_widget(widget(label, key=wkey, on_change=_store, **kwargs))


def _typed_numbers(name: str, value, kwargs: dict):
    """The widget's value within its bounds, and value, bounds and step all of the input row's
    type (``kvmodel.inputs``): Streamlit raises MixedNumericTypesError on an int among floats,
    which a link's value once reached (``/traffic?rps=-3``, issue 23)."""
    row = I.BY_NAME.get(name)
    if row is None or row.kind not in ("int", "float") or isinstance(value, (list, tuple)):
        return value
    for k in ("min_value", "max_value", "step"):
        if kwargs.get(k) is not None:
            kwargs[k] = row.typed(kwargs[k])
    lo, hi = kwargs.get("min_value"), kwargs.get("max_value")
    value = value if lo is None else max(value, lo)
    return row.typed(value if hi is None else min(value, hi))


def forget_when_removed(uploader_key: str, kept_key: str) -> None:
    """Uploader callback: the uploader's ✕ forgets the kept upload for good (an uploader left
    empty by a page switch does not call it, so the kept upload is shown again)."""
    if st.session_state.get(uploader_key) is None:
        st.session_state.pop(kept_key, None)


def show_kept_upload(name: str, kept_key: str, button_key: str, note: str = "") -> None:
    """Say that an earlier upload is shown, with a button that forgets it."""
    st.caption(
        f"Showing {md_escape(name)}, uploaded earlier in this session. Upload another file to "
        f"replace it, or remove it with Forget.{' ' + note if note else ''}"
    )
    st.button(
        "Forget this upload",
        key=button_key,
        icon=":material/close:",
        on_click=lambda: st.session_state.pop(kept_key, None),
    )


def kept_widget(widget, label: str, name: str, default, **kwargs):
    """A page-level input outside the URL whose value survives leaving the page: ``name``
    holds it in session state (from ``default``), the widget is ``w_<name>``."""
    st.session_state.setdefault(name, default)
    return page_widget(widget, label, name, **kwargs)


def id_list(name: str) -> list[str]:
    return [i for i in str(st.session_state[name]).split(",") if i]


def offer_own_link(link_id: str, link_name: str, links: list[str]) -> None:
    """Under a page's list of interconnects (``links``): when the sidebar's interconnect is
    not among them, say so, with a button that adds it (the list is the link's own input and
    keeps its meaning; Interconnects and Sequence looked as if they ignored the sidebar).
    Not called in presentation mode (no editing controls there)."""
    if link_id in links:
        return
    row = st.container(horizontal=True, vertical_alignment="center")
    name = md_escape(link_name, inline=True)
    row.caption(f":material/info: The sidebar's interconnect, {name}, is not in this list.")
    row.button(
        f"Add {link_name}",
        key="add_own_link",
        icon=":material/add:",
        on_click=lambda: st.session_state.update(links=",".join([*links, link_id])),
    )


def id_multiselect(label: str, name: str, options: list[str], format_func=str, **kwargs):
    """Multiselect of ids kept as a comma-separated URL value; never empty."""

    def _from(v):
        return ",".join(v) if v else st.session_state[name]

    chosen = page_widget(
        st.multiselect,
        label,
        name,
        options=options,
        format_func=format_func,
        to_widget=lambda v: [i for i in str(v).split(",") if i in options],
        from_widget=_from,
        **kwargs,
    )
    return [i for i in chosen.split(",") if i]
