"""Parsing: one-line usage errors, number types, and the scenario options built from the rows of
``kvmodel/inputs.py`` (one definition of every input; the CLI derives its flags from them)."""

from __future__ import annotations

import argparse

from .. import inputs as I
from ..build import to_scenario


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise UsageError(message)


def quoted(text) -> str:
    """A command-line value as a message quotes it: at most ~40 characters."""
    text = str(text)
    return repr(text) if len(text) <= 40 else f"{text[:20]!r}… ({len(text):,} characters)"


def whole(text) -> int:
    try:
        return int(text)
    except ValueError:  # also an integer past Python's 4,300-digit conversion limit
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a whole number") from None


def positive_int(text):
    value = whole(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{quoted(text)} must be >= 1")
    return value


def _number(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not a finite number")
    return value


def _dest(row: I.Input) -> str:
    return row.cli.lstrip("-").replace("-", "_")


def add_input(p, row: I.Input) -> None:
    """One CLI option from its ``kvmodel.inputs`` row: type, default, choices and help."""
    default = row.default if row.cli_default == "same" else row.cli_default
    if default is not None and row.cli_scale != 1 and row.kind == "float":
        default = default / row.cli_scale
    unit = "" if row.cli_scale != 1 or not row.unit else f" [{row.unit}]"
    shown = f"{default:g}" if isinstance(default, float) else default
    help_text = f"{row.help}{unit}" + ("" if default is None else f" (default {shown})")
    kw = dict(dest=_dest(row), default=default, help=help_text.replace("%", "%%"))
    if row.kind == "flag":
        p.add_argument(row.cli, action="store_true", dest=kw["dest"], help=row.help)
        return
    if row.kind == "choice":
        kw["choices"] = list(row.allowed())
    elif row.kind == "int":
        kw["type"] = whole
    elif row.est:  # prefill, decode step
        kw["type"] = _number_or_est
    elif row.kind == "float":
        kw["type"] = _number
    p.add_argument(row.cli, **kw)


def _number_or_est(text):
    return None if text.strip().lower() == "est" else _number(text)


def check_input(args, row: I.Input) -> None:
    """One numeric option against its row's limit (absent or ``est``: nothing to check)."""
    value = getattr(args, _dest(row), None)
    if value is not None and value != "est":
        row.check(value, what=row.cli, scale=row.cli_scale)


def check_inputs(args) -> None:
    """Every numeric option against its row's limit; the message names the flag."""
    for row in I.INPUTS:
        if row.cli and row.kind in ("int", "float"):
            check_input(args, row)


SCENARIO_ROWS = tuple(r for r in I.INPUTS if r.cli and not r.page and r.name != "model")


def scenario_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scenario (one row each in kvmodel/inputs.py)")
    src = g.add_mutually_exclusive_group()
    add_input(src, I.get("model"))
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json instead")
    g.add_argument("--quant-config", metavar="PATH", help="hf_quant_config.json beside --config")
    for row in SCENARIO_ROWS:
        add_input(g, row)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _model_from_args(args):
    if getattr(args, "quant_config", None) and not args.config:
        raise UsageError("--quant-config needs --config: the hf_quant_config.json is read beside "
                         "the model's config.json")  # fmt: skip
    if args.config:
        from ..hfconfig import load_hf_config

        return load_hf_config(args.config, quant_config=args.quant_config)
    return args.model


def scenario_from_args(args, **overrides):
    """The scenario of the parsed options; ``overrides`` by input name, display units."""
    check_inputs(args)
    values = {"model": args.model}
    for row in SCENARIO_ROWS:
        value = getattr(args, _dest(row))
        if value is not None and row.kind == "float":
            value = value * row.cli_scale
        values[row.name] = value
    values.update(overrides)
    model = _model_from_args(args)
    try:
        return to_scenario(values, model=None if isinstance(model, str) else model)
    except ValueError as exc:  # "seq_len must be <= the model's max context" names the flag
        field, _, rest = str(exc).partition(" ")
        row = I.BY_FIELD.get(field)
        if row is None or not row.cli or row.scale != 1 or row.cli_scale != 1:
            raise  # other units than the flag's: the field's name is the honest one
        raise ValueError(f"{row.cli} {rest}") from None
