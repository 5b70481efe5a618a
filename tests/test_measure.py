"""Measured vs modeled: parsers (Prometheus, perftest, nsys, pairs), fits, comparison, CLI."""

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.calibrate import (
    Fit,
    apply_fit,
    calibrated_link,
    compare_nsys_to_model,
    compare_to_model,
    fit_from_bandwidth_points,
    fit_latency_bandwidth,
    link_efficiency,
)
from kvmodel.cli import main
from kvmodel.measure_io import (
    MeasureError,
    Metrics,
    NsysResult,
    detect_measurement,
    histogram_quantile,
    load_measurement,
    parse_nsys_csv,
    parse_pairs_csv,
    parse_perftest,
    parse_prometheus_metrics,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"
MIB = 2**20


def test_measure_error_is_a_value_error():
    assert issubclass(MeasureError, ValueError)


# --------------------------------------------------------------------------- samples


@pytest.mark.parametrize(
    "name, kind",
    [
        ("vllm_pd_metrics.prom", "prometheus"),
        ("gap_gauge.prom", "prometheus"),
        ("sglang_pd_metrics.prom", "prometheus"),
        ("ib_write_bw.txt", "perftest"),
        ("ib_send_bw_mib.txt", "perftest"),
        ("ib_read_bw_gbits.txt", "perftest"),
        ("ib_write_bw.json", "perftest-json"),
        ("nsys_cuda_gpu_kern_sum.csv", "nsys"),
        ("nsys_cuda_gpu_trace.csv", "nsys"),
        ("nsys_nvtx_sum.csv", "nsys"),
        ("transfer_pairs.csv", "pairs"),
    ],
)
def test_every_sample_is_detected_and_parses(name, kind):
    text = (DATA / name).read_text()
    assert detect_measurement(text, name) == kind
    assert detect_measurement(text) == kind  # by content alone
    m = load_measurement(DATA / name)
    assert m.kind == kind and m.name == name


def test_vllm_sample():
    m = load_measurement(DATA / "vllm_pd_metrics.prom").data
    assert isinstance(m, Metrics)
    assert set(m.metrics_found) == {
        "llm_kv_transfer_gap_seconds",
        "vllm:time_to_first_token_seconds",
        "vllm:request_prefill_time_seconds",
        "vllm:nixl_xfer_time_seconds",
        "vllm:nixl_bytes_transferred",
    }
    assert m.gap_source == "llm_kv_transfer_gap_seconds"
    assert 0.003 < m.gap_mean_s < 0.01
    assert m.gap_p50_s <= m.gap_p90_s <= m.gap_p99_s
    assert 0.1 < m.ttft_mean_s < 0.3 and 0.05 < m.prefill_mean_s < m.ttft_mean_s
    assert m.summaries["vllm:time_to_first_token_seconds"].label_sets == 2
    assert m.summaries["vllm:time_to_first_token_seconds"].count == 1200
    assert 30e9 < m.effective_bandwidth_bytes_per_s < 50e9  # NIXL over NDR
    gap = m.summaries["llm_kv_transfer_gap_seconds"]
    assert m.gap_mean_s == pytest.approx(gap.sum / gap.count)
    assert m.transfer_share_of_ttft == pytest.approx(m.gap_mean_s / m.ttft_mean_s)
    assert m.verdict == "under"


def test_sglang_sample_is_in_milliseconds_and_over_the_line():
    m = load_measurement(DATA / "sglang_pd_metrics.prom").data
    assert m.gap_source == "sglang:kv_transfer_latency_ms"
    assert 0.05 < m.gap_mean_s < 0.2  # ms → s
    assert m.ttft_source == "sglang:time_to_first_token_seconds"
    assert m.bandwidth_source == "sglang:kv_transfer_speed_gb_s"
    assert 5e9 < m.effective_bandwidth_bytes_per_s < 12.5e9  # GB/s → B/s, 100 GbE
    assert m.transfer_share_of_ttft > 0.20 and m.verdict == "over"
    assert any("sglang:kv_transfer_latency_ms" in n for n in m.notes)


def test_gap_gauge_sample_uses_the_samples():
    m = load_measurement(DATA / "gap_gauge.prom").data
    gauge = m.summaries["llm_kv_transfer_gap_seconds"]
    assert gauge.kind == "gauge" and gauge.count == 8 == len(gauge.samples)
    assert m.gap_mean_s == pytest.approx(np.mean(gauge.samples))
    assert m.gap_p90_s == pytest.approx(np.percentile(gauge.samples, 90))


def test_perftest_samples_fit_ndr():
    write = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.txt").data)
    assert write.n == 23
    assert write.bandwidth_bytes_per_s == pytest.approx(48.0e9, rel=0.01)
    assert write.latency_s == pytest.approx(0.165e-6, rel=0.05)
    assert write.rms_relative_error < 0.02
    as_json = fit_from_bandwidth_points(load_measurement(DATA / "ib_write_bw.json").data)
    assert as_json.bandwidth_bytes_per_s == pytest.approx(48.0e9, rel=0.01)
    send = fit_from_bandwidth_points(load_measurement(DATA / "ib_send_bw_mib.txt").data)
    read = fit_from_bandwidth_points(load_measurement(DATA / "ib_read_bw_gbits.txt").data)
    assert send.bandwidth_bytes_per_s == pytest.approx(47.4e9, rel=0.01)
    assert read.bandwidth_bytes_per_s == pytest.approx(47.1e9, rel=0.01)
    for fit in (write, send, read):
        assert fit.bandwidth_bytes_per_s < catalog.get_link("ib-ndr").bandwidth_bytes_per_s


def test_pairs_sample_fits_two_microseconds():
    pts = load_measurement(DATA / "transfer_pairs.csv").data
    fit = fit_latency_bandwidth(*zip(*pts, strict=True))
    assert fit.latency_s == pytest.approx(2.1e-6, rel=0.05)
    assert fit.bandwidth_bytes_per_s == pytest.approx(46.5e9, rel=0.01)


def test_nsys_samples():
    kern = load_measurement(DATA / "nsys_cuda_gpu_kern_sum.csv").data
    assert isinstance(kern, NsysResult)
    assert kern.report == "cuda_gpu_kern_sum" and kern.selection == "nccl-kernels"
    assert kern.names == ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)",)
    assert kern.count == 2560
    assert kern.mean_s == pytest.approx(133979927e-9 / 2560)
    assert kern.median_s == pytest.approx(52242.2e-9)
    assert kern.min_s < kern.median_s < kern.max_s and kern.durations_s == ()
    trace = load_measurement(DATA / "nsys_cuda_gpu_trace.csv").data
    assert trace.report == "cuda_gpu_trace" and trace.count == 12 == len(trace.durations_s)
    assert trace.mean_s == pytest.approx(np.mean(trace.durations_s))
    assert all(40e-6 < d < 80e-6 for d in trace.durations_s)
    nvtx = load_measurement(DATA / "nsys_nvtx_sum.csv").data
    assert nvtx.report == "nvtx_sum" and nvtx.selection == "nvtx"
    assert nvtx.names == (":kv_send_layer",) and nvtx.count == 2560


