"""Sentences: the one-line takeaways the pages and the report show above their charts, and why no
bandwidth meets the target.  Computed from kvmodel's SI numbers; units by ``kvview.fmt``."""

from __future__ import annotations

import re

from kvmodel import catalog, solve
from kvmodel.scenario import prefill_graphed_of
from kvmodel.topology import domain_gpus, gpu_has_link, par_text, unbuildable_links
from kvmodel.transfer import Evaluation, Scenario
from kvmodel.verdicts import step_verdict
from kvview.fmt import fmt_ms, fmt_ms_or_s, fmt_time, fmt_tokens, records


def overview_takeaway(ev: Evaluation) -> str:
    sc = ev.scenario
    ratio = ev.transfer_over_decode
    share = ev.transfer_share_of_ttft
    crit = ev.critical_seq_len
    where = (
        f"prompts of {fmt_tokens(crit)} or more wait at least {sc.k:g} decode "
        f"step{'' if sc.k == 1 else 's'}"
        if crit is not None
        else "no request up to the model's max context waits a full threshold"
    )
    links = f"{ev.streams} × {sc.link.name}" if ev.streams > 1 else sc.link.name
    return (
        f"On {links} with the {sc.stack.name} stack, the KV transfer takes {ratio:,.2f} decode "
        f"steps ({fmt_time(ev.exposed_s)}; {fmt_time(ev.ideal_exposed_s)} at wire speed): "
        f"{step_verdict(ratio)}; it is {share:.1%} of TTFT "
        f"({'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line), "
        f"and {where}."
    )


def interconnect_takeaway(
    table, batch: int, band_ms: tuple[float, float], scenario_link: str,
    step_ms: float | None = None, step_estimated: bool = False,
) -> str:  # fmt: skip
    """Sentence for the link × batch table at one batch size (column ``batch N``); with
    ``step_ms``, also how many finish within the scenario's own decode step."""
    col = f"batch {batch}"
    lo, hi = band_ms
    below = table[table[col] < lo]
    above = table[table[col] > hi]
    row = table[table["link"] == scenario_link]
    own = ""
    if len(row):
        ms = float(row[col].iloc[0])
        own = f" {row['name'].iloc[0]} takes {fmt_ms(ms / 1e3)}."
    mine = ""
    if step_ms is not None and not (lo <= step_ms <= hi):
        within = int((table[col] < step_ms).sum())
        kind = "estimated " if step_estimated else ""
        mine = (
            f" This scenario's own {kind}decode step is {step_ms:,.1f} ms, outside that band: "
            f"{within} of {len(table)} finish within one such step ({step_ms:,.1f} ms)."
        )
    verb = "takes" if len(above) == 1 else "take"
    return (
        f"At batch {batch}, {len(below)} of {len(table)} interconnects finish under a "
        f"{lo:g} ms decode step and {len(above)} {verb} longer than {hi:g} ms.{own}{mine}"
    )


def sequence_takeaway(critical, names: dict, threshold_s: float) -> str:
    """Sentence from a (link, critical_seq_len) table."""
    reached, never = [], []
    for lid, s in zip(critical["link"], critical["critical_seq_len"], strict=True):
        name = names.get(lid, lid)
        if s is None or s != s:  # None or NaN: never reached
            never.append(name)
        else:
            reached.append(f"{name} from {fmt_tokens(s)}")
    limit = fmt_ms(threshold_s)
    if not reached:
        return (
            f"No interconnect here reaches the {limit} threshold up to the model's max context: "
            "the transfer never outlasts it."
        )
    text = f"Transfer exceeds the {limit} threshold on " + "; ".join(reached) + "."
    if never:
        text += f" It never does on {', '.join(never)}."
    return text + " Prompts past those lengths are transfer-bound."


