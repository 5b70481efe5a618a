"""kvmodel.capacity.workload: workloads from numbers and from traces, targets, the shape."""

import numpy as np
import pytest

from kvmodel.capacity.workload import Slo, Workload, shape
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
    # the cached tokens before that length, weighted: 0.25·0 + 0.75·200 = 150
    assert s.prefix.tolist() == [150.0]
    # no cached tokens: no prefix
    assert shape(Workload.fixed(2.0, 300, 30), 131_072).prefix is None


def test_prompts_beyond_the_context_are_counted_at_it():
    s = shape(Workload.fixed(1, 10_000, 1), 4096)
    assert s.longest_prompt == 4096 and s.clipped == 1.0


# --- counts per length with their outputs' moments (the Traffic page's and the CLI's read) ---


def test_a_count_read_keeps_each_lengths_output_moments():
    csv = b"prompt_tokens,output_tokens\n100,10\n300,50\n100,30\n"
    req = load_traffic(csv, name="t.csv", per_request=False)
    assert list(req.prompt_tokens) == [100, 300] and list(req.weights) == [2, 1]
    # means: length 100 (outputs 10 and 30) 20, length 300 50.  Mean squares: the mean squared
    # plus the spread within lengths, (10² + 30² + 50² − (2·20² + 50²)) / 3 = 200 / 3, so that
    # weighted they sum to the requests' 10² + 30² + 50² = 3,500
    spread = 200 / 3
    np.testing.assert_allclose(req.output_moments, [[20, 400 + spread], [50, 2500 + spread]])
    assert (req.weights * req.output_moments[:, 1]).sum() == pytest.approx(3500)
    assert req.output_tokens is None and req.has_output_lengths
    no_out = load_traffic(b"prompt_tokens\n100\n300\n", name="t.csv", per_request=False)
    assert no_out.output_moments is None and not no_out.has_output_lengths


def test_the_moments_give_the_per_request_shape():
    """Two entries per length keep the mean and the mean square of its outputs, which is all
    ``shape`` reads: a plan from counts equals the plan from the requests."""
    for sample in ("azure-conv", "azure-code", "mooncake", "burstgpt"):
        path = sample_path(sample)
        each = Workload.from_requests(load_traffic(path), rps=10.0)
        counts = Workload.from_requests(load_traffic(path, per_request=False), rps=10.0)
        assert counts.mean_output_tokens == pytest.approx(each.mean_output_tokens, rel=1e-12)
        a, b = shape(each, 131_072), shape(counts, 131_072)
        np.testing.assert_array_equal(a.moved, b.moved)
        np.testing.assert_allclose(a.weights, b.weights, rtol=1e-12)
        assert a.decode_context == b.decode_context and a.mean_output == pytest.approx(
            b.mean_output, rel=1e-12)  # fmt: skip
        # the sums shape reads: Σ w·o, Σ w·o·p and Σ w·o², equal (BurstGPT has lengths whose
        # outputs are all 0: they carry no spread)
        for f in (lambda w: w.output_tokens, lambda w: w.output_tokens * w.prompt_tokens,
                  lambda w: w.output_tokens.astype(float) ** 2):  # fmt: skip
            assert (counts.weights * f(counts)).sum() == pytest.approx(
                (each.weights * f(each)).sum(), rel=1e-9), sample  # fmt: skip


def test_outputs_spread_wider_than_their_mean_stay_non_negative_and_exact():
    # one length, outputs 0, 0, 0, 100: mean 25, mean square 2,500, σ = 43.3 > 25, so m ± σ
    # would be negative; the entries are 0 (weight 3/4) and 2,500 / 25 = 100 (weight 1/4)
    req = _requests(prompt_tokens=np.array([500]), weights=np.array([4.0]),
                    output_moments=np.array([[25.0, 2500.0]]))  # fmt: skip
    w = Workload.from_requests(req, rps=1.0)
    assert sorted(zip(w.output_tokens, w.weights, strict=True)) == [(0.0, 0.75), (100.0, 0.25)]
    assert w.mean_output_tokens == 25.0
    assert (w.weights * w.output_tokens**2).sum() == pytest.approx(2500.0)


def test_a_prefix_cached_trace_summarised_keeps_output_moments():
    req = load_traffic(sample_path("mooncake"), per_request=False)
    assert req.cached_tokens is not None and req.output_moments is not None
    each = load_traffic(sample_path("mooncake"))
    assert Workload.from_requests(req, rps=1.0).mean_output_tokens == pytest.approx(
        float(np.mean(each.output_tokens)), rel=1e-12)  # fmt: skip


def test_an_output_longer_than_the_context_is_counted_at_it():
    # a hostile upload with a 10^12-token answer: outputs are clipped at the model's context
    # like prompts (the plan notes the share), so no pool grows to billions of instances
    w = Workload(np.array([1000, 3000]), np.array([999_999_999_999, 5]), np.array([1.0, 1.0]),
                 2.0)  # fmt: skip
    shp = shape(w, 131_072)
    assert shp.clipped == 0.5
    assert shp.mean_output == pytest.approx((131_072 + 5) / 2)
