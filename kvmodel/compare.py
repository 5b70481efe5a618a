"""Compare: which way each compared number is better, the change against A, default variants.

The Compare page sets the sidebar's scenario (A) against up to three variants.  This module
holds what that comparison means, as data and pure functions (no UI):

- ``DIRECTIONS``: for each number of ``sweeps.compare_table`` (and the traffic share that
  gains), whether lower or higher is better, and why, in words;
- ``judge`` and ``changes``: each variant's number against A's (change in SI units, relative
  change, and better / worse / same);
- ``default_variants``: the variants a link without ``cmp`` compares, made from A so each one
  differs from it (``cmp=auto``, the row in ``kvmodel.inputs``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from . import catalog
from .dtypes import COMPRESSION_BITS
from .frames import column_lists
from .inputs import MAX_BATCH
from .topology import SCALE_UP_KINDS

AUTO = "auto"  # the ``cmp`` value that means "variants made from A" (the row's default)
REL_TOL = 1e-9  # closer than this (relative) to A's number counts as the same


@dataclass(frozen=True)
class Direction:
    """Which way one compared number is better."""

    key: str  # the column of ``sweeps.compare_table`` (``fraction_gain``: Traffic's share)
    better: str  # "lower" or "higher"
    why: str  # the reason, in words, for the page and the report

    def __post_init__(self):
        if self.better not in ("lower", "higher"):
            raise ValueError(f"better must be 'lower' or 'higher', got {self.better!r}")

    @property
    def words(self) -> str:
        return f"{self.better} is better"


DIRECTIONS: dict[str, Direction] = {
    d.key: d
    for d in (
        Direction("kv_bytes", "lower", "a smaller KV cache leaves more memory for requests"),
        Direction("wire_bytes", "lower", "fewer bytes to send take less time on any link"),
        Direction("exposed_transfer_s", "lower", "the transfer the request waits for"),
        Direction("transfer_over_decode", "lower", "a transfer under one decode step hides"),
        Direction("ttft_s", "lower", "time to first token, what the user waits"),
        Direction("transfer_share_of_ttft", "lower", "a small share keeps disaggregation's gains"),
        Direction(
            "critical_seq_len",
            "higher",
            "prompts below the critical length are not transfer-bound; never reached is best",
        ),
        Direction(
            "fraction_gain", "higher", "more of the traffic gains from disaggregated serving"
        ),
    )
}


def _number(value) -> float:
    """A compared number as a float; ``None`` (a critical length never reached) is +inf."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return math.inf
    return float(value)


def judge(key: str, value, reference) -> str:
    """'better', 'worse' or 'same': ``value`` against the ``reference`` (A) for the number
    ``key`` of ``DIRECTIONS``."""
    d = DIRECTIONS[key]
    v, r = _number(value), _number(reference)
    if v == r or (
        math.isfinite(v) and math.isfinite(r) and math.isclose(v, r, rel_tol=REL_TOL, abs_tol=0)
    ):
        return "same"
    return "better" if (v < r) == (d.better == "lower") else "worse"


def changes(table: pd.DataFrame, keys=None) -> pd.DataFrame:
    """Each scenario's numbers against the first row's (A), one row per (scenario, number).

    ``table`` has one row per scenario (index = label) with the ``keys`` as columns, in SI
    units (``sweeps.compare_table``).  Columns: label, key, value, reference, change (value −
    reference, NaN when either is unbounded), relative (change ÷ reference, NaN when the
    reference is 0 or unbounded), verdict (better / worse / same), better (lower / higher).
    """
    return pd.DataFrame(change_rows(table, keys))


def change_rows(table: pd.DataFrame, keys=None) -> list[dict]:
    """``changes`` as rows of dicts, for a reader that needs no frame (Compare's cells: the
    frame, its text columns and reading them back cost ~0.6 ms a rerun; session 22)."""
    keys = [k for k in (keys or DIRECTIONS) if k in table.columns]
    table.iloc[0]  # an empty table raises IndexError here, as it always did
    # the cells by column, as Python values: what ``iterrows`` rows held, without a Series
    # per row and a lookup per cell (~2 ms of Compare's rerun; bench/README.md, Session 11)
    cells = dict(zip(keys, column_lists(table, keys), strict=True))
    ref = {key: cells[key][0] for key in keys}
    rows = []
    for i, label in enumerate(table.index):
        row = {key: cells[key][i] for key in keys}
        for key in keys:
            v, r = _number(row[key]), _number(ref[key])
            finite = math.isfinite(v) and math.isfinite(r)
            change = v - r if finite else math.nan
            rows.append(
                {
                    "label": label,
                    "key": key,
                    "value": v,
                    "reference": r,
                    "change": change,
                    "relative": change / r if finite and r != 0 else math.nan,
                    "verdict": judge(key, row[key], ref[key]),
                    "better": DIRECTIONS[key].better,
                }
            )
    return rows


def next_faster_link(link_id: str) -> str | None:
    """The slowest catalog link faster than ``link_id`` (bandwidth per direction): of the same
    kind first (IB NDR → IB XDR), else among scale-out links (not NVLink/PCIe/fabric, which
    join GPUs of one domain); None when none is faster or the link is not in the catalog."""
    links = {lk.id: lk for lk in catalog.links().values()}
    if link_id not in links:
        return None
    here = links[link_id]
    faster = [lk for lk in links.values() if lk.bandwidth_bytes_per_s > here.bandwidth_bytes_per_s]
    same = [lk for lk in faster if lk.kind == here.kind]
    pool = same or [lk for lk in faster if lk.kind not in SCALE_UP_KINDS]
    if not pool:
        return None
    return min(pool, key=lambda lk: (lk.bandwidth_bytes_per_s, lk.id)).id


def default_variants(values: dict) -> list[dict[str, str]]:
    """The variants a link without ``cmp`` compares, each a change of A (``values``: the link's
    clean values, display units): A with INT8 transfer compression (INT4 when A already
    sends INT8), A on the next faster link of its kind, A with layer-wise sending, and A at
    wire speed (the ``ideal`` stack), else A at twice its batch: the first three of these that
    differ from A."""
    comp = "int8" if values.get("comp") != "int8" else "int4"
    candidates = [{"comp": comp}] if comp in COMPRESSION_BITS else []
    faster = next_faster_link(str(values.get("link", "")))
    if faster:
        candidates.append({"link": faster})
    if not int(values.get("lw") or 0):
        candidates.append({"lw": "1"})
    if values.get("stack") != "ideal":
        candidates.append({"stack": "ideal"})
    batch = int(values.get("batch") or 1)
    if len(candidates) < 3 and 2 * batch <= MAX_BATCH:  # nothing else left to try: A at 2×
        candidates.append({"batch": str(2 * batch)})
    return candidates[:3]


def compare_frame(labelled, fraction_gain=None) -> pd.DataFrame:
    """``sweeps.compare_table`` of the (label, Evaluation) pairs, plus ``fraction_gain`` (the
    share of a traffic mix that gains from disaggregation, one per scenario) when given."""
    from .sweeps import compare_table

    table = compare_table(labelled)
    if fraction_gain is not None:
        table["fraction_gain"] = [float(f) for f in fraction_gain]
    return table
