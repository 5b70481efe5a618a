"""The scenario's URL parameters: names, defaults, parsing and clamping.

Pure Python (no streamlit) so it is tested directly.  Names are short and stable: shared links
depend on them; docs/links.md lists them.  ``parse_query`` turns a query mapping into clean values
plus human-readable warnings for everything it had to replace or clamp.  Warnings are shown as
markdown: every value taken from the link goes through ``mdtext.shown`` (escaped, truncated).
"""

from __future__ import annotations

import math
import sys
from dataclasses import replace

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.compare import AUTO, default_variants
from kvmodel.modelcodec import ID_PATTERN, decode_model, slug
from kvmodel.size import splits_heads
from kvview.fmt import fmt_sig
from kvview.mdtext import md_escape, shown

MAX_BATCH = I.MAX_BATCH
MAX_TP = I.MAX_TP
CUSTOM_LINK = I.CUSTOM_LINK
IMPORTED_PREFIX = I.IMPORTED_PREFIX

PARAMS = I.URL_INPUTS  # one row per link parameter, in the link's order (kvmodel.inputs)
LIST_PARAMS = tuple(p.name for p in PARAMS if p.kind == "ids" and p.choices is not None)
DEFAULTS = {p.name: p.default for p in PARAMS}
LABELS = {p.name: p.label_unit for p in PARAMS}


def link_ids() -> list[str]:
    return list(dict.fromkeys(lk.id for lk in catalog.links().values()))


def _closest(kind, given, valid) -> str:
    err = catalog.UnknownIdError(kind, given, valid)
    return f" (closest: {', '.join(err.closest)})" if err.closest else ""


def _number(raw, name, lo, hi, *, integer, warnings, default):
    """Parse and clamp one number; warn on junk or clamping."""
    try:
        value = float(str(raw).strip())
        if not math.isfinite(value):
            raise ValueError
    except ValueError:
        warnings.append(f"{name}={shown(raw)} is not a number; using {default:g}.")
        return default
    if value != 0 and abs(value) < sys.float_info.min:  # subnormal: 1/value overflows
        warnings.append(f"{name}={shown(raw)} is too close to 0 to compute with; using 0.")
        value = 0.0
    if integer and value != int(value):
        warnings.append(f"{name}={shown(raw)} is not a whole number; using {round(value):g}.")
        value = float(round(value))
    clamped = min(max(value, lo), hi)
    if clamped != value:
        warnings.append(
            f"{name}={md_escape(str(raw)[:80], inline=True)} is outside {_n(lo)}–{_n(hi)} "
            f"({LABELS[name]}); using {_n(clamped)}."
        )
    return I.get(name).typed(clamped)  # min/max keep the bound's type: 0, not 0.0 (issue 23)


def _n(x: float) -> str:  # 10,000,000 rather than 1e+07
    return fmt_sig(x, 6) if abs(x) < 1e15 else f"{x:g}"


def parse_query(query) -> tuple[dict, list[str], dict]:
    """Clean scenario values from a query mapping.

    Returns (values, warnings, imported) where ``imported`` maps an imported model id to its
    ModelSpec when ``cfg`` carried one.  Unknown parameters are ignored.
    """
    q = {k: query[k] for k in query}
    warnings: list[str] = []
    v = dict(DEFAULTS)
    imported, renamed = _read_cfg(q, v, warnings)
    spec = _read_ids(q, v, warnings, imported, renamed)
    _read_values(q, v, warnings, spec)
    _read_lists(q, v, warnings)
    return v, warnings, imported


def _read_cfg(q, v, warnings) -> tuple[dict, dict]:
    """An imported model carried by ``cfg``: {id: ModelSpec}, and {the id it gave: its id}."""
    imported = {}
    models = catalog.models()
    renamed = {}  # the id a link's cfg gave -> the id it is imported under
    if q.get("cfg"):
        try:
            spec = decode_model(q["cfg"])
        except ValueError as exc:
            warnings.append(
                f"cfg: the imported model in this link is unreadable ({md_escape(exc)})."
            )
        else:
            mid = imported_id(spec.id)
            if mid != spec.id:  # never read as a catalog model (or under a markdown id)
                renamed[spec.id.strip().lower()] = mid
                clash = "is a catalog model's id" if spec.id in models else "is not a cfg- slug"
                warnings.append(
                    f"cfg: the imported model's id {shown(spec.id)} {clash}; it is imported as "
                    f"{mid} (pick it in the sidebar)."
                )
                spec = replace(spec, id=mid)
            imported[mid] = spec
            v["cfg"] = q["cfg"]
    return imported, renamed


