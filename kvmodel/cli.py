"""``python -m kvmodel``: the cost model on the command line.

Readable tables by default, ``--json`` for machines.  Any bad id or value exits with code 2 and
one line on stderr; never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys

from . import catalog
from . import inputs as I
from .build import scenario_from_inputs
from .size import bytes_per_token_full
from .transfer import evaluate, transfer
from .units import fmt_bytes, fmt_ms, fmt_tokens


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit code 2
        raise UsageError(message)


def _positive_int(text):
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} must be >= 1")
    return value


def _whole(text):
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def _number(text):
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
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
        kw["type"] = _whole
    elif row.default == "est":  # prefill, decode step
        kw["type"] = _number_or_est
    elif row.kind == "float":
        kw["type"] = _number
    p.add_argument(row.cli, **kw)


def _number_or_est(text):
    return None if text.strip().lower() == "est" else _number(text)


def check_inputs(args) -> None:
    """Every numeric option against its row's limit; the message names the flag."""
    for row in I.INPUTS:
        if row.cli and row.kind in ("int", "float") and hasattr(args, _dest(row)):
            value = getattr(args, _dest(row))
            if value is not None and value != "est":
                row.check(value, what=row.cli, scale=row.cli_scale)


SCENARIO_ROWS = tuple(r for r in I.INPUTS if r.cli and not r.page and r.name != "model")


def _scenario_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("scenario (one row each in kvmodel/inputs.py)")
    src = g.add_mutually_exclusive_group()
    add_input(src, I.get("model"))
    src.add_argument("--config", metavar="PATH", help="a Hugging Face config.json instead")
    g.add_argument("--quant-config", metavar="PATH", help="hf_quant_config.json beside --config")
    for row in SCENARIO_ROWS:
        add_input(g, row)
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _model_from_args(args):
    if args.config:
        from .hfconfig import load_hf_config

        return load_hf_config(args.config, quant_config=args.quant_config)
    return args.model


def _scenario(args, **overrides):
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
    return scenario_from_inputs(values, model=None if isinstance(model, str) else model)


def _print_table(headers, rows):
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *rows, strict=False)]
    line = "  ".join(f"{{:<{w}}}" for w in widths)
    print(line.format(*headers))
    print("  ".join("-" * w for w in widths))
    for row in rows:
        print(line.format(*row))


def _emit(args, payload, headers, rows, footer=()):
    if args.json:
        print(json.dumps(payload, indent=2))
        return
    _print_table(headers, rows)
    for text in footer:
        print(text)


def cmd_models(args):
    items = [catalog.get_model(i) for i in catalog.model_ids()]
    payload = [
        dict(
            id=m.id,
            name=m.name,
            attention=m.attention,
            layers=m.layers,
            kv_bytes_per_token_fp16=bytes_per_token_full(m),
            max_context_tokens=m.max_context_tokens,
            params_total_b=m.params_total / 1e9,
            params_active_b=m.params_active / 1e9,
            aliases=list(m.aliases),
            source=m.source,
        )
        for m in items
    ]
    rows = [
        (
            p["id"],
            p["attention"],
            p["layers"],
            f"{p['kv_bytes_per_token_fp16']:,.0f}",
            f"{p['max_context_tokens']:,}",
            f"{p['params_total_b']:g}/{p['params_active_b']:g}",
        )
        for p in payload
    ]
    _emit(
        args,
        payload,
        ("id", "attention", "layers", "KV B/token (fp16)", "max ctx", "params B (total/active)"),
        rows,
    )


def cmd_links(args):
    items = list(dict.fromkeys(catalog.links().values()))
    payload = [
        dict(
            id=lk.id,
            name=lk.name,
            kind=lk.kind,
            bandwidth_gbs=lk.bandwidth_bytes_per_s / 1e9,
            latency_us=lk.latency_s * 1e6,
            source=lk.source,
            note=lk.note,
        )
        for lk in items
    ]
    rows = [
        (p["id"], p["name"], f"{p['bandwidth_gbs']:g}", f"{p['latency_us']:g}") for p in payload
    ]
    _emit(args, payload, ("id", "name", "GB/s per direction", "latency µs"), rows)


