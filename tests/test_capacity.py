"""kvmodel.capacity: the plan, the rate sweep, and the properties the issue asks for."""

import math
from dataclasses import replace

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity import (
    SWEEP_COLUMNS,
    Slo,
    Workload,
    disaggregated_ttft_s,
    plan,
    rate_sweep,
    tp_candidates,
)
from kvmodel.traffic import load_traffic, sample_path

SC = scenario_from_inputs({"stack": "ideal"})  # Llama-3.1-70B, H100, 100 GbE
MOONCAKE = scenario_from_inputs({})  # the app's defaults: the Mooncake stack
CODE = Workload.from_requests(load_traffic(sample_path("azure-code")))
FAST = settings(max_examples=20, deadline=None)


def test_hand_case_plan():
    # tests/test_capacity_pools.py's hand case at 5/s, TTFT 150 ms p90, TPOT 15 ms (the TTFT
    # carries vLLM's 37.7 ms per request since session 8; one instance's p90 is 162 ms, two
    # 133 ms): 2 prefill instances (ttft), 1 decode instance (tpot), TP 8 each -> 24 GPUs
    p = plan(SC, Workload.fixed(5, 1024, 256), Slo(0.15, 0.015), prefill_tp=8, decode_tp=8)
    assert (p.prefill_instances, p.decode_instances) == (2, 1)
    assert (p.prefill_gpus, p.decode_gpus, p.disaggregated_gpus) == (16, 8, 24)
    assert p.pd_ratio == 2.0
    assert p.limits == {"prefill": "ttft", "decode": "tpot", "colocated": p.limits["colocated"]}
    assert p.meets_slo and p.ttft_s <= 0.15
    # colocated at TP 8 misses TPOT 15 ms at any size (16.9 ms): no saving is counted against
    # it; no TP up to 64 meets both targets colocated, so no nearest is shown
    assert not p.colocated_feasible and p.disaggregated_feasible
    assert p.disaggregation_saves_gpus is None
    assert p.colocated_nearest is None or (
        p.colocated_nearest.tpot_s <= 0.015 and p.colocated_nearest.ttft_s <= 0.15
    )
    # 5/s × 335.5 MB = 1.678 GB/s over the deployment
    assert p.demanded_bytes_per_s == pytest.approx(5 * 335_544_320)
    # the busier side is the one decode instance's 8 NICs: 5/s × 3.359 ms = 1.68 % busy
    assert p.link_utilization == pytest.approx(5 * 3.3594e-3, rel=1e-3)


def test_price_gives_the_cost_per_hour():
    p = plan(SC, Workload.fixed(5, 1024, 256), Slo(0.15, 0.015), prefill_tp=8, decode_tp=8,
             gpu_price_per_hour=2.5)  # fmt: skip
    assert p.cost_per_hour == 24 * 2.5 and p.colocated_cost_per_hour == p.colocated_gpus * 2.5
    assert plan(SC, Workload.fixed(5, 1024, 256), Slo(0.25, 0.015)).cost_per_hour is None


def _on(sc, bandwidth):
    return replace(sc, link=replace(sc.link, bandwidth_bytes_per_s=bandwidth))


def test_nic_bandwidth_needed_meets_the_target_at_both_ends():
    w, slo = Workload.fixed(20, 8192, 256), Slo(2.0, 0.05)
    p = plan(SC, w, slo, prefill_tp=8, decode_tp=8)
    bw = p.nic_bandwidth_needed_bytes_per_s
    assert bw is not None and bw < SC.link.bandwidth_bytes_per_s
    kw = dict(prefill_tp=8, decode_tp=8, prefill_instances=p.prefill_instances)
    assert disaggregated_ttft_s(_on(SC, bw), w, slo, **kw) <= slo.ttft_s  # sending end
    slower = plan(_on(SC, bw / 1.05), w, slo, prefill_tp=8, decode_tp=8)
    # below the need these pools no longer do
    assert slower.disaggregated_gpus > p.disaggregated_gpus or not slower.meets_slo


# Issue 24 item 3: the need ignored the decode NICs' receiving load.  Llama-3.1-70B (app
# defaults: Mooncake, TPs searched) at 40 requests/s of 2,000 → 300 tokens on 100 GbE
# (12.5 GB/s per NIC): one decode instance whose NICs are 35.8 % busy, i.e. receiving
# 0.358 × 12.5 = 4.47 GB/s; kept at most 80 % busy (RECEIVER_UTILIZATION) they need
# 4.47 / 0.8 = 5.6 GB/s.  The sending end alone (the old answer) needs 2.15 GB/s: a plan on a
# link of that speed needs more decode GPUs than the page's plan.
ISSUE_WL, ISSUE_SLO = Workload.fixed(40, 2000, 300), Slo(2.0, 0.05)


