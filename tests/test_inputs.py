"""kvmodel.inputs: one row per input, and everything that must derive from it."""

import ast
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kvmodel import inputs as I
from kvmodel.build import build_scenario, inputs_from_scenario, scenario_from_inputs
from kvmodel.cli import main, make_parser
from kvview import params as P

ROOT = Path(__file__).parents[1]
NUMERIC_URL = [r for r in I.URL_INPUTS if r.kind in ("int", "float") and r.name != "prefill"]


def test_docs_table_is_the_generated_one():
    page = (ROOT / "docs" / "links.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- inputs table:[^\n]*-->\n(.*?)<!-- end inputs table -->", page, re.S)
    assert block, "docs/links.md lost its inputs-table markers"
    assert block.group(1).strip() == I.markdown_table().strip(), (
        "docs/links.md's parameter table is stale: run `make readme-inputs`"
    )


def test_names_are_unique_and_url_order_is_kept():
    names = [r.name for r in I.INPUTS]
    flags = [r.cli for r in I.INPUTS if r.cli]
    assert len(set(names)) == len(names) and len(set(flags)) == len(flags)
    # Links written before the table existed list their parameters in this order.
    assert [r.name for r in I.URL_INPUTS][:20] == [
        *"model seq batch link bw lat eff par kvd comp lw codec tp tpd step prefill gpu".split(),
        "k",
        "share",
        "cfg",
    ]


def test_url_defaults_and_labels_come_from_the_rows():
    assert P.DEFAULTS == {r.name: r.default for r in I.URL_INPUTS}
    assert P.LABELS["step"] == "Decode step [ms]"
    assert set(P.SCENARIO_KEYS) >= {"model", "seq", "tp", "step", "k", "share"}
    assert "links" not in P.SCENARIO_KEYS and "present" not in P.SCENARIO_KEYS


@pytest.mark.parametrize("row", NUMERIC_URL, ids=lambda r: r.name)
def test_url_value_above_the_app_range_is_clamped_with_a_warning(row):
    hi = 131_072 if row.name == "seq" else row.hi  # seq: the default model's max context
    above = hi + 1 if row.kind != "float" else hi * 2
    # expert parallelism needs a mixture of experts (on a dense model it is dropped to 1)
    moe = {"model": "deepseek-v3"} if row.name in ("ep", "epd") else {}
    values, warnings, _ = P.parse_query({**moe, row.name: str(above)})
    assert values[row.name] == hi
    assert any(w.startswith(f"{row.name}=") and "outside" in w for w in warnings), warnings


