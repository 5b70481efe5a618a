"""The /metrics reader (kvmodel.measure.prometheus): the shipped scrapes, histograms summed over
label sets, gauges as samples, NIXL and SGLang units, bad lines named."""

import math
from pathlib import Path

import numpy as np
import pytest

from kvmodel.measure import MeasureError, Metrics, load_measurement, parse_prometheus_metrics
from kvmodel.verdicts import share_verdict

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"


def test_vllm_sample():
    m = load_measurement(DATA / "vllm_pd_metrics.prom").data
    assert isinstance(m, Metrics)
    assert set(m.metrics_found) == {
        "llm_kv_transfer_gap_seconds",
        "vllm:time_to_first_token_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:nixl_xfer_time_seconds",
        "vllm:nixl_bytes_transferred",
    }
    assert m.gap_source == "llm_kv_transfer_gap_seconds"
    assert 0.003 < m.gap_mean_s < 0.01
    assert m.gap_p50_s <= m.gap_p90_s <= m.gap_p99_s
    assert 0.1 < m.ttft_mean_s < 0.3 and 0.05 < m.prefill_mean_s < m.ttft_mean_s
    assert m.summaries["vllm:time_to_first_token_seconds"].label_sets == 2
    assert m.summaries["vllm:time_to_first_token_seconds"].count == 1200
    assert 30e9 < m.effective_bandwidth_bytes_per_s < 50e9  # NIXL over NDR
    gap = m.summaries["llm_kv_transfer_gap_seconds"]
    assert m.gap_mean_s == pytest.approx(gap.sum / gap.count)
    assert m.transfer_share_of_ttft == pytest.approx(m.gap_mean_s / m.ttft_mean_s)
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.2).measured == "under"


def test_sglang_sample_is_in_milliseconds_and_over_the_line():
    m = load_measurement(DATA / "sglang_pd_metrics.prom").data
    assert m.gap_source == "sglang:kv_transfer_latency_ms"
    assert 0.05 < m.gap_mean_s < 0.2  # ms → s
    assert m.ttft_source == "sglang:time_to_first_token_seconds"
    assert m.bandwidth_source == "sglang:kv_transfer_speed_gb_s"
    assert 5e9 < m.effective_bandwidth_bytes_per_s < 12.5e9  # GB/s → B/s, 100 GbE
    assert m.transfer_share_of_ttft > 0.20
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.2).measured == "over"
    assert any("sglang:kv_transfer_latency_ms" in n for n in m.notes)


def test_gap_gauge_sample_uses_the_samples():
    m = load_measurement(DATA / "gap_gauge.prom").data
    gauge = m.summaries["llm_kv_transfer_gap_seconds"]
    assert gauge.kind == "gauge" and gauge.count == 8 == len(gauge.samples)
    assert m.gap_mean_s == pytest.approx(np.mean(gauge.samples))
    assert m.gap_p90_s == pytest.approx(np.percentile(gauge.samples, 90))


HIST = """\
# HELP llm_kv_transfer_gap_seconds gap
# TYPE llm_kv_transfer_gap_seconds histogram
llm_kv_transfer_gap_seconds_bucket{engine="0",le="0.1"} 10
llm_kv_transfer_gap_seconds_bucket{engine="0",le="0.5"} 30
llm_kv_transfer_gap_seconds_bucket{engine="0",le="1.0"} 40
llm_kv_transfer_gap_seconds_bucket{engine="0",le="+Inf"} 40
llm_kv_transfer_gap_seconds_count{engine="0"} 40
llm_kv_transfer_gap_seconds_sum{engine="0"} 12.0
llm_kv_transfer_gap_seconds_bucket{engine="1",le="0.1"} 0
llm_kv_transfer_gap_seconds_bucket{engine="1",le="0.5"} 10
llm_kv_transfer_gap_seconds_bucket{engine="1",le="1.0"} 20
llm_kv_transfer_gap_seconds_bucket{engine="1",le="+Inf"} 20
llm_kv_transfer_gap_seconds_count{engine="1"} 20
llm_kv_transfer_gap_seconds_sum{engine="1"} 12.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="1.0"} 10
vllm:time_to_first_token_seconds_bucket{le="2.0"} 60
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 60
vllm:time_to_first_token_seconds_count 60
vllm:time_to_first_token_seconds_sum 90.0
"""


def test_histograms_sum_over_label_sets():
    m = parse_prometheus_metrics(HIST)
    # summed: le 0.1 → 10, 0.5 → 40, 1.0 → 60, +Inf → 60
    assert m.gap_count == 60
    assert m.gap_mean_s == pytest.approx(24.0 / 60)
    assert m.gap_p50_s == pytest.approx(0.1 + 0.4 * (30 - 10) / 30)
    assert m.gap_p90_s == pytest.approx(0.5 + 0.5 * (54 - 40) / 20)
    assert m.ttft_mean_s == pytest.approx(1.5)
    assert m.ttft_p50_s == pytest.approx(1.0 + 1.0 * (30 - 10) / 50)
    assert m.transfer_share_of_ttft == pytest.approx(0.4 / 1.5)
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.2).measured == "over"  # 26.7 %
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.3).measured == "under"
    assert m.summaries["llm_kv_transfer_gap_seconds"].buckets[-1] == (math.inf, 60)


