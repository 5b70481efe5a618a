"""kvmodel.capacity.pools: decode batch and instances, prefill instances at the TTFT percentile.

Hand case: Llama-3.1-70B (70.6e9 parameters, BF16, 80 layers, 8 KV heads × 128, FP16 KV =
327,680 B per token) on H100 SXM (3.35 TB/s, 989 TFLOP/s BF16, 80 GB) at TP 8, 100 GbE
(12.5 GB/s, 4 µs) with the ideal stack, 8 NICs per instance; every request 1,024 prompt and
256 output tokens.
"""

import math
from functools import partial

import numpy as np
import pytest

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity.pools import (
    decode_side,
    mean_batch,
    prefill_side,
    size_pools,
    stable_rank_index,
)
from kvmodel.capacity.workload import Workload, shape
from kvmodel.timing import estimate_decode_step_s, estimate_prefill_s, prefill_parts

SC = scenario_from_inputs({"stack": "ideal"})
SHAPE = shape(Workload.fixed(5, 1024, 256), SC.model.max_context_tokens)


def test_decode_context_is_the_slots_mean():
    # a slot holds 1,024 prompt tokens plus on average half of the 256 outputs: 1,152
    assert SHAPE.decode_context == 1152


def test_decode_batch_is_the_largest_within_tpot():
    # The step is kvmodel.timing's (its parts are hand-checked in tests/test_steps.py and
    # tests/test_realistic.py): B* is the largest batch whose step at the 1,152-token context
    # stays within 15 ms.  (Issue 21's step model made the step longer at large batches: the
    # earlier hand-derived B* of 207 came from max(memory, compute) with 0.911 of HBM; session 8's
    # refit kernel floor, 43.7 µs a layer instead of 38.9, took it from 110 to 96.)
    step = partial(estimate_decode_step_s, SC.model, 1152, gpu=SC.gpu, tp=8, kv_dtype=SC.kv_dtype)
    d = decode_side(SC, SHAPE, 0.015, 8)
    within = [b for b in range(1, 1152) if step(b) <= 0.015]
    assert d.batch == max(within) == 96
    assert d.step_s == pytest.approx(float(step(96)))
    assert d.limit == "tpot" and d.feasible
    # memory: 80 GB·0.9 − 141.2 GB/8 = 54.35 GB per GPU; 1,152·327,680/8 B per request per GPU
    # = 47.19 MB -> 1,151 requests
    assert d.max_concurrent == 1151


def test_decode_limited_by_memory_when_tpot_is_loose():
    d = decode_side(SC, SHAPE, 0.5, 8)  # 500 ms: far more than 1,151 requests' step
    # 1,151 requests fit; the batch keeps room for its fluctuation (pools.memory_batch):
    # k² = (1024² + 1024·256 + 256²/3) / 1152² = 1.00411, √b = (−2.33k + √(2.33²k² + 4·1151)) / 2
    # = 32.781: b = 1,074 (by hand)
    assert d.batch == 1074 and d.limit == "memory" and d.max_concurrent == 1151


def test_decode_cannot_meet_a_tpot_below_one_step():
    d = decode_side(SC, SHAPE, 0.005, 8)  # one request's step is 11.7 ms
    assert not d.feasible and d.batch == 1 and "TPOT" in d.note


@pytest.mark.parametrize(
    "rps, decode_instances",
    [
        # Little's law: ⌈λ·256·step(96) / 96⌉, step(96) = 14.841 ms
        (10, 1),  # 10·256·0.014841/96 = 0.396
        (100, 4),  # 3.96
        (200, 8),  # 7.91
    ],
)
def test_decode_instances_by_littles_law(rps, decode_instances):
    pf, d = prefill_side(SC, SHAPE, 8, 8), decode_side(SC, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, rps, 60.0, 90)
    assert pools.decode_instances == decode_instances == math.ceil(rps * 256 * d.step_s / 96)
    assert pools.decode_limit == "tpot"