# --------------------------------------------------------------------------- Prometheus


def test_histogram_quantile_hand_computed():
    b = [(0.1, 10), (0.5, 30), (1.0, 40), (math.inf, 40)]
    assert histogram_quantile(0.5, b) == pytest.approx(0.1 + 0.4 * 10 / 20)  # 0.3
    assert histogram_quantile(0.9, b) == pytest.approx(0.5 + 0.5 * 6 / 10)  # 0.8
    assert histogram_quantile(0.99, b) == pytest.approx(0.5 + 0.5 * 9.6 / 10)  # 0.98
    assert histogram_quantile(0.1, b) == pytest.approx(0.1 * 4 / 10)  # first bucket from 0
    # a rank in +Inf returns the largest finite bound
    assert histogram_quantile(0.9, [(0.1, 10), (math.inf, 20)]) == pytest.approx(0.1)
    assert histogram_quantile(0.5, [(0.1, 0), (math.inf, 0)]) is None  # no observations
    assert histogram_quantile(0.5, [(0.1, 3), (1.0, 5)]) is None  # no +Inf bucket
    with pytest.raises(ValueError):
        histogram_quantile(1.5, b)


HIST = """\
# HELP llm_kv_transfer_gap_seconds gap
# TYPE llm_kv_transfer_gap_seconds histogram
llm_kv_transfer_gap_seconds_bucket{engine="0",le="0.1"} 10
llm_kv_transfer_gap_seconds_bucket{engine="0",le="0.5"} 30
llm_kv_transfer_gap_seconds_bucket{engine="0",le="1.0"} 40
llm_kv_transfer_gap_seconds_bucket{engine="0",le="+Inf"} 40
llm_kv_transfer_gap_seconds_count{engine="0"} 40
llm_kv_transfer_gap_seconds_sum{engine="0"} 12.0
llm_kv_transfer_gap_seconds_bucket{engine="1",le="0.1"} 0
llm_kv_transfer_gap_seconds_bucket{engine="1",le="0.5"} 10
llm_kv_transfer_gap_seconds_bucket{engine="1",le="1.0"} 20
llm_kv_transfer_gap_seconds_bucket{engine="1",le="+Inf"} 20
llm_kv_transfer_gap_seconds_count{engine="1"} 20
llm_kv_transfer_gap_seconds_sum{engine="1"} 12.0
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="1.0"} 10
vllm:time_to_first_token_seconds_bucket{le="2.0"} 60
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 60
vllm:time_to_first_token_seconds_count 60
vllm:time_to_first_token_seconds_sum 90.0
"""


