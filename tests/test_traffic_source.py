"""Opening a traffic file and telling its format (kvmodel.traffic.source, on kvmodel.textio): gzip,
UTF-16, size limits, and input that is no table at all."""

import gzip

import numpy as np
import pytest
from traffic_helpers import AZURE_CODE, error_of, load_text, load_traffic, shrink_pieces, trace_csv

from kvmodel.traffic import GZIP_EXPANSION, TrafficError


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


def test_gzip_by_magic_and_by_name(tmp_path):
    packed = gzip.compress(AZURE_CODE.read_bytes())
    plain = tmp_path / "azure_code.csv"  # no .gz in the name: found by the magic bytes
    plain.write_bytes(packed)
    r = load_traffic(plain)
    assert r.fmt == "azure2023" and len(r.prompt_tokens) == 8819
    assert r.columns["container"] == "csv+gzip"
    r = load_traffic(packed, name="AzureLLMInferenceTrace_code.csv.gz")
    assert len(r.prompt_tokens) == 8819 and r.prompt_tokens[0] == 4808


def test_utf16_and_bom():
    text = "Prompt Tokens,Output Tokens\n7,1\n8,2\n"
    assert load_text(text.encode("utf-16")).prompt_tokens.tolist() == [7, 8]
    assert load_text(b"\xef\xbb\xbf" + text.encode()).prompt_tokens.tolist() == [7, 8]


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
    msg = error_of(data, "upload.csv")
    assert expected in msg and msg.startswith("upload.csv: ")


def test_a_damaged_parquet_file_is_called_that():
    msg = error_of(bytes(range(256)) * 4, "trace.parquet")
    assert msg.startswith("trace.parquet: not a Parquet file (it does not start with")


def test_random_binary_garbage():
    noise = np.random.default_rng(3).integers(0, 256, 5000, dtype=np.uint8).tobytes()
    assert "binary data" in error_of(noise, "trace.csv")


def test_size_limit(tmp_path):
    data = b"prompt_tokens\n" + b"100\n" * 500
    assert "over the 0.001 MB limit" in error_of(data, "big.csv", max_bytes=1000)
    path = tmp_path / "big.csv"
    path.write_bytes(data)
    with pytest.raises(TrafficError, match=r"0\.00201 MB, over the 0\.001 MB limit"):
        load_traffic(path, max_bytes=1000)
    assert len(load_traffic(path, max_bytes=len(data)).prompt_tokens) == 500
    bomb = gzip.compress(b"prompt_tokens\n" + b"1\n" * 100_000)
    assert "decompressed" in error_of(bomb, "b.csv.gz", max_bytes=20_000)


def test_unreadable_sources(tmp_path):
    with pytest.raises(TrafficError, match="cannot read"):
        load_traffic(tmp_path / "missing.csv")
    with pytest.raises(TrafficError, match="expected a path, bytes or a binary file object"):
        load_traffic(12345)


def test_gzip_streamed_limit_and_truncation(tmp_path, small_pieces):
    data = trace_csv(5000)
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
