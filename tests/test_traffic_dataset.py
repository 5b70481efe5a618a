"""A directory or glob of Parquet files reads as the same rows in one file (traffic.dataset)."""

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kvmodel.cli import main
from kvmodel.traffic import TrafficError, load_traffic
from kvmodel.traffic.dataset import is_dataset


def table(n=20_000, seed=3):
    rng = np.random.default_rng(seed)
    return pa.table(
        {
            "request_id": [f"r{i}" for i in range(n)],
            "timestamp": np.cumsum(rng.exponential(0.05, n)),
            "prompt_tokens": rng.integers(1, 40_000, n),
            "output_tokens": rng.integers(0, 900, n),
        }
    )


def split(t: pa.Table, folder, n_files, row_group_size=1_000):
    """Write ``t`` as ``n_files`` Parquet files of about equal size, in order."""
    folder.mkdir(parents=True, exist_ok=True)
    edges = np.linspace(0, t.num_rows, n_files + 1).astype(int)
    for i, (a, b) in enumerate(zip(edges[:-1], edges[1:], strict=True)):
        pq.write_table(
            t.slice(a, b - a), folder / f"part-{i:05d}.parquet", row_group_size=row_group_size
        )
    return folder


def same(a, b):
    for f in ("prompt_tokens", "weights", "output_tokens", "arrival_s", "cached_tokens"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=f)
    assert a.span_s == b.span_s
    assert (a.fmt, a.skipped_rows, a.skipped_examples[:0]) == (b.fmt, b.skipped_rows, ())


@pytest.mark.parametrize("n_files", [1, 3, 10])
@pytest.mark.parametrize("per_request", [False, True])
def test_split_in_n_files_reads_as_one_file(tmp_path, n_files, per_request):
    t = table()
    pq.write_table(t, tmp_path / "one.parquet")
    one = load_traffic(tmp_path / "one.parquet", per_request=per_request)
    many = load_traffic(split(t, tmp_path / "ds", n_files), per_request=per_request)
    same(one, many)
    assert many.columns["files_read"] == n_files and many.columns["skipped_files"] == []
    assert many.n_requests == 20_000


def test_large_row_groups_and_several_jobs_per_file(tmp_path, monkeypatch):
    """Jobs of whole row groups (here 3 groups of 4,000 rows per job) across file ends."""
    from kvmodel.traffic import dataset

    monkeypatch.setattr(dataset, "_JOB_ROWS", 10_000)
    monkeypatch.setattr(dataset, "_BATCH_ROWS", 1_500)
    t = table(50_000)
    pq.write_table(t, tmp_path / "one.parquet")
    one = load_traffic(tmp_path / "one.parquet")
    same(one, load_traffic(split(t, tmp_path / "ds", 2, row_group_size=4_000)))


def test_bad_rows_are_counted_as_in_one_file_and_named_by_file(tmp_path):
    t = pa.table({"prompt_tokens": [100, 200, -5, 300, None, 400], "timestamp": np.arange(6.0)})
    pq.write_table(t, tmp_path / "one.parquet")
    folder = tmp_path / "ds"
    folder.mkdir()
    pq.write_table(t.slice(0, 2), folder / "a.parquet")
    pq.write_table(t.slice(2, 4), folder / "b.parquet")
    one = load_traffic(tmp_path / "one.parquet", per_request=False)
    many = load_traffic(folder, per_request=False)
    same(one, many)
    assert many.skipped_rows == 2
    # -5 is row 1 of b.parquet, the empty value its row 3 (rows 3 and 5 of the whole table)
    assert many.skipped_examples[0].startswith("b.parquet row 1: prompt_tokens is -5")
    assert many.skipped_examples[1].startswith("b.parquet row 3: prompt_tokens is empty")
    assert one.skipped_examples[0].startswith("row 3: prompt_tokens is -5")


def test_glob_reads_only_the_files_it_matches(tmp_path):
    folder = split(table(9_000), tmp_path / "ds", 3)
    req = load_traffic(str(folder / "part-0000[01].parquet"), per_request=False)
    assert req.n_requests == 6_000  # two of the three files of 3,000 rows
    assert req.columns["files_read"] == 2
    assert load_traffic(str(tmp_path / "**" / "*.parquet"), per_request=False).n_requests == 9_000


def test_nested_partitions_and_bookkeeping_files(tmp_path):
    """Hive-style folders are searched; _SUCCESS and .crc files are Spark's and not mentioned;
    a README beside the export is skipped with a note."""
    t = table(4_000)
    split(t.slice(0, 1_000), tmp_path / "ds" / "day=2026-11-01", 1)
    split(t.slice(1_000), tmp_path / "ds" / "day=2026-11-02", 2)
    (tmp_path / "ds" / "_SUCCESS").write_text("")
    (tmp_path / "ds" / "day=2026-11-01" / ".part-00000.parquet.crc").write_bytes(b"\0\1")
    (tmp_path / "ds" / "README.txt").write_text("exported from the warehouse")
    pq.write_table(t, tmp_path / "one.parquet")
    req = load_traffic(tmp_path / "ds", per_request=False)
    same(load_traffic(tmp_path / "one.parquet", per_request=False), req)
    assert req.columns["files_read"] == 3
    assert req.columns["skipped_files"] == [str(tmp_path / "ds" / "README.txt")]


