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


def test_admit_by_hand():
    # one instance holding 100 tokens; requests (ready, tokens, stay) = (0, 60, 10),
    # (1, 50, 10), (2, 40, 10), (3, 30, 10), first come first served:
    #   r0 at 0: 100 free -> admitted at 0, 40 left, leaves at 10
    #   r1 at 1: 50 > 40: waits for r0 (10) -> admitted at 10, 50 left, leaves at 20
    #   r2 at 2: not before r1 (10); 40 <= 50 -> admitted at 10, 10 left, leaves at 20
    #   r3 at 3: 30 > 10; r2 leaves first (20, 40 tokens: the smaller of two equal times)
    #            -> admitted at 20, 50 - 30 = 20 left
    out = kernels.admit(np.array([0.0, 1.0, 2.0, 3.0]), np.array([60.0, 50.0, 40.0, 30.0]),
                        np.full(4, 10.0), 100.0)  # fmt: skip
    assert_array_equal(out, [0.0, 10.0, 10.0, 20.0])


# One instance, bins of 1 s, 5 bins: request A runs 0 … 3 (bins 0-3) holding 100 tokens,
# B runs 1 … 2 (bins 1-2) holding 50.  Running requests per bin 1, 2, 2, 1, 0; tokens per
# bin 100, 150, 150, 100, 0.
START2 = np.array([[0.0, 1.0]])
DUR2 = np.array([[3.0, 1.0]])  # ends at 3 and 2
VALID2 = np.array([[True, True]])
HELD2 = np.array([[100.0, 50.0]])


def test_column_grid_and_peak_by_hand():
    g = kernels.column_grid(START2, DUR2, VALID2, HELD2, 5, 1.0)
    assert_array_equal(g, [[100.0, 150.0, 150.0, 100.0, 0.0, 0.0]])  # the 6th bin: empty
    assert_array_equal(kernels.column_peak(START2, DUR2, VALID2, HELD2, 5, 1.0), [150.0])
    none = np.array([[False, False]])
    assert_array_equal(kernels.column_grid(START2, DUR2, none, HELD2, 5, 1.0), np.zeros((1, 6)))


def test_round_means_by_hand():
    # A: first bin 0: batch 1, 100 tokens -> context ceil(100 / 1) = 100, batch 1; over its
    #    bins 0-3: batch (1 + 2 + 2 + 1) / 4 = 1.5, tokens 500 / 4 = 125 -> context
    #    ceil(125 / 1.5) = ceil(83.3) = 84, batch ceil(1.5) = 2
    # B: first bin 1: batch 2, 150 tokens -> context 75, batch 2; over bins 1-2 the same
    c0, b0, cm, bm = kernels.round_means(START2, DUR2, VALID2, HELD2, 5, 1.0)
    assert_array_equal(c0, [[100.0, 75.0]])
    assert_array_equal(b0, [[1.0, 2.0]])
    assert_array_equal(cm, [[84.0, 75.0]])
    assert_array_equal(bm, [[2.0, 2.0]])


def test_admit_counts_departures_before_arrivals():
    # A (ready 0, stays 2, 10 tokens), B (1, 1, 20), C (2, 1, 30) in 30 tokens: held 10, 30;
    # at 2 A and B leave before C comes, so C fits at once (never 60 held)
    got = kernels.admit(np.array([0.0, 1.0, 2.0]), np.array([10.0, 20.0, 30.0]),
                        np.array([2.0, 1.0, 1.0]), 30.0)  # fmt: skip
    assert_array_equal(got, [0.0, 1.0, 2.0])


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


@pytest.mark.parametrize("capacity", [1000.0, 1300.0, 1600.0])
def test_admit_moves_a_start_exactly_when_the_held_tokens_overflow(capacity):
    """``decode._flagged`` leaves rows to ``admit`` that may not overflow: on those it must
    admit every request when it is ready.  The oracle is numpy: events (departures, then
    arrivals) sorted stably and a running sum; the capacities span rows that never, sometimes
    and often overflow."""
    rng = np.random.default_rng(11)
    ready = np.sort(np.round(rng.uniform(0, 100, (6, 300)), 1), axis=1)
    dur = np.round(rng.exponential(5.0, (6, 300)), 1)  # ties between ends and starts
    need = rng.integers(1, 100, (6, 300)).astype(float)
    times = np.concatenate([ready + dur, ready], axis=1)
    delta = np.concatenate([-need, need], axis=1)
    order = np.argsort(times, axis=1, kind="stable")
    peak = np.cumsum(np.take_along_axis(delta, order, 1), axis=1).max(axis=1)
    moved = [bool((kernels.admit(ready[c], need[c], dur[c], capacity) != ready[c]).any())
             for c in range(6)]  # fmt: skip
    assert moved == (peak > capacity).tolist()
    # peaks 1,158-1,553 tokens: 1,000 overflows on every row, 1,300 on three, 1,600 on none
    assert sum(moved) == {1000.0: 6, 1300.0: 3, 1600.0: 0}[capacity]


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
