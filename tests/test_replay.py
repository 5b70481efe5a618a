"""kvmodel.replay: a hand-checked replay, memory waits, NIC queueing, Poisson against the
formulas, a bursty trace and sizing by replay (issue 22's "Done when")."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import build_scenario
from kvmodel.capacity import pools
from kvmodel.capacity.pools import PREFILL_TOKENS_PER_GPU, pair_scenario, pass_fixed_s
from kvmodel.replay.decode import run_decode
from kvmodel.replay.fifo import first_free, served
from kvmodel.timing import estimate_decode_step_s
from kvmodel.traffic import Requests
from kvmodel.wire import transfer


@pytest.fixture(scope="module")
def sc():
    return build_scenario(model="llama-3.1-70b", link="100gbe")


def _stream(t, prompt, output):
    n = len(t)
    req = Requests(np.full(n, prompt), None, np.full(n, output), np.asarray(t, float), None,
                   "generic-table")  # fmt: skip
    return rp.trace_stream(req, 131_072)


def test_served_is_lindley():
    # one server: arrivals 0, 1, 1.5, 10 with services 2, 2, 1, 1 start at 0, 2, 4, 10 (by hand)
    a = np.array([[0.0], [1.0], [1.5], [10.0]])
    s = np.array([[2.0], [2.0], [1.0], [1.0]])
    assert_allclose(served(a, s).ravel(), [0, 2, 4, 10])


def test_first_free_two_servers():
    # two servers, all at 0, services 3, 1, 1, 1: 0 (A), 0 (B), 1 (B), 2 (B) by hand
    start, inst = first_free(np.zeros(4), np.array([3.0, 1.0, 1.0, 1.0]), 2)
    assert_allclose(start, [0, 0, 1, 2])
    assert inst.tolist() == [0, 1, 1, 1]


def test_hand_checked_two_requests_queue_on_the_nic(sc):
    """1 prefill and 1 decode instance at TP 8, a link slow enough (0.1 GB/s per NIC) that the
    second transfer waits for the first; 4 output tokens, so request 1 has left decode
    before request 2's KV arrives (both decode alone)."""
    slow = replace(sc, link=replace(sc.link, bandwidth_bytes_per_s=0.1e9))
    assert slow.stack.is_ideal and not slow.layerwise
    dep = rp.Deployment(slow, 8, 8, 1, 1)
    t = transfer(pair_scenario(slow, 8, 8), seq_len=np.array([1024]))
    pre, x = float(t.prefill_s[0]), float(t.transfer_s[0])
    # a pass pays the kernel floor and the weights read once (capacity.pools.pass_fixed_s);
    # capacity.pools.prefill_work_s: passes of pools.PREFILL_TOKENS_PER_GPU × 8 GPUs tokens
    fixed = float(pass_fixed_s(slow, np.array([1024]), 8)[0])
    work = pre - fixed * (1 - 1024 / (PREFILL_TOKENS_PER_GPU * 8))
    tl = rp.replay(dep, _stream([0.0, 0.01], 1024, 4))
    assert 0.01 < work and x > work + 0.2  # request 2 starts when 1's share frees the GPU
    assert_allclose(tl.prefill_start_s, [0.0, work])
    assert_allclose(tl.prefill_end_s, [pre, work + pre])
    assert_allclose(tl.link_start_s, [pre, pre + x])  # NIC queue: 2 waits for 1's transfer
    assert_allclose(tl.kv_arrival_s, [pre + x, pre + 2 * x])
    # decoding alone: step i (0-based) reads the prompt and the i tokens made so far
    steps = [float(estimate_decode_step_s(slow.model, 1024 + i, 1, gpu=slow.gpu, tp=8,
                                          kv_dtype=slow.kv_dtype)) for i in range(4)]  # fmt: skip
    assert_allclose(tl.decode_start_s, tl.kv_arrival_s)  # memory is free
    assert_allclose(tl.ttft_s, [pre + x + steps[0], pre + 2 * x + steps[0] - 0.01])
    assert_allclose(tl.tpot_s, [np.mean(steps[1:])] * 2)
    assert_allclose(tl.depart_s, tl.kv_arrival_s + sum(steps))


