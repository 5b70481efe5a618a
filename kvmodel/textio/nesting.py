"""How deeply a JSON text nests, found by a byte scan before any parser sees it.

pyarrow's JSON reader overflows the C stack on deeply nested input (a segfault that takes the
server down, ~20,000 levels) and Python's ``json`` raises ``RecursionError`` (~1,000 levels).
Real traces, perftest output and config.json nest a few levels; :func:`check_nesting` refuses
anything deeper than :data:`MAX_JSON_DEPTH` with a message that names the line.

The scan is vectorised (numpy over the bytes; about 10 ms per MB): brackets
inside strings do not count, a backslash escapes the next byte, and a newline ends a string (a
valid JSON string holds no raw newline, so a broken line cannot hide brackets from the next).
"""

from __future__ import annotations

import numpy as np

from .lines import TextError

MAX_JSON_DEPTH = 64  # arrays/objects inside each other; real inputs use fewer than 10


def _escaped(arr: np.ndarray) -> np.ndarray:
    """Offsets of the bytes a backslash escapes (after an odd run of backslashes)."""
    bs = np.flatnonzero(arr == 0x5C)
    if not bs.size:
        return bs
    breaks = np.flatnonzero(np.diff(bs) != 1)
    starts = np.concatenate(([0], breaks + 1))
    ends = np.concatenate((breaks, [bs.size - 1]))
    odd = (ends - starts + 1) % 2 == 1
    return bs[ends[odd]] + 1


_PIECE = 1 << 24  # bytes scanned at a time (cut at a newline): bounded temporary arrays


def _scan(arr: np.ndarray, start_level: int, lines: bool) -> tuple[int, int, int]:
    """(deepest level, its offset, level at the end) of one newline-aligned piece."""
    opens = (arr == 0x5B) | (arr == 0x7B)
    pos = np.flatnonzero(opens | (arr == 0x5D) | (arr == 0x7D))
    if not pos.size:
        return start_level, 0, start_level
    quote = arr == 0x22
    quote[_escaped(arr)] = False
    count = np.cumsum(quote, dtype=np.uint8)  # quotes so far, modulo 256: the parity is exact
    newline = arr == 0x0A
    line = np.cumsum(newline, dtype=np.int32)[pos]  # each bracket's line in the piece
    at_line_start = np.concatenate(([0], count[newline])).astype(np.uint8)
    outside = ((count[pos] - at_line_start[line]) & 1) == 0  # even quotes since the line began
    pos, line = pos[outside], line[outside]
    if not pos.size:
        return start_level, 0, start_level
    step = np.where(opens[pos], 1, -1).astype(np.int32)
    level = start_level + np.cumsum(step, dtype=np.int64)
    if lines:  # each line starts from level 0
        first = np.concatenate(([0], np.flatnonzero(np.diff(line)) + 1))
        base = (level - step)[first]
        level = level - np.repeat(base, np.diff(np.append(first, pos.size)))
    k = int(np.argmax(level))
    return int(level[k]), int(pos[k]), int(level[-1])


def max_depth(data, *, lines: bool = False) -> tuple[int, int]:
    """(deepest nesting, offset where it is reached) of the JSON in ``data`` (bytes or str);
    (0, 0) without brackets.  ``lines``: JSON Lines, each line counted on its own."""
    if isinstance(data, str):
        data = data.encode("utf-8", errors="replace")
    arr = np.frombuffer(data, np.uint8)
    best, best_at, level, start = 0, 0, 0, 0
    while start < arr.size:
        stop = min(start + _PIECE, arr.size)
        if stop < arr.size:  # end the piece just after a newline
            nl = np.flatnonzero(arr[stop : stop + _PIECE] == 0x0A)
            stop = stop + int(nl[0]) + 1 if nl.size else min(stop + _PIECE, arr.size)
        deepest, at, level = _scan(arr[start:stop], 0 if lines else level, lines)
        if deepest > best:
            best, best_at = deepest, start + at
        start = stop
    return best, best_at


def check_nesting(
    data: bytes | bytearray | memoryview | str,
    name: str,
    *,
    lines: bool = False,
    limit: int = MAX_JSON_DEPTH,
    error=TextError,
) -> None:
    """Raise ``error`` when the JSON in ``data`` nests deeper than ``limit`` levels."""
    depth, at = max_depth(data, lines=lines)
    if depth > limit:
        raw = data.encode("utf-8", errors="replace") if isinstance(data, str) else bytes(data)
        line = raw[:at].count(b"\n") + 1
        raise error(
            f"{name}: line {line}: the JSON nests {depth:,} levels deep (arrays or objects inside "
            f"each other); expected at most {limit} levels (real files use a few)"
        )


def json_kind(value) -> str:
    """What a parsed JSON value is, in JSON's words ("a JSON array", "null", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON true/false"
    kinds = {dict: "object", list: "array", str: "string", int: "number", float: "number"}
    return f"a JSON {kinds.get(type(value), type(value).__name__)}"
