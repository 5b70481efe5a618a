"""Vectorised first-come-first-served queues: one server per column, requests in row order.

A single server that serves jobs in order, job k arriving at ``a_k`` and taking ``s_k``, frees at

    f_k = max(a_k, f_{k−1}) + s_k                      (Lindley's recursion)

which unrolls to ``f_k = S_k + max_{j ≤ k} (a_j − S_{j−1})`` with ``S_k = s_1 + … + s_k``: a
cumulative sum and a running maximum (``np.maximum.accumulate``), no Python loop.  Every column
of a matrix is one server (the compiled ``kernels.served_by_group`` does the same sums per
instance without the matrix: an instance's NICs).

Which instance: the prefill pool is one queue in front of its instances (a request goes to
the first one free, as the formulas' M/G/c assumes; :func:`first_free`, a heap over the
instances: the one loop, compiled, ~40 ns per request); decode instances take requests in turn
(round robin, :func:`round_robin`).
"""

from __future__ import annotations

import numpy as np


def round_robin(n: int, instances: int) -> np.ndarray:
    """Request k's instance: k mod ``instances``."""
    return np.arange(n) % instances


HEAP_AT_LEAST = 2048  # requests the heap takes before the vectorised path is tried again
WINDOW = 65_536  # requests the vectorised path looks ahead at a time


def first_free(arrival: np.ndarray, work: np.ndarray, instances: int):
    """(start [s], instance) of requests in arrival order served by the first free of
    ``instances`` identical servers, first come first served (the one that has been free
    longest; ties: the lowest instance).

    Stretches where nobody waits are solved with arrays (:func:`_no_wait_run`), the busy
    stretches between them by a heap (:func:`_heap_run`): a plan's prefill pool is sized so
    that most requests find an instance free, and the heap costs ~0.6 µs per request."""
    n = len(arrival)
    if instances == 1:
        m = arrival.reshape(-1, 1)
        return served(m, work.reshape(-1, 1)).ravel(), np.zeros(n, dtype=np.int64)
    arrival = np.ascontiguousarray(arrival, dtype=float)  # one compiled signature
    work = np.ascontiguousarray(work, dtype=float)
    start, inst = np.empty(n), np.empty(n, dtype=np.int64)
    free = np.zeros(instances)  # when each instance is free next
    k, least = 0, HEAP_AT_LEAST
    while k < n:
        before = k
        k = _no_wait_run(arrival, work, free, k, start, inst)
        # a short run free of waits: the pool is busy, so the heap takes longer turns
        least = HEAP_AT_LEAST if k - before >= least else min(2 * least, WINDOW)
        if k < n:
            k = _heap_run(arrival, work, free, k, start, inst, least)
    return start, inst


def _no_wait_run(arrival, work, free, k: int, start, inst) -> int:
    """Fill requests k … m − 1 that find an instance free (the longest-free one serves each);
    return m.  With no wait the instances' free moments are taken in time order: request
    k + e takes free moment e (the instances' current ones, then the departures), which is
    at or before its arrival exactly while the moments up to its arrival outnumber it."""
    a = arrival[k : k + WINDOW]
    d = a + work[k : k + WINDOW]
    order_f = np.argsort(free, kind="stable")
    f = free[order_f]
    counted = np.searchsorted(f, a, side="right") + np.searchsorted(np.sort(d), a, side="right")
    bad = np.flatnonzero(counted <= np.arange(len(a)))
    m = len(a) if not bad.size else int(bad[0])
    if m == 0:
        return k
    c = len(free)
    times = np.concatenate([f, d[:m]])
    events = np.argsort(times, kind="stable")[:m]  # the moment each request takes
    # an event < c is an instance's current free moment; else request (event − c)'s
    # departure, on that request's instance: followed by pointer doubling
    ptr = np.where(events < c, -1 - order_f[np.minimum(events, c - 1)], events - c)
    while (ptr >= 0).any():
        ptr = np.where(ptr >= 0, ptr[np.maximum(ptr, 0)], ptr)
    start[k : k + m] = a[:m]
    inst[k : k + m] = -1 - ptr
    np.maximum.at(free, inst[k : k + m], d[:m])
    return k + m


def _heap_run(arrival, work, free, k: int, start, inst, least: int = HEAP_AT_LEAST) -> int:
    """Requests from k by a heap of the instances' free moments, at least ``least`` of them
    and then until one does not wait; return the next (compiled:
    ``kernels.first_free_heap``).

    The heap holds one whole number per instance, ``time in ticks × instances + instance``:
    integers compare faster than tuples, and the instance rides in the low digits.  A tick
    is 1 ns (1 µs when the times would overflow)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    c = len(free)
    horizon = max(float(arrival[-1]), float(free.max())) + float(work[k:].sum())
    tick = 1e-9 if horizon * 1e9 * c < 4e18 else 1e-6
    return int(kernels.first_free_heap(arrival, work, free, k, least, tick, start, inst))


def served(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Start of service [s] of each job in an FCFS single-server queue per column (rows in
    service order): ``f_k − s_k`` of the module's recursion."""
    total = np.cumsum(service, axis=0)
    before = total - service  # S_{k−1}
    free = total + np.maximum.accumulate(arrival - before, axis=0)
    return free - service