def test_histograms_sum_over_label_sets():
    m = parse_prometheus_metrics(HIST)
    # summed: le 0.1 → 10, 0.5 → 40, 1.0 → 60, +Inf → 60
    assert m.gap_count == 60
    assert m.gap_mean_s == pytest.approx(24.0 / 60)
    assert m.gap_p50_s == pytest.approx(0.1 + 0.4 * (30 - 10) / 30)
    assert m.gap_p90_s == pytest.approx(0.5 + 0.5 * (54 - 40) / 20)
    assert m.ttft_mean_s == pytest.approx(1.5)
    assert m.ttft_p50_s == pytest.approx(1.0 + 1.0 * (30 - 10) / 50)
    assert m.transfer_share_of_ttft == pytest.approx(0.4 / 1.5)
    assert m.verdict == "over"  # 26.7 % > 20 %
    assert parse_prometheus_metrics(HIST, share_target=0.3).verdict == "under"
    assert m.summaries["llm_kv_transfer_gap_seconds"].buckets[-1] == (math.inf, 60)


def test_per_request_gauge_and_no_ttft():
    text = "".join(
        f'llm_kv_transfer_gap_seconds{{request_id="r{i}"}} {v}\n'
        for i, v in enumerate([0.010, 0.020, 0.030, 0.040])
    )
    m = parse_prometheus_metrics("# TYPE llm_kv_transfer_gap_seconds gauge\n" + text)
    assert m.gap_mean_s == pytest.approx(0.025)
    assert m.gap_p50_s == pytest.approx(0.025)
    assert m.gap_p90_s == pytest.approx(np.percentile([0.01, 0.02, 0.03, 0.04], 90))
    assert m.gap_count == 4
    assert m.ttft_mean_s is None and m.transfer_share_of_ttft is None and m.verdict is None


