"""The /metrics reader (kvmodel.traffic.prometheus): prompt-length histograms de-cumulated and
summed over label sets, the +Inf bucket left out and counted, bad lines named."""

import pytest
from traffic_helpers import SAMPLES, error_of, load_text, load_traffic

from kvmodel.traffic import TrafficError, table_columns


def test_vllm_scrape_sample_decumulated_and_summed_over_models():
    r = load_traffic(SAMPLES / "vllm_metrics_sample.prom")
    assert r.fmt == "prometheus-vllm"
    # Per-bucket counts by hand from the cumulative lines, Llama + Qwen:
    # le=2: 0 + (1-0); le=5: 0 + (3-1); le=10: (3-0) + (7-3); le=20: (10-3) + (13-7) ...
    expected = {
        2: 0 + 1,
        5: 0 + 2,
        10: 3 + 4,
        20: 7 + 6,
        50: 18 + 10,
        100: 35 + 20,
        200: 52 + 31,
        500: 80 + 45,
        1000: 61 + 38,
        2000: 40 + 27,
        5000: 22 + 15,
        10000: 9 + 6,
        20000: 4 + 2,
    }
    assert dict(zip(r.prompt_tokens.tolist(), r.weights.tolist(), strict=True)) == expected
    assert r.n_requests == 538  # 331 + 207 in finite buckets; le=1 is empty, so left out
    assert r.output_tokens is None and r.arrival_s is None and r.cached_tokens is None
    # Llama's +Inf bucket: 333 - 331 = 2 requests above 20000 tokens
    assert r.columns["overflow_requests"] == 2 and r.columns["overflow_above_tokens"] == 20000
    assert r.skipped_rows == 1
    assert r.skipped_examples[0].startswith("line 63: +Inf bucket")
    assert "2 requests above 20000 tokens" in r.skipped_examples[0]
    assert "Qwen/Qwen3-8B" in r.columns["label_sets"]


def test_sglang_scrape_sample_ignores_the_uncached_histogram():
    r = load_traffic(SAMPLES / "sglang_metrics_sample.prom")
    assert r.fmt == "prometheus-sglang"
    # cumulative 40, 95, 133, 163, 207 -> 40, 55, 38, 30, 44
    assert r.prompt_tokens[:5].tolist() == [100, 300, 500, 700, 1000]
    assert r.weights[:5].tolist() == [40, 55, 38, 30, 44]
    assert 30000 not in r.prompt_tokens  # 387 -> 387: empty bucket left out
    assert r.n_requests == 388 and r.columns["overflow_requests"] == 3
    assert r.skipped_examples[0].startswith("line 50: +Inf bucket")


VLLM_INLINE = """\
# HELP vllm:request_prompt_tokens Number of prefill tokens processed.
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{le="10.0",model_name="a"} 1.0
vllm:request_prompt_tokens_bucket{le="100.0",model_name="a"} 4.0
vllm:request_prompt_tokens_bucket{le="1000.0",model_name="a"} 9.0
vllm:request_prompt_tokens_bucket{le="+Inf",model_name="a"} 9.0
vllm:request_prompt_tokens_count{model_name="a"} 9.0
vllm:request_prompt_tokens_sum{model_name="a"} 3210.0
vllm:request_prompt_tokens_bucket{le="10.0",model_name="b"} 0.0
vllm:request_prompt_tokens_bucket{le="100.0",model_name="b"} 2.0
vllm:request_prompt_tokens_bucket{le="1000.0",model_name="b"} 2.0
vllm:request_prompt_tokens_bucket{le="+Inf",model_name="b"} 5.0
"""


def test_prometheus_inline_bytes():
    r = load_text(VLLM_INLINE)  # no name: detected by the # TYPE line
    assert r.prompt_tokens.tolist() == [10, 100, 1000]
    assert r.weights.tolist() == [1 + 0, 3 + 2, 5 + 0]
    assert r.columns["overflow_requests"] == 3 and r.skipped_rows == 1
    assert r.skipped_examples[0].startswith('line 12: +Inf bucket {model_name="b"}: 3 requests')


def test_prometheus_without_help_or_type_lines():
    text = 'sglang:prompt_tokens_histogram_bucket{le="100",model_name="m"} 3\n'
    text += 'sglang:prompt_tokens_histogram_bucket{le="300",model_name="m"} 5\n'
    r = load_text(text, "metrics.txt")
    assert r.fmt == "prometheus-sglang"
    assert r.prompt_tokens.tolist() == [100, 300] and r.weights.tolist() == [3, 2]


def test_prometheus_non_monotonic_buckets_name_the_line():
    bad = VLLM_INLINE.replace('le="1000.0",model_name="a"} 9.0', 'le="1000.0",model_name="a"} 3.0')
    msg = error_of(bad, "metrics.prom")
    assert "line 5:" in msg and "is 3, below 4" in msg and "never decrease" in msg


def test_prometheus_errors():
    msg = error_of("# TYPE foo counter\nfoo_total 3\n", "metrics.prom")
    assert "no prompt-length histogram" in msg and "vllm:request_prompt_tokens_bucket" in msg
    msg = error_of(VLLM_INLINE + "this is { not prometheus\n", "m.prom")
    assert "line 13" in msg and "not Prometheus text" in msg
    zero = "\n".join(
        f'vllm:request_prompt_tokens_bucket{{le="{le}"}} {c}' for le, c in (("10", 0), ("+Inf", 4))
    )
    assert "holds no requests" in error_of(zero + "\n", "m.prom")
    assert "tables only" in error_of(VLLM_INLINE, "m.prom", prompt_column="x")
    assert "not a table" in str(pytest.raises(TrafficError, table_columns, VLLM_INLINE.encode()))
