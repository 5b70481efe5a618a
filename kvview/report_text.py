"""The report's text: a scenario's inputs, key numbers, requirements and assumptions as rows of
formatted text (units included).  No streamlit here; ``kvview.report`` lays them out as HTML."""

from __future__ import annotations

from kvmodel import catalog, solve, steps
from kvmodel.transfer import Evaluation, Scenario
from kvmodel.verdicts import step_verdict
from kvview.fmt import fmt_bandwidth, fmt_bytes, fmt_ms, fmt_time, fmt_tokens
from kvview.words import unreachable_reason

BATCH_LIMIT = 65536


def _pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:,.{digits}f} %"


def _parallel_rows(sc: Scenario) -> list[tuple[str, str]]:
    """Expert parallelism, when a side has it (``--ep``/``--ep-decode``, URL ``ep``/``epd``)."""
    if sc.ep_prefill <= 1 and sc.ep_decode <= 1:
        return []
    return [("EP prefill → decode", f"{sc.ep_prefill} → {sc.ep_decode}")]


def scenario_inputs(sc: Scenario) -> list[tuple[str, str]]:
    """(quantity, value with unit) rows describing the scenario's inputs."""
    m = sc.model
    comp = "none"
    if sc.compression != "none":
        group = f", one scale per {sc.comp_group} values" if sc.compression != "fp8" else ""
        comp = (
            f"{sc.compression.upper()}{group}; quantize/dequantize at "
            f"{fmt_bandwidth(sc.codec_bytes_per_s)} of uncompressed KV"
        )
    prefill = (
        f"estimated (MFU {_pct(sc.mfu)})" if sc.prefill_s is None else f"{fmt_ms(sc.prefill_s)}"
    )
    streams = f"{sc.streams}" + (
        " (the NICs both instances have)" if sc.parallel_links is None else ""
    )
    desc = (
        f"{fmt_time(sc.descriptor_s)} per descriptor, {sc.block_tokens} tokens per block"
        if sc.descriptor_s
        else "not counted"
    )
    kvd = sc.kv_dtype + (f", one scale per {sc.kv_scale_group} values" if sc.kv_scale_group else "")
    return [
        ("Model", f"{m.name} ({m.id}; {m.attention}, {m.layers} layers)"),
        ("Sequence length", f"{sc.seq_len:,} tokens"),
        ("Batch", f"{sc.batch:,} request{'s' if sc.batch != 1 else ''}"),
        ("Interconnect", f"{sc.link.name} ({sc.link.id})"),
        ("Bandwidth", f"{fmt_bandwidth(sc.link.bandwidth_bytes_per_s)} per direction"),
        ("Link efficiency", _pct(sc.efficiency)),
        ("Parallel links", streams),
        ("Latency per transfer", fmt_time(sc.link.latency_s)),
        ("KV cache dtype", kvd),
        ("Transfer compression", comp),
        ("Layer-wise sending", "on" if sc.layerwise else "off"),
        ("TP prefill → decode", f"{sc.tp_prefill} → {sc.tp_decode}"),
        *_parallel_rows(sc),
        ("GPU", sc.gpu.name),
        *([("Decode GPU", sc.decode_gpu.name)] if sc.decode_gpu != sc.gpu else []),
        ("Serving framework", catalog.get_framework(sc.framework).name),
        (
            "Decode step (estimated)" if sc.decode_step_estimated else "Decode step (given)",
            fmt_ms(sc.decode_step_s),
        ),
        ("Transfer stack", sc.stack.name),
        ("Prefill (input)", prefill),
        ("Descriptor cost", desc),
        ("Critical threshold", f"transfer ≥ {sc.k:g} × decode step"),
        ("TTFT share target", _pct(sc.share_target)),
    ]