def test_prefill_and_transfer_times():
    # prefill = kvmodel.timing's parts at TP 8 (tests/test_transfer.py hand-computes them):
    # 68.74 ms, of which the per-layer kernel floor is 0.2746 ms × 80 = 21.97 ms (a 1,024-token
    # pass is longer than vLLM's 512-token prefill graphs: eager)
    pf = prefill_side(SC, SHAPE, 8, 8)
    pre = float(estimate_prefill_s(SC.model, 1024, 1, gpu=SC.gpu, tp=8))
    assert pf.prefill_s[0] == pytest.approx(pre) == pytest.approx(0.06874, rel=1e-3)
    # it occupies the instance for its work less a pass's fixed cost (the kernel floor, 0.2746
    # ms × 80 = 21.97 ms, and the weights read, which a pass of many prompts reads once), plus
    # its share of them: a TP-8 instance's pass carries 8 × 8,192 tokens
    # (pools.PREFILL_TOKENS_PER_GPU)
    parts = prefill_parts(SC.model, 1024, 1, gpu=SC.gpu, tp=8)
    fixed = float(parts.kernel_floor_s + parts.weights_read_s)
    assert float(parts.kernel_floor_s) == pytest.approx(0.2746e-3 * 80)
    assert pf.mean_s == pytest.approx(pre - fixed + fixed * 1024 / 65536, rel=1e-9)
    assert pf.mean_s == pytest.approx(0.04680, rel=1e-3)
    # transfer = 4 µs + 335,544,320 B / (12.5 GB/s · 8 NICs) = 3.3594 ms
    assert pf.whole_s[0] == pytest.approx(3.3594e-3, rel=1e-4)
    assert pf.cs2 == 0  # one length: deterministic service


@pytest.mark.parametrize(
    "slo_s, instances, ttft_s",
    [
        # work per request 46.80 ms; at 5/s a = 0.234 erlang.  One instance: P(W>0) = 0.234,
        # tail mean ½·0.04680/(1 − 0.234) = 30.5 ms, p90 wait ~26.7 ms; TTFT p90 = vLLM's
        # per-request cost 21.3 + 25.4 ms (data/frameworks.csv, P/D) + own pass 68.74 ms +
        # transfer 3.36 + first step 18.38 + 26.7 = 163.9 ms (158.2 before session 24's refit,
        # 18.5 + 19.2 ms and a 72.61 ms pass).  The first step:
        # 12.25 ms at the batch of 15.7 that 5 requests/s × 256 tokens keep on one instance,
        # after half a step in flight (busy: 1 − e^−15.7 ≈ 1): 1.5 × 12.25 = 18.38 ms
        (0.20, 1, 0.1639),
        # two instances: no wait at p90, TTFT = 46.7 + 68.74 + 3.36 + 18.38 = 137.18 ms
        (0.15, 2, 0.13718),
    ],
)
def test_prefill_instances_from_the_ttft_percentile(slo_s, instances, ttft_s):
    pf, d = prefill_side(SC, SHAPE, 8, 8), decode_side(SC, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, 5, slo_s, 90)
    assert pools.prefill_instances == instances
    assert pools.ttft_s == pytest.approx(ttft_s, rel=0.02)
    assert pools.prefill_limit == ("compute" if instances == 1 else "ttft")
    assert pools.meets_slo


def test_impossible_ttft_is_reported_not_searched_forever():
    pf, d = prefill_side(SC, SHAPE, 8, 8), decode_side(SC, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, 5, 0.05, 90)  # the request cost and prefill alone take 115 ms
    assert not pools.meets_slo and pools.prefill_limit == "ttft"
    assert any("TTFT target" in n for n in pools.notes)
    assert pools.prefill_instances == 1  # sized to 80 % load: ⌈0.291/0.8⌉