def test_is_dataset(tmp_path):
    pq.write_table(table(10), tmp_path / "a.parquet")
    assert is_dataset(tmp_path) and is_dataset(str(tmp_path / "*.parquet"))
    assert not is_dataset(tmp_path / "a.parquet") and not is_dataset(b"PAR1")
    assert not is_dataset(str(tmp_path / "missing.parquet"))  # the one-file reader says so


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda d: d.mkdir(), "the directory holds no Parquet file; expected one or more"),
        (lambda d: (d.mkdir(), (d / "x.csv").write_text("a\n1\n")), "(it has 1 other files)"),
    ],
)
def test_a_directory_without_parquet_files(tmp_path, make, expected):
    make(tmp_path / "logs")
    with pytest.raises(TrafficError, match="logs: the directory holds no Parquet file") as e:
        load_traffic(tmp_path / "logs")
    assert expected in str(e.value)


def test_a_glob_matching_nothing(tmp_path):
    with pytest.raises(TrafficError, match=r"no file matches this pattern.*quote the glob"):
        load_traffic(str(tmp_path / "*.parquet"))


def test_a_file_without_a_column_read_is_named(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 3)
    pq.write_table(
        table(10).rename_columns(["request_id", "ts", "prompt_tokens", "out"]),
        folder / "part-00001.parquet",
    )
    with pytest.raises(TrafficError) as e:
        load_traffic(folder)
    msg = str(e.value)
    assert msg.startswith(str(folder / "part-00001.parquet") + ": has no column 'output_tokens'")
    assert "expected every file of the dataset to hold the same columns" in msg


def test_a_column_of_another_type_is_named(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 3)
    t = table(10)
    t = t.set_column(2, "prompt_tokens", t["prompt_tokens"].cast(pa.string()))
    pq.write_table(t, folder / "part-00002.parquet")
    with pytest.raises(
        TrafficError,
        match=r"part-00002.parquet: column 'prompt_tokens' is string, "
        r"but int64 in .*part-00000.parquet",
    ):
        load_traffic(folder)


def test_columns_not_read_may_differ(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 3)
    t = table(1_000).append_column("region", pa.array(["eu"] * 1_000))
    pq.write_table(t, folder / "part-00003.parquet")
    assert load_traffic(folder, per_request=False).n_requests == 4_000


def test_a_damaged_parquet_file_is_named(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 2)
    (folder / "part-00001.parquet").write_bytes(b"half a file")
    with pytest.raises(TrafficError, match=r"part-00001.parquet: not a Parquet file"):
        load_traffic(folder)


def test_keeping_every_request_is_capped_by_max_bytes(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 3)
    with pytest.raises(TrafficError, match=r"over the 0 MB limit for keeping every request"):
        load_traffic(folder, max_bytes=1_000)
    assert load_traffic(folder, max_bytes=1_000, per_request=False).n_requests == 3_000


def test_cli_reads_a_directory_and_a_glob(tmp_path, capsys):
    folder = split(table(3_000), tmp_path / "ds", 3)
    (folder / "notes.md").write_text("# export")
    assert main(["traffic", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["n_requests"], out["files_read"]) == (3_000, 3)
    assert out["skipped_files"] == [str(folder / "notes.md")]
    assert main(["traffic", str(folder / "part-0000[12].parquet")]) == 0
    text = capsys.readouterr().out
    assert "2 Parquet files read" in text and "2,000 (generic-table" in text
    assert main(["traffic", str(tmp_path / "none" / "*.parquet")]) == 2
    assert "no file matches this pattern" in capsys.readouterr().err


def test_a_glob_of_partition_folders(tmp_path):
    """A glob may pick partition folders (read recursively); bookkeeping names stay out."""
    t = table(6_000)
    for day in range(3):
        split(t.slice(2_000 * day, 2_000), tmp_path / "ds" / f"day=2026-11-0{day + 1}", 2)
    (tmp_path / "ds" / "_SUCCESS").write_text("")
    req = load_traffic(str(tmp_path / "ds" / "day=2026-11-0[23]"), per_request=False)
    assert (req.n_requests, req.columns["files_read"]) == (4_000, 4)
    req = load_traffic(str(tmp_path / "ds" / "*"), per_request=False)
    assert (req.n_requests, req.columns["skipped_files"]) == (6_000, [])


def test_no_prompt_column_names_the_first_file(tmp_path):
    folder = tmp_path / "ds"
    folder.mkdir()
    pq.write_table(pa.table({"latency_ms": [1.0, 2.0]}), folder / "a.parquet")
    with pytest.raises(TrafficError, match=r"ds: a.parquet: no prompt-length column among"):
        load_traffic(folder)


def test_a_file_with_a_damaged_footer_is_named(tmp_path):
    folder = split(table(3_000), tmp_path / "ds", 2)
    (folder / "part-00002.parquet").write_bytes(b"PAR1" + b"\0" * 64)  # head, but no footer
    with pytest.raises(TrafficError, match=r"part-00002.parquet: not a readable Parquet file"):
        load_traffic(folder, per_request=False)


def test_skipped_rows_in_partition_folders_name_the_folder(tmp_path):
    """Two files called part-00000.parquet: the row is named by its path below the export."""
    for day, bad in ((1, 5), (2, -7)):
        folder = tmp_path / "ds" / f"day={day}"
        folder.mkdir(parents=True)
        t = pa.table({"prompt_tokens": [100, 200, bad]})
        pq.write_table(t, folder / "part-00000.parquet")
    req = load_traffic(tmp_path / "ds", per_request=False)
    assert req.skipped_rows == 1
    assert req.skipped_examples == (
        "day=2/part-00000.parquet row 3: prompt_tokens is -7 (expected a whole number >= 0)",
    )