def test_nixl_bytes_counter_and_histogram():
    text = """\
# TYPE vllm:nixl_xfer_time_seconds histogram
vllm:nixl_xfer_time_seconds_bucket{le="0.01"} 4
vllm:nixl_xfer_time_seconds_bucket{le="+Inf"} 4
vllm:nixl_xfer_time_seconds_sum 0.02
vllm:nixl_xfer_time_seconds_count 4
# TYPE vllm:nixl_bytes_transferred counter
vllm:nixl_bytes_transferred_total{engine="0"} 6.0e8
vllm:nixl_bytes_transferred_total{engine="1"} 4.0e8
vllm:nixl_bytes_transferred_created{engine="0"} 1.7e9
"""
    m = parse_prometheus_metrics(text)
    assert m.nixl_xfer_mean_s == pytest.approx(0.005)
    assert m.nixl_bytes_mean == pytest.approx(1e9 / 4)
    assert m.effective_bandwidth_bytes_per_s == pytest.approx(1e9 / 0.02)
    assert m.gap_source == "vllm:nixl_xfer_time_seconds"  # fallback, named
    assert m.summaries["vllm:nixl_bytes_transferred"].kind == "counter"


def test_sglang_gauges_scaled():
    text = """\
sglang:kv_transfer_latency_ms{tp_rank="0"} 80
sglang:kv_transfer_latency_ms{tp_rank="1"} 120
sglang:kv_transfer_speed_gb_s{tp_rank="0"} 10.5
sglang:kv_transfer_speed_gb_s{tp_rank="1"} 9.5
"""
    m = parse_prometheus_metrics(text)
    assert m.gap_mean_s == pytest.approx(0.100)
    assert m.effective_bandwidth_bytes_per_s == pytest.approx(10e9)


def test_prometheus_without_known_metrics_lists_found_and_expected():
    text = "# TYPE foo_total counter\nfoo_total 3\nbar 1\n"
    with pytest.raises(MeasureError) as exc:
        parse_prometheus_metrics(text, "x.prom")
    msg = str(exc.value)
    assert "x.prom" in msg and "foo_total" in msg and "bar" in msg
    assert "llm_kv_transfer_gap_seconds" in msg and "vllm:time_to_first_token_seconds" in msg


@pytest.mark.parametrize(
    "bad, line",
    [
        ('vllm:time_to_first_token_seconds_bucket{le="0.5', 3),  # truncated
        ("vllm:time_to_first_token_seconds_cou", 3),  # cut before the value
        ("this is garbage", 3),
        ('vllm:time_to_first_token_seconds_bucket{le="0.5"} abc', 3),
    ],
)
def test_garbled_prometheus_line_is_named(bad, line):
    text = (
        "# TYPE vllm:time_to_first_token_seconds histogram\n"
        'vllm:time_to_first_token_seconds_bucket{le="0.1"} 1\n' + bad + "\n"
    )
    with pytest.raises(MeasureError, match=rf"line {line}\b.*expected Prometheus text"):
        parse_prometheus_metrics(text, "scrape.prom")


def test_decreasing_buckets_name_the_line():
    text = HIST.replace('engine="1",le="1.0"} 20', 'engine="1",le="1.0"} 5')
    with pytest.raises(
        MeasureError, match=r'line 11: .*\{engine="1",le="1"\} is 5, below 10 .*never decrease'
    ):
        parse_prometheus_metrics(text)


def test_bucket_without_le_is_an_error():
    text = 'vllm:time_to_first_token_seconds_bucket{x="1"} 3\n'
    with pytest.raises(MeasureError, match="line 1: .*no le label"):
        parse_prometheus_metrics(text)


# --------------------------------------------------------------------------- perftest

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
    assert parse_perftest(text) == [(65536, pytest.approx(46557.03 * MIB))]
    assert parse_perftest(text, mb_bytes=1e6) == [(65536, pytest.approx(46557.03e6))]


def test_perftest_mib_and_gbits_and_single_spaced_header():
    mib = " #bytes #iterations BW peak[MiB/sec] BW average[MiB/sec] MsgRate[Mpps]\n"
    mib += " 4096 1000 9.0 8.0 1.0\n"
    assert parse_perftest(mib) == [(4096, pytest.approx(8.0 * MIB))]
    gb = " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]\n"
    gb += " 8388608    1000             390.12             376.50              0.005610\n"
    assert parse_perftest(PRE + gb) == [(8388608, pytest.approx(376.5 * 1.25e8))]