def _read_ids(q, v, warnings, imported, renamed):
    """Model, interconnect, GPU and stack ids (a link without ``stack`` reads as version 1);
    returns the model's spec."""
    models = catalog.models()
    if "model" in q:
        mid = str(q["model"]).strip().lower()
        if mid in models:
            v["model"] = models[mid].id
        elif mid in imported or renamed.get(mid) in imported:
            v["model"] = mid if mid in imported else renamed[mid]
        else:
            warnings.append(
                f"model={shown(q['model'])} is not a known model"
                f"{_closest('model', mid, models)}; showing {DEFAULTS['model']}."
            )
    spec = imported.get(v["model"]) or models[v["model"]]
    if "link" in q:
        lid = str(q["link"]).strip().lower()
        if lid in link_ids() or lid == CUSTOM_LINK:
            v["link"] = lid
        else:
            warnings.append(
                f"link={shown(q['link'])} is not a known interconnect"
                f"{_closest('link', lid, catalog.links())}; showing {DEFAULTS['link']}."
            )
    if "gpu" in q:
        gid = str(q["gpu"]).strip().lower()
        if gid in catalog.gpus():
            v["gpu"] = gid
        else:
            warnings.append(f"gpu={shown(q['gpu'])} is not a known GPU; showing {DEFAULTS['gpu']}.")
    if q.get("gpud"):
        gid = str(q["gpud"]).strip().lower()
        if gid in catalog.gpus():
            v["gpud"] = "" if gid == v["gpu"] else gid
        else:
            warnings.append(f"gpud={shown(q['gpud'])} is not a known GPU; decoding on the "
                            "prefill GPU.")  # fmt: skip
    if "stack" in q:
        sid = str(q["stack"]).strip().lower()
        if sid in catalog.stacks():
            v["stack"] = sid
        else:
            warnings.append(
                f"stack={shown(q['stack'])} is not a known transfer stack"
                f"{_closest('stack', sid, catalog.stacks())}; showing {DEFAULTS['stack']}."
            )
    elif is_version1(q):
        # A link made before transfer stacks existed: keep its meaning (wire speed, TP
        # attention, and version 1's defaults for what it left out: a 30 ms step, TP 1), as
        # docs/links.md's "Version-1 links" says.
        v.update(I.V1_DEFAULTS)
    return spec


def _read_values(q, v, warnings, spec) -> None:
    """The model's defaults, the choices, the numbers (within the rows' ranges, seq up to the
    model's context), the TPs and the estimated times."""
    for row in (r for r in PARAMS if r.default_from):  # attn, kvd: the model's own
        if v[row.name] is None or row.name not in q and v[row.name] == row.default:
            v[row.name] = row.default_for(spec)
    choices = {p.name: p.allowed() for p in PARAMS if p.kind == "choice"}
    for name, allowed in choices.items():
        if name in q:
            raw = str(q[name]).strip().lower()
            if raw in allowed:
                v[name] = raw
            else:
                warnings.append(
                    f"{name}={shown(q[name])} is not one of {', '.join(allowed)}; using {v[name]}."
                )
    ranges = {
        p.name: (p.lo, p.hi_for(spec), p.kind != "float")
        for p in PARAMS
        if p.kind in ("int", "float", "flag") and not p.est
    }
    for name, (lo, hi, integer) in ranges.items():
        if name in q:
            v[name] = _number(
                q[name], name, lo, hi, integer=integer, warnings=warnings, default=v[name]
            )
    _tensor_parallel(q, v, spec, warnings)
    _expert_parallel(q, v, spec, warnings)
    _custom_link(q, v, warnings)
    for row in (r for r in PARAMS if r.est and r.name in q):  # prefill, step
        raw = str(q[row.name]).strip().lower()
        if raw in I.EST_WORDS:
            v[row.name] = "est"
            continue
        try:
            float(raw)
        except ValueError:
            warnings.append(
                f"{row.name}={shown(q[row.name])} is neither milliseconds nor 'est'; "
                "estimating it from the model and GPU."
            )
            v[row.name] = "est"  # as said, also where a version-1 link would imply a time
            continue
        v[row.name] = _number(
            raw, row.name, row.lo, row.hi, integer=False, warnings=warnings, default=0.0
        )
        if row.lo_open and v[row.name] == 0.0:  # the step: 0 is no time, so an estimate
            v[row.name] = "est"


