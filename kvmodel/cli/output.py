"""Output: an aligned text table by default, JSON with ``--json``."""

from __future__ import annotations

import json
import math


def _finite(obj, path: str = "", found: dict | None = None):
    """``obj`` with every NaN or infinite float replaced by None (JSON null); ``found`` gets
    ``{path: "NaN" | "Infinity" | "-Infinity"}`` for each one replaced."""
    if isinstance(obj, float):
        if math.isfinite(obj):
            return obj
        if found is not None:
            found[path] = "NaN" if obj != obj else "Infinity" if obj > 0 else "-Infinity"
        return None
    if isinstance(obj, dict):
        return {k: _finite(v, f"{path}.{k}" if path else str(k), found) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v, f"{path}[{i}]", found) for i, v in enumerate(obj)]
    return obj


def json_text(payload) -> str:
    """``payload`` as strict JSON: a number that is NaN or infinite (inputs near 1e308
    overflow) becomes null, never the ``NaN``/``Infinity`` no JSON parser accepts; a dict
    payload then says which, and why, under ``non_finite`` (``{"field.path": "Infinity"}``)."""
    found: dict = {}
    clean = _finite(payload, found=found)
    if found and isinstance(clean, dict):
        clean["non_finite"] = found
    return json.dumps(clean, indent=2, allow_nan=False)


def _print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def emit(args, payload, headers, rows, footer=()):
    if args.json:
        print(json_text(payload))
        return
    _print_table(headers, rows)
    for text in footer:
        print(text)
