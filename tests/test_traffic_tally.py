"""Reading a table as counts per length (``per_request=False``, what the app and the CLI do):
hand-counted results, both counting paths, every shipped sample, and that no column is kept."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kvmodel import traffic as tr
from kvmodel.build import build_scenario
from kvmodel.traffic import TrafficError, load_traffic, tally


def _counts(req) -> dict[int, float]:
    return _pairs(req.prompt_tokens, req.weights)


def _pairs(keys, values) -> dict:
    return dict(zip(keys.tolist(), values.tolist(), strict=True))


def test_burstgpt_counts_by_hand():
    # Rows 3 and 5 are bad (a negative and an empty length); row 3 also has 0 response tokens,
    # which must not count as a failed request: only kept rows do (row 2 here).
    text = (
        "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
        "2,ChatGPT,100,0,100,Conversation log\n"
        "4,ChatGPT,-1,0,-1,Conversation log\n"
        "7,ChatGPT,300,20,320,Conversation log\n"
        "9,GPT-4,,5,5,Conversation log\n"
        "12,GPT-4,100,7,107,API log\n"
    )
    r = load_traffic(text.encode(), name="burst.csv", per_request=False)
    assert r.fmt == "burstgpt"
    assert _counts(r) == {100: 2.0, 300: 1.0}
    assert r.n_requests == 3
    assert r.span_s == 10.0  # 12 s - 2 s: the kept rows' first and last arrival
    assert r.columns["failed_requests"] == 1
    assert r.skipped_rows == 2 and r.output_tokens is None and r.arrival_s is None
    assert r.skipped_examples == (
        "row 3: Request tokens is -1 (expected a whole number >= 0)",
        "row 5: Request tokens is empty (expected a whole number >= 0)",
    )


@pytest.mark.parametrize("dense_max", [50_000_000, 1_000, 0])
def test_counts_across_many_parts_and_both_counting_paths(tmp_path, monkeypatch, dense_max):
    """Lengths counted by bincount (below ``_DENSE_MAX``) and by sorting (above), mixed across
    12 row groups read on several threads, add up to a plain Counter of the lengths."""
    from kvmodel.traffic import parquet

    monkeypatch.setattr(tally, "_DENSE_MAX", dense_max)
    monkeypatch.setattr(parquet, "_JOB_ROWS", 1000)
    monkeypatch.setattr(parquet, "_BATCH_ROWS", 300)
    rng = np.random.default_rng(3)
    prompt = rng.integers(0, 3000, 6000)
    prompt[::97] = 10**12 + rng.integers(0, 5, prompt[::97].size)  # huge: sorted, not binned
    times = np.arange(6000) * 0.5 + 1e9  # epoch seconds
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"timestamp": times, "prompt_tokens": prompt}), path, 500)
    r = load_traffic(path, per_request=False)
    assert _counts(r) == {int(k): float(v) for k, v in Counter(prompt.tolist()).items()}
    assert r.prompt_tokens.dtype == np.int64 and r.weights.dtype == np.float64
    assert list(r.prompt_tokens) == sorted(r.prompt_tokens)
    assert r.span_s == 5999 * 0.5 and r.columns["time_unit"] == "s"


def test_epoch_milliseconds_and_date_times_give_seconds():
    ms = "timestamp,prompt_tokens\n1700000000000,10\n1700000004500,20\n1700000001000,10\n"
    r = load_traffic(ms.encode(), name="t.csv", per_request=False)
    assert r.columns["time_unit"] == "ms" and r.span_s == 4.5
    dt = "created_at,prompt_tokens\n2024-05-01T10:00:00Z,10\n2024-05-01T10:02:00.25Z,20\n"
    r = load_traffic(dt.encode(), name="t.csv", per_request=False)
    assert r.columns["time_unit"] == "date-time" and r.span_s == 120.25
    one = "timestamp,prompt_tokens\n5,10\n"  # one request: no span
    assert load_traffic(one.encode(), name="t.csv", per_request=False).span_s is None


def test_no_times_and_histograms_pass_through():
    r = load_traffic(b"prompt_tokens\n5\n5\n9\n", name="t.csv", per_request=False)
    assert _counts(r) == {5: 2.0, 9: 1.0} and r.span_s is None
    hist = b"le,count\n128,10\n512,5\n+Inf,1\n"
    a = load_traffic(hist, name="h.csv")
    b = load_traffic(hist, name="h.csv", per_request=False)
    assert _counts(a) == _counts(b) == {128: 10.0, 512: 5.0}
    assert b.columns == a.columns and b.skipped_rows == a.skipped_rows == 1


def test_mooncake_pairs_keep_prefix_hits():
    # Request 2 shares its first block with request 1 (a 512-token hit); request 3 repeats
    # request 1 exactly (two hits, capped at its 700 tokens).
    lines = [
        '{"timestamp": 0, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]}',
        '{"timestamp": 1000, "input_length": 900, "output_length": 5, "hash_ids": [1, 3]}',
        '{"timestamp": 3000, "input_length": 700, "output_length": 5, "hash_ids": [1, 2]}',
    ]
    r = load_traffic("\n".join(lines).encode(), name="m.jsonl", per_request=False)
    pairs = sorted(
        zip(r.prompt_tokens.tolist(), r.cached_tokens.tolist(), r.weights.tolist(), strict=True)
    )
    assert pairs == [(700, 0, 1.0), (700, 700, 1.0), (900, 512, 1.0)]
    assert r.span_s == 3.0
    mix = tr.mix_from_requests(r)  # moved: 700, 0, 388
    assert _pairs(mix.tokens, mix.weights) == {0: 1, 388: 1, 700: 1}
    half = tr.mix_from_requests(r, hit_ratio=0.5)  # 350, 350, 450
    assert _pairs(half.tokens, half.weights) == {350: 2, 450: 1}


@pytest.mark.parametrize("sample", list(tr.SAMPLES))
def test_every_sample_gives_the_same_analysis_both_ways(sample):
    path = tr.sample_path(sample)
    full = load_traffic(path)
    counted = load_traffic(path, per_request=False)
    assert counted.weights is not None and counted.n_requests == full.n_requests
    assert len(counted.prompt_tokens) <= len(full.prompt_tokens)
    sc = tr.per_request_scenario(build_scenario(model="llama-3.1-70b", link="100gbe"))
    a, b = tr.mix_from_requests(full), tr.mix_from_requests(counted)
    assert tr.regions(sc, a) == tr.regions(sc, b)
    assert tr.load(sc, a) == tr.load(sc, b)


def test_all_rows_bad_is_the_same_error():
    text = b"prompt_tokens\n-1\nx\n"
    with pytest.raises(TrafficError) as one:
        load_traffic(text, name="t.csv")
    with pytest.raises(TrafficError) as two:
        load_traffic(text, name="t.csv", per_request=False)
    assert str(one.value) == str(two.value) and "none of the 2 data rows" in str(two.value)
