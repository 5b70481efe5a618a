"""Scenario commands: size, transfer, critical, table."""

from __future__ import annotations

import argparse

from .. import inputs as I
from ..transfer import evaluate, transfer
from .edge import fmt_bytes, fmt_ms, fmt_tokens
from .options import UsageError, positive_int, scenario_from_args
from .output import emit


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
        **_end_to_end_payload(ev),
    }


def _end_to_end_payload(ev):
    """End-to-end time (issue 21): the serving framework, expert parallelism, and the parts of
    the decode step, prefill and TTFT [ms] (each dict adds up to its total)."""
    sc = ev.scenario
    return {
        "framework": sc.framework,
        "ep_prefill": sc.ep_prefill,
        "ep_decode": sc.ep_decode,
        "step_breakdown_ms": (
            ev.step_parts.as_ms() if ev.step_parts else {"given": ev.decode_step_s * 1e3}
        ),
        "prefill_breakdown_ms": (
            ev.prefill_parts.as_ms() if ev.prefill_parts else {"given": ev.prefill_s * 1e3}
        ),
        "ttft_breakdown_ms": ev.ttft_parts.as_ms(),
    }


def cmd_size(args):
    ev = evaluate(scenario_from_args(args))
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
    emit(
        args,
        payload,
        ("quantity", "bytes", "decimal"),
        rows,
        [f"{ev.scenario.model.name}, {ev.scenario.seq_len:,} tokens × batch {ev.scenario.batch}"],
    )


def cmd_transfer(args):
    ev = evaluate(scenario_from_args(args))
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
    emit(args, p, ("quantity", "value"), rows, [f"note: {n}" for n in ev.notes])


def cmd_critical(args):
    ev = evaluate(scenario_from_args(args))
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
    emit(args, payload, ("quantity", "value"), rows)


def _table_batches(text: str) -> list[int]:
    """``--batches``: comma-separated whole numbers of requests, at least one."""
    try:
        batches = sorted({positive_int(b) for b in text.split(",") if b.strip()})
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--batches: {exc}") from None
    if not batches:
        raise UsageError("--batches: no batch size given; expected comma-separated whole "
                         "numbers of requests, e.g. 1,8,32")  # fmt: skip
    for b in batches:
        I.get("batch").check(b, what="--batches")
    return batches


def cmd_table(args):
    batches = _table_batches(args.batches)
    if args.bandwidth_gbs is not None:
        scenarios = [scenario_from_args(args)]
    else:
        ids = [i.strip() for i in args.links.split(",") if i.strip()]
        if not ids:
            raise UsageError("--links: no link id given; expected comma-separated ids of "
                             "`python -m kvmodel links`")  # fmt: skip
        scenarios = [scenario_from_args(args, link=i) for i in ids]
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
        t = transfer(sc, batch=[float(b) for b in batches]).exposed_s
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
    emit(
        args,
        payload,
        headers,
        rows,
        ["Bandwidth is per direction: NVLink 4's '900 GB/s' is 450 GB/s each way."],
    )
