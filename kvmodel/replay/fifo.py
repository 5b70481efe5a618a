"""Vectorised first-come-first-served queues: one server per column, requests in row order.

A single server that serves jobs in order, job k arriving at ``a_k`` and taking ``s_k``, frees at

    f_k = max(a_k, f_{k−1}) + s_k                      (Lindley's recursion)

which unrolls to ``f_k = S_k + max_{j ≤ k} (a_j − S_{j−1})`` with ``S_k = s_1 + … + s_k``: a
cumulative sum and a running maximum (``np.maximum.accumulate``), no Python loop.  Every column
of a matrix is one server (an instance, or an instance's NICs), so a whole pool is a handful of
array operations (:class:`Layout` places each request in its instance's column).

Which instance: the prefill pool is one queue in front of its instances (a request goes to
the first one free, as the formulas' M/G/c assumes; :func:`first_free`, a heap over the
instances: the one loop, ~0.5 µs per request); decode instances take requests in turn
(round robin, :func:`round_robin`).
"""

from __future__ import annotations

import heapq

import numpy as np


class Layout:
    """Where each request sits in a (rows, instances) matrix: its instance's column, rows in
    the order given (request order within each instance)."""

    def __init__(self, inst: np.ndarray, instances: int):
        n = len(inst)
        order = np.argsort(inst, kind="stable")
        counts = np.bincount(inst, minlength=instances)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.empty(n, dtype=np.int64)
        rank[order] = np.arange(n) - np.repeat(starts, counts)
        self.row, self.col = rank, np.asarray(inst, dtype=np.int64)
        self.shape = (int(counts.max()) if n else 0, instances)

    def matrix(self, values, pad: float) -> np.ndarray:
        m = np.full(self.shape, pad, dtype=float)
        m[self.row, self.col] = values
        return m

    def flat(self, m: np.ndarray) -> np.ndarray:
        return m[self.row, self.col]


def round_robin(n: int, instances: int) -> np.ndarray:
    """Request k's instance: k mod ``instances``."""
    return np.arange(n) % instances


def first_free(arrival: np.ndarray, work: np.ndarray, instances: int):
    """(start [s], instance) of requests in arrival order served by the first free of
    ``instances`` identical servers, first come first served (ties: the lowest instance).

    The heap holds one whole number per instance, ``time in ticks × instances + instance``:
    integers compare faster than tuples (~0.7 µs per request instead of ~1.4 µs), and the
    instance rides in the low digits.  A tick is 1 ns (1 µs when the times would overflow).
    """
    n = len(arrival)
    if instances == 1:
        m = arrival.reshape(-1, 1)
        return served(m, work.reshape(-1, 1)).ravel(), np.zeros(n, dtype=np.int64)
    c = instances
    horizon = float(arrival.max()) + float(work.sum()) if n else 0.0
    tick = 1e-9 if horizon * 1e9 * c < 4e18 else 1e-6
    arr = (np.rint(arrival / tick).astype(np.int64) * c).tolist()
    dur = (np.rint(work / tick).astype(np.int64) * c).tolist()
    heap = list(range(c))
    out = [0] * n
    for k, (x, w) in enumerate(zip(arr, dur, strict=True)):
        f = heap[0]
        t = f if f > x else x + f % c  # x is a multiple of c: the instance in its low digits
        out[k] = t
        heapq.heapreplace(heap, t + w)
    keys = np.array(out, dtype=np.int64)
    return (keys // c) * tick, keys % c


def by_instance(values: np.ndarray, instances: int, pad: float) -> np.ndarray:
    """``values`` (request order) as a (rows, ``instances``) matrix, request k in column
    k mod ``instances`` (round robin); the last row is filled with ``pad``."""
    n = len(values)
    rows = -(-n // instances)
    out = np.full(rows * instances, pad, dtype=float)
    out[:n] = values
    return out.reshape(rows, instances)


def served(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Start of service [s] of each job in an FCFS single-server queue per column (rows in
    service order): ``f_k − s_k`` of the module's recursion."""
    total = np.cumsum(service, axis=0)
    before = total - service  # S_{k−1}
    free = total + np.maximum.accumulate(arrival - before, axis=0)
    return free - service


def sorted_columns(key: np.ndarray, *others: np.ndarray) -> tuple[np.ndarray, ...]:
    """``key`` and ``others`` with each column sorted by ``key`` (stable), and the order."""
    order = np.argsort(key, axis=0, kind="stable")
    return (np.take_along_axis(key, order, 0),
            *(np.take_along_axis(o, order, 0) for o in others), order)  # fmt: skip


def unsort(values: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Undo ``sorted_columns``: ``values`` back in the columns' original row order."""
    out = np.empty_like(values)
    np.put_along_axis(out, order, values, 0)
    return out