def mitigation_takeaway(table) -> str:
    """Sentence from sweeps.mitigation_table (first row is the baseline).

    Read as plain records: a dozen pandas selections on an 8-row table cost ~1.2 ms a rerun
    on the Mitigations page, the records ~0.1 ms (bench/README.md, session 16)."""
    rows = records(table, ("option", "ttft_ms", "transfer_share", "ttft_saving_ms", "buildable",
                            "lossy"))  # fmt: skip
    base, rest = rows[0], rows[1:]
    rest = [r for r in rest if r.get("buildable", True)]  # NVLink between unshared domains
    lossless = [r for r in rest if not r.get("lossy", False)]
    top = min(r["ttft_ms"] for r in rest)
    # a tie at the shown precision goes to the lossless option (the first of equals otherwise):
    # equal as shown, so the sentence never names a time the table shows as higher (a review:
    # "Layer-wise (122.6 ms)" beside INT8 + layer-wise's 122.5 ms, 0.03 ms apart)
    tied = [r for r in rest if _t(r["ttft_ms"]) == _t(top)]
    best = next((r for r in tied if not r.get("lossy", False)), tied[0])
    no_link = [r for r in lossless if not re.search("NVLink|Infinity|PCIe", r["option"])]
    pool = no_link or lossless or rest
    cheap = min(pool, key=lambda r: r["ttft_ms"])
    risk = " (lossy: it changes the KV values)" if bool(best.get("lossy", False)) else ""
    head = (f"Baseline TTFT is {_t(base['ttft_ms'])} with {base['transfer_share']:.0%} spent "
            "on transfer. ")  # fmt: skip
    if not best["ttft_saving_ms"] >= TIE_MS:  # nothing beats the baseline: never "−-0.3 ms"
        return (head + f"No option lowers TTFT here: the closest, {best['option']}{risk}, "
                f"{_change(best['ttft_saving_ms'])}. Criterion: TTFT.")  # fmt: skip
    if cheap["ttft_saving_ms"] >= TIE_MS:
        plain = f"the best is {cheap['option']} (−{_t(cheap['ttft_saving_ms'])})"
    else:
        plain = f"none lowers it ({cheap['option']} {_change(cheap['ttft_saving_ms'])})"
    return (
        head + f"Lowest TTFT here: {best['option']}{risk} ({_t(best['ttft_ms'])}, "
        f"−{_t(best['ttft_saving_ms'])}); without changing the network or the values, {plain}. "
        "Criterion: TTFT."
    )


def _change(saving_ms: float) -> str:
    """What an option that saves nothing does to TTFT, in words ("adds 0.3 ms")."""
    return f"adds {_t(-saving_ms)}" if saving_ms <= -TIE_MS else "leaves it unchanged"


TIE_MS = 0.05  # half the sentence's last shown digit (0.1 ms)


def _t(ms: float) -> str:
    """A time of the Mitigations sentence: 122.5 ms, or 199.2 s past ten seconds."""
    return fmt_ms_or_s(ms / 1e3, 1)


def models_takeaway(table, current: str) -> str:
    """Sentence from sweeps.models_table: spread across the catalog and where ``current`` sits."""
    t = table.sort_values("bytes_per_token_at_seq")
    lo, hi = t.iloc[0], t.iloc[-1]
    row = t[t["model"] == current].iloc[0]
    rank = list(t["model"]).index(current) + 1
    spread = hi["bytes_per_token_at_seq"] / lo["bytes_per_token_at_seq"]
    return (
        f"{row['name']} moves {row['bytes_per_token_at_seq'] / 1e3:,.1f} kB per token at "
        f"{int(row['seq_len']):,} tokens ({rank} of {len(t)}, smallest first); across the "
        f"catalog it ranges from {lo['bytes_per_token_at_seq'] / 1e3:,.1f} kB ({lo['name']}, "
        f"{lo['attention']}) to {hi['bytes_per_token_at_seq'] / 1e3:,.1f} kB ({hi['name']}, "
        f"{hi['attention']}), a {spread:,.0f}× spread."
    )


def traffic_takeaway(reg, link_name: str, source: str, count_known: bool = True) -> str:
    """Sentence from traffic.Regions (``count_known`` False: a histogram of shares)."""
    count = f" {reg.n_requests:,.0f}" if count_known else ""
    crit = (
        f"at or past {fmt_tokens(reg.critical_seq_len)}"
        if reg.critical_seq_len is not None
        else "none is: no length reaches the threshold"
    )
    return (
        f"On {link_name}, {reg.fraction_gain:.0%} of the{count} requests in "
        f"{source} gain from disaggregation (holding {reg.fraction_tokens_gain:.0%} of all "
        "prompt tokens); "
        f"{reg.fraction_too_short:.0%} are too short (under {reg.min_seq_len:,} tokens) and "
        f"{reg.fraction_transfer_bound:.0%} are transfer-bound ({crit})."
    )


def window_sentence(win) -> str:
    """Sentence from traffic.Window."""
    if not win.exists:
        return (
            f"No window: on this link requests are transfer-bound from "
            f"{fmt_tokens(win.l_max)}, before they are long enough ({win.l_min:,} tokens) to "
            "gain. Prefill locally, or change the link or mitigations."
        )
    upper = f"warn at {fmt_tokens(win.l_max)} and above" if win.l_max else "no upper limit"
    return (
        f"Prefill locally below {win.l_min:,} tokens ({win.fraction_local:.0%} of requests), "
        f"disaggregate from {win.l_min:,} tokens ({win.fraction_disaggregated:.0%}), {upper} "
        f"({win.fraction_warn:.0%})."
    )


