"""The scenario's URL parameters: names, defaults, parsing and clamping.

Pure Python (no streamlit) so it is tested directly.  Names are short and stable: shared links
depend on them; the README lists them.  ``parse_query`` turns a query mapping into clean values
plus human-readable warnings for everything it had to replace or clamp.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from kvmodel import catalog
from kvmodel.dtypes import COMPRESSION_BITS, KV_DTYPE_BITS
from kvmodel.modelcodec import decode_model
from kvmodel.size import shard_heads
from kvmodel.traffic import CRITERIA, SAMPLES

MAX_BATCH = 4096
MAX_TP = 64
CUSTOM_LINK = "custom"
IMPORTED_PREFIX = "cfg-"  # model ids of imported configs carried in the link by their fields


@dataclass(frozen=True)
class Param:
    name: str  # URL name == session-state key
    label: str
    default: object


PARAMS = (
    Param("model", "model id", "llama-3.1-70b"),
    Param("seq", "sequence length [tokens]", 1024),
    Param("batch", "batch [requests]", 1),
    Param("link", "interconnect id", "100gbe"),
    Param("bw", "custom bandwidth [GB/s per direction]", 12.5),
    Param("lat", "custom latency [µs]", 5.0),
    Param("eff", "link efficiency [%]", 100.0),
    Param("par", "parallel links (0 = one per TP rank)", 0),
    Param("kvd", "KV dtype", "fp16"),
    Param("comp", "transfer compression", "none"),
    Param("lw", "layer-wise sending (0/1)", 0),
    Param("codec", "quantize/dequantize throughput [GB/s]", 1000.0),
    Param("tp", "prefill TP", 1),
    Param("tpd", "decode TP", 1),
    Param("step", "decode step [ms]", 30.0),
    Param("prefill", "prefill [ms] or 'est'", "est"),
    Param("gpu", "GPU id", "h100-sxm"),
    Param("k", "critical threshold k", 1.0),
    Param("share", "TTFT share target [%]", 20.0),
    Param("cfg", "imported model fields", ""),
    # page inputs (also in the link)
    Param("links", "interconnects compared", "nvlink4,ib-ndr,ib-hdr,100gbe"),
    Param("batches", "batches compared", "1,8,32"),
    Param("band", "decode-step band [ms]", "20-50"),
    Param("tl", "timeline option (row number on Mitigations)", 4),
    Param("trace", "traffic sample id (Traffic page)", "azure-conv"),
    Param("minlen", "too short below [tokens] (Traffic page)", 128),
    Param("crit", "transfer-bound criterion: step or share", "step"),
    Param("hit", "prefix-cache hit ratio [%] (0 = the trace's own cached tokens, if any)", 0.0),
    Param("rps", "arrival rate [requests/s] (0 = from timestamps)", 0.0),
    Param(
        "cmp",
        "compared scenarios: overrides key:value~key:value, scenarios split by ;",
        "comp:int8;link:ib-ndr;link:nvlink4",
    ),
    Param("present", "presentation mode (0/1)", 0),
    Param(
        "models",
        "models compared",
        "llama-2-7b,llama-3.1-70b,deepseek-v3,mistral-7b,gemma-3-27b,qwen3.5-27b",
    ),
)
LIST_PARAMS = ("links", "models")
DEFAULTS = {p.name: p.default for p in PARAMS}
LABELS = {p.name: p.label for p in PARAMS}


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
        warnings.append(f"{name}={raw!r} is not a number; using {default:g}.")
        return default
    if integer and value != int(value):
        warnings.append(f"{name}={raw!r} is not a whole number; using {round(value):g}.")
        value = float(round(value))
    clamped = min(max(value, lo), hi)
    if clamped != value:
        warnings.append(
            f"{name}={raw} is outside {lo:g}–{hi:g} ({LABELS[name]}); using {clamped:g}."
        )
    return int(clamped) if integer else clamped


def parse_query(query) -> tuple[dict, list[str], dict]:
    """Clean scenario values from a query mapping.

    Returns (values, warnings, imported) where ``imported`` maps an imported model id to its
    ModelSpec when ``cfg`` carried one.  Unknown parameters are ignored.
    """
    q = {k: query[k] for k in query}
    warnings: list[str] = []
    v = dict(DEFAULTS)
    imported = {}
    if q.get("cfg"):
        try:
            spec = decode_model(q["cfg"])
            imported[spec.id] = spec
            v["cfg"] = q["cfg"]
        except ValueError as exc:
            warnings.append(f"cfg: the imported model in this link is unreadable ({exc}).")
    models = catalog.models()
    if "model" in q:
        mid = str(q["model"]).strip().lower()
        if mid in models:
            v["model"] = models[mid].id
        elif mid in imported:
            v["model"] = mid
        else:
            warnings.append(
                f"model={q['model']!r} is not a known model{_closest('model', mid, models)}; "
                f"showing {DEFAULTS['model']}."
            )
    spec = imported.get(v["model"]) or models[v["model"]]
    if "link" in q:
        lid = str(q["link"]).strip().lower()
        if lid in link_ids() or lid == CUSTOM_LINK:
            v["link"] = lid
        else:
            warnings.append(
                f"link={q['link']!r} is not a known interconnect"
                f"{_closest('link', lid, catalog.links())}; showing {DEFAULTS['link']}."
            )
    if "gpu" in q:
        gid = str(q["gpu"]).strip().lower()
        if gid in catalog.gpus():
            v["gpu"] = gid
        else:
            warnings.append(f"gpu={q['gpu']!r} is not a known GPU; showing {DEFAULTS['gpu']}.")
    choices = {
        "kvd": sorted(KV_DTYPE_BITS),
        "comp": list(COMPRESSION_BITS),
        "crit": list(CRITERIA),
        "trace": list(SAMPLES),
    }
    if "kvd" not in q and spec.kv_dtype_native:
        v["kvd"] = spec.kv_dtype_native
    for name, allowed in choices.items():
        if name in q:
            raw = str(q[name]).strip().lower()
            if raw in allowed:
                v[name] = raw
            else:
                warnings.append(
                    f"{name}={q[name]!r} is not one of {', '.join(allowed)}; using {v[name]}."
                )
    ranges = {
        "seq": (1, spec.max_context_tokens, True),
        "batch": (1, MAX_BATCH, True),
        "bw": (0.001, 100_000, False),
        "lat": (0, 1_000_000, False),
        "eff": (1, 100, False),
        "par": (0, 1024, True),
        "lw": (0, 1, True),
        "codec": (1, 100_000, False),
        "tp": (1, MAX_TP, True),
        "tpd": (1, MAX_TP, True),
        "step": (0.1, 10_000, False),
        "k": (0.05, 1000, False),
        "share": (1, 99, False),
        "tl": (0, 7, True),
        "present": (0, 1, True),
        "minlen": (0, 10_000_000, True),
        "hit": (0, 95, False),
        "rps": (0, 1_000_000, False),
    }
    for name, (lo, hi, integer) in ranges.items():
        if name in q:
            v[name] = _number(
                q[name], name, lo, hi, integer=integer, warnings=warnings, default=v[name]
            )
    for name in ("tp", "tpd") if "tpd" in q else ("tp",):
        try:
            for g in spec.groups:
                shard_heads(g.kv_heads, v[name])
        except ValueError as exc:
            warnings.append(f"{name}: {exc}; using 1.")
            v[name] = 1
    if "tpd" not in q:
        v["tpd"] = v["tp"]
    if "prefill" in q:
        raw = str(q["prefill"]).strip().lower()
        if raw in ("", "est", "estimate", "estimated"):
            v["prefill"] = "est"
        else:
            try:
                float(raw)
                v["prefill"] = _number(
                    raw, "prefill", 0, 3_600_000, integer=False, warnings=warnings, default=0.0
                )
            except ValueError:
                warnings.append(
                    f"prefill={q['prefill']!r} is neither milliseconds nor 'est'; "
                    "estimating it from the GPU."
                )
    for name, table in (("links", link_ids()), ("models", catalog.model_ids())):
        if name in q:
            v[name] = _id_list(q[name], name, table, warnings, v[name])
    if "batches" in q:
        v["batches"] = _int_list(q["batches"], "batches", 1, MAX_BATCH, warnings, v["batches"])
    if "band" in q:
        v["band"] = _band(q["band"], warnings)
    if "cmp" in q:
        v["cmp"] = _compare(q["cmp"], v, warnings)
    return v, warnings, imported


def _id_list(raw, name, valid, warnings, default) -> str:
    ids = [i.strip().lower() for i in str(raw).split(",") if i.strip()]
    good = [i for i in dict.fromkeys(ids) if i in valid]
    bad = [i for i in ids if i not in valid]
    if bad:
        warnings.append(f"{name}: dropped unknown id(s) {', '.join(bad)}.")
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
            warnings.append(f"{name}: {part.strip()!r} is not a whole number; dropped.")
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
        warnings.append(f"band={raw!r} is not LOW-HIGH in ms (e.g. 20-50); using 20-50.")
        return DEFAULTS["band"]
    return f"{lo:g}-{hi:g}"


SCENARIO_KEYS = (
    "model",
    "seq",
    "batch",
    "link",
    "bw",
    "lat",
    "eff",
    "par",
    "kvd",
    "comp",
    "lw",
    "codec",
    "tp",
    "tpd",
    "step",
    "prefill",
    "gpu",
)
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


def variant_values(base: dict, overrides: dict) -> tuple[dict, list[str]]:
    """A compared scenario: the base values with ``overrides`` applied, validated."""
    query = {**to_query(base), **{k: str(v) for k, v in overrides.items()}}
    query.pop("cmp", None)
    values, warnings, _ = parse_query(query)
    return values, warnings


def _compare(raw, base: dict, warnings: list[str]) -> str:
    kept = []
    for n, text in enumerate(s for s in str(raw).split(";") if s.strip()):
        label = chr(ord("B") + n)
        if n >= MAX_COMPARED:
            warnings.append(f"cmp: at most {MAX_COMPARED} compared scenarios; dropped {label}.")
            continue
        over = parse_overrides(text)
        bad = [k for k in over if k not in SCENARIO_KEYS]
        if bad or not over:
            warnings.append(
                f"cmp: scenario {label} {text!r} has parts that are not key:value pairs with "
                f"keys among {', '.join(SCENARIO_KEYS)}; ignored them."
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
        if p.name == "cfg" and not (
            val and str(values.get("model", "")).startswith(IMPORTED_PREFIX)
        ):
            continue
        if p.name in ("bw", "lat") and values.get("link") != CUSTOM_LINK:
            continue
        out[p.name] = f"{val:g}" if isinstance(val, float) else str(val)
    return out


def scenario_from_values(values: dict, imported: dict | None = None):
    """A kvmodel Scenario from clean parameter values (``parse_query`` output)."""
    from kvmodel.build import build_scenario

    v = values
    custom = v["link"] == CUSTOM_LINK
    spec = (imported or {}).get(v["model"]) or catalog.get_model(v["model"])
    return build_scenario(
        model=spec,
        link=None if custom else v["link"],
        bandwidth_gbs=float(v["bw"]) if custom else None,
        latency_us=float(v["lat"]) if custom else None,
        gpu=v["gpu"],
        seq_len=int(v["seq"]),
        batch=int(v["batch"]),
        efficiency=float(v["eff"]) / 100,
        parallel_links=int(v["par"]) or None,
        kv_dtype=v["kvd"],
        compression=v["comp"],
        codec_gbs=float(v["codec"]),
        layerwise=bool(int(v["lw"])),
        tp=int(v["tp"]),
        tp_decode=int(v["tpd"]),
        decode_step_ms=float(v["step"]),
        prefill_ms=None if v["prefill"] == "est" else float(v["prefill"]),
        k=float(v["k"]),
        share_target=float(v["share"]) / 100,
    )