class _Constant:
    """A step table of one step length at every batch and context (``sim.StepTable``'s
    ``kernel_args``)."""

    def __init__(self, step_s: float):
        self.step_s = step_s

    def kernel_args(self):
        return np.full((1, 3), self.step_s), np.array([1.0]), False, 1.0, 1.0, 1, 1


def test_memory_waits_first_come_first_served():
    """Capacity 100 tokens; requests of 60, 60, 30 tokens at 0, 1 ms, 2 ms with a 10 ms step:
    request 1 leaves at 100 ms (10 tokens); 2 waits for it, 3 queues behind 2 (no overtaking)."""
    run = run_decode(np.array([0.0, 0.001, 0.002]), np.array([60.0, 60.0, 30.0]),
                     np.array([50.0, 50.0, 25.0]), np.array([10.0, 10.0, 1.0]), instances=1,
                     capacity_tokens=100.0, step=_Constant(0.01))  # fmt: skip
    assert_allclose(run.start_s, [0.0, 0.1, 0.1])
    assert_allclose(run.depart_s, [0.1, 0.2, 0.11])
    assert run.waiting.max() == 2 and run.memory_bound == 1


def test_no_memory_wait_when_it_fits():
    run = run_decode(np.array([0.0, 0.001]), np.array([60.0, 30.0]), np.array([50.0, 25.0]),
                     np.array([10.0, 10.0]), instances=1, capacity_tokens=100.0,
                     step=_Constant(0.01))  # fmt: skip
    # request 2 arrives during request 1's first step and joins at the next (10 ms): its first
    # token 9 ms + 10 ms after its KV, then 9 more steps
    assert_allclose(run.start_s, [0.0, 0.001])
    assert_allclose(run.first_step_s, [0.01, 0.019])
    assert_allclose(run.depart_s, [0.1, 0.11])
    assert run.memory_bound == 0


def test_step_follows_the_running_batch(sc):
    """Many requests decoding at once on one instance take the step at their batch, longer
    than one request alone (timing.estimate_decode_step_s grows with the batch)."""
    dep = rp.Deployment(sc, 8, 8, 4, 1)
    tl = rp.replay(dep, _stream(np.arange(200) * 0.005, 512, 512))

    def step(b):
        return float(estimate_decode_step_s(sc.model, 768, b, gpu=sc.gpu, tp=8,
                                            kv_dtype=sc.kv_dtype))  # fmt: skip

    # 200 requests within 1 s, each ~7 s of decoding: most of them decode together
    assert step(1) * 1.05 < np.median(tl.tpot_s) <= step(200)


@pytest.mark.parametrize(("seq", "rps", "slo_ms"), [(4096, 10.0, 1000), (2048, 30.0, 800)])
def test_poisson_replay_agrees_with_the_formulas(sc, seq, rps, slo_ms):
    wl = cap.Workload.fixed(rps, seq, 256)
    slo = cap.Slo(slo_ms / 1e3, 0.05)
    p = cap.plan(sc, wl, slo)
    stream = rp.poisson_stream(wl, sc.model.max_context_tokens, 20_000)
    r = rp.replay_plan(sc, p, stream, slo).result
    assert r.poisson and r.requests == 20_000
    assert 0.75 <= r.ttft_at_slo_s / p.ttft_s <= 1.25  # measured 1.01 and 1.00


def _bursty(rps: float, seq: int, n: int = 20_000):
    """Poisson at 2 × ``rps`` for 30 s, then 30 s of nothing: the same mean rate."""
    t = np.cumsum(np.random.default_rng(1).exponential(1 / (2 * rps), n))
    return _stream(t + 30 * np.floor(t / 30), seq, 256)


