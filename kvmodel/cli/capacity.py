"""``capacity``: prefill and decode GPUs for a traffic at its latency targets, the network it
needs, and the same traffic colocated (``kvmodel.capacity``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import inputs as I
from ..topology import par_text
from .edge import decode_method, fmt_ms, ttft_parts_text
from .options import add_input, check_input, scenario_from_args, whole
from .output import emit

ROWS = (
    "trace_file",
    "rps",
    "out",
    "ttft_slo",
    "ttft_pct",
    "tpot_slo",
    "price",
    "priced",
    "replay",
    "size",
    "rn",
)


def _tp_or_auto(text):
    return "auto" if text.strip().lower() == "auto" else whole(text)


def add_capacity_options(p: argparse.ArgumentParser) -> None:
    """The capacity inputs (one row each in kvmodel/inputs.py); ``--tp``/``--tp-decode`` take
    ``auto`` here."""
    g = p.add_argument_group("capacity plan (one row each in kvmodel/inputs.py)")
    for name in ROWS:
        add_input(g, I.get(name))
    g.add_argument("--prompt-column", help="prompt-length column, when not detected")
    g.add_argument("--output-column", help="output-length column, when not detected")
    g.add_argument("--time-column", help="timestamp column, when not detected")
    for action in p._actions:
        if "--tp" in action.option_strings or "--tp-decode" in action.option_strings:
            action.type = _tp_or_auto
            action.help += "; `auto`: search the TPs that fit (capacity)"


def _trace_path(text: str):
    from ..traffic import SAMPLES, sample_path

    if text in SAMPLES and not Path(text).exists():
        return sample_path(text)
    return text


def workload_from_args(args, *, per_request: bool = False):
    """The workload of the parsed options, the requests read and notes on how it was made.
    ``per_request``: keep every request of a trace (a replay plays its timestamps)."""
    from ..capacity import Workload
    from ..traffic import load_traffic

    rps = args.rps or None  # 0 = from the trace
    notes = []
    if args.trace:
        req = load_traffic(  # counts per length with their outputs' moments: all a plan reads
            _trace_path(args.trace),
            prompt_column=args.prompt_column,
            output_column=args.output_column,
            time_column=args.time_column,
            per_request=per_request,
        )
        if not req.has_output_lengths:
            notes.append(
                f"the trace has no output lengths: every request generates {args.output_len:,} "
                "tokens (--output-len)"
            )
        return Workload.from_requests(req, rps, output_len=args.output_len), req, notes
    if rps is None:
        raise ValueError(
            "give a traffic file (--trace FILE) or an arrival rate (--rps) with --seq-len and "
            "--output-len"
        )
    return Workload.fixed(rps, args.seq_len, args.output_len), None, notes


def _gpus(n: int) -> str:
    return f"{n:,} GPU" if abs(n) == 1 else f"{n:,} GPUs"


def _side_row(p, side: str, slo) -> str:
    """A side's size, or that it misses the targets at the plan's parallelism."""
    if side == "colocated":
        if not p.colocated_gpus:
            return "no colocated instance holds a decode batch beside a prefilling request"
        size = (
            f"{_gpus(p.colocated_gpus)} = {p.colocated_instances:,} × "
            f"{par_text(p.colocated_tp, p.colocated_ep)}, "
            f"chunk {p.colocated_chunk_tokens:,} tokens (limit: {p.limits['colocated']})"
        )
        ok, ttft, tpot = p.colocated_feasible, p.colocated_ttft_s, p.colocated_tpot_s
    else:
        size = f"{_gpus(p.disaggregated_gpus)} (P:D {p.pd_ratio:.2f})"
        ok, ttft, tpot = p.disaggregated_feasible, p.ttft_s, p.tpot_s
    if ok:
        return size
    missed = [
        f"{name} {fmt_ms(v)} > {fmt_ms(t)}"
        for name, v, t in (("TTFT", ttft, slo.ttft_s), ("TPOT", tpot, slo.tpot_s))
        if not v <= t
    ]
    return f"INFEASIBLE: misses {', '.join(missed) or 'the targets'} even with {size}"


def _nearest_row(p, side: str) -> str:
    """The nearest parallelism at which an infeasible side meets the targets."""
    n = p.colocated_nearest if side == "colocated" else p.disaggregated_nearest
    if n is None:
        return "no TP up to 64 meets both targets" if p.nearest_searched else "not searched"
    if side == "colocated":
        par = par_text(n.tp, n.ep)
        return (
            f"{par}: {_gpus(n.gpus)} = {n.instances:,} × {par}, chunk "
            f"{n.chunk_tokens:,} tokens (TTFT {fmt_ms(n.ttft_s)}, TPOT {fmt_ms(n.tpot_s)})"
        )
    pre, dec = par_text(n.prefill_tp, n.prefill_ep), par_text(n.decode_tp, n.decode_ep)
    return (
        f"prefill {pre}, decode {dec}: {_gpus(n.gpus)} = {n.prefill_instances:,} × {pre} + "
        f"{n.decode_instances:,} × {dec} (TTFT {fmt_ms(n.ttft_s)}, TPOT {fmt_ms(n.tpot_s)})"
    )


def _saves_row(p) -> str:
    saves = p.disaggregation_saves_gpus
    if saves is not None:  # a negative saving keeps its number and says what it means
        return _gpus(saves) + (f" (disaggregated needs {-saves:,} more)" if saves < 0 else "")
    sides = [
        s
        for s, ok in (
            ("disaggregated", p.disaggregated_feasible),
            ("colocated", p.colocated_feasible),
        )
        if not ok
    ]
    verb = "misses" if len(sides) == 1 else "miss"
    return f"none counted: {' and '.join(sides)} {verb} the targets"


def _parallelism(args) -> tuple:
    """(prefill TP, decode TP, prefill EP, decode EP) from --tp/--tp-decode/--ep/--ep-decode,
    None where the plan searches; ``args`` is set to what the scenario's checks expect."""
    for key in ("ep", "epd"):  # checked before 1 ("off") stands in for them below
        check_input(args, I.get(key))
    raw_p, raw_d = args.tp, args.tp_decode
    prefill_tp = None if raw_p == "auto" else raw_p
    # --tp-decode absent: the prefill TP (searched with it when --tp is auto)
    decode_tp = prefill_tp if raw_d is None else None if raw_d == "auto" else raw_d
    # --ep / --ep-decode above 1 fix the expert parallelism (attention data-parallel at the
    # TP given, or TP 1 when it is auto); both 1 with TP auto: EPs are searched too (MoE)
    ep_p, ep_d = getattr(args, "ep", 1) or 1, getattr(args, "ep_decode", 1) or 1
    prefill_ep = ep_p if ep_p > 1 else None
    decode_ep = ep_d if ep_d > 1 else prefill_ep
    if prefill_ep and prefill_tp is None:
        prefill_tp = 1
    if decode_ep and decode_tp is None:
        decode_tp = 1
    if (prefill_ep or decode_ep) and (prefill_tp is None) != (decode_tp is None):
        prefill_tp, decode_tp = prefill_tp or 1, decode_tp or 1
    args.tp = I.DEFAULT_TP if prefill_tp is None else prefill_tp  # the scenario's checks
    args.tp_decode = None if decode_tp is None else decode_tp
    args.ep, args.ep_decode = prefill_ep or 1, decode_ep or 1
    return prefill_tp, decode_tp, prefill_ep, decode_ep


