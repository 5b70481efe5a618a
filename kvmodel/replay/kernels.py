"""The replay's sequential loops, compiled by numba (issue 22 "Speed"; bench/README.md,
Session 8): the first-free heap of the prefill pool, the decode pool's memory admission and
its time grids.  Each does exactly the arithmetic of the numpy/heapq code it replaced, in
the same order, so the timelines are bit-identical to it (checked field by field on the
1,000,000-request bench trace; ``tests/test_replay_kernels.py`` pins hand-worked cases).

Why numba: the loops are sequential (a heap, an admission queue), so numpy cannot vectorise
them, and in Python they cost ~0.5 µs per request and operation.  numba compiles them from
this Python source (no C toolchain, wheels for every platform we run on) and is kept by the
PyData community.  Compiled functions run without the GIL (``nogil``), so a long replay in
one Streamlit session leaves the others' scripts running.

This module imports numba, so it is imported only when a replay runs (``kernels()`` in
:mod:`kvmodel.replay.fifo`), never on the app's import path (its cold start).  The compiled
code is cached beside this file (``__pycache__``; when that is read-only numba uses
``NUMBA_CACHE_DIR`` or the user's cache directory, and when none can be written the
functions compile in memory for each process instead): the first replay on a machine pays
the compilation (see bench/README.md), later processes load it.
"""

from __future__ import annotations

import warnings

import numpy as np
from numba import njit
from numba.core.errors import NumbaWarning


