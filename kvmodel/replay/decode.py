"""The decode pool of a replay: continuous batching bounded by KV memory.

Request k of the stream decodes on instance k mod c (round robin, as the router pairs a
prefill and a decode instance when the request arrives); it reaches it when its KV has
arrived.  An instance admits a request when the KV tokens it reserves (prompt + output: what
it holds at its last step) fit beside those of the requests it is decoding; otherwise the
request waits, first come first served.  A request then runs its first decode step and one
step per further output token; a step takes ``timing.estimate_decode_step_s`` at the
instance's running batch and mean context.

The step depends on the batch and the batch on how long requests stay: the replay solves this
by fixed-point iteration from a design step (``sim.replay``: the step at the batch Little's
law gives each instance), until a round moves the steps by less than :data:`TOLERANCE` on
average (at most :data:`ITERATIONS` rounds; ``DecodeRun.rounds``, ``converged``).  The first
rounds are coarse: every request starts when its KV arrives, until a round moves the steps by
less than :data:`COARSE` (or half the rounds have run); then memory admission joins, and only
a round with it can end the iteration (its move measures admission's effect too).  Each round
counts every instance's running batch and held tokens on a time grid (bins of at least
:data:`MIN_BIN_S`, at most :data:`MAX_CELLS` cells in all), gives each request the step at the
batch when it starts (its first step) and at the mean batch over its stay (every other step).
Admission by memory is checked for every instance at once (a grid); the event loop (a heap
of departures) runs only on instances whose reserved tokens may exceed their memory.  The
arrays are (instances, rows), an instance's requests in a row in arrival order; the loops over
them are compiled (:mod:`kvmodel.replay.kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from kvmodel.replay import parallel

ITERATIONS = 40  # rounds at most
TOLERANCE = 5e-3  # converged: a round moves the mean steps by less (on average, relatively)
COARSE = 2 * TOLERANCE  # the coarse rounds (no memory admission) end below this move
MIN_BIN_S = 0.05
MAX_CELLS = 4_000_000


@dataclass(frozen=True, eq=False)
class DecodeRun:
    """Per request (the caller's order): admission, first step, mean step, departure [s]."""

    start_s: np.ndarray
    first_step_s: np.ndarray
    tpot_s: np.ndarray
    depart_s: np.ndarray
    bin_s: float  # the grid's bin width
    reserved_tokens: np.ndarray  # pool-wide reserved KV tokens per bin
    waiting: np.ndarray  # requests waiting for memory, pool-wide, at each admission or arrival
    memory_bound: int  # instances on which memory ever made a request wait
    rounds: int = ITERATIONS  # fixed-point rounds run
    converged: bool = True  # the last round moved the steps by less than TOLERANCE


def _flagged(start, dur, need, valid, capacity: float, nb: int, w: float,
             room=None) -> np.ndarray:  # fmt: skip
    """Instances (rows) whose reserved tokens may exceed ``capacity`` at some time: a grid
    (``kernels.column_peak`` counts a request in every bin it touches: never below the exact
    peak, departures first), so every row that overflows is among them.  Memory admission
    (``kernels.admit``) runs on these rows only: on a row that never overflows it admits every
    request when it is ready, as if it had not run."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    rough = kernels.column_peak(start, dur, valid, need, nb, w, room)
    return np.flatnonzero(rough > capacity * (1 + 1e-12))


def _admit_block(r, dur, need, valid, capacity: float, moved, room, nb: int, w: float):
    """One block's admission (rows of the pool, :mod:`kvmodel.replay.parallel`): (its starts,
    its rows on which a request waited, whether any row was flagged, its latest start +
    stay).  Starts move only on the rows :func:`_flagged` names, into ``moved`` (else ``r``
    itself is returned)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    flagged = _flagged(r, dur, need, valid, capacity, nb, w, room)
    if not flagged.size:
        return r, 0, False, None
    np.copyto(moved, r)
    bound = 0
    for c in flagged:
        moved[c] = kernels.admit(r[c], need[c], dur[c], float(capacity))
        bound += bool((moved[c] != r[c]).any())
    return moved, bound, True, float(kernels.latest_end(moved, dur))


def _admitted(parts, r, dur, need, valid, capacity: float, moved, rooms, end: float):
    """One round's admission over the blocks ``parts``: (starts, instances on which a request
    waited, the grid's bins and width [s]); ``end``: the latest ``r`` + stay (the grid of
    ``r``, which admission only moves later)."""
    nb, w = _grid(end, r.shape[0])
    got = parallel.run([
        partial(_admit_block, r[b], dur[b], need[b], valid[b], capacity, moved[b], room, nb, w)
        for b, room in zip(parts, rooms, strict=True)
    ])  # fmt: skip
    if not any(g[2] for g in got):
        return r, 0, nb, w
    top = -np.inf
    for b, (rows, _, flagged, latest) in zip(parts, got, strict=True):
        if not flagged:  # the block's starts are its arrivals
            np.copyto(moved[b], rows)
            latest = float(np.max(r[b] + dur[b]))
        top = max(top, latest)
    return moved, sum(g[1] for g in got), *_grid(top, r.shape[0])


def _grid(top: float, instances: int) -> tuple[int, float]:
    """(bins, width [s]) of a round's time grid past the latest end ``top`` [s] of a pool of
    ``instances``: at most MAX_CELLS cells."""
    horizon = float(top) + MIN_BIN_S
    w = max(MIN_BIN_S, horizon * instances / MAX_CELLS)
    return int(horizon / w) + 2, w


