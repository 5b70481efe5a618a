"""Catalog listings: models, links, gpus, stacks, and every input (``inputs``)."""

from __future__ import annotations

from .. import catalog
from .. import inputs as I
from ..size import bytes_per_token_full
from .edge import fmt_bytes
from .output import emit


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
    emit(
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
    emit(args, payload, ("id", "name", "GB/s per direction", "latency µs"), rows)


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
    emit(
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
            hbm_efficiency=g.hbm_efficiency,
            flops_efficiency=g.flops_efficiency,
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
            f"{p['hbm_efficiency']:g}",
            f"{p['flops_efficiency']:g}",
        )
        for p in payload
    ]
    emit(
        args,
        payload,
        ("id", "name", "HBM GB/s", "BF16 TFLOP/s", "FP8 TFLOP/s", "memory GB", "scale-up", "NIC",
         "HBM share", "FLOP share"),  # fmt: skip
        rows,
        ["HBM share, FLOP share: the fractions of the datasheet peaks a step reaches "
         "(e_hbm, e_flop; docs/model.md says where each comes from)."],
    )


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
    emit(args, payload, ("URL", "CLI", "unit", "default"), rows)