def test_nic_need_counts_the_receiving_decode_nics(monkeypatch):
    import sys

    p = plan(scenario_from_inputs({"link": "100gbe"}), ISSUE_WL, ISSUE_SLO)
    # 30 GPUs (28 before session 18: a TP 2 prefill's all-reduces past 8 MiB run at NCCL's
    # measured 0.60 of NVLink 4, not 0.75, so 11 prefill instances instead of 10)
    assert p.decode_instances == 1 and p.disaggregated_gpus == 30
    assert p.link_utilization == pytest.approx(0.358, abs=1e-3)
    need = p.nic_bandwidth_needed_bytes_per_s
    assert need == pytest.approx(p.link_utilization * 12.5e9 / 0.8, rel=0.02)  # 5.6 GB/s
    # the sending end alone (the receivers' check switched off) asked for far less
    module = sys.modules["kvmodel.capacity.plan"]
    monkeypatch.setattr(module, "decode_receivers", lambda *a: 1)
    sending = plan(scenario_from_inputs({"link": "100gbe"}), ISSUE_WL, ISSUE_SLO)
    assert sending.nic_bandwidth_needed_bytes_per_s < need / 2  # 2.15 GB/s
    monkeypatch.undo()
    at_old = plan(_on(scenario_from_inputs({"link": "100gbe"}), 2.2e9), ISSUE_WL, ISSUE_SLO)
    assert at_old.decode_gpus > p.decode_gpus or not at_old.meets_slo


@pytest.mark.parametrize("link", ["25gbe", "100gbe"])
def test_a_plan_on_a_link_of_the_needed_speed_keeps_its_gpus(link):
    # the page's "needs X per NIC" agrees with the CLI's plan on a link of that speed: the
    # same pools at X, more GPUs (or a missed target) 3 % below it
    sc = scenario_from_inputs({"link": link})
    p = plan(sc, ISSUE_WL, ISSUE_SLO)
    need = p.nic_bandwidth_needed_bytes_per_s
    at = plan(_on(sc, need * 1.0001), ISSUE_WL, ISSUE_SLO)
    assert (at.prefill_instances, at.decode_instances, at.disaggregated_gpus) == (
        p.prefill_instances, p.decode_instances, p.disaggregated_gpus)  # fmt: skip
    below = plan(_on(sc, need / 1.03), ISSUE_WL, ISSUE_SLO)
    assert below.disaggregated_gpus > p.disaggregated_gpus or not below.meets_slo


def test_impossible_targets_say_why():
    p = plan(SC, Workload.fixed(5, 1024, 256), Slo(0.05, 0.005), prefill_tp=8, decode_tp=8)
    assert not p.meets_slo and not p.colocated_meets_slo
    assert p.limits["prefill"] == "ttft" and p.limits["decode"] == "tpot"
    assert any("TPOT" in n for n in p.notes) and any("TTFT" in n for n in p.notes)
    assert p.prefill_instances >= 1 and p.decode_instances >= 1


def test_auto_tp_needs_no_more_gpus_than_any_fixed_tp():
    w, slo = Workload.fixed(8, 2048, 256), Slo(1.0, 0.04)
    auto = plan(MOONCAKE, w, slo)
    assert auto.prefill_tp in tp_candidates(MOONCAKE) and auto.meets_slo
    for tp in tp_candidates(MOONCAKE):
        fixed = plan(MOONCAKE, w, slo, prefill_tp=tp, decode_tp=tp)
        assert not fixed.meets_slo or auto.disaggregated_gpus <= fixed.disaggregated_gpus
        assert not fixed.colocated_meets_slo or auto.colocated_gpus <= fixed.colocated_gpus


def test_tp_candidates_skip_what_does_not_fit_and_stay_in_a_node():
    # Llama-3.1-70B BF16 = 141.2 GB: TP 1 exceeds 72 GB usable, TP 2 holds 70.6 GB per GPU;
    # TP 16 would span two 8-GPU nodes
    assert tp_candidates(SC) == (2, 4, 8)
    # DeepSeek-V3 (671 GB FP8) fits no 8-GPU H100 node (576 GB usable): TP 16 and up
    big = scenario_from_inputs({"model": "deepseek-v3"})
    assert tp_candidates(big)[0] == 16


