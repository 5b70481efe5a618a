"""The critical sequence length: the shortest prompt whose exposed transfer reaches k decode
steps (closed form when the transfer is linear in S, else a vectorised grid search)."""

from __future__ import annotations

import math

import numpy as np

from .scenario import Scenario
from .wire import exposed_transfer_s


def _is_linear(sc: Scenario) -> bool:
    full = all(g.window_tokens is None for g in sc.model.groups)
    return full and not sc.descriptor_s and not sc.layerwise


def critical_seq_len(sc: Scenario) -> int | None:
    """Smallest whole S with exposed transfer(S) ≥ k × decode step, or None up to max context.

    Closed form when the transfer is linear in S (full attention, no descriptor cost, sent
    whole).  Otherwise the first crossing on a 512-point log grid of S, refined on finer grids
    inside the bracket until it is one token wide (vectorised: about 3 calls of ``transfer``
    over arrays instead of ~17 scalar bisection steps).  For a monotone transfer this is the exact
    smallest S; with layer-wise sending and an estimated prefill (which grows faster than the
    transfer and can hide it again) it is the first crossing the grid sees.
    """
    target = sc.k * sc.decode_step_s
    max_s = sc.model.max_context_tokens

    if _is_linear(sc):
        return _linear_crossing(sc, target, max_s)
    return first_crossing(lambda s: exposed_transfer_s(sc, s), target, max_s)


def _linear_crossing(sc: Scenario, target: float, max_s: int) -> int | None:
    """``critical_seq_len`` of a transfer linear in S: from its value at 0 and its slope, then
    checked at the guess and the S below it.  The points go to ``transfer`` as one array per
    step (2 calls instead of 5 scalar ones; each value is the scalar call's: the transfer is
    elementwise, tests/test_critical.py pins it)."""
    known: dict[int, float] = {}

    def at(*ss: int) -> list[float]:
        new = sorted({int(s) for s in ss} - known.keys())
        if new:
            vals = np.asarray(exposed_transfer_s(sc, np.array(new, dtype=np.int64)), dtype=float)
            known.update(zip(new, vals.tolist(), strict=True))
        return [known[int(s)] for s in ss]

    top, c, one = at(max_s, 0, 1)
    if top < target:
        return None
    guess = max(1, math.ceil((target - c) / (one - c)))
    if line_decides(c, one - c, top, max_s, target, guess):
        return guess if guess <= max_s else None
    below, here = at(guess - 1, guess)
    while guess > 1 and below >= target:  # floating-point guard
        guess -= 1
        below, here = at(guess - 1)[0], below
    while here < target:
        guess += 1
        here = at(guess)[0]
    return guess if guess <= max_s else None


AFFINE_TOL = 1e-9  # relative: far above float rounding (~1e-15), far below any real step


def line_decides(c: float, slope: float, top: float, max_s: int, target: float,
                 guess: int) -> bool:
    """True when the three values seen (at 0, 1 and max S) lie on one line and that line puts
    the target clearly between S = guess − 1 and guess: then the function's own values there
    (what the check below ``_linear_crossing``'s guess computes) cannot fall on the other side
    of the target, and that call is saved (one ``transfer`` a critical length, ~0.25 ms;
    Compare computes four on every change; session 22).  Otherwise False: the values are
    computed and checked."""
    tol = AFFINE_TOL * max(abs(top), abs(target))
    if slope <= 0 or abs(c + slope * max_s - top) > tol:
        return False  # not one line (a step per block, a window): check by the values
    lo, hi = c + slope * (guess - 1), c + slope * guess
    return hi >= target + tol and (guess == 1 or lo <= target - tol)


def first_crossing(g, target: float, max_s: int, points: int = 512) -> int | None:
    """Smallest whole S in [1, max_s] with ``g(S) ≥ target`` as the grids see it, or None.

    ``g`` maps an int64 array of S to an array of values.  A log grid (ends included) finds the
    first grid point at or above the target; the bracket below it is then searched on linear
    grids of at most ``points`` whole values, each time keeping the first hit and the
    candidate before it, until the bracket is one token wide.
    """
    grid = np.unique(np.append(np.geomspace(1, max_s, points).astype(np.int64), [1, max_s]))
    hit = np.flatnonzero(np.asarray(g(grid)) >= target)
    if hit.size == 0:
        return None
    hi = int(grid[hit[0]])
    lo = int(grid[hit[0] - 1]) if hit[0] > 0 else 0  # g(lo) < target, or lo = 0
    while hi - lo > 1:
        cand = np.unique(np.linspace(lo + 1, hi, min(hi - lo, points)).astype(np.int64))
        first = int(np.flatnonzero(np.asarray(g(cand)) >= target)[0])  # hi is a candidate
        lo = int(cand[first - 1]) if first > 0 else lo
        hi = int(cand[first])
        if first == 0:
            break  # the first candidate, lo + 1, already reaches the target
    return hi