def unreachable_reason(sc: Scenario, *, criterion: str = "step") -> str | None:
    """Why no bandwidth meets the target (``kvmodel.solve.unreachable``), or None when one does."""
    u = solve.unreachable(sc, criterion=criterion)
    if u is None:
        return None
    names = {
        "latency": "link latency"
        + (
            f" ({fmt_time(u.latency_s)} × {u.latency_chunks} layer chunks)"
            if u.latency_chunks > 1
            else ""
        ),
        "codec": f"{u.compression.upper()} quantize/dequantize",
        "descriptors": "transfer descriptors",
        "stack": f"the {u.stack} stack's per-request and message costs",
    }
    what = ", ".join(f"{names[kind]} {fmt_time(s)}" for s, kind in u.costs) or "none"
    if u.criterion == "step":
        target = f"the target of {fmt_time(u.target_s)} ({u.k:g} × decode step)"
        got = fmt_time(u.exposed_s)
    else:
        target = f"the {u.share_target:.0%} share-of-TTFT target"
        got = f"{fmt_time(u.exposed_s)} ({u.share_of_ttft:.1%} of TTFT)"
    overlap = " (sent layer-wise, part of them overlaps prefill)" if u.layerwise else ""
    return (
        f"unreachable at any bandwidth: with an infinitely fast link the decode node still "
        f"waits {got}, over {target}; the costs no bandwidth removes: {what}{overlap}"
    )


def not_buildable(sc: Scenario, link_ids) -> dict[str, str]:
    """Link id → why it cannot be built at the scenario's TPs ('not buildable: TP 8 + TP 8 >
    one 8-GPU domain'), for the catalog links of ``link_ids`` that cannot
    (``topology.unbuildable_links``); the pages mark those rows instead of colouring them."""
    links = {i: catalog.get_link(i) for i in link_ids}
    blocked = unbuildable_links(sc.gpu, sc.gpus_prefill, sc.gpus_decode, links.values())
    pair = f"{par_text(sc.tp_prefill, sc.ep_prefill)} + {par_text(sc.tp_decode, sc.ep_decode)}"
    return {
        i: (f"not buildable: {pair} > one {domain_gpus(sc.gpu, links[i])}-GPU domain"
            if gpu_has_link(sc.gpu, links[i]) else f"not buildable: no such link on {sc.gpu.name}")
        for i in blocked
    }  # fmt: skip


def pd_parallelism(sc: Scenario) -> str:
    """Prefill → decode parallelism: 'TP 8 → 8', or with expert parallelism 'EP 32 → EP 72'
    (session 19's review: an EP deployment read 'TP 1 → 1', as if one GPU a side)."""
    if sc.ep_prefill == 1 and sc.ep_decode == 1:
        return f"TP {sc.tp_prefill} → {sc.tp_decode}"
    return f"{par_text(sc.tp_prefill, sc.ep_prefill)} → {par_text(sc.tp_decode, sc.ep_decode)}"


def scenario_line(sc: Scenario) -> str:
    """The scenario in one line, for an exported chart's subtitle: 'Llama-3.1-70B · 1,024
    tokens × 1 · 100 GbE (RoCE) · Mooncake … stack · TP 8 → 8 · tp attention · fp16 KV ·
    compression none · decode step 11.8 ms (estimated)'."""
    step = fmt_ms(sc.decode_step_s) + (" (estimated)" if sc.decode_step_estimated else "")
    parts = [
        sc.model.name,
        f"{sc.seq_len:,} tokens × {sc.batch:,}",
        sc.link.name,
        f"{sc.stack.name} stack",
        pd_parallelism(sc),
        f"{sc.attention_parallel} attention",
        f"{sc.kv_dtype} KV",
        f"compression {sc.compression}" + (", layer-wise" if sc.layerwise else ""),
        f"decode step {step}",
    ]
    return " · ".join(parts)