def test_perftest_qos_and_per_port_variants_pick_bw_average():
    qos = (
        " #bytes    #sl      #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
    )
    qos += " 65536      3           5000           100.00            90.00                  0.1\n"
    assert parse_perftest(qos) == [(65536, pytest.approx(90 * MIB))]
    port = (
        " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]   "
        "BW Port1[MB/sec]   MsgRate Port1[Mpps]   BW Port2[MB/sec]   MsgRate Port2[Mpps]\n"
        " 65536      5000     200.0   190.0   0.1   95.0   0.05   95.0   0.05\n"
    )
    assert parse_perftest(port) == [(65536, pytest.approx(190 * MIB))]


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
    assert parse_perftest(text) == [(1000, pytest.approx(4020.54 * MIB))]


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
    assert parse_perftest(json.dumps(one)) == [(65536, pytest.approx(1.25e8))]
    bracket = [{"MsgSize": 2, "BW_average[MiB/sec]": 3.0}, {"MsgSize": 4, "BW_average[MiB/sec]": 6}]
    assert parse_perftest(json.dumps(bracket)) == [(2, 3.0 * MIB), (4, 6.0 * MIB)]
    no_unit = {"results": {"MsgSize": 65536, "BW_average": 46557.0}}
    with pytest.raises(MeasureError, match='no bandwidth unit; expected a "unit" field'):
        parse_perftest(json.dumps(no_unit))
    assert parse_perftest(json.dumps(no_unit), unit="MiB/sec") == [(65536, 46557.0 * MIB)]
    jsonl = "\n".join(
        json.dumps({"results": {"MsgSize": s, "BW_average": b, "BW_unit": "MiB/sec"}})
        for s, b in ((1024, 100.0), (2048, 200.0))
    )
    assert parse_perftest(jsonl) == [(1024, 100.0 * MIB), (2048, 200.0 * MIB)]
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


# --------------------------------------------------------------------------- nsys

KERN_HEADER = (
    '"Time (%)","Total Time (ns)","Instances","Avg (ns)","Med (ns)","Min (ns)","Max (ns)",'
    '"StdDev (ns)","Name"\n'
)


def test_nsys_kern_sum_preamble_and_several_rows():
    text = (
        "Generating SQLite file r.sqlite from r.nsys-rep\n"
        "Processing [r.sqlite] with [/opt/nsys/reports/cuda_gpu_kern_sum.py]... \n\n"
        " ** CUDA GPU Kernel Summary (cuda_gpu_kern_sum):\n\n"
        + KERN_HEADER
        + '"60","6000","2","3000","3000","2000","4000","1414",'
        + '"ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclWorkElem)"\n'
        + '"30","3000","1","3000","3000","3000","3000","0",'
        + '"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096>)"\n'
        + '"10","1000","5","200","200","100","300","50",'
        + '"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(x)"\n'
    )
    r = parse_nsys_csv(text)
    assert r.count == 3 and len(r.names) == 2
    assert r.total_s == pytest.approx(9000e-9) and r.mean_s == pytest.approx(3000e-9)
    assert r.min_s == pytest.approx(2000e-9) and r.max_s == pytest.approx(4000e-9)
    assert r.median_s is None and r.notes  # several rows: no median from a summary
    allreduce = parse_nsys_csv(text, pattern="allreduce")
    assert allreduce.selection == "kernels" and allreduce.count == 5
    assert allreduce.median_s == pytest.approx(200e-9)


def test_nsys_time_unit_and_nvtx_pattern_override():
    text = (
        "Time (%),Total Time (us),Instances,Avg (us),Med (us),Min (us),Max (us),StdDev (us),"
        "Style,Range\n50,100.0,2,50.0,50.0,40.0,60.0,14.1,PushPop,:kv_send\n"
        "50,100.0,1,100.0,100.0,100.0,100.0,0,PushPop,:my_copy\n"
    )
    r = parse_nsys_csv(text)
    assert r.names == (":kv_send",) and r.mean_s == pytest.approx(50e-6)
    assert parse_nsys_csv(text, pattern=r"my_copy").mean_s == pytest.approx(100e-6)


