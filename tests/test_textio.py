"""The text layer both readers stand on (kvmodel.textio): every kind of source gives the same
bytes, gzip and size limits, UTF-16 and byte-order marks, newline-aligned pieces, lines named in
errors, and the one Prometheus exposition parser."""

import gzip
import io

import pytest

from kvmodel.textio import (
    GZIP_EXPANSION,
    PromSample,
    TextError,
    decode,
    find_binary,
    labels_text,
    line_at,
    numbered_lines,
    open_source,
    parse_exposition,
)
from kvmodel.textio import source as source_module

TEXT = b"prompt_tokens\n" + b"".join(b"%d\n" % i for i in range(2000))


class OwnError(TextError):
    """A reader's own error class, as the readers pass it."""


def _whole(src, name="t.csv", max_bytes=1_000_000, **kw) -> bytes:
    source = open_source(src, name, max_bytes, **kw)
    try:
        return bytes(source.whole())
    finally:
        source.close()


class _Upload(io.BytesIO):  # Streamlit's UploadedFile is a BytesIO with a name
    name = "upload.csv"


def test_every_source_gives_the_same_bytes(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(TEXT)
    for src in (
        TEXT,
        bytearray(TEXT),
        memoryview(TEXT),
        path,
        str(path),
        _Upload(TEXT),
        io.BufferedReader(io.BytesIO(TEXT)),
    ):
        assert _whole(src) == TEXT


def test_names_come_from_the_argument_the_path_or_the_upload(tmp_path):
    path = tmp_path / "trace.csv"
    path.write_bytes(TEXT)
    assert open_source(TEXT, None, 10**6).name == "upload"
    assert open_source(TEXT, "given.csv", 10**6).name == "given.csv"
    source = open_source(path, None, 10**6)
    assert source.name == "trace.csv"
    source.close()
    assert open_source(_Upload(TEXT), None, 10**6).name == "upload.csv"


def test_gzip_is_inflated_by_its_magic_bytes(tmp_path):
    packed = gzip.compress(TEXT)
    path = tmp_path / "no_gz_in_the_name.csv"
    path.write_bytes(packed)
    for src in (packed, path):
        source = open_source(src, "t.csv", 10**6)
        assert source.gz and bytes(source.whole()) == TEXT
        source.close()


def test_size_limits_name_the_file_its_size_and_the_advice(tmp_path):
    # "prompt_tokens\n" and 0..1999, one a line: 14 + 10·2 + 90·3 + 900·4 + 1000·5 = 8,904 B
    assert len(TEXT) == 8904
    with pytest.raises(OwnError) as info:
        open_source(TEXT, "big.csv", 1000, error=OwnError, advice="upload less")
    assert str(info.value) == "big.csv: the file is 0.0089 MB, over the 0.001 MB limit; upload less"
    path = tmp_path / "big.csv"
    path.write_bytes(TEXT)
    with pytest.raises(TextError, match=r"big\.csv: the file is 0\.0089 MB, over the 0\.001 MB"):
        open_source(path, None, 1000)
    stream = io.BufferedReader(io.BytesIO(TEXT))  # read() stops at the limit + 1 byte
    with pytest.raises(TextError, match="upload: the file is larger, over the 0.001 MB limit"):
        open_source(stream, None, 1000)
    assert _whole(TEXT, max_bytes=len(TEXT)) == TEXT  # exactly at the limit is fine


def test_gzip_is_limited_to_its_expansion_of_the_limit():
    bomb = gzip.compress(b"1\n" * 200_000)  # 400 kB inflated from about 1 kB
    limit = 20_000
    assert len(bomb) < limit < 400_000 / GZIP_EXPANSION
    with pytest.raises(TextError, match=r"b\.gz: decompressed, the file is over 0\.1 MB \(5×"):
        for _ in open_source(bomb, "b.gz", limit).pieces(0):  # streamed (CSV): 5× the limit
            pass
    # read whole (JSON, Prometheus text): the plain file's limit, not 5× it (issue 14: a 950 MB
    # JSON Lines gzip grew the process to 2.8 GB)
    with pytest.raises(TextError, match=r"over 0\.02 MB \(the limit for a file read whole"):
        _whole(bomb, "b.gz", limit)


def test_broken_gzip_is_named():
    packed = gzip.compress(TEXT)
    with pytest.raises(TextError, match="gzip data is truncated"):
        _whole(packed[:-30])
    with pytest.raises(TextError, match="gzip data is corrupt"):
        _whole(b"\x1f\x8b\x08\x00" + b"not deflate data" * 4)


def test_utf16_is_re_encoded_and_byte_order_marks_dropped():
    text = "Prompt Tokens\n7\n8\n"
    assert _whole(text.encode("utf-16")) == text.encode()
    source = open_source(b"\xef\xbb\xbf" + text.encode(), "t.csv", 10**6)
    assert source.head == text.encode() and bytes(source.whole()) == text.encode()
    with pytest.raises(TextError, match="broken UTF-16 text"):
        _whole(b"\xff\xfe" + b"\x00\xd8")  # a lone surrogate


def test_what_cannot_be_read(tmp_path):
    with pytest.raises(OwnError, match="cannot read .*missing.csv"):
        open_source(tmp_path / "missing.csv", None, 10**6, error=OwnError)
    with pytest.raises(TextError, match="cannot read a int; expected a path, bytes or a binary"):
        open_source(12345, None, 10**6)


@pytest.mark.parametrize("in_memory", [True, False])
def test_pieces_end_at_line_ends_and_add_up(tmp_path, monkeypatch, in_memory):
    monkeypatch.setattr(source_module, "_PIECE", 256)
    # past the 64 kB head, which a stream reads whole, then a line longer than a piece
    lines = b"".join(b"%d\n" % i for i in range(20_000))
    data = b"prompt_tokens\n" + lines + b"a long line: " + b"x" * 1000 + b"\nlast"  # no final \n
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    source = open_source(data if in_memory else path, "t.csv", 10**6)
    start = source.line_end(0)
    assert source.head[:start] == b"prompt_tokens\n"
    pieces = [bytes(p) for p in source.pieces(start)]
    source.close()
    assert b"".join(pieces) == data[start:]
    assert len(pieces) > 10 and all(p.endswith(b"\n") for p in pieces[:-1])
    assert pieces[-1].endswith(b"last")


def test_fraction_follows_the_pieces():
    source = open_source(TEXT, "t.csv", 10**6)
    assert source.fraction() == 0
    for _ in source.pieces(0):
        pass
    assert source.fraction() == 1


def test_find_binary_and_decode_name_the_line():
    assert find_binary(b"a,b\n1,2\n") is None
    assert find_binary(b"a,b\n\x00") == 4
    assert find_binary(b"a\n\xff") == 2
    cut = "é".encode()[:1]  # the first byte of a 2-byte character, cut by a window
    assert find_binary(b"abc" + cut) == 3
    assert find_binary(b"abc" + cut, cut=True) is None
    assert decode("né\n".encode(), "t.txt", expected="text") == "né\n"
    with pytest.raises(OwnError) as info:
        decode(b"ok\nok\n1,\xff\n", "t.txt", expected="CSV", error=OwnError)
    assert str(info.value) == (
        "t.txt: line 3 holds binary data (byte 0xff at offset 8), not UTF-8 text; expected CSV"
    )
    with pytest.raises(TextError, match=r"line 2 holds binary data \(byte 0x00 at offset 2\)"):
        decode(b"a\n\x00b", "t.txt", expected="text")


def test_numbered_lines_count_blank_lines_as_an_editor_does():
    text = "first\n\nthird\r\nfourth"
    assert list(numbered_lines(text)) == [(1, "first"), (2, ""), (3, "third"), (4, "fourth")]
    assert line_at(text, text.index("third")) == 3
    assert line_at(text.encode(), 0) == 1


SCRAPE = """\
# HELP vllm:request_prompt_tokens Number of prefill tokens processed.
# TYPE vllm:request_prompt_tokens histogram
vllm:request_prompt_tokens_bucket{le="10.0",model_name="a"} 1.0

vllm:request_prompt_tokens_bucket{le="+Inf",model_name="a"} 3.0
# TYPE requests counter
requests 5
"""


def test_parse_exposition_keeps_each_sample_and_its_line():
    samples = parse_exposition(SCRAPE, "m.prom", expected="expected metrics")
    assert samples == [
        PromSample(3, "vllm:request_prompt_tokens_bucket", {"le": "10.0", "model_name": "a"}, 1.0),
        PromSample(5, "vllm:request_prompt_tokens_bucket", {"le": "+Inf", "model_name": "a"}, 3.0),
        PromSample(7, "requests", {}, 5.0),  # each line alone: a counter keeps its name
    ]


def test_parse_exposition_names_the_first_bad_line():
    bad = SCRAPE + "this is { not prometheus\n"
    with pytest.raises(OwnError) as info:
        parse_exposition(bad, "m.prom", expected="expected X", error=OwnError)
    assert str(info.value) == (
        "m.prom: line 8 is not Prometheus text ('this is { not prometheus'); expected X"
    )


def test_labels_text_is_sorted_by_name():
    assert labels_text({"model_name": "m", "le": "1"}) == '{le="1",model_name="m"}'
    assert labels_text({}) == "{}"
