"""Traffic input: every format from real or realistic samples, exact numbers, and bad input that
is skipped (counted, with the row named) or refused with a TrafficError naming the problem."""

import gzip
import io
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kvmodel.traffic import mix_from_requests
from kvmodel.traffic_io import (
    GZIP_EXPANSION,
    MOONCAKE_BLOCK_TOKENS,
    Requests,
    TrafficError,
    detect_columns,
    load_traffic,
    table_columns,
)
from kvmodel.traffic_tally import summarise

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
AZURE_CODE = TRACES / "azure2023" / "AzureLLMInferenceTrace_code.csv"
AZURE_CONV = TRACES / "azure2023" / "AzureLLMInferenceTrace_conv.csv"
MOONCAKE = TRACES / "mooncake" / "conversation_trace.jsonl"
SAMPLES = TRACES / "samples"


@pytest.fixture(autouse=True)
def _both_ways(monkeypatch):
    """Every load in this file is made twice: per request (what the tests check) and with
    ``per_request=False``, which must give the same requests counted per distinct length (or
    the same error): the app and the CLI read that way."""
    real = load_traffic

    def both(src, **kw):
        if "per_request" in kw:
            return real(src, **kw)
        try:
            full = real(src, **kw)
        except TrafficError as exc:
            if hasattr(src, "seek"):
                src.seek(0)
            with pytest.raises(TrafficError) as again:
                real(src, **{**kw, "progress": None}, per_request=False)
            assert str(again.value) == str(exc)
            raise
        if hasattr(src, "seek"):
            src.seek(0)
        _same_counts(real(src, **{**kw, "progress": None}, per_request=False), full)
        return full

    monkeypatch.setitem(globals(), "load_traffic", both)


def _same_counts(summary: Requests, full: Requests) -> None:
    """``summary`` holds ``full``'s requests as one weighted entry per distinct length (per
    (prompt, cached) pair), with the same span, skipped rows and notes."""
    want = summarise(full)
    assert summary.output_tokens is None and summary.arrival_s is None
    for f in ("prompt_tokens", "weights", "cached_tokens"):
        x, y = getattr(summary, f), getattr(want, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert summary.span_s == want.span_s
    assert (summary.fmt, summary.skipped_rows, summary.skipped_examples) == (
        full.fmt,
        full.skipped_rows,
        full.skipped_examples,
    )
    assert summary.columns == full.columns
    for hit in (None, 0.25):  # and the analyses see the same traffic
        a, b = mix_from_requests(summary, hit_ratio=hit), mix_from_requests(full, hit_ratio=hit)
        assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.weights, b.weights)
        assert a.span_s == b.span_s


def _load(text: str | bytes, name: str | None = None, **kw) -> Requests:
    data = text.encode() if isinstance(text, str) else text
    return load_traffic(data, name=name, **kw)


def _error(text: str | bytes, name: str | None = None, **kw) -> str:
    with pytest.raises(TrafficError) as info:
        _load(text, name, **kw)
    return str(info.value)


# --------------------------------------------------------------------------- shipped real traces


def test_azure_code_real_trace():
    r = load_traffic(AZURE_CODE)
    assert r.fmt == "azure2023"
    assert len(r.prompt_tokens) == 8819 and r.n_requests == 8819 and r.weights is None
    assert r.skipped_rows == 0 and r.skipped_examples == ()
    assert r.prompt_tokens.dtype == np.int64 and r.output_tokens.dtype == np.int64
    # first rows: 18:17:03.9799600,4808,10 / 04.0319600,3180,8 / 04.0781490,110,27
    assert r.prompt_tokens[:3].tolist() == [4808, 3180, 110]
    assert r.output_tokens[:3].tolist() == [10, 8, 27]
    assert r.arrival_s[:3] == pytest.approx([0.0, 0.052, 0.098189])
    assert r.arrival_s.dtype == np.float64 and r.arrival_s.min() == 0
    assert r.prompt_tokens[-1] == 549 and r.output_tokens[-1] == 173
    assert r.cached_tokens is None
    assert r.columns["prompt_tokens"] == "ContextTokens"
    assert r.columns["output_tokens"] == "GeneratedTokens"
    assert r.columns["arrival_s"] == "TIMESTAMP"


def test_azure_conv_real_trace():
    r = load_traffic(AZURE_CONV)
    assert r.fmt == "azure2023" and len(r.prompt_tokens) == 19366 and r.skipped_rows == 0
    assert r.prompt_tokens[:4].tolist() == [374, 396, 879, 91]
    assert r.arrival_s[1] == pytest.approx(4.314579)


def _reference_prefix_hits(lines) -> list[int]:
    """The rule written the plain way: one pass, one set of blocks seen so far."""
    seen, out = set(), []
    for rec in lines:
        lead = 0
        for block in rec["hash_ids"]:
            if block not in seen:
                break
            lead += 1
        out.append(min(MOONCAKE_BLOCK_TOKENS * lead, rec["input_length"]))
        seen.update(rec["hash_ids"])
    return out


