"""Opening a traffic file (:func:`prepare`) and telling its format (:func:`sniff`), by content
first and file name second; the bytes themselves come from :mod:`kvmodel.textio`."""

from __future__ import annotations

import re

from ..textio import SNIFF, Source, find_binary, not_text, open_source
from .result import TrafficError

EXPECTED = "CSV, TSV, Parquet, JSON Lines or Prometheus text"


def prepare(src, name: str | None, max_bytes: int) -> tuple[Source, str]:
    """The opened input and its format (see :func:`sniff`); refuses more than ``max_bytes``
    and an empty file."""
    source = open_source(
        src,
        name,
        max_bytes,
        error=TrafficError,
        advice="upload a smaller sample or a pre-binned histogram",
    )
    try:
        head = source.head
        if not head.strip() and (len(head) < SNIFF or not source.whole().strip()):
            raise TrafficError(
                f"{source.name}: the file is empty; expected a header and one row per request"
            )
        return source, sniff(head, source.name)
    except BaseException:
        source.close()
        raise


def _check_text(data: bytes, name: str) -> None:
    """Raise unless the start of ``data`` is UTF-8 text."""
    head = data[:SNIFF]
    if head.startswith(b"PK\x03\x04"):
        raise TrafficError(
            f"{name}: this is a zip archive (an Excel workbook?), not a table; "
            f"expected {EXPECTED} (export the sheet as CSV)"
        )
    bad = find_binary(head, cut=len(head) == SNIFF)
    if bad is not None:
        raise not_text(name, head, bad, EXPECTED, TrafficError)


_PROM_RE = re.compile(
    r"^\s*#\s*(TYPE|HELP)\s|^[A-Za-z_:][A-Za-z0-9_:]*_bucket\{[^}\n]*\ble=\"", re.M
)


def sniff(data: bytes, name: str) -> str:
    """``parquet``, ``prometheus``, ``jsonl``, ``json``, ``tsv``, ``csv`` or ``ssv``."""
    ext = name.lower().removesuffix(".gz").rsplit(".", 1)[-1] if "." in name else ""
    if data[:4] == b"PAR1":
        return "parquet"
    if ext in ("parquet", "pq"):
        raise TrafficError(
            f"{name}: not a Parquet file (it does not start with Parquet's 'PAR1' marker; "
            "the file may be damaged or in another format); expected a Parquet file written by "
            "pandas, pyarrow, Spark or DuckDB"
        )
    _check_text(data, name)
    text = data[:SNIFF].decode("utf-8", errors="ignore")
    first = text.lstrip()[:1]
    if ext in ("prom", "metrics") or _PROM_RE.search(text):
        return "prometheus"
    if first == "[":
        return "json"
    if first == "{" or ext in ("jsonl", "ndjson", "json"):
        return "jsonl"
    header = text.lstrip("\r\n").split("\n", 1)[0]
    counts = {"tsv": header.count("\t"), "csv": header.count(","), "ssv": header.count(";")}
    if ext == "tsv" and counts["tsv"]:
        return "tsv"
    if ext == "csv" and counts["csv"]:
        return "csv"
    return max(counts, key=lambda k: (counts[k], k == "csv"))
