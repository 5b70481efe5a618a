"""kvmodel.capacity_workload: workloads from numbers and from traces, targets, the shape."""

import numpy as np
import pytest

from kvmodel.capacity_workload import Slo, Workload, shape
from kvmodel.traffic import load_traffic, sample_path
from kvmodel.traffic.result import Requests


def _requests(**kw):
    base = dict(prompt_tokens=np.array([100, 300]), weights=None, output_tokens=None,
                arrival_s=None, cached_tokens=None, fmt="test")  # fmt: skip
    base.update(kw)
    return Requests(**base)


def test_fixed():
    w = Workload.fixed(3.0, 2048, 128)
    assert w.rps == 3.0 and w.mean_prompt_tokens == 2048 and w.mean_output_tokens == 128


def test_rate_from_timestamps():
    # 19,366 requests over the trace's span (the traffic analysis' arrival rate)
    req = load_traffic(sample_path("azure-conv"))
    w = Workload.from_requests(req)
    assert w.rps == pytest.approx(req.n_requests / req.span_s)
    assert w.mean_output_tokens == pytest.approx(np.mean(req.output_tokens))


def test_no_timestamps_and_no_rate_says_what_to_give():
    with pytest.raises(ValueError, match="--rps"):
        Workload.from_requests(_requests(output_tokens=np.array([10, 20])))


def test_no_outputs_uses_the_given_length_or_says_so():
    with pytest.raises(ValueError, match="--output-len"):
        Workload.from_requests(_requests(), rps=1.0)
    w = Workload.from_requests(_requests(), rps=1.0, output_len=64)
    assert list(w.output_tokens) == [64, 64]


@pytest.mark.parametrize("rps", [0, -1, float("inf"), float("nan"), True])
def test_bad_rate(rps):
    with pytest.raises(ValueError, match="rate"):
        Workload.fixed(rps, 10, 10)


@pytest.mark.parametrize("kw", [dict(ttft_s=0, tpot_s=0.05), dict(ttft_s=1, tpot_s=-1),
                                dict(ttft_s=1, tpot_s=0.05, ttft_percentile=100)])  # fmt: skip
def test_bad_targets(kw):
    with pytest.raises(ValueError):
        Slo(**kw)


def test_shape_of_a_weighted_histogram_with_prefix_hits():
    # entries (prompt, output, cached, weight): (100, 10, 0, 1), (300, 30, 200, 3)
    w = Workload(np.array([100, 300]), np.array([10, 30]), np.array([1.0, 3.0]), 2.0,
                 cached_tokens=np.array([0, 200]))  # fmt: skip
    s = shape(w, 131_072)
    # moved tokens: 100 and 300 − 200 = 100 -> one distinct length
    assert list(s.moved) == [100] and list(s.weights) == [1.0]
    # E[o] = 0.25·10 + 0.75·30 = 25; slot context Σ w·o·(p + o/2) / Σ w·o
    # = (0.25·10·105 + 0.75·30·315) / 25 = (262.5 + 7,087.5) / 25 = 294
    assert s.mean_output == 25 and s.decode_context == 294


def test_prompts_beyond_the_context_are_counted_at_it():
    s = shape(Workload.fixed(1, 10_000, 1), 4096)
    assert s.longest_prompt == 4096 and s.clipped == 1.0