def test_nsys_errors():
    with pytest.raises(MeasureError, match="no nsys stats CSV header"):
        parse_nsys_csv("Processing [x.sqlite] with [y.py]...\nnothing here\n")
    truncated = KERN_HEADER + '"60","6000","2","3000","3000"\n'
    with pytest.raises(MeasureError, match=r"line 2 has 5 fields, the header on line 1 has 9"):
        parse_nsys_csv(truncated, "k.csv")
    garbage = (
        KERN_HEADER + '"60","lots","2","3000","3000","2000","4000","1","ncclDevKernel_SendRecv"\n'
    )
    with pytest.raises(MeasureError, match=r"line 2, column 'Total Time \(ns\)': 'lots'"):
        parse_nsys_csv(garbage)
    other = KERN_HEADER + '"60","6000","2","3000","3000","2000","4000","1","my_gemm"\n'
    with pytest.raises(MeasureError, match=r"no row matches .*names found: my_gemm"):
        parse_nsys_csv(other)
    with pytest.raises(MeasureError, match="not a valid regular expression"):
        parse_nsys_csv(other, pattern="(")


# --------------------------------------------------------------------------- pairs


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
    assert [(pytest.approx(b), pytest.approx(t)) for b, t in expected] == got


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


# --------------------------------------------------------------------------- dispatch


def test_detect_and_load_from_every_source_type():
    text = (DATA / "transfer_pairs.csv").read_text()
    from_text = load_measurement(text)
    assert from_text.kind == "pairs" and from_text.name == "text"
    assert load_measurement(text.encode()).data == from_text.data
    assert load_measurement(str(DATA / "transfer_pairs.csv")).data == from_text.data
    upload = io.BytesIO(text.encode())
    upload.name = "upload.csv"
    assert load_measurement(upload).name == "upload.csv"
    with pytest.raises(MeasureError, match="cannot read"):
        load_measurement("no_such_file.prom")
    with pytest.raises(MeasureError, match="JSON without perftest fields"):
        detect_measurement('{"a": 1}')
    with pytest.raises(MeasureError, match="cannot tell what this measurement is"):
        detect_measurement("hello world\n")
    with pytest.raises(MeasureError, match="empty"):
        load_measurement(b"  \n")
    with pytest.raises(MeasureError, match="line 2 holds binary data"):
        load_measurement(b"bytes,seconds\n\x00\x01")


# --------------------------------------------------------------------------- fits


def test_fit_recovers_latency_and_bandwidth_exactly():
    x = np.array([2**k for k in range(10, 28)], dtype=float)
    t = 2e-6 + x / 40e9
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == pytest.approx(2e-6, rel=1e-9)
    assert fit.bandwidth_bytes_per_s == pytest.approx(40e9, rel=1e-9)
    assert fit.rms_relative_error < 1e-9 and fit.n == x.size and not fit.latency_clamped
    assert fit.time_s(1e9) == pytest.approx(2e-6 + 1e9 / 40e9)


def test_fit_close_with_one_percent_noise():
    rng = np.random.default_rng(7)
    x = np.repeat(np.array([2**k for k in range(10, 28)], dtype=float), 3)
    t = (2e-6 + x / 40e9) * (1 + 0.01 * rng.standard_normal(x.size))
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == pytest.approx(2e-6, rel=0.05)
    assert fit.bandwidth_bytes_per_s == pytest.approx(40e9, rel=0.01)
    assert 0.005 < fit.rms_relative_error < 0.02


