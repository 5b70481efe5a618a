"""Which column holds what: the names the traffic reader recognises, :func:`detect_columns`
(from the names alone) and :func:`plan` (with the columns picked by hand); nested JSON and
Parquet columns are flattened to ``outer.inner`` names first (:func:`flatten`)."""

from __future__ import annotations

import re

import pyarrow as pa

from .result import TrafficError

MOONCAKE_BLOCK_TOKENS = 512
PROMPT_NAMES = (
    "prompt_tokens",
    "input_tokens",
    "num_prefill_tokens",
    "prompt_len",
    "input_len",
    "context_tokens",
    "num_prompt_tokens",
    "request_tokens",
    "isl",
    "input_length",
    "prompt_length",
    "num_input_tokens",
)
OUTPUT_NAMES = (
    "completion_tokens",
    "output_tokens",
    "generated_tokens",
    "response_tokens",
    "osl",
    "num_generated_tokens",
    "output_length",
    "output_len",
    "num_output_tokens",
    "generation_tokens",
)
TIME_NAMES = (
    "timestamp",
    "arrival_time",
    "time",
    "created",
    "start_time",
    "created_at",
    "timestamp_ms",
    "arrival_time_ms",
)
BUCKET_NAMES = ("le", "bucket", "upper", "upper_bound", "max_tokens", "bin", "tokens")
COUNT_NAMES = ("count", "requests", "frequency", "n")
PROBABILITY_NAMES = ("probability", "prob", "fraction", "share", "pct", "percent")
HASH_NAMES = ("hash_ids",)


def key(name: str) -> str:
    """A column name compared case-insensitively, ignoring spaces, ``_`` and ``-``."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def _find(columns: list[str], names: tuple[str, ...]) -> str | None:
    """The first column (file order) matching the best-ranked name; a dotted (flattened JSON)
    column also matches by its last part."""
    keys = [(key(c), key(str(c).rsplit(".", 1)[-1])) for c in columns]
    for name in names:
        want = key(name)
        for col, (full, last) in zip(columns, keys, strict=True):
            if want in (full, last):
                return col
    return None


def detect_columns(columns: list[str]) -> dict:
    """Guess which columns hold what, from their names alone.

    Returns ``{"fmt", "prompt_tokens", "output_tokens", "arrival_s", "cached_tokens", "weights",
    "weights_kind"}``: each field maps to a column name or ``None``; ``fmt`` is the layout
    (``"azure2023"``, ``"mooncake"``, ``"burstgpt"``, ``"histogram"``,
    ``"histogram-probability"``, ``"generic-table"``) or ``None`` when no length column is found;
    ``weights_kind`` is ``"count"``, ``"probability"`` or ``None``.
    """
    columns = [str(c) for c in columns]
    keys = {key(c) for c in columns}
    prompt = _find(columns, PROMPT_NAMES)
    bucket = _find(columns, BUCKET_NAMES)
    count = _find(columns, COUNT_NAMES if bucket else COUNT_NAMES[:-1])  # "n" only beside a bucket
    prob = None if count else _find(columns, PROBABILITY_NAMES)
    out = {
        "fmt": None,
        "prompt_tokens": prompt,
        "output_tokens": _find(columns, OUTPUT_NAMES),
        "arrival_s": _find(columns, TIME_NAMES),
        "cached_tokens": _find(columns, HASH_NAMES),
        "weights": count or prob,
        "weights_kind": "count" if count else "probability" if prob else None,
    }
    if out["weights"] and (bucket or prompt):
        out.update(prompt_tokens=bucket or prompt, output_tokens=None, arrival_s=None)
        out.update(cached_tokens=None)
        out["fmt"] = "histogram" if count else "histogram-probability"
        return out
    out.update(weights=None, weights_kind=None)
    if prompt is None:
        return out
    if {"timestamp", "contexttokens", "generatedtokens"} <= keys:
        out["fmt"] = "azure2023"
    elif {"inputlength", "hashids"} <= keys:
        out["fmt"] = "mooncake"
    elif {"requesttokens", "responsetokens"} <= keys and keys & {"logtype", "model", "totaltokens"}:
        out["fmt"] = "burstgpt"
    else:
        out["fmt"] = "generic-table"
    return out


def flatten(table: pa.Table) -> pa.Table:
    """Nested (struct) columns as ``outer.inner`` columns."""
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _resolve(choice: str, columns: list[str], what: str, where: str, name: str) -> str:
    if choice in columns:
        return choice
    matches = [c for c in columns if key(c) == key(choice)]
    if len(matches) == 1:
        return matches[0]
    raise TrafficError(
        f"{name}: {where}: there is no column {choice!r} for the {what}; "
        f"columns found: {', '.join(map(repr, columns)) or 'none'}"
    )


def plan(
    columns: list[str], name: str, where: str, prompt_col, output_col, time_col
) -> tuple[dict, list[str]]:
    """The detected columns with the ones picked by hand (``""`` = none) put in, and the
    columns to read; an error when no prompt length can be found."""
    det = detect_columns(columns)
    if prompt_col:
        det["prompt_tokens"] = _resolve(prompt_col, columns, "prompt length", where, name)
        if det["fmt"] is None:
            det["fmt"] = "generic-table"
    if output_col is not None:
        det["output_tokens"] = (
            _resolve(output_col, columns, "output length", where, name) if output_col else None
        )
    if time_col is not None:
        det["arrival_s"] = (
            _resolve(time_col, columns, "arrival time", where, name) if time_col else None
        )
    if det["prompt_tokens"] is None:
        expected = ", ".join(PROMPT_NAMES)
        raise TrafficError(
            f"{name}: {where}: no prompt-length column among "
            f"{', '.join(map(repr, columns)) or 'no columns'}; expected one named {expected} "
            f"(any case), or a histogram: a bucket column ({', '.join(BUCKET_NAMES)}) with a "
            f"count ({', '.join(COUNT_NAMES)}) or probability column "
            f"({', '.join(PROBABILITY_NAMES)}); or pick the column by hand"
        )
    fields = ("prompt_tokens", "output_tokens", "arrival_s", "cached_tokens", "weights")
    needed = list(dict.fromkeys(det[f] for f in fields if det[f]))
    return det, needed
