"""Output: an aligned text table by default, JSON with ``--json``."""

from __future__ import annotations

import json


def _print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def _emit(args, payload, headers, rows, footer=()):
    if args.json:
        print(json.dumps(payload, indent=2))
        return
    _print_table(headers, rows)
    for text in footer:
        print(text)