def cmd_stacks(args):
    items = list(catalog.stacks().values())
    nic = catalog.get_link("ib-ndr").bandwidth_bytes_per_s
    payload = [
        dict(
            id=st.id,
            name=st.name,
            request_ms=st.request_s * 1e3,
            chunk_us=st.chunk_s * 1e6,
            message_us=st.message_s * 1e6,
            efficiency_max=st.efficiency_max,
            message=st.message,
            overlap=st.overlap,
            half_bandwidth_bytes_ib_ndr=st.half_bandwidth_bytes(nic),
            source=st.source,
            note=st.note,
        )
        for st in items
    ]
    rows = [
        (
            p["id"],
            f"{p['request_ms']:g}",
            f"{p['message_us']:g}",
            f"{p['efficiency_max']:.0%}",
            p["message"],
            fmt_bytes(p["half_bandwidth_bytes_ib_ndr"])
            if p["half_bandwidth_bytes_ib_ndr"]
            else "–",
        )
        for p in payload
    ]
    _emit(
        args,
        payload,
        ("id", "per request ms", "per message µs", "efficiency", "message", "half-BW msg @ NDR"),
        rows,
        ["Sources: data/stacks.csv (python -m kvmodel stacks --json prints them)."],
    )


def cmd_gpus(args):
    items = list(catalog.gpus().values())
    payload = [
        dict(
            id=g.id,
            name=g.name,
            hbm_gbs=g.hbm_bytes_per_s / 1e9,
            bf16_tflops=g.bf16_flops / 1e12,
            fp8_tflops=None if g.fp8_flops is None else g.fp8_flops / 1e12,
            memory_gb=g.memory_bytes / 1e9,
            nvlink=g.nvlink,
            nic=g.nic,
            source=g.source,
        )
        for g in items
    ]
    rows = [
        (
            p["id"],
            p["name"],
            f"{p['hbm_gbs']:g}",
            f"{p['bf16_tflops']:g}",
            "–" if p["fp8_tflops"] is None else f"{p['fp8_tflops']:g}",
            f"{p['memory_gb']:g}",
            p["nvlink"],
            p["nic"],
        )
        for p in payload
    ]
    _emit(
        args,
        payload,
        ("id", "name", "HBM GB/s", "BF16 TFLOP/s", "FP8 TFLOP/s", "memory GB", "scale-up", "NIC"),
        rows,
    )