def test_rate_sweep_rows_match_single_plans():
    slo = Slo(2.0, 0.05)
    df = rate_sweep(SC, CODE, slo, [1, 4, 16], prefill_tp=8, decode_tp=8)
    assert tuple(df.columns) == SWEEP_COLUMNS and len(df) == 3
    one = plan(SC, CODE.with_rps(4), slo, prefill_tp=8, decode_tp=8)
    row = df.iloc[1]
    assert row.disaggregated_gpus == one.disaggregated_gpus
    assert row.colocated_gpus == one.colocated_gpus
    assert row.ttft_s == pytest.approx(one.ttft_s, rel=1e-12)
    with pytest.raises(ValueError, match="rate"):
        rate_sweep(SC, CODE, slo, [1, 0])
    priced = rate_sweep(SC, CODE, slo, [4, 1], prefill_tp=8, decode_tp=8, gpu_price_per_hour=3)
    assert list(priced.rps) == [4, 1]  # the caller's order, though sized rising
    assert list(priced.cost_per_hour) == list(priced.disaggregated_gpus * 3)
    assert priced.disaggregated_gpus.iloc[0] == one.disaggregated_gpus


# --- properties (the issue's "done when") ---

rates = st.floats(0.05, 60.0)
lengths = st.integers(64, 16_384)


@FAST
@given(r1=rates, r2=rates, seq=lengths, out=st.integers(1, 2048), tpot=st.floats(0.01, 0.2))
def test_more_traffic_never_needs_fewer_gpus(r1, r2, seq, out, tpot):
    lo, hi = sorted((r1, r2))
    slo = Slo(2.0, tpot)
    a = plan(SC, Workload.fixed(lo, seq, out), slo, prefill_tp=8, decode_tp=8)
    b = plan(SC, Workload.fixed(hi, seq, out), slo, prefill_tp=8, decode_tp=8)
    assert b.prefill_gpus >= a.prefill_gpus and b.decode_gpus >= a.decode_gpus
    assert b.colocated_gpus >= a.colocated_gpus


@settings(max_examples=8, deadline=None)
@given(r1=st.floats(0.1, 40.0), r2=st.floats(0.1, 40.0))
def test_more_traffic_never_needs_fewer_gpus_auto_tp_real_trace(r1, r2):
    lo, hi = sorted((r1, r2))
    df = rate_sweep(MOONCAKE, CODE, Slo(1.5, 0.04), [lo, hi])
    assert df.disaggregated_gpus.iloc[1] >= df.disaggregated_gpus.iloc[0]
    assert df.colocated_gpus.iloc[1] >= df.colocated_gpus.iloc[0]


@FAST
@given(t1=st.floats(0.005, 0.3), t2=st.floats(0.005, 0.3), rps=rates, seq=lengths)
def test_tighter_tpot_never_needs_fewer_decode_gpus(t1, t2, rps, seq):
    tight, loose = sorted((t1, t2))
    w = Workload.fixed(rps, seq, 256)
    a = plan(SC, w, Slo(2.0, tight), prefill_tp=8, decode_tp=4)
    b = plan(SC, w, Slo(2.0, loose), prefill_tp=8, decode_tp=4)
    assert a.decode_gpus >= b.decode_gpus


@settings(max_examples=6, deadline=None)
@given(t1=st.floats(0.01, 0.2), t2=st.floats(0.01, 0.2))
def test_tighter_tpot_never_needs_fewer_gpus_auto_tp(t1, t2):
    # with TP searched the split may move; the total never falls
    tight, loose = sorted((t1, t2))
    w = Workload.fixed(10, 2048, 256)
    assert (
        plan(SC, w, Slo(2.0, tight)).disaggregated_gpus
        >= plan(SC, w, Slo(2.0, loose)).disaggregated_gpus
    )


@FAST
@given(b1=st.floats(0.05, 100.0), b2=st.floats(0.05, 100.0), rps=rates, seq=lengths,
       n=st.integers(1, 64))  # fmt: skip
def test_slower_link_never_lowers_the_ttft_percentile(b1, b2, rps, seq, n):
    slow, fast = sorted((b1, b2))
    w, slo = Workload.fixed(rps, seq, 256), Slo(2.0, 0.05)

    def ttft(gbs):
        sc = replace(MOONCAKE, link=replace(MOONCAKE.link, bandwidth_bytes_per_s=gbs * 1e9))
        return disaggregated_ttft_s(sc, w, slo, prefill_tp=8, decode_tp=8, prefill_instances=n)

    a, b = ttft(slow), ttft(fast)
    assert a >= b or (math.isinf(a) and math.isinf(b))


