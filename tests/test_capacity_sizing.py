"""kvmodel.capacity.Sizing and sweep_rates: one sizing serves every rate a dashboard draws, and
looking a rate up, or sizing the rates in any order, gives exactly the plan sized alone."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity import Sizing, Slo, Workload, plan, rate_sweep, sweep_rates
from kvmodel.capacity import prep as capacity_prep
from kvmodel.capacity.queue import percentile, remembered, sum_percentile, wait_at
from kvmodel.traffic import load_traffic, sample_path

SC = scenario_from_inputs({})  # the app's defaults: Llama-3.1-70B, H100, 100 GbE, Mooncake
CODE = Workload.from_requests(load_traffic(sample_path("azure-code")))
SLO = Slo(1.5, 0.04)


def test_sweep_rates_sit_on_a_fixed_grid():
    # 10 requests/s is on the grid (10^(12/12)): 1 … 100 in 24 steps of 10^(1/12) = 1.2115×
    r = sweep_rates(10.0)
    assert len(r) == 25 and r[0] == pytest.approx(1.0) and r[-1] == pytest.approx(100.0)
    assert r[12] == pytest.approx(10.0)
    assert np.allclose(np.diff(np.log10(r)), 1 / 12)
    # 40/s is not: 10^(7/12) = 3.831 (below 4) … 10^(32/12) = 464.2 (above 400), 26 rates
    r40 = sweep_rates(40.0)
    assert len(r40) == 26
    assert r40[0] == pytest.approx(3.8312, rel=1e-4) and r40[-1] == pytest.approx(464.16, rel=1e-4)
    assert r40[0] <= 4.0 and r40[-1] >= 400.0
    # a nearby rate draws the same rates but one at each end: a Sizing sizes only those
    assert len(set(r40) & set(sweep_rates(41.0))) == 26
    assert len(set(r40) & set(sweep_rates(47.0))) == 25
    for bad in (0, -1, math.inf, math.nan, True):
        with pytest.raises(ValueError, match="rate"):
            sweep_rates(bad)


def test_a_sizing_gives_the_plan_sized_alone():
    # the workload's own rate is ignored (with_rps renormalises the weights: made alike)
    sizing = Sizing(SC, CODE.with_rps(1.0), SLO, gpu_price_per_hour=2.0)
    for rps in (3.0, 40.0, 0.7):
        alone = plan(SC, CODE.with_rps(rps), SLO, gpu_price_per_hour=2.0)
        assert sizing.plan(rps) == alone
    assert sizing.plan(40.0) is sizing.plan(40.0)  # looked up, not sized again
    with pytest.raises(ValueError, match="rate"):
        sizing.plan(0)


@settings(max_examples=6, deadline=None)
@given(rates=st.lists(st.floats(0.2, 80.0), min_size=2, max_size=6),
       ttft=st.floats(0.4, 3.0))  # fmt: skip
def test_rates_in_any_order_give_the_plans_sized_alone(rates, ttft):
    """A sizing's searches start from the results at lower rates sized earlier (in any order)
    and prune with them: the answer must not depend on what was sized before."""
    slo = Slo(ttft, 0.04)
    sizing = Sizing(SC, CODE, slo)
    got = [sizing.plan(r, network=False) for r in rates]
    for r, p in zip(rates, got, strict=True):
        alone = Sizing(SC, CODE, slo).plan(r, network=False)
        assert (p.prefill_gpus, p.decode_gpus, p.colocated_gpus) == (
            alone.prefill_gpus, alone.decode_gpus, alone.colocated_gpus)  # fmt: skip
        assert p.ttft_s == alone.ttft_s


def test_sweep_rows_are_the_sizings_plans():
    sizing = Sizing(SC, CODE, SLO)
    rates = sweep_rates(5.0)
    df = sizing.sweep(rates)
    assert list(df.rps) == list(rates)
    for i in (0, 12, len(rates) - 1):
        p = sizing.plan(rates[i], network=False)
        assert df.disaggregated_gpus.iloc[i] == p.disaggregated_gpus
        assert df.colocated_gpus.iloc[i] == p.colocated_gpus
    assert df.equals(rate_sweep(SC, CODE, SLO, rates))


def test_a_new_target_reuses_the_rate_free_basis():
    """What depends on neither the targets nor the rate (shape, prefill sides) is kept for the
    last few (scenario, workload) pairs: a new TTFT target does not recompute it."""
    a = Sizing(SC, CODE, Slo(1.0, 0.04))
    b = Sizing(SC, CODE, Slo(2.0, 0.04))
    assert a._prep.basis is b._prep.basis
    other = Workload.fixed(1.0, 2048, 256)
    for k in range(capacity_prep.BASES + 1):
        Sizing(scenario_from_inputs({"batch": k + 2}), other, SLO)  # other keys push it out
    assert Sizing(SC, CODE, SLO)._prep.basis is not a._prep.basis
    assert capacity_prep.kept_bases() <= capacity_prep.BASES


@settings(max_examples=6, deadline=None)
@given(targets=st.lists(st.tuples(st.floats(0.3, 3.0), st.sampled_from([0.03, 0.04, 0.06]),
                                  st.sampled_from([2.0, 4.0, 4.4, 30.0])),
                        min_size=2, max_size=4),
       q=st.sampled_from([90.0, 99.0]))  # fmt: skip
def test_targets_tried_one_after_another_give_the_plans_of_a_fresh_basis(targets, q):
    """What the basis keeps for every TTFT target (each pair's and colocated shape's TTFT
    percentile by instances at a rate, their floors, the NIC search's prefill sides, the sizes
    found at other targets when the search gives them again, the sweep's plans and frames of
    the same sizes, the steps by batch of each TPOT target's search): a target tried after
    others gives exactly the plans and the sweep it gives alone, with nothing kept."""
    got = []
    for ttft, tpot, rate in targets:
        sizing = Sizing(SC, CODE, Slo(ttft, tpot, ttft_percentile=q))
        got.append((sizing.plan(rate), sizing.sweep(sweep_rates(rate))))
    for (ttft, tpot, rate), (p, sweep) in zip(targets, got, strict=True):
        capacity_prep.clear_bases()
        alone = Sizing(SC, CODE, Slo(ttft, tpot, ttft_percentile=q))
        assert p == alone.plan(rate)  # every field, the NIC bandwidth needed included
        assert sweep.equals(alone.sweep(sweep_rates(rate)))


def test_a_new_ttft_target_that_changes_no_size_gives_the_same_sweep_object():
    """A target that leaves every rate's sizes as they were (a few ms more) gives the same plan
    objects and the same frame: a page draws its charts from it by a lookup."""
    rates = sweep_rates(5.0)
    a = Sizing(SC, CODE, Slo(1.500, 0.06)).sweep(rates)
    b = Sizing(SC, CODE, Slo(1.5001, 0.06)).sweep(rates)
    assert b is a
    c = Sizing(SC, CODE, Slo(0.4, 0.06)).sweep(rates)  # a much tighter one changes sizes
    assert c is not a and not c.equals(a)


def test_a_kept_basis_does_not_keep_its_workload_alive():
    import gc
    import weakref

    w = Workload.fixed(1.0, 4096, 128)
    Sizing(SC, w, SLO).plan(2.0)
    gone = weakref.ref(w)
    del w
    gc.collect()
    assert gone() is None  # a 10-million-request workload is freed with its last user
    # a new workload that reuses the dead one's id is a new basis, not the old one's
    w2 = Workload.fixed(1.0, 512, 64)
    assert Sizing(SC, w2, SLO)._prep.shp.mean_moved == 512


def test_a_sizing_forgets_beyond_its_rate_limit():
    sizing = Sizing(SC, Workload.fixed(1.0, 1024, 128), SLO, prefill_tp=8, decode_tp=8)
    sizing.MAX_RATES = 3
    first = sizing.plan(1.0, network=False)
    for r in (2.0, 3.0, 4.0):
        sizing.plan(r, network=False)
    assert len(sizing._plans) == 1  # cleared at the limit, then the newest kept
    assert sizing.plan(1.0, network=False) == first and sizing.plan(1.0) is not first
    assert sizing.nbytes > 0


def test_sum_percentile_is_the_percentile_of_the_sum_exactly():
    rng = np.random.default_rng(7)
    tails = -np.log1p(-rng.random((2, 4096)))
    base = rng.random(4096) * 0.3
    cases = [
        [],
        [(tails[0], 4, 2.5, 0.2, 1.3)],
        [(tails[0], 4, 2.5, 0.2, 1.3), (tails[1], 1, 0.4, 0.01, 0.0)],
        [(tails[0], 4, 0.0, 0.2, 1.3), (tails[1], 1, 0.4, 0.01, 0.0)],  # no load: no wait
        [(tails[0], 3, 3.0, 0.2, 1.3)],  # unstable: infinite
    ]
    for queues in cases:
        for q in (50.0, 90.0, 99.0):
            total = base
            for tail, c, a, m, v in queues:
                total = total + wait_at(tail, c=c, a=a, mean_s=m, cs2=v)
            assert sum_percentile(base, q, queues) == percentile(total, q)  # not approx
    assert sum_percentile(base, 90.0, [(tails[0], 3, 3.0, 0.2, 1.3)]) == math.inf


def test_remembered_computes_each_value_once():
    calls = []

    @remembered
    def f(n):
        calls.append(n)
        return n * n

    assert [f(3), f(3), f(4), f(3)] == [9, 9, 16, 9] and calls == [3, 4]


def test_trace_rps_is_the_rate_from_timestamps():
    req = load_traffic(sample_path("azure-conv"))
    assert Workload.trace_rps(req) == pytest.approx(req.n_requests / req.span_s)
    assert Workload.from_requests(req).rps == Workload.trace_rps(req)


def test_network_plans_are_the_plan_on_each_link():
    # the conversation trace's lengths at 40 requests/s (README's worked plan): on 100 GbE 20
    # GPUs (16 prefill + 4 decode; 24 before issue 21's faster prefill); on 25 GbE the decode
    # instances' NICs would be over 80 % busy receiving, so decode grows to 12 GPUs, 28 in all
    from dataclasses import replace

    from kvmodel.capacity import NETWORK_COLUMNS, network_plans
    from kvmodel.catalog import get_link

    w = Workload.from_requests(load_traffic(sample_path("azure-conv")), rps=40.0)
    slo = Slo(2.0, 0.05)
    df = network_plans(SC, w, slo, ["nvlink4", "100gbe", "25gbe"])
    assert tuple(df.columns) == NETWORK_COLUMNS
    assert list(df.link) == ["100gbe", "nvlink4", "25gbe"]  # the scenario's own first, once
    for row in df.itertuples():  # each row is the plan on that link (numbers: the step model)
        p = plan(replace(SC, link=get_link(row.link)), w, slo)
        assert (row.disaggregated_gpus, row.decode_gpus) == (p.disaggregated_gpus, p.decode_gpus)
    assert df.decode_gpus.iloc[2] > df.decode_gpus.iloc[0]  # 25 GbE: the receiving NICs
    assert list(df.domain_gpus) == [0, 8, 0]  # NVLink 4 joins the 8 GPUs of a node
    slow = plan(replace(SC, link=get_link("25gbe")), w, slo)
    assert slow.limits["decode"] == "link" and slow.ttft_s == df.ttft_s.iloc[2]
    assert df.bandwidth_bytes_per_s.iloc[2] == 3.125e9  # 25 Gb/s = 3.125 GB/s per direction


def test_tpot_targets_that_make_the_same_decode_side_share_its_values(monkeypatch):
    """Two TPOT targets that make the same decode batch B* make the same decode side (by
    content), and share what is kept of it; past the bound the sides are made and numbered
    again (never a number twice): the plans stay those of a fresh basis."""
    a = Sizing(SC, CODE, Slo(1.5, 0.0600))
    b = Sizing(SC, CODE, Slo(1.5, 0.06001))
    assert all(a._prep.decodes[k] is b._prep.decodes[k] for k in a._prep.decodes)
    monkeypatch.setattr(capacity_prep, "VARIANTS", 3)
    got = []
    for tpot in (0.03, 0.04, 0.05, 0.06, 0.04):
        s = Sizing(SC, CODE, Slo(1.5, tpot))
        got.append((tpot, s.plan(4.0), s.sweep(sweep_rates(4.0))))
    for tpot, p, sweep in got:
        capacity_prep.clear_bases()
        alone = Sizing(SC, CODE, Slo(1.5, tpot))
        assert p == alone.plan(4.0) and sweep.equals(alone.sweep(sweep_rates(4.0)))
