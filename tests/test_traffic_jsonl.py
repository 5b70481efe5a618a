"""The JSON Lines and JSON array reader (kvmodel.traffic.jsonl): the shipped Mooncake trace, nested
objects, epoch times, bad lines skipped and named by line."""

import gzip
import json
from pathlib import Path

import pytest
from traffic_helpers import MOONCAKE, load_text, load_traffic, reference_prefix_hits

from kvmodel.traffic import table_columns


def test_mooncake_real_trace():
    r = load_traffic(MOONCAKE)
    assert r.fmt == "mooncake" and len(r.prompt_tokens) == 12031 and r.skipped_rows == 0
    records = [json.loads(line) for line in MOONCAKE.read_text().splitlines()]
    assert r.prompt_tokens.tolist() == [x["input_length"] for x in records]
    assert r.output_tokens.tolist() == [x["output_length"] for x in records]
    assert r.cached_tokens.tolist() == reference_prefix_hits(records)
    # the first request shares nothing; the next ones share block 0 (the system prompt)
    assert r.cached_tokens[:3].tolist() == [0, 512, 512]
    assert (r.cached_tokens <= r.prompt_tokens).all()
    assert r.arrival_s[0] == 0 and r.arrival_s[-1] == pytest.approx(records[-1]["timestamp"] / 1e3)
    assert r.columns["time_unit"] == "ms" and r.columns["cached_tokens"] == "hash_ids"


def test_generic_jsonl_with_epoch_milliseconds():
    lines = [
        {"id": 1, "prompt_tokens": 120, "completion_tokens": 30, "created": 1_700_000_000_000},
        {"id": 2, "prompt_tokens": 480, "completion_tokens": 12, "created": 1_700_000_001_500},
    ]
    r = load_text("".join(json.dumps(x) + "\n" for x in lines), "log.jsonl")
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
    r = load_text(text, "openai.jsonl")
    assert r.prompt_tokens.tolist() == [9, 4] and r.output_tokens.tolist() == [1, 2]
    assert r.arrival_s.tolist() == [0.0, 2.5]
    assert r.columns["prompt_tokens"] == "usage.prompt_tokens"
    assert "usage.prompt_tokens" in table_columns(text.encode(), name="openai.jsonl")
    r = load_text(json.dumps(lines), "openai.json")
    assert r.prompt_tokens.tolist() == [9, 4] and r.columns["container"] == "json"


def test_bad_json_lines_are_skipped_by_line():
    text = '{"input_length": 5}\n{bad\n\n{"input_length": "x"}\n[1]\n{"input_length": 7}\n'
    r = load_text(text, "t.jsonl")
    assert r.prompt_tokens.tolist() == [5, 7] and r.skipped_rows == 3
    assert r.skipped_examples[0].startswith("line 2: is not valid JSON")
    assert r.skipped_examples[1] == "line 4: input_length is 'x' (expected a whole number >= 0)"
    assert r.skipped_examples[2] == "line 5: is a JSON array, expected an object"
    r = load_text('{"isl": 1}\n\n{"isl": -1}\n', "t.jsonl")  # blank line: still the right line
    assert r.skipped_examples == ("line 3: isl is -1 (expected a whole number >= 0)",)


def test_gzip_jsonl():
    lines = MOONCAKE.read_bytes().splitlines(keepends=True)[:100]
    r = load_traffic(gzip.compress(b"".join(lines)), name="trace.jsonl.gz")
    assert r.fmt == "mooncake" and len(r.prompt_tokens) == 100
    assert r.columns["container"] == "jsonl+gzip"


@pytest.mark.parametrize("text", [b"null", b"  null\n", b"null\n{}", b"5\nnull"])
def test_a_top_level_null_is_a_message_not_a_crash(text):
    # pyarrow 26's JSON reader kills the process (SIGSEGV) on a leading top-level null: a
    # user's upload must never take the server down, so such files are read line by line.
    # In a child process, so a crash fails this test instead of the whole run.
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from kvmodel.traffic.reader import load_traffic\n"
        "from kvmodel.traffic.result import TrafficError\n"
        "try:\n"
        "    load_traffic(sys.stdin.buffer.read(), name='t.jsonl')\n"
        "except TrafficError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=text, capture_output=True,
                         cwd=Path(__file__).parents[1], timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-500:]
    msg = out.stdout.decode()
    assert msg.startswith("t.jsonl: no JSON objects with fields found"), msg
    assert "expected one object per request" in msg


def test_a_null_line_among_objects_is_skipped_and_named():
    text = (b'{"prompt_tokens": 5, "output_tokens": 3}\nnull\n'
            b'{"prompt_tokens": 7, "output_tokens": 2}\n')  # fmt: skip
    r = load_text(text, name="t.jsonl")
    assert list(r.prompt_tokens) == [5, 7]
    assert "line 2: is null, expected an object" in r.skipped_examples