def test_bursty_trace_misses_and_replay_sizing_fixes_it(sc):
    rps, seq = 30.0, 2048
    slo = cap.Slo(0.8, 0.05)
    p = cap.plan(sc, cap.Workload.fixed(rps, seq, 256), slo)
    stream = _bursty(rps, seq)
    assert abs(stream.n / stream.span_s / rps - 1) < 0.03  # the same mean
    poisson = rp.replay_plan(sc, p, rp.poisson_stream(cap.Workload.fixed(rps, seq, 256),
                                                      131_072), slo).result  # fmt: skip
    bursty = rp.replay_plan(sc, p, stream, slo)
    assert bursty.result.ttft_at_slo_s > 5 * poisson.ttft_at_slo_s  # 20.8 s against 0.66 s
    assert not bursty.result.meets_slo and p.meets_slo
    assert any(w.startswith("bursts:") for w in bursty.reasons)
    sized = rp.replay_plan(sc, p, stream, slo, size_by="replay")
    assert sized.grown and sized.gpus > p.disaggregated_gpus  # 56 GPUs against 32 (measured)
    assert sized.result.meets_slo and sized.result.ttft_at_slo_s <= slo.ttft_s


def test_series_per_minute(sc):
    dep = rp.Deployment(sc, 8, 8, 2, 1)
    stream = _stream(np.concatenate([np.arange(100) * 0.5, 120 + np.arange(10) * 5.0]), 1024, 64)
    r = rp.summarise(rp.replay(dep, stream), ttft_slo_s=2, tpot_slo_s=0.05, q=90, poisson=False)
    s = r.series
    assert s.minute.tolist() == [0, 1, 2]
    assert s.arrivals.tolist() == [100, 0, 10]
    assert np.isnan(s.ttft_p90_s[1]) and np.all(s.decode_memory >= 0)
    assert set(r.to_json()) == {"requests", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms",
                                "tpot_p90_ms", "transfer_p90_ms", "peak_link_utilization",
                                "max_decode_queue", "meets_slo", "series"}  # fmt: skip


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: rp.poisson_stream(cap.Workload.fixed(1.0, 10, 10), 100, 10**9), "10,000,000"),
        (lambda: _stream([0.0, 3e9], 10, 10), "days"),
        (lambda: _stream([0.0, np.inf], 10, 10), "days|finite"),
    ],
)
def test_absurd_replays_are_refused(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_deployment_checks_its_pools(sc):
    with pytest.raises(ValueError, match="decode_instances"):
        rp.Deployment(sc, 8, 8, 1, 0)
    with pytest.raises(ValueError, match="size_by"):
        rp.replay_plan(sc, None, None, None, size_by="guess")


def _heap_reference(a, w, c):
    import heapq

    heap, start, inst = [(0.0, i) for i in range(c)], [], []
    for x, s in zip(a, w, strict=True):
        f, i = heap[0]
        t = max(f, x)
        start.append(t)
        inst.append(i)
        heapq.heapreplace(heap, (t + s, i))
    return np.array(start), np.array(inst)


@pytest.mark.parametrize(("c", "load"), [(4, 0.5), (16, 0.95), (50, 0.7), (7, 1.1)])
def test_first_free_matches_a_plain_heap(c, load):
    """The vectorised stretches and the integer heap give a plain heap's starts and
    instances, light to overloaded (heavy-tailed work: log-normal σ 1.5)."""
    rng = np.random.default_rng(3)
    a = np.cumsum(rng.exponential(1, 20_000))
    w = rng.lognormal(0, 1.5, 20_000)
    w *= c * load / w.mean()
    start, inst = first_free(a, w, c)
    ref_start, ref_inst = _heap_reference(a, w, c)
    assert_allclose(start, ref_start, atol=1e-6)
    assert (inst == ref_inst).all()


def test_a_cached_prefix_lengthens_the_prefill_of_its_length():
    """Two lone requests, each with 1,000 tokens to compute: one has a 9,000-token cached
    prefix. Each length's prefill is the batch-1 estimate at that length's mean prefix
    (4,500 here: attention is linear in it, so the mean is exact for the length's mean)."""
    from kvmodel.timing import estimate_prefill_s

    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    stream = rp.Stream(np.array([0.0, 100.0]), np.array([1000, 10_000]), np.array([4, 4]),
                       np.array([0, 9000]), False)  # fmt: skip
    dep = rp.Deployment(sc, 8, 8, 1, 1)
    tl = rp.replay(dep, stream)
    want = float(estimate_prefill_s(sc.model, 1000, gpu=sc.gpu, tp=8, prefix=4500.0))
    assert_allclose(tl.prefill_end_s - tl.prefill_start_s, [want, want], rtol=1e-12)
    alone = float(estimate_prefill_s(sc.model, 1000, gpu=sc.gpu, tp=8))
    assert want > alone
    # without any cached token the tables are the plain ones
    plain = rp.replay(dep, replace(stream, cached_tokens=np.array([0, 0]),
                                   prompt_tokens=np.array([1000, 1000])))
    assert_allclose(plain.prefill_end_s - plain.prefill_start_s, [alone, alone], rtol=1e-12)


def test_memory_bound_plan_keeps_room_and_the_replay_confirms_it(sc, monkeypatch):
    """Llama-3.1-70B at 23 requests/s of 4,096/1,024 tokens, TPOT target 200 ms: decode is
    memory-bound.  B* with room for the batch's fluctuation (pools.memory_batch) gives 4
    decode instances, and a Poisson replay agrees with the formulas with no memory wait;
    with B* at memory's edge (no room: β = 0, the plan before session 13) the pool is 3
    instances and the replay waits for memory (measured: TTFT p90 2.08 s against the formulas'
    1.96 s and the roomy plan's replayed 1.87 s, 27 % of requests waited; 1.56 s against 1.08 s
    before session 18, whose slower 4,096-token prefill at low TP lengthened the prefill queue
    both plans share, 2.07 s and 41 % with the fixed-point rounds before session 15)."""
    wl = cap.Workload.fixed(23.0, 4096, 1024)
    slo = cap.Slo(3.0, 0.2)
    stream = rp.poisson_stream(wl, sc.model.max_context_tokens, 20_000)
    p = cap.plan(sc, wl, slo)
    r = rp.replay_plan(sc, p, stream, slo).result
    assert p.limits["decode"] == "memory" and p.decode_instances == 4
    assert r.memory_waited_share < 0.01
    assert 0.85 <= r.ttft_at_slo_s / p.ttft_s <= 1.15  # measured 0.96
    monkeypatch.setattr(pools, "MEMORY_HEADROOM_BETA", 0.0)
    edge = cap.plan(sc, cap.Workload.fixed(23.0, 4096, 1024), slo)  # a new basis (prep)
    r0 = rp.replay_plan(sc, edge, stream, slo).result
    assert edge.decode_instances == 3
    assert r0.memory_waited_share > 0.2 and r0.ttft_at_slo_s > 1.05 * edge.ttft_s
    assert r0.ttft_at_slo_s > r.ttft_at_slo_s + 0.15  # the memory wait, on the same prefill pool


def test_trtllm_replay_reserves_the_whole_output(sc):
    """One TP 8 decode instance, k requests of 1,024 + 2,048 tokens arriving together, k chosen
    so that k × 2,048 tokens (what paged KV holds on average over a stay: prompt + half the
    output) fit in its KV memory and k × 3,072 (prompt + whole output) do not: vLLM admits
    every one at once, TensorRT-LLM (GUARANTEED_NO_EVICT) makes some wait."""
    from kvmodel.replay.sim import decode_capacity_tokens

    dep = rp.Deployment(sc, 8, 8, 8, 1)
    cap_tokens = decode_capacity_tokens(sc, dep, 2048)
    k = int(cap_tokens // 2500)
    assert k * 2048 < cap_tokens < k * 3072
    stream = _stream(np.arange(k) * 1e-4, 1024, 2048)
    vllm = rp.replay(dep, stream)
    trt = rp.replay(rp.Deployment(replace(sc, framework="trtllm"), 8, 8, 8, 1), stream)
    assert vllm.memory_bound_instances == 0
    assert trt.memory_bound_instances == 1
    assert (trt.decode_start_s > trt.kv_arrival_s + 1e-9).sum() > 0.1 * k