def key_numbers(ev: Evaluation) -> list[tuple[str, str]]:
    """(quantity, value with unit) rows of the headline numbers."""
    sc = ev.scenario
    wire = fmt_bytes(ev.wire_bytes)
    if ev.compression_ratio < 1:
        wire += f" ({ev.compression_ratio:.1%} of {fmt_bytes(ev.raw_wire_bytes)})"
    rows = [
        ("KV cache", fmt_bytes(ev.kv_total_bytes)),
        ("On the wire", wire),
        (
            "Effective bandwidth",
            f"{fmt_bandwidth(ev.effective_bandwidth_bytes_per_s)} per direction",
        ),
        ("Exposed transfer", fmt_ms(ev.exposed_s, 2)),
    ]
    if sc.layerwise:
        rows.append(("Whole transfer (overlapped)", fmt_ms(ev.transfer_s, 2)))
    rows += [
        (
            "Decode step",
            f"{fmt_ms(ev.decode_step_s)} (roofline lower bound "
            f"{fmt_ms(ev.decode_step_lower_bound_s)})",
        ),
        (
            "Transfer ÷ decode step",
            f"{ev.transfer_over_decode:.2f}× ({step_verdict(ev.transfer_over_decode)})",
        ),
        ("Prefill", fmt_time(ev.prefill_s) + (" (estimated)" if ev.prefill_estimated else "")),
        ("TTFT", fmt_time(ev.ttft_s)),
        (
            "Transfer share of TTFT",
            f"{ev.transfer_share_of_ttft:.1%} "
            f"({'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line)",
        ),
        ("Critical sequence length", fmt_tokens(ev.critical_seq_len)),
    ]
    return rows


def _bw_text(sc: Scenario, criterion: str) -> str:
    bw = solve.min_bandwidth(sc, criterion=criterion)
    if bw is None:
        return unreachable_reason(sc, criterion=criterion) or "unreachable"
    now = sc.link.bandwidth_bytes_per_s
    rel = "the current link already does" if bw <= now else f"{bw / now:,.2f}× the current link"
    return f"{fmt_bandwidth(bw)} per direction ({bw * 8 / 1e9:,.4g} Gb/s; {rel})"


def _mitigation_text(sc: Scenario, criterion: str) -> tuple[str, bool]:
    m = solve.cheapest_mitigation(sc, criterion=criterion)
    if m is None:
        n = len(solve.mitigation_ladder(sc))
        return f"none of the {n} options (compression, layer-wise, faster links) meets it", False
    ev = m.evaluation
    return (
        f"{m.label}: exposed transfer {fmt_ms(ev.exposed_s, 2)}, TTFT {fmt_time(ev.ttft_s)}, "
        f"{ev.transfer_share_of_ttft:.1%} of TTFT (option {len(m.tried)} in cost order)",
        True,
    )


def requirements(sc: Scenario) -> list[tuple[str, str]]:
    """(question, answer) rows from ``kvmodel.solve`` for both criteria."""
    step = f"transfer < {sc.k:g} × decode step ({fmt_ms(sc.k * sc.decode_step_s)})"
    share = f"transfer ≤ {sc.share_target:.0%} of TTFT"
    s_max = solve.max_seq_len(sc, criterion="step")
    b_max = solve.max_batch(sc, criterion="step", limit=BATCH_LIMIT)
    s_text = "none: even a 1-token prompt misses it" if s_max is None else f"{s_max:,} tokens"
    if s_max == sc.model.max_context_tokens:
        s_text += " (the model's max context)"
    b_text = (
        "none: even one request misses it"
        if b_max is None
        else f"{b_max:,} request{'s' if b_max != 1 else ''}"
    )
    if b_max == BATCH_LIMIT:
        b_text += " (the search limit)"
    return [
        (f"Minimum bandwidth for {step}", _bw_text(sc, "step")),
        (f"Minimum bandwidth for {share}", _bw_text(sc, "share")),
        (f"Longest prompt with {step}, batch {sc.batch:,}", s_text),
        (f"Largest batch with {step}, {sc.seq_len:,} tokens", b_text),
        (f"Cheapest option for {step}", _mitigation_text(sc, "step")[0]),
        (f"Cheapest option for {share}", _mitigation_text(sc, "share")[0]),
    ]


