"""kvmodel.capacity.queue: Erlang C, M/G/c waits at fixed draws, order-statistic percentiles."""

import math

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kvmodel.capacity.queue import (
    DRAWS,
    batch_grid,
    erlang_c,
    kth_smallest,
    largest_within,
    make_draws,
    moments,
    percentile,
    smallest,
    sum_percentile,
    wait_at,
)


@pytest.mark.parametrize(
    "c, a, expected",
    [
        (1, 0.5, 0.5),  # M/M/1: P(wait) = ρ
        (2, 1.0, 1 / 3),  # B(2, 1) = 0.5/2.5 = 0.2; C = 2·0.2 / (2 − 1·0.8) = 1/3
        # B(3, 2) = (8/6) / (1 + 2 + 2 + 8/6) = 4/19; C = 3·(4/19) / (3 − 2·15/19) = 12/27
        (3, 2.0, 4 / 9),
        (4, 0.0, 0.0),
        (4, 4.0, 1.0),  # unstable: everyone waits
    ],
)
def test_erlang_c_against_hand_values(c, a, expected):
    assert erlang_c(c, a) == pytest.approx(expected, rel=1e-12)


def test_erlang_c_many_servers_matches_the_recursion():
    # above 200 servers the Poisson ratio in log space replaces the recursion: same number
    def recursion(c, a):
        b = 1.0
        for k in range(1, c + 1):
            b = a * b / (k + a * b)
        return c * b / (c - a * (1 - b))

    for c, a in ((201, 180.0), (400, 390.0), (1000, 950.5)):
        assert erlang_c(c, a) == pytest.approx(recursion(c, a), rel=1e-9)


def test_single_server_wait_has_the_pollaczek_khinchine_mean():
    # exponential-tail inverse CDF at evenly spread uniforms integrates to the mean:
    # λ = 2/s, E[s] = 0.2 s, cs² = 0.5 -> ρ = 0.4, E[s²] = (1 + 0.5)·0.04 = 0.06,
    # P-K mean = λ·E[s²] / (2(1 − ρ)) = 2·0.06 / 1.2 = 0.1 s
    u = (np.arange(200_000) + 0.5) / 200_000
    w = wait_at(-np.log1p(-u), c=1, a=0.4, mean_s=0.2, cs2=0.5)
    assert w.mean() == pytest.approx(0.1, rel=1e-3)
    assert (w > 0).mean() == pytest.approx(0.4, abs=1e-5)  # P(wait > 0) = ρ


def test_waits_grow_with_load_and_shrink_with_servers():
    d = make_draws(np.ones(3))
    t = d.tail[0]
    lo = wait_at(t, c=3, a=1.5, mean_s=0.1, cs2=1.0)
    assert np.all(wait_at(t, c=3, a=2.0, mean_s=0.1, cs2=1.0) >= lo)
    assert np.all(wait_at(t, c=4, a=1.5, mean_s=0.1, cs2=1.0) <= lo)
    assert np.all(np.isinf(wait_at(t, c=3, a=3.0, mean_s=0.1, cs2=1.0)))


def test_percentile_is_an_order_statistic():
    x = np.arange(1.0, 11.0)  # 1 … 10
    assert percentile(x, 90) == 9.0  # the ⌈0.9·10⌉ = 9th smallest
    assert percentile(x, 50) == 5.0
    assert percentile(x, 99.9) == 10.0
    assert math.isinf(percentile(np.full(4, np.inf), 90))


def test_draws_repeat_and_follow_the_weights():
    a, b = make_draws(np.array([1.0, 3.0])), make_draws(np.array([1.0, 3.0]))
    assert np.array_equal(a.idx, b.idx) and np.array_equal(a.u, b.u)
    assert_allclose((a.idx == 1).mean(), 0.75, atol=0.02)


def test_smallest_finds_the_threshold_and_gives_up():
    assert smallest(lambda n: n >= 37, 1) == 37
    assert smallest(lambda n: n >= 5, 9) == 9
    assert smallest(lambda n: False, 1, hi=1000) is None


