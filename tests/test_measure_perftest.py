"""The perftest reader (kvmodel.measure.perftest): MB/sec as MiB/s, every table variant, --out_json,
errors that name the line; the shipped samples fit NDR."""

import json
from pathlib import Path

import pytest

from kvmodel import catalog
from kvmodel.calibrate import fit_from_bandwidth_points
from kvmodel.measure import BandwidthPoints, MeasureError, load_measurement, parse_perftest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"
MIB = 2**20


def test_perftest_samples_fit_ndr():
    write = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data.points)
    assert write.n == 23
    assert write.bandwidth_bytes_per_s == pytest.approx(48.0e9, rel=0.01)
    assert write.latency_s == pytest.approx(0.165e-6, rel=0.05)
    assert write.rms_relative_error < 0.02
    as_json = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.json").data.points)
    assert as_json.bandwidth_bytes_per_s == pytest.approx(48.0e9, rel=0.01)
    send = fit_from_bandwidth_points(load_measurement(DATA / "ib_send_bw_mib.txt").data.points)
    read = fit_from_bandwidth_points(load_measurement(DATA / "ib_read_bw_gbits.txt").data.points)
    assert send.bandwidth_bytes_per_s == pytest.approx(47.4e9, rel=0.01)
    assert read.bandwidth_bytes_per_s == pytest.approx(47.1e9, rel=0.01)
    for fit in (write, send, read):
        assert fit.bandwidth_bytes_per_s < catalog.get_link("ib-ndr").bandwidth_bytes_per_s


PRE = """\
---------------------------------------------------------------------------------------
                    RDMA_Write BW Test
 Dual-port       : OFF		Device         : mlx5_0
 Number of qps   : 1		Transport type : IB
---------------------------------------------------------------------------------------
"""


def test_perftest_mb_is_mebibytes_by_default():
    text = PRE + (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
        " 65536      5000             46567.34            46557.03\t\t     0.744912\n"
        "---------------------------------------------------------------------------------------\n"
    )
    assert list(parse_perftest(text).points) == [(65536, pytest.approx(46557.03 * MIB))]
    assert list(parse_perftest(text, mb_bytes=1e6).points) == [(65536, pytest.approx(46557.03e6))]


def test_perftest_mib_and_gbits_and_single_spaced_header():
    mib = " #bytes #iterations BW peak[MiB/sec] BW average[MiB/sec] MsgRate[Mpps]\n"
    mib += " 4096 1000 9.0 8.0 1.0\n"
    assert list(parse_perftest(mib).points) == [(4096, pytest.approx(8.0 * MIB))]
    gb = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    gb += " 8388608    1000             390.12             376.50              0.005610\n"
    assert list(parse_perftest(PRE + gb).points) == [(8388608, pytest.approx(376.5 * 1.25e8))]


def test_perftest_qos_and_per_port_variants_pick_bw_average():
    qos = (
        " #bytes    #sl      #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    )
    qos += " 65536      3           5000           100.00            90.00                  0.1\n"
    assert list(parse_perftest(qos).points) == [(65536, pytest.approx(90 * MIB))]
    port = (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]   "
        "BW Port1[MB/sec]   MsgRate Port1[Mpps]   BW Port2[MB/sec]   MsgRate Port2[Mpps]\n"
        " 65536      5000     200.0   190.0   0.1   95.0   0.05   95.0   0.05\n"
    )
    assert list(parse_perftest(port).points) == [(65536, pytest.approx(190 * MIB))]


def test_perftest_ignores_warnings_and_repeated_headers():
    hdr = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    text = (
        PRE
        + hdr
        + hdr
        + (
            "Conflicting CPU frequency values detected: 5008.116000 != 3295.212000. CPU "
            "Frequency is not max.\n"
            " 1000       5000             4104.91            4020.54              4.2\n"
        )
    )
    assert list(parse_perftest(text).points) == [(1000, pytest.approx(4020.54 * MIB))]