def _evaluation_payload(ev):
    sc = ev.scenario
    return {
        "model": sc.model.id,
        "link": sc.link.id,
        "seq_len": sc.seq_len,
        "batch": sc.batch,
        "kv_dtype": sc.kv_dtype,
        "compression": sc.compression,
        "layerwise": sc.layerwise,
        "tp_prefill": sc.tp_prefill,
        "tp_decode": sc.tp_decode,
        "bandwidth_gbs": sc.link.bandwidth_bytes_per_s / 1e9,
        "effective_bandwidth_gbs": ev.effective_bandwidth_bytes_per_s / 1e9,
        "streams": ev.streams,
        "kv_bytes": ev.kv_total_bytes,
        "kv_bytes_per_token": ev.kv_per_token_bytes,
        "kv_bytes_per_layer": ev.kv_per_layer_bytes,
        "kv_state_bytes": ev.kv_state_bytes,
        "kv_bytes_per_gpu_prefill": ev.kv_per_gpu_prefill_bytes,
        "kv_bytes_per_gpu_decode": ev.kv_per_gpu_decode_bytes,
        "wire_bytes_uncompressed": ev.raw_wire_bytes,
        "wire_bytes": ev.wire_bytes,
        "compression_ratio": ev.compression_ratio,
        "latency_ms": ev.latency_s * 1e3,
        "serialization_ms": ev.serialization_s * 1e3,
        "descriptor_ms": ev.descriptor_s * 1e3,
        "codec_ms": ev.codec_s * 1e3,
        "transfer_ms": ev.transfer_s * 1e3,
        "exposed_transfer_ms": ev.exposed_s * 1e3,
        "decode_step_ms": ev.decode_step_s * 1e3,
        "decode_step_lower_bound_ms": ev.decode_step_lower_bound_s * 1e3,
        "transfer_over_decode": ev.transfer_over_decode,
        "prefill_ms": ev.prefill_s * 1e3,
        "prefill_estimated": ev.prefill_estimated,
        "ttft_ms": ev.ttft_s * 1e3,
        "transfer_share_of_ttft": ev.transfer_share_of_ttft,
        "over_share_target": ev.over_share_target,
        "share_target": sc.share_target,
        "critical_seq_len": ev.critical_seq_len,
        "k": sc.k,
        "notes": list(ev.notes),
        # realistic time (v2): the stack, its wire-speed twin, compute estimates, feasibility
        "stack": sc.stack.id,
        "ideal_transfer_ms": ev.ideal_transfer_s * 1e3,
        "ideal_exposed_transfer_ms": ev.ideal_exposed_s * 1e3,
        "decode_step_estimated": sc.decode_step_estimated,
        "attention_parallel": sc.attention_parallel,
        "window_transfer": sc.window_transfer,
        "scale_up_feasible": ev.scale_up_feasible,
        "weights_bytes_per_gpu": ev.weights_bytes_per_gpu,
        "weights_bytes_per_gpu_prefill": ev.weights_bytes_per_gpu_prefill,
        "fits_in_memory": ev.fits_in_memory,
        "max_concurrent_requests": ev.max_concurrent_requests,
    }


def cmd_size(args):
    ev = evaluate(_scenario(args))
    p = _evaluation_payload(ev)
    keys = (
        "kv_bytes",
        "kv_bytes_per_token",
        "kv_bytes_per_layer",
        "kv_state_bytes",
        "kv_bytes_per_gpu_prefill",
        "kv_bytes_per_gpu_decode",
        "wire_bytes_uncompressed",
        "wire_bytes",
    )
    payload = {
        k: p[k]
        for k in (
            "model",
            "seq_len",
            "batch",
            "kv_dtype",
            "tp_prefill",
            "tp_decode",
            "compression",
            *keys,
        )
    }
    rows = [(k, f"{p[k]:,.0f} B", fmt_bytes(p[k])) for k in keys]
    _emit(
        args,
        payload,
        ("quantity", "bytes", "decimal"),
        rows,
        [f"{ev.scenario.model.name}, {ev.scenario.seq_len:,} tokens × batch {ev.scenario.batch}"],
    )


def cmd_transfer(args):
    ev = evaluate(_scenario(args))
    p = _evaluation_payload(ev)
    rows = [
        ("KV cache", fmt_bytes(ev.kv_total_bytes)),
        ("on the wire", fmt_bytes(ev.wire_bytes)),
        (
            "link",
            f"{ev.scenario.link.name}, {ev.effective_bandwidth_bytes_per_s / 1e9:,.4g} GB/s "
            f"effective per direction",
        ),
        ("transfer stack", f"{ev.scenario.stack.name} ({ev.scenario.stack.id})"),
        ("transfer", fmt_ms(ev.transfer_s, 2)),
        ("exposed transfer", fmt_ms(ev.exposed_s, 2)),
        ("at wire speed (stack ideal)", fmt_ms(ev.ideal_exposed_s, 2)),
        (
            "decode step",
            f"{fmt_ms(ev.decode_step_s)}"
            + (" estimated" if ev.scenario.decode_step_estimated else " given")
            + f" (roofline lower bound {fmt_ms(ev.decode_step_lower_bound_s)})",
        ),
        (
            "memory",
            f"weights {fmt_bytes(ev.weights_bytes_per_gpu)} per decode GPU; "
            f"{ev.max_concurrent_requests:,} requests of this length fit"
            + ("" if ev.fits_in_memory else " — DOES NOT FIT (see notes)"),
        ),
        ("transfer / decode step", f"{ev.transfer_over_decode:.2f}×"),
        ("prefill", fmt_ms(ev.prefill_s) + (" (estimated)" if ev.prefill_estimated else "")),
        ("TTFT", fmt_ms(ev.ttft_s)),
        (
            "transfer share of TTFT",
            f"{ev.transfer_share_of_ttft:.1%}"
            + (f" — over the {ev.scenario.share_target:.0%} line" if ev.over_share_target else ""),
        ),
        ("critical sequence length", fmt_tokens(ev.critical_seq_len)),
    ]
    _emit(args, p, ("quantity", "value"), rows, [f"note: {n}" for n in ev.notes])


