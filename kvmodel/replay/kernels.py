"""The replay's sequential loops, compiled by numba (issue 22 "Speed"; bench/README.md,
Session 8 on): the first-free heap of the prefill pool, each NIC's queue, the decode
instances step by step (admission, continuous batching, departures) and the summary's order
statistics (``tests/test_replay_kernels.py`` pins hand-worked cases).

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


# ---- the prefill pool: a binary min-heap of (free moment, instance) pairs ----------------


@_inlined
def _take_first_free(free, who, instances, arrival, work):
    """One request through the heap of (free moment, instance) pairs (compared as pairs):
    it takes the root, the instance free longest (ties: the lowest), from its arrival or
    that instance's free moment, whichever is later; the root then sifts down.  Returns
    (start, instance).  The heap's arrays hold ``instances`` pairs and, past them, at least
    ``instances`` + 1 pairs (inf, a huge instance) that are never taken, so the smaller child
    is picked by arithmetic, not a branch (:func:`_free_heap`; ~12 % faster at 162)."""
    f, i = free[0], who[0]
    t = f if f > arrival else arrival
    start = t
    t += work
    pos = 0
    while True:
        child = 2 * pos + 1
        if child >= instances:
            break
        fo, fc = free[child + 1], free[child]
        child += np.int64((fo < fc) | ((fo == fc) & (who[child + 1] < who[child])))
        fc = free[child]
        if t < fc or (t == fc and i < who[child]):
            break
        free[pos], who[pos] = fc, who[child]
        pos = child
    free[pos], who[pos] = t, i
    return start, i


@_inlined
def _free_heap(instances):
    """The prefill pool's heap at the start (:func:`_take_first_free`): every instance free
    at 0, then the never-taken padding."""
    free = np.full(2 * instances + 2, np.inf)
    who = np.full(2 * instances + 2, np.int64(1) << 62)
    free[:instances] = 0.0
    who[:instances] = np.arange(instances)
    return free, who


@_compiled
def first_free_into(arrival, work, instances, start, inst):
    """The prefill pool's one queue (``fifo.first_free``): request m, in arrival order, goes
    to the instance that has been free longest (ties: the lowest), starting when it arrives
    or when that instance frees, whichever is later; fills ``start``/``inst``.

    A binary min-heap of (free moment, instance) pairs, compared as pairs: each request
    replaces the root and sifts it down (~35 ns a request at 162 instances)."""
    free, who = _free_heap(instances)
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
    free, who = _free_heap(instances)
    for m in range(len(arrival)):
        q = length[m]
        start[m], inst[m] = _take_first_free(free, who, instances, arrival[m], work[q])
        end[m] = start[m] + pre[q]
        ready[m] = end[m] + exposed[q] - whole[q]
        busy[m] = whole[q]


# ---- the decode pool, step by step ----------------------------------------------------------
# Arrays are (instances, rows): an instance's requests in a row, in the order their KV
# arrives (the valid cells first, the padding after them).  ``decode.run_decode``'s module doc
# states the model; :func:`decode_steps_into` runs it.


@_inlined
def _table_row(batches, big, whole, b):
    """The step table's row of a whole batch ``b`` ≥ 1 (``sim.StepTable``): row b − 1 up to
    ``whole`` batches; above, when ``big``, the first row at or above it, at most the last."""
    bi = np.int64(min(b, whole)) - 1
    if big and b > whole:
        lo, hi = 0, len(batches)  # searchsorted, left
        while lo < hi:
            mid = (lo + hi) // 2
            if batches[mid] < b:
                lo = mid + 1
            else:
                hi = mid
        bi = min(lo, len(batches) - 1)
    return bi


@_inlined
def _table_at(flat, base, h, top, last, context):
    """The step [s] at ``context`` tokens on the table row starting at ``base`` (flat index):
    the context clipped to [0, ``top``] in columns ``h`` tokens apart, linear between two."""
    x = min(max(context, 0.0), top) / h
    j = min(np.int64(x), last)
    f = x - j
    k = base + j
    return flat[k] * (1 - f) + f * flat[k + 1]


@_inlined
def _steps_time(n, s0, d):
    """Time [s] of ``n`` steps whose lengths are s0, s0 + d, s0 + 2d, …"""
    return n * s0 + d * (n * (n - 1) / 2.0)


@_inlined
def _steps_to_reach(gap, s0, d, most):
    """The fewest steps (1 … ``most``) of lengths s0, s0 + d, … that last at least ``gap`` > 0
    seconds, or ``most`` + 1 when even ``most`` of them do not."""
    if _steps_time(most, s0, d) < gap:
        return most + 1
    if d > 0.0:  # the positive root of (d/2) n² + (s0 − d/2) n − gap = 0, then checked exactly
        a, bq = d / 2.0, s0 - d / 2.0
        n = np.int64(np.ceil((-bq + np.sqrt(bq * bq + 4.0 * a * gap)) / (2.0 * a)))
    else:
        n = np.int64(np.ceil(gap / s0))
    n = min(max(n, 1), most)
    while n > 1 and _steps_time(n - 1, s0, d) >= gap:
        n -= 1
    while _steps_time(n, s0, d) < gap:
        n += 1
    return n


@_inlined
def _advance(flat, base, h, top, last, x0, most, gap):
    """The steps of an unchanged batch from mean context ``x0`` on the table row at ``base``:
    ``most`` of them (to the next departure), or fewer, up to the first boundary at least
    ``gap`` seconds on (the next KV's arrival).  Walks the table's columns, each stretch
    summed in closed form (:func:`_stretch`).  Returns (steps, their time, the time of all but
    the last, the first step's length) [s]."""
    done, took, first_step = np.int64(0), 0.0, -1.0
    x = x0
    while True:
        s0, d, seg = _stretch(flat, base, h, top, last, x, most - done)
        if first_step < 0.0:
            first_step = s0
            if gap <= s0:  # the KV lands during the first step
                return np.int64(1), s0, 0.0, s0
        span = _steps_time(seg, s0, d)
        if took + span >= gap:  # it lands in this stretch
            need = _steps_to_reach(gap - took, s0, d, seg)
            return (done + need, took + _steps_time(need, s0, d),
                    took + _steps_time(need - 1, s0, d), first_step)  # fmt: skip
        if done + seg >= most:
            return most, took + span, took + _steps_time(seg - 1, s0, d), first_step
        done += seg
        took += span
        x += seg


@_inlined
def _lowest_bit(x):
    """The index of the lowest set bit of a non-zero uint64 (a power of two converts to a
    float and back exactly)."""
    return np.int64(np.log2(np.float64(x & (~x + np.uint64(1)))))


@_inlined
def _next_slot(bits, p):
    """The first set bit of the ring ``bits`` at or after bit ``p``, going round (one must be
    set)."""
    w = p >> 6
    x = bits[w] & (np.uint64(0xFFFFFFFFFFFFFFFF) << np.uint64(p & 63))
    while x == 0:
        w = w + 1 if w + 1 < len(bits) else 0
        x = bits[w]
    return w * 64 + _lowest_bit(x)


@_inlined
def _stretch(flat, base, h, top, last, x0, most):
    """(first step [s], its growth a step [s], steps ≤ ``most`` it holds for) at mean context
    ``x0`` on the table row at ``base``: linear up to the column's edge, flat past ``top``
    (:func:`_table_at`'s arithmetic for the first)."""
    x = min(max(x0, 0.0), top) / h
    col = min(np.int64(x), last)
    f = x - col
    s0 = flat[base + col] * (1 - f) + f * flat[base + col + 1]
    if x0 >= top:
        return s0, 0.0, most
    n = min(most, np.int64(np.floor((col + 1) * h - x0)) + 1)
    return s0, (flat[base + col + 1] - flat[base + col]) / h, n


@_inlined
def _decode_instance(c, m, ready, need, prompt, output, capacity, flat, n_cols, batches, big, h,
                     top, whole, last, start, first, tpot, dur, ring, slot, nxt, bits):  # fmt: skip
    """:func:`decode_steps_into` on instance ``c`` (its first ``m`` cells valid); returns
    (whether memory held a request back, its last departure [s])."""
    t, k, b, head, due = 0.0, np.int64(0), 0, 0, np.int64(1) << 62
    ctx, free, blocked, waited = 0.0, capacity, -np.inf, False
    while head < m or b > 0:
        if b == 0:  # idle: nothing held (no drift carried over), wait for the next KV
            ctx, free = 0.0, capacity
            t = max(t, ready[c, head])
        joined = head
        while head < m and ready[c, head] <= t:  # admission at this boundary
            if free < need[c, head]:
                blocked, waited = t, True
                break
            free -= need[c, head]
            start[c, head] = t if ready[c, head] <= blocked else ready[c, head]
            ctx += prompt[c, head]
            leaves = k + np.int64(output[c, head])  # on the ring at the count it leaves at
            i = leaves % ring
            nxt[head], slot[i] = slot[i], head
            bits[i >> 6] |= np.uint64(1) << np.uint64(i & 63)
            due = min(due, leaves)
            b += 1
            head += 1
        gap = np.inf  # to the next KV, unless memory holds it
        if head < m and ready[c, head] > blocked:
            gap = ready[c, head] - t
        n, took, before, s0 = _advance(flat, _table_row(batches, big, whole, b) * n_cols, h,
                                       top, last, ctx / b, due - k, gap)  # fmt: skip
        for j in range(joined, head):
            first[c, j] = (t + s0) - start[c, j]
            tpot[c, j] = s0  # a one-token request's only step
        if head < m and ready[c, head] <= blocked:  # memory holds the queue at every
            blocked = t + before  # boundary up to the last step's
        t += took
        k += n
        ctx += b * n
        if k == due:  # departures
            i = k % ring
            j, slot[i] = slot[i], -1
            bits[i >> 6] &= ~(np.uint64(1) << np.uint64(i & 63))
            while j >= 0:
                dur[c, j] = t - start[c, j]
                if output[c, j] > 1:
                    tpot[c, j] = (dur[c, j] - first[c, j]) / (output[c, j] - 1)
                free += need[c, j]
                ctx -= prompt[c, j] + output[c, j]
                b -= 1
                j = nxt[j]
            due = np.int64(1) << 62
            if b > 0:
                p = (k + 1) % ring
                due = k + 1 + (_next_slot(bits, p) - p) % ring
    return waited, t


@_compiled
def decode_steps_into(ready, need, prompt, output, valid, capacity, table, batches, big, h, top,
                      whole, last, start, first, tpot, dur):  # fmt: skip
    """The decode instances of these rows step by step (``decode.run_decode``), into
    ``start``, ``first`` (first token − start), ``tpot`` and ``dur`` (departure − start) [s];
    returns (instances on which a request waited for memory, the latest departure [s]).

    An instance alternates admission and steps.  At each step boundary it admits, first come
    first served, the requests whose KV has arrived while their ``need`` fits beside the
    running ones' (a request that was ready at an earlier boundary, held back by memory,
    starts at this boundary; any other when its KV arrived: it then joins the next step);
    each step serves every running request one token and takes the table's step at the
    running batch and mean context (prompts + tokens made so far).  While the batch stays,
    the mean context grows by one token a step and the step is linear in it within a column
    of the table, so the steps up to the next event (a departure, a KV arrival, a column's
    edge) are summed in closed form, not one by one.  Departures wait on a ring of step
    counts (slot = the step count a request leaves at, modulo the longest output + 1: every
    pending one is within that many steps), each slot a list of rows, with a bitmap of the
    slots in use to find the next one (bench/README.md, Session 15: ~2.6× faster than a heap
    on the bench trace, as fast when requests decode alone)."""
    cols, rows = ready.shape
    ring = 2
    for c in range(cols):
        for r in range(rows):
            if valid[c, r]:
                ring = max(ring, np.int64(output[c, r]) + 1)
    slot, nxt = np.full(ring, -1, dtype=np.int64), np.empty(rows, dtype=np.int64)
    bits = np.zeros((ring + 63) // 64, dtype=np.uint64)
    bound, latest = 0, -np.inf
    for c in range(cols):
        m = 0
        while m < rows and valid[c, m]:
            m += 1
        for j in range(m, rows):  # the padding
            start[c, j], first[c, j], tpot[c, j], dur[c, j] = ready[c, j], 0.0, 0.0, 0.0
        waited, end = _decode_instance(c, m, ready, need, prompt, output, capacity, table.ravel(),
                                       table.shape[1], batches, big, h, top, whole, last, start,
                                       first, tpot, dur, ring, slot, nxt, bits)  # fmt: skip
        bound += waited
        latest = max(latest, end)
    return bound, latest


def column_grid(start, dur, valid, values, nb, w, out=None):
    """Per instance and bin (instances, nb + 1; the last bin empty), the sum of ``values``
    of the valid requests running in it: the running sum of starts less stops (a request
    runs from bin int(start / w), at most the last, through int((start + dur) / w)); into
    ``out`` when given."""
    cells = start.shape[0] * (nb + 1)
    out = np.empty((start.shape[0], nb + 1)) if out is None else out
    return _column_grid_into(start, dur, valid, values, nb, w, np.empty(cells), np.empty(cells),
                             out)  # fmt: skip


@_compiled
def _column_grid_into(start, dur, valid, values, nb, w, up, down, out):
    """:func:`column_grid` into ``out``."""
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
    for c in range(cols):
        acc = 0.0
        for b in range(width):
            acc += up[c * width + b] - down[c * width + b]
            out[c, b] = acc
    return out


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
        base = _table_row(batches, big, whole_batches, batch[i]) * n_cols
        out[i] = _table_at(flat, base, h, top, last_context, contexts[i])
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
