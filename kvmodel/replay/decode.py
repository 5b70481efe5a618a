"""The decode pool of a replay: continuous batching bounded by KV memory.

Request k of the stream decodes on instance k mod c (round robin, as the router pairs a
prefill and a decode instance when the request arrives); it reaches it when its KV has
arrived.  An instance admits a request when the KV tokens it reserves (prompt + output: what
it holds at its last step) fit beside those of the requests it is decoding; otherwise the
request waits, first come first served.  A request then runs its first decode step and one
step per further output token; a step takes ``timing.estimate_decode_step_s`` at the
instance's running batch and mean context.

The step depends on the batch and the batch on how long requests stay: the replay solves this
by fixed-point iteration (:data:`ITERATIONS` rounds from the plan's design step).  Each round
counts every instance's running batch and held tokens on a time grid (bins of at least
:data:`MIN_BIN_S`, at most :data:`MAX_CELLS` cells in all), gives each request the step at the
batch when it starts (its first step) and at the mean batch over its stay (every other step).
Admission by memory is checked for every instance at once; the event loop (a heap of
departures) runs only on instances whose reserved tokens would ever exceed their memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvmodel.replay.fifo import by_instance, sorted_columns, unsort

ITERATIONS = 3
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


def _admit(ready, need, dur, capacity: float) -> np.ndarray:
    """Admission times of one instance's requests (rows in arrival order): FCFS, each when its
    ``need`` tokens fit in ``capacity`` beside the requests still decoding (compiled:
    ``kernels.admit``, a heap of departures)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    return kernels.admit(*(np.ascontiguousarray(x, dtype=float) for x in (ready, need, dur)),
                         float(capacity))  # fmt: skip


def _overflows(start, dur, need, valid, capacity: float) -> np.ndarray:
    """Columns whose reserved tokens exceed ``capacity`` at some time (departures first).

    A grid first (:func:`_grid` counts a request in every bin it touches: never below the
    exact peak), then the exact check by sorted events only on the columns it flags."""
    end = start + dur
    horizon = float(end.max()) + MIN_BIN_S
    w = max(MIN_BIN_S, horizon * start.shape[1] / MAX_CELLS)
    rough = _grid(start, end, valid, need, int(horizon / w) + 2, w).max(axis=1)
    cols = np.flatnonzero(rough > capacity * (1 + 1e-12))
    if not cols.size:
        return cols
    s, d, nd = start[:, cols], dur[:, cols], need[:, cols]
    times = np.concatenate([s + d, s])
    delta = np.concatenate([-nd, nd])
    order = np.argsort(times, axis=0, kind="stable")
    held = np.cumsum(np.take_along_axis(delta, order, 0), axis=0)
    return cols[held.max(axis=0) > capacity * (1 + 1e-12)]


class Bins:
    """Each request's first and last bin on a grid of ``nb`` bins of width ``w`` per column,
    as flat indices into a (cols, nb + 1) layout: computed once per round and shared by every
    grid and mean of the round (compiled: ``kernels.bin_index``, ``grid``, ``mean_over``)."""

    def __init__(self, start, end, nb: int, w: float):
        from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

        self.k = kernels
        self.shape, self.cols, self.nb = start.shape, start.shape[1], nb
        self.first, self.stop, self.last, self.count = kernels.bin_index(
            np.ascontiguousarray(start, dtype=float), np.ascontiguousarray(end, dtype=float),
            int(nb), float(w))  # fmt: skip

    def grid(self, valid, values) -> np.ndarray:
        """Per column and bin (cols, nb + 1; the last bin empty), the sum of ``values`` of the
        requests running in it."""
        v = np.ascontiguousarray(np.broadcast_to(values, self.shape) if np.ndim(values)
                                 else np.full(1, values), dtype=float).ravel()  # fmt: skip
        return self.k.grid(self.first, self.stop, np.ascontiguousarray(valid).ravel(), v,
                           self.cols, self.nb)  # fmt: skip

    def mean_over(self, grid):
        """(value at each request's start bin, mean over its bins) of a :meth:`grid`."""
        at, mean = self.k.mean_over(grid, self.first, self.last, self.count, self.nb)
        return at.reshape(self.shape), mean.reshape(self.shape)


def _grid(start, end, valid, values, nb: int, w: float) -> np.ndarray:
    """Per column and bin, the sum of ``values`` of the requests running in it: (cols, nb)."""
    return Bins(start, end, nb, w).grid(valid, values)[:, :nb]


def run_decode(ready, need, held, output, *, instances: int, capacity_tokens: float,
               step, design_step_s: float) -> DecodeRun:  # fmt: skip
    """The pool (module doc), requests in stream order.  ``ready``: KV arrival [s]; ``need``:
    tokens reserved; ``held``: mean tokens held over the stay; ``output``: tokens generated
    (≥ 1); ``step(context, batch)``: one decode step [s] for arrays of whole tokens and
    requests."""
    n = len(ready)
    last = float(ready.max())
    r, valid, nd, hd, out, order = sorted_columns(
        by_instance(ready, instances, last),
        by_instance(np.ones(n), instances, 0.0) > 0,
        by_instance(np.minimum(need, capacity_tokens), instances, 0.0),
        by_instance(held, instances, 0.0),
        by_instance(output, instances, 0.0),
    )
    first = np.full(r.shape, design_step_s)
    tpot = np.full(r.shape, design_step_s)
    for _ in range(ITERATIONS):
        dur = np.where(valid, first + (out - 1) * tpot, 0.0)
        start = r.copy()
        bound = _overflows(start, dur, nd, valid, capacity_tokens)
        for c in bound:
            start[:, c] = _admit(r[:, c], nd[:, c], dur[:, c], capacity_tokens)
        end = start + dur
        horizon = float(end.max()) + MIN_BIN_S
        w = max(MIN_BIN_S, horizon * instances / MAX_CELLS)
        nb = int(horizon / w) + 2
        bins = Bins(start, end, nb, w)
        b0, bm = bins.mean_over(bins.grid(valid, 1.0))
        t0, tm = bins.mean_over(bins.grid(valid, hd))
        b0, bm = np.maximum(b0, 1.0), np.maximum(bm, 1.0)
        first = step(np.maximum(np.ceil(t0 / b0), 1.0), np.ceil(b0))
        tpot = step(np.maximum(np.ceil(tm / bm), 1.0), np.ceil(bm))
    dur = np.where(valid, first + (out - 1) * tpot, 0.0)
    reserved = _grid(start, start + dur, valid, nd, nb, w).sum(axis=0)

    def flat(m):
        return unsort(m, order).ravel()[:n]

    s = flat(start)
    return DecodeRun(
        start_s=s, first_step_s=flat(first), tpot_s=flat(tpot), depart_s=s + flat(dur),
        bin_s=w, reserved_tokens=reserved, waiting=_queue(ready, s),
        memory_bound=len(bound),
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