def _plan_rows(p, sc, slo, workload) -> list:
    """The plan's text table: traffic, pools, both sides, times, link and cost."""
    q = f"p{slo.ttft_percentile:g}"
    rows = [
        ("traffic", f"{p.rps:,.2f} requests/s, mean {workload.mean_prompt_tokens:,.0f} prompt + "
                    f"{workload.mean_output_tokens:,.0f} output tokens"),
        ("prefill", f"{_gpus(p.prefill_gpus)} = {p.prefill_instances:,} × "
                    f"{par_text(p.prefill_tp, p.prefill_ep)} (limit: {p.limits['prefill']})"),
        ("decode", f"{_gpus(p.decode_gpus)} = {p.decode_instances:,} × "
                   f"{par_text(p.decode_tp, p.decode_ep)} (limit: {p.limits['decode']})"
                   + (f" on {sc.decode_gpu.name}" if sc.gpu_decode is not None else "")),
        ("disaggregated", _side_row(p, "disaggregated", slo)),
        *([("disaggregated nearest", _nearest_row(p, "disaggregated"))]
          if not p.disaggregated_feasible else []),
        ("colocated", _side_row(p, "colocated", slo)),
        *([("colocated nearest", _nearest_row(p, "colocated"))]
          if not p.colocated_feasible else []),
        ("disaggregation saves", _saves_row(p)),
        (f"TTFT {q}", f"{fmt_ms(p.ttft_s)} disaggregated, {fmt_ms(p.colocated_ttft_s)} colocated "
                      f"(target {fmt_ms(slo.ttft_s)})"),
        *([(f"TTFT {q} parts", f"{ttft_parts_text(p.ttft_parts)} (disaggregated)")]
          if p.ttft_parts else []),
        ("TPOT", f"{fmt_ms(p.tpot_s)} disaggregated, {fmt_ms(p.colocated_tpot_s)} colocated "
                 f"(target {fmt_ms(slo.tpot_s)})"),
        ("meets targets", f"{'yes' if p.meets_slo else 'no'} disaggregated, "
                          f"{'yes' if p.colocated_meets_slo else 'no'} colocated"),
        ("link utilisation", f"{p.link_utilization:.1%} of {p.nics_per_transfer} × "
                             f"{p.link_bandwidth_bytes_per_s / 1e9:,.1f} GB/s per instance"),
        (f"NIC bandwidth for {q}", "unreachable" if p.nic_bandwidth_needed_bytes_per_s is None
         else f"{p.nic_bandwidth_needed_bytes_per_s / 1e9:,.2f} GB/s per NIC"),
    ]  # fmt: skip
    if p.cost_per_hour is not None:
        rows.append(("cost", f"${p.cost_per_hour:,.2f}/h disaggregated, "
                             f"${p.colocated_cost_per_hour:,.2f}/h colocated"))  # fmt: skip
        if p.cost_per_million_output_tokens is not None:
            rows.append(("cost per output", f"${p.cost_per_million_output_tokens:,.2f} per "
                                            "million output tokens"))  # fmt: skip
    return rows


