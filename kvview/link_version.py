"""Link versions: what a version-1 link implies, and the way to today's defaults.

A link with scenario keys and no ``stack`` was made before transfer stacks existed (version
1).  ``kvview.params.parse_query`` keeps its meaning: what it leaves out takes version 1's
defaults (``kvmodel.inputs.V1_DEFAULTS``: the ideal stack at wire speed, TP 1, a 30 ms decode
step, tp attention, Compare's old variants).  Read silently, that is a misleading answer
(issue 24: a 30 ms step below the model's own 42.3 ms roofline), so this module names it:

- ``implied`` (per link) and ``still_implied`` (per run, once the user changed some inputs):
  which version-1 defaults are in effect;
- ``notice`` (markdown for the page) and ``defaults_sentence`` (one line for the handouts);
- ``with_current_defaults``: the same scenario with today's defaults for those inputs (the
  page's "use current defaults" button writes it back as a version-2 link).
"""

from __future__ import annotations

from kvmodel import catalog
from kvmodel import inputs as I
from kvview import params as P


def implied(query) -> dict:
    """The version-1 defaults a link's ``query`` relies on (input name → value); empty for a
    version-2 link (or the empty one)."""
    q = {str(k): query[k] for k in query}
    if not P.is_version1(q):
        return {}
    return {k: v for k, v in I.V1_DEFAULTS.items() if k not in q}


def still_implied(implied_: dict, values: dict) -> dict:
    """The part of ``implied_`` the scenario (clean ``values``) still holds: an input the user
    has changed since the link opened is no longer version 1's default."""
    return {k: v for k, v in implied_.items() if str(values.get(k)) == str(v)}


def with_current_defaults(values: dict, implied_: dict) -> dict:
    """``values`` (clean) with today's defaults for the ``implied_`` inputs: the row's default
    (the Mooncake stack, TP 8, an estimated step, Compare's variants made from A), the decode
    TP following the prefill TP, the model's own attention parallelism."""
    query = P.to_query(values)
    for name in implied_:
        query.pop(name, None)
    query["stack"] = str(values["stack"]) if "stack" not in implied_ else P.DEFAULTS["stack"]
    return P.parse_query(query)[0]


def _stack_name(stack_id: str) -> str:
    stack = catalog.stacks().get(stack_id)
    return f"the {stack.name} stack" if stack else f"stack {stack_id}"


ATTENTION_WORDS = {"tp": "tensor-parallel attention", "dp": "data-parallel attention"}


def _change_words(key: str, value: str) -> str:
    """One change of a Compare variant in words: 'INT8 compression', 'InfiniBand NDR …'."""
    if key == "link":
        link = catalog.links().get(value)
        return f"the {link.name} link" if link else f"link {value}"
    if key == "stack":
        return _stack_name(value)
    if key == "comp":
        return "no compression" if value == "none" else f"{value.upper()} compression"
    if key == "attn":
        return ATTENTION_WORDS.get(value, f"{value} attention")
    try:
        return f"{I.get(key).label.lower()} {value}"
    except KeyError:
        return f"{key} {value}"


def _words(name: str, value) -> str:
    """One implied value in words: 'TP 1', 'a 30 ms decode step'."""
    if name == "stack":
        return _stack_name(str(value))
    if name == "attn":
        return ATTENTION_WORDS.get(str(value), f"{value} attention")
    if name == "step":
        return (
            "an estimated decode step" if value == "est" else f"a {float(value):g} ms decode step"
        )
    if name == "fw":
        if value == "none":
            return "no serving framework's own costs"
        fw = catalog.frameworks().get(str(value))
        return f"the {fw.name} serving framework" if fw else f"serving framework {value}"
    if name == "tp":
        return f"prefill TP {value}"
    if name == "tpd":
        return f"decode TP {value}"
    if name == "cmp":
        if value == "auto":
            return "Compare's variants made from A"
        variants = [P.parse_overrides(t) for t in str(value).split(";") if t.strip()]
        said = "; ".join(" and ".join(_change_words(k, v) for k, v in o.items()) for o in variants)
        return f"Compare's variants ({said})"
    return f"{I.get(name).label} {value}"


def implied_words(implied_: dict) -> str:
    """'the Ideal stack (wire speed), prefill TP 1, …' in the order of ``V1_DEFAULTS``."""
    return ", ".join(_words(k, v) for k, v in implied_.items())


def notice(implied_: dict, values: dict) -> str:
    """The page's notice (markdown): what this version-1 link implies and what today's
    defaults would give instead (``values``: the scenario now)."""
    now = with_current_defaults(values, implied_)
    instead = implied_words({k: now[k] for k in implied_ if k in now})
    if "step" in implied_ and now["step"] == "est":
        try:  # the number the estimate gives (an imported model's spec is not at hand here)
            step_s = P.scenario_from_values(now).decode_step_s
        except (ValueError, LookupError):
            step_s = None
        if step_s is not None:
            instead = instead.replace(
                "estimated decode step", f"estimated {step_s * 1e3:.1f} ms step"
            )
    return (
        "**This is a version-1 link** (it has scenario inputs but no `stack`, so it was made "
        "before transfer stacks existed). It keeps its old meaning: what it leaves out is "
        f"read with version 1's defaults: {implied_words(implied_)}. Today's defaults would "
        f"give {instead}."
    )


def defaults_sentence(implied_: dict | None) -> str:
    """One line for a handout (HTML report): which link version and defaults it used."""
    if implied_:
        return (
            "Read from a version-1 link (no transfer stack in it): its inputs left out take "
            f"version 1's defaults: {implied_words(implied_)}."
        )
    return (
        "Link version 2: inputs not set take today's defaults (the model's own attention "
        "parallelism and KV dtype, the decode TP of the prefill, an estimated step unless "
        "given)."
    )
