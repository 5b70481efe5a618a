"""The input table carries behaviour as data (issue 20 item 3): one ``to_scenario`` for every
caller, the rows' behaviour fields, and no module but ``kvmodel/inputs.py`` restating a row's
default, range, unit scale or label (checked by scanning the code's syntax trees)."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from kvmodel import catalog
from kvmodel import inputs as I
from kvmodel.build import build_scenario, inputs_from_scenario, to_scenario
from kvview import params as P

ROOT = Path(__file__).parents[1]
SCALED = {r.name for r in I.INPUTS if r.scale != 1}  # rows whose display unit is not SI
ROW_NAMES = {r.name for r in I.INPUTS}


def _tree(rel: str) -> ast.AST:
    return ast.parse((ROOT / rel).read_text(encoding="utf-8"))


def _files(*globs: str) -> list[str]:
    out = []
    for g in globs:
        out += [p.relative_to(ROOT).as_posix() for p in ROOT.glob(g)]
    return sorted(set(out) - {"kvmodel/inputs.py"})


# --- to_scenario: one way from values to a Scenario, and back ---


@pytest.mark.parametrize(
    "values",
    [
        {},
        {"seq": 8192, "batch": 16, "step": 25.0, "prefill": 180.0, "eff": 80.0},
        {"link": "custom", "bw": 40.0, "lat": 5.0, "par": 2, "tp": 4, "tpd": 8},
        {"model": "deepseek-v3", "kvd": "fp8", "comp": "int8", "lw": 1, "share": 15.0},
        {"link": "ib-ndr", "stack": "ideal", "k": 2.5, "codec": 500.0, "win": "full"},
    ],
    ids=["defaults", "times", "custom-link", "mla-int8", "ideal"],
)
def test_to_scenario_round_trips(values):
    sc = to_scenario(values)
    back, gaps = inputs_from_scenario(sc)
    assert gaps == []
    for k, v in values.items():
        assert back[k] == (pytest.approx(v, rel=1e-12) if isinstance(v, float) else v), k
    again = to_scenario(back)
    for f in fields(sc):
        a, b = getattr(again, f.name), getattr(sc, f.name)
        assert a == (pytest.approx(b, rel=1e-12) if isinstance(b, float) else b), f.name


def test_to_scenario_applies_each_behaviour_field():
    ds = catalog.get_model("deepseek-v3")
    sc = to_scenario({"model": "deepseek-v3", "tp": 4, "step": "est", "prefill": "est"})
    assert sc.attention_parallel == "dp"  # default_from: MLA is served data-parallel
    assert sc.kv_dtype == (ds.kv_dtype_native or "fp16")  # default_from: the checkpoint's
    assert sc.tp_decode == 4  # follows: tpd absent = the prefill TP
    assert sc.decode_step_estimated and sc.prefill_s is None  # est
    assert sc.parallel_links is None  # par absent (auto_at 0) = the NICs
    # scale to SI: 25 ms → 0.025 s (÷ 1e3, as build_scenario always divided); 80 % → 0.8
    given = to_scenario({"step": 25.0, "eff": 80.0, "lat": 7.0, "link": "custom"})
    assert given.decode_step_s == 25.0 / 1e3 and given.efficiency == 80.0 * 0.01
    assert given.link.latency_s == 7.0 * 1e-6 and not given.decode_step_estimated
    with pytest.raises(ValueError, match="max context of 131,072 tokens"):  # max_from
        to_scenario({"seq": 131_073})


def test_the_link_and_the_cli_build_the_same_scenario():
    """A link's values and the CLI's options reach the same Scenario (one to_scenario)."""
    from kvmodel.cli import make_parser
    from kvmodel.cli.options import scenario_from_args

    args = make_parser().parse_args(
        ["transfer", "--seq-len", "4096", "--efficiency", "0.8", "--decode-step-ms", "25"]
    )
    values, _, _ = P.parse_query({"seq": "4096", "eff": "80", "step": "25", "stack": "mooncake"})
    assert P.scenario_from_values(values) == scenario_from_args(args)


def test_only_with_drops_a_custom_links_bandwidth_in_the_app():
    values = {"link": "ib-ndr", "bw": 3.0, "lat": 9.0, "model": "llama-3.1-70b"}
    assert "bw" not in I.applicable(values) and "lat" not in I.applicable(values)
    assert "bw" not in P.to_query(values)
    assert I.applicable({**values, "link": "custom"})["bw"] == 3.0


def test_build_scenario_keeps_version_1_defaults():
    """The Python API's defaults are version 1's (README, versions): ideal stack, 30 ms, TP 1."""
    sc = build_scenario()
    assert (sc.stack.id, sc.decode_step_s, sc.tp_prefill, sc.tp_decode) == ("ideal", 0.03, 1, 1)
    assert not sc.decode_step_estimated and sc.attention_parallel == "tp"


# --- nothing restates a row outside the table ---

UI_FILES = _files("ui/**/*.py")
SCENARIO_CODE = _files(
    "kvmodel/build.py", "kvmodel/scenario.py", "kvmodel/cli/*.py", "kvview/params.py"
)
ROW_LITERAL_FILES = [*UI_FILES, *SCENARIO_CODE]


EST_FLAGS = {r.est_flag for r in I.INPUTS if r.est_flag}  # False: given, not estimated


@pytest.mark.parametrize("rel", ["kvmodel/build.py", "kvmodel/scenario.py"])
def test_no_default_literal_outside_the_rows(rel):
    """build_scenario's keyword defaults and Scenario's field defaults read the rows: no
    number or string literal is assigned as a default there (None means "the model decides")."""
    found = []
    for node in ast.walk(_tree(rel)):
        if isinstance(node, ast.AnnAssign) and isinstance(node.value, ast.Constant):
            if node.value.value is not None and node.target.id not in EST_FLAGS:
                found.append((node.target.id, node.value.value))
        if isinstance(node, ast.FunctionDef) and node.name == "build_scenario":
            for arg, d in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True):
                if isinstance(d, ast.Constant) and d.value is not None:
                    found.append((arg.arg, d.value))
    assert found == [], found


def _row_of_call(call: ast.Call) -> str | None:
    """The input a widget call draws: ``key="<row>"`` or page_widget's third argument."""
    for kw in call.keywords:
        if kw.arg == "key" and isinstance(kw.value, ast.Constant) and kw.value.value in ROW_NAMES:
            return kw.value.value
    name = getattr(call.func, "attr", getattr(call.func, "id", ""))
    if name == "page_widget" and len(call.args) >= 3 and isinstance(call.args[2], ast.Constant):
        return call.args[2].value if call.args[2].value in ROW_NAMES else None
    return None


