"""Telling the measurement formats apart: by content first, then by the file name."""

from __future__ import annotations

import re
from pathlib import Path

from .base import MeasureError, check_text
from .prometheus import METRIC_SCALES

_KNOWN_PROM = re.compile(
    r"^\s*(" + "|".join(re.escape(m) for m in METRIC_SCALES) + r")(_bucket|_sum|_count|_total)?"
    r"[\s{]",
    re.M,
)
_NSYS_HINT = re.compile(
    r"(Total Time|Duration)\s*\((ns|us|ms|s)\)|^Processing \[.*\] with \[", re.M
)


def detect_measurement(text: str, name: str | None = None) -> str:
    """``"prometheus"``, ``"perftest"``, ``"perftest-json"``, ``"nsys"`` or ``"pairs"``."""
    label = name or "text"
    text = check_text(text, label)
    ext = Path(name).suffix.lower() if name else ""
    head = text[: 1 << 16]
    stripped = head.lstrip()
    if stripped[:1] in ("{", "["):
        if re.search(r'"\s*(BW_average|MsgSize)', head, re.I):
            return "perftest-json"
        raise MeasureError(
            f"{label}: JSON without perftest fields; expected perftest --out_json output "
            "with MsgSize and BW_average"
        )
    if re.search(r"^\s*#bytes\b", head, re.M | re.I):
        return "perftest"
    if _NSYS_HINT.search(head):
        return "nsys"
    if ext in (".prom", ".metrics") or _KNOWN_PROM.search(head):
        return "prometheus"
    if re.search(r"^\s*#\s*(TYPE|HELP)\s", head, re.M):
        return "prometheus"
    if ext in (".csv", ".tsv", ".txt") or re.search(
        r"^\s*[+-]?\.?\d[\d.eE+-]*\s*[,;\t ]\s*[+-]?\.?\d", head, re.M
    ):
        return "pairs"
    raise MeasureError(
        f"{label}: cannot tell what this measurement is; expected Prometheus text (/metrics), "
        "perftest ib_*_bw output or --out_json, an nsys stats CSV, or a bytes,seconds CSV"
    )
