"""kvmodel.capacity.colocated: mixed iterations (decode batch + prefill chunk) and their sizing.

Same hand case as tests/test_capacity_pools.py: Llama-3.1-70B BF16 on H100 at TP 8, every
request 1,024 prompt + 256 output tokens (slots hold 1,152 tokens on average).
"""

import numpy as np
import pytest

from kvmodel.build import scenario_from_inputs
from kvmodel.capacity import colocated as colo
from kvmodel.capacity.workload import Workload, shape
from kvmodel.timing import decode_step_parts, estimate_decode_step_s, prefill_flops

SC = scenario_from_inputs({"stack": "ideal"})
SHAPE = shape(Workload.fixed(5, 1024, 256), SC.model.max_context_tokens)
FPT = float(prefill_flops(SC.model, 1024)) / 1024  # 1.45965e14 FLOPs / 1,024 tokens


def test_no_chunk_is_the_decode_step():
    b = np.array([1, 16, 300, 1000])
    assert np.allclose(
        colo.mixed_step_s(SC, 1152, b, 0, FPT, 8),
        estimate_decode_step_s(SC.model, 1152, b, gpu=SC.gpu, tp=8, kv_dtype="fp16"),
        rtol=1e-12,
    )


def test_a_chunk_rides_on_the_compute_side():
    # B = 16, C = 512: the chunk's 512 × 1.42544e11 FLOPs join the decode step's GEMMs
    # (timing.decode_step_parts, chunk_tokens) and its activations the all-reduce: compute
    # outgrows the weights' read, so the GEMMs show whole and the HBM reads only partly
    # (issue 21's parts replace the earlier max(memory, decode + chunk FLOPs) of 35.37 ms;
    # 26.80 ms before session 18: the (512 + 16) × 8,192 × 2 B = 8.65 MB all-reduce is past
    # the custom all-reduce's 8 MiB, so NCCL's measured 0.77 of NVLink 4 at 8 GPUs, not 0.75)
    parts = decode_step_parts(SC.model, 1152, 16, gpu=SC.gpu, tp=8, kv_dtype="fp16",
                              chunk_tokens=512, chunk_flops_per_token=FPT)  # fmt: skip
    mixed = colo.mixed_step_s(SC, 1152, 16, 512, FPT, 8)
    assert mixed == pytest.approx(float(parts.total_s)) == pytest.approx(26.62e-3, rel=1e-3)
    gemm = (2 * 70.6e9 * 16 + 512 * FPT) / 8 / (989e12 * 0.7)  # the whole GEMM side
    assert float(parts.gemm_s) == pytest.approx(gemm, rel=1e-9)
    assert float(parts.weights_read_s) < 141.2e9 / 8 / (3.35e12 * 0.8)  # partly hidden
    assert mixed > colo.mixed_step_s(SC, 1152, 16, 0, FPT, 8)


def test_options_fit_the_batch_beside_each_chunk():
    opts = {o.chunk: o for o in colo.options(SC, SHAPE, 0.05, 8)}
    # C = 512: the largest B whose mixed iteration stays within 50 ms (555 before session 18's
    # measured NCCL share for all-reduces past 8 MiB)
    fits = [b for b in (562, 563, 564) if colo.mixed_step_s(SC, 1152, b, 512, FPT, 8) <= 0.05]
    assert opts[512].batch == max(fits) == 563 and opts[512].feasible
    assert opts[512].iteration_s == pytest.approx(0.05, abs=5e-5)
    # a 1,024-token prompt takes vLLM's 21.3 ms per request (colocated: no P/D hop) and
    # ⌈1,024/512⌉ = 2 iterations to its first token
    assert opts[512].latency_s[0] == pytest.approx(21.3e-3 + 2 * opts[512].iteration_s)
    # C = 2,048 alone (85 ms with one decode) exceeds 50 ms: infeasible, no larger chunk tried
    assert not opts[2048].feasible and 4096 not in opts


def test_sizing_takes_the_larger_of_slots_and_prefill_queue():
    opt = next(o for o in colo.options(SC, SHAPE, 0.05, 8) if o.chunk == 512)
    # 5/s: slots ⌈5·256·0.05/563⌉ = 1; prefill load 5 × 2 iterations of 50 ms = 0.50 erlang -> 1
    low = colo.size(opt, SHAPE, 5, 2.0, 90)
    assert low.instances == 1 and low.meets_slo
    # 100/s: prefill load 9.99 erlangs -> at least 10 instances, the TTFT percentile asks 11
    high = colo.size(opt, SHAPE, 100, 2.0, 90)
    assert high.instances == 11 and high.limit == "ttft"
    assert colo.bound(opt, SHAPE, 100) <= high.gpus


def test_unreachable_ttft_is_reported():
    opt = next(o for o in colo.options(SC, SHAPE, 0.05, 8) if o.chunk == 512)
    c = colo.size(opt, SHAPE, 5, 0.05, 90)  # two 50 ms iterations exceed 50 ms
    assert not c.meets_slo and c.limit == "ttft"