@pytest.mark.parametrize("rel", UI_FILES)
def test_no_widget_restates_a_rows_range(rel):
    """A widget of an input takes its range, step and format from the row (ui.widgets
    .input_widget): no numeric literal as min/max/step, nor a positional range."""
    found = []
    for node in ast.walk(_tree(rel)):
        if not isinstance(node, ast.Call) or _row_of_call(node) is None:
            continue
        nums = [a for a in node.args if isinstance(a, ast.Constant) and type(a.value) is not str]
        nums += [
            k.value
            for k in node.keywords
            if k.arg in ("min_value", "max_value", "step", "format")
            and isinstance(k.value, ast.Constant)
        ]
        if nums:
            found.append((_row_of_call(node), node.lineno))
    assert found == [], found


POWERS = {1e3, 1e-3, 1e6, 1e-6, 1e9, 1e-9, 100, 0.01}


def _mentions_scaled_row(node: ast.AST) -> bool:
    """``ss["ttft_slo"]``, ``args.ttft_slo_ms``, ``bandwidth_gbs``: a scaled row's display value."""
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in SCALED
    name = getattr(node, "attr", getattr(node, "id", ""))
    return isinstance(name, str) and name.endswith(("_ms", "_us", "_gbs"))


@pytest.mark.parametrize("rel", ROW_LITERAL_FILES)
def test_no_unit_scale_by_hand(rel):
    """Display units become SI through the row (``Input.to_si``), never ``x / 1e3`` by hand."""
    found = []
    for node in ast.walk(_tree(rel)):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
            for a, b in ((node.left, node.right), (node.right, node.left)):
                if isinstance(b, ast.Constant) and b.value in POWERS and _mentions_scaled_row(a):
                    found.append(node.lineno)
    assert found == [], f"{rel}: lines {found}"