def test_negative_latency_is_clamped_and_refitted_through_the_origin():
    x = np.array([1e3, 1e6, 1e9])
    t = x / 10e9 * np.array([0.5, 1.0, 1.0])  # small messages faster than the slope allows
    fit = fit_latency_bandwidth(x, t)
    assert fit.latency_s == 0 and fit.latency_clamped
    assert fit.bandwidth_bytes_per_s > 0
    exact = fit_latency_bandwidth([1e3, 1e6], [1e3 / 5e9, 1e6 / 5e9])  # zero latency
    assert exact.latency_s == pytest.approx(0, abs=1e-18)
    assert exact.bandwidth_bytes_per_s == pytest.approx(5e9)


def test_fit_input_errors():
    with pytest.raises(MeasureError, match="at least 2 distinct message sizes"):
        fit_latency_bandwidth([1000, 1000], [1e-3, 1.1e-3])
    with pytest.raises(MeasureError, match="do not grow"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3, 1e-6])
    with pytest.raises(MeasureError, match="expected bytes ≥ 0, seconds > 0"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3, 0])
    with pytest.raises(MeasureError, match="sizes but"):
        fit_latency_bandwidth([1e3, 1e6], [1e-3])
    with pytest.raises(ValueError):
        fit_from_bandwidth_points([(1024, 0.0), (2048, 1.0)])


def test_fit_from_bandwidth_points_exact_and_efficiency_curve():
    sizes = [2**k for k in range(1, 24)]
    pts = [(s, s / (0.2e-6 + s / 48e9)) for s in sizes]
    fit = fit_from_bandwidth_points(pts)
    assert fit.source == "bandwidth"
    assert fit.bandwidth_bytes_per_s == pytest.approx(48e9, rel=1e-9)
    assert fit.latency_s == pytest.approx(0.2e-6, rel=1e-9)
    curve = dict(fit.efficiency_curve)
    assert list(curve) == sizes
    assert curve[2] < 0.01 and curve[2**23] == pytest.approx(1, abs=0.01)
    effs = list(curve.values())
    assert all(a <= b for a, b in zip(effs, effs[1:], strict=False))
    assert fit.bandwidth_at(2**23) == pytest.approx(curve[2**23] * 48e9)


# --------------------------------------------------------------------------- apply and compare


def _fit(bw=40e9, lat=3e-6, source="time"):
    return Fit(
        latency_s=lat, bandwidth_bytes_per_s=bw, rms_relative_error=0.01, n=10, source=source
    )


def test_calibrated_link_and_efficiency():
    ndr = catalog.get_link("ib-ndr")
    link = calibrated_link(ndr, _fit())
    assert link.bandwidth_bytes_per_s == 40e9 and link.latency_s == 3e-6
    assert link.id == "ib-ndr-measured" and "10 measured points" in link.source
    assert calibrated_link(ndr, _fit(), use_latency=False).latency_s == ndr.latency_s
    assert link_efficiency(ndr, _fit()) == pytest.approx(0.8)


def test_apply_fit_modes():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8, efficiency=0.9)
    by_link = apply_fit(sc, _fit())
    assert by_link.link.bandwidth_bytes_per_s == 40e9 and by_link.link.latency_s == 3e-6
    assert by_link.efficiency == 1.0
    by_eff = apply_fit(sc, _fit(), mode="efficiency")
    assert by_eff.efficiency == pytest.approx(0.8) and by_eff.link.bandwidth_bytes_per_s == 50e9
    assert by_eff.link.latency_s == 3e-6
    # a perftest fit's intercept is not a latency: the link's own latency stays by default
    assert apply_fit(sc, _fit(source="bandwidth")).link.latency_s == sc.link.latency_s
    with pytest.raises(MeasureError, match="efficiency must be in"):
        apply_fit(sc, _fit(bw=60e9), mode="efficiency")
    with pytest.raises(ValueError, match="mode"):
        apply_fit(sc, _fit(), mode="nope")


