"""The layers of the house: kvmodel never imports ui, streamlit or plotly (its CLI reaches ui
through one edge module, lazily), and no module outside tests/ outgrows about 400 lines."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KVMODEL = ROOT / "kvmodel"
EDGE = KVMODEL / "cli" / "edge.py"  # the CLI's one door into ui (formatting, the HTML report)
FORBIDDEN = ("ui", "kvview", "streamlit", "plotly")
MAX_LINES = 400


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def _kvmodel_files():
    return sorted(KVMODEL.rglob("*.py"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("path", _kvmodel_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_kvmodel_does_not_import_the_edges(path):
    if path == EDGE:
        return
    bad = _imported_roots(path) & set(FORBIDDEN)
    assert not bad, f"{path.relative_to(ROOT)} imports {sorted(bad)}; only {EDGE.name} may"


def test_the_edge_imports_ui_only_inside_functions():
    tree = ast.parse(EDGE.read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
    roots = {a.name.split(".")[0] for n in top if isinstance(n, ast.Import) for a in n.names}
    roots |= {n.module.split(".")[0] for n in top if isinstance(n, ast.ImportFrom) and n.module}
    assert not roots & set(FORBIDDEN)


def test_importing_kvmodel_loads_no_ui():
    names = [_module_name(p) for p in _kvmodel_files() if p.name != "__main__.py"]
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == []


def test_no_module_outside_tests_is_too_long():
    files = [ROOT / "app.py"]
    for folder in ("kvmodel", "kvview", "ui", "pages", "bench", "recipes"):
        files += sorted((ROOT / folder).rglob("*.py"))
    lines = {
        str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in files
    }
    long = {name: n for name, n in lines.items() if n > MAX_LINES}
    assert not long, f"over {MAX_LINES} lines: {long}"