def test_mooncake_real_trace():
    r = load_traffic(MOONCAKE)
    assert r.fmt == "mooncake" and len(r.prompt_tokens) == 12031 and r.skipped_rows == 0
    records = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    assert r.prompt_tokens.tolist() == [x["input_length"] for x in records]
    assert r.output_tokens.tolist() == [x["output_length"] for x in records]
    assert r.cached_tokens.tolist() == _reference_prefix_hits(records)
    # the first request shares nothing; the next ones share block 0 (the system prompt)
    assert r.cached_tokens[:3].tolist() == [0, 512, 512]
    assert (r.cached_tokens <= r.prompt_tokens).all()
    assert r.arrival_s[0] == 0 and r.arrival_s[-1] == pytest.approx(records[-1]["timestamp"] / 1e3)
    assert r.columns["time_unit"] == "ms" and r.columns["cached_tokens"] == "hash_ids"


# --------------------------------------------------------------------------- known layouts


def test_mooncake_prefix_rule_by_hand():
    lines = [
        {"timestamp": 0, "input_length": 1500, "output_length": 10, "hash_ids": [1, 2, 3]},
        # 1, 2 seen, 4 not: 2 blocks
        {"timestamp": 0, "input_length": 2000, "output_length": 20, "hash_ids": [1, 2, 4, 5]},
        # all 3 seen: 1536, capped at the 700-token prompt
        {"timestamp": 3000, "input_length": 700, "output_length": 30, "hash_ids": [1, 2, 3]},
        # 9 is new, so the seen 1, 2 after it are no prefix hit
        {"timestamp": 6000, "input_length": 3000, "output_length": 40, "hash_ids": [9, 1, 2]},
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    r = _load(text, "trace.jsonl")
    assert r.fmt == "mooncake"
    assert r.cached_tokens.tolist() == [0, 1024, 700, 0]
    assert r.cached_tokens.tolist() == _reference_prefix_hits(lines)
    assert r.arrival_s.tolist() == [0.0, 0.0, 3.0, 6.0]
    assert r.output_tokens.tolist() == [10, 20, 30, 40]


def test_mooncake_block_repeated_inside_one_request_is_no_hit():
    lines = [
        {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [7, 7]},
        {"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [7, 7]},
        {"timestamp": 2, "input_length": 100, "output_length": 1, "hash_ids": []},
    ]
    r = _load("".join(json.dumps(x) + "\n" for x in lines))
    assert r.cached_tokens.tolist() == [0, 1024, 0]


def test_burstgpt_sample_keeps_failed_requests():
    r = load_traffic(SAMPLES / "burstgpt_sample.csv")
    assert r.fmt == "burstgpt" and len(r.prompt_tokens) == 200 and r.skipped_rows == 0
    assert r.prompt_tokens[:3].tolist() == [2191, 432, 2704]
    assert r.output_tokens[:3].tolist() == [181, 1491, 134]
    assert r.arrival_s[:3].tolist() == [0.0, 1.0, 3.0]  # Timestamp 5, 6, 8 s
    assert (r.output_tokens == 0).sum() == 11 == r.columns["failed_requests"]
    assert r.columns["prompt_tokens"] == "Request tokens"
    assert r.columns["output_tokens"] == "Response tokens"


def test_burstgpt_inline():
    text = (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "5,ChatGPT,472,18,490,Conversation log\n"
        "45,GPT-4,1024,0,1024,API log\n"
        "118,ChatGPT,1020,254,1274,Conversation log\n"
    )
    r = _load(text, "BurstGPT_1.csv")
    assert r.fmt == "burstgpt"
    assert r.prompt_tokens.tolist() == [472, 1024, 1020]
    assert r.output_tokens.tolist() == [18, 0, 254]
    assert r.arrival_s.tolist() == [0.0, 40.0, 113.0]
    assert r.columns["failed_requests"] == 1


# --------------------------------------------------------------------------- Prometheus


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
    r = _load(VLLM_INLINE)  # no name: detected by the # TYPE line
    assert r.prompt_tokens.tolist() == [10, 100, 1000]
    assert r.weights.tolist() == [1 + 0, 3 + 2, 5 + 0]
    assert r.columns["overflow_requests"] == 3 and r.skipped_rows == 1
    assert r.skipped_examples[0].startswith('line 12: +Inf bucket {model_name="b"}: 3 requests')


def test_prometheus_without_help_or_type_lines():
    text = 'sglang:prompt_tokens_histogram_bucket{le="100",model_name="m"} 3\n'
    text += 'sglang:prompt_tokens_histogram_bucket{le="300",model_name="m"} 5\n'
    r = _load(text, "metrics.txt")
    assert r.fmt == "prometheus-sglang"
    assert r.prompt_tokens.tolist() == [100, 300] and r.weights.tolist() == [3, 2]


def test_prometheus_non_monotonic_buckets_name_the_line():
    bad = VLLM_INLINE.replace('le="1000.0",model_name="a"} 9.0', 'le="1000.0",model_name="a"} 3.0')
    msg = _error(bad, "metrics.prom")
    assert "line 5:" in msg and "is 3, below 4" in msg and "never decrease" in msg


def test_prometheus_errors():
    msg = _error("# TYPE foo counter\nfoo_total 3\n", "metrics.prom")
    assert "no prompt-length histogram" in msg and "vllm:request_prompt_tokens_bucket" in msg
    msg = _error(VLLM_INLINE + "this is { not prometheus\n", "m.prom")
    assert "line 13" in msg and "not Prometheus text" in msg
    zero = "\n".join(
        f'vllm:request_prompt_tokens_bucket{{le="{le}"}} {c}' for le, c in (("10", 0), ("+Inf", 4))
    )
    assert "holds no requests" in _error(zero + "\n", "m.prom")
    assert "tables only" in _error(VLLM_INLINE, "m.prom", prompt_column="x")
    assert "not a table" in str(pytest.raises(TrafficError, table_columns, VLLM_INLINE.encode()))


# --------------------------------------------------------------------------- histograms


def test_histogram_sample():
    r = load_traffic(SAMPLES / "histogram_sample.csv")
    assert r.fmt == "histogram" and r.columns["weights_kind"] == "count"
    assert r.prompt_tokens.tolist() == [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert r.weights.tolist() == [812, 1450, 2210, 2630, 1985, 1240, 610, 215, 48]
    assert r.n_requests == 11200 and r.weights.dtype == np.float64


def test_histogram_overflow_row_and_duplicate_bounds():
    r = _load("le,count\n100,5\n1000,3\n100,1\n+Inf,2\n1.5,4\n", "h.csv")
    assert r.prompt_tokens.tolist() == [1, 100, 1000]  # 1.5 -> 1 whole token; 100 summed
    assert r.weights.tolist() == [4, 6, 3]
    assert r.skipped_rows == 1 and r.columns["overflow_requests"] == 2
    assert r.skipped_examples == (
        "row 5: le is +Inf: 2 requests above 1000 tokens have no upper bound; left out",
    )


def test_histogram_probability_scaled_to_one():
    r = _load("upper_bound,probability\n512,0.2\n2048,0.6\n8192,0.2\n", "p.csv")
    assert r.fmt == "histogram-probability"
    assert r.weights == pytest.approx([0.2, 0.6, 0.2]) and r.n_requests == pytest.approx(1)
    assert r.columns["total_requests"] == "unknown"
    assert r.columns["weights_kind"] == "probability" and r.columns["weights"] == "probability"
    r = _load("tokens,pct\n100,30\n200,50\n", "p.csv")
    assert r.weights == pytest.approx([0.375, 0.625])


def test_histogram_bad_rows_and_empty():
    r = _load("bucket,requests\n100,3\n200,-1\n300,x\n400,2\n", "h.csv")
    assert r.weights.tolist() == [3, 2] and r.skipped_rows == 2
    assert r.skipped_examples[0] == "row 3: requests is -1 (expected a number >= 0)"
    assert r.skipped_examples[1] == "row 4: requests is 'x' (expected a number >= 0)"
    assert "holds no requests" in _error("le,count\n100,0\n200,0\n", "h.csv")


# --------------------------------------------------------------------------- containers


def test_gzip_by_magic_and_by_name(tmp_path):
    packed = gzip.compress(AZURE_CODE.read_bytes())
    plain = tmp_path / "azure_code.csv"  # no .gz in the name: found by the magic bytes
    plain.write_bytes(packed)
    r = load_traffic(plain)
    assert r.fmt == "azure2023" and len(r.prompt_tokens) == 8819
    assert r.columns["container"] == "csv+gzip"
    r = load_traffic(packed, name="AzureLLMInferenceTrace_code.csv.gz")
    assert len(r.prompt_tokens) == 8819 and r.prompt_tokens[0] == 4808


def test_gzip_jsonl():
    lines = MOONCAKE.read_bytes().splitlines(keepends=True)[:100]
    r = load_traffic(gzip.compress(b"".join(lines)), name="trace.jsonl.gz")
    assert r.fmt == "mooncake" and len(r.prompt_tokens) == 100
    assert r.columns["container"] == "jsonl+gzip"


def test_parquet_path_and_bytes(tmp_path):
    rows = 1000
    table = pa.table(
        {
            "request_id": [f"r{i}" for i in range(rows)],
            "prompt_tokens": np.arange(rows, dtype=np.int32) * 3,
            "completion_tokens": np.full(rows, 7, dtype=np.int64),
            "arrival_time": np.arange(rows) * 0.5,
        }
    )
    path = tmp_path / "requests.parquet"
    pq.write_table(table, path)
    r = load_traffic(path)
    assert r.fmt == "generic-table" and r.columns["container"] == "parquet"
    assert r.prompt_tokens.tolist() == list(range(0, 3 * rows, 3))
    assert r.prompt_tokens.dtype == np.int64
    assert (r.output_tokens == 7).all() and r.arrival_s[-1] == pytest.approx(499.5)
    r = load_traffic(path.read_bytes())  # found by the PAR1 magic, no name
    assert len(r.prompt_tokens) == rows
    assert table_columns(path) == table.column_names


def test_parquet_with_nulls_and_corrupt(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"isl": pa.array([10, None, 30], pa.int64())}), path)
    r = load_traffic(path)
    assert r.prompt_tokens.tolist() == [10, 30] and r.skipped_rows == 1
    assert r.skipped_examples == ("row 2: isl is empty (expected a whole number >= 0)",)
    msg = _error(b"PAR1" + b"\x01\x02garbage" * 10, "t.parquet")
    assert "Parquet" in msg


def test_generic_jsonl_with_epoch_milliseconds():
    lines = [
        {"id": 1, "prompt_tokens": 120, "completion_tokens": 30, "created": 1_700_000_000_000},
        {"id": 2, "prompt_tokens": 480, "completion_tokens": 12, "created": 1_700_000_001_500},
    ]
    r = _load("".join(json.dumps(x) + "\n" for x in lines), "log.jsonl")
    assert r.fmt == "generic-table"
    assert r.prompt_tokens.tolist() == [120, 480] and r.output_tokens.tolist() == [30, 12]
    assert r.arrival_s.tolist() == [0.0, 1.5] and r.columns["time_unit"] == "ms"


def test_nested_json_usage_and_json_array():
    lines = [
        {"created": "2024-05-01T10:00:00Z", "usage": {"prompt_tokens": 9, "completion_tokens": 1}},
        {
            "created": "2024-05-01T10:00:02.5Z",
            "usage": {"prompt_tokens": 4, "completion_tokens": 2},
        },
    ]
    text = "\n".join(json.dumps(x) for x in lines)
    r = _load(text, "openai.jsonl")
    assert r.prompt_tokens.tolist() == [9, 4] and r.output_tokens.tolist() == [1, 2]
    assert r.arrival_s.tolist() == [0.0, 2.5]
    assert r.columns["prompt_tokens"] == "usage.prompt_tokens"
    assert "usage.prompt_tokens" in table_columns(text.encode(), name="openai.jsonl")
    r = _load(json.dumps(lines), "openai.json")
    assert r.prompt_tokens.tolist() == [9, 4] and r.columns["container"] == "json"


def test_tsv_by_name_and_by_content():
    text = "input_len\toutput_len\tarrival_time\n100\t5\t0.5\n200\t6\t1.25\n"
    for name in ("lengths.tsv", None):
        r = _load(text, name)
        assert r.prompt_tokens.tolist() == [100, 200] and r.output_tokens.tolist() == [5, 6]
        assert r.arrival_s.tolist() == [0.0, 0.75] and r.columns["container"] == "tsv"


def test_semicolon_table_and_case_insensitive_names():
    r = _load("ISL;OSL\n10;2\n20;3\n", "excel.csv")
    assert r.prompt_tokens.tolist() == [10, 20] and r.output_tokens.tolist() == [2, 3]


def test_utf16_and_bom():
    text = "Prompt Tokens,Output Tokens\n7,1\n8,2\n"
    assert _load(text.encode("utf-16")).prompt_tokens.tolist() == [7, 8]
    assert _load(b"\xef\xbb\xbf" + text.encode()).prompt_tokens.tolist() == [7, 8]


def test_file_like_upload_and_progress():
    class Upload:  # what Streamlit's UploadedFile offers
        name = "AzureLLMInferenceTrace_code.csv"

        def getvalue(self):
            return AZURE_CODE.read_bytes()

    seen = []
    r = load_traffic(Upload(), progress=seen.append)
    assert len(r.prompt_tokens) == 8819
    assert len(seen) >= 3 and seen == sorted(seen) and seen[0] == 0 and seen[-1] == 1
    r = load_traffic(io.BytesIO(b"prompt_tokens\n5\n"))
    assert r.prompt_tokens.tolist() == [5]


# --------------------------------------------------------------------------- column picking


def test_detect_columns():
    det = detect_columns(["TIMESTAMP", "ContextTokens", "GeneratedTokens"])
    assert det["fmt"] == "azure2023" and det["prompt_tokens"] == "ContextTokens"
    assert det["output_tokens"] == "GeneratedTokens" and det["arrival_s"] == "TIMESTAMP"
    det = detect_columns(["timestamp", "input_length", "output_length", "hash_ids"])
    assert det["fmt"] == "mooncake" and det["cached_tokens"] == "hash_ids"
    names = ["Timestamp", "Model", "Request tokens", "Response tokens", "Total tokens", "Log Type"]
    assert detect_columns(names)["fmt"] == "burstgpt"
    det = detect_columns(["le", "count"])
    assert det["fmt"] == "histogram" and det["weights"] == "count"
    assert det["weights_kind"] == "count" and det["prompt_tokens"] == "le"
    assert detect_columns(["prompt_tokens", "n"])["fmt"] == "generic-table"  # "n" needs a bucket
    det = detect_columns(["a", "b"])
    assert det["fmt"] is None and det["prompt_tokens"] is None


def test_manual_column_override():
    text = "req,len_in,len_out,t\n1,100,5,0\n2,250,6,2\n"
    msg = _error(text, "custom.csv")
    assert "row 1 (the header)" in msg and "'len_in'" in msg and "prompt_tokens" in msg
    assert "by hand" in msg
    assert table_columns(text.encode(), name="custom.csv") == ["req", "len_in", "len_out", "t"]
    r = _load(text, "custom.csv", prompt_column="len_in", output_column="len_out", time_column="t")
    assert r.prompt_tokens.tolist() == [100, 250] and r.output_tokens.tolist() == [5, 6]
    assert r.arrival_s.tolist() == [0.0, 2.0] and r.fmt == "generic-table"
    assert r.columns["prompt_tokens"] == "len_in"
    assert _load(text, prompt_column="LEN_IN").columns["prompt_tokens"] == "len_in"
    msg = _error(text, "custom.csv", prompt_column="nope")
    assert "no column 'nope'" in msg and "'len_in'" in msg


def test_override_replaces_or_drops_detected_columns():
    r = load_traffic(AZURE_CODE, time_column="", output_column="")
    assert r.arrival_s is None and r.output_tokens is None
    r = load_traffic(AZURE_CODE, prompt_column="GeneratedTokens")
    assert r.prompt_tokens[:3].tolist() == [10, 8, 27]
    r = _load("isl,t_ms\n5,1000\n6,3500\n", time_column="t_ms")
    assert r.arrival_s.tolist() == [0.0, 2.5] and r.columns["time_unit"] == "ms"


# --------------------------------------------------------------------------- bad input corpus


def test_bad_lengths_are_skipped_and_named():
    text = (
        "prompt_tokens,output_tokens\n"
        "100,5\n"
        "-5,3\n"  # row 3
        "NaN,2\n"  # row 4
        "2.5,1\n"  # row 5
        "300,\n"  # row 6
        "400,4\n"
        "abc,4\n"  # row 8
    )
    r = _load(text, "lengths.csv")
    assert r.prompt_tokens.tolist() == [100, 400] and r.output_tokens.tolist() == [5, 4]
    assert r.skipped_rows == 5
    assert r.skipped_examples == (
        "row 3: prompt_tokens is -5 (expected a whole number >= 0)",
        "row 4: prompt_tokens is NaN (expected a whole number >= 0)",
        "row 5: prompt_tokens is 2.5 (expected a whole number >= 0)",
        "row 6: output_tokens is empty (expected a whole number >= 0)",
        "row 8: prompt_tokens is 'abc' (expected a whole number >= 0)",
    )


def test_bad_numeric_lengths_show_their_value():
    r = _load("context_tokens\n10\n-5\nnan\n2.5\n", "c.csv")  # read as numbers, not text
    assert r.prompt_tokens.tolist() == [10]
    assert r.skipped_examples == (
        "row 3: context_tokens is -5.0 (expected a whole number >= 0)",
        "row 4: context_tokens is NaN (expected a whole number >= 0)",
        "row 5: context_tokens is 2.5 (expected a whole number >= 0)",
    )


def test_bad_value_after_the_first_block_names_its_row():
    rows = 400_000  # ~11 MB: beyond the first parse block, so type inference has to retry
    stamps = np.datetime64("2023-11-16T18:17:03") + np.arange(rows) * np.timedelta64(10, "ms")
    body = [f"{s},{i % 5000},7" for i, s in enumerate(stamps.astype(str))]
    body[350_000] = body[350_000].rsplit(",", 2)[0] + ",oops,7"
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(body) + "\n"
    r = _load(text, "big.csv")
    assert len(r.prompt_tokens) == rows - 1 and r.skipped_rows == 1
    assert r.skipped_examples == (
        "row 350002: ContextTokens is 'oops' (expected a whole number >= 0)",
    )
    assert r.arrival_s[-1] == pytest.approx((rows - 1) * 0.01)


def test_rows_with_wrong_field_count_are_skipped():
    r = _load("prompt_tokens,output_tokens\n1,2\n3\n4,5\n6,7,8\n9,1\n", "x.csv")
    assert r.prompt_tokens.tolist() == [1, 4, 9] and r.skipped_rows == 2
    assert r.skipped_examples[0] == "row 3: has 1 field(s), expected 2: '3'"
    assert r.skipped_examples[1].startswith("row 5: has 3 field(s), expected 2")
    r = _load("prompt_tokens,output_tokens\n1,2\n3\n-4,5\n", "x.csv")
    assert r.skipped_examples[1] == "row 4: prompt_tokens is -4 (expected a whole number >= 0)"


def test_bad_json_lines_are_skipped_by_line():
    text = '{"input_length": 5}\n{bad\n\n{"input_length": "x"}\n[1]\n{"input_length": 7}\n'
    r = _load(text, "t.jsonl")
    assert r.prompt_tokens.tolist() == [5, 7] and r.skipped_rows == 3
    assert r.skipped_examples[0].startswith("line 2: is not valid JSON")
    assert r.skipped_examples[1] == "line 4: input_length is 'x' (expected a whole number >= 0)"
    assert r.skipped_examples[2] == "line 5: is a JSON list, expected an object"
    r = _load('{"isl": 1}\n\n{"isl": -1}\n', "t.jsonl")  # blank line: still the right line
    assert r.skipped_examples == ("line 3: isl is -1 (expected a whole number >= 0)",)


def test_bad_times_skip_the_row():
    r = _load("isl,timestamp\n5,2024-01-01 00:00:00\n6,yesterday\n7,2024-01-01 00:00:09\n")
    assert r.prompt_tokens.tolist() == [5, 7] and r.arrival_s.tolist() == [0.0, 9.0]
    assert r.skipped_examples[0].startswith("row 3: timestamp is 'yesterday' (expected a time")


def test_a_time_of_the_other_kind_says_so():
    r = _load("isl,timestamp\n5,100\n6,2024-01-01 00:00:00\n7,109\n", "t.csv")
    assert r.prompt_tokens.tolist() == [5, 7] and r.arrival_s.tolist() == [0.0, 9.0]
    assert r.skipped_examples == (
        "row 3: timestamp is '2024-01-01 00:00:00', a date-time, but the column's other rows "
        "hold numbers (expected one kind of time per column)",
    )
    r = _load("isl,timestamp\n5,2024-01-01 00:00:00\n6,100\n7,2024-01-01 00:00:09\n", "t.csv")
    assert r.prompt_tokens.tolist() == [5, 7]
    assert r.skipped_examples == (
        "row 3: timestamp is 100, a number, but the column's other rows hold date-times "
        "(expected one kind of time per column)",
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", "the file is empty"),
        (b"  \n\n ", "the file is empty"),
        (b"prompt_tokens,output_tokens\n", "only a header"),
        (b"foo,bar\n1,2\n", "no prompt-length column among 'foo', 'bar'"),
        (b"prompt_tokens\n-1\nx\n", "none of the 2 data rows is usable"),
        (bytes(range(256)) * 4, "binary data"),
        (b"prompt_tokens\n12\n\xff\xfe\xfa\n", "line 3 holds binary data"),
        (b"PK\x03\x04" + b"\x00" * 40, "zip archive"),
        (gzip.compress(b"prompt_tokens\n" + b"123\n" * 5000)[:-30], "gzip data is truncated"),
        (b"\x1f\x8b\x08\x00" + b"not deflate data" * 4, "gzip data is corrupt"),
        (b"[1, 2", "malformed JSON"),
    ],
)
def test_bad_input_corpus(data, expected):
    msg = _error(data, "upload.csv")
    assert expected in msg and msg.startswith("upload.csv: ")