def cmd_critical(args):
    ev = evaluate(_scenario(args))
    sc = ev.scenario
    payload = {
        "model": sc.model.id,
        "link": sc.link.id,
        "batch": sc.batch,
        "k": sc.k,
        "decode_step_ms": sc.decode_step_s * 1e3,
        "critical_seq_len": ev.critical_seq_len,
        "max_context_tokens": sc.model.max_context_tokens,
    }
    rows = [
        ("critical sequence length", fmt_tokens(ev.critical_seq_len)),
        ("threshold", f"transfer ≥ {sc.k:g} × {fmt_ms(sc.decode_step_s)}"),
    ]
    _emit(args, payload, ("quantity", "value"), rows)


def cmd_table(args):
    batches = sorted({_positive_int(b) for b in args.batches.split(",") if b.strip()})
    if args.bandwidth_gbs is not None:
        scenarios = [_scenario(args)]
    else:
        ids = [i.strip() for i in args.links.split(",") if i.strip()]
        scenarios = [_scenario(args, link=i) for i in ids]
    payload = {
        "model": scenarios[0].model.id,
        "seq_len": args.seq_len,
        "batches": batches,
        "kv_dtype": scenarios[0].kv_dtype,
        "compression": args.compression,
        "links": [],
    }
    rows = []
    for sc in scenarios:
        t = transfer(sc, batch=batches).exposed_s
        ms = {str(b): float(v) * 1e3 for b, v in zip(batches, t, strict=True)}
        payload["links"].append(
            {
                "id": sc.link.id,
                "name": sc.link.name,
                "bandwidth_gbs": sc.link.bandwidth_bytes_per_s / 1e9,
                "transfer_ms": ms,
            }
        )
        rows.append(
            (
                sc.link.id,
                f"{sc.link.bandwidth_bytes_per_s / 1e9:g}",
                *(f"{ms[str(b)]:,.1f}" for b in batches),
            )
        )
    headers = ("link", "GB/s/dir", *(f"batch {b} (ms)" for b in batches))
    _emit(
        args,
        payload,
        headers,
        rows,
        ["Bandwidth is per direction: NVLink 4's '900 GB/s' is 450 GB/s each way."],
    )