def test_compare_to_model():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8)
    metrics = load_measurement(DATA / "vllm_pd_metrics.prom").data
    cmp = compare_to_model(sc, metrics)
    for key in (
        "exposed_transfer_s",
        "transfer_s",
        "prefill_s",
        "ttft_s",
        "transfer_share_of_ttft",
        "bandwidth_per_stream_bytes_per_s",
    ):
        row = cmp[key]
        assert row["ratio"] == pytest.approx(row["measured"] / row["model"])
    assert cmp["exposed_transfer_s"]["measured"] == metrics.gap_mean_s
    assert cmp["bandwidth_per_stream_bytes_per_s"]["model"] == 50e9
    assert cmp["verdict"]["measured"] == "under" and cmp["verdict"]["agree"] is True
    sparse = parse_prometheus_metrics('sglang:kv_transfer_latency_ms{r="0"} 5\n')
    assert compare_to_model(sc, sparse)["ttft_s"]["ratio"] is None


def test_compare_nsys_to_model():
    sc = build_scenario(model="llama-3.1-70b", link="ib-ndr", seq_len=4096, tp=8)
    nsys = load_measurement(DATA / "nsys_cuda_gpu_kern_sum.csv").data
    cmp = compare_nsys_to_model(sc, nsys)
    assert cmp["model_layers"] == 80
    assert 1.0 < cmp["per_layer_s"]["ratio"] < 1.5  # ~52 µs measured vs ~44 µs modeled


# --------------------------------------------------------------------------- CLI


def run_json(capsys, *argv):
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_cli_calibrate_json(capsys):
    out = run_json(capsys, "calibrate", str(DATA / "ib_write_bw.txt"), "--link", "ib-ndr")
    for key in (
        "bandwidth_gbs",
        "latency_us",
        "efficiency",
        "rms_relative_error",
        "n_points",
        "kind",
    ):
        assert key in out
    assert out["kind"] == "perftest" and out["n_points"] == 23
    assert out["bandwidth_gbs"] == pytest.approx(48.0, rel=0.01)
    assert out["efficiency"] == pytest.approx(out["bandwidth_gbs"] / 50)
    out = run_json(capsys, "calibrate", str(DATA / "transfer_pairs.csv"))
    assert out["efficiency"] is None and out["kind"] == "pairs"
    assert out["latency_us"] == pytest.approx(2.1, rel=0.05)


def test_cli_metrics_json(capsys):
    out = run_json(capsys, "metrics", str(DATA / "vllm_pd_metrics.prom"))
    for key in (
        "gap_mean_ms",
        "ttft_mean_ms",
        "transfer_share_of_ttft",
        "verdict",
        "gap_p50_ms",
        "gap_p90_ms",
        "gap_p99_ms",
        "ttft_p99_ms",
        "effective_bandwidth_gbs",
        "metrics_found",
    ):
        assert key in out
    assert out["verdict"] == "under"
    assert out["transfer_share_of_ttft"] == pytest.approx(out["gap_mean_ms"] / out["ttft_mean_ms"])
    out = run_json(capsys, "metrics", str(DATA / "sglang_pd_metrics.prom"))
    assert out["verdict"] == "over"


def test_cli_tables(capsys):
    assert main(["calibrate", str(DATA / "ib_read_bw_gbits.txt"), "--link", "ib-ndr"]) == 0
    assert "per-message cost" in capsys.readouterr().out
    assert main(["metrics", str(DATA / "gap_gauge.prom")]) == 0
    assert "under the 20% line" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["calibrate", str(DATA / "nsys_nvtx_sum.csv")], "no (size, time) pairs"),
        (["calibrate", str(DATA / "vllm_pd_metrics.prom")], "kvmodel metrics"),
        (["metrics", str(DATA / "ib_write_bw.txt")], "not Prometheus text"),
        (["metrics", "/no/such/file.prom"], "cannot read"),
        (["calibrate", str(DATA / "ib_write_bw.txt"), "--link", "nope"], "unknown link"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(capsys, argv, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_cli_garbled_file_no_traceback(tmp_path):
    bad = tmp_path / "scrape.prom"
    bad.write_text(
        '# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first{le="0.5\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "kvmodel", "metrics", str(bad), "--json"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert "line 2" in proc.stderr
