"""README.md and docs/: what they show is what the code does.

- Every command shown in a fenced ``console`` or ``sh`` block as ``$ python -m kvmodel ...`` (or
  ``$ .venv/bin/python -m kvmodel ...``) is run, in this process, and must print what the page
  shows under it (trailing spaces aside; a last shown line ``...`` means "and more").  It must
  exit 0, or 2 when the page shows an ``error:`` line.  A ``$`` line that is not such a command
  fails: a page shows only commands this test can run.
- Links between the pages (and to repository files) resolve, anchors included.
- Every repository path and every ``kvmodel``/``kvview``/``ui`` dotted name written in
  backticks exists, so a move of a file (fda4108 moved ``ui/*`` and ``capacity_*.py``) cannot
  leave the manual pointing at nothing.
- README stays a two-minute read (at most 200 lines) and links every page of docs/.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
import shlex
from pathlib import Path

import pytest

from kvmodel.cli import main

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
RUNNABLE = re.compile(r"^(?:\.venv/bin/)?python3? -m kvmodel(?: |$)")
LINK = re.compile(r"!?\[([^\]]*)\]\(([^)\s]+)\)")
ROOTS = ("kvmodel", "kvview", "ui", "pages", "tests", "bench", "data", "recipes", "docs")
PATH = re.compile(rf"^(?:{'|'.join(ROOTS)})/[\w./-]*$")
DOTTED = re.compile(r"^(?:kvmodel|kvview|ui)(?:\.\w+)+(?:\(\))?$")


def _rel(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _outside_fences(text: str) -> str:
    return FENCE.sub("", text)


def _sessions(page: Path):
    """(command, shown output lines) for every ``$`` line in a console/sh block."""
    found = []
    for lang, body in FENCE.findall(_text(page)):
        if lang not in ("console", "sh", "shell"):
            continue
        current = None
        for line in body.splitlines():
            if line.startswith("$ "):
                current = (line[2:].strip(), [])
                found.append(current)
            elif current is not None:
                current[1].append(line.rstrip())
    return found


def _run(command: str) -> tuple[int, list[str]]:
    argv = shlex.split(command)[3:]  # past "python -m kvmodel"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # --help, argparse usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    text = out.getvalue() + err.getvalue()
    return code, [line.rstrip() for line in text.splitlines()]


SESSIONS = [(page, cmd, shown) for page in PAGES for cmd, shown in _sessions(page)]


def test_the_manual_shows_commands():
    # README's example and the worked examples of docs/: the test below is not vacuous.
    shown = {_rel(page) for page, _, _ in SESSIONS}
    assert {"README.md", "docs/cli.md", "docs/capacity.md"} <= shown, shown


@pytest.mark.parametrize(
    ("page", "command", "shown"),
    SESSIONS,
    ids=[f"{_rel(p)}: {c[:60]}" for p, c, _ in SESSIONS],
)
def test_shown_command_prints_what_the_page_shows(page, command, shown, monkeypatch):
    assert RUNNABLE.match(command), (
        f"{_rel(page)} shows `$ {command}`: only `python -m kvmodel ...` lines are runnable "
        "here; show other commands without the `$ ` prompt"
    )
    monkeypatch.chdir(ROOT)  # the pages' paths (data/traces/...) are relative to the repo
    code, printed = _run(command)
    expect_error = any(line.startswith("error:") for line in shown)
    assert code == (2 if expect_error else 0), (command, code, printed[:5])
    if shown and shown[-1] == "...":
        shown = shown[:-1]
        printed = printed[: len(shown)]
    assert printed == shown, f"{_rel(page)}: `{command}` now prints:\n" + "\n".join(printed)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _outside_fences(_text(page))
    return {_slug(h) for h in re.findall(r"^#+ (.+)$", text, re.M)}


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_links_resolve(page):
    broken = []
    for _, target in LINK.findall(_outside_fences(_text(page))):
        if re.match(r"^[a-z]+://|^mailto:", target):
            continue  # outside links are not fetched (no network in tests)
        path, _, anchor = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.exists() or ROOT not in dest.parents and dest != ROOT:
            broken.append(target)
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            broken.append(target)
    assert not broken, f"{_rel(page)}: links to nothing: {broken}"


def _names_in_backticks(page: Path) -> set[str]:
    return set(re.findall(r"`([^`\n]+)`", _outside_fences(_text(page))))


def _resolves(dotted: str) -> bool:
    parts = dotted.removesuffix("()").split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


@pytest.mark.parametrize("page", PAGES, ids=_rel)
def test_named_files_and_modules_exist(page):
    names = _names_in_backticks(page)
    missing = sorted(n for n in names if PATH.match(n) and not (ROOT / n.rstrip("/")).exists())
    missing += sorted(n for n in names if DOTTED.match(n) and not _resolves(n))
    assert not missing, f"{_rel(page)} names what does not exist: {missing}"


def test_readme_is_short_and_links_every_page_of_docs():
    readme = _text(ROOT / "README.md")
    assert len(readme.splitlines()) <= 200
    linked = {target.partition("#")[0] for _, target in LINK.findall(readme)}
    unlinked = [_rel(p) for p in sorted(DOCS.glob("*.md")) if _rel(p) not in linked]
    assert not unlinked, f"README does not link {unlinked}"


def test_fences_are_closed():
    # An unclosed fence would hide the rest of a page from every check above.
    for page in PAGES:
        lines = [line for line in _text(page).splitlines() if line.startswith("```")]
        assert len(lines) % 2 == 0, f"{_rel(page)} has an unclosed ``` fence"


# One invocation per command of docs/cli.md's key table (files shipped in data/).
JSON_RUNS = {
    "transfer": ["transfer"],
    "size": ["size"],
    "critical": ["critical"],
    "table": ["table"],
    "traffic": ["traffic", "data/traces/azure2023/AzureLLMInferenceTrace_conv.csv"],
    "capacity": ["capacity", "--rps", "10", "--tp", "8"],
    "calibrate": ["calibrate", "data/measurements/ib_write_bw.txt"],
    "metrics": ["metrics", "data/measurements/vllm_pd_metrics.prom"],
}


def _json_key_table() -> dict[str, list[str]]:
    text = _text(DOCS / "cli.md")
    section = text.split("## JSON keys", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `([^`]+)` \|$", section, re.M)
    return {command: [k.strip() for k in keys.split(",")] for command, keys in rows}


def test_cli_page_lists_every_json_key(monkeypatch):
    import json

    monkeypatch.chdir(ROOT)
    table = _json_key_table()
    assert sorted(table) == sorted(JSON_RUNS), "docs/cli.md's key table lost a command"
    for command, argv in JSON_RUNS.items():
        code, printed = _run("python -m kvmodel " + shlex.join([*argv, "--json"]))
        assert code == 0, (command, printed[:3])
        keys = set(json.loads("\n".join(printed))) - {"non_finite"}  # only when one occurs
        listed = set(table[command])
        assert keys == listed, (
            f"docs/cli.md, `{command}`: missing {sorted(keys - listed)}, "
            f"gone {sorted(listed - keys)}"
        )


def test_catalog_page_names_every_column_and_counts_the_rows():
    import csv

    text = _text(DOCS / "catalogs.md")
    for name in ("models", "interconnects", "gpus", "stacks"):
        path = ROOT / "data" / f"{name}.csv"
        with path.open(encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
        header, n = set(rows[0]), len([r for r in rows[1:] if r and not r[0].startswith("#")])
        entry = re.search(rf"^- `data/{name}\.csv` — (.*?)(?=^- |^$)", text, re.M | re.S)
        assert entry, f"docs/catalogs.md has no entry for data/{name}.csv"
        named = {
            word.strip()
            for span in re.findall(r"`([^`]+)`", entry.group(1))
            for word in span.split(",")
        }
        assert header <= named, f"data/{name}.csv columns not in docs: {sorted(header - named)}"
        count = re.search(r"(\d+) (?:models|links|GPUs|stacks)\.", entry.group(1))
        assert count and int(count.group(1)) == n, f"data/{name}.csv has {n} rows"


def test_make_targets_shown_exist():
    # `make run`, `make test`, `make readme-inputs`, ... named anywhere in the manual.
    targets = set()
    for line in _text(ROOT / "Makefile").splitlines():
        if re.match(r"^[\w. -]+:(?!=)", line) and not line.startswith("\t"):
            targets.update(line.split(":", 1)[0].split())
    # in backticks (`make readme-inputs`) or as a line of a fenced block (make run)
    said = re.compile(r"(?:`|^)make ([a-z][\w-]*)", re.M)
    shown = {m for page in PAGES for m in said.findall(_text(page))}
    assert shown >= {"run", "test"}
    assert shown <= targets, f"the manual names make targets that do not exist: {shown - targets}"
