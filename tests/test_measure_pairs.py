"""The size/time pairs reader (kvmodel.measure.pairs): header names, units, separators, errors."""

from pathlib import Path

import pytest

from kvmodel.calibrate import fit_latency_bandwidth
from kvmodel.measure import MeasureError, TransferPairs, load_measurement, parse_pairs_csv

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"
MIB = 2**20


def test_pairs_sample_fits_two_microseconds():
    pts = load_measurement(DATA / "transfer_pairs.csv").data
    fit = fit_latency_bandwidth(pts.sizes_bytes, pts.seconds)
    assert fit.latency_s == pytest.approx(2.1e-6, rel=0.05)
    assert fit.bandwidth_bytes_per_s == pytest.approx(46.5e9, rel=0.01)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("bytes,seconds\n1000,0.001\n2000,0.002\n", [(1000, 0.001), (2000, 0.002)]),
        ("size,time_ms\n1000,1\n", [(1000, 1e-3)]),
        ("message_bytes,latency_us\n4096,2.5\n", [(4096, 2.5e-6)]),
        ("# a comment\nsize_kb;duration_s\n\n4;0.5\n", [(4000, 0.5)]),
        ("Message Size (MiB)\tTime (ms)\n1\t2\n", [(MIB, 2e-3)]),
        ("idx,bytes,latency_ns,host\n0,64,1500,a\n", [(64, 1.5e-6)]),
        ("1000,0.001\n2000,0.002\n", [(1000, 0.001), (2000, 0.002)]),
        ("1000 0.001\n2000   0.002\n", [(1000, 0.001), (2000, 0.002)]),
    ],
)
def test_pairs_variants(text, expected):
    got = parse_pairs_csv(text)
    assert isinstance(got, TransferPairs)
    assert [(pytest.approx(b), pytest.approx(t)) for b, t in expected] == list(got.points)


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("bytes,time\n1,2\n", r"line 1: time column 'time' has no unit"),
        ("bytes,seconds\n1000,0.001\n2000,abc\n", r"line 3: .*not numbers"),
        ("bytes,seconds\n1000,0.001\n2000\n", r"line 3 has 1 fields"),
        ("1,2,3\n", r"line 1 has 3 columns and no header"),
        ("foo,bar\n1,2\n", r"line 1: columns foo, bar; expected a size column"),
        ("bytes,seconds\n1000,-1\n", r"line 2: .*time > 0"),
        ("bytes,seconds\n", r"a header but no rows"),
    ],
)
def test_pairs_errors(text, pattern):
    with pytest.raises(MeasureError, match=pattern):
        parse_pairs_csv(text)


def test_pairs_are_typed():
    pts = parse_pairs_csv("size_kb,latency_us\n4,2.5\n8,3.5\n")
    assert isinstance(pts, TransferPairs)
    assert pts.sizes_bytes == (4000, 8000) and pts.seconds == pytest.approx((2.5e-6, 3.5e-6))
    assert pts.points == ((4000, pts.seconds[0]), (8000, pts.seconds[1]))
    assert pts == parse_pairs_csv("size_kb;latency_us\n4;2.5\n8;3.5\n")  # compared by value
    with pytest.raises(AttributeError):
        pts.seconds = ()  # frozen
