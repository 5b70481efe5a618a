"""The Nsight Systems reader (kvmodel.measure.nsys): kernel and NVTX summaries and traces."""

from pathlib import Path

import numpy as np
import pytest

from kvmodel.measure import MeasureError, NsysResult, load_measurement, parse_nsys_csv

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"


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