@pytest.mark.parametrize("row", [r for r in I.INPUTS if r.cli and r.kind in ("int", "float")])
def test_cli_rejects_a_value_past_the_model_limit_naming_the_flag(row, capsys):
    lo, hi = row.bounds
    if lo is None:
        pytest.skip("no lower limit")  # never hit today: every numeric row has one
    bad = (lo - 1) / row.cli_scale
    commands = make_parser()._subparsers._group_actions[0].choices

    def takes(cmd):
        return row.cli in {o for a in commands[cmd]._actions for o in a.option_strings}

    # the command that takes the flag (an unknown flag would fail for the wrong reason)
    command = "table" if row.name in ("links", "batches") else next(
        c for c in ("traffic", "capacity") if takes(c))  # fmt: skip
    assert takes(command)
    argv = [command, row.cli, f"{bad:g}"]
    if command == "traffic":
        argv.insert(1, str(ROOT / "data/traces/samples/burstgpt_sample.csv"))
    if command == "capacity":
        argv[1:1] = ["--trace", "azure-conv"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert row.cli in err or row.cli.lstrip("-") in err, err
    assert "Traceback" not in err and "unrecognized arguments" not in err, err


def test_cli_defaults_are_the_rows_defaults():
    sub = make_parser()._subparsers._group_actions[0].choices["transfer"]
    actions = {a.option_strings[0]: a for a in sub._actions if a.option_strings}
    assert actions["--decode-step-ms"].default == "est"  # estimated unless given
    assert actions["--efficiency"].default == 1.0  # 100 % as the CLI's fraction
    assert actions["--share-target"].default == pytest.approx(0.2)
    assert actions["--tp-decode"].default is None  # absent = the prefill TP
    for row in I.INPUTS:
        if row.cli and not row.page:
            assert row.cli in actions, row.cli


@pytest.mark.parametrize(
    "field, si_value",
    [
        ("efficiency", 0.0),
        ("efficiency", 1.01),
        ("decode_step_s", 0.0),
        ("share_target", 1.0),
        ("k", 0.0),
        ("mfu", 1.5),
        ("block_tokens", 0),
        ("descriptor_s", -1e-6),
        ("codec_bytes_per_s", 0.0),
    ],
)
def test_scenario_validates_against_the_same_rows(field, si_value):
    kw = {
        "efficiency": "efficiency",
        "decode_step_s": "decode_step_ms",
        "share_target": "share_target",
        "k": "k",
        "mfu": "mfu",
        "block_tokens": "block_tokens",
        "descriptor_s": "descriptor_us",
        "codec_bytes_per_s": "codec_gbs",
    }[field]
    scale = {"decode_step_s": 1e3, "descriptor_s": 1e6, "codec_bytes_per_s": 1e-9}.get(field, 1)
    with pytest.raises(ValueError, match=field if field != "codec_bytes_per_s" else "codec"):
        build_scenario(**{kw: si_value * scale})


def test_share_target_is_defined_once():
    """The 20 % line and the other thresholds are assigned in kvmodel/inputs.py only."""
    names = {
        "DEFAULT_SHARE_TARGET",
        "DEFAULT_DECODE_STEP_S",
        "DEFAULT_MFU",
        "DEFAULT_BAND_MS",
        "DEFAULT_MIN_SEQ_LEN",
        "DEFAULT_K",
    }
    found = []
    for path in [
        *ROOT.glob("kvmodel/**/*.py"),
        *ROOT.glob("kvview/**/*.py"),
        *ROOT.glob("ui/**/*.py"),
    ]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and t.id in names:
                        found.append((path.relative_to(ROOT).as_posix(), t.id))
    assert {p for p, _ in found} == {"kvmodel/inputs.py"}, found


@settings(max_examples=200, deadline=None)
@given(
    seq=st.integers(1, 131_072),
    batch=st.integers(1, 4096),
    eff=st.floats(1, 100),
    step=st.floats(0.1, 10_000),
    share=st.floats(1, 99),
    lw=st.integers(0, 1),
    comp=st.sampled_from(["none", "int8", "fp8", "int4"]),
    # not within 1e-300 of 0: a subnormal time (in ms or s) is refused (issue 23, test_hostile)
    prefill=st.one_of(st.just("est"), st.just(0.0), st.floats(1e-300, 3_600_000)),
)
def test_link_values_survive_scenario_and_back(seq, batch, eff, step, share, lw, comp, prefill):
    values = dict(seq=seq, batch=batch, eff=eff, step=step, share=share, lw=lw, comp=comp)
    values["prefill"] = prefill
    sc = scenario_from_inputs(values)
    back, gaps = inputs_from_scenario(sc)
    assert gaps == []
    for k, v in values.items():
        if isinstance(v, float):
            assert back[k] == pytest.approx(v, rel=1e-12)
        else:
            assert back[k] == v
    again = scenario_from_inputs(back)
    for f in fields(sc):
        a, b = getattr(again, f.name), getattr(sc, f.name)
        assert a == (pytest.approx(b, rel=1e-12) if isinstance(b, float) else b), f.name


def test_cli_only_inputs_are_named_as_gaps():
    _, gaps = inputs_from_scenario(build_scenario(mfu=0.4, block_tokens=32))
    assert gaps == ["Prefill MFU 0.4", "KV block"]


def test_inputs_command_lists_every_row():
    proc = subprocess.run(
        [sys.executable, "-m", "kvmodel", "inputs", "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert proc.stdout.count('"name"') == len(I.INPUTS)


def test_a_checked_value_is_remembered_but_not_for_another_type_or_value():
    # check_scenario_field keeps the (field, type, value) it accepted: the same value passes
    # again, while a bool, a fraction or an out-of-range value is refused every time
    for _ in range(2):
        I.check_scenario_field("batch", 8)
        I.check_scenario_field("efficiency", 0.5)
        with pytest.raises(ValueError, match="whole number"):
            I.check_scenario_field("batch", True)
        with pytest.raises(ValueError, match="whole number"):
            I.check_scenario_field("batch", 8.5)
        with pytest.raises(ValueError, match="batch must be"):
            I.check_scenario_field("batch", 0)
        with pytest.raises(ValueError, match="efficiency must be"):
            I.check_scenario_field("efficiency", 1.5)
        with pytest.raises(ValueError, match="finite"):
            I.check_scenario_field("efficiency", float("nan"))