def _read_lists(q, v, warnings) -> None:
    """The page inputs with their own formats: id lists, batches, the band, compared scenarios."""
    for name, table in (("links", link_ids()), ("models", catalog.model_ids())):
        if name in q:
            v[name] = _id_list(q[name], name, table, warnings, v[name])
    if "batches" in q:
        row = I.get("batches")
        v["batches"] = _int_list(q["batches"], "batches", row.lo, row.hi, warnings, v["batches"])
    if "band" in q:
        v["band"] = _band(q["band"], warnings)
    if "cmp" in q:
        v["cmp"] = _compare(q["cmp"], v, warnings)


def is_version1(query) -> bool:
    """A link made before transfer stacks: scenario keys but no ``stack`` (``kvview.link_version``
    says what that implies)."""
    return (
        "stack" not in query
        and any(k in query for k in SCENARIO_KEYS)
        and not any(k in query for k in I.AFTER_V1_KEYS)  # keys no version-1 link had
    )


TP_ROWS = ("tp", "tpd")  # a divisor or multiple of every KV-head count (``Input.help``)
EP_ROWS = ("ep", "epd")


def _expert_parallel(q, v, spec, warnings) -> None:
    """Expert parallelism only for a mixture of experts: on a dense model a link's EP is
    dropped with a notice (the sidebar has no EP control for it, so a stop would leave the
    user nothing to change but the link); on a mixture of experts an EP that is not a
    multiple of its TP becomes the nearest multiple (:func:`ep_multiple`)."""
    if spec.experts:
        for name, tp_name in zip(EP_ROWS, TP_ROWS, strict=True):
            ep, tp = v[name], v[tp_name]
            if name in q and ep != 1 and ep % tp:
                v[name] = ep_multiple(ep, tp)
                warnings.append(
                    f"{name}={ep} ({LABELS[name]}) is not a multiple of its TP ({tp}): "
                    f"attention runs on EP ÷ TP data-parallel groups of TP GPUs; using "
                    f"{v[name]}."
                )
        return
    for name in (n for n in EP_ROWS if n in q and v[n] != 1):
        warnings.append(
            f"{name}={v[name]} ({LABELS[name]}): {spec.name} is a dense model, with no experts "
            "to spread over GPUs; using 1 (no expert parallelism)."
        )
        v[name] = 1


def ep_multiple(ep: int, tp: int) -> int:
    """The multiple of ``tp`` nearest ``ep`` (the larger on a tie, at least ``tp``), kept
    within the EP row's upper bound."""
    hi = I.get("ep").hi // tp * tp
    return min(max(tp, tp * round(ep / tp + 1e-9)), max(hi, tp))


def _custom_link(q, v, warnings) -> None:
    """``bw`` and ``lat`` describe the custom interconnect only: say so when a link gives them
    with another one (they were dropped without a word)."""
    given = [n for n in ("bw", "lat") if n in q]
    if given and v["link"] != "custom":
        warnings.append(
            f"{' and '.join(given)} set the custom interconnect only (link=custom); this link "
            f"uses {v['link']}, so {'they are' if len(given) > 1 else 'it is'} not used."
        )


def _tensor_parallel(q, v, spec, warnings) -> None:
    """Prefill and decode TP that fit the model's KV heads (else the row's default, or 1 when
    that does not fit either); an absent ``tpd`` follows the prefill TP (its row's
    ``follows``)."""
    for name in (n for n in TP_ROWS if n in q or not I.get(n).follows):
        if splits_heads(spec, v[name]):
            continue
        heads = " and ".join(map(str, sorted({g.kv_heads for g in spec.groups})))
        default = I.V1_DEFAULTS[name] if is_version1(q) else I.get(name).default
        fallback = default if splits_heads(spec, default) else 1
        warnings.append(
            f"{name}={v[name]} ({LABELS[name]}) does not divide {spec.name}'s {heads} KV "
            f"heads and is not a multiple of them; using {fallback}."
        )
        v[name] = fallback
    for row in (I.get(n) for n in TP_ROWS):
        if row.follows and row.name not in q:
            v[row.name] = row.default_for(spec, v)


