"""Vectorised first-come-first-served queues: one server per column, requests in row order.

A single server that serves jobs in order, job k arriving at ``a_k`` and taking ``s_k``, frees at

    f_k = max(a_k, f_{k−1}) + s_k                      (Lindley's recursion)

which unrolls to ``f_k = S_k + max_{j ≤ k} (a_j − S_{j−1})`` with ``S_k = s_1 + … + s_k``: a
cumulative sum and a running maximum (``np.maximum.accumulate``), no Python loop.  Every column
of a matrix is one server (the compiled ``kernels.served_by_group`` does the same sums per
instance without the matrix: an instance's NICs).

Which instance: the prefill pool is one queue in front of its instances (a request goes to
the first one free, as the formulas' M/G/c assumes; :func:`first_free`, a heap over the
instances: one compiled loop, ~50 ns per request); decode instances take requests in turn
(round robin, :func:`round_robin`).
"""

from __future__ import annotations

import numpy as np


def round_robin(n: int, instances: int) -> np.ndarray:
    """Request k's instance: k mod ``instances`` (the pattern repeated: ~4× faster than the
    remainder of a million indices)."""
    return np.resize(np.arange(min(n, instances), dtype=np.int64), n)


def first_free(arrival: np.ndarray, work: np.ndarray, instances: int):
    """(start [s], instance) of requests in arrival order served by the first free of
    ``instances`` identical servers, first come first served (the one that has been free
    longest; ties: the lowest instance): a heap of the instances' free moments, compiled
    (``kernels.first_free_into``), exact in floating point."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    n = len(arrival)
    if instances == 1:
        m = arrival.reshape(-1, 1)
        return served(m, work.reshape(-1, 1)).ravel(), np.zeros(n, dtype=np.int64)
    start, inst = np.empty(n), np.empty(n, dtype=np.int64)
    kernels.first_free_into(np.ascontiguousarray(arrival, dtype=float),
                            np.ascontiguousarray(work, dtype=float), int(instances), start,
                            inst)  # fmt: skip
    return start, inst


def served(arrival: np.ndarray, service: np.ndarray) -> np.ndarray:
    """Start of service [s] of each job in an FCFS single-server queue per column (rows in
    service order): ``f_k − s_k`` of the module's recursion."""
    total = np.cumsum(service, axis=0)
    before = total - service  # S_{k−1}
    free = total + np.maximum.accumulate(arrival - before, axis=0)
    return free - service
