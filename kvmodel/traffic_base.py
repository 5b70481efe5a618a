"""What every part of the traffic reader shares: :class:`Requests`, :class:`TrafficError`, the
column names it recognises and :func:`detect_columns` (documented in :mod:`kvmodel.traffic_io`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

MOONCAKE_BLOCK_TOKENS = 512
_MAX_EXAMPLES = 5

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


class TrafficError(ValueError):
    """A traffic file cannot be read; the message names the problem, where, and what is expected."""


@dataclass(frozen=True)
class Requests:
    """Request lengths read from one file.  All arrays have one entry per request, or one per
    histogram bucket or distinct length (then ``weights`` says how many requests it stands for).
    """

    prompt_tokens: np.ndarray  # int64 >= 0; per request, or a bucket's upper bound
    weights: np.ndarray | None  # float64 requests per entry (histograms); None = one each
    output_tokens: np.ndarray | None  # int64 >= 0
    arrival_s: np.ndarray | None  # float64 seconds since the earliest request, file order
    cached_tokens: np.ndarray | None  # int64 prefix-cache hit tokens (Mooncake hash_ids)
    fmt: str
    columns: dict = field(default_factory=dict)
    skipped_rows: int = 0
    skipped_examples: tuple[str, ...] = ()
    span_s: float | None = None  # first to last kept arrival (None: no times, or all at once)

    def __post_init__(self):
        n = len(self.prompt_tokens)
        for name in ("weights", "output_tokens", "arrival_s", "cached_tokens"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"Requests.{name} has {len(arr)} entries; expected {n}")

    @property
    def n_requests(self) -> float:
        """Requests represented: the entry count, or the sum of the histogram weights."""
        return float(len(self.prompt_tokens) if self.weights is None else self.weights.sum())

    @property
    def count_known(self) -> bool:
        """False for a histogram of shares (probabilities): its weights sum to 1, not to a
        number of requests."""
        return self.columns.get("total_requests") != "unknown"


def _key(name: str) -> str:
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def _find(columns: list[str], names: tuple[str, ...]) -> str | None:
    """The first column (file order) matching the best-ranked name; a dotted (flattened JSON)
    column also matches by its last part."""
    keys = [(_key(c), _key(str(c).rsplit(".", 1)[-1])) for c in columns]
    for name in names:
        want = _key(name)
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
    keys = {_key(c) for c in columns}
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


def _examples(skipped: list[tuple[int, str]]) -> tuple[str, ...]:
    return tuple(reason for _, reason in sorted(skipped, key=lambda s: s[0])[:_MAX_EXAMPLES])


def _arrow_msg(exc: Exception) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg.removeprefix("CSV parse error: ").removeprefix("JSON parse error: ")
