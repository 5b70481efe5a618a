"""What every measurement reader shares (kvmodel.measure.base): reading text from any source,
empty and binary input named, numbers and names."""

import math
from pathlib import Path

import pytest

from kvmodel.measure import MeasureError, read_text
from kvmodel.measure.base import key, number
from kvmodel.textio import TextError

DATA = Path(__file__).resolve().parents[1] / "data" / "measurements"


def test_measure_error_is_a_value_error():
    assert issubclass(MeasureError, ValueError) and issubclass(MeasureError, TextError)


def test_a_string_is_text_unless_it_names_a_file(tmp_path):
    assert read_text("bytes,seconds\n1,2\n") == ("bytes,seconds\n1,2\n", "text")
    assert read_text("1 2", "pasted") == ("1 2", "pasted")  # spaces: not a file name
    path = tmp_path / "t.csv"
    path.write_text("1,2\n")
    assert read_text(str(path)) == ("1,2\n", "t.csv")
    with pytest.raises(MeasureError, match="cannot read"):
        read_text("no_such_file.prom")  # looks like a file name, so it is one


def test_bytes_uploads_and_byte_order_marks():
    assert read_text(b"\xef\xbb\xbf1,2\n", "t.csv") == ("1,2\n", "t.csv")
    assert read_text("\ufeff1,2\n") == ("1,2\n", "text")
    assert read_text("1,2\n".encode("utf-16"), "excel.txt") == ("1,2\n", "excel.txt")


def test_empty_binary_and_unreadable_input_is_named():
    with pytest.raises(MeasureError, match="t.csv: the file is empty; expected Prometheus text"):
        read_text(b" \n\n", "t.csv")
    with pytest.raises(MeasureError, match=r"t.csv: line 2 holds binary data \(byte 0x00 at off"):
        read_text(b"bytes,seconds\n\x00\x01", "t.csv")
    with pytest.raises(MeasureError, match="text: line 2 holds a NUL byte; expected text"):
        read_text("a\n\x00")
    with pytest.raises(
        MeasureError,
        match="t.csv: the file is 4e-06 MB, over the 1e-06 MB limit; upload a smaller sample",
    ):
        read_text(b"1,2\n", "t.csv", max_bytes=1)
    with pytest.raises(MeasureError, match="cannot read a int; expected a path, bytes, text"):
        read_text(12)


def test_number_and_key():
    assert number(" 2.5 ") == 2.5 and number("abc") is None
    assert number("inf") is None and number("nan") is None  # only finite numbers
    assert math.isclose(number("1e-6"), 1e-6)
    assert key("BW_average[MB/sec]") == "bwaveragembsec" and key("Msg Size") == "msgsize"
