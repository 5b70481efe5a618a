"""Issue 14's corpus of hostile inputs, run through the CLI in a child process with 1.5 GB of
address space and a time limit: each gives a result (exit 0, strict JSON) or a clear message
(exit 2, ``error: <file>: ...`` naming the problem), never a traceback, a crash or a stall.

Small inputs are files in ``tests/data/hostile/``; large ones (decompression bombs, a million
columns, deep nesting, very many series) are generated in ``tmp_path``.  Tampered share links
(``links.json``) go through the link parser in this process.

Issue 23 adds hostile numbers on the command line (``cli-numbers.json``: 400- and 5,000-digit
integers, subnormals, NaN, inf, absurd rates) and hostile paths: devices, ``/proc`` files,
FIFOs, sockets, symbolic-link loops and walks past their budget, the special ones generated in
``tmp_path`` (``os.mkfifo``, a bound unix socket, links to themselves and to their parent).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HOSTILE = ROOT / "tests" / "data" / "hostile"
MEMORY = 1_500_000_000  # bytes of address space for the child (RLIMIT_AS)


def _limit_memory():  # runs in the child before exec
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


def run_cli(*args: str, timeout: float) -> subprocess.CompletedProcess:
    # glibc reserves 64 MB of address space per thread's malloc arena (reserved, not used):
    # with Arrow's threads that alone can exceed the limit, so arenas are capped
    env = {**os.environ, "MALLOC_ARENA_MAX": "2"}
    return subprocess.run(
        [sys.executable, "-m", "kvmodel", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        preexec_fn=_limit_memory,
        timeout=timeout,
    )


def command(path: Path) -> list[str]:
    """The CLI command that reads ``path``, by the corpus file's name."""
    name = path.name
    if name.startswith("config-"):
        return ["size", "--config", str(path)]
    if name.startswith("gap-") or name.startswith("metrics-"):
        return ["metrics", str(path)]
    if name.startswith(("pairs-", "perftest-")):
        return ["calibrate", str(path)]
    return ["traffic", str(path)]


# file -> what the message must say (a regular expression), or None: a result with skipped rows
FILES = {
    "binary.csv": r"line 3 holds binary data",
    "config-broken.json": r"malformed JSON at line 1",
    "config-experts-string.json": r"num_experts is 'many'; expected a whole number",
    "config-heads-string.json": r"num_key_value_heads is '8'; expected a whole number",
    "config-huge-int.json": r"hidden_size is a 401-digit number",
    "config-intermediate-true.json": r"intermediate_size is True; expected a whole number",
    "config-layers-1e9.json": r"num_hidden_layers is 1000000000; expected .* 4,096",
    "config-layers-float.json": r"num_hidden_layers is 1000000000.0",
    "config-not-object.json": r"expected a JSON object at the top, got a JSON array",
    "config-quant-list.json": r"quantization_config is a JSON array",
    "config-text-config-list.json": r"text_config is a JSON array",
    "config-text-config-string.json": r"text_config is a JSON string",
    "counts-1e308.csv": r"the counts add up to more than a number holds",
    "counts-negative-nan.csv": None,
    "empty.csv": r"the file is empty",
    "gap-1e308.prom": r"the values add up beyond what a number holds",
    "gap-count-nan.prom": r"_bucket is nan; expected a finite number",
    "gap-le-nan.prom": r"le='NaN' is not a number",
    "gap-negative-gauge.prom": r"is -0.5; expected a duration, size or speed ≥ 0",
    "gap-negative-sum.prom": r"_sum is -50; expected a duration, size or speed ≥ 0",
    "garbage.prom": r"line 2 is not Prometheus text",
    "header-only.csv": r"there is only a header",
    "json-not-array.json": None,
    "le-decreasing.prom": r"is 4, below 9 .* never decrease",
    "le-nan.prom": r"le='NaN' is not a number",
    "mixed-types.jsonl": None,
    "no-histogram.prom": r"no prompt-length histogram",
    "no-prompt-column.csv": r"no prompt-length column among 'foo', 'bar'",
    "not-parquet.parquet": r"not a Parquet file",
    "open-quote-unused-column.csv": r"row 3: a quote .* never closes",
    "open-quote.csv": r"row 3: a quote .* never closes",
    "pairs-1e308.csv": r"cannot fit a latency and a bandwidth .* span too wide a range",
    "pairs-not-growing.csv": r"the times do not grow with the message size",
    "pairs-one-size.csv": r"at least 2 distinct message sizes",
    "perftest-garbage.txt": r"line 2: '65536 abc def ghi' is not numbers",
    "prompt-1e30.csv": None,
    "prompt-counts-1e308.prom": r"the counts add up to more than a number holds",
    "timestamps-1e30.csv": r"the arrival times span .* years",
    "truncated.csv.gz": r"the gzip data is truncated",
    "utf16-broken.csv": r"broken UTF-16 text",
    "zip-archive.csv": r"this is a zip archive",
}


