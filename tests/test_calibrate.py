"""Fits, applying them, and the model next to a scrape or a profile (kvmodel.calibrate)."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.calibrate import (
    Fit,
    ModelVsMeasured,
    NsysComparison,
    ScrapeComparison,
    apply_fit,
    calibrated_link,
    compare_nsys_to_model,
    compare_to_model,
    fit_from_bandwidth_points,
    fit_latency_bandwidth,
    link_efficiency,
)
from kvmodel.measure import MeasureError, load_measurement, parse_prometheus_metrics

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"


def test_fit_recovers_latency_and_bandwidth_exactly():
    x = np.array([2**k for k in range(10, 28)], dtype=float)
    t = 2e-6 + x / 40e9
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == pytest.approx(2e-6, rel=1e-9)
    assert fit.bandwidth_bytes_per_s == pytest.approx(40e9, rel=1e-9)
    assert fit.rms_relative_error < 1e-9 and fit.n == x.size and not fit.latency_clamped
    assert fit.time_s(1e9) == pytest.approx(2e-6 + 1e9 / 40e9)


def test_fit_close_with_one_percent_noise():
    rng = np.random.default_rng(7)
    x = np.repeat(np.array([2**k for k in range(10, 28)], dtype=float), 3)
    t = (2e-6 + x / 40e9) * (1 + 0.01 * rng.standard_normal(x.size))
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == pytest.approx(2e-6, rel=0.05)
    assert fit.bandwidth_bytes_per_s == pytest.approx(40e9, rel=0.01)
    assert 0.005 < fit.rms_relative_error < 0.02


def test_negative_latency_is_clamped_and_refitted_through_the_origin():
    x = np.array([1e3, 1e6, 1e9])
    t = x / 10e9 * np.array([0.5, 1.0, 1.0])  # small messages faster than the slope allows
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == 0 and fit.latency_clamped
    assert fit.bandwidth_bytes_per_s > 0
    exact = fit_latency_bandwidth([1e3, 1e6], [1e3 / 5e9, 1e6 / 5e9])  # zero latency
    assert exact.latency_s == pytest.approx(0, abs=1e-18)
    assert exact.bandwidth_bytes_per_s == pytest.approx(5e9)


def test_fit_input_errors():
    with pytest.raises(MeasureError, match="at least 2 distinct message sizes"):
        fit_latency_bandwidth([1000, 1000], [1e-3, 1.1e-3])
    with pytest.raises(MeasureError, match="do not grow"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3, 1e-6])
    with pytest.raises(MeasureError, match="expected bytes ≥ 0, seconds > 0"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3, 0])
    with pytest.raises(MeasureError, match="sizes but"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3])
    with pytest.raises(ValueError):
        fit_from_bandwidth_points([(1024, 0.0), (2048, 1.0)])


def test_fit_from_bandwidth_points_exact_and_efficiency_curve():
    sizes = [2**k for k in range(1, 24)]
    pts = [(s, s / (0.2e-6 + s / 48e9)) for s in sizes]
    fit = fit_from_bandwidth_points(pts)
    assert fit.source == "bandwidth"
    assert fit.bandwidth_bytes_per_s == pytest.approx(48e9, rel=1e-9)
    assert fit.latency_s == pytest.approx(0.2e-6, rel=1e-9)
    curve = dict(fit.efficiency_curve)
    assert list(curve) == sizes
    assert curve[2] < 0.01 and curve[2**23] == pytest.approx(1, abs=0.01)
    effs = list(curve.values())
    assert all(a <= b for a, b in zip(effs, effs[1:], strict=False))
    assert fit.bandwidth_at(2**23) == pytest.approx(curve[2**23] * 48e9)


def _fit(bw=40e9, lat=3e-6, source="time"):
    return Fit(
        latency_s=lat, bandwidth_bytes_per_s=bw, rms_relative_error=0.01, n=10, source=source
    )


def test_calibrated_link_and_efficiency():
    ndr = catalog.get_link("ib-ndr")
    link = calibrated_link(ndr, _fit())
    assert link.bandwidth_bytes_per_s == 40e9 and link.latency_s == 3e-6
    assert link.id == "ib-ndr-measured" and "10 measured points" in link.source
    assert calibrated_link(ndr, _fit(), use_latency=False).latency_s == ndr.latency_s
    assert link_efficiency(ndr, _fit()) == pytest.approx(0.8)


def test_apply_fit_modes():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8, efficiency=0.9)
    by_link = apply_fit(sc, _fit())
    assert by_link.link.bandwidth_bytes_per_s == 40e9 and by_link.link.latency_s == 3e-6
    assert by_link.efficiency == 1.0
    by_eff = apply_fit(sc, _fit(), mode="efficiency")
    assert by_eff.efficiency == pytest.approx(0.8) and by_eff.link.bandwidth_bytes_per_s == 50e9
    assert by_eff.link.latency_s == 3e-6
    # a perftest fit's intercept is not a latency: the link's own latency stays by default
    assert apply_fit(sc, _fit(source="bandwidth")).link.latency_s == sc.link.latency_s
    with pytest.raises(MeasureError, match="efficiency must be in"):
        apply_fit(sc, _fit(bw=60e9), mode="efficiency")
    with pytest.raises(ValueError, match="mode"):
        apply_fit(sc, _fit(), mode="nope")


def test_compare_to_model():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8)
    metrics = load_measurement(DATA / "vllm_pd_metrics.prom").data
    cmp = compare_to_model(sc, metrics)
    for key in (
        "exposed_transfer_s",
        "transfer_s",
        "prefill_s",
        "ttft_s",
        "transfer_share_of_ttft",
        "bandwidth_per_stream_bytes_per_s",
    ):
        row = getattr(cmp, key)
        assert isinstance(row, ModelVsMeasured)
        assert row.ratio == pytest.approx(row.measured / row.model)
    assert isinstance(cmp, ScrapeComparison)
    assert cmp.exposed_transfer_s.measured == metrics.gap_mean_s
    assert cmp.bandwidth_per_stream_bytes_per_s.model == 50e9
    # both under the line, but 2.9 % measured against 1.4 % modelled: 2.12× apart (2.7× before
    # issue 21's faster prefill estimate raised the modelled share), more than the 1.5× the
    # model is good for, so they do not agree (the old test said they did)
    assert cmp.verdict.measured == cmp.verdict.model == "under"
    # 2.22 before session 8, 2.24 before session 18 (its faster TP 8 prefill: the activation
    # passes counted, the split ones ÷ TP), 2.12 before session 24 (its refit per-layer prefill
    # floor, 275 µs: a shorter modelled prefill, so a smaller modelled share)
    assert cmp.verdict.factor == pytest.approx(2.08, abs=0.01)
    assert cmp.verdict.agree is False
    assert cmp.verdict.share_target == sc.share_target == 0.2
    from kvview.measure_text import prometheus_takeaway

    said = prometheus_takeaway(metrics, cmp, sc)  # one full stop after "the button below"
    assert said.endswith("with the button below.") and not said.endswith("below..")
    sparse = parse_prometheus_metrics('sglang:kv_transfer_latency_ms{r="0"} 5\n')
    assert compare_to_model(sc, sparse).ttft_s.ratio is None


def test_compare_nsys_to_model():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8)
    nsys = load_measurement(DATA / "nsys_cuda_gpu_kern_sum.csv").data
    cmp = compare_nsys_to_model(sc, nsys)
    assert isinstance(cmp, NsysComparison) and cmp.model_layers == 80
    assert 1.0 < cmp.per_layer_s.ratio < 1.5  # ~52 µs measured vs ~44 µs modeled
    assert (
        cmp.per_layer_s.measured == nsys.mean_s and cmp.per_layer_median_s.measured == nsys.median_s
    )
    # Llama-3.1-70B's 80 layers carry the same KV: the mean, min and max layer agree
    assert cmp.model_min_s == cmp.model_max_s == pytest.approx(cmp.per_layer_s.model)


@pytest.mark.parametrize(
    ("model", "measured", "ratio"),
    [
        (2.0, 3.0, 1.5),
        (None, 3.0, None),  # no model value
        (2.0, None, None),  # not in the scrape
        (0.0, 3.0, None),  # a zero model value gives no ratio
        (float("inf"), 3.0, None),
    ],
)
def test_model_vs_measured_ratio(model, measured, ratio):
    assert ModelVsMeasured(model, measured).ratio == ratio


def test_efficiency_over_nics_and_above_100_percent_is_a_warning():
    from kvmodel import catalog
    from kvmodel.calibrate import Fit, efficiency_warning, link_efficiency

    ndr = catalog.get_link("ib-ndr")  # 50 GB/s per direction
    fit = Fit(latency_s=0.0, bandwidth_bytes_per_s=160e9, rms_relative_error=0.0, n=2)
    assert link_efficiency(ndr, fit) == pytest.approx(3.2)
    assert "4 × " not in efficiency_warning(3.2, ndr) and "NICs" in efficiency_warning(3.2, ndr)
    assert link_efficiency(ndr, fit, nics=4) == pytest.approx(0.8)  # 160 ÷ (4 × 50)
    assert efficiency_warning(0.8, ndr, nics=4) is None
    with pytest.raises(ValueError, match="nics"):
        link_efficiency(ndr, fit, nics=0)


def test_a_scrape_faster_than_the_scenarios_link_is_named_in_the_notes():
    # the sample scrape moved ~40.8 GB/s per transfer: within NDR's 50 GB/s, 3.3× 100 GbE's 12.5
    metrics = load_measurement(DATA / "vllm_pd_metrics.prom").data
    bw = metrics.effective_bandwidth_bytes_per_s
    assert 12.5e9 < bw < 50e9
    ndr = compare_to_model(build_scenario(link="ib-ndr", seq_len=4096, tp=8), metrics)
    assert not [n for n in ndr.notes if "faster link" in n]
    slow = compare_to_model(build_scenario(link="100gbe", seq_len=4096, tp=8), metrics)
    (note,) = [n for n in slow.notes if "faster link" in n]
    assert f"{bw / 12.5e9:,.2g}× the line rate" in note and "12.5 GB/s per direction" in note


def test_the_models_bandwidth_per_stream_is_what_its_transfer_moves_at():
    # session 18's browser review: the Measured page compared a scrape with link × efficiency
    # (12.5 GB/s on 100 GbE) while the model's own transfer moves at the Mooncake stack's
    # 74.1 % of it (data/stacks.csv efficiency_max 0.741): 9.26 GB/s
    sc = build_scenario(model="llama-3.1-70b", link="100gbe", stack="mooncake")
    metrics = load_measurement(DATA / "vllm_pd_metrics.prom").data
    cmp = compare_to_model(sc, metrics)
    assert cmp.bandwidth_per_stream_bytes_per_s.model == pytest.approx(12.5e9 * 0.741)
    ideal = compare_to_model(replace(sc, stack=catalog.get_stack("ideal")), metrics)
    assert ideal.bandwidth_per_stream_bytes_per_s.model == pytest.approx(12.5e9)


def test_the_sentence_says_when_only_the_share_agrees():
    """On the sidebar's 100 GbE the sample scrape's transfers ran at 40.8 GB/s, 3.3× the line
    rate: the shares agree (2.9 % vs 3.9 %), the times do not, and the sentence says so
    instead of a bare 'the model agrees' above a table of 1.7× and 4.4× (session 22's review).
    On IB NDR nothing ran faster than the link: no such clause."""
    from kvview.measure_text import prometheus_takeaway

    metrics = load_measurement(DATA / "vllm_pd_metrics.prom").data
    sc = build_scenario(stack="mooncake", tp=8, framework="vllm")  # the page's default, 100 GbE
    cmp = compare_to_model(sc, metrics)
    assert cmp.verdict.agree
    said = prometheus_takeaway(metrics, cmp, sc)
    assert "the shares agree" in said
    assert "moved faster than one link of this scenario allows" in said
    assert said.endswith("(notes below the table).")
    ndr = build_scenario(stack="mooncake", tp=8, framework="vllm", link="ib-ndr")
    cmp_ndr = compare_to_model(ndr, metrics)
    assert not any("faster link" in n for n in cmp_ndr.notes)
    assert "moved faster than one link" not in prometheus_takeaway(metrics, cmp_ndr, ndr)


def test_two_equal_times_fit_no_bandwidth():
    # session 23's fuzz: (100 B, 0.1 s) and (200 B, 0.1 s) fitted a rounding-noise slope,
    # 1.7e19 B/s with no warning; three flat points already said why no bandwidth fits
    with pytest.raises(MeasureError, match="do not grow with the message size"):
        fit_latency_bandwidth([100.0, 200.0], [0.1, 0.1])
    # a real but slow growth still fits: 1 ns over the range on 1 ms
    fit = fit_latency_bandwidth([0.0, 1e3], [1e-3, 1e-3 + 1e-9])
    assert fit.bandwidth_bytes_per_s == pytest.approx(1e12, rel=1e-6)