def compare_takeaway(table, a_label: str) -> str:
    """Compare's sentence from ``sweeps.mitigation_table`` of A and its variants (in ms,
    ``in_ms``), or from its rows (``sweeps.mitigation_rows``, in seconds): the lowest TTFT
    among the scenarios that can be built, and what was left out.  A variant slower than an
    unbuildable A is never said to be 'below' it (issue 24)."""
    if len(table) == 1:
        return "Only the sidebar's scenario (A) is set: add a variant above to compare with it."
    if isinstance(table, list):  # rows in seconds: in ms as in_ms makes them (× 1000)
        rows = [{"option": r["option"], "ttft_ms": r["ttft_s"] * 1e3,
                 "transfer_share": r["transfer_share"],
                 "ttft_saving_ms": r["ttft_saving_s"] * 1e3, "buildable": r["buildable"]}
                for r in table]  # fmt: skip
    else:  # plain records (boolean selections, idxmin and a row lookup cost ~0.5 ms a rerun)
        rows = records(table, ("option", "ttft_ms", "transfer_share", "ttft_saving_ms",
                               "buildable"))  # fmt: skip
    built = [r for r in rows if r["buildable"]]
    ok = [r for r in (built or rows) if r["ttft_ms"] == r["ttft_ms"]]  # idxmin skips NaN
    if not ok:  # no TTFT at all (every one NaN): nothing to rank
        return ("No scenario here has a time to first token to compare (every TTFT is "
                "undefined): check the inputs each variant changes.")  # fmt: skip
    best = min(ok, key=lambda r: r["ttft_ms"])  # the first of equals, as idxmin
    left_out = [str(r["option"]) for r in rows if not r["buildable"]] if built else []
    tail = f" Not buildable as set, so not ranked: {', '.join(left_out)}." if left_out else ""
    share = f"its transfer is {best['transfer_share']:.1%} of TTFT."
    if best["option"] == a_label:
        return (
            f"A (the sidebar) already has the lowest TTFT, {best['ttft_ms']:,.1f} ms; {share}"
            + tail
        )
    saving = best["ttft_saving_ms"]
    if saving > 0:
        return (f"Lowest TTFT: {best['option']} at {best['ttft_ms']:,.1f} ms, {saving:,.1f} ms "
                f"below A; {share}" + tail)  # fmt: skip
    return (f"Lowest TTFT among the buildable scenarios: {best['option']} at "
            f"{best['ttft_ms']:,.1f} ms, {-saving:,.1f} ms above A's (A cannot be built as set); "
            f"{share}" + tail)  # fmt: skip


def plural(n: int, noun: str) -> str:
    """'1 parallel link', '8 parallel links': the count and its noun (a plain 's' plural)."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def each_link(n: int) -> str:
    """'each of the 8 parallel links', or 'its one link'."""
    return "its one link" if n == 1 else f"each of the {n:,} parallel links"


def transfer_sum_text(ev: Evaluation) -> str:
    """The whole transfer as the sum of its terms (``Evaluation.transfer_terms``), the terms
    that are zero left out; sent layer by layer, how much of it the prefill hides."""
    terms = ev.transfer_terms
    parts = [f"{name} {fmt_ms(s, 3 if s < 1e-3 else 2)}" for name, s in terms.items() if s > 0]
    head = "Transfer" + (" (sent whole)" if not ev.scenario.layerwise else "")
    if not ev.scenario.layerwise:
        return f"{head} = {' + '.join(parts)} = {fmt_ms(ev.transfer_s, 2)}."
    return (
        f"Transfer, sent layer by layer while the prefill runs: its chunks take "
        f"{fmt_ms(ev.transfer_s, 2)} of link time in all (each layer's chunk pays the stack's "
        f"per-chunk cost), of which {fmt_ms(ev.exposed_s, 2)} is exposed after the prefill; "
        f"sent whole it would be {' + '.join(parts)}."
    )


def prefill_graph_text(sc: Scenario) -> str:
    """Why a short prompt's prefill pays a small kernel floor (""when it does not): the
    framework replays CUDA graphs for a pass that short (kvmodel.scenario.prefill_graphed_of)."""
    if not prefill_graphed_of(sc):
        return ""
    fw = catalog.get_framework(sc.framework)
    return (
        f" Kernel floor: {fw.name} replays CUDA graphs for a prefill pass of at most "
        f"{fw.prefill_graph_tokens:,} tokens, so this prompt's layers launch as the decode "
        "step's do; a longer pass launches its kernels one by one and pays more."
    )


def gemm_rows_text(sc: Scenario) -> str:
    """Why a step of few requests pays for more GEMM rows than it has (""when it does not):
    the tensor cores' fewest rows (``GpuSpec.mma_min_rows``; kvmodel.timing.decode_step_parts)."""
    rows = sc.decode_gpu.mma_min_rows
    if not sc.decode_step_estimated or rows <= 1 or sc.batch >= rows:
        return ""
    return (
        f" GEMM FLOPs: {sc.decode_gpu.name}'s tensor cores compute at least {rows} token rows "
        f"per instruction, so a step of {plural(int(sc.batch), 'request')} costs {rows} rows' "
        "FLOPs (on a GPU with few tensor FLOP/s, such as H20, more than reading the weights)."
    )