def imported_id(given: str) -> str:
    """The id an imported model is kept under: a ``cfg-`` slug, so it never equals a catalog
    id (no catalog id starts with ``cfg-``) nor carries markdown into a message."""
    if given.startswith(IMPORTED_PREFIX) and ID_PATTERN.fullmatch(given):
        return given
    base = slug(given).removeprefix(IMPORTED_PREFIX) or "model"
    return f"{IMPORTED_PREFIX}{base}"[:100]


def _id_list(raw, name, valid, warnings, default) -> str:
    ids = [i.strip().lower() for i in str(raw).split(",") if i.strip()]
    good = [i for i in dict.fromkeys(ids) if i in valid]
    bad = [i for i in ids if i not in valid]
    if bad:
        warnings.append(f"{name}: dropped unknown id(s) {', '.join(map(shown, bad[:10]))}.")
    if not good:
        warnings.append(f"{name}: nothing valid left; using {default}.")
        return default
    return ",".join(good)


def _int_list(raw, name, lo, hi, warnings, default) -> str:
    out = []
    for part in str(raw).split(","):
        try:
            n = int(part.strip())
        except ValueError:
            warnings.append(f"{name}: {shown(part.strip())} is not a whole number; dropped.")
            continue
        if not lo <= n <= hi:
            warnings.append(f"{name}: {n} is outside {lo}–{hi}; dropped.")
            continue
        out.append(n)
    if not out:
        warnings.append(f"{name}: nothing valid left; using {default}.")
        return default
    return ",".join(str(n) for n in sorted(set(out)))


def band_ms(text: str) -> tuple[float, float]:
    lo, hi = (float(x) for x in str(text).split("-", 1))
    return lo, hi


def _band(raw, warnings) -> str:
    try:
        lo, hi = band_ms(raw)
        if not (0 < lo < hi <= 100_000):
            raise ValueError
    except ValueError:
        warnings.append(f"band={shown(raw)} is not LOW-HIGH in ms (e.g. 20-50); using 20-50.")
        return DEFAULTS["band"]
    return f"{lo:g}-{hi:g}"


SCENARIO_KEYS = I.SCENARIO_KEYS  # what a compared scenario (Compare, `cmp`) may change
MAX_COMPARED = 3  # variants besides the sidebar's scenario


def parse_overrides(text: str) -> dict[str, str]:
    """``link:ib-ndr~comp:int8`` → {"link": "ib-ndr", "comp": "int8"} (unknown keys kept)."""
    out = {}
    for part in str(text).split("~"):
        if ":" in part:
            k, val = part.split(":", 1)
            out[k.strip().lower()] = val.strip()
    return out


def format_overrides(overrides: dict) -> str:
    return "~".join(f"{k}:{v}" for k, v in overrides.items())


MODEL_DERIVED = tuple(p.name for p in PARAMS if p.default_from)  # attn, kvd: the model's own


def variant_values(base: dict, overrides: dict) -> tuple[dict, list[str]]:
    """A compared scenario: the base values with ``overrides`` applied, validated.

    What A (``base``) takes from its own model (``MODEL_DERIVED``: attention parallelism and
    KV dtype, ``implicit_values``) is derived again from the variant's model, unless A's value
    differs from its model's (then the user set it and the variant keeps it).  So a variant on
    DeepSeek-V3 of a Llama A serves attention data-parallel, as DeepSeek-V3's own page does.
    Everything else follows A as before (a variant's ``tp`` alone keeps A's decode TP: old
    ``cmp`` links keep their meaning).
    """
    query = to_query(base)
    implicit = implicit_values(base)
    for name in MODEL_DERIVED:
        if name in implicit and query.get(name) == implicit[name]:
            query.pop(name)
    query.update({k: str(v) for k, v in overrides.items()})
    query.pop("cmp", None)
    values, warnings, _ = parse_query(query)
    return values, warnings


def derived_changes(base: dict, values: dict, overrides: dict) -> list[str]:
    """The inputs of a variant (``values``) that differ from A's (``base``) without being among
    its ``overrides``: what it derives again from its own model (attention, KV dtype) or
    other inputs (decode TP), or what its model clamps (sequence length)."""
    a, b = to_query(base), to_query(values)
    return [k for k in SCENARIO_KEYS if k not in overrides and a.get(k) != b.get(k)]


def compared(text: str, base: dict) -> list[dict[str, str]]:
    """The variants of a clean ``cmp`` value: ``auto`` → made from A (``base``), else parsed."""
    if str(text).strip().lower() == AUTO:
        return default_variants(base)
    return [parse_overrides(t) for t in str(text).split(";") if t.strip()]