def test_a_damaged_parquet_file_is_called_that():
    msg = _error(bytes(range(256)) * 4, "trace.parquet")
    assert msg.startswith("trace.parquet: not a Parquet file (it does not start with")


def test_a_column_of_the_wrong_type_names_the_file():
    buf = io.BytesIO()
    pq.write_table(pa.table({"prompt_tokens": pa.array([b"ab", b"cd"], pa.binary())}), buf)
    assert _error(buf.getvalue(), "b.parquet") == (
        "b.parquet: column 'prompt_tokens' holds binary values; expected a whole number >= 0 "
        "(pick another column by hand)"
    )


def test_a_quote_left_open_says_which_lines_it_swallowed():
    # Row 3 opens a quote that closes on line 5: a spreadsheet reads lines 3-5 as one row
    # (with one field too few), so row 4 is the line "-50,9" and "60,1" is kept.
    r = _load('prompt_tokens,output_tokens\n10,5\n"20,6\n30,7\n40,"8\n-50,9\n60,1\n', "q.csv")
    assert r.prompt_tokens.tolist() == [10, 60] and r.skipped_rows == 2
    assert r.skipped_examples == (
        'row 3: has a quote (") that does not close on its line, so it and the 2 lines after '
        "it were read as one row and skipped ('\"20,6'…); expected each quote to close on its "
        "own line",
        "row 4: prompt_tokens is -50 (expected a whole number >= 0)",
    )