@pytest.mark.parametrize("tp", [1, 8, 32])
def test_a_prefill_pass_carries_tokens_per_gpu(tp):
    # issue 21: the pass budget is 8,192 tokens per GPU, so a TP-32 instance shares a pass's
    # fixed cost (the per-layer floor × 80 layers when none is given) among 262,144 tokens,
    # not 8,192: a 1,024-token prompt pays floor × 1,024 / (8,192·TP) of it
    from kvmodel.capacity.pools import PREFILL_TOKENS_PER_GPU, pass_tokens, prefill_work_s
    from kvmodel.timing import PREFILL_FLOOR_S_PER_LAYER

    assert PREFILL_TOKENS_PER_GPU == 8192 and pass_tokens(tp) == 8192 * tp
    work = prefill_work_s(SC.model, np.array([1024.0]), np.array([0.100]), tp)
    floor = PREFILL_FLOOR_S_PER_LAYER * 80
    assert work[0] == pytest.approx(0.100 - floor + floor * 1024 / (8192 * tp), rel=1e-9)
    # a given fixed cost (the weights read too, pools.pass_fixed_s) is shared the same way
    work = prefill_work_s(SC.model, np.array([1024.0]), np.array([0.100]), tp, np.array([0.05]))
    assert work[0] == pytest.approx(0.100 - 0.05 + 0.05 * 1024 / (8192 * tp), rel=1e-9)


def test_slow_link_adds_decode_instances_for_the_receiving_nics():
    # 0.1 GB/s per NIC: 335.5 MB / 0.8 GB/s = 0.42 s per transfer; at 5/s the receivers carry
    # 2.1 erlangs -> ⌈2.1/0.8⌉ = 3 decode instances (Little's law alone: 1)
    slow = scenario_from_inputs({"stack": "ideal", "link": "custom", "bw": 0.1, "lat": 4})
    pf, d = prefill_side(slow, SHAPE, 8, 8), decode_side(slow, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, 5, 60.0, 90)
    assert pools.decode_instances == 3 and pools.decode_limit == "link"


def test_mean_batch_is_littles_fixed_point():
    # steps 10, 12, 16 ms at batches 1, 2, 4; 150 tokens/s on one instance: b = 150·step(b)
    # crosses between 1 and 2: gaps 1 − 1.5 = −0.5, 2 − 1.8 = 0.2 -> b = 1 + 0.5/0.7 = 1.714,
    # and indeed 150·(10 + 0.714·2) ms = 1.714
    batches, steps = np.array([1.0, 2.0, 4.0]), np.array([0.010, 0.012, 0.016])
    assert mean_batch(batches, steps, 150, 1) == pytest.approx(1 + 0.5 / 0.7)
    assert mean_batch(batches, steps, 50, 1) == pytest.approx(0.5)  # under one request
    assert mean_batch(batches, steps, 1e6, 1) == 4.0  # saturated: the largest batch


def test_ttft_parts_add_up_to_the_percentile():
    # one length: every draw is the same request, so the parts are the hand case's own: vLLM's
    # 37.7 ms, prefill 72.61 ms, transfer 3.36 ms, and one instance's p90 wait 26.1 ms on top
    # (test_prefill_instances_from_the_ttft_percentile).  The first step: 5 req/s × 256 output
    # tokens on the one decode instance hold b = 1,280 × step(b) requests (Little's law):
    # b = 15.7, step 12.25 ms (its GEMMs pay Hopper's 64 tensor-core rows): the step TPOT
    # reports, not B*'s (14.84 ms at the 15 ms target), after half a step in flight (the
    # instance is busy: 1 − e^−15.7 ≈ 1)
    from kvmodel.capacity.pools import first_step_s, ttft_parts

    pf, d = prefill_side(SC, SHAPE, 8, 8), decode_side(SC, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, 5, 0.20, 90)
    parts = ttft_parts(pf, d, SHAPE, 90, pools.ttft_s, 5)
    assert parts.request_s == pytest.approx(21.3e-3 + 25.4e-3)
    assert parts.prefill_s == pytest.approx(0.06874, rel=1e-3)
    assert parts.transfer_s == pytest.approx(3.3594e-3, rel=1e-4)
    assert pools.decode_instances == 1
    assert pools.tpot_s == pytest.approx(12.25e-3, rel=1e-3)
    assert parts.first_step_s == pytest.approx(1.5 * pools.tpot_s, rel=1e-6)
    assert d.step_s == pytest.approx(14.84e-3, rel=1e-3)
    b = mean_batch(d.batches, d.steps_s, 5 * 256, 1)
    assert b == pytest.approx(1280 * pools.tpot_s, rel=1e-3)  # the fixed point
    # the first step never falls with the rate, and stops at B*'s step and half of one
    steps = [first_step_s(d, SHAPE, r) for r in (0.5, 5, 20, 1e4)]
    assert steps == sorted(steps) and steps[-1] == pytest.approx(1.5 * d.step_s)
    # the queue's share: the TTFT p90 less the unloaded p90 (26.7 ms), within 3 % of the one
    # queue's own p90 wait, 26.0 ms (test_prefill_instances_from_the_ttft_percentile)
    assert parts.queue_s == pytest.approx(0.0260, rel=0.03)
    assert float(parts.total_s) == pytest.approx(pools.ttft_s, rel=1e-12)


