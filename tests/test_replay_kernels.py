"""kvmodel.replay.kernels: the replay's compiled loops against hand-worked cases, numba loaded
only when a replay runs, and the replay's progress callback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy.testing import assert_allclose, assert_array_equal

from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import build_scenario
from kvmodel.replay import kernels
from kvmodel.replay.fifo import first_free, served
from kvmodel.replay.sim import STEPS

ROOT = Path(__file__).resolve().parents[1]

# 3 identical servers, first come first served, the server free longest first (ties: the
# lowest).  By hand:
#   r0 at 0: all free at 0 -> server 0, busy until 0 + 4 = 4
#   r1 at 0: servers 1, 2 free -> server 1, until 0 + 2 = 2
#   r2 at 0: server 2, until 0 + 3 = 3
#   r3 at 1: none free; the first free is server 1 at 2 -> starts 2, until 2 + 1 = 3
#   r4 at 2: servers free at 4, 3, 3 -> servers 1 and 2 tie at 3: server 1, until 3 + 2 = 5
#   r5 at 2.5: servers free at 4, 5, 3 -> server 2 at 3, until 3 + 1 = 4
ARRIVAL = np.array([0.0, 0.0, 0.0, 1.0, 2.0, 2.5])
WORK = np.array([4.0, 2.0, 3.0, 1.0, 2.0, 1.0])
START = [0.0, 0.0, 0.0, 2.0, 3.0, 3.0]
SERVER = [0, 1, 2, 1, 1, 2]


def test_first_free_into_by_hand():
    start, inst = np.empty(6), np.empty(6, dtype=np.int64)
    kernels.first_free_into(ARRIVAL, WORK, 3, start, inst)
    assert_array_equal(start, START)  # exact: the free moments are the floats themselves
    assert inst.tolist() == SERVER


def test_first_free_into_breaks_exact_ties_by_the_lowest_instance():
    # 3 servers, every job 1 s, two arriving at each whole second, by hand:
    #   r0, r1 at 0: all free at 0 -> servers 0 and 1 (lowest first), until 1
    #   r2 at 1: free at 1, 1, 0 -> server 2 (free longest), until 2
    #   r3 at 1: servers 0 and 1 tie at 1 -> server 0, until 2
    #   r4 at 2: free at 2, 1, 2 -> server 1, until 3
    #   r5 at 2: servers 0 and 2 tie at 2 -> server 0
    a = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0])
    start, inst = np.empty(6), np.empty(6, dtype=np.int64)
    kernels.first_free_into(a, np.ones(6), 3, start, inst)
    assert_array_equal(start, a)  # nobody waits
    assert inst.tolist() == [0, 1, 2, 0, 1, 0]


def test_first_free_by_hand():
    # the hand-worked case above through fifo.first_free: r0 … r2 find a server free, r3 waits
    start, inst = first_free(ARRIVAL, WORK, 3)
    assert_allclose(start, START, atol=1e-12)
    assert inst.tolist() == SERVER


# One instance; a step table with rows for batches 1 and 2 and columns at contexts 0, 10,
# 20, 30 tokens (h = 10; contexts clip at 20): a step of 1 s + 0.01 s a token alone, 2 s +
# 0.01 s a token of mean context at batch 2.
TABLE = np.array([[1.0, 1.1, 1.2, 1.3], [2.0, 2.1, 2.2, 2.3]])
TABLE_ARGS = (TABLE, np.array([1.0, 2.0]), False, 10.0, 20.0, 2, 2)


def _decode_steps(ready, need, prompt, output, capacity, args=TABLE_ARGS):
    """``kernels.decode_steps_into`` on one instance's row: (start, first, tpot, dur,
    instances that waited, latest departure)."""
    row = [np.atleast_2d(np.asarray(x, dtype=float)) for x in (ready, need, prompt, output)]
    valid = np.ones(row[0].shape, dtype=np.bool_)
    out = [np.empty(row[0].shape) for _ in range(4)]
    bound, latest = kernels.decode_steps_into(*row, valid, float(capacity), *args, *out)
    return *(x[0] for x in out), bound, latest


def test_decode_steps_by_hand():
    # A: KV at 0, prompt 5, 3 tokens; B: KV at 1.5, prompt 15, 2 tokens; memory is ample.
    #   t 0:    A alone, context 5: step 1.05 -> A's first token at 1.05; B arrives during
    #           A's second step (context 6: 1.06), so it joins at 2.11
    #   t 2.11: batch 2, contexts 7 and 15 (mean 11): 2.11 s -> A's 3rd token and B's 1st at
    #           4.22 (B waited 0.61 s of A's step: its first step is 2.72 s); A leaves
    #   t 4.22: B alone, context 16: 1.16 s -> B leaves at 5.38
    start, first, tpot, dur, bound, latest = _decode_steps([0, 1.5], [10, 10], [5, 15], [3, 2],
                                                           100)  # fmt: skip
    assert_allclose(start, [0.0, 1.5])
    assert_allclose(first, [1.05, 2.72])
    assert_allclose(tpot, [(1.06 + 2.11) / 2, 1.16])
    assert_allclose(dur, [4.22, 5.38 - 1.5])
    assert bound == 0 and latest == pytest.approx(5.38)


def test_decode_steps_sum_a_stretch_in_closed_form():
    # one request, prompt 5, 30 tokens: contexts 5 … 34 cross the columns at 10 and 20 and
    # clip at 20: steps 1.05 … 1.19, then 1.2 for contexts 20 … 34 (15 steps)
    start, first, tpot, dur, _, _ = _decode_steps([0.0], [10], [5], [30], 100)
    steps = [1.0 + 0.01 * min(c, 20) for c in range(5, 35)]
    assert_allclose(first, [steps[0]])
    assert_allclose(dur, [sum(steps)])
    assert_allclose(tpot, [np.mean(steps[1:])])


def test_decode_steps_wait_for_memory_first_come_first_served():
    # 100 tokens of memory; (KV at, tokens, output) = A (0, 60, 2), B (0.5, 60, 1),
    # C (0.6, 30, 1): B does not fit beside A and C queues behind it; A leaves at 2.11
    # (steps 1.05 and 1.06 at contexts 5 and 6), B and C start there together (memory wait)
    start, first, _, dur, bound, _ = _decode_steps([0, 0.5, 0.6], [60, 60, 30], [5, 5, 5],
                                                   [2, 1, 1], 100)  # fmt: skip
    assert_allclose(start, [0.0, 2.11, 2.11])
    assert_allclose(first, [1.05, 2.05, 2.05])  # batch 2 at context 5
    assert_allclose(dur, [2.11, 2.05, 2.05])
    assert bound == 1


def _one_step_at_a_time(ready, need, prompt, output, capacity, args):
    """The decode instance of ``decode_steps_into``'s docstring, one step per loop in Python
    (the oracle: no closed form, no heap)."""
    table, batches, big, h, top, whole, last = args

    def step(ctx, b):
        return kernels.step_lookup(table, batches, big, h, top, np.array([ctx]),
                                   np.array([float(b)]), whole, last)[0]  # fmt: skip

    n = len(ready)
    start, first, tpot, dur = (np.zeros(n) for _ in range(4))
    t, head, free, blocked, running, waited = 0.0, 0, capacity, -np.inf, [], False
    while head < n or running:
        if not running:
            free, t = capacity, max(t, ready[head])
        joined = []
        while head < n and ready[head] <= t:
            if free < need[head]:
                blocked, waited = t, True
                break
            free -= need[head]
            start[head] = t if ready[head] <= blocked else ready[head]
            running.append([head, 0])
            joined.append(head)
            head += 1
        s = step(sum(prompt[j] + made for j, made in running) / len(running), len(running))
        for j in joined:
            first[j], tpot[j] = t + s - start[j], s
        t += s
        still = []
        for j, made in running:
            if made + 1 < output[j]:
                still.append([j, made + 1])
                continue
            dur[j] = t - start[j]
            if output[j] > 1:
                tpot[j] = (dur[j] - first[j]) / (output[j] - 1)
            free += need[j]
        running = still
    return start, first, tpot, dur, int(waited)


@pytest.mark.parametrize(("capacity", "rate"), [(1e9, 2.0), (3000.0, 5.0), (800.0, 20.0)])
def test_decode_steps_match_one_step_at_a_time(capacity, rate):
    """The kernel (closed-form stretches, a heap of departures, batches past the table's
    whole rows) against the plain loop above: light, memory-bound and overloaded."""
    rng = np.random.default_rng(7)
    n = 400
    ready = np.sort(rng.exponential(1 / rate, n).cumsum())
    prompt = rng.integers(1, 300, n).astype(float)
    output = rng.integers(1, 60, n).astype(float)
    need = np.minimum(prompt + output / 2, capacity)
    batches = np.concatenate([np.arange(1.0, 9.0), [12.0, 20.0, 40.0, 400.0]])  # 8 whole rows
    contexts = np.arange(34) * 10.0
    table = 0.02 + 0.004 * batches[:, None] * (1 + contexts[None, :] / 500) ** 1.5
    args = (table, batches, True, 10.0, float(contexts[-2]), 8, 32)
    got = _decode_steps(ready, need, prompt, output, capacity, args)
    want = _one_step_at_a_time(ready, need, prompt, output, capacity, args)
    for g, w in zip(got[:4], want[:4], strict=True):
        assert_allclose(g, w, rtol=1e-9, atol=1e-12)
    assert got[4] == want[4] == (capacity < 1e9)


def test_column_grid_by_hand():
    # one instance, bins of 1 s, 5 bins: A runs 0 … 3 (bins 0-3) holding 100 tokens, B runs
    # 1 … 2 (bins 1-2) holding 50: tokens per bin 100, 150, 150, 100, 0 (the 6th: empty)
    start, dur, held = np.array([[0.0, 1.0]]), np.array([[3.0, 1.0]]), np.array([[100.0, 50.0]])
    g = kernels.column_grid(start, dur, np.array([[True, True]]), held, 5, 1.0)
    assert_array_equal(g, [[100.0, 150.0, 150.0, 100.0, 0.0, 0.0]])
    none = np.array([[False, False]])
    assert_array_equal(kernels.column_grid(start, dur, none, held, 5, 1.0), np.zeros((1, 6)))


def test_step_lookup_by_hand():
    # rows: batches 1 and 2; columns: contexts 0, 10, 20 tokens (h = 10; the last column only
    # bounds the interpolation, so contexts clip at 10)
    table = np.array([[1.0, 2.0, 3.0], [10.0, 20.0, 30.0]])
    contexts, batch = np.array([5.0, 15.0, -3.0]), np.array([1.0, 2.0, 2.0])
    got = kernels.step_lookup(table, np.array([1.0, 2.0]), False, 10, 10.0, contexts, batch,
                              512, 1)  # fmt: skip
    # context 5 at batch 1: halfway between 1 and 2 -> 1.5; context 15 clips to 10 -> 20;
    # context -3 clips to 0 -> 10
    assert_allclose(got, [1.5, 20.0, 10.0])


def test_instance_rows_and_back():
    # 5 requests on 2 instances (round robin): instance 0 gets 0, 2, 4, instance 1 gets 1, 3
    # (and a pad); each row in the order given
    ready = np.array([10.0, 11.0, 12.0, 13.0, 14.0])
    need = np.array([100.0, 300.0, 120.0, 130.0, 140.0])  # 300 > the capacity 200: 200
    held, output = need / 2, np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    order = np.array([[2, 0, 1], [1, 0, 2]])
    r, nd, hd, out, valid = kernels.instance_rows(order, -1.0, kernels.rows_of(ready, 2, 0.0),
                                                  need, held, output, 200.0)  # fmt: skip
    assert_array_equal(r, [[14.0, 10.0, 12.0], [13.0, 11.0, -1.0]])
    assert_array_equal(nd, [[140.0, 100.0, 120.0], [130.0, 200.0, 0.0]])
    assert_array_equal(hd, [[70.0, 50.0, 60.0], [65.0, 150.0, 0.0]])
    assert_array_equal(out, [[5.0, 1.0, 3.0], [4.0, 2.0, 0.0]])
    assert valid.tolist() == [[True, True, True], [True, True, False]]
    # back: start = the rows themselves, stays of 1 s: departures 1 s later
    s, f, t, d = kernels.request_order(order, 5, r, out, hd, np.ones(r.shape))
    assert_array_equal(s, ready)
    assert_array_equal(f, output)
    assert_array_equal(t, held)
    assert_array_equal(d, ready + 1.0)


def test_the_app_and_the_cli_import_no_numba():
    """numba is imported by the first replay, not by importing the app's modules (its cold
    start) or the CLI."""
    names = sorted(
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        for d in ("kvmodel", "kvview", "ui")
        for p in (ROOT / d).rglob("*.py")
        if p.name not in ("kernels.py", "__main__.py") and "__pycache__" not in p.parts
    )
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps('numba' in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) is False


@pytest.mark.parametrize("size_by", ["analytic", "replay"])
def test_replay_plan_reports_progress(size_by):
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    slo = cap.Slo(ttft_s=2.0, tpot_s=0.05)
    wl = cap.Workload.fixed(20.0, 2048, 64)
    plan = cap.plan(sc, wl, slo)
    stream = rp.poisson_stream(wl, sc.model.max_context_tokens, 500)
    seen = []
    rp.replay_plan(sc, plan, stream, slo, size_by=size_by,
                   progress=lambda i, total, what: seen.append((i, total, what)))  # fmt: skip
    if size_by == "analytic":  # the steps of the one replay, rising to the end
        steps = [i for i, _, _ in seen]
        assert all(total == STEPS and what == "replay" for _, total, what in seen)
        assert steps[0] == 1 and steps[-1] == STEPS and len(steps) >= 3
        assert steps == sorted(steps) and all(s < STEPS for s in steps[:-1])
    else:
        assert all(what == "grow" and 1 <= i <= total for i, total, what in seen)


def test_served_by_group_by_hand():
    # NIC 0: ready 0, 1, 1.5, 10 with transfers 2, 2, 1, 1 -> starts 0, 2, 4, 10 (Lindley by
    # hand, as test_replay.test_served_is_lindley); NIC 1: one transfer ready at 1 starts at 1;
    # NIC 0's jobs arrive out of order in the request order (10 first): served by ready time
    ready = np.array([10.0, 0.0, 1.0, 1.0, 1.5])
    busy = np.array([1.0, 2.0, 5.0, 2.0, 1.0])
    group = np.array([0, 0, 1, 0, 0])
    assert_array_equal(kernels.served_by_group(ready, busy, group, 2), [10.0, 0.0, 1.0, 2.0, 4.0])


@pytest.mark.parametrize("in_order", [False, True])
def test_served_by_group_equals_the_matrix_formula(in_order):
    """The same sums as fifo.served on each group's jobs sorted (stably) by ready time;
    ``in_order``: every group's jobs ready in request order (the one-pass path)."""
    rng = np.random.default_rng(7)
    n, groups = 2000, 5
    ready = np.round(rng.uniform(0, 50, n), 1)  # ties on purpose
    if in_order:
        ready = np.sort(ready)
    busy = rng.exponential(0.1, n)
    group = rng.integers(0, groups, n)
    got = kernels.served_by_group(ready, busy, group, groups)
    for g in range(groups):
        idx = np.flatnonzero(group == g)
        order = np.argsort(ready[idx], kind="stable")
        col = served(ready[idx][order][:, None], busy[idx][order][:, None]).ravel()
        assert_array_equal(got[idx[order]], col)