def test_all_invalid_names_first_row():
    msg = _error("prompt_tokens\n-1\nx\n", "t.csv")
    assert "row 2: prompt_tokens is -1" in msg and "row 3: prompt_tokens is 'x'" in msg


def test_random_binary_garbage():
    noise = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    assert "binary data" in _error(noise, "trace.csv")


def test_size_limit(tmp_path):
    data = b"prompt_tokens\n" + b"100\n" * 500
    assert "over the 0.001 MB limit" in _error(data, "big.csv", max_bytes=1000)
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    with pytest.raises(TrafficError, match=r"0\.00201 MB, over the 0\.001 MB limit"):
        load_traffic(path, max_bytes=1000)
    assert len(load_traffic(path, max_bytes=len(data)).prompt_tokens) == 500
    bomb = gzip.compress(b"prompt_tokens\n" + b"1\n" * 100_000)
    assert "decompressed" in _error(bomb, "b.csv.gz", max_bytes=20_000)


def test_unreadable_sources(tmp_path):
    with pytest.raises(TrafficError, match="cannot read"):
        load_traffic(tmp_path / "missing.csv")
    with pytest.raises(TrafficError, match="expected a path, bytes or a binary file object"):
        load_traffic(12345)


def test_requests_checks_lengths():
    r = Requests(np.array([1, 2]), np.array([3.0, 1.0]), None, None, None, "histogram")
    assert r.n_requests == 4
    with pytest.raises(ValueError, match="weights has 1 entries; expected 2"):
        Requests(np.array([1, 2]), np.array([3.0]), None, None, None, "histogram")