def cmd_traffic(args):
    from . import traffic as tr
    from .traffic import load_traffic

    req = load_traffic(
        args.file,
        prompt_column=args.prompt_column,
        time_column=args.time_column,
        per_request=False,
    )
    sc = _scenario(args)  # checks every option, --hit-ratio included
    mix = tr.mix_from_requests(req, hit_ratio=args.hit_ratio)
    reg = tr.regions(sc, mix, min_seq_len=args.min_seq_len, criterion=args.criterion)
    ld = tr.load(sc, mix, rps=args.rps)
    win = tr.recommended_window(sc, mix, min_seq_len=args.min_seq_len, criterion=args.criterion)

    def ms(x):
        return None if ld is None or x != x or x == float("inf") else x * 1e3

    payload = {
        "file": str(args.file),
        "format": req.fmt,
        "model": sc.model.id,
        "link": sc.link.id,
        "criterion": args.criterion,
        "n_requests": None  # a histogram of shares does not say how many
        if not req.count_known
        else int(reg.n_requests)
        if reg.n_requests.is_integer()
        else reg.n_requests,
        "skipped_rows": req.skipped_rows,
        "requests_over_max_context": round(reg.n_over_context)
        if req.count_known
        else reg.n_over_context,  # a share of 1 for a histogram of shares
        "fraction_requests_gain": reg.fraction_gain,
        "fraction_tokens_gain": reg.fraction_tokens_gain,
        "fraction_too_short": reg.fraction_too_short,
        "fraction_transfer_bound": reg.fraction_transfer_bound,
        "critical_seq_len": reg.critical_seq_len,
        "min_seq_len": reg.min_seq_len,
        "rps": None if ld is None else ld.rps,
        "link_utilization": None if ld is None else ld.utilization,
        "demanded_gbs": None if ld is None else ld.bytes_per_s / 1e9,
        "mean_queue_ms": ms(ld.mean_wait_s) if ld else None,
        "p50_transfer_ms": ms(ld.p50_s) if ld else None,
        "p90_transfer_ms": ms(ld.p90_s) if ld else None,
        "p99_transfer_ms": ms(ld.p99_s) if ld else None,
        "p99_share_of_ttft": None if ld is None else ld.p99_share_of_ttft,
        "bandwidth_for_share_target_gbs": None
        if ld is None or ld.bandwidth_for_target_bytes_per_s is None
        else ld.bandwidth_for_target_bytes_per_s / 1e9,
        "decode_idle_s_per_s": None if ld is None or not ld.stable else ld.decode_idle_s_per_s,
        "window": {"l_min": win.l_min, "l_max": win.l_max, "exists": win.exists},
    }

    def pct(x):
        return "–" if x is None else f"{x:.1%}"

    rows = [
        (
            "requests",
            f"{reg.n_requests:,.0f} ({req.fmt}; {req.skipped_rows:,} rows skipped)"
            if req.count_known
            else f"unknown: the histogram gives shares ({req.skipped_rows:,} rows skipped)",
        ),
        (
            "gain",
            f"{pct(reg.fraction_gain)} of requests, {pct(reg.fraction_tokens_gain)} of tokens",
        ),
        ("too short", f"{pct(reg.fraction_too_short)} (under {reg.min_seq_len:,} tokens)"),
        (
            "transfer-bound",
            f"{pct(reg.fraction_transfer_bound)} (from {fmt_tokens(reg.critical_seq_len)})",
        ),
        (
            "link utilisation",
            "no rate (no timestamps; use --rps)" if ld is None else pct(ld.utilization),
        ),
        (
            "p99 transfer incl. queue",
            "–" if payload["p99_transfer_ms"] is None else f"{payload['p99_transfer_ms']:,.2f} ms",
        ),
    ]
    _emit(args, payload, ("quantity", "value"), rows)


def _fit_measurement(m):
    from .calibrate import fit_from_bandwidth_points, fit_latency_bandwidth
    from .measure import MeasureError

    if m.kind in ("perftest", "perftest-json"):
        return fit_from_bandwidth_points(m.data.points)
    if m.kind == "pairs":
        return fit_latency_bandwidth(m.data.sizes_bytes, m.data.seconds)
    raise MeasureError(
        f"{m.name}: {m.kind} output has no (size, time) pairs to fit; calibrate reads perftest "
        "ib_*_bw output (text or --out_json) or a bytes,seconds CSV"
        + (
            "; for a /metrics scrape use: python -m kvmodel metrics FILE"
            if m.kind == "prometheus"
            else ""
        )
    )


