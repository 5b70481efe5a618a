"""Nsight Systems: per-transfer durations from ``nsys stats --format csv`` reports
(``cuda_gpu_kern_sum``, ``cuda_gpu_trace``, ``nvtx_sum``, NVTX traces) as :class:`NsysResult`."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

import numpy as np

from .base import TIME_UNITS, MeasureError, check_text, key, number

NCCL_SENDRECV_PATTERN = r"nccl\w*?(sendrecv|send|recv)"
DEFAULT_NVTX_PATTERN = r"kv|transfer|send|recv"


@dataclass(frozen=True)
class NsysResult:
    """Per-transfer durations selected from one ``nsys stats`` CSV report (seconds)."""

    report: str  # "cuda_gpu_kern_sum", "cuda_gpu_trace", "nvtx_sum" or "nvtx_trace"
    selection: str  # "nccl-kernels", "kernels" (user pattern) or "nvtx"
    pattern: str
    names: tuple[str, ...]  # kernel names / NVTX ranges selected
    count: int  # transfers (instances, or trace rows)
    total_s: float
    mean_s: float
    median_s: float | None  # None for a summary with several selected rows
    min_s: float
    max_s: float
    durations_s: tuple[float, ...] = ()  # one per transfer, trace reports only
    notes: tuple[str, ...] = ()


_NSYS_COL = re.compile(r"^\s*(.*?)\s*(?:\(([^)]*)\))?\s*$")


def _nsys_columns(fields: list[str]) -> dict[str, tuple[int, float]]:
    """Normalised column name → (index, seconds per unit or 1 for unit-less)."""
    out = {}
    for i, f in enumerate(fields):
        m = _NSYS_COL.match(f)
        base, unit = key(m.group(1)), (m.group(2) or "").strip().lower()
        out.setdefault(base, (i, TIME_UNITS.get(unit, 1.0)))
    return out


def _is_nsys_header(fields: list[str]) -> bool:
    keys = _nsys_columns(fields)
    has_name = "name" in keys or "range" in keys
    has_time = any(k in keys for k in ("totaltime", "duration")) and any(
        re.search(r"\((ns|us|ms|s|nsec|usec|msec|sec)\)", f) for f in fields
    )
    return has_name and has_time


def _nsys_tables(text: str, name: str):
    """``(header line number, columns, [(line number, fields), ...])`` per table."""
    lines = text.splitlines()
    tables = []
    i = 0
    while i < len(lines):
        fields = next(csv.reader([lines[i]])) if lines[i].strip() else []
        if len(fields) >= 2 and _is_nsys_header(fields):
            header_n, cols, rows = i + 1, fields, []
            i += 1
            while i < len(lines) and lines[i].strip():
                row = next(csv.reader([lines[i]]))
                if len(row) != len(cols):
                    raise MeasureError(
                        f"{name}: line {i + 1} has {len(row)} fields, the header on line "
                        f"{header_n} has {len(cols)}; the row is cut short or garbled "
                        f"({lines[i][:60]!r}); expected one value per column"
                    )
                rows.append((i + 1, row))
                i += 1
            tables.append((header_n, cols, rows))
            continue
        i += 1
    return tables


MAX_PATTERN_CHARS = 200
MAX_UNBOUNDED = 3  # * + {n,} per alternative: a failing .*a.*b.*c tries ~n^3 splits of a name


def _pattern_error(pattern: str, problem: str) -> MeasureError:
    return MeasureError(
        f"pattern {pattern[:60]!r}{'…' if len(pattern) > 60 else ''} {problem}, which can take "
        "exponential time on a long name; expected a simple pattern such as kv|transfer|send|recv"
    )


def check_pattern(pattern: str) -> None:
    """Refuse a selection pattern that could backtrack for seconds or years: longer than
    :data:`MAX_PATTERN_CHARS`; a quantified group that itself holds a quantifier or an
    alternation (``(a+)+``, ``(a|a)*``: ``re`` tries every split of a name); more than
    :data:`MAX_UNBOUNDED` unbounded quantifiers in one alternative.  Python's ``re`` cannot be
    interrupted, so this is checked before anything is matched."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise MeasureError(
            f"pattern is {len(pattern):,} characters; expected at most {MAX_PATTERN_CHARS} "
            "(a few names joined by |)"
        )
    stack: list[bool] = []  # per open group: does it hold a quantifier or an alternation?
    unbounded, i, n = 0, 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":  # a character class: its quantifier characters are literal
            j = i + 1 + (pattern[i + 1 : i + 2] == "^")
            j += pattern[j : j + 1] == "]"
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        brace = pattern.find("}", i) if c == "{" else -1
        if c in "*+" or (brace > 0 and pattern[brace - 1] == ","):
            unbounded += 1
            if unbounded > MAX_UNBOUNDED:
                many = f"has over {MAX_UNBOUNDED} of * + {{n,}} in one alternative"
                raise _pattern_error(pattern, many)
        quant = c in "*+{" or (c == "?" and i > 0 and pattern[i - 1] not in "(*+?}")
        if c == "(":
            stack.append(False)
        elif c == ")" and stack:
            inner = stack.pop()
            if inner and pattern[i + 1 : i + 2] in ("*", "+", "?", "{"):
                raise _pattern_error(pattern, "repeats a group that itself repeats or alternates")
            if inner and stack:
                stack[-1] = True
        elif c == "|" and not stack:
            unbounded = 0  # a new alternative
        elif (quant or c == "|") and stack:
            stack[-1] = True
        i += 1