# --------------------------------------------------------------------------- streaming reads


@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of 4 kB (CSV), jobs of 1000 and batches of 300 rows (Parquet): many of each."""
    from kvmodel import traffic_source, traffic_tables

    monkeypatch.setattr(traffic_source, "_PIECE", 4096)
    monkeypatch.setattr(traffic_tables, "_JOB_ROWS", 1000)
    monkeypatch.setattr(traffic_tables, "_BATCH_ROWS", 300)


def _same(a: Requests, b: Requests) -> None:
    for f in ("prompt_tokens", "weights", "output_tokens", "arrival_s", "cached_tokens"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert (a.fmt, a.skipped_rows, a.skipped_examples) == (
        b.fmt,
        b.skipped_rows,
        b.skipped_examples,
    )
    assert a.columns == b.columns


def _trace_csv(rows: int, bad: dict[int, str] | None = None) -> bytes:
    """timestamp,prompt_tokens,output_tokens with data row i on spreadsheet row i + 2."""
    body = [f"{i * 0.25:.2f},{100 + i % 977},{1 + i % 13}" for i in range(rows)]
    for i, line in (bad or {}).items():
        body[i] = line
    return ("timestamp,prompt_tokens,output_tokens\n" + "\n".join(body) + "\n").encode()


@pytest.mark.parametrize("pieces", [False, True])
def test_path_bytes_and_uploads_give_the_same_requests(tmp_path, request, pieces):
    if pieces:
        request.getfixturevalue("small_pieces")
    data = _trace_csv(3000, {1500: "375.00,-3,2", 2200: "1,2"})
    path = tmp_path / "trace.csv"
    path.write_bytes(data)

    class Upload(io.BytesIO):  # Streamlit's UploadedFile is a BytesIO with a name
        name = "trace.csv"

    ref = load_traffic(path)
    assert len(ref.prompt_tokens) == 2998 and ref.skipped_rows == 2
    for src in (
        data,
        bytearray(data),
        memoryview(data),
        Upload(data),
        io.BufferedReader(io.BytesIO(data)),
    ):
        _same(load_traffic(src, name="trace.csv"), ref)
    packed = tmp_path / "trace.csv.gz"
    packed.write_bytes(gzip.compress(data))
    for src in (packed, packed.read_bytes()):
        r = load_traffic(src, name="trace.csv.gz")
        assert r.columns.pop("container") == "csv+gzip"
        r.columns["container"] = "csv"
        _same(r, ref)


def test_bad_rows_in_later_pieces_name_their_rows(small_pieces):
    rows = 2000  # ~40 kB: about ten 4 kB pieces
    bad = {
        700: "175.00,2.5,3",  # row 702: a float where the first piece had whole numbers
        1200: "300.00,5",  # row 1202: one field short
        1500: "375.00,7,8,9",  # row 1502: one field too many
        1800: "450.00,,4",  # row 1802: empty
        1900: "475.00,abc,4",  # row 1902
        1950: "487.50,-1,4",  # row 1952: past the first five
    }
    r = _load(_trace_csv(rows, bad), "t.csv")
    assert r.skipped_rows == 6 and len(r.prompt_tokens) == rows - 6
    assert r.skipped_examples == (
        "row 702: prompt_tokens is 2.5 (expected a whole number >= 0)",
        "row 1202: has 2 field(s), expected 3: '300.00,5'",
        "row 1502: has 4 field(s), expected 3: '375.00,7,8,9'",
        "row 1802: prompt_tokens is empty (expected a whole number >= 0)",
        "row 1902: prompt_tokens is 'abc' (expected a whole number >= 0)",
    )
    keep = [i for i in range(rows) if i not in bad]
    assert r.prompt_tokens.tolist() == [100 + i % 977 for i in keep]
    assert r.arrival_s.tolist() == [i * 0.25 for i in keep]
    assert r.prompt_tokens.dtype == np.int64 and r.arrival_s.dtype == np.float64


def test_all_rows_bad_across_pieces_names_the_first(small_pieces):
    text = "prompt_tokens\n" + "x\n" * 3000
    msg = _error(text, "t.csv")
    assert "none of the 3000 data rows is usable" in msg and "row 2: prompt_tokens is 'x'" in msg


def test_short_rows_after_a_long_first_piece_overflow_the_estimate(small_pieces):
    long = [f"{i},{'9' * 60}" for i in range(100)]  # the first piece: few long rows
    short = [f"{i},{i % 50}" for i in range(100, 20_000)]  # then many short ones
    r = _load("prompt_tokens,note\n" + "\n".join(long + short) + "\n", "t.csv")
    assert r.prompt_tokens.tolist() == list(range(20_000)) and r.skipped_rows == 0


def test_time_column_empty_in_the_first_pieces(small_pieces):
    rows = [f"{i}," for i in range(1000)] + [
        f"{i},2024-01-01T00:00:{i % 60:02d}" for i in range(50)
    ]
    r = _load("prompt_tokens,timestamp\n" + "\n".join(rows) + "\n", "t.csv")
    assert r.skipped_rows == 1000 and r.prompt_tokens.tolist() == list(range(50))
    assert r.columns["time_unit"] == "date-time" and r.arrival_s.tolist() == list(range(50))
    assert (
        r.skipped_examples[0] == "row 2: timestamp is empty (expected a time: seconds, "
        "epoch milliseconds or a date-time)"
    )


def test_datetime_text_across_pieces_keeps_nanoseconds(small_pieces):
    stamps = np.datetime64("2023-11-16T18:17:03.9799600") + np.arange(3000) * np.timedelta64(
        1234567, "ns"
    )
    body = [f"{s},{i},1" for i, s in enumerate(stamps.astype(str))]
    body[2500] = "yesterday,5,1"  # row 2502
    r = _load("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(body) + "\n", "a.csv")
    assert r.fmt == "azure2023" and r.columns["time_unit"] == "date-time"
    assert r.skipped_examples == (
        "row 2502: TIMESTAMP is 'yesterday' (expected a time: seconds, epoch milliseconds or "
        "a date-time)",
    )
    expected = np.delete(np.arange(3000), 2500) * 1234567e-9
    assert np.allclose(r.arrival_s, expected, rtol=0, atol=1e-9)


def test_crlf_and_bom_across_pieces(small_pieces):
    data = b"\xef\xbb\xbf" + _trace_csv(2000, {1000: "250.00,-5,1"}).replace(b"\n", b"\r\n")
    r = _load(data, "t.csv")
    assert len(r.prompt_tokens) == 1999 and r.skipped_examples == (
        "row 1002: prompt_tokens is -5 (expected a whole number >= 0)",
    )
    assert r.prompt_tokens[-1] == 100 + 1999 % 977


def test_parquet_row_groups_and_batches(tmp_path, small_pieces):
    rows = 5000
    prompt = pa.array([None if i == 3210 else i for i in range(rows)], pa.int64())
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(rows)],
            "input_len": prompt,
            "output_len": np.full(rows, 3, np.int32),
            "arrival_time_ms": np.arange(rows) * 20.0,
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=700)
    r = load_traffic(path)
    assert len(r.prompt_tokens) == rows - 1 and r.skipped_rows == 1
    assert r.skipped_examples == ("row 3211: input_len is empty (expected a whole number >= 0)",)
    assert r.prompt_tokens.tolist() == [i for i in range(rows) if i != 3210]
    assert r.columns["time_unit"] == "ms" and r.arrival_s[-1] == pytest.approx((rows - 1) * 0.02)
    _same(load_traffic(path.read_bytes()), r)
    _same(load_traffic(io.BytesIO(path.read_bytes()), name="t.parquet"), r)


def test_gzip_streamed_limit_and_truncation(tmp_path, small_pieces):
    data = _trace_csv(5000)
    path = tmp_path / "t.csv.gz"
    path.write_bytes(gzip.compress(data))
    assert len(load_traffic(path).prompt_tokens) == 5000
    bomb = gzip.compress(b"prompt_tokens\n" + b"123\n" * 100_000)
    path.write_bytes(bomb)
    limit = len(bomb) + 10  # the file fits; inflated it is over GZIP_EXPANSION x the limit
    assert 400_000 > GZIP_EXPANSION * limit
    with pytest.raises(TrafficError, match="decompressed, the file is over"):
        load_traffic(path, max_bytes=limit)
    path.write_bytes(gzip.compress(data)[:-100])
    with pytest.raises(TrafficError, match="truncated"):
        load_traffic(path)


def test_progress_over_many_pieces(small_pieces):
    seen = []
    load_traffic(_trace_csv(5000), name="t.csv", progress=seen.append)
    assert seen[0] == 0 and seen[-1] == 1 and seen == sorted(seen) and 5 <= len(seen) <= 60


def test_unparseable_later_piece_names_its_row_and_stops(small_pieces):
    body = [f"{i},{i},1".encode() for i in range(30_000)]
    body[20_000] = b"1,\xff\xfe,3"  # not UTF-8, far past the sniffed start: row 20002
    with pytest.raises(TrafficError, match=r"t\.csv: cannot parse the table: .*row 20002: .*UTF8"):
        _load(b"ts,prompt_tokens,output_tokens\n" + b"\n".join(body) + b"\n", "t.csv")


@pytest.mark.parametrize("as_text", [False, True])
def test_parquet_date_times_typed_or_text(tmp_path, small_pieces, as_text):
    rows = 4000
    stamps = np.datetime64("2024-05-01T10:00:00") + np.arange(rows) * np.timedelta64(1500, "ms")
    created = pa.array(stamps.astype(str) if as_text else stamps)
    if as_text:
        created = pa.array(
            [("soon" if i == 2345 else v) for i, v in enumerate(created.to_pylist())]
        )
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"created": created, "isl": np.arange(rows)}), path, row_group_size=900)
    r = load_traffic(path)
    assert r.columns["time_unit"] == "date-time"
    keep = [i for i in range(rows) if not (as_text and i == 2345)]
    assert r.prompt_tokens.tolist() == keep and r.arrival_s.tolist() == [1.5 * i for i in keep]
    if as_text:
        assert r.skipped_examples[0].startswith("row 2346: created is 'soon' (expected a time")


def test_lines_longer_than_a_piece(tmp_path, small_pieces):
    rows = [f"{i},{'x' * (10_000 if i % 7 == 3 else 5)}" for i in range(200)]
    data = ("prompt_tokens,note\n" + "\n".join(rows)).encode()  # no final newline either
    path = tmp_path / "wide.csv"
    path.write_bytes(data)
    for src in (path, data):
        r = load_traffic(src, name="wide.csv")
        assert r.prompt_tokens.tolist() == list(range(200)) and r.skipped_rows == 0