@pytest.mark.parametrize(
    "text, pattern",
    [
        (" 65536 5000 1.0 2.0 0.1\n", r"line 1 is a result row before any"),
        (
            " #bytes #iterations BW peak BW average MsgRate\n 65536 5000 1 2 3\n",
            r"line 1: .*no 'BW average\[unit\]' column",
        ),
        (
            " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
            " 2 5000 1.0 1.0 0.5\n"
            " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]\n"
            " 4 5000 1.0 1.0 0.5\n",
            r"line 3: bandwidth in Gb/sec after MB/sec on line 1",
        ),
        (
            " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n"
            " 2 5000 1.0 1.0 0.5\n 4 5000 1.0\n",
            r"line 3 has 3 fields.*cut short",
        ),
        (
            " #bytes #iterations BW peak[furlongs] BW average[furlongs] MsgRate[Mpps]\n",
            r"line 1: unknown bandwidth unit 'furlongs'",
        ),
        (
            " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]\n 2 1000 1 2 1.5\n",
            r"line 1 is a perftest latency table",
        ),
        (PRE, r"no perftest result rows"),
    ],
)
def test_perftest_errors_name_the_line(text, pattern):
    with pytest.raises(MeasureError, match=pattern):
        parse_perftest(text, "bw.txt")


def test_perftest_json_variants():
    result = {"MsgSize": 65536, "BW_peak": 2.0, "BW_average": 1.0, "unit": "Gb/sec"}
    one = {"test_info": {"test": "RDMA_Write BW Test"}, "results": result}
    assert list(parse_perftest(json.dumps(one)).points) == [(65536, pytest.approx(1.25e8))]
    bracket = [{"MsgSize": 2, "BW_average[MiB/sec]": 3.0}, {"MsgSize": 4, "BW_average[MiB/sec]": 6}]
    assert list(parse_perftest(json.dumps(bracket)).points) == [(2, 3.0 * MIB), (4, 6.0 * MIB)]
    no_unit = {"results": {"MsgSize": 65536, "BW_average": 46557.0}}
    with pytest.raises(MeasureError, match='no bandwidth unit; expected a "unit" field'):
        parse_perftest(json.dumps(no_unit))
    assert list(parse_perftest(json.dumps(no_unit), unit="MiB/sec").points) == [
        (65536, 46557.0 * MIB)
    ]
    jsonl = "\n".join(
        json.dumps({"results": {"MsgSize": s, "BW_average": b, "BW_unit": "MiB/sec"}})
        for s, b in ((1024, 100.0), (2048, 200.0))
    )
    assert list(parse_perftest(jsonl).points) == [(1024, 100.0 * MIB), (2048, 200.0 * MIB)]
    mixed = [
        {"MsgSize": 2, "BW_average": 1, "unit": "Gb/sec"},
        {"MsgSize": 4, "BW_average": 1, "unit": "MiB/sec"},
    ]
    with pytest.raises(MeasureError, match="result 2: bandwidth in MiB/sec mixed with Gb/sec"):
        parse_perftest(json.dumps(mixed))


def test_perftest_json_garbled_names_the_line():
    text = (DATA / "ib_write_bw.json").read_text()
    cut = text[: len(text) // 2]
    with pytest.raises(MeasureError, match=r"line \d+: not valid JSON"):
        parse_perftest(cut, "ib_write_bw.json")
    with pytest.raises(MeasureError, match="expected MsgSize and BW_average"):
        parse_perftest(json.dumps({"results": [{"size_kb": 1, "bw": 2}]}))


@pytest.mark.parametrize(
    ("sample", "unit", "n"),
    [
        ("ib_write_bw.txt", "MB/sec", 23),
        ("ib_send_bw_mib.txt", "MiB/sec", None),
        ("ib_read_bw_gbits.txt", "Gb/sec", None),
        ("ib_write_bw.json", "MiB/sec", 23),  # test_info's "BW_unit"
    ],
)
def test_bandwidth_points_are_typed_with_their_unit(sample, unit, n):
    pts = load_measurement(DATA / sample).data
    assert isinstance(pts, BandwidthPoints) and pts.unit == unit
    assert len(pts.sizes_bytes) == len(pts.bandwidths_bytes_per_s) == len(pts.points)
    assert n is None or len(pts.points) == n
    assert pts.points[0] == (pts.sizes_bytes[0], pts.bandwidths_bytes_per_s[0])
    with pytest.raises(AttributeError):
        pts.unit = "Gb/sec"  # frozen


def test_the_first_header_names_the_unit():
    # MB/sec and MiB/sec are both 2^20 B/s, so one file may print both; the first is reported
    text = (
        " #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]\n 2 5000 1 1 1\n"
        " #bytes #iterations BW peak[MiB/sec] BW average[MiB/sec] MsgRate[Mpps]\n 4 5000 2 2 1\n"
    )
    pts = parse_perftest(text)
    assert pts.unit == "MB/sec" and pts.points == ((2, MIB), (4, 2 * MIB))