# generated inputs: name -> (writer(path), what the message must say)


def _gzip_repeat(line: bytes, megabytes: int):
    """Inflates to ``megabytes`` MB of ``line``: one 1 MB gzip member written again and again
    (readers read concatenated members), so a 1 GB bomb is written in a moment."""

    def write(path: Path) -> None:
        member = gzip.compress(line * (1_000_000 // len(line)), compresslevel=9)
        with open(path, "wb") as fh:
            for _ in range(megabytes):
                fh.write(member)

    return write


def _gzip_zeros(path: Path) -> None:  # 1 GB of zeros streamed into gzip
    with gzip.open(path, "wb", compresslevel=1) as fh:
        block = bytes(1 << 20)
        for _ in range(1000):
            fh.write(block)


def _text(make):
    return lambda path: path.write_text(make())


def _series(n: int, distinct_bounds: bool):
    def make() -> str:
        out = ["# TYPE llm_kv_transfer_gap_seconds histogram"]
        for i in range(n):
            lo, hi = (0.01 + i * 1e-6, 0.1 + i * 1e-6) if distinct_bounds else (0.01, 0.1)
            m = "llm_kv_transfer_gap_seconds"
            out += [
                f'{m}_bucket{{pod="p{i}",le="{lo}"}} 5',
                f'{m}_bucket{{pod="p{i}",le="{hi}"}} 10',
                f'{m}_bucket{{pod="p{i}",le="+Inf"}} 10',
                f'{m}_sum{{pod="p{i}"}} 0.3',
            ]
        return "\n".join(out) + "\n"

    return make


GENERATED = {
    "bomb-950MB.jsonl.gz": (
        _gzip_repeat(b'{"prompt_tokens": 1234, "output_tokens": 56}\n', 950),
        r"decompressed, the file is over 200 MB",
    ),
    "bomb-990MB.prom.gz": (
        _gzip_repeat(b'vllm:request_prompt_tokens_bucket{le="100"} 5\n', 990),
        r"decompressed, the file is over 200 MB",
    ),
    "metrics-bomb-990MB.prom.gz": (
        _gzip_repeat(b'llm_kv_transfer_gap_seconds{request_id="1"} 0.5\n', 990),
        r"decompressed, the file is over 50 MB",
    ),
    "bomb-zeros-1GB.csv.gz": (_gzip_zeros, r"holds binary data"),
    "wide-1M-columns.csv": (
        _text(lambda: ",".join(f"c{i}" for i in range(10**6)) + "\n" + "1," * (10**6 - 1) + "1\n"),
        r"row 1 \(the header\) has 1,000,000 columns, over the 10,000 limit",
    ),
    "deep-nesting.jsonl": (
        _text(lambda: '{"a": ' * 30_000 + "1" + "}" * 30_000 + "\n"),
        r"nest",
    ),
    "metrics-3000-label-sets.prom": (_text(_series(3000, distinct_bounds=True)), None),
    "metrics-100001-series.prom": (
        _text(_series(100_001, distinct_bounds=False)),
        r"over 100,000 series \(label sets\), the limit",
    ),
    "config-deep.json": (_text(lambda: '{"a":' * 5000 + "1" + "}" * 5000), r"nest"),
}
SLOW = {"bomb-zeros-1GB.csv.gz", "metrics-100001-series.prom", "bomb-990MB.prom.gz"}


def _cases():
    for name, expect in FILES.items():
        yield pytest.param(name, None, expect, id=name)
    for name, (write, expect) in GENERATED.items():
        marks = [pytest.mark.slow] if name in SLOW else []
        yield pytest.param(name, write, expect, id=name, marks=marks)


def test_corpus_lists_every_file():
    on_disk = {p.name for p in HOSTILE.iterdir()} - {"links.json", "cli-numbers.json"}
    assert on_disk == set(FILES)


@pytest.mark.parametrize(("name", "write", "expect"), list(_cases()))
def test_hostile_input(name, write, expect, tmp_path):
    path = HOSTILE / name
    if write is not None:
        path = tmp_path / name
        write(path)
    started = time.monotonic()
    proc = run_cli(*command(path), "--json", timeout=120)
    elapsed = time.monotonic() - started
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert elapsed < 120
    if expect is None:  # a result: exit 0, strict JSON (no NaN/Infinity), skipped rows counted
        assert proc.returncode == 0, proc.stderr

        def refuse(constant):
            raise AssertionError(f"{constant} in --json output")

        data = json.loads(proc.stdout, parse_constant=refuse)
        if command(path)[0] == "traffic":
            assert data["skipped_rows"] > 0 and data["n_requests"] >= 1
        return
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    message = proc.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message
    assert path.name in message or "config.json" in message or command(path)[0] == "calibrate"
    assert re.search(expect, message), message


def _link_cfg(**fields) -> str:
    return base64.urlsafe_b64encode(json.dumps(fields).encode()).decode().rstrip("=")


def _links():
    links = json.loads((HOSTILE / "links.json").read_text())
    from kvmodel import catalog
    from kvmodel.modelcodec import encode_model

    raw = base64.urlsafe_b64decode(encode_model(catalog.get_model("llama-3.1-70b")) + "==")
    llama = json.loads(raw)
    links += [
        {"cfg": _link_cfg(**{**llama, "L": 30_000_000}), "model": "x"},
        {"cfg": _link_cfg(**{**llama, "c": 10**16})},
        {"cfg": _link_cfg(**{**llama, "g": [[80, 8, 128, 128, None, None]] * 400})},
        {"cfg": _link_cfg(**{**llama, "n": "# [sign in](http://attacker.example)"})},
    ]
    return links


@pytest.mark.parametrize("query", _links(), ids=lambda q: ",".join(q)[:40])
def test_hostile_link(query):
    from kvview.params import parse_query

    started = time.monotonic()
    values, warnings, imported = parse_query(query)
    assert time.monotonic() - started < 5
    assert isinstance(values, dict) and all(isinstance(w, str) for w in warnings)
    for text in warnings:  # user text is escaped: no image, link or raw tag survives
        assert "](" not in text and "<a" not in text and "http://" not in text


# --- issue 23: numbers on the command line (cli-numbers.json) ---


def _cli_numbers():
    cases = json.loads((HOSTILE / "cli-numbers.json").read_text(encoding="utf-8"))
    digits = {"{digits400}": "9" * 400, "{digits5000}": "9" * 5000}
    for case in cases:
        args = [digits.get(a, a) if "{" not in a or a in digits else _fill(a, digits)
                for a in case["args"]]  # fmt: skip
        yield pytest.param(args, case["error"], id=" ".join(case["args"])[:60])


def _fill(text: str, digits: dict) -> str:
    for key, value in digits.items():
        text = text.replace(key, value)
    return text


def assert_clear_message(proc, expect: str) -> str:
    """Exit 2, nothing on stdout, one ``error:`` line on stderr matching ``expect``."""
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert proc.stdout == ""
    message = proc.stderr.strip()
    assert message.startswith("error: ") and "\n" not in message, message
    assert re.search(expect, message), message
    return message


@pytest.mark.parametrize(("args", "expect"), list(_cli_numbers()))
def test_hostile_cli_number(args, expect):
    proc = run_cli(*args, timeout=60)
    message = assert_clear_message(proc, expect)
    assert len(message) < 400  # a 5,000-digit value is quoted by its length, not in full


# --- issue 23: paths that are not regular files, and walks without end ---


def _fifo(tmp: Path) -> Path:
    path = tmp / "trace.csv"
    os.mkfifo(path)  # opening it for reading would block until a writer came
    return path


def _socket(tmp: Path) -> Path:
    import socket

    path = Path("/tmp") / f"kvsock-{os.getpid()}-{tmp.name[-8:]}.csv"  # AF_UNIX: ≤ 107 bytes
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    _SOCKETS.append((sock, path))
    return path


_SOCKETS: list = []


def _self_link(tmp: Path) -> Path:
    path = tmp / "config.json"
    path.symlink_to(path.name)  # a link to itself: ELOOP
    return path


def _many_files(n: int):
    def make(tmp: Path) -> Path:
        folder = tmp / "export"
        folder.mkdir()
        for i in range(n):
            (folder / f"part-{i:05d}.txt").touch()
        return folder

    return make


def _sparse_100gb(tmp: Path) -> Path:
    folder = tmp / "export"
    folder.mkdir()
    with open(folder / "part-0.parquet", "wb") as fh:  # sparse: no disk space used
        fh.truncate(100_000_000_001)
    return folder


SPECIAL = {  # name -> (command, the path or a maker(tmp_path), what the message must say)
    "config-dev-zero": ("capacity --rps 1 --config", "/dev/zero", r"is a character device"),
    "config-dev-urandom": ("size --config", "/dev/urandom", r"is a character device"),
    "config-proc": ("size --config", "/proc/self/status", r"is in /proc, a system directory"),
    "config-self-link": ("size --config", _self_link, r"Too many levels of symbolic links"),
    "trace-proc-kmsg": ("capacity --trace", "/proc/kmsg", r"is in /proc"),
    "trace-dev-zero": ("capacity --trace", "/dev/zero", r"is a character device"),
    "trace-fifo": ("capacity --trace", _fifo, r"is a named pipe \(FIFO\), not a regular file"),
    "trace-socket": ("traffic", _socket, r"is a socket, not a regular file"),
    "metrics-fifo": ("metrics", _fifo, r"is a named pipe \(FIFO\)"),
    "calibrate-dev-zero": ("calibrate", "/dev/zero", r"is a character device"),
    "glob-proc": ("traffic", "/proc/*/x.parquet", r"in /proc, a system directory"),
    "walk-10001-files": (
        "traffic",
        _many_files(10_001),
        r"the walk stopped at 10,000 files \(the limit\)",
    ),
    "walk-100GB": ("traffic", _sparse_100gb, r"the walk stopped at 100 GB in its files"),
}


@pytest.mark.parametrize("name", list(SPECIAL))
def test_hostile_path(name, tmp_path):
    command, where, expect = SPECIAL[name]
    if isinstance(where, str) and "*" not in where and not os.path.exists(where):
        pytest.skip(f"{where} does not exist here")
    path = where(tmp_path) if callable(where) else where
    try:
        proc = run_cli(*command.split(), str(path), "--json", timeout=60)
    finally:
        while _SOCKETS:
            sock, spath = _SOCKETS.pop()
            sock.close()
            spath.unlink(missing_ok=True)
    assert_clear_message(proc, expect)


def _parquet(path: Path) -> None:
    import pandas as pd

    pd.DataFrame({"prompt_tokens": [100, 2000, 30], "output_tokens": [10, 20, 30]}).to_parquet(path)


def test_symlink_loops_end_and_the_files_are_read_once(tmp_path):
    """A directory with links back to itself and its parent, and a link to itself: the glob
    and the walk each read the one Parquet file once (3 requests), and end."""
    root = tmp_path / "logs"
    (root / "day=1").mkdir(parents=True)
    _parquet(root / "day=1" / "part-0.parquet")
    (root / "day=1" / "again").symlink_to(root)  # logs/day=1/again -> logs (its parent)
    (root / "here").symlink_to(".")
    (root / "self").symlink_to("self")
    for target in (str(root / "**" / "*.parquet"), str(root)):
        proc = run_cli("traffic", target, "--json", timeout=60)
        assert proc.returncode == 0, proc.stderr[-2000:]
        data = json.loads(proc.stdout)
        assert data["n_requests"] == 3  # the file once, not once per path to it


@pytest.mark.slow
def test_glob_over_a_whole_tree_stops_at_its_budget():
    """'/usr/**/*.parquet' walked > 120 s before; now the walk stops at 100,000 entries (or, on
    a small /usr, finds no Parquet file)."""
    proc = run_cli("capacity", "--trace", "/usr/**/*.parquet", timeout=60)
    assert_clear_message(
        proc, r"the walk stopped at 100,000 directory entries \(the limit\)|no file matches"
    )