@pytest.mark.parametrize("kind", ["sorted", "nearly", "shuffled", "ties"])
def test_stable_order_is_numpys_stable_argsort(kind):
    rng = np.random.default_rng(3)
    x = np.sort(rng.uniform(0, 100, 3000))
    if kind == "nearly":  # a few swaps: the insertion path
        x = x + rng.normal(0, 0.05, x.size)
    elif kind == "shuffled":  # many moves: the merge path
        rng.shuffle(x)
    elif kind == "ties":
        x = np.round(rng.uniform(0, 5, 3000))
    assert_array_equal(kernels.stable_order(x), np.argsort(x, kind="stable"))


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 4097])
def test_merge_order_is_numpys_stable_argsort(n):
    x = np.round(np.random.default_rng(n).uniform(0, 20, n))  # many ties
    assert_array_equal(kernels.merge_order(x), np.argsort(x, kind="stable"))


def test_floor_index_is_numpys_floor_division():
    # whole minutes and their neighbours (the rounding edge), and plain values
    x = np.arange(0, 5000, dtype=float) * 60.0
    x = np.concatenate([x, np.nextafter(x, -1.0)[1:], np.nextafter(x, np.inf), [0.1, 59.9, 1e7]])
    for width in (60.0, 10.0, 0.05):
        assert_array_equal(kernels.floor_index(x, width), (x // width).astype(np.int64))
    assert kernels.floor_index(np.array([119.99, 120.0]), 60.0).tolist() == [1, 2]  # by hand


def test_floor_counts_is_the_bincount_of_floor_index():
    x = np.arange(0, 5000, dtype=float) * 60.0
    x = np.sort(np.concatenate([x, np.nextafter(x, np.inf), [0.1, 59.9, 1e7]]))
    for width in (60.0, 10.0):
        want = np.bincount(kernels.floor_index(x, width))
        assert_array_equal(kernels.floor_counts(x, width), want)
    # by hand: 0 and 59.9 in minute 0, 60 and 119.99 in minute 1, none in 2, 180 in 3
    got = kernels.floor_counts(np.array([0.0, 59.9, 60.0, 119.99, 180.0]), 60.0)
    assert got.tolist() == [2, 2, 0, 1]


def test_gap_into_knows_the_rank_when_most_did_not_wait():
    later, earlier = np.array([1.0, 2.0, 3.0, 9.0]), np.array([1.0, 2.0, 1.0, 4.0])
    out = np.empty(4)  # gaps 0, 0, 2, 5: two zeros, so ranks 0 and 1 are 0, rank 2 is not known
    assert kernels.gap_into(later, earlier, out, 1) == (True, 0.0)
    assert out.tolist() == [0.0, 0.0, 2.0, 5.0]
    assert kernels.gap_into(later, earlier, out, 2) == (False, 0.0)


def test_gap_range_gives_order_stats_the_keys_range():
    """gap_range_into's key range holds every gap (a zero of either sign included), so the
    selection on it equals np.partition's; a NaN is reported."""
    later = np.array([0.0, -0.0, 3.0, 1.0, 7.0, 2.0])
    earlier = np.array([0.0, 0.0, 1.0, 4.0, 1.0, 2.0])  # gaps 0, −0, 2, −3, 6, 0
    out = np.empty(6)
    known, _, lo, hi, nan = kernels.gap_range_into(later, earlier, out, 4)
    assert not known and not nan
    for k in range(6):
        exact, got = kernels.order_stats_in(out, np.array([k]), lo, hi, nan)
        assert exact and got[0] == np.partition(out.copy(), k)[k]
    later[2] = np.nan
    assert kernels.gap_range_into(later, earlier, out, 4)[4]


def test_summary_percentiles_equal_queue_percentile():
    """The summary's in-place order statistics (one buffer) against ``queue.percentile``."""
    from kvmodel.capacity.queue import percentile
    from kvmodel.replay.result import OrderStats

    rng = np.random.default_rng(3)
    a = rng.exponential(1.0, 2001)
    b = np.where(rng.random(2001) < 0.8, a, a - rng.exponential(1.0, 2001))  # 80 % no wait
    stats = OrderStats(len(a))
    for q in (50.0, 79.0, 81.0, 90.0, 99.0):
        assert stats.gap(a, b, q) == percentile(a - b, q)
    assert stats.of(a, (50.0, 90.0, 99.0)) == [percentile(a, q) for q in (50.0, 90.0, 99.0)]


def test_instance_order_by_hand():
    # 5 requests on 2 instances: instance 0 holds requests 0, 2, 4 (ready 3, 1, 2) -> order
    # 1, 2, 0; instance 1 holds 1, 3 and a pad (ready 5, 5, pad 9) -> 0, 1, 2 (ties stable)
    got = kernels.instance_order(np.array([3.0, 5.0, 1.0, 5.0, 2.0]), 2, 3, 9.0)
    assert got.tolist() == [[1, 2, 0], [0, 1, 2]]


_SMALL_REPLAY = """
from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import build_scenario
sc = build_scenario(model="llama-3.1-70b", link="100gbe")
wl = cap.Workload.fixed(50.0, 8192, 1024)
tl = rp.replay(rp.Deployment(sc, 4, 8, 20, 1), rp.poisson_stream(wl, 131072, 3000))
print(repr(float(tl.ttft_s.max())), tl.memory_bound_instances)
"""


def test_an_unusable_cache_directory_warns_nothing():
    """NUMBA_CACHE_DIR that cannot be created: numba falls back to another cache location
    (here the package's own), and under -W error no warning surfaces; the same replay."""
    env = {**os.environ, "NUMBA_CACHE_DIR": "/dev/null/cache"}
    out = subprocess.run([sys.executable, "-W", "error", "-c", _SMALL_REPLAY], env=env,
                         capture_output=True, text=True, cwd=ROOT, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stderr == ""
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    wl = cap.Workload.fixed(50.0, 8192, 1024)
    tl = rp.replay(rp.Deployment(sc, 4, 8, 20, 1), rp.poisson_stream(wl, 131072, 3000))
    assert out.stdout.split() == [repr(float(tl.ttft_s.max())), str(tl.memory_bound_instances)]
    assert tl.memory_bound_instances >= 1  # the admission kernel ran too


_MISSES_AFTER_WARM_UP = """
import dataclasses
from numba.core.registry import CPUDispatcher
from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import build_scenario
from kvmodel.replay import kernels as K
sc = build_scenario(model="llama-3.1-70b", link="100gbe")
stream = rp.poisson_stream(cap.Workload.fixed(40.0, 4096, 512), 131072, 4000)
dep = rp.Deployment(sc, 4, 8, 6, 2)
for d in (dep, dataclasses.replace(dep, decode_instances=1),
          dataclasses.replace(dep, prefill_instances=1)):
    rp.summarise(rp.replay(d, stream), ttft_slo_s=2.0, tpot_slo_s=0.05, q=90.0, poisson=True)
kernels = [(n, f) for n, f in vars(K).items() if isinstance(f, CPUDispatcher)]
print(sorted(n for n, f in kernels if f.stats.cache_misses))
"""


@pytest.mark.slow
def test_the_warm_up_compiles_what_a_replay_needs(tmp_path):
    """``make run`` / ``make test`` run ``python -m kvmodel.replay.warm`` (Makefile): after it,
    a new process replaying other deployments (several decode instances, one, one prefill
    instance) compiles nothing, it only loads (an empty cache directory for both)."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    warm = subprocess.run([sys.executable, "-m", "kvmodel.replay.warm"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert warm.returncode == 0, warm.stderr
    assert "replay kernels ready" in warm.stderr
    assert any(tmp_path.rglob("*.nbi"))  # it did write the cache
    out = subprocess.run([sys.executable, "-c", _MISSES_AFTER_WARM_UP], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_per_minute_p90_equals_a_partition_on_small_and_busy_minutes():
    """The series' p90 per minute: np.partition on small minutes, the radix selection from
    ``result.RADIX_FROM`` requests (with a NaN: the partition again); the same values."""
    from kvmodel.replay import result

    rng = np.random.default_rng(3)
    counts = np.array([5, 0, result.RADIX_FROM, result.RADIX_FROM + 17, 1, 3 * result.RADIX_FROM])
    ttft = rng.lognormal(0.0, 1.0, int(counts.sum()))
    ttft[counts[:4].sum() + 1] = np.nan  # the busy last minute holds a NaN
    got = result.per_minute_p90(counts, ttft)
    ends = np.cumsum(counts)
    for m, c in enumerate(counts):
        if c == 0:
            assert np.isnan(got[m])
            continue
        part = ttft[ends[m] - c : ends[m]]
        k = max(int(np.ceil(0.9 * c)) - 1, 0)
        assert got[m] == np.partition(part, k)[k]
    assert np.isfinite(got[[0, 2, 3, 4, 5]]).all()
