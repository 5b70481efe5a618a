"""Link load and queueing (kvmodel.traffic.queue): M/D/1 against Pollaczek–Khinchine, rates from
timestamps, the vectorised Lindley recursion against the loop."""

import numpy as np
from numpy.testing import assert_allclose
from traffic_helpers import requests_like

from kvmodel.build import build_scenario
from kvmodel.traffic import (
    load,
    mix_from_requests,
)
from kvmodel.traffic.queue import simulate_waits

SC = build_scenario(model="llama-3-70b", link="100gbe")  # critical length 1,145 (article)


def test_load_md1_against_pollaczek_khinchine():
    # 20 req/s of 1,000-token requests on 100GbE: x = 4 µs + 327,680,000 B / 12.5 GB/s
    x = 4e-6 + 327_680_000 / 12.5e9
    mix = mix_from_requests(
        requests_like([1000] * 10),
    )
    ld = load(SC, mix, rps=20.0, sim_requests=50_000)
    rho = 20 * x
    assert_allclose(ld.utilization, rho)
    assert_allclose(ld.mean_wait_s, 20 * x * x / (2 * (1 - rho)))
    assert_allclose(ld.bytes_per_s, 20 * 327_680_000)
    assert ld.stable and ld.p50_s <= ld.p90_s <= ld.p99_s
    assert ld.p50_s >= x  # at least the transfer itself
    assert_allclose(ld.decode_idle_s_per_s / 20, x + ld.mean_wait_s, rtol=0.06)
    assert ld.bandwidth_for_target_bytes_per_s is not None


def test_load_from_timestamps_and_unstable_link():
    arrivals = np.linspace(0, 1, 101)  # 101 requests in 1 s → 101 req/s
    mix = mix_from_requests(requests_like([4000] * 101, arrival=arrivals))
    ld = load(SC, mix)
    assert_allclose(ld.rps, 101)
    assert not ld.stable and ld.utilization > 1 and ld.p99_s == float("inf")
    assert load(SC, mix_from_requests(requests_like([100, 200]))) is None  # no rate known


def test_queue_simulation_matches_lindley_loop():
    # the vectorised form against the recursion W_{n+1} = max(0, W_n + X_n − A_n), same draws
    service = np.random.default_rng(3).exponential(0.008, size=5_000)
    got = simulate_waits(service, 100.0, np.random.default_rng(11))
    gaps = np.random.default_rng(11).exponential(1 / 100.0, size=5_000)
    want, w = [], 0.0
    for x, a in zip(service, gaps, strict=True):
        want.append(w)
        w = max(0.0, w + x - a)
    assert_allclose(got, want, rtol=1e-9, atol=1e-12)
    assert got[0] == 0.0 and (got >= 0).all()


def test_load_percentiles_are_the_seeded_draws_and_a_new_step_reuses_them():
    # kvmodel.traffic.queue: SEED's generator draws 200,000 lengths (weighted), then their
    # inter-arrival gaps; p99 = the 99th percentile of wait + transfer over those draws.  The
    # draws are kept per mix and rate, so a load at another decode step gives the same
    # transfer percentiles and the share moves with the step only.
    from dataclasses import replace

    from kvmodel.traffic import queue as Q
    from kvmodel.traffic.analysis import per_length

    mix = mix_from_requests(requests_like([500, 1000, 1000, 3000, 8000]))
    ld = load(SC, mix, rps=5.0)  # utilisation ~0.35: a stable link
    _, inverse, exposed, prefill, _, whole = per_length(SC, mix.tokens)
    rng = np.random.default_rng(Q.SEED)
    idx = rng.choice(len(mix.tokens), size=Q.SIM_REQUESTS, p=mix.weights / mix.weights.sum())
    gaps = rng.exponential(1 / 5.0, size=Q.SIM_REQUESTS)
    service = whole[inverse][idx]
    s = np.concatenate(([0.0], np.cumsum(service[:-1] - gaps[:-1])))
    total = np.maximum(s - np.minimum.accumulate(s), 0.0) + exposed[inverse][idx]
    assert ld.stable
    assert ld.p99_s == float(np.percentile(total, 99))  # exactly: the same draws, same order
    assert ld.p50_s == float(np.percentile(total, 50))
    share = total / (prefill[inverse][idx] + total + SC.decode_step_s)
    assert ld.p99_share_of_ttft == float(np.percentile(share, 99))
    first = Q.draws(mix, Q.SIM_REQUESTS, 5.0, Q.TARGET_REQUESTS)
    slower = replace(SC, decode_step_s=SC.decode_step_s * 2)
    ld2 = load(slower, mix, rps=5.0)
    assert Q.draws(mix, Q.SIM_REQUESTS, 5.0, Q.TARGET_REQUESTS)[0] is first[0]  # kept
    assert (ld2.p50_s, ld2.p99_s) == (ld.p50_s, ld.p99_s)
    assert ld2.p99_share_of_ttft < ld.p99_share_of_ttft  # a longer step: a smaller share
    assert not first[0].flags.writeable  # shared arrays cannot be changed by a caller