def _gpus_text(tp: int, ep: int) -> str:
    """'8×' (TP 8), '8× (EP 8)' for an expert-parallel instance."""
    return f"{max(tp, ep)}×" + (f" (EP {ep})" if ep > 1 else "")


def assumptions(sc: Scenario, ev: Evaluation) -> list[str]:
    """Plain sentences: what the numbers of ``sc`` rest on."""
    link, gpu, m = sc.link, sc.gpu, sc.model
    out = [
        f"Bandwidth is per direction: {link.name} moves "
        f"{fmt_bandwidth(link.bandwidth_bytes_per_s)} each way"
        + (f" (source: {link.source})." if link.source else "."),
        f"Link efficiency {_pct(sc.efficiency)} of nominal over {sc.streams} parallel link(s): "
        f"{fmt_bandwidth(ev.effective_bandwidth_bytes_per_s)} effective; latency "
        f"{fmt_time(link.latency_s)} per transfer"
        + (" (paid once per layer chunk when sent layer-wise)." if sc.layerwise else "."),
        f"Transfer stack: {sc.stack.name} ({sc.stack.request_s * 1e3:,.3g} ms per request, "
        f"{sc.stack.message_s * 1e6:,.3g} µs per message, {_pct(sc.stack.efficiency_max)} of "
        f"the link); at wire speed the exposed transfer would be {fmt_time(ev.ideal_exposed_s)}. "
        f"Source: {sc.stack.source}.",
    ]
    if sc.prefill_s is None:
        out.append(
            f"Prefill time is estimated from its parts on "
            f"{_gpus_text(sc.tp_prefill, sc.ep_prefill)} {gpu.name} (weights read, activations, "
            f"attention and GEMM FLOPs at MFU {_pct(sc.mfu)}, TP all-reduce, EP all-to-all, a "
            f"kernel floor of {steps.PREFILL_KERNEL_S_PER_LAYER * 1e3:.3g} ms per layer"
            f"{_host_floor_text(sc)}) = {fmt_time(ev.prefill_s)}, calibrated on measured "
            "prefills (docs/model.md, Fidelity)."
        )
    else:
        out.append(f"Prefill time is given: {fmt_time(sc.prefill_s)}.")
    out.append(
        (
            f"The decode step ({fmt_ms(sc.decode_step_s)}) is estimated from its parts for batch "
            f"{sc.batch} at {sc.seq_len:,} tokens on {_gpus_text(sc.tp_decode, sc.ep_decode)} "
            f"{sc.decode_gpu.name}, calibrated on measured vLLM, SGLang and TensorRT-LLM steps"
            if sc.decode_step_estimated
            else f"The decode step ({fmt_ms(sc.decode_step_s)}) is an input, not computed"
        )
        + f"; the roofline lower bound is {fmt_ms(ev.decode_step_lower_bound_s)} "
        "(the active weights and the KV read once at the HBM's peak)."
    )
    if sc.compression != "none":
        out.append(
            f"{sc.compression.upper()} transfer compression quantizes before and dequantizes "
            f"after the trip at {fmt_bandwidth(sc.codec_bytes_per_s)} of uncompressed KV per GPU; "
            "that time is counted in the transfer."
        )
    out.append(f"Model: {m.name}" + (f", from {m.source}." if m.source else "."))
    out.extend(ev.notes)
    return out


def _host_floor_text(sc) -> str:
    """The engine's host floor for the model's prefill, in words ('' when it has none)."""
    from kvmodel.timing import prefill_host_floor_s

    floor = prefill_host_floor_s(sc.model, sc.framework)
    if not floor:
        return ""
    return f"; at least {fmt_time(floor)} a pass, the serving engine's host floor for an MLA model"
