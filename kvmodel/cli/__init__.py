"""``python -m kvmodel``: the cost model on the command line.

Readable tables by default, ``--json`` for machines.  Any bad id or value exits with code 2 and
one line on stderr; never a traceback.

One module per command family; ``edge.py`` is the only module under ``kvmodel/`` that reaches
into ``kvview`` (number formatting and the HTML report), lazily, so importing this package
loads neither ``kvview`` nor plotly nor streamlit.
"""

from __future__ import annotations

import argparse
import sys

from .. import inputs as I
from .capacity import add_capacity_options, cmd_capacity
from .fidelity import cmd_fidelity
from .listings import cmd_gpus, cmd_inputs, cmd_links, cmd_models, cmd_stacks
from .measure import cmd_calibrate, cmd_metrics
from .options import Parser, UsageError, add_input, check_inputs, positive_int, scenario_options
from .report import cmd_report
from .scenario import cmd_critical, cmd_size, cmd_table, cmd_transfer
from .traffic import cmd_traffic

__all__ = ["COMMANDS", "UsageError", "add_input", "check_inputs", "main", "make_parser"]


COMMANDS = {
    "inputs": (cmd_inputs, "every input: URL key, CLI flag, unit, range, default", False),
    "models": (cmd_models, "list catalog models", False),
    "links": (cmd_links, "list interconnects", False),
    "gpus": (cmd_gpus, "list GPUs", False),
    "stacks": (cmd_stacks, "list transfer stacks (measured connector costs)", False),
    "size": (cmd_size, "KV bytes: total, per token, per layer, per GPU, on the wire", True),
    "transfer": (cmd_transfer, "transfer time, TTFT, share, critical length", True),
    "critical": (cmd_critical, "critical sequence length", True),
    "table": (cmd_table, "transfer ms per link × batch", True),
    "traffic": (cmd_traffic, "which share of a traffic file gains from disaggregation", True),
    "capacity": (cmd_capacity, "GPUs for a traffic at TTFT/TPOT targets, vs colocated", True),
    "calibrate": (cmd_calibrate, "fit latency and bandwidth to perftest or timing data", False),
    "metrics": (cmd_metrics, "transfer gap, TTFT and their share from a /metrics scrape", False),
    "report": (cmd_report, "write a standalone HTML report of the scenario", True),
    "fidelity": (cmd_fidelity, "every cited measurement: the model's value, ratio, source", False),
}


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m kvmodel", description="KV-cache transfer cost model")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    for name, (_, help_text, scenario) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if scenario:
            scenario_options(p)
        else:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "traffic":
            p.add_argument(
                "file",
                help="trace: CSV/TSV(.gz), Parquet, JSONL, histogram, .prom; or a directory or "
                "quoted glob of Parquet files ('logs/*.parquet'), streamed",
            )
            for name in ("minlen", "crit"):
                add_input(p, I.get(name))
            for name in ("hit", "rps"):
                add_input(p, I.get(name))
            p.add_argument("--prompt-column", help="prompt-length column, when not detected")
            p.add_argument("--time-column", help="timestamp column, when not detected")
        if name == "capacity":
            add_capacity_options(p)
        if name == "inputs":
            p.add_argument(
                "--markdown", action="store_true", help="the parameter table of docs/links.md"
            )
        if name == "calibrate":
            p.add_argument("file", help="perftest ib_*_bw output or --out_json, bytes,seconds CSV")
            p.add_argument("--link", help="interconnect id: report efficiency vs its bandwidth")
            p.add_argument(
                "--nics",
                type=positive_int,
                default=1,
                help="NICs the measurement ran over: its total is divided by them (1)",
            )
        if name == "metrics":
            p.add_argument("file", help="Prometheus text: vLLM/NIXL/SGLang /metrics scrape")
        if name == "report":
            p.add_argument("--out", required=True, metavar="FILE.html", help="report file")
            p.add_argument(
                "--base-url",
                help="app address for the share link (default http://localhost:8501/)",
            )
            p.add_argument("--title", default="KV transfer report", help="report title")
        if name == "table":
            for name in ("links", "batches"):
                add_input(p, I.get(name))
    return parser


def main(argv=None) -> int:
    try:
        args = make_parser().parse_args(argv)
        COMMANDS[args.command][0](args)
    except (UsageError, ValueError, argparse.ArgumentTypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"error: {exc.strerror or exc}: {getattr(exc, 'filename', '') or ''}", file=sys.stderr
        )
        return 2
    return 0