def _compiled(fn):
    """``njit`` without the GIL, cached on disk when some cache directory can be written."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaWarning)
            return njit(cache=True, nogil=True)(fn)
    except (RuntimeError, NumbaWarning):  # no writable cache location: compile per process
        return njit(cache=False, nogil=True)(fn)


# ---- a binary min-heap on arrays (keys compared as (a, b) pairs when b is given) ----------


@_compiled
def _sift_down(heap, pos, size):
    """Move ``heap[pos]`` down to its place (a heap of whole numbers)."""
    item = heap[pos]
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and heap[child + 1] < heap[child]:
            child += 1
        if heap[child] >= item:
            break
        heap[pos] = heap[child]
        pos = child
    heap[pos] = item


@_compiled
def first_free_heap(arrival, work, free, k, least, tick, start, inst):
    """Requests from ``k`` through a heap of the instances' free moments (``fifo._heap_run``:
    at least ``least`` of them, then until one finds an instance free, which is not taken);
    fills ``start``/``inst``, leaves ``free`` as the instances' next free moments and returns
    the next request.

    Keys are whole numbers, ``time in ticks × instances + instance``: the lowest key is the
    instance free longest, ties to the lowest instance (keys are distinct)."""
    n, c = len(arrival), len(free)
    heap = np.empty(c, dtype=np.int64)
    for i in range(c):
        heap[i] = np.int64(np.rint(free[i] / tick)) * c + i
    for i in range(c // 2 - 1, -1, -1):
        _sift_down(heap, i, c)
    m = k
    while m < n:
        xt = np.int64(np.rint(arrival[m] / tick)) * c
        f = heap[0]
        if m - k < least:  # taken whatever it finds
            t = f if f > xt else xt + f % c  # the instance in the low digits
        elif f <= xt:  # finds an instance free: the arrays' turn again
            break
        else:
            t = f
        start[m] = (t // c) * tick
        inst[m] = t % c
        heap[0] = t + np.int64(np.rint(work[m] / tick)) * c
        _sift_down(heap, 0, c)
        m += 1
    for i in range(c):
        key = heap[i]
        free[key % c] = (key // c) * tick
    return m


@_compiled
def _less(a, b, i, j):
    return a[i] < a[j] or (a[i] == a[j] and b[i] < b[j])


@_compiled
def _push(a, b, size, x, y):
    """Push (x, y) on the pair heap of ``size`` items; return the new size."""
    pos = size
    a[pos], b[pos] = x, y
    while pos > 0:
        parent = (pos - 1) // 2
        if not _less(a, b, pos, parent):
            break
        a[pos], a[parent] = a[parent], a[pos]
        b[pos], b[parent] = b[parent], b[pos]
        pos = parent
    return size + 1


@_compiled
def _pop(a, b, size):
    """Drop the smallest pair of the heap; return the new size."""
    size -= 1
    a[0], b[0] = a[size], b[size]
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        if child + 1 < size and _less(a, b, child + 1, child):
            child += 1
        if not _less(a, b, child, pos):
            break
        a[pos], a[child] = a[child], a[pos]
        b[pos], b[child] = b[child], b[pos]
        pos = child
    return size


@_compiled
def admit(ready, need, dur, capacity):
    """Admission times of one decode instance's requests (``decode._admit``, rows in
    arrival order): first come first served, each when its ``need`` tokens fit in
    ``capacity`` beside the requests still decoding (a heap of (departure, tokens))."""
    n = len(ready)
    out = np.empty(n)
    dep, tok = np.empty(n), np.empty(n)
    size, free, t = 0, capacity, 0.0
    for i in range(n):
        if ready[i] > t:
            t = ready[i]
        while size > 0 and dep[0] <= t:
            free += tok[0]
            size = _pop(dep, tok, size)
        while free < need[i] and size > 0:
            d, x = dep[0], tok[0]
            size = _pop(dep, tok, size)
            t, free = max(t, d), free + x
        out[i] = t
        free -= need[i]
        size = _push(dep, tok, size, t + dur[i], need[i])
    return out


# ---- the decode pool's time grids (decode.Bins) --------------------------------------------


@_compiled
def bin_index(start, end, nb, w):
    """Each request's (first bin, the bin after its last, last bin, bins) as flat indices
    into a (columns, nb + 1) layout (``decode.Bins``); ``start``/``end`` (rows, columns)."""
    rows, cols = start.shape
    first = np.empty(rows * cols, dtype=np.int64)
    stop, last, count = np.empty_like(first), np.empty_like(first), np.empty_like(first)
    for r in range(rows):
        for c in range(cols):
            i, base = r * cols + c, c * (nb + 1)
            sb = min(np.int64(start[r, c] / w), nb - 1)
            lb = np.int64(end[r, c] / w)
            eb = min(lb, nb - 1)
            first[i], stop[i], last[i] = sb + base, min(lb + 1, nb) + base, eb + base
            count[i] = eb - sb + 1
    return first, stop, last, count


@_compiled
def grid(first, stop, valid, values, cols, nb):
    """Per column and bin (cols, nb + 1), the sum of ``values`` (flat, or one number when
    of length 1) of the valid requests running in it: the two counts of starts and stops,
    their difference and its running sum along each column, as ``decode.Bins.grid``."""
    size = cols * (nb + 1)
    up, down = np.zeros(size), np.zeros(size)
    one = len(values) == 1
    for i in range(len(first)):
        v = (values[0] if one else values[i]) if valid[i] else 0.0
        up[first[i]] += v
        down[stop[i]] += v
    out = np.empty((cols, nb + 1))
    for c in range(cols):
        acc = 0.0
        for b in range(nb + 1):
            acc += up[c * (nb + 1) + b] - down[c * (nb + 1) + b]
            out[c, b] = acc
    return out


@_compiled
def mean_over(g, first, last, count, nb):
    """(value at each request's first bin, mean over its bins) of a :func:`grid`, flat."""
    cols = g.shape[0]
    prefix = np.empty(cols * (nb + 1))
    for c in range(cols):
        acc = 0.0
        prefix[c * (nb + 1)] = 0.0
        for b in range(nb):
            acc += g[c, b]
            prefix[c * (nb + 1) + b + 1] = acc
    flat = g.ravel()
    at, mean = np.empty(len(first)), np.empty(len(first))
    for i in range(len(first)):
        at[i] = flat[first[i]]
        mean[i] = (prefix[last[i] + 1] - prefix[first[i]]) / count[i]
    return at, mean
