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
from functools import partial

import numpy as np
from numba import njit
from numba.core.errors import NumbaWarning

from kvmodel.replay import parallel


def _compiled(fn):
    """``njit`` without the GIL, cached on disk when some cache directory can be written."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaWarning)
            return njit(cache=True, nogil=True)(fn)
    except (RuntimeError, NumbaWarning):  # no writable cache location: compile per process
        return njit(cache=False, nogil=True)(fn)


def _inlined(fn):
    """:func:`_compiled`, inlined into its callers by numba (an array passed to a called
    function costs a reference count per call: ~7× the step table's read)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", NumbaWarning)
            return njit(cache=True, nogil=True, inline="always")(fn)
    except (RuntimeError, NumbaWarning):
        return njit(cache=False, nogil=True, inline="always")(fn)


# ---- a binary min-heap on arrays (keys compared as (a, b) pairs when b is given) ----------


@_inlined
def _take_first_free(free, who, instances, arrival, work):
    """One request through the heap of (free moment, instance) pairs (compared as pairs):
    it takes the root, the instance free longest (ties: the lowest), from its arrival or
    that instance's free moment, whichever is later; the root then sifts down.  Returns
    (start, instance)."""
    f, i = free[0], who[0]
    t = f if f > arrival else arrival
    start = t
    t += work
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= instances:
            break
        other = child + 1
        if other < instances and (free[other] < free[child]
                                  or (free[other] == free[child] and who[other] < who[child])):
            child = other
        if t < free[child] or (t == free[child] and i < who[child]):
            break
        free[pos], who[pos] = free[child], who[child]
        pos = child
    free[pos], who[pos] = t, i
    return start, i


@_compiled
def first_free_into(arrival, work, instances, start, inst):
    """The prefill pool's one queue (``fifo.first_free``): request m, in arrival order, goes
    to the instance that has been free longest (ties: the lowest), starting when it arrives
    or when that instance frees, whichever is later; fills ``start``/``inst``.

    A binary min-heap of (free moment, instance) pairs, compared as pairs: each request
    replaces the root and sifts it down (~50 ns a request at 162 instances)."""
    free = np.zeros(instances)  # the heap: free moments, and their instances beside
    who = np.arange(instances)
    for m in range(len(arrival)):
        start[m], inst[m] = _take_first_free(free, who, instances, arrival[m], work[m])


@_compiled
def prefill_side_into(arrival, length, pre, work, exposed, whole, instances, start, inst, end,
                      ready, busy):  # fmt: skip
    """The prefill pool and each KV's readiness for the link, per request in arrival order,
    from per-length tables (request m's length index ``length[m]``): its start and instance
    (:func:`first_free_into`), the end of its prefill (start + prefill), when its transfer
    could start on a free link (end + exposed − whole: on a free link the KV lands at end +
    exposed) and how long it holds the NICs (whole), without the per-request tables."""
    free = np.zeros(instances)
    who = np.arange(instances)
    for m in range(len(arrival)):
        q = length[m]
        start[m], inst[m] = _take_first_free(free, who, instances, arrival[m], work[q])
        end[m] = start[m] + pre[q]
        ready[m] = end[m] + exposed[q] - whole[q]
        busy[m] = whole[q]


@_compiled
def _push(a, b, size, x, y):
    """Push (x, y) on the heap of pairs ``a``/``b`` (compared as pairs) holding ``size``
    items; return the new size."""
    pos = size
    while pos > 0:
        parent = (pos - 1) // 2
        if a[parent] < x or (a[parent] == x and b[parent] <= y):
            break
        a[pos], b[pos] = a[parent], b[parent]
        pos = parent
    a[pos], b[pos] = x, y
    return size + 1


@_inlined
def _sift_down(a, b, size, x, y):
    """Put (x, y) at the root of the heap of pairs ``a``/``b`` holding ``size`` items (the
    root's old pair is dropped) and sift it down."""
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= size:
            break
        other = child + 1
        if other < size and (a[other] < a[child] or (a[other] == a[child] and b[other] < b[child])):
            child = other
        if x < a[child] or (x == a[child] and y <= b[child]):
            break
        a[pos], b[pos] = a[child], b[child]
        pos = child
    a[pos], b[pos] = x, y


@_compiled
def admit(ready, need, dur, capacity):
    """Admission times of one decode instance's requests (``decode._admit``, rows in
    arrival order): first come first served, each when its ``need`` tokens fit in
    ``capacity`` beside the requests still decoding (a heap of (departure, tokens)).

    Departures are released lazily, in their order, only while the free memory falls short
    (one that left before the current time never moves it, so releasing it later changes
    nothing), and the request whose admission the last release allows takes the root's place
    (one sift instead of a pop and a push): ~20 % less time than releasing every departure
    as time passes, the same admission times."""
    n = len(ready)
    out = np.empty(n)
    dep, tok = np.empty(n), np.empty(n)
    size, free, t = 0, capacity, 0.0
    for i in range(n):
        if ready[i] > t:
            t = ready[i]
        placed = False
        while free < need[i] and size > 0:
            if dep[0] > t:
                t = dep[0]  # wait for the next departure
            free += tok[0]
            if free >= need[i]:  # enough now: the request takes the root's place
                free -= need[i]
                _sift_down(dep, tok, size, t + dur[i], need[i])
                placed = True
                break
            size -= 1
            _sift_down(dep, tok, size, dep[size], tok[size])
        out[i] = t
        if not placed:
            free -= need[i]
            size = _push(dep, tok, size, t + dur[i], need[i])
    return out


# ---- the decode pool's time grids ---------------------------------------------------------
# Arrays are (instances, rows): an instance's requests in a row, in time order.  A request
# runs from bin int(start / w) (at most the last) through int((start + dur) / w); an
# instance's bins are
# filled in its requests' order, instances one after another (as numpy's ``bincount`` did on
# them: the same sums in the same order).


def durations(valid, first, tpot, output):
    """Each request's stay in decode [s]: its first step, then a mean step per further
    output token (0 for the padding past the last request).  (Outputs of a million values
    are allocated by numpy here and filled by the compiled code: numpy asks the kernel for
    huge pages, numba does not, and its 8 MB arrays cost ~2× more to fill the first time.)"""
    return durations_into(valid, first, tpot, output, np.empty(first.shape))


@_compiled
def durations_into(valid, first, tpot, output, out):
    """:func:`durations` into ``out`` (any array of their shape: every cell is written)."""
    for c in range(first.shape[0]):
        for r in range(first.shape[1]):
            if valid[c, r]:
                out[c, r] = first[c, r] + (output[c, r] - 1) * tpot[c, r]
            else:
                out[c, r] = 0.0
    return out


@_compiled
def durations_end_into(valid, first, tpot, output, ready, out):
    """:func:`durations_into`, and the latest ``ready + stay`` (:func:`latest_end` of them,
    padding included) in the same pass."""
    top = -np.inf
    for c in range(first.shape[0]):
        for r in range(first.shape[1]):
            if valid[c, r]:
                out[c, r] = first[c, r] + (output[c, r] - 1) * tpot[c, r]
            else:
                out[c, r] = 0.0
            top = max(top, ready[c, r] + out[c, r])
    return top


@_compiled
def mean_change(new, old, valid):
    """The mean of ``|new − old| ÷ old`` over the valid cells (a fixed-point round's move;
    0 when no cell is valid or ``old`` is 0 there)."""
    total, count = change_sums(new, old, valid)
    return total / count if count else 0.0


@_compiled
def change_sums(new, old, valid):
    """(the sum of ``|new − old| ÷ old``, how many cells) over the valid cells where ``old``
    is not 0: :func:`mean_change`'s parts, added across a pool's blocks
    (``kvmodel.replay.parallel``)."""
    total, count = 0.0, 0
    for c in range(new.shape[0]):
        for r in range(new.shape[1]):
            if valid[c, r] and old[c, r] > 0:
                total += abs(new[c, r] - old[c, r]) / old[c, r]
                count += 1
    return total, count


@_compiled
def latest_end(start, dur):
    """The latest ``start + dur`` [s] (padding included)."""
    top = -np.inf
    for c in range(start.shape[0]):
        for r in range(start.shape[1]):
            top = max(top, start[c, r] + dur[c, r])
    return top


class GridRoom:
    """Room for the decode pool's grids, reused by every round of one replay: a grid is a
    few MB, and each fresh one costs its page faults again (numba's arrays get no huge
    pages), more than filling it.  ``take(k, cells)``: ``k`` flat views of ``cells`` values
    each (the kernels zero what they use)."""

    def __init__(self):
        self.buf = np.empty(0)

    def take(self, k: int, cells: int) -> list:
        if self.buf.size < k * cells:
            self.buf = np.empty(max(k * cells, int(self.buf.size * 1.25)))
        return [self.buf[i * cells : (i + 1) * cells] for i in range(k)]


def _room(room, k: int, cells: int) -> list:
    return (room or GridRoom()).take(k, cells)


@_compiled
def _counts(start, dur, valid, values, nb, w, up, down):
    """Per instance and bin (flat, instances × (nb + 1), into ``up`` and ``down``), the
    ``values`` starting in it and those whose last bin was the one before."""
    cols, rows = start.shape
    width = nb + 1
    up[:] = 0.0
    down[:] = 0.0
    for c in range(cols):
        for r in range(rows):
            if valid[c, r]:
                up[c * width + min(np.int64(start[c, r] / w), nb - 1)] += values[c, r]
                end = start[c, r] + dur[c, r]
                down[c * width + min(np.int64(end / w) + 1, nb)] += values[c, r]


def column_grid(start, dur, valid, values, nb, w, room=None, out=None):
    """Per instance and bin (instances, nb + 1; the last bin empty), the sum of ``values``
    of the valid requests running in it: the running sum of starts less stops (``room``: a
    :class:`GridRoom` to work in; ``out``: an array of that shape to fill)."""
    up, down = _room(room, 2, start.shape[0] * (nb + 1))
    out = np.empty((start.shape[0], nb + 1)) if out is None else out
    return _column_grid_into(start, dur, valid, values, nb, w, up, down, out)


@_compiled
def _column_grid_into(start, dur, valid, values, nb, w, up, down, out):
    """:func:`column_grid` into ``out``."""
    _counts(start, dur, valid, values, nb, w, up, down)
    cols, width = start.shape[0], nb + 1
    for c in range(cols):
        acc = 0.0
        for b in range(width):
            acc += up[c * width + b] - down[c * width + b]
            out[c, b] = acc
    return out


def column_peak(start, dur, valid, values, nb, w, room=None):
    """Per instance, the largest of :func:`column_grid`'s first ``nb`` bins."""
    up, down = _room(room, 2, start.shape[0] * (nb + 1))
    return _column_peak(start, dur, valid, values, nb, w, up, down)


@_compiled
def _column_peak(start, dur, valid, values, nb, w, up, down):
    """:func:`column_peak` in ``up`` and ``down``."""
    _counts(start, dur, valid, values, nb, w, up, down)
    cols, width = start.shape[0], nb + 1
    out = np.full(cols, -np.inf)
    for c in range(cols):
        acc = 0.0
        for b in range(nb):
            acc += up[c * width + b] - down[c * width + b]
            out[c] = max(out[c], acc)
    return out


@_inlined
def _row_grids(start, dur, valid, held, nb, per, c, up_b, down_b, up_t, down_t):
    """Instance ``c``'s grids of :func:`round_means` (its cells of the flat arrays, instances
    × (nb + 1)): running requests and held tokens per bin, and each one's running sum along
    the instance (``S[b]`` sums bins < b)."""
    width = nb + 1
    base = c * width
    for b in range(width):
        up_b[base + b] = down_b[base + b] = up_t[base + b] = down_t[base + b] = 0.0
    for r in range(start.shape[1]):  # _counts of ones and of held, in one pass
        if valid[c, r]:
            i = base + min(np.int64(start[c, r] * per), nb - 1)
            j = base + min(np.int64((start[c, r] + dur[c, r]) * per) + 1, nb)
            up_b[i] += 1.0
            down_b[j] += 1.0
            up_t[i] += held[c, r]
            down_t[j] += held[c, r]
    acc = run = acc_t = run_t = 0.0
    for b in range(width):
        i = base + b
        acc += up_b[i] - down_b[i]
        up_b[i], down_b[i] = acc, run
        run += acc
        acc_t += up_t[i] - down_t[i]
        up_t[i], down_t[i] = acc_t, run_t
        run_t += acc_t


@_inlined
def _request_means(gb, pb, gt, pt, s, e, nb, per, c):
    """One request's (context, batch) at its first bin and over its stay, on instance ``c``
    (from ``start`` ``s`` to ``e`` = start + stay; ``per`` = 1 ÷ the bin width):
    :func:`round_means`' arithmetic."""
    width = nb + 1
    sb = min(np.int64(s * per), nb - 1)
    eb = min(np.int64(e * per), nb - 1)
    i, j, k = c * width + sb, c * width + eb + 1, eb - sb + 1
    b = max(gb[i], 1.0)
    c0, b0 = max(np.ceil(gt[i] / b), 1.0), np.ceil(b)
    b = max((pb[j] - pb[i]) / k, 1.0)
    return c0, b0, max(np.ceil((pt[j] - pt[i]) / (k * b)), 1.0), np.ceil(b)


def round_means(start, dur, valid, held, nb, w, room=None, out=None):
    """One fixed-point round's step inputs (``decode.run_decode``), per request: (context,
    batch) at its first bin and over its stay (the mean from the grid's running sum,
    ``(S[last + 1] − S[first]) / bins``), from its instance's running requests and held
    tokens per bin; the batch at least 1 and whole, the context whole and at least 1
    (``room``: a :class:`GridRoom` to work in; ``out``: four arrays to fill, reused by the
    rounds: a fresh 8 MB array costs its page faults again)."""
    c0, b0, cm, bm = out if out is not None else (np.empty(start.shape) for _ in range(4))
    grids = _room(room, 4, start.shape[0] * (nb + 1))
    return _round_means_into(start, dur, valid, held, nb, w, c0, b0, cm, bm, *grids)


@_compiled
def _round_means_into(start, dur, valid, held, nb, w, c0, b0, cm, bm, g0, g1, g2, g3):
    """:func:`round_means` into ``c0``, ``b0``, ``cm``, ``bm``: one instance at a time, so its
    grids (~0.7 MB for 20,000 bins) stay in cache while its requests read them (all grids
    first, then all reads: ~20 % slower on the bench trace; numba's parallel loops over
    instances gained ~15 % more on 2 cores, for twice the CPU: not taken)."""
    per = 1.0 / w
    for c in range(start.shape[0]):
        _row_grids(start, dur, valid, held, nb, per, c, g0, g1, g2, g3)
        for r in range(start.shape[1]):
            c0[c, r], b0[c, r], cm[c, r], bm[c, r] = _request_means(
                g0, g1, g2, g3, start[c, r], start[c, r] + dur[c, r], nb, per, c
            )
    return c0, b0, cm, bm


def step_lookup(table, batches, big, h, top, contexts, batch, whole_batches, last_context,
                out=None):  # fmt: skip
    """``sim.StepTable``'s read: the row of the whole ``batch`` (≤ ``whole_batches``: row
    batch − 1; above, when ``big``: the first row at or above it), the ``contexts`` clipped
    to [0, ``top``] in steps of ``h`` tokens, linear between two columns (into ``out`` when
    given)."""
    dest = np.empty(len(batch)) if out is None else out
    return _step_lookup_into(table, batches, big, h, top, contexts, batch, whole_batches,
                             last_context, dest)  # fmt: skip


@_compiled
def _step_lookup_into(table, batches, big, h, top, contexts, batch, whole_batches, last_context,
                      out):  # fmt: skip
    """:func:`step_lookup` into ``out``."""
    n_cols = table.shape[1]
    flat = table.ravel()
    for i in range(len(batch)):
        b = batch[i]
        bi = np.int64(min(b, whole_batches)) - 1
        if big and b > whole_batches:
            lo, hi = 0, len(batches)  # the first row at or above b (searchsorted, left)
            while lo < hi:
                mid = (lo + hi) // 2
                if batches[mid] < b:
                    lo = mid + 1
                else:
                    hi = mid
            bi = min(lo, len(batches) - 1)
        x = min(max(contexts[i], 0.0), top) / h
        j = min(np.int64(x), last_context)
        f = x - j
        k = bi * n_cols + j
        out[i] = flat[k] * (1 - f) + f * flat[k + 1]
    return out


# ---- requests to instances' rows and back ---------------------------------------------------


def instance_rows(order, pad, ready, need, held, output, capacity):
    """The decode pool's (instances, rows) tables, each row in ``order`` (indices into the
    row: round robin, row c holds requests c, c + instances, …): KV arrival (``pad`` past
    the last request), tokens reserved (at most ``capacity``), tokens held, output tokens
    (0 past the last), and whether a cell holds a request.  ``ready`` comes as the rows
    already (:func:`rows_of`, or :func:`receive_in_turn`'s); the others in request order."""
    shape = order.shape
    n = len(need)
    r, nd, hd, out = (np.empty(shape) for _ in range(4))
    valid = np.empty(shape, dtype=np.bool_)
    by_row = [ready] + [rows_of(x, shape[0], 0.0) for x in (need, held, output)]
    _instance_rows_into(order, n, pad, *by_row, capacity, r, nd, hd, out, valid)
    return r, nd, hd, out, valid


@_compiled
def _instance_rows_into(order, n, pad, ready, need, held, output, capacity, r, nd, hd, out,
                        valid):  # fmt: skip
    """:func:`instance_rows` into its five tables, from the inputs' rows."""
    cols, rows = order.shape
    for c in range(cols):
        for j in range(rows):
            q = order[c, j]
            if q * cols + c < n:
                r[c, j], hd[c, j], out[c, j] = ready[c, q], held[c, q], output[c, q]
                nd[c, j] = min(need[c, q], capacity)
                valid[c, j] = True
            else:
                r[c, j], nd[c, j], hd[c, j], out[c, j] = pad, 0.0, 0.0, 0.0
                valid[c, j] = False


def request_order(order, n, start, first, tpot, dur):
    """:func:`instance_rows` undone for the decode results: the ``n`` requests' (start,
    first step, mean step, departure = start + stay) in request order (the rows' blocks,
    ``parallel.blocks``, on threads of their own: each writes other requests)."""
    out = tuple(np.empty(n) for _ in range(4))
    cols = order.shape[0]
    parallel.run([
        partial(_unorder_rows, order[b], n, start[b], first[b], tpot[b], dur[b], *out, b.start,
                cols)
        for b in parallel.blocks(*order.shape)
    ])  # fmt: skip
    return out


@_compiled
def _unorder_rows(order, n, start, first, tpot, dur, s, f, t, d, c0, cols):
    """Row ``c``'s slot ``j`` holds request ``order[c, j] · cols + c0 + c`` (round robin,
    then the row's order; ``c0``: the first of these rows among the ``cols`` instances):
    each value straight to it, the pads (past ``n``) left out, in one pass (row tables and
    :func:`_from_rows` after them moved 32 MB more on a million requests; the same values)."""
    here, rows = order.shape
    for j in range(rows):  # slot by slot: a row's order is nearly the identity, so the
        for c in range(here):  # writes of one slot land close together
            k = order[c, j] * cols + c0 + c
            if k < n:
                s[k], f[k], t[k] = start[c, j], first[c, j], tpot[c, j]
                d[k] = start[c, j] + dur[c, j]


# ---- first come first served per group (an instance's NICs) --------------------------------


@_compiled
def merge_order(x):
    """``np.argsort(x, kind="stable")`` by bottom-up merging (small code: numba's own
    argsort compiles several times slower)."""
    n = len(x)
    order, spare = np.arange(n), np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid, hi = min(lo + width, n), min(lo + 2 * width, n)
            i, j = lo, mid
            for k in range(lo, hi):  # the left run wins ties: stable
                if j >= hi or (i < mid and x[order[i]] <= x[order[j]]):
                    spare[k] = order[i]
                    i += 1
                else:
                    spare[k] = order[j]
                    j += 1
        order, spare = spare, order
        width *= 2
    return order


@_compiled
def stable_order(x):
    """``np.argsort(x, kind="stable")``: by insertion while that is cheap (an instance's
    transfers are nearly in order already: ~0-5 moves per item on the bench trace), else by
    merging (any stable sort gives the same order)."""
    n = len(x)
    keys, order = x.copy(), np.arange(n)
    moves = 0
    for i in range(1, n):
        v, o, j = keys[i], order[i], i
        while j > 0 and keys[j - 1] > v:
            keys[j], order[j] = keys[j - 1], order[j - 1]
            j -= 1
        keys[j], order[j] = v, o
        moves += i - j
        if moves > 16 * n:
            return merge_order(x)
    return order


@_compiled
def _served_in_request_order(ready, service, group, groups, out):
    """:func:`served_by_group` when each group's jobs are ready in request order (a prefill
    instance's transfers mostly are): one pass in request order, each group's sums carried
    along (the same sums in the same order).  Returns False, ``out`` unfinished, at the first
    job ready before the one its group took last."""
    total, top = np.zeros(groups), np.full(groups, -np.inf)
    last = np.full(groups, -np.inf)
    for i in range(len(ready)):
        g = group[i]
        if ready[i] < last[g]:
            return False
        last[g] = ready[i]
        total[g] += service[i]  # S_k
        top[g] = max(top[g], ready[i] - (total[g] - service[i]))
        out[i] = (total[g] + top[g]) - service[i]
    return True


def served_by_group(ready, service, group, groups):
    """Start of service [s] of each job (request order) at the single server of its
    ``group`` (0 … groups − 1), each server taking its jobs in ``ready`` order (ties: request
    order): ``fifo.served``'s ``S_k + max_{j ≤ k}(a_j − S_{j−1}) − s_k`` along each group,
    the same sums in the same order, without its matrices."""
    n = len(ready)
    return _served_by_group_into(ready, service, group, groups, np.empty(n),
                                 np.empty(n, dtype=np.int64))  # fmt: skip


@_compiled
def _served_by_group_into(ready, service, group, groups, out, members):
    """:func:`served_by_group` into ``out`` (``members``: room for the request numbers)."""
    n = len(ready)
    if _served_in_request_order(ready, service, group, groups, out):
        return out
    bounds = np.zeros(groups + 1, dtype=np.int64)
    for i in range(n):
        bounds[group[i] + 1] += 1
    for g in range(groups):
        bounds[g + 1] += bounds[g]
    fill = bounds[:-1].copy()
    # members: request numbers, group by group, in order
    for i in range(n):
        members[fill[group[i]]] = i
        fill[group[i]] += 1
    for g in range(groups):
        seg = members[bounds[g] : bounds[g + 1]]
        order = stable_order(ready[seg])
        total, top = 0.0, -np.inf
        for j in range(len(seg)):
            i = seg[order[j]]
            total += service[i]  # S_k
            top = max(top, ready[i] - (total - service[i]))
            out[i] = (total + top) - service[i]
    return out


# ---- the summary ---------------------------------------------------------------------------


@_compiled
def link_busy(s, d, inst, minutes, minute_s):
    """Per instance and minute (flat, instances × (minutes + 1)), the NICs' busy time [s]:
    each transfer's (``d``, from ``s``) in its minute (``floor_index``, at most the last)
    up to the minute's end, the rest in the next (``result._link_peak``: two counts, then
    their sum)."""
    top = 0
    for i in range(len(inst)):
        top = max(top, inst[i])
    cells = (top + 1) * (minutes + 1)
    here_sum, next_sum = np.zeros(cells), np.zeros(cells)
    for i in range(len(s)):
        m = min(_floor_one(s[i], minute_s), minutes - 1)
        here = min(d[i], (m + 1) * minute_s - s[i])
        cell = inst[i] * (minutes + 1) + m
        here_sum[cell] += here
        next_sum[cell + 1] += d[i] - here
    for c in range(cells):
        here_sum[c] += next_sum[c]
    return here_sum


@_inlined
def _floor_one(x, width):
    """``x // width`` as a whole number (:func:`floor_index` of one value)."""
    t = x / width
    q = np.floor(t)
    return np.int64(q) if t != q else np.int64(x // width)


@_compiled
def floor_index(x, width):
    """``(x // width).astype(np.int64)``, faster: ``floor(x / width)`` where ``x / width`` is
    not a whole number (then no whole number lies between it and the exact quotient, whose
    floor ``//`` returns), ``//`` itself (numpy's and CPython's divmod rule) where it is."""
    out = np.empty(len(x), dtype=np.int64)
    for i in range(len(x)):
        out[i] = _floor_one(x[i], width)
    return out


@_compiled
def floor_counts(x, width):
    """``np.bincount(floor_index(x, width))`` of values ``x`` ≥ 0, without the indices."""
    top = x[0]  # the floor rises with x (a division rounded correctly is monotone)
    for i in range(len(x)):
        top = max(top, x[i])
    out = np.zeros(_floor_one(top, width) + 1, dtype=np.int64)
    for i in range(len(x)):
        out[_floor_one(x[i], width)] += 1
    return out


def instance_order(ready, instances, rows, pad):
    """Per decode instance (round robin: row c holds requests c, c + instances, …; ``pad``
    past the last), its requests' order by ``ready``, stable: ``np.argsort(…, axis=1,
    kind="stable")`` of those rows (an instance's KV arrivals are nearly in order, so mostly
    by insertion)."""
    m = np.empty((instances, rows))
    _to_rows(np.ascontiguousarray(ready, dtype=float), float(pad), m)
    return _order_rows(m)


@_compiled
def _order_rows(m):
    """:func:`instance_order` of the rows ``m``."""
    out = np.empty(m.shape, dtype=np.int64)
    for c in range(m.shape[0]):
        out[c] = stable_order(m[c])
    return out


@_compiled
def _sorted_by_pair(keys, order):
    """Reorder ``order`` (a permutation of 0 … len − 1, nearly sorted already) in place so
    that ``keys[order]`` rises, ties by the index itself: by insertion, each item moving
    only as far as it is out of place (the exact ``np.argsort(keys, kind="stable")``)."""
    for i in range(1, len(order)):
        o = order[i]
        v = keys[o]
        j = i
        while j > 0 and (keys[order[j - 1]] > v or (keys[order[j - 1]] == v and order[j - 1] > o)):
            order[j] = order[j - 1]
            j -= 1
        order[j] = o


@_compiled
def _to_rows(x, pad, out):
    """``out[c, j] = x[j · instances + c]`` (``pad`` past the end of ``x``): request order to
    the instances' rows (round robin), reading ``x`` once in order and writing one stream per
    instance (the rows' strided reads would fetch every cache line once per instance)."""
    instances, rows = out.shape
    n = len(x)
    for j in range(rows):
        base = j * instances
        for c in range(instances):
            out[c, j] = x[base + c] if base + c < n else pad


@_compiled
def _from_rows(m, n, out):
    """:func:`_to_rows` undone: ``out[j · instances + c] = m[c, j]`` for the first ``n``."""
    instances, rows = m.shape
    for j in range(rows):
        base = j * instances
        for c in range(instances):
            if base + c < n:
                out[base + c] = m[c, j]


def rows_of(x, instances, pad):
    """(instances, rows) of ``x`` in request order, round robin (:func:`_to_rows`)."""
    n = len(x)
    out = np.empty((instances, -(-n // instances)))
    _to_rows(np.ascontiguousarray(x, dtype=float), float(pad), out)
    return out


def receive_in_turn(link_start, busy, instances):
    """The decode side's NICs and rows, one instance at a time (request k decodes on instance
    k mod ``instances``): (start on its NICs [s], KV arrival [s] = that start + ``busy``,
    both in request order; the KV arrivals as the instances' rows; and each row's order of
    its requests by KV arrival, ties by request order, as ``np.argsort(…, kind="stable")``).

    An instance's NICs take one transfer at a time in the order they leave (``link_start``;
    ties: request order), ``fifo.served``'s sums along them (as :func:`served_by_group`:
    the same sums in the same order); the KV arrivals are then nearly in that order, so the
    rows' order starts from it and is finished by insertion.  The rows' blocks
    (``parallel.blocks``) run on threads of their own."""
    n = len(link_start)
    leave, stay = rows_of(link_start, instances, 0.0), rows_of(busy, instances, 0.0)
    rec, kv = np.empty(leave.shape), np.empty(leave.shape)
    order = np.empty(leave.shape, dtype=np.int64)
    parallel.run([
        partial(_receive_rows, leave[b], stay[b], n, rec[b], kv[b], order[b], b.start, instances)
        for b in parallel.blocks(*leave.shape)
    ])  # fmt: skip
    receive, arrival = np.empty(n), np.empty(n)
    _from_rows(rec, n, receive)
    _from_rows(kv, n, arrival)
    return receive, arrival, kv, order


@_compiled
def _receive_rows(leave, stay, n, rec, kv, order, c0, instances):
    """:func:`receive_in_turn` on the rows (some instances' rows, the first of them instance
    ``c0`` of ``instances``): into ``rec``, ``kv``, ``order``."""
    here, rows = leave.shape
    for c in range(here):
        m = rows if (rows - 1) * instances + c0 + c < n else rows - 1  # requests on it
        by_leave = stable_order(leave[c, :m])
        total, top = 0.0, -np.inf
        for q in range(m):
            j = by_leave[q]
            total += stay[c, j]  # S_k
            top = max(top, leave[c, j] - (total - stay[c, j]))
            rec[c, j] = (total + top) - stay[c, j]
            kv[c, j] = rec[c, j] + stay[c, j]
        _sorted_by_pair(kv[c, :m], by_leave)
        order[c, :m] = by_leave
        for j in range(m, rows):  # the pads, after every request
            order[c, j] = j
            rec[c, j] = kv[c, j] = 0.0


# ---- the summary's order statistics ---------------------------------------------------------


@_compiled
def gap_into(later, earlier, out, k):
    """``out[:] = later − earlier``, and whether its ``k``-th smallest (0-based) is known
    without a partition: (True, the least value) when more than ``k`` values equal the least
    (a request that did not wait: most do), else (False, 0).  NaN counts as no value (a
    partition puts it last)."""
    known, least, _, _, _ = gap_range_into(later, earlier, out, k)
    return known, least


@_compiled
def gap_range_into(later, earlier, out, k):
    """:func:`gap_into`, and what :func:`order_stats_in` needs of ``out`` from the same pass:
    (known, least, lowest key, highest key, whether a NaN is present)."""
    least, most, ties, nan = np.inf, -np.inf, 0, False
    for i in range(len(out)):
        v = later[i] - earlier[i]
        out[i] = v
        if v < least:
            least, ties = v, 1
        elif v == least:
            ties += 1
        if v > most:
            most = v
        if v != v:
            nan = True
    if ties > k:
        return True, least, np.uint64(0), np.uint64(0), nan
    # keys of the extremes (a zero as −0.0 below and +0.0 above: both may be present)
    ends = np.array([-0.0 if least == 0 else least, 0.0 if most == 0 else most])
    bits = ends.view(np.uint64)
    return False, 0.0, _order_key(bits[0]), _order_key(bits[1]), nan


_SIGN = np.uint64(0x8000000000000000)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_RADIX_BITS = 16  # a histogram of 65,536 buckets per level
_SMALL_SET = 64  # sorted directly


@_inlined
def _order_key(u):
    """A float64's bits (``u``, uint64) as a whole number in the float's order: negatives'
    bits flipped, positives' sign bit set (−0.0 sorts just below 0.0; no NaN here)."""
    if u & _SIGN:
        return u ^ _ALL
    return u | _SIGN


@_compiled
def _key_range(bits):
    """(least key, greatest key, whether a NaN is present) of float64 ``bits``."""
    lo, hi, nan = _ALL, np.uint64(0), False
    for i in range(len(bits)):
        u = bits[i]
        if (u & ~_SIGN) > np.uint64(0x7FF0000000000000):
            nan = True
        k = _order_key(u)
        if k < lo:
            lo = k
        if k > hi:
            hi = k
    return lo, hi, nan


@_inlined
def _bucket_shift(lo, hi):
    """The shift that puts keys lo … hi into at most 2^_RADIX_BITS buckets."""
    span = hi - lo
    width = 0
    while span >> np.uint64(width) >= np.uint64(1 << _RADIX_BITS):
        width += 1
    return np.uint64(width)


@_compiled
def _level(bits, ks, lo, hi):
    """One radix level for the sorted ranks ``ks`` among the float ``bits`` whose keys lie in
    [lo, hi]: a histogram of the keys' leading bits, then one pass gathering the members of
    every bucket a rank falls in.  Returns, per rank, its bucket's members (a slot of
    ``pool``, from ``first`` with ``size``), its rank among them and the bucket's key range."""
    shift = _bucket_shift(lo, hi)
    counts = np.zeros((1 << _RADIX_BITS) + 1, dtype=np.int64)
    for i in range(len(bits)):
        key = _order_key(bits[i])
        if key >= lo and key <= hi:
            counts[(key - lo) >> shift] += 1
    m = len(ks)
    bucket, within = np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64)
    below, b = 0, 0
    for j in range(m):  # ks sorted: the buckets are found in one sweep
        while below + counts[b] <= ks[j]:
            below += counts[b]
            b += 1
        bucket[j], within[j] = b, ks[j] - below
    slot = np.full(len(counts), -1, dtype=np.int64)  # bucket -> its place in pool
    first = np.empty(m, dtype=np.int64)
    total = 0
    for j in range(m):
        if slot[bucket[j]] < 0:
            slot[bucket[j]] = total
            total += counts[bucket[j]]
        first[j] = slot[bucket[j]]
    pool = np.empty(total, dtype=np.uint64)
    fill = slot.copy()
    for i in range(len(bits)):
        key = _order_key(bits[i])
        if key >= lo and key <= hi:
            g = fill[(key - lo) >> shift]
            if g >= 0:
                pool[g] = bits[i]
                fill[(key - lo) >> shift] = g + 1
    size = np.empty(m, dtype=np.int64)
    ranges = np.empty((m, 2), dtype=np.uint64)
    for j in range(m):
        size[j] = counts[bucket[j]]
        ranges[j, 0] = lo + (np.uint64(bucket[j]) << shift)
        ranges[j, 1] = min(hi, ranges[j, 0] + ((np.uint64(1) << shift) - np.uint64(1)))
    return pool, first, size, within, ranges


@_compiled
def _select(bits, k, lo, hi):
    """The ``k``-th smallest (0-based) float (as bits) of ``bits`` whose keys lie in
    [lo, hi]: radix levels (:func:`_level`) until few candidates are left, then a sort
    (exact: order statistics of the keys are those of the floats)."""
    cur = bits
    ks = np.empty(1, dtype=np.int64)
    while True:
        if lo == hi:  # every candidate equal
            for i in range(len(cur)):
                if _order_key(cur[i]) == lo:
                    return cur[i]
        if len(cur) <= _SMALL_SET:
            keys = np.empty(len(cur), dtype=np.uint64)
            for i in range(len(cur)):
                keys[i] = _order_key(cur[i])
            keys.sort()
            want = keys[k]
            for i in range(len(cur)):
                if _order_key(cur[i]) == want:
                    return cur[i]
        ks[0] = k
        pool, first, size, within, ranges = _level(cur, ks, lo, hi)
        cur, k, lo, hi = pool, within[0], ranges[0, 0], ranges[0, 1]


@_compiled
def _order_stats(bits, ks, lo, hi, out):
    """``out[j]``: the ``ks[j]``-th smallest of ``bits`` (``ks`` sorted), the first radix
    level shared by every rank (three passes over the array in all, whatever the ranks)."""
    pool, first, size, within, ranges = _level(bits, ks, lo, hi)
    for j in range(len(ks)):
        part = pool[first[j] : first[j] + size[j]]
        out[j] = _select(part, within[j], ranges[j, 0], ranges[j, 1])


@_compiled
def order_stats(x, ks):
    """(whether exact, the ``ks``-th smallest values (0-based) of float64 ``x``): ``x`` is
    not reordered.  (False, _) when ``x`` holds a NaN: the caller partitions instead."""
    lo, hi, nan = _key_range(x.view(np.uint64))
    return _order_stats_in(x, ks, lo, hi, nan)


def order_stats_in(x, ks, lo, hi, nan):
    """:func:`order_stats` with the keys' range (every key of ``x`` within [lo, hi]) and
    whether a NaN is present already known (:func:`gap_range_into`).  The keys come back
    to Python as whole numbers: they go in again as uint64 (a key below 2**63 would be typed
    int64, and mixed with a uint64 it is a float)."""
    return _order_stats_in(x, ks, np.uint64(lo), np.uint64(hi), bool(nan))


@_compiled
def _order_stats_in(x, ks, lo, hi, nan):
    """:func:`order_stats_in` once its keys are uint64."""
    order = np.argsort(ks)
    sorted_ks = ks[order]
    found = np.zeros(len(ks), dtype=np.uint64)
    bits = x.view(np.uint64)
    if not nan and len(ks):
        _order_stats(bits, sorted_ks, lo, hi, found)
    out = np.zeros(len(ks), dtype=np.uint64)
    out[order] = found
    return not nan, out.view(np.float64)
