"""Which column holds what (kvmodel.traffic.columns): detection from the names, columns
picked by hand."""

from traffic_helpers import AZURE_CODE, error_of, load_text, load_traffic

from kvmodel.traffic import detect_columns, table_columns


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
    msg = error_of(text, "custom.csv")
    assert "row 1 (the header)" in msg and "'len_in'" in msg and "prompt_tokens" in msg
    assert "by hand" in msg
    assert table_columns(text.encode(), name="custom.csv") == ["req", "len_in", "len_out", "t"]
    r = load_text(
        text, "custom.csv", prompt_column="len_in", output_column="len_out", time_column="t"
    )
    assert r.prompt_tokens.tolist() == [100, 250] and r.output_tokens.tolist() == [5, 6]
    assert r.arrival_s.tolist() == [0.0, 2.0] and r.fmt == "generic-table"
    assert r.columns["prompt_tokens"] == "len_in"
    assert load_text(text, prompt_column="LEN_IN").columns["prompt_tokens"] == "len_in"
    msg = error_of(text, "custom.csv", prompt_column="nope")
    assert "no column 'nope'" in msg and "'len_in'" in msg


def test_override_replaces_or_drops_detected_columns():
    r = load_traffic(AZURE_CODE, time_column="", output_column="")
    assert r.arrival_s is None and r.output_tokens is None
    r = load_traffic(AZURE_CODE, prompt_column="GeneratedTokens")
    assert r.prompt_tokens[:3].tolist() == [10, 8, 27]
    r = load_text("isl,t_ms\n5,1000\n6,3500\n", time_column="t_ms")
    assert r.arrival_s.tolist() == [0.0, 2.5] and r.columns["time_unit"] == "ms"