def cmd_capacity(args):
    from ..capacity import Slo, plan

    prefill_tp, decode_tp, prefill_ep, decode_ep = _parallelism(args)
    sc = scenario_from_args(args)  # checks every option, the capacity ones included
    replaying = args.replay or args.size_by == "replay"
    workload, req, notes = workload_from_args(args, per_request=replaying)
    slo = Slo(
        ttft_s=I.get("ttft_slo").to_si(args.ttft_slo_ms),
        tpot_s=I.get("tpot_slo").to_si(args.tpot_slo_ms),
        ttft_percentile=args.ttft_percentile,
    )
    p = plan(sc, workload, slo, prefill_tp=prefill_tp, decode_tp=decode_tp,
             gpu_price_per_hour=args.gpu_price or None,
             gpu_price_decode_per_hour=args.gpu_price_decode or None, prefill_ep=prefill_ep,
             decode_ep=decode_ep)  # fmt: skip
    payload = {
        "model": sc.model.id,
        "gpu": sc.gpu.id,
        "link": sc.link.id,
        "stack": sc.stack.id,
        "trace": None if not args.trace else str(args.trace),
        "format": None if req is None else req.fmt,
        "mean_prompt_tokens": workload.mean_prompt_tokens,
        "mean_output_tokens": workload.mean_output_tokens,
        "ttft_slo_ms": slo.ttft_s * 1e3,
        "tpot_slo_ms": slo.tpot_s * 1e3,
        **p.to_json(),
    }
    payload["notes"] = [*notes, *payload["notes"]]
    rows = _plan_rows(p, sc, slo, workload)
    if replaying:
        rows += _replayed(args, sc, p, workload, req, slo, payload)
    footer = tuple(f"note: {n}" for n in payload["notes"])
    emit(args, payload, ("quantity", "value"), rows, footer)


def _replayed(args, sc, p, workload, req, slo, payload) -> list:
    """Replay the plan (``kvmodel.replay``): JSON key ``replay`` and the text section's rows."""
    from .. import replay as rp

    stream = rp.stream_for(workload, sc.model.max_context_tokens, req, rps=args.rps or None,
                           output_len=args.output_len, n=args.replay_requests)  # fmt: skip
    done = rp.replay_plan(sc, p, stream, slo, size_by=args.size_by)
    r, dep = done.result, done.deployment
    payload["replay"] = r.to_json()
    payload["size_by"] = args.size_by
    if done.grown:
        payload["replay_sized"] = {
            "prefill_instances": dep.prefill_instances,
            "decode_instances": dep.decode_instances,
            "prefill_gpus": dep.prefill_instances * dep.prefill_tp,
            "decode_gpus": dep.decode_instances * dep.decode_tp,
            "disaggregated_gpus": done.gpus,
            "rounds": done.rounds,
        }
    if args.size_by == "replay" and not r.meets_slo:
        payload["notes"].append(f"the replay still misses the targets after {done.rounds} "
                                "rounds of growing the pools")  # fmt: skip
    payload["notes"].extend(f"replay and formulas disagree: {why}" for why in done.reasons)
    q = f"p{slo.ttft_percentile:g}"
    arrivals = "Poisson arrivals (seeded)" if r.poisson else "the trace's own arrivals"
    rows = [
        ("replay", f"{r.requests:,} requests, {arrivals}"),
        ("replay TTFT", f"p50 {fmt_ms(r.ttft_p50_s)}, p90 {fmt_ms(r.ttft_p90_s)}, "
                        f"p99 {fmt_ms(r.ttft_p99_s)} ({q} {fmt_ms(r.ttft_at_slo_s)})"),
        ("replay TPOT p90", fmt_ms(r.tpot_p90_s)),
        ("replay transfer p90", f"{fmt_ms(r.transfer_p90_s)} (NIC queues included)"),
        ("replay busiest NICs", f"{r.peak_link_utilization:.1%} in their busiest minute"),
        ("replay decode queue", f"at most {r.max_decode_queue:,} requests waiting for KV memory"),
        ("replay meets targets", "yes" if r.meets_slo else "no"),
        ("replay decode", decode_method()),
    ]  # fmt: skip
    if done.grown:
        rows.append(("sized by replay", f"{_gpus(done.gpus)} = {dep.prefill_instances:,} × TP "
                     f"{dep.prefill_tp} prefill + {dep.decode_instances:,} × TP "
                     f"{dep.decode_tp} decode"))  # fmt: skip
    return rows
