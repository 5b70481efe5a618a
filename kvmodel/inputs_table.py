"""docs/links.md's table of the inputs (``make readme-inputs``; tests/test_inputs.py checks
it), made from the rows of :mod:`kvmodel.inputs`.  Kept apart from the rows so that file holds
the inputs themselves (``inputs.markdown_table`` calls this)."""

from __future__ import annotations

from functools import cache

from .inputs import INPUTS, SCENARIO_KEYS, URL_INPUTS, Input, _num


@cache
def markdown_table() -> str:
    """docs/links.md's table of the app's link parameters, made from the rows."""
    lines = [
        "| name | meaning | unit | default | accepted | CLI |",
        "|---|---|---|---|---|---|",
    ]
    for i in URL_INPUTS:
        lines.append(
            f"| `{i.name}` | {i.label}: {i.help}"
            + (f" ({i.page})" if i.page else "")
            + f" | {i.unit or '–'} | {_default_text(i)} | {_accepted_text(i)} | "
            + (f"`{i.cli}`" if i.cli else "–")
            + " |"
        )
    lines += ["", "CLI-only inputs (the link has no field for them):", ""]
    lines += ["| CLI | meaning | unit | default | accepted |", "|---|---|---|---|---|"]
    for i in INPUTS:
        if not i.url and i.cli:
            lines.append(
                f"| `{i.cli}` | {i.label}: {i.help} | {i.unit or '–'} | "
                f"{_default_text(i)} | {i.range_text(model=True)}"
                + (", whole" if i.kind == "int" else "")
                + " |"
            )
    return "\n".join(lines)


def _default_text(i: Input) -> str:
    if i.name == "tpd":
        return "`tp`"
    if i.name == "attn":
        return "`dp` for MLA, else `tp`"
    d = i.default
    return "empty" if d == "" else f"`{_num(d) if isinstance(d, float) else d}`"


def _accepted_text(i: Input) -> str:
    if i.name == "cmp":
        return f"keys {' '.join(SCENARIO_KEYS)}; " + i.accepted
    if i.accepted:
        return i.accepted
    if i.kind == "choice":
        return " ".join(f"`{c}`" for c in i.allowed())
    if i.kind in ("id", "ids"):
        return "catalog ids" if i.name != "batches" else f"whole numbers {i.range_text()}"
    if i.kind == "flag":
        return "0, 1"
    if i.name == "seq":
        return "1 – the model's max context, whole"
    if i.default == "est":  # prefill, decode step
        return f"{i.range_text()} or `est`"
    if i.kind in ("int", "float") and i.lo is not None:
        return i.range_text() + (", whole" if i.kind == "int" else "")
    if i.name == "cfg":
        return "≤ 4,000 characters"
    return "see meaning"