def cmd_calibrate(args):
    from pathlib import Path

    from .calibrate import link_efficiency
    from .measure import load_measurement

    link = catalog.get_link(args.link) if args.link else None
    m = load_measurement(Path(args.file))
    fit = _fit_measurement(m)
    eff = None if link is None else link_efficiency(link, fit)
    payload = {
        "file": str(args.file),
        "kind": m.kind,
        "n_points": fit.n,
        "bandwidth_gbs": fit.bandwidth_bytes_per_s / 1e9,
        "latency_us": fit.latency_s * 1e6,
        "latency_clamped": fit.latency_clamped,
        "rms_relative_error": fit.rms_relative_error,
        "link": None if link is None else link.id,
        "nominal_bandwidth_gbs": None if link is None else link.bandwidth_bytes_per_s / 1e9,
        "efficiency": eff,
        "fit_source": fit.source,
        "efficiency_curve": [{"bytes": b, "efficiency": e} for b, e in fit.efficiency_curve],
    }
    rows = [
        ("measurement", f"{m.name} ({m.kind}, {fit.n} points)"),
        ("bandwidth", f"{fit.bandwidth_bytes_per_s / 1e9:,.4g} GB/s per direction"),
        (
            "latency" if fit.source == "time" else "per-message cost",
            f"{fit.latency_s * 1e6:,.3g} µs" + (" (clamped at 0)" if fit.latency_clamped else ""),
        ),
        ("rms relative error", f"{fit.rms_relative_error:.2%}"),
        (
            "efficiency",
            "– (give --link)"
            if link is None
            else f"{eff:.1%} of {link.name}'s {link.bandwidth_bytes_per_s / 1e9:g} GB/s",
        ),
    ]
    footer = []
    if fit.source == "bandwidth":
        footer.append(
            "perftest keeps many messages in flight: the intercept is the per-message cost of a "
            "pipelined stream, not the one-way latency (measure that with ib_write_lat)."
        )
    _emit(args, payload, ("quantity", "value"), rows, footer)


def cmd_metrics(args):
    from pathlib import Path

    from .measure import MeasureError, load_measurement
    from .transfer import DEFAULT_SHARE_TARGET
    from .verdicts import share_verdict

    m = load_measurement(Path(args.file))
    if m.kind != "prometheus":
        raise MeasureError(
            f"{m.name}: this is {m.kind} output, not Prometheus text; metrics reads a /metrics "
            "scrape (for perftest or bytes,seconds files use: python -m kvmodel calibrate FILE)"
        )
    d = m.data
    verdict = share_verdict(d.transfer_share_of_ttft, share_target=DEFAULT_SHARE_TARGET)

    def ms(x):
        return None if x is None else x * 1e3

    payload = {
        "file": str(args.file),
        "gap_mean_ms": ms(d.gap_mean_s),
        "gap_p50_ms": ms(d.gap_p50_s),
        "gap_p90_ms": ms(d.gap_p90_s),
        "gap_p99_ms": ms(d.gap_p99_s),
        "gap_source": d.gap_source,
        "ttft_mean_ms": ms(d.ttft_mean_s),
        "ttft_p50_ms": ms(d.ttft_p50_s),
        "ttft_p90_ms": ms(d.ttft_p90_s),
        "ttft_p99_ms": ms(d.ttft_p99_s),
        "ttft_source": d.ttft_source,
        "prefill_mean_ms": ms(d.prefill_mean_s),
        "nixl_xfer_mean_ms": ms(d.nixl_xfer_mean_s),
        "nixl_bytes_mean": d.nixl_bytes_mean,
        "effective_bandwidth_gbs": None
        if d.effective_bandwidth_bytes_per_s is None
        else d.effective_bandwidth_bytes_per_s / 1e9,
        "bandwidth_source": d.bandwidth_source,
        "transfer_share_of_ttft": d.transfer_share_of_ttft,
        "share_target": verdict.share_target,
        "verdict": verdict.measured,
        "metrics_found": list(d.metrics_found),
        "notes": list(d.notes),
    }

    def fmt(x, digits=2):
        return "–" if x is None else f"{x:,.{digits}f} ms"

    def pcts(prefix):
        return " / ".join(fmt(payload[f"{prefix}_{p}_ms"]) for p in ("p50", "p90", "p99"))

    share = d.transfer_share_of_ttft
    rows = [
        (
            "transfer gap mean",
            fmt(payload["gap_mean_ms"]) + (f" ({d.gap_source})" if d.gap_source else ""),
        ),
        ("transfer gap p50 / p90 / p99", pcts("gap")),
        ("TTFT mean", fmt(payload["ttft_mean_ms"], 1)),
        ("TTFT p50 / p90 / p99", pcts("ttft")),
        ("prefill mean", fmt(payload["prefill_mean_ms"], 1)),
        ("NIXL transfer mean", fmt(payload["nixl_xfer_mean_ms"])),
        (
            "NIXL bytes per transfer",
            "–" if d.nixl_bytes_mean is None else fmt_bytes(d.nixl_bytes_mean),
        ),
        (
            "effective bandwidth",
            "–"
            if d.effective_bandwidth_bytes_per_s is None
            else f"{d.effective_bandwidth_bytes_per_s / 1e9:,.4g} GB/s",
        ),
        (
            "transfer share of TTFT",
            "–"
            if share is None
            else f"{share:.1%} — {verdict.measured} the {verdict.share_target:.0%} line",
        ),
    ]
    footer = [f"metrics found: {', '.join(d.metrics_found)}", *(f"note: {n}" for n in d.notes)]
    _emit(args, payload, ("quantity", "value"), rows, footer)


