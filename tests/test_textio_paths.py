"""kvmodel.textio.paths: only regular files are read, reads are bounded, walks and globs keep
to their budget and end on symbolic-link loops (issue 23).  The CLI runs of the same cases,
under a memory limit, are in test_hostile_corpus.py."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from kvmodel.textio import TextError
from kvmodel.textio import paths as P
from kvmodel.textio.source import open_source


@pytest.mark.parametrize(
    ("make", "kind"),
    [
        (lambda tmp: Path("/dev/null"), "a character device"),
        (lambda tmp: tmp, "a directory"),
        (lambda tmp: (os.mkfifo(tmp / "f"), tmp / "f")[1], r"a named pipe \(FIFO\)"),
    ],
    ids=["device", "directory", "fifo"],
)
def test_not_a_regular_file_is_named_by_its_kind(make, kind, tmp_path):
    path = make(tmp_path)
    with pytest.raises(TextError, match=rf"{path} is {kind}, not a regular file"):
        P.regular_file(path)
    with pytest.raises(TextError, match=kind):  # the readers' entry point
        open_source(path, None, 1000)


def test_a_socket_is_refused(tmp_path):
    path = Path("/tmp") / f"kvpaths-{os.getpid()}.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    try:
        with pytest.raises(TextError, match="is a socket, not a regular file"):
            P.regular_file(path)
    finally:
        sock.close()
        path.unlink()


def test_proc_files_are_refused_though_they_look_regular():
    # /proc/self/status says it is a regular file of size 0, and holds text
    assert os.stat("/proc/self/status").st_size == 0
    with pytest.raises(TextError, match="is in /proc, a system directory"):
        P.regular_file("/proc/self/status")


def test_a_link_into_proc_is_refused(tmp_path):
    link = tmp_path / "status.txt"
    link.symlink_to("/proc/self/status")
    with pytest.raises(TextError, match="is in /proc"):
        P.open_regular(link)


def test_read_bounded_reads_at_most_the_limit(tmp_path):
    path = tmp_path / "config.json"
    path.write_bytes(b"x" * 101)
    assert P.read_bounded(path, 101) == b"x" * 101
    with pytest.raises(ValueError, match="over the 0.0001 MB limit"):
        P.read_bounded(path, 100, ValueError)


def test_walk_stops_at_its_entry_budget(tmp_path, monkeypatch):
    for i in range(30):
        (tmp_path / f"f{i}.parquet").touch()
    monkeypatch.setattr(P, "MAX_WALK_ENTRIES", 29)
    with pytest.raises(TextError, match=r"stopped at 29 directory entries \(the limit\)"):
        P.Walk("x").files_under(tmp_path)
    monkeypatch.setattr(P, "MAX_WALK_ENTRIES", 30)
    assert len(P.Walk("x").files_under(tmp_path)) == 30


def test_walk_stops_at_its_file_and_byte_budgets(tmp_path, monkeypatch):
    for i in range(3):
        (tmp_path / f"f{i}").write_bytes(b"12345")
    monkeypatch.setattr(P, "MAX_WALK_FILES", 2)
    with pytest.raises(TextError, match=r"stopped at 2 files \(the limit\)"):
        P.Walk("x").files_under(tmp_path)
    monkeypatch.setattr(P, "MAX_WALK_FILES", 3)
    monkeypatch.setattr(P, "MAX_WALK_BYTES", 14)  # three files of 5 bytes: 15
    with pytest.raises(TextError, match="GB in its files"):
        P.Walk("x").files_under(tmp_path)


def test_link_loops_are_walked_once(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "data.parquet").touch()
    (tmp_path / "a" / "b" / "up").symlink_to(tmp_path)  # back to tmp_path (an ancestor)
    (tmp_path / "a" / "loop").symlink_to(".")
    (tmp_path / "a" / "self").symlink_to("self")  # ELOOP: skipped
    walk = P.Walk("x")
    files = walk.files_under(tmp_path)
    assert files == [tmp_path / "a" / "b" / "data.parquet"]
    assert str(tmp_path / "a" / "self") in walk.skipped
    matched = P.Walk("x").glob(str(tmp_path / "**" / "*.parquet"))
    assert [p.resolve() for p in matched] == [tmp_path / "a" / "b" / "data.parquet"]


def test_glob_matches_like_the_shell(tmp_path):
    for name in ("day=1/part-0.parquet", "day=2/part-0.parquet", "day=2/_SUCCESS",
                 "other/x.parquet", ".hidden/y.parquet"):  # fmt: skip
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).touch()
    walk = P.Walk("x")
    assert walk.glob(str(tmp_path / "day=*")) == [tmp_path / "day=1", tmp_path / "day=2"]
    assert walk.glob(str(tmp_path / "day=?" / "*.parquet")) == [
        tmp_path / "day=1" / "part-0.parquet",
        tmp_path / "day=2" / "part-0.parquet",
    ]
    names = {p.relative_to(tmp_path).as_posix() for p in P.Walk("x").glob(f"{tmp_path}/**/*")}
    assert "day=2/_SUCCESS" not in names and ".hidden/y.parquet" not in names
    assert {"day=1/part-0.parquet", "other/x.parquet"} <= names
