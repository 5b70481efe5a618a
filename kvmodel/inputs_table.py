"""docs/links.md's table of the inputs (``make readme-inputs``; tests/test_inputs.py checks
it), made from the rows of :mod:`kvmodel.inputs`, which passes them in: this module imports
nothing of the package, so the rows and their table form no import circle."""

from __future__ import annotations


def number_text(x: float) -> str:
    """A range end or default as the docs table and the messages print it (1,024; 0.001)."""
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:,.6g}"


def markdown_table(rows, scenario_keys) -> str:
    """docs/links.md's table of the app's link parameters, made from the rows."""
    lines = [
        "| name | meaning | unit | default | accepted | CLI |",
        "|---|---|---|---|---|---|",
    ]
    for i in (r for r in rows if r.url):
        lines.append(
            f"| `{i.name}` | {i.label}: {i.help}"
            + (f" ({i.page})" if i.page else "")
            + f" | {i.unit or '–'} | {_default_text(i)} | {_accepted_text(i, scenario_keys)} | "
            + (f"`{i.cli}`" if i.cli else "–")
            + " |"
        )
    lines += ["", "CLI-only inputs (the link has no field for them):", ""]
    lines += ["| CLI | meaning | unit | default | accepted |", "|---|---|---|---|---|"]
    for i in rows:
        if not i.url and i.cli:
            lines.append(
                f"| `{i.cli}` | {i.label}: {i.help} | {i.unit or '–'} | "
                f"{_default_text(i)} | {_cli_accepted_text(i)} |"
            )
    return "\n".join(lines)


def _cli_accepted_text(i) -> str:
    """What a CLI-only input accepts: its own words, a range for a number, else the meaning."""
    if i.accepted:
        return i.accepted
    if i.kind in ("int", "float"):
        return i.range_text(model=True) + (", whole" if i.kind == "int" else "")
    if i.kind == "flag":
        return "a flag (no value)"
    if i.kind == "choice":
        return " ".join(f"`{c}`" for c in i.allowed())
    return "see meaning"


def _default_text(i) -> str:
    if i.default_doc:  # from the model or another input (tpd, attn)
        return i.default_doc
    d = i.default
    return "empty" if d == "" else f"`{number_text(d) if isinstance(d, float) else d}`"


def _accepted_text(i, scenario_keys) -> str:
    if i.accepted:
        return i.accepted.replace("{keys}", " ".join(scenario_keys))
    if i.kind == "choice":
        return " ".join(f"`{c}`" for c in i.allowed())
    if i.kind in ("id", "ids"):
        return "catalog ids"
    if i.kind == "flag":
        return "0, 1"
    if i.est:  # prefill, decode step
        return f"{i.range_text()} or `est`"
    if i.kind in ("int", "float") and i.lo is not None:
        return i.range_text() + (", whole" if i.kind == "int" else "")
    return "see meaning"