def test_a_new_rate_scales_the_kept_unit_gaps_draw_for_draw():
    # numpy's exponential(scale) is scale × standard_exponential(), draw for draw: the lengths
    # and the unit gaps are kept per mix, a new rate multiplies them (the Traffic page's rate)
    from kvmodel.traffic import queue as Q

    mix = mix_from_requests(requests_like([500, 1000, 1000, 3000, 8000]))
    first = Q.draws(mix, Q.SIM_REQUESTS, 5.0, Q.TARGET_REQUESTS)
    p = mix.weights / mix.weights.sum()
    for rate in (5.0, 3.21, 123.4):
        idx, gaps, target = Q.draws(mix, Q.SIM_REQUESTS, rate, Q.TARGET_REQUESTS)
        rng = np.random.default_rng(Q.SEED)
        want_idx = rng.choice(len(mix.tokens), size=Q.SIM_REQUESTS, p=p)
        assert idx is first[0] and np.array_equal(idx, want_idx)  # kept, whatever the rate
        assert np.array_equal(gaps, rng.exponential(1.0 / rate, size=Q.SIM_REQUESTS))
        want = np.random.default_rng(Q.SEED + 1).exponential(1.0 / rate, size=Q.TARGET_REQUESTS)
        assert np.array_equal(target, want)


def test_the_p99_decided_by_counting_is_numpys_percentile():
    # the bandwidth search decides "p99 share <= target" by counting when the 99th
    # percentile's order statistics lie clearly on one side, else asks np.percentile
    from kvmodel.traffic.queue import p99_within

    rng = np.random.default_rng(7)
    for n in (4, 5, 101, 20_000):
        values = rng.random(n)
        p99 = float(np.percentile(values, 99))
        ranked = np.sort(values)
        for limit in (*ranked[-6:], p99, np.nextafter(p99, 0), np.nextafter(p99, 1), 0.5, 2.0):
            decided = p99_within(values, float(limit))
            assert decided is None or decided == (p99 <= limit)
        assert p99_within(values, 2.0) is True and p99_within(values, -1.0) is False
    with_nan = np.array([0.1, 0.2, np.nan, 0.3, 0.4])
    assert p99_within(with_nan, 1.0) is None  # numpy gives NaN: computed, not counted


def test_percentiles_are_numpys_to_the_bit():
    # the link queue's p50/p90/p99 come from order statistics found without partitioning
    # every value and numpy's own interpolation between them: np.percentile's numbers
    from kvmodel.traffic.queue import order_stats, percentiles, waits_after

    rng = np.random.default_rng(11)
    n = 200_000
    cases = [
        rng.random(n),
        np.round(rng.exponential(1.0, n), 2),  # many ties
        waits_after(rng.exponential(0.01, n), rng.exponential(0.0105, n)),  # a busy queue's waits
        np.sort(rng.random(n))[::-1].copy(),  # in order: the sample is too
        np.zeros(n),
        rng.random(1000),  # few values: np.percentile itself
    ]
    for values in cases:
        for qs in ((50, 90, 99), (99,), (0, 100), (12.5,)):
            want = [float(v) for v in np.atleast_1d(np.percentile(values, qs))]
            assert percentiles(values, qs) == want
        ranks = [0, 1, len(values) // 2, len(values) - 2, len(values) - 1]
        ordered = np.sort(values)
        assert order_stats(values, ranks) == {r: float(ordered[r]) for r in ranks}
    with_nan = rng.random(n)
    with_nan[5] = np.nan
    assert np.isnan(percentiles(with_nan, (50,))[0])  # numpy's answer: NaN


def test_the_bandwidth_search_is_the_plain_search():
    # the search shares its volume and gathers between tries (and rates) and counts instead
    # of partitioning: the same bandwidth as trying each bandwidth on a scenario of its own
    # with np.percentile
    from dataclasses import replace

    from kvmodel.traffic import queue as Q
    from kvmodel.traffic.analysis import per_length

    def plain(sc, mix, rate, idx, gaps):
        def at(bw):
            s = replace(sc, link=replace(sc.link, bandwidth_bytes_per_s=bw))
            _, inverse, exposed, prefill, _, whole = per_length(s, mix.tokens, prefix=mix.prefix)
            w = mix.weights / mix.weights.sum()
            if rate * float((w * whole[inverse]).sum()) >= 1:
                return float("inf")
            s_ = np.concatenate(([0.0], np.cumsum(whole[inverse][idx][:-1] - gaps[:-1])))
            total = np.maximum(s_ - np.minimum.accumulate(s_), 0.0) + exposed[inverse][idx]
            share = total / (prefill[inverse][idx] + total + s.decode_step_s)
            return float(np.percentile(share, 99))

        lo, hi = 1e6, 1e15
        if at(hi) > sc.share_target:
            return None
        for _ in range(60):
            mid = (lo * hi) ** 0.5
            lo, hi = (lo, mid) if at(mid) <= sc.share_target else (mid, hi)
            if hi / lo < 1.01:
                break
        return hi

    for tokens in ([500, 1000, 1000, 3000, 8000], [100, 200, 30000]):
        mix = mix_from_requests(requests_like(tokens))
        for rate in (0.5, 5.0, 40.0):
            idx, _, gaps = Q.draws(mix, Q.SIM_REQUESTS, rate, Q.TARGET_REQUESTS)
            want = plain(SC, mix, rate, idx[: Q.TARGET_REQUESTS], gaps)
            assert Q.bandwidth_for_target(SC, mix, rate) == want
            assert load(SC, mix, rps=rate).bandwidth_for_target_bytes_per_s == want