def _durations(parts, valid, first, tpot, out, r, dur) -> float:
    """Each request's stay into ``dur``, block by block; the latest ``r`` + stay [s]."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    return max(parallel.run([
        partial(kernels.durations_end_into, valid[b], first[b], tpot[b], out[b], r[b], dur[b])
        for b in parts
    ]))  # fmt: skip


def _filled(got, out) -> None:
    """``out`` holds ``got`` (a step function may return a new array instead of filling it)."""
    if got is not out:
        np.copyto(out, got)


def _means_block(start, dur, valid, held, nb, w, room, means, step, new_first, new_tpot,
                 tpot, first_too: bool):  # fmt: skip
    """One block's round after its starts: the means, the steps at them (into ``new_tpot``,
    and ``new_first`` when ``first_too``, else a copy of the mean step) and its part of the
    round's move (``kernels.change_sums`` against ``tpot``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    c0, b0, cm, bm = kernels.round_means(start, dur, valid, held, nb, w, room, out=means)
    _filled(step(cm, bm, out=new_tpot), new_tpot)
    if first_too:
        _filled(step(c0, b0, out=new_first), new_first)
    else:  # a coarse round's stays take the first step as a mean one (~5 ms a round less)
        np.copyto(new_first, new_tpot)
    return kernels.change_sums(new_tpot, tpot, valid)


def _reserved_block(start, dur, valid, first, tpot, output, need, nb, w, room, grid):
    """One block's stays (into ``dur``) and reserved tokens per instance and bin (into
    ``grid``) after the last round."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    kernels.durations_into(valid, first, tpot, output, dur)
    kernels.column_grid(start, dur, valid, need, nb, w, room, out=grid)


def run_decode(ready, need, held, output, *, instances: int, capacity_tokens: float,
               step, design_step_s: float, on_round=None, rows=None) -> DecodeRun:  # fmt: skip
    """The pool (module doc), requests in stream order.  ``ready``: KV arrival [s]; ``need``:
    tokens reserved; ``held``: mean tokens held over the stay; ``output``: tokens generated
    (≥ 1); ``step(context, batch, out=)``: one decode step [s] for arrays of whole tokens
    and requests (it fills ``out``: each block's rows, from a thread of its own); ``on_round(i)``,
    when given, is called after round i (1 … :data:`ITERATIONS`; the last round's call says
    :data:`ITERATIONS`); ``rows``: (KV arrivals as the instances' rows, each row's order by
    them), when the caller has them (``kernels.receive_in_turn``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    n = len(ready)
    ready = np.asarray(ready, dtype=float)
    if rows is None:
        order = kernels.instance_order(ready, instances, -(-n // instances), float(ready.max()))
        by_row = kernels.rows_of(ready, instances, 0.0)
    else:
        by_row, order = rows
    need, held, output = (np.asarray(x, dtype=float) for x in (need, held, output))
    r, nd, hd, out, valid = kernels.instance_rows(order, float(ready.max()), by_row, need, held,
                                                  output, float(capacity_tokens))  # fmt: skip
    parts = parallel.blocks(*r.shape)
    rooms = [kernels.GridRoom() for _ in parts]  # the rounds' grids, reused, one per block
    # the rounds' arrays, reused: a fresh 8 MB array costs its page faults each time
    first, tpot = np.full(r.shape, design_step_s), np.full(r.shape, design_step_s)
    new_first, new_tpot = np.empty(r.shape), np.empty(r.shape)
    dur, moved, means = np.empty(r.shape), np.empty(r.shape), [np.empty(r.shape) for _ in "1234"]
    rounds, change, admitting = 0, np.inf, False
    while rounds < ITERATIONS and (change >= TOLERANCE or not admitting):
        admitting = admitting or change < COARSE or rounds >= ITERATIONS // 2
        end = _durations(parts, valid, first, tpot, out, r, dur)
        if admitting:
            start, bound, nb, w = _admitted(parts, r, dur, nd, valid, capacity_tokens, moved,
                                            rooms, end)  # fmt: skip
        else:  # a coarse round: every request starts when its KV arrives
            start, bound, (nb, w) = r, 0, _grid(end, r.shape[0])
        sums = parallel.run([
            partial(_means_block, start[b], dur[b], valid[b], hd[b], nb, w, room,
                    [m[b] for m in means], step, new_first[b], new_tpot[b], tpot[b], admitting)
            for b, room in zip(parts, rooms, strict=True)
        ])  # fmt: skip
        # TPOT (a request's mean step) settles; first steps jitter with the starts' bins
        total, count = (sum(x) for x in zip(*sums, strict=True))
        change = total / count if count else 0.0
        first, new_first, tpot, new_tpot = new_first, first, new_tpot, tpot
        rounds += 1
        if on_round is not None:
            on_round(rounds if change >= TOLERANCE or not admitting else ITERATIONS)
    grid = np.empty((r.shape[0], nb + 1))
    parallel.run([partial(_reserved_block, start[b], dur[b], valid[b], first[b], tpot[b], out[b],
                          nd[b], nb, w, room, grid[b])
                  for b, room in zip(parts, rooms, strict=True)])  # fmt: skip
    reserved = grid[:, :nb].sum(axis=0)

    s, f, t, d = kernels.request_order(order, n, start, first, tpot, dur)
    return DecodeRun(
        start_s=s, first_step_s=f, tpot_s=t, depart_s=d,
        bin_s=w, reserved_tokens=reserved, waiting=_queue(ready, s),
        memory_bound=bound, rounds=rounds, converged=bool(change < TOLERANCE and admitting),
    )  # fmt: skip


def _queue(ready: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Requests waiting for memory pool-wide after each arrival or admission event."""
    waited = start > ready
    if not waited.any():
        return np.zeros(1)
    t = np.concatenate([start[waited], ready[waited]])
    d = np.concatenate([-np.ones(waited.sum()), np.ones(waited.sum())])
    order = np.argsort(t, kind="stable")  # an admission at the same time as an arrival first
    return np.cumsum(d[order])
