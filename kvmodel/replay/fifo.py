"""Vectorised first-come-first-served queues: one server per column, requests in row order.

A single server that serves jobs in order, job k arriving at ``a_k`` and taking ``s_k``, frees at

    f_k = max(a_k, f_{k−1}) + s_k                      (Lindley's recursion)

which unrolls to ``f_k = S_k + max_{j ≤ k} (a_j − S_{j−1})`` with ``S_k = s_1 + … + s_k``: a
cumulative sum and a running maximum (``np.maximum.accumulate``), no Python loop.  Every column
of a matrix is one server (an instance, or an instance's NICs), so a whole pool is a handful of
array operations.  Requests go to the pool's instances in turn (round robin, as a P/D router
without load feedback does), so instance ``i`` of ``c`` takes requests ``i, i + c, i + 2c, …``:
the (rows × c) reshape of the requests in arrival order.
"""

from __future__ import annotations

import numpy as np


def by_instance(values: np.ndarray, instances: int, pad: float) -> np.ndarray:
    """``values`` (request order) as a (rows, ``instances``) matrix, request k in column
    k mod ``instances``; the last row is filled with ``pad``."""
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
