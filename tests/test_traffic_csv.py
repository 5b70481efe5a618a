"""The CSV, TSV and ;-separated reader (kvmodel.traffic.csv): the shipped Azure and BurstGPT
traces, rows numbered as a spreadsheet shows them, rows with the wrong field count, pieces read
in parallel."""

import numpy as np
import pytest
from traffic_helpers import (
    AZURE_CODE,
    AZURE_CONV,
    SAMPLES,
    load_text,
    load_traffic,
    shrink_pieces,
    trace_csv,
)

from kvmodel.traffic import TrafficError


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


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
    r = load_text(text, "BurstGPT_1.csv")
    assert r.fmt == "burstgpt"
    assert r.prompt_tokens.tolist() == [472, 1024, 1020]
    assert r.output_tokens.tolist() == [18, 0, 254]
    assert r.arrival_s.tolist() == [0.0, 40.0, 113.0]
    assert r.columns["failed_requests"] == 1


def test_tsv_by_name_and_by_content():
    text = "input_len\toutput_len\tarrival_time\n100\t5\t0.5\n200\t6\t1.25\n"
    for name in ("lengths.tsv", None):
        r = load_text(text, name)
        assert r.prompt_tokens.tolist() == [100, 200] and r.output_tokens.tolist() == [5, 6]
        assert r.arrival_s.tolist() == [0.0, 0.75] and r.columns["container"] == "tsv"


def test_semicolon_table_and_case_insensitive_names():
    r = load_text("ISL;OSL\n10;2\n20;3\n", "excel.csv")
    assert r.prompt_tokens.tolist() == [10, 20] and r.output_tokens.tolist() == [2, 3]


def test_rows_with_wrong_field_count_are_skipped():
    r = load_text("prompt_tokens,output_tokens\n1,2\n3\n4,5\n6,7,8\n9,1\n", "x.csv")
    assert r.prompt_tokens.tolist() == [1, 4, 9] and r.skipped_rows == 2
    assert r.skipped_examples[0] == "row 3: has 1 field(s), expected 2: '3'"
    assert r.skipped_examples[1].startswith("row 5: has 3 field(s), expected 2")
    r = load_text("prompt_tokens,output_tokens\n1,2\n3\n-4,5\n", "x.csv")
    assert r.skipped_examples[1] == "row 4: prompt_tokens is -4 (expected a whole number >= 0)"


def test_a_quote_left_open_says_which_lines_it_swallowed():
    # Row 3 opens a quote that closes on line 5: a spreadsheet reads lines 3-5 as one row
    # (with one field too few), so row 4 is the line "-50,9" and "60,1" is kept.
    r = load_text('prompt_tokens,output_tokens\n10,5\n"20,6\n30,7\n40,"8\n-50,9\n60,1\n', "q.csv")
    assert r.prompt_tokens.tolist() == [10, 60] and r.skipped_rows == 2
    assert r.skipped_examples == (
        'row 3: has a quote (") that does not close on its line, so it and the 2 lines after '
        "it were read as one row and skipped ('\"20,6'…); expected each quote to close on its "
        "own line",
        "row 4: prompt_tokens is -50 (expected a whole number >= 0)",
    )


def test_bad_value_after_the_first_block_names_its_row():
    rows = 400_000  # ~11 MB: beyond the first parse block, so type inference has to retry
    stamps = np.datetime64("2023-11-16T18:17:03") + np.arange(rows) * np.timedelta64(10, "ms")
    body = [f"{s},{i % 5000},7" for i, s in enumerate(stamps.astype(str))]
    body[350_000] = body[350_000].rsplit(",", 2)[0] + ",oops,7"
    text = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "\n".join(body) + "\n"
    r = load_text(text, "big.csv")
    assert len(r.prompt_tokens) == rows - 1 and r.skipped_rows == 1
    assert r.skipped_examples == (
        "row 350002: ContextTokens is 'oops' (expected a whole number >= 0)",
    )
    assert r.arrival_s[-1] == pytest.approx((rows - 1) * 0.01)


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
    r = load_text(trace_csv(rows, bad), "t.csv")
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


def test_crlf_and_bom_across_pieces(small_pieces):
    data = b"\xef\xbb\xbf" + trace_csv(2000, {1000: "250.00,-5,1"}).replace(b"\n", b"\r\n")
    r = load_text(data, "t.csv")
    assert len(r.prompt_tokens) == 1999 and r.skipped_examples == (
        "row 1002: prompt_tokens is -5 (expected a whole number >= 0)",
    )
    assert r.prompt_tokens[-1] == 100 + 1999 % 977


def test_lone_cr_line_ends_read_as_rows(small_pieces):
    # session 23's fuzz: a CSV whose lines end in CR alone (old Mac files) read as "there is
    # only a header"; Arrow reads such rows, the header's own end now does too
    data = trace_csv(2000, {}).replace(b"\n", b"\r")
    r = load_text(data, "t.csv")
    assert len(r.prompt_tokens) == 2000 and r.prompt_tokens[-1] == 100 + 1999 % 977
    assert len(load_text(b"prompt_tokens,output_tokens\r100,10\r200,20\r", "x.csv")
               .prompt_tokens) == 2  # fmt: skip


def test_unparseable_later_piece_names_its_row_and_stops(small_pieces):
    body = [f"{i},{i},1".encode() for i in range(30_000)]
    body[20_000] = b"1,\xff\xfe,3"  # not UTF-8, far past the sniffed start: row 20002
    with pytest.raises(TrafficError, match=r"t\.csv: cannot parse the table: .*row 20002: .*UTF8"):
        load_text(b"ts,prompt_tokens,output_tokens\n" + b"\n".join(body) + b"\n", "t.csv")


def test_lines_longer_than_a_piece(tmp_path, small_pieces):
    rows = [f"{i},{'x' * (10_000 if i % 7 == 3 else 5)}" for i in range(200)]
    data = ("prompt_tokens,note\n" + "\n".join(rows)).encode()  # no final newline either
    path = tmp_path / "wide.csv"
    path.write_bytes(data)
    for src in (path, data):
        r = load_traffic(src, name="wide.csv")
        assert r.prompt_tokens.tolist() == list(range(200)) and r.skipped_rows == 0
