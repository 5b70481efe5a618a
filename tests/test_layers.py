"""The layers of the house, declared as data and checked on every import statement.

    app.py, pages/  ->  ui  ->  kvview  ->  kvmodel
                                  ^
                   kvmodel.cli ---'  (the CLI: the model's edge, drawing on the presentation layer)

Every ``import`` and ``from ... import`` is checked, at module level and inside functions alike:
an arrow that points up (the model importing the presentation layer, kvview importing ui, a page
importing the model directly) fails, named by file and line.  The module graph of kvmodel, kvview
and ui has no import circle, neither counting module-level imports (what Python runs at import)
nor counting the lazy ones inside functions (a lazy import that closes a circle only hides it).
Also here: no private name (``_x``) crosses a module, and no function outgrows ~60 lines.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = ("kvmodel", "kvview", "ui", "pages", "app")  # top-level names that are ours


@dataclass(frozen=True)
class Layer:
    may_import: frozenset[str]  # the project layers it may import (its own included)
    never: frozenset[str]  # third-party packages it must not import


def _layer(may_import, never=()):
    return Layer(frozenset(may_import), frozenset(never))


# A module belongs to the layer with the longest prefix of its dotted name.
LAYERS = {
    "kvmodel": _layer({"kvmodel"}, {"streamlit", "plotly", "kaleido"}),
    "kvmodel.cli": _layer({"kvmodel.cli", "kvmodel", "kvview"}, {"streamlit"}),
    "kvmodel.__main__": _layer({"kvmodel.cli"}, {"streamlit", "plotly"}),
    "kvview": _layer({"kvview", "kvmodel"}, {"streamlit"}),
    "ui": _layer({"ui", "kvview", "kvmodel"}),
    "pages": _layer({"ui"}),
    "app": _layer({"ui"}),
}
SOURCE_DIRS = ("kvmodel", "kvview", "ui", "pages")
GRAPH_PACKAGES = ("kvmodel", "kvview", "ui")  # the importable modules the circle test covers


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def layer_of(module: str) -> str:
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in LAYERS:
            return ".".join(parts[:n])
    raise KeyError(module)


@cache
def source_files() -> tuple[Path, ...]:
    files = [ROOT / "app.py"]
    for folder in SOURCE_DIRS:
        files += sorted((ROOT / folder).rglob("*.py"))
    return tuple(files)


@cache
def modules() -> dict[str, Path]:
    return {module_name(p): p for p in source_files() if p.parts[-2] != "pages"}


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@dataclass(frozen=True)
class Arrow:
    source: str  # the importing module
    target: str  # the imported module, as written (absolute)
    line: int
    top: bool  # at module level (run at import), not inside a function


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    base = package[: len(package) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def _inside_functions(module: ast.Module) -> set[int]:
    """Ids of the nodes inside a function body (run when called, not at import)."""
    inside = set()
    for node in ast.walk(module):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            inside.update(id(sub) for sub in ast.walk(node) if sub is not node)
    return inside


def arrows(path: Path) -> list[Arrow]:
    module = module_name(path)
    lazy = _inside_functions(tree(path))
    found = []
    for node in ast.walk(tree(path)):
        if isinstance(node, ast.Import):
            found += [Arrow(module, a.name, node.lineno, id(node) not in lazy) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node)
            for alias in node.names:  # `from pkg import mod` imports the module pkg.mod
                sub = f"{base}.{alias.name}"
                target = sub if sub in modules() else base
                found.append(Arrow(module, target, node.lineno, id(node) not in lazy))
    return found


def _in_project(target: str) -> bool:
    return target.split(".")[0] in PROJECT


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def wrong_arrows(module: str, found: list[Arrow]) -> list[str]:
    """The arrows of ``module`` its layer does not allow, as 'line N: target (why)'."""
    layer = LAYERS[layer_of(module)]
    wrong = []
    for arrow in found:
        if _in_project(arrow.target):
            if layer_of(arrow.target) not in layer.may_import:
                wrong.append(f"line {arrow.line}: {arrow.target} ({layer_of(arrow.target)})")
        elif arrow.target.split(".")[0] in layer.never:
            wrong.append(f"line {arrow.line}: {arrow.target} (never in this layer)")
    return wrong


@pytest.mark.parametrize("path", source_files(), ids=_rel)
def test_every_import_points_down(path):
    module = module_name(path)
    wrong = wrong_arrows(module, arrows(path))
    assert not wrong, f"{_rel(path)} ({layer_of(module)}) imports upwards: {wrong}"


def test_the_layer_table_covers_every_module():
    assert {layer_of(module_name(p)) for p in source_files()} == set(LAYERS)


@pytest.mark.parametrize(
    ("module", "target", "allowed"),
    [
        ("kvmodel.capacity.plan", "streamlit", False),
        ("kvmodel.capacity.plan", "plotly.graph_objects", False),
        ("kvmodel.capacity.plan", "kvview.fmt", False),
        ("kvmodel.capacity.plan", "kvmodel.cli.output", False),  # the model below its CLI
        ("kvmodel.cli.edge", "kvview.report", True),  # the declared arrow
        ("kvmodel.cli.edge", "ui.sidebar", False),
        ("kvview.fmt", "ui.perf", False),
        ("kvview.figures.kit", "streamlit", False),
        ("kvview.figures.kit", "plotly.graph_objects", True),
        ("ui.sidebar", "kvmodel.inputs", True),
        ("pages.models", "kvmodel.catalog", False),  # pages reach the model through ui only
        ("pages.models", "ui.views.models", True),
        ("app", "kvview.fmt", False),
    ],
)
def test_the_arrow_check_judges(module, target, allowed):
    wrong = wrong_arrows(module, [Arrow(module, target, 1, top=False)])
    assert (not wrong) == allowed, wrong


def test_the_cli_draws_on_kvview_lazily_and_is_checked_for_it():
    """The declared arrow kvmodel.cli -> kvview: edge.py's imports sit inside its functions
    (plain text commands never load plotly), and the arrow check sees them."""
    edge = [a for a in arrows(ROOT / "kvmodel" / "cli" / "edge.py") if _in_project(a.target)]
    to_kvview = [a for a in edge if layer_of(a.target) == "kvview"]
    assert to_kvview and not any(a.top for a in to_kvview)
    assert not wrong_arrows("kvmodel.cli.edge", edge)
    assert wrong_arrows("kvmodel.timing", to_kvview)  # the same arrows from the pure model


def test_only_the_edge_module_of_the_cli_imports_kvview():
    cli = [p for p in source_files() if layer_of(module_name(p)) == "kvmodel.cli"]
    reaching = {
        _rel(p)
        for p in cli
        for a in arrows(p)
        if _in_project(a.target) and layer_of(a.target) == "kvview"
    }
    assert reaching == {"kvmodel/cli/edge.py"}


def import_graph(*, lazy: bool) -> dict[str, set[str]]:
    """Module -> the modules it imports (within kvmodel, kvview, ui); ``lazy`` adds the
    imports inside functions.  An import of ``a.b.c`` is an arrow to ``a.b.c`` only: the
    package ``__init__`` files Python runs on the way are not arrows (each runs first)."""
    graph = {m: set() for m in modules() if m.split(".")[0] in GRAPH_PACKAGES}
    for module in graph:
        for arrow in arrows(modules()[module]):
            target = arrow.target
            while target and target not in graph:
                target = target.rpartition(".")[0]
            if target and target != module and (lazy or arrow.top):
                graph[module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _describe(graph, component) -> str:
    return "; ".join(f"{m} -> {sorted(graph[m] & set(component))}" for m in component)


@pytest.mark.parametrize("lazy", [False, True], ids=["module-level", "with-lazy"])
def test_no_import_circle(lazy):
    graph = import_graph(lazy=lazy)
    found = circles(graph)
    assert not found, "import circles: " + " || ".join(_describe(graph, c) for c in found)


def test_the_circle_finder_finds_a_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": set()}
    assert circles(graph) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def _pure_model_modules() -> list[str]:
    return [m for m in modules() if layer_of(m) == "kvmodel"]


def _loaded_after_import(names: list[str]) -> list[str]:
    code = (
        "import importlib, json, sys\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_importing_the_model_loads_no_upper_layer():
    loaded = set(_loaded_after_import(_pure_model_modules()))
    assert not loaded & {"ui", "kvview", "streamlit", "plotly"}


def test_importing_the_cli_loads_no_streamlit():
    cli = [m for m in modules() if layer_of(m) in ("kvmodel.cli", "kvmodel.__main__")]
    loaded = set(_loaded_after_import([m for m in cli if m != "kvmodel.__main__"]))
    assert not loaded & {"ui", "streamlit"}


# --- no private name crosses a module -------------------------------------------------------

SCANNED_DIRS = (*SOURCE_DIRS, "tests", "bench", "recipes")
# (file, name): a private name one module still takes from another, with the reason.
PRIVATE_ALLOWED: dict[tuple[str, str], str] = {}


def _scanned_files() -> list[Path]:
    return [ROOT / "app.py"] + [p for d in SCANNED_DIRS for p in sorted((ROOT / d).rglob("*.py"))]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(path: Path, parsed: ast.Module | None = None) -> list[tuple[int, str]]:
    """``from ours import _x`` and ``ours._x`` (``ours`` an imported project module) in ``path``.

    bench/ and tests/ import each other's modules by file name, so their sibling files count
    as project modules there.
    """
    module = module_name(path) if path.parts[-2] not in ("bench", "tests") else path.stem
    siblings = {p.stem for p in path.parent.glob("*.py")}
    ours = set(PROJECT) | (siblings if path.parts[-2] in ("bench", "tests") else set())
    parsed = parsed or tree(path)
    found, aliases = [], set()
    for node in ast.walk(parsed):
        if isinstance(node, ast.ImportFrom):
            base = _absolute(module, path, node) if node.level else node.module or ""
            if base.split(".")[0] not in ours:
                continue
            for alias in node.names:
                if _private(alias.name):
                    found.append((node.lineno, f"from {base} import {alias.name}"))
                else:
                    aliases.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            aliases |= {(a.asname or a.name).split(".")[0] for a in node.names
                        if a.name.split(".")[0] in ours}  # fmt: skip
    for node in ast.walk(parsed):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and base.id in aliases:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_private_name_crosses_a_module():
    crossing = []
    for path in _scanned_files():
        for line, what in private_imports(path):
            name = what.rsplit(" ", 1)[-1].rsplit(".", 1)[-1]
            if (_rel(path), name) not in PRIVATE_ALLOWED:
                crossing.append(f"{_rel(path)}:{line}: {what}")
    assert not crossing, "private names used across modules:\n" + "\n".join(crossing)


def test_the_private_scan_sees_both_forms():
    code = (
        "from kvview.figures.kit import _Fig, Fig\nfrom ui import perf\nimport numpy as np\n"
        "perf._MEMO.clear()\nnp._core\nself._x = 1\n"
    )
    found = private_imports(ROOT / "ui" / "probe.py", ast.parse(code))
    assert found == [(1, "from kvview.figures.kit import _Fig"), (4, "perf._MEMO")]


# --- size by function, not by file ----------------------------------------------------------

MAX_FUNCTION_LINES = 60
READER = "a reader: one pass over a format, each check next to its field (split pending)"
COMMAND = "a CLI subcommand's text and JSON output together (split pending)"
BENCH = "a benchmark's main loop (split pending)"
INPUTS = "one pass over the input rows, a step per behaviour field (split pending)"
TERMS = "one formula, report or figure built term by term (split pending)"
# "path:function": why it is longer for now.  Shorten the list, never lengthen it.
LONG_FUNCTIONS: dict[str, str] = {
    "kvmodel/build.py:build_scenario": INPUTS,
    "kvmodel/cli/measure.py:cmd_metrics": COMMAND,
    "kvmodel/cli/traffic.py:cmd_traffic": COMMAND,
    "kvmodel/evaluation.py:evaluate": TERMS,
    "kvmodel/hfconfig.py:estimate_params": READER,
    "kvmodel/hfconfig.py:load_hf_config": READER,
    "kvmodel/measure/metric.py:_summarise": READER,
    "kvmodel/measure/nsys.py:parse_nsys_csv": READER,
    "kvmodel/measure/perftest.py:_parse_perftest_table": READER,
    "kvmodel/measure/perftest.py:_parse_perftest_json": READER,
    "kvmodel/measure/prometheus.py:parse_prometheus_metrics": READER,
    "kvmodel/sensitivity.py:_numeric_rows": TERMS,
    "kvmodel/textio/prometheus.py:parse_exposition": READER,
    "kvmodel/traffic/dataset.py:load_dataset": READER,
    "kvmodel/traffic/prometheus.py:load_prometheus": READER,
    "kvview/capacity_report.py:capacity_report_html": TERMS,
    "kvview/figures/kit.py:panel_figure": TERMS,
    "kvview/figures/sensitivity.py:figure_tornado": TERMS,
    "kvview/report.py:report_html": TERMS,
    "ui/views/compare.py:_editor": "its six callbacks close over the variants being edited",
    "bench/control_to_chart.py:measure": BENCH,
    "bench/page_rerun.py:measure": BENCH,
    "bench/profile_rerun.py:profile_page": BENCH,
    "bench/traffic_dataset.py:main": BENCH,
    "bench/traffic_parse.py:main": BENCH,
}


def long_functions() -> dict[str, int]:
    files = [ROOT / "app.py"]
    for folder in ("kvmodel", "kvview", "ui", "pages", "bench", "recipes"):
        files += sorted((ROOT / folder).rglob("*.py"))
    found = {}
    for path in files:
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{_rel(path)}:{node.name}"] = lines
    return found


def test_no_function_is_too_long():
    long = {k: n for k, n in long_functions().items() if k not in LONG_FUNCTIONS}
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines (split into named steps): {long}"


def test_the_allow_list_of_long_functions_is_current():
    """An entry whose function was split (or renamed) leaves the list."""
    stale = set(LONG_FUNCTIONS) - set(long_functions())
    assert not stale, (
        f"no longer over {MAX_FUNCTION_LINES} lines, drop from LONG_FUNCTIONS: {stale}"
    )
