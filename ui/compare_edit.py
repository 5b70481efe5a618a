"""Compare's variant editor: each variant is a set of changes to A, one widget per change.

Any scenario input (``kvmodel.inputs.SCENARIO_KEYS``) can be changed: "Add a change" lists the
inputs by their label and unit; the change then gets a widget of its input's kind (a choice, a
whole or decimal number within the input's range, milliseconds or ``est``, on/off) with the
input's help, and a button that removes it.  The variants are written to ``cmp`` in its
``key:value~key:value;…`` form (``kvview.params.format_overrides``); the page owns the callbacks.
"""

from __future__ import annotations

import streamlit as st

from kvmodel import catalog
from kvmodel import inputs as I
from kvview import params as P
from kvview.figures.kit import link_name
from ui import urlstate

EST = "est"


def kind(name: str) -> str:
    """The widget an input's change gets: select, int, float, est (ms or 'est') or flag."""
    row = I.get(name)
    if row.est:
        return "est"
    if row.kind in ("id", "choice"):
        return "select"
    return {"int": "int", "float": "float", "flag": "flag"}[row.kind]


def options(name: str, base: dict) -> list[str]:
    """The values a select change offers (an imported model of A's is offered too)."""
    if name == "model":
        ids = catalog.model_ids()
        return ids + ([base["model"]] if base["model"] not in ids else [])
    if name == "link":
        return [*P.link_ids(), P.CUSTOM_LINK]
    return list(I.get(name).allowed())


def _names() -> dict:
    models = catalog.models()
    return {
        "model": lambda m: models[m].name if m in models else m,
        "link": lambda lk: "Custom link" if lk == P.CUSTOM_LINK else link_name(lk),
        "gpu": lambda g: catalog.gpus()[g].name,
        "gpud": lambda g: catalog.gpus()[g].name if g else "the prefill GPU",
        "stack": lambda s: catalog.stacks()[s].name,
    }


def text(name: str, value) -> str:
    """A widget's value as it is written in ``cmp``."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value).strip()


def addable(over: dict, values: dict) -> list[str]:
    """Inputs a variant can still change (custom bandwidth and latency only on a custom link)."""
    return [k for k in P.SCENARIO_KEYS if k not in over and I.get(k).applies(values)]


def start_value(name: str, values: dict) -> str:
    """A new change starts at the variant's current value (a flag starts switched)."""
    if kind(name) == "flag":
        return "0" if int(values[name]) else "1"
    return text(name, values[name])


def seed(key: str, name: str, values: dict, base: dict) -> None:
    """Put the variant's clean value in the widget's state before the widget is drawn."""
    k, v = kind(name), values[name]
    ss = st.session_state
    if k == "flag":
        ss[key] = bool(int(v))
    elif k == "int":
        ss[key] = int(v)
    elif k == "float":
        ss[key] = float(v)
    elif k == "est":
        ss[key] = EST if v == EST else f"{float(v):g}"
    else:
        opts = options(name, base)
        ss[key] = v if v in opts else opts[0]


# The flags' labels in a variant's column ("Send layer by layer" was cut to "Send layer b…"),
# as the comparison table names their rows (kvview.compare_cells)
TOGGLE_LABELS = {"lw": "Layer-wise"}


def widget(key: str, name: str, values: dict, base: dict, on_change, args) -> None:
    """The widget of one change, labelled with the input's label and unit, with its help."""
    row, k = I.get(name), kind(name)
    helptext = row.help + (f" (range {row.range_text()})" if row.lo is not None else "")
    common = {"key": key, "on_change": on_change, "args": args, "help": helptext}
    if k == "flag":  # a toggle's label has a third of a column: the comparison row's name
        st.toggle(TOGGLE_LABELS.get(name, row.label), **common)
    elif k == "select":
        fmt = _names().get(name, str)
        st.selectbox(row.label_unit, options(name, base), format_func=fmt, **common)
    elif k == "est":
        st.text_input(row.label_unit, placeholder="ms, or est", **common)
    elif k == "int":
        model = urlstate.model_spec(values["model"]) if row.max_from else None
        hi = row.hi_for(model)  # seq: up to the variant's model's context
        st.number_input(row.label_unit, int(row.lo), None if hi is None else int(hi), step=1,
                        **common)  # fmt: skip
    else:
        st.number_input(row.label_unit, float(row.lo), float(row.hi), **common)


COUNTED = ("requests", "tokens", "GPUs")  # units with a singular: 1 request, 1 token, 1 GPU


def describe(name: str, values: dict) -> str:
    """One change in words, for presentation mode: 'Transfer compression: int8',
    'Batch: 16 requests', 'Send layer by layer: on'."""
    row, k, v = I.get(name), kind(name), values[name]
    if k == "flag":
        shown = "on" if int(v) else "off"
    elif k == "select":
        shown = _names().get(name, str)(v)
    elif k == "est" and v == EST:
        shown = "estimated"
    else:
        shown = f"{v:,}" if isinstance(v, int) else f"{float(v):,.6g}"
        one = row.unit in COUNTED and float(v) == 1  # '1 request', not '1 requests'
        shown += f" {row.unit[:-1] if one else row.unit}" if row.unit else ""
    return f"{row.label}: {shown}"