@pytest.mark.parametrize("kind", ["plain", "ties", "nan", "short"])
def test_stable_rank_index_is_the_stable_argsorts(kind):
    # the index a plan's TTFT parts are read at: the same as a stable sort's, ties included
    rng = np.random.default_rng(7)
    x = rng.random(10 if kind == "short" else 8192)
    if kind == "ties":
        x = np.round(x * 10) / 10
    if kind == "nan":
        x[rng.random(len(x)) < 0.2] = np.nan
    order = np.argsort(x, kind="stable")
    for r in (0, len(x) // 2, len(x) - 1, *rng.integers(0, len(x), 30).tolist()):
        assert stable_rank_index(x, int(r)) == int(order[r])


def test_memory_batch_by_hand():
    """pools.memory_batch: b + 2.33·k·√b ≤ N.  Fixed 1,024 + 256 tokens: k² = 1.00411 (above);
    N = 100: √b = (−2.3348 + √(5.4513 + 400)) / 2 = 8.9004, b = 79 (by hand).  One request
    that fits stays one; a shape without a second moment keeps N; none that fits stays 0."""
    from dataclasses import replace as dc_replace

    from kvmodel.capacity.pools import memory_batch

    assert memory_batch(100, SHAPE) == 79
    assert memory_batch(1, SHAPE) == 1 and memory_batch(2, SHAPE) == 1
    assert memory_batch(0, SHAPE) == 0
    assert memory_batch(100, dc_replace(SHAPE, decode_context_sq=0.0)) == 100
    # a spread of lengths (k > 1) leaves more room than fixed lengths
    wide = dc_replace(SHAPE, decode_context_sq=2.0 * SHAPE.decode_context**2)
    assert memory_batch(100, wide) < 79


def test_trtllm_reserves_the_whole_output_in_decode_memory():
    """TensorRT-LLM's GUARANTEED_NO_EVICT (data/frameworks.csv kv_admission) reserves prompt +
    output: a slot of 1,024 + 256 tokens takes 1,280 tokens instead of the 1,152 it holds on
    average with paged, on-demand KV (vLLM), so 1,151 × 1,152 / 1,280 ≈ 1,036 requests fit."""
    from dataclasses import replace as dc_replace

    from kvmodel.capacity.pools import memory_context

    trt = dc_replace(SC, framework="trtllm")
    assert memory_context(SC, SHAPE) == (1152, SHAPE.decode_context_sq)
    assert memory_context(trt, SHAPE) == (1280, pytest.approx(1280.0**2))
    d_v, d_t = decode_side(SC, SHAPE, 0.5, 8), decode_side(trt, SHAPE, 0.5, 8)
    assert d_v.max_concurrent == 1151
    assert abs(d_t.max_concurrent - 1151 * 1152 / 1280) <= 2
    assert d_t.batch < d_v.batch and d_t.limit == "memory"


def test_framework_kv_admission_is_checked():
    from kvmodel.frameworks import FrameworkSpec

    with pytest.raises(ValueError, match="kv_admission must be one of on_demand, reserve_output"):
        FrameworkSpec("x", "X", 0.0, 0.0, kv_admission="lazy")