SWITCH_FILES = ["kvmodel/inputs_table.py", "kvview/params.py", "kvmodel/build.py"]


@pytest.mark.parametrize("rel", SWITCH_FILES)
def test_no_name_switch_on_a_row(rel):
    """Behaviour is a field of the row: no ``name == "seq"`` / ``row.name in (...)`` there."""
    found = []
    for node in ast.walk(_tree(rel)):
        if not isinstance(node, ast.Compare):
            continue
        left = node.left
        is_name = getattr(left, "attr", getattr(left, "id", "")) == "name"
        for comp in node.comparators:
            consts = comp.elts if isinstance(comp, (ast.Tuple, ast.List, ast.Set)) else [comp]
            names = [c.value for c in consts if isinstance(c, ast.Constant)]
            if is_name and set(names) & ROW_NAMES:
                found.append(node.lineno)
    assert found == [], f"{rel}: lines {found}"


@pytest.mark.parametrize(
    "rel", ["ui/sidebar.py", "ui/compare_edit.py", "kvview/params.py", "kvmodel/build.py"]
)
def test_the_context_cap_is_the_rows(rel):
    """ "At most the model's context" is the seq row's ``max_from``, read through the row."""
    assert "max_context_tokens" not in (ROOT / rel).read_text(encoding="utf-8")


def test_sidebar_labels_come_from_the_rows():
    """The sidebar passes no label of its own for an input (the row's ``widget_label``)."""
    own = []
    for node in ast.walk(_tree("ui/sidebar.py")):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "input_widget":
            own += [k.arg for k in node.keywords if k.arg == "label"]
    assert own == ["label"]  # only "Exact tokens", the second box of seq
    assert I.get("eff").widget_label == "Link efficiency [%]"
    assert I.get("tp").widget_label == "Prefill TP" and I.get("step").widget_label == "Decode step"


def test_kvmodel_has_no_import_circle_through_the_inputs():
    """inputs.py imports neither the traffic package nor anything that imports it back, even
    inside a function (its sample ids come from kvmodel/samples.py, which imports nothing)."""
    imported = set()
    for node in ast.walk(_tree("kvmodel/inputs.py")):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module)
    assert imported <= {
        "__future__", "collections.abc", "dataclasses", "fnmatch", "functools", "numbers",
        "pathlib", "dtypes", "inputs_table", "samples", None,
    }, imported  # fmt: skip
    for rel in ("kvmodel/inputs_table.py", "kvmodel/samples.py", "kvmodel/dtypes.py"):
        mods = [n for n in ast.walk(_tree(rel)) if isinstance(n, (ast.Import, ast.ImportFrom))]
        assert all(getattr(n, "module", "") == "__future__" for n in mods), rel


@pytest.mark.parametrize("flag, kind", [("--gpu", "GPU"), ("--stack", "stack")])
def test_an_empty_catalog_id_is_a_clear_error(flag, kind, capsys):
    """An id row without an empty default (``Input.catalog``) looks "" up and fails by name,
    as before the rows carried the catalog (never a traceback from a missing spec)."""
    from kvmodel.cli import main

    assert main(["transfer", flag, ""]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: unknown {kind} ''") and "Traceback" not in err, err