def test_per_request_gauge_and_no_ttft():
    text = "".join(
        f'llm_kv_transfer_gap_seconds{{request_id="r{i}"}} {v}\n'
        for i, v in enumerate([0.010, 0.020, 0.030, 0.040])
    )
    m = parse_prometheus_metrics("# TYPE llm_kv_transfer_gap_seconds gauge\n" + text)
    assert m.gap_mean_s == pytest.approx(0.025)
    assert m.gap_p50_s == pytest.approx(0.025)
    assert m.gap_p90_s == pytest.approx(np.percentile([0.01, 0.02, 0.03, 0.04], 90))
    assert m.gap_count == 4
    assert m.ttft_mean_s is None and m.transfer_share_of_ttft is None
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.2).measured is None


def test_nixl_bytes_counter_and_histogram():
    text = """\
# TYPE vllm:nixl_xfer_time_seconds histogram
vllm:nixl_xfer_time_seconds_bucket{le="0.01"} 4
vllm:nixl_xfer_time_seconds_bucket{le="+Inf"} 4
vllm:nixl_xfer_time_seconds_sum 0.02
vllm:nixl_xfer_time_seconds_count 4
# TYPE vllm:nixl_bytes_transferred counter
vllm:nixl_bytes_transferred_total{engine="0"} 6.0e8
vllm:nixl_bytes_transferred_total{engine="1"} 4.0e8
vllm:nixl_bytes_transferred_created{engine="0"} 1.7e9
"""
    m = parse_prometheus_metrics(text)
    assert m.nixl_xfer_mean_s == pytest.approx(0.005)
    assert m.nixl_bytes_mean == pytest.approx(1e9 / 4)
    assert m.effective_bandwidth_bytes_per_s == pytest.approx(1e9 / 0.02)
    assert m.gap_source == "vllm:nixl_xfer_time_seconds"  # fallback, named
    assert m.summaries["vllm:nixl_bytes_transferred"].kind == "counter"


def test_sglang_gauges_scaled():
    text = """\
sglang:kv_transfer_latency_ms{tp_rank="0"} 80
sglang:kv_transfer_latency_ms{tp_rank="1"} 120
sglang:kv_transfer_speed_gb_s{tp_rank="0"} 10.5
sglang:kv_transfer_speed_gb_s{tp_rank="1"} 9.5
"""
    m = parse_prometheus_metrics(text)
    assert m.gap_mean_s == pytest.approx(0.100)
    assert m.effective_bandwidth_bytes_per_s == pytest.approx(10e9)


def test_prometheus_without_known_metrics_lists_found_and_expected():
    text = "# TYPE foo_total counter\nfoo_total 3\nbar 1\n"
    with pytest.raises(MeasureError) as exc:
        parse_prometheus_metrics(text, "x.prom")
    msg = str(exc.value)
    assert "x.prom" in msg and "foo_total" in msg and "bar" in msg
    assert "llm_kv_transfer_gap_seconds" in msg and "vllm:time_to_first_token_seconds" in msg


@pytest.mark.parametrize(
    "bad, line",
    [
        ('vllm:time_to_first_token_seconds_bucket{le="0.5', 3),  # truncated
        ("vllm:time_to_first_token_seconds_cou", 3),  # cut before the value
        ("this is garbage", 3),
        ('vllm:time_to_first_token_seconds_bucket{le="0.5"} abc', 3),
    ],
)
def test_garbled_prometheus_line_is_named(bad, line):
    text = (
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        'vllm:time_to_first_token_seconds_bucket{le="0.1"} 1\n' + bad + "\n"
    )
    with pytest.raises(MeasureError, match=rf"line {line}\b.*expected Prometheus text"):
        parse_prometheus_metrics(text, "scrape.prom")


def test_decreasing_buckets_name_the_line():
    text = HIST.replace('engine="1",le="1.0"} 20', 'engine="1",le="1.0"} 5')
    with pytest.raises(
        MeasureError, match=r'line 11: .*\{engine="1",le="1"\} is 5, below 10 .*never decrease'
    ):
        parse_prometheus_metrics(text)


def test_bucket_without_le_is_an_error():
    text = 'vllm:time_to_first_token_seconds_bucket{x="1"} 3\n'
    with pytest.raises(MeasureError, match="line 1: .*no le label"):
        parse_prometheus_metrics(text)
