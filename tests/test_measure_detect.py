"""Telling the measurement formats apart (kvmodel.measure.detect) and loading any source
(kvmodel.measure.load_measurement)."""

import dataclasses
import gzip
import io
from pathlib import Path

import pytest

from kvmodel.measure import (
    BandwidthPoints,
    MeasureError,
    Measurement,
    Metrics,
    NsysResult,
    TransferPairs,
    detect_measurement,
    load_measurement,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"


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


@pytest.mark.parametrize(
    ("name", "data_type"),
    [
        ("vllm_pd_metrics.prom", Metrics),
        ("ib_write_bw.txt", BandwidthPoints),
        ("ib_write_bw.json", BandwidthPoints),
        ("nsys_nvtx_sum.csv", NsysResult),
        ("transfer_pairs.csv", TransferPairs),
    ],
)
def test_each_kind_loads_as_its_frozen_dataclass(name, data_type):
    m = load_measurement(DATA / name)
    assert isinstance(m, Measurement) and isinstance(m.data, data_type)
    assert dataclasses.is_dataclass(m.data) and m.data.__dataclass_params__.frozen
    assert not hasattr(m.data, "verdict")  # readers read; kvmodel.verdicts judges


def test_a_gzipped_measurement_is_read_through_the_text_layer():
    text = (DATA / "transfer_pairs.csv").read_bytes()
    packed = load_measurement(gzip.compress(text), "transfer_pairs.csv.gz")
    assert packed.kind == "pairs" and packed.data == load_measurement(text).data
