"""One metric over its label sets (kvmodel.measure.metric): histogram_quantile by hand."""

import math

import pytest

from kvmodel.measure import MetricSummary, histogram_quantile
from kvmodel.measure.metric import summarise_metric
from kvmodel.textio import parse_exposition


def test_histogram_quantile_hand_computed():
    b = [(0.1, 10), (0.5, 30), (1.0, 40), (math.inf, 40)]
    assert histogram_quantile(0.5, b) == pytest.approx(0.1 + 0.4 * 10 / 20)  # 0.3
    assert histogram_quantile(0.9, b) == pytest.approx(0.5 + 0.5 * 6 / 10)  # 0.8
    assert histogram_quantile(0.99, b) == pytest.approx(0.5 + 0.5 * 9.6 / 10)  # 0.98
    assert histogram_quantile(0.1, b) == pytest.approx(0.1 * 4 / 10)  # first bucket from 0
    # a rank in +Inf returns the largest finite bound
    assert histogram_quantile(0.9, [(0.1, 10), (math.inf, 20)]) == pytest.approx(0.1)
    assert histogram_quantile(0.5, [(0.1, 0), (math.inf, 0)]) is None  # no observations
    assert histogram_quantile(0.5, [(0.1, 3), (1.0, 5)]) is None  # no +Inf bucket
    with pytest.raises(ValueError):
        histogram_quantile(1.5, b)


def _samples(text: str):
    return parse_exposition(text, "m.prom", expected="expected metrics")


def test_summarise_metric_sums_label_sets_bucket_by_bucket_and_scales():
    # SGLang's latency in ms (scale 1e-3): engine a 1 ≤ 10 ms, 3 ≤ 20 ms; engine b 2 ≤ 20 ms;
    # summed: le 10 ms → 1, 20 ms → 5, +Inf → 5; mean = (30 + 35) ms / 5
    text = (
        'x_bucket{e="a",le="10"} 1\nx_bucket{e="a",le="20"} 3\nx_bucket{e="a",le="+Inf"} 3\n'
        'x_sum{e="a"} 30\nx_count{e="a"} 3\n'
        'x_bucket{e="b",le="20"} 2\nx_bucket{e="b",le="+Inf"} 2\n'
        'x_sum{e="b"} 35\nx_count{e="b"} 2\n'
    )
    notes = []
    s = summarise_metric("x", 1e-3, _samples(text), "m.prom", notes)
    assert isinstance(s, MetricSummary) and s.kind == "histogram" and s.label_sets == 2
    assert s.buckets == ((0.01, 1.0), (0.02, 5.0), (math.inf, 5.0))
    assert s.count == 5 and s.mean == pytest.approx(0.065 / 5) and notes == []
    assert s.p50 == pytest.approx(0.01 + 0.01 * (2.5 - 1) / 4)  # rank 2.5 in (10, 20] ms


def test_summarise_metric_gauges_counters_and_missing_inf():
    gauge = summarise_metric("g", 1.0, _samples('g{r="1"} 1\ng{r="2"} 3\n'), "m", [])
    assert (gauge.kind, gauge.count, gauge.mean, gauge.samples) == ("gauge", 2.0, 2.0, (1.0, 3.0))
    counter = summarise_metric("c", 1.0, _samples("c_total 7\n"), "m", [])
    assert counter.kind == "counter" and counter.sum == 7 and math.isnan(counter.count)
    notes = []
    no_inf = summarise_metric("h", 1.0, _samples('h_bucket{le="1"} 2\nh_count 4\n'), "m", notes)
    assert no_inf.buckets[-1] == (math.inf, 4.0) and "no +Inf bucket" in notes[0]