def parse_nsys_csv(text: str, name: str = "nsys", pattern: str | None = None) -> NsysResult:
    """Per-transfer durations from ``nsys stats --format csv`` output.

    Reports: ``cuda_gpu_kern_sum`` ("Time (%)", "Total Time (ns)", "Instances", "Avg (ns)",
    "Med (ns)", "Min (ns)", "Max (ns)", "StdDev (ns)", "Name"), ``cuda_gpu_trace``
    ("Start (ns)", "Duration (ns)", …, "Name"), ``nvtx_sum`` (…, "Range") and NVTX traces
    ("Duration (ns)" with "Range" or "Name"/"RangeId").  Lines before the header ("Generating
    SQLite file …", "Processing […] with […]...", the " ** … ** " title, blank lines) are
    skipped; a table ends at a blank line; several tables in one file are read in order and the
    first with a selected row is used.  Column units follow ``--timeunit`` ("(ns)", "(us)",
    "(ms)", "(s)").

    Selection: kernels whose name matches ``pattern`` (default NCCL send/receive kernels,
    ``ncclDevKernel_SendRecv``, ``ncclKernel_SendRecv_*``, ``ncclSendKernel``…), NVTX ranges
    matching ``pattern`` (default ``kv|transfer|send|recv``); case-insensitive regexes.
    Summaries give count (Σ instances), total, mean (total ÷ count), min, max and the median
    when one row is selected; traces give every duration.
    """
    text = check_text(text, name)
    tables = _nsys_tables(text, name)
    if not tables:
        raise MeasureError(
            f'{name}: no nsys stats CSV header; expected a line like "Time (%)","Total Time '
            '(ns)","Instances","Avg (ns)",…,"Name" (cuda_gpu_kern_sum), "Start (ns)","Duration '
            '(ns)",…,"Name" (cuda_gpu_trace) or …,"Range" (nvtx_sum), from nsys stats --format csv'
        )
    seen: list[str] = []
    notes: list[str] = []
    for header_n, fields, rows in tables:
        cols = _nsys_columns(fields)
        nvtx = "range" in cols or bool({"rangeid", "lvl", "nametree", "rangestack"} & set(cols))
        trace = "duration" in cols
        report = ("nvtx" if nvtx else "cuda_gpu") + ("_trace" if trace else "_sum")
        if report == "cuda_gpu_sum":
            report = "cuda_gpu_kern_sum"
        default = DEFAULT_NVTX_PATTERN if nvtx else NCCL_SENDRECV_PATTERN
        pat = pattern if pattern is not None else default
        check_pattern(pat)
        try:
            rx = re.compile(pat, re.I)
        except re.error as exc:
            raise MeasureError(
                f"pattern {pat!r} is not a valid regular expression ({exc})"
            ) from None
        name_idx = cols["range"][0] if "range" in cols else cols["name"][0]

        def num(row, n, col, _cols=cols, _fields=fields):
            idx, unit = _cols[col]
            value = number(row[idx])
            if value is None or value < 0:
                raise MeasureError(
                    f"{name}: line {n}, column {_fields[idx]!r}: {row[idx]!r} is not a number "
                    "≥ 0; expected nsys stats CSV values"
                )
            return value * unit

        selected = [(n, r) for n, r in rows if rx.search(r[name_idx].strip())]
        seen.extend(r[name_idx].strip() for _, r in rows)
        if not selected:
            continue
        names = tuple(dict.fromkeys(r[name_idx].strip() for _, r in selected))
        selection = "nvtx" if nvtx else ("nccl-kernels" if pattern is None else "kernels")
        if trace:
            durations = [num(r, n, "duration") for n, r in selected]
            arr = np.array(durations)
            return NsysResult(
                report=report,
                selection=selection,
                pattern=pat,
                names=names,
                count=len(durations),
                total_s=float(arr.sum()),
                mean_s=float(arr.mean()),
                median_s=float(np.median(arr)),
                min_s=float(arr.min()),
                max_s=float(arr.max()),
                durations_s=tuple(durations),
                notes=tuple(notes),
            )
        missing = [c for c in ("totaltime", "instances") if c not in cols]
        if missing:
            raise MeasureError(
                f"{name}: line {header_n}: the summary header lacks "
                f'{", ".join(missing)}; expected "Total Time (ns)" and "Instances" columns'
            )
        counts = [num(r, n, "instances") for n, r in selected]
        totals = [num(r, n, "totaltime") for n, r in selected]
        count = sum(counts)
        if count <= 0:
            continue
        mins = [num(r, n, "min") for n, r in selected] if "min" in cols else []
        maxs = [num(r, n, "max") for n, r in selected] if "max" in cols else []
        med_col = "med" if "med" in cols else "median" if "median" in cols else None
        median = (
            num(selected[0][1], selected[0][0], med_col) if med_col and len(selected) == 1 else None
        )
        if len(selected) > 1:
            notes.append(
                f"{len(selected)} rows selected ({', '.join(names[:3])}…): median not derivable "
                "from a summary; use cuda_gpu_trace for the distribution"
            )
        mean = sum(totals) / count
        return NsysResult(
            report=report,
            selection=selection,
            pattern=pat,
            names=names,
            count=int(round(count)),
            total_s=float(sum(totals)),
            mean_s=float(mean),
            median_s=median,
            min_s=float(min(mins)) if mins else float(mean),
            max_s=float(max(maxs)) if maxs else float(mean),
            notes=tuple(notes),
        )
    shown = ", ".join(list(dict.fromkeys(seen))[:8]) or "no rows"
    raise MeasureError(
        f"{name}: no row matches {pattern if pattern is not None else 'the default selection'} "
        f"(NCCL send/recv kernels: {NCCL_SENDRECV_PATTERN!r}; NVTX ranges: "
        f"{DEFAULT_NVTX_PATTERN!r}); names found: {shown}; give a regular expression that "
        "matches the transfers' names (the Measured page's 'Transfers to select' box; "
        "pattern= in Python)"
    )
