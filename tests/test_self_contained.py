"""Tests and benches read nothing outside the repo: no ``../shared``, no path above the root.

Before issue 11, 32 tests read reference configs from ``shared/`` beside the checkout and
skipped silently in a fresh clone.  Reference files now live in ``tests/data/`` (see
``tests/refdata.py``); this scan keeps it that way.  It reads the source (ast, not regexes) of
every ``.py`` file under ``tests/`` and ``bench/`` and flags

* a string whose path parts include ``shared`` or ``..`` (docstrings are citations, not reads,
  and are left alone), and
* a path built from ``__file__`` that climbs above the repo root: ``Path(__file__).parents[k]``,
  ``.parent`` chains and names bound to them (``ROOT.parent`` where ``ROOT`` is the root).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("tests", "bench")
SIBLING = "shared"  # the folder beside the checkout that tests used to read


def _up(node: ast.AST, names: dict[str, ast.AST], seen: frozenset = frozenset()) -> int | None:
    """How many directories above ``__file__`` the path expression ``node`` points (0 = the
    file itself, 1 = its folder), or None when it is not a path derived from ``__file__``."""
    if isinstance(node, ast.Name):
        if node.id == "__file__":
            return 0
        if node.id in names and node.id not in seen:
            return _up(names[node.id], names, seen | {node.id})
        return None
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name) and func.id == "Path" and len(node.args) == 1:
            return _up(node.args[0], names, seen)
        if isinstance(func, ast.Attribute):
            if func.attr in ("resolve", "absolute"):
                return _up(func.value, names, seen)
            if func.attr == "dirname" and len(node.args) == 1:  # os.path.dirname(...)
                up = _up(node.args[0], names, seen)
                return None if up is None else up + 1
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        up = _up(node.value, names, seen)
        return None if up is None else up + 1
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "parents"
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, int)
    ):
        up = _up(node.value.value, names, seen)
        return None if up is None else up + node.slice.value + 1
    return None


def outside_reads(source: str, rel: Path) -> list[str]:
    """Lines of ``source`` (the file at ``rel`` under the repo root) that point outside it."""
    tree = ast.parse(source)
    names = {
        node.targets[0].id: node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        and len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
    }
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    root_up = len(rel.parts)  # tests/x.py: parents[1] (2 up from the file) is the root
    found = []
    for node in ast.walk(tree):
        where = f"{rel}:{getattr(node, 'lineno', '?')}"
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            parts = set(re.split(r"[/\\]", node.value))
            if SIBLING in parts or ".." in parts:
                found.append(f"{where}: path string {node.value!r}")
        elif isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
            up = _up(node, names)
            if up is not None and up > root_up:
                found.append(f"{where}: {ast.unparse(node)} climbs above the repo root")
    return found


def _sources() -> list[Path]:
    files = sorted(p for d in SCANNED for p in (ROOT / d).rglob("*.py"))
    # This file names the sibling folder on purpose (SIBLING and the bad examples below).
    return [p for p in files if p != Path(__file__).resolve()]


def test_tests_and_benches_read_nothing_outside_the_repo():
    sources = _sources()
    assert len(sources) > 20  # the scan did find the test files
    found = [
        hit
        for path in sources
        for hit in outside_reads(path.read_text(encoding="utf-8"), path.relative_to(ROOT))
    ]
    assert not found, "read reference files from tests/data (tests/refdata.py):\n" + "\n".join(
        found
    )


# The patterns the tests used before issue 11 are caught; the ones they use now are not.
BAD = [
    'D = Path(__file__).resolve().parents[2] / "shared" / "data" / "model-configs"',
    'ROOT = Path(__file__).resolve().parents[1]\nD = ROOT.parent / "data"',
    "D = Path(__file__).parent.parent.parent / 'x.json'",
    'D = Path("../shared/data/model-configs")',
    'open("../other-repo/x.json")',
    "import os\nD = os.path.dirname(os.path.dirname(os.path.dirname(__file__)))",
]
GOOD = [
    'ROOT = Path(__file__).resolve().parents[1]\nD = ROOT / "data" / "traces"',
    'DATA = Path(__file__).resolve().parent / "data"',
    'def f():\n    """Numbers from ../shared/seed-article.txt (a citation)."""',
    'kinds = ["kv-shared"] * 2\nname = "shared experts"',
    "cwd = catalog.DATA_DIR.parent",
]


@pytest.mark.parametrize("source", BAD)
def test_reads_outside_the_repo_are_caught(source):
    assert outside_reads(source, Path("tests/test_x.py"))


@pytest.mark.parametrize("source", GOOD)
def test_reads_inside_the_repo_pass(source):
    assert outside_reads(source, Path("tests/test_x.py")) == []


def test_depth_follows_the_folder():
    src = "R = Path(__file__).resolve().parents[2]"
    assert outside_reads(src, Path("tests/e2e/test_x.py")) == []  # the root, from tests/e2e
    assert outside_reads(src, Path("tests/test_x.py"))  # one above the root
