"""kvmodel.capacity.pools: decode batch and instances, prefill instances at the TTFT percentile.

Hand case: Llama-3.1-70B (70.6e9 parameters, BF16, 80 layers, 8 KV heads × 128, FP16 KV =
327,680 B per token) on H100 SXM (3.35 TB/s, 989 TFLOP/s BF16, 80 GB) at TP 8, 100 GbE
(12.5 GB/s, 4 µs) with the ideal stack, 8 NICs per instance; every request 1,024 prompt and
256 output tokens.
"""

import numpy as np
import pytest

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity.pools import decode_side, mean_batch, prefill_side, size_pools
from kvmodel.capacity.workload import Workload, shape

SC = scenario_from_inputs({"stack": "ideal"})
SHAPE = shape(Workload.fixed(5, 1024, 256), SC.model.max_context_tokens)


def test_decode_context_is_the_slots_mean():
    # a slot holds 1,024 prompt tokens plus on average half of the 256 outputs: 1,152
    assert SHAPE.decode_context == 1152


def test_decode_batch_is_the_largest_within_tpot():
    # step(B) = floors 57.3 µs·80 + all-reduce 17.8 µs·80 = 6.008 ms
    #         + max(memory, compute), memory = (141.2e9 B + B·1,152·327,680 B) / (3.35e12·8·0.911)
    #         = 5.7834 ms + B·15.4614 µs; compute = 2·70.6e9·B / (989e12·8·0.5) = B·35.69 µs
    # (memory binds up to B = 285).  step ≤ 15 ms  ->  B ≤ (15 − 11.7914) / 0.0154614 = 207.5
    d = decode_side(SC, SHAPE, 0.015, 8)
    assert d.batch == 207
    assert d.step_s == pytest.approx(6.008e-3 + 5.7834e-3 + 207 * 15.4614e-6, rel=2e-4)
    assert d.limit == "tpot" and d.feasible
    # memory: 80 GB·0.9 − 141.2 GB/8 = 54.35 GB per GPU; 1,152·327,680/8 B per request per GPU
    # = 47.19 MB -> 1,151 requests
    assert d.max_concurrent == 1151


def test_decode_limited_by_memory_when_tpot_is_loose():
    d = decode_side(SC, SHAPE, 0.5, 8)  # 500 ms: far more than 1,151 requests' step
    assert d.batch == 1151 and d.limit == "memory"


def test_decode_cannot_meet_a_tpot_below_one_step():
    d = decode_side(SC, SHAPE, 0.005, 8)  # one request's step is 11.8 ms
    assert not d.feasible and d.batch == 1 and "TPOT" in d.note


@pytest.mark.parametrize(
    "rps, decode_instances",
    [
        # Little's law: ⌈λ·256·step(207) / 207⌉, step(207) = 14.992 ms
        (10, 1),  # 10·256·0.014992/207 = 0.185
        (100, 2),  # 1.854
        (200, 4),  # 3.708
    ],
)
def test_decode_instances_by_littles_law(rps, decode_instances):
    pf, d = prefill_side(SC, SHAPE, 8, 8), decode_side(SC, SHAPE, 0.015, 8)
    pools = size_pools(pf, d, SHAPE, rps, 60.0, 90)
    assert pools.decode_instances == decode_instances
    assert pools.decode_limit == "tpot"


def test_prefill_and_transfer_times():
    # prefill = 0.542 ms·80 + FLOPs / (989e12·8·0.5·8^−0.214), FLOPs = 2·70.6e9·1,024
    # + 80·4·64·128·(1,024·1,025/2) = 1.45965e14 -> 43.36 ms + 57.58 ms = 100.94 ms
    pf = prefill_side(SC, SHAPE, 8, 8)
    assert pf.prefill_s[0] == pytest.approx(0.10094, rel=1e-3)
    # it occupies the instance for 57.58 ms + 43.36 ms × 1,024/65,536 = 58.26 ms: a TP-8
    # instance's pass carries 8 × 8,192 tokens (pools.PREFILL_TOKENS_PER_GPU) and shares the
    # floor among them
    assert pf.mean_s == pytest.approx(0.05826, rel=1e-3)
    # transfer = 4 µs + 335,544,320 B / (12.5 GB/s · 8 NICs) = 3.3594 ms
    assert pf.whole_s[0] == pytest.approx(3.3594e-3, rel=1e-4)
    assert pf.cs2 == 0  # one length: deterministic service


@pytest.mark.parametrize(
    "slo_s, instances, ttft_s",
    [
        # work per request: 57.58 ms compute + 43.36 ms floor × 1,024/65,536 = 58.26 ms; at
        # 5/s a = 0.2913 erlang.  One instance: P(W>0) = 0.2913, tail mean ½·0.05826/(1 −
        # 0.2913) = 0.0411 s -> p90 wait = 0.0411·ln(2.913) = 0.0440 s; TTFT = own pass
        # 0.10094 + transfer 0.00336 + first step 0.01499 + 0.0440 = 0.1633 s (+ a rare link
        # wait)
        (0.20, 1, 0.1633),
        # two instances: ErlangC(2, 0.291) < 10 %: no wait at p90, TTFT = 0.1193 s
        (0.15, 2, 0.1193),
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
    pools = size_pools(pf, d, SHAPE, 5, 0.05, 90)  # prefill alone takes 101 ms
    assert not pools.meets_slo and pools.prefill_limit == "ttft"
    assert any("TTFT target" in n for n in pools.notes)
    assert pools.prefill_instances == 1  # sized to 80 % load: ⌈0.291/0.8⌉


@pytest.mark.parametrize("tp", [1, 8, 32])
def test_a_prefill_pass_carries_tokens_per_gpu(tp):
    # issue 21: the pass budget is 8,192 tokens per GPU, so a TP-32 instance shares the
    # per-layer floor (0.542 ms × 80 layers = 43.36 ms) among 262,144 tokens, not 8,192: a
    # 1,024-token prompt pays 43.36 ms × 1,024 / (8,192·TP) of it
    from kvmodel.capacity.pools import PREFILL_TOKENS_PER_GPU, pass_tokens, prefill_work_s

    assert PREFILL_TOKENS_PER_GPU == 8192 and pass_tokens(tp) == 8192 * tp
    work = prefill_work_s(SC.model, np.array([1024.0]), np.array([0.100]), tp)
    floor = 0.542e-3 * 80
    assert work[0] == pytest.approx(0.100 - floor + floor * 1024 / (8192 * tp), rel=1e-9)


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