def _overrides_problem(text: str, over: dict) -> str:
    """What is wrong with one compared scenario's changes, in words ('' when nothing is)."""
    unknown = [k for k in over if k not in SCENARIO_KEYS]
    loose = [p for p in str(text).split("~") if p.strip() and ":" not in p]
    what = []
    if unknown:
        what.append(f"unknown input{'s' if len(unknown) > 1 else ''} "
                    f"{', '.join(shown(k) for k in unknown)}")  # fmt: skip
    if loose:
        what.append(f"{'parts' if len(loose) > 1 else 'a part'} without a colon "
                    f"({', '.join(shown(p) for p in loose)})")  # fmt: skip
    if not what and not over:
        what.append("no change")
    return "; ".join(what)


def _compare(raw, base: dict, warnings: list[str]) -> str:
    if str(raw).strip().lower() == AUTO:  # variants made from A (kvmodel.compare)
        return AUTO
    kept = []
    for n, text in enumerate(s for s in str(raw).split(";") if s.strip()):
        label = chr(ord("B") + n)
        if n >= MAX_COMPARED:
            warnings.append(f"cmp: at most {MAX_COMPARED} compared scenarios; dropped {label}.")
            continue
        over = parse_overrides(text)
        problem = _overrides_problem(text, over)
        if problem:
            warnings.append(
                f"cmp: scenario {label} {shown(text)}: {problem}, ignored (each change is "
                f"key:value, the key one of the link's scenario keys: {', '.join(SCENARIO_KEYS)})."
            )
            over = {k: val for k, val in over.items() if k in SCENARIO_KEYS}
            if not over:
                continue
        values, extra = variant_values(base, over)
        warnings.extend(f"cmp scenario {label}: {w}" for w in extra)
        clean = to_query(values)
        kept.append(format_overrides({k: clean.get(k, values[k]) for k in over}))
    return ";".join(kept)


def to_query(values: dict) -> dict[str, str]:
    """Values → query parameters (strings), in PARAMS order; ``cfg`` only when used."""
    out = {}
    for p in PARAMS:
        val = values.get(p.name, p.default)
        if not p.applies(values) or p.only_with and val == "":  # only_with: bw, lat, cfg
            continue
        out[p.name] = f"{val:g}" if isinstance(val, float) else str(val)
    return out


def implicit_values(values: dict) -> dict[str, str]:
    """What reading a link gives for each key it leaves out, as query text: the row's default,
    except ``tpd`` (the prefill TP), ``attn`` and ``kvd`` (the model's own; unknown for an
    imported model, so its link always carries them)."""
    out = {p.name: f"{p.default:g}" if isinstance(p.default, float) else str(p.default)
           for p in PARAMS}  # fmt: skip
    spec = catalog.models().get(values.get("model", DEFAULTS["model"]))
    for p in PARAMS:
        if p.follows:  # tpd: the prefill TP
            out[p.name] = str(values.get(p.follows, DEFAULTS[p.follows]))
        elif p.default_from and spec is None:  # an imported model: its defaults are in its cfg
            out.pop(p.name)
        elif p.default_from:  # attn, kvd: the model's own
            out[p.name] = str(p.default_for(spec))
    return out


def to_link_query(values: dict) -> dict[str, str]:
    """The short link's query: only the values that differ from what the link reads without
    them (``implicit_values``), plus ``stack`` whenever anything is written.

    A link with scenario keys and no ``stack`` reads as a version-1 link (``parse_query``,
    ``V1_DEFAULTS``), so ``stack`` marks every non-empty link as version 2; the empty query is
    the default scenario.  ``parse_query(to_link_query(v))`` gives ``v`` back (tested).
    """
    full = to_query(values)
    implicit = implicit_values(values)
    out = {k: val for k, val in full.items() if k == "stack" or implicit.get(k) != val}
    return out if len(out) > 1 or out.get("stack") != implicit["stack"] else {}


def scenario_from_values(values: dict, imported: dict | None = None):
    """A kvmodel Scenario from clean parameter values (``parse_query`` output)."""
    from kvmodel.build import to_scenario

    v = I.applicable(values)  # bw and lat belong to a custom link only (``only_with``)
    spec = (imported or {}).get(v["model"]) or catalog.get_model(v["model"])
    return to_scenario(v, model=spec)