def _simulated_p90(service_pool, c, rho, n=40_000, seed=1):
    """p90 of wait + service of an FCFS M/G/c queue, simulated request by request."""
    import heapq

    rng = np.random.default_rng(seed)
    lam = rho * c / service_pool.mean()
    s = rng.choice(service_pool, n)
    t = np.cumsum(rng.exponential(1 / lam, n))
    free = [0.0] * c
    out = np.empty(n)
    for i in range(n):
        start = max(t[i], heapq.heappop(free))
        heapq.heappush(free, start + s[i])
        out[i] = start - t[i] + s[i]
    return float(np.percentile(out[n // 10 :], 90)), lam


@pytest.mark.parametrize(
    "pool, c, rho",
    [
        ("exponential-like", 1, 0.8),  # lognormal σ = 0.8: cs² ≈ 0.9
        ("deterministic", 4, 0.8),  # M/D/4
        ("uniform", 16, 0.9),  # many servers, little variance
    ],
)
def test_percentiles_agree_with_an_mgc_simulation(pool, c, rho):
    # Allen–Cunneen with an exponential tail against the queue itself: within 8 % at p90
    # (measured: 1–7 % over these and M/G/1 at ρ 0.5–0.8, 10 % at ρ = 0.95)
    rng = np.random.default_rng(7)
    service = {
        "exponential-like": rng.lognormal(-2.5, 0.8, 2000),
        "deterministic": np.full(4, 0.1),
        "uniform": rng.uniform(0.05, 0.15, 2000),
    }[pool]
    sim, lam = _simulated_p90(service, c, rho)
    w = np.full(len(service), 1 / len(service))
    mean, cs2 = moments(service, w)
    d = make_draws(w)
    ours = percentile(service[d.idx] + wait_at(d.tail[0], c=c, a=lam * mean, mean_s=mean,
                                               cs2=cs2), 90)  # fmt: skip
    assert ours == pytest.approx(sim, rel=0.08)


@pytest.mark.parametrize(
    "limit, top, expected",
    [
        (10.0, 100_000, 5),  # 2·5 = 10 ≤ 10 < 12
        (1.0, 100, 0),  # even f(1) = 2 exceeds it
        (1e9, 777, 777),  # never reached: the top
        (20_001.0, 65_536, 10_000),  # found through three grid refinements
    ],
)
def test_largest_within(limit, top, expected):
    calls = []

    def f(b):
        calls.append(np.size(b))
        return 2.0 * np.asarray(b, dtype=float)

    n, value = largest_within(f, limit, top)
    assert n == expected
    assert value == (2.0 * n if n else 2.0)
    assert sum(calls) < 400  # never every batch up to the top


def test_batch_grid_spans_one_to_top():
    g = batch_grid(1000)
    assert g[0] == 1 and g[-1] == 1000 and np.all(np.diff(g) > 0) and len(g) <= 96
    assert list(batch_grid(1)) == [1]


def test_erlang_c_for_huge_pools_is_bounded_and_refuses_absurd_ones():
    # far more servers than load: nobody waits; computed on a window around the mode, so a
    # million servers take no million-entry array (before: an array of c + 1 terms)
    assert erlang_c(1_000_000, 10.0) == 0.0
    assert 0.0 < erlang_c(5_000_000, 4_990_000.0) < 1.0
    # a pool beyond MAX_SERVERS is an input error with its reason, not a 117 GiB allocation
    with pytest.raises(ValueError, match="instances, more than the 10,000,000"):
        erlang_c(15_653_819_214, 1.0)


def _samples(kind: str, n: int, rng) -> np.ndarray:
    x = rng.random(n)
    if kind == "ties":
        return np.round(x * 20) / 20
    if kind == "nan":
        x[rng.random(n) < 0.3] = np.nan
        return x
    if kind == "equal":
        return np.full(n, 0.25)
    if kind == "rising":
        return np.sort(x)
    if kind == "falling":
        return np.sort(x)[::-1].copy()
    if kind == "inf":
        x[rng.random(n) < 0.15] = np.inf
        return x
    return x


@pytest.mark.parametrize("kind", ["plain", "ties", "nan", "equal", "rising", "falling", "inf"])
@pytest.mark.parametrize("n", [5, 2047, 2048, DRAWS, DRAWS + 1])
def test_kth_smallest_is_numpys_partition(kind, n):
    # the fast selection gives exactly np.partition's number at every rank (both tails, the
    # middle, the ends), and leaves its input as it was
    rng = np.random.default_rng(n)
    x = _samples(kind, n, rng)
    kept = x.copy()
    for k in sorted({0, 1, n // 2 - 1, n // 2, n - 2, n - 1, *rng.integers(0, n, 25).tolist()}):
        if not 0 <= k < n:
            continue
        want = float(np.partition(x, k)[k])
        got = kth_smallest(x, k)
        assert got == want or (math.isnan(got) and math.isnan(want)), (kind, n, k)
    assert_allclose(x, kept)


def test_sum_percentile_is_the_percentile_of_the_sum():
    # the order statistic of base + waits, from the fast selection, equals numpy's of the
    # same sum built the plain way, at the percentiles a plan asks for
    d = make_draws(np.ones(50))
    base = 0.2 + 0.5 * np.random.default_rng(3).random(DRAWS)
    for q in (50.0, 90.0, 95.0, 99.0, 99.9):
        queues = ((d.tail[0], 4, 3.1, 0.8, 1.4), (d.tail[1], 1, 0.4, 0.02, 0.3))
        total = base + sum(wait_at(t, c=c, a=a, mean_s=m, cs2=v) for t, c, a, m, v in queues)
        assert sum_percentile(base, q, queues) == percentile(total, q)
        k = math.ceil(q / 100 * DRAWS) - 1
        assert percentile(total, q) == float(np.partition(total, k)[k])
