"""Output: an aligned text table by default, JSON with ``--json``."""

from __future__ import annotations

import json
import math


def _finite(obj):
    """``obj`` with every NaN or infinite float replaced by None (JSON null)."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    return obj


def json_text(payload) -> str:
    """``payload`` as strict JSON: a number that is NaN or infinite (inputs near 1e308
    overflow) becomes null, never the ``NaN``/``Infinity`` no JSON parser accepts."""
    return json.dumps(_finite(payload), indent=2, allow_nan=False)


def _print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def _emit(args, payload, headers, rows, footer=()):
    if args.json:
        print(json_text(payload))
        return
    _print_table(headers, rows)
    for text in footer:
        print(text)
