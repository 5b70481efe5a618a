"""Checking values (kvmodel.traffic.checks): bad lengths and times skipped with their row and value,
one kind of time per column, Mooncake prefix-cache hits by hand."""

import io
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from traffic_helpers import error_of, load_text, reference_prefix_hits, shrink_pieces


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


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
    r = load_text(text, "lengths.csv")
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
    r = load_text("context_tokens\n10\n-5\nnan\n2.5\n", "c.csv")  # read as numbers, not text
    assert r.prompt_tokens.tolist() == [10]
    assert r.skipped_examples == (
        "row 3: context_tokens is -5.0 (expected a whole number >= 0)",
        "row 4: context_tokens is NaN (expected a whole number >= 0)",
        "row 5: context_tokens is 2.5 (expected a whole number >= 0)",
    )


def test_bad_times_skip_the_row():
    r = load_text("isl,timestamp\n5,2024-01-01 00:00:00\n6,yesterday\n7,2024-01-01 00:00:09\n")
    assert r.prompt_tokens.tolist() == [5, 7] and r.arrival_s.tolist() == [0.0, 9.0]
    assert r.skipped_examples[0].startswith("row 3: timestamp is 'yesterday' (expected a time")


def test_a_time_of_the_other_kind_says_so():
    r = load_text("isl,timestamp\n5,100\n6,2024-01-01 00:00:00\n7,109\n", "t.csv")
    assert r.prompt_tokens.tolist() == [5, 7] and r.arrival_s.tolist() == [0.0, 9.0]
    assert r.skipped_examples == (
        "row 3: timestamp is '2024-01-01 00:00:00', a date-time, but the column's other rows "
        "hold numbers (expected one kind of time per column)",
    )
    r = load_text("isl,timestamp\n5,2024-01-01 00:00:00\n6,100\n7,2024-01-01 00:00:09\n", "t.csv")
    assert r.prompt_tokens.tolist() == [5, 7]
    assert r.skipped_examples == (
        "row 3: timestamp is 100, a number, but the column's other rows hold date-times "
        "(expected one kind of time per column)",
    )


def test_time_column_empty_in_the_first_pieces(small_pieces):
    rows = [f"{i}," for i in range(1000)] + [
        f"{i},2024-01-01T00:00:{i % 60:02d}" for i in range(50)
    ]
    r = load_text("prompt_tokens,timestamp\n" + "\n".join(rows) + "\n", "t.csv")
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
    r = load_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(body) + "\n", "a.csv")
    assert r.fmt == "azure2023" and r.columns["time_unit"] == "date-time"
    assert r.skipped_examples == (
        "row 2502: TIMESTAMP is 'yesterday' (expected a time: seconds, epoch milliseconds or "
        "a date-time)",
    )
    expected = np.delete(np.arange(3000), 2500) * 1234567e-9
    assert np.allclose(r.arrival_s, expected, rtol=0, atol=1e-9)


def test_a_column_of_the_wrong_type_names_the_file():
    buf = io.BytesIO()
    pq.write_table(pa.table({"prompt_tokens": pa.array([b"ab", b"cd"], pa.binary())}), buf)
    assert error_of(buf.getvalue(), "b.parquet") == (
        "b.parquet: column 'prompt_tokens' holds binary values; expected a whole number >= 0 "
        "(pick another column by hand)"
    )


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
    r = load_text(text, "trace.jsonl")
    assert r.fmt == "mooncake"
    assert r.cached_tokens.tolist() == [0, 1024, 700, 0]
    assert r.cached_tokens.tolist() == reference_prefix_hits(lines)
    assert r.arrival_s.tolist() == [0.0, 0.0, 3.0, 6.0]
    assert r.output_tokens.tolist() == [10, 20, 30, 40]


def test_mooncake_block_repeated_inside_one_request_is_no_hit():
    lines = [
        {"timestamp": 0, "input_length": 1024, "output_length": 1, "hash_ids": [7, 7]},
        {"timestamp": 1, "input_length": 1024, "output_length": 1, "hash_ids": [7, 7]},
        {"timestamp": 2, "input_length": 100, "output_length": 1, "hash_ids": []},
    ]
    r = load_text("".join(json.dumps(x) + "\n" for x in lines))
    assert r.cached_tokens.tolist() == [0, 1024, 0]
