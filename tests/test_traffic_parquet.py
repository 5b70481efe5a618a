"""The Parquet reader (kvmodel.traffic.parquet): paths and bytes, nulls, row groups and batches on
several threads, typed and text date-times."""

import io

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from traffic_helpers import error_of, load_traffic, same_requests, shrink_pieces

from kvmodel.traffic import table_columns


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


def test_parquet_path_and_bytes(tmp_path):
    rows = 1000
    table = pa.table(
        {
            "request_id": [f"r{i}" for i in range(rows)],
            "prompt_tokens": np.arange(rows, dtype=np.int32) * 3,
            "completion_tokens": np.full(rows, 7, dtype=np.int64),
            "arrival_time": np.arange(rows) * 0.5,
        }
    )
    path = tmp_path / "requests.parquet"
    pq.write_table(table, path)
    r = load_traffic(path)
    assert r.fmt == "generic-table" and r.columns["container"] == "parquet"
    assert r.prompt_tokens.tolist() == list(range(0, 3 * rows, 3))
    assert r.prompt_tokens.dtype == np.int64
    assert (r.output_tokens == 7).all() and r.arrival_s[-1] == pytest.approx(499.5)
    r = load_traffic(path.read_bytes())  # found by the PAR1 magic, no name
    assert len(r.prompt_tokens) == rows
    assert table_columns(path) == table.column_names


def test_parquet_with_nulls_and_corrupt(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"isl": pa.array([10, None, 30], pa.int64())}), path)
    r = load_traffic(path)
    assert r.prompt_tokens.tolist() == [10, 30] and r.skipped_rows == 1
    assert r.skipped_examples == ("row 2: isl is empty (expected a whole number >= 0)",)
    msg = error_of(b"PAR1" + b"\x01\x02garbage" * 10, "t.parquet")
    assert "Parquet" in msg


def test_parquet_row_groups_and_batches(tmp_path, small_pieces):
    rows = 5000
    prompt = pa.array([None if i == 3210 else i for i in range(rows)], pa.int64())
    table = pa.table(
        {
            "id": [f"r{i}" for i in range(rows)],
            "input_len": prompt,
            "output_len": np.full(rows, 3, np.int32),
            "arrival_time_ms": np.arange(rows) * 20.0,
        }
    )
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=700)
    r = load_traffic(path)
    assert len(r.prompt_tokens) == rows - 1 and r.skipped_rows == 1
    assert r.skipped_examples == ("row 3211: input_len is empty (expected a whole number >= 0)",)
    assert r.prompt_tokens.tolist() == [i for i in range(rows) if i != 3210]
    assert r.columns["time_unit"] == "ms" and r.arrival_s[-1] == pytest.approx((rows - 1) * 0.02)
    same_requests(load_traffic(path.read_bytes()), r)
    same_requests(load_traffic(io.BytesIO(path.read_bytes()), name="t.parquet"), r)


@pytest.mark.parametrize("as_text", [False, True])
def test_parquet_date_times_typed_or_text(tmp_path, small_pieces, as_text):
    rows = 4000
    stamps = np.datetime64("2024-05-01T10:00:00") + np.arange(rows) * np.timedelta64(1500, "ms")
    created = pa.array(stamps.astype(str) if as_text else stamps)
    if as_text:
        created = pa.array(
            [("soon" if i == 2345 else v) for i, v in enumerate(created.to_pylist())]
        )
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"created": created, "isl": np.arange(rows)}), path, row_group_size=900)
    r = load_traffic(path)
    assert r.columns["time_unit"] == "date-time"
    keep = [i for i in range(rows) if not (as_text and i == 2345)]
    assert r.prompt_tokens.tolist() == keep and r.arrival_s.tolist() == [1.5 * i for i in keep]
    if as_text:
        assert r.skipped_examples[0].startswith("row 2346: created is 'soon' (expected a time")