def cmd_report(args):
    from pathlib import Path

    from ui.report import DEFAULT_BASE_URL, report_html, share_link, share_query

    out = Path(args.out)
    if out.suffix.lower() not in (".html", ".htm"):
        raise ValueError(f"--out must end in .html or .htm, got {args.out!r}")
    sc = _scenario(args)
    url = share_link(sc, args.base_url or DEFAULT_BASE_URL)
    label = f"{sc.model.name} on {sc.link.name}"
    html = report_html([(label, sc)], share_url=url, title=args.title)
    out.write_text(html, encoding="utf-8")
    size = out.stat().st_size
    gaps = [] if url else share_query(sc)[1]
    payload = {"path": str(out), "bytes": size, "share_url": url, "share_link_gaps": gaps}
    if args.json:
        print(json.dumps(payload, indent=2))
        return
    print(f"wrote {out} ({fmt_bytes(size)}, {size:,} bytes)")
    if url is None:
        print(f"no share link: the app's link cannot carry {'; '.join(gaps)}")


def cmd_inputs(args):
    if args.markdown:
        print(I.markdown_table())
        return
    payload = [
        dict(
            name=r.name,
            label=r.label,
            unit=r.unit,
            default=r.default,
            url=r.name if r.url else None,
            cli=r.cli,
            si_scale=r.scale,
            app_range=[r.lo, r.hi],
            model_limit=list(r.bounds),
            page=r.page or None,
            help=r.help,
        )
        for r in I.INPUTS
    ]
    rows = [
        (p["name"] if p["url"] else "–", p["cli"] or "–", p["unit"] or "–", str(p["default"]))
        for p in payload
    ]
    _emit(args, payload, ("URL", "CLI", "unit", "default"), rows)


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
    "calibrate": (cmd_calibrate, "fit latency and bandwidth to perftest or timing data", False),
    "metrics": (cmd_metrics, "transfer gap, TTFT and their share from a /metrics scrape", False),
    "report": (cmd_report, "write a standalone HTML report of the scenario", True),
}


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m kvmodel", description="KV-cache transfer cost model")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (_, help_text, scenario) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if scenario:
            _scenario_options(p)
        else:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "traffic":
            p.add_argument("file", help="trace: CSV/TSV(.gz), Parquet, JSONL, histogram, .prom")
            for name in ("minlen", "crit"):
                add_input(p, I.get(name))
            for name in ("hit", "rps"):
                add_input(p, I.get(name))
            p.add_argument("--prompt-column", help="prompt-length column, when not detected")
            p.add_argument("--time-column", help="timestamp column, when not detected")
        if name == "inputs":
            p.add_argument("--markdown", action="store_true", help="README's parameter table")
        if name == "calibrate":
            p.add_argument("file", help="perftest ib_*_bw output or --out_json, bytes,seconds CSV")
            p.add_argument("--link", help="interconnect id: report efficiency vs its bandwidth")
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