@FAST
@given(b1=st.floats(0.05, 100.0), b2=st.floats(0.05, 100.0), rps=rates)
@example(b1=0.125, b2=0.0625, rps=1.0)  # session 21: the slower link's plan meets nothing
def test_slower_link_never_needs_fewer_gpus(b1, b2, rps):
    slow, fast = sorted((b1, b2))
    w, slo = Workload.fixed(rps, 4096, 256), Slo(2.0, 0.05)

    def gpus(gbs):
        # a plan that meets no target at any size needs more than any count: its GPU count is
        # where the search stopped (0.0625 GB/s at 1 req/s: 56, beside 88 at 0.125 GB/s)
        sc = replace(SC, link=replace(SC.link, bandwidth_bytes_per_s=gbs * 1e9))
        p = plan(sc, w, slo, prefill_tp=8, decode_tp=8)
        return p.disaggregated_gpus if p.disaggregated_feasible else math.inf

    assert gpus(slow) >= gpus(fast)


def test_scale_up_link_beyond_one_domain_is_noted():
    # NVLink 4 joins 8 H100s; 20 requests/s of 8,000 tokens need more than one domain
    sc = scenario_from_inputs({"link": "nvlink4"})
    p = plan(sc, Workload.fixed(20, 8000, 256), Slo(2.0, 0.05), prefill_tp=8, decode_tp=8)
    assert p.disaggregated_gpus > 8
    assert any("joins at most 8 GPUs" in n for n in p.notes)


def test_what_does_not_fit_in_memory_is_named():
    # Llama-3.1-70B BF16 at TP 2: 70.6 GB of weights per GPU leave 1.4 GB, less than one
    # 20,000-token request's KV (20,000 × 327,680 B / 2 = 3.3 GB per GPU)
    p = plan(SC, Workload.fixed(1, 20_000, 256), Slo(5.0, 0.05), prefill_tp=2, decode_tp=2)
    assert p.limits == {"prefill": "memory", "decode": "memory", "colocated": "memory"}
    assert not p.meets_slo and p.colocated_gpus == 0 and p.disaggregation_saves_gpus is None
    assert any("cannot hold" in n for n in p.notes)


# --- TP searched: what the search picks when nothing meets, and what it says of the split ---

CONV = load_traffic(sample_path("azure-conv"), per_request=True)


def test_when_no_tp_meets_the_tpot_the_plan_is_the_nearest_miss():
    # Qwen3-235B-A22B on H200, 5 requests/s: one decode step at TP 8 takes 7.84 ms at the
    # smallest batch (session 8's MoE read efficiency, 0.7; it was 8.27 ms at 0.42 and 9.46 ms
    # before issue 21).  At 8 ms TP 8 meets (9 instances, 72 decode GPUs).  At 7.5 ms nothing
    # meets: the plan shows TP 8, the nearest miss, not a smaller, slower pool at TP 4, so the
    # decode pool does not shrink.
    sc = scenario_from_inputs({"model": "qwen3-235b-a22b", "gpu": "h200"})
    w = Workload.from_requests(CONV, rps=5.0, output_len=256)
    met = plan(sc, w, Slo(1.0, 0.008))
    missed = plan(sc, w, Slo(1.0, 0.0075))
    assert met.meets_slo and (met.decode_tp, met.decode_gpus) == (8, 72)
    assert not missed.meets_slo and missed.decode_tp == 8
    assert missed.decode_gpus >= met.decode_gpus
    assert missed.tpot_s == pytest.approx(0.00784, rel=1e-2) and missed.tpot_s > 0.0075


def test_a_split_with_fewer_decode_gpus_but_more_in_all_is_named():
    # Qwen3-32B on H100, 100 requests/s, TPOT 13.5 ms: the searched plan (decode TP 4, 16
    # decode GPUs, 29 in all, 12 and 24 before session 8's refit kernel floor: a prefill pass
    # shares the weights read, pools.pass_fixed_s; 28 before session 18's counted activation
    # passes, whose refit per-layer floor a short prompt's pass pays) is
    # checked against every fixed TP pair: a note names a pair that
    # meets with fewer decode GPUs but more in all, and only then.  (Issue 21's step model
    # moved the earlier case, 200/s at 12 ms, where TP 8 had 24 decode GPUs against 36; no
    # such split shows on this workload now: TODO find a case where the note appears.)
    sc = scenario_from_inputs({"model": "qwen3-32b", "gpu": "h100-sxm"})
    w, slo = Workload.from_requests(CONV, rps=100.0, output_len=256), Slo(1.0, 0.0135)
    p = plan(sc, w, slo)
    assert p.meets_slo and (p.decode_tp, p.decode_gpus, p.disaggregated_gpus) == (4, 16, 29)
    fewer = [
        q for tp in (1, 2, 4, 8) for tpd in (1, 2, 4, 8)
        if (q := plan(sc, w, slo, prefill_tp=tp, decode_tp=tpd)).meets_slo
        and q.decode_gpus < p.decode_gpus
    ]  # fmt: skip
    named = [n for n in p.notes if "instead of" in n]
    assert bool(named) == bool(fewer), (named, [(q.decode_tp, q.decode_gpus) for q in fewer])
