"""The Capacity page's sentences, made from a ``kvmodel.capacity.CapacityPlan``.  No streamlit."""

from __future__ import annotations

import numpy as np

from kvmodel import catalog
from kvmodel.topology import par_text
from kvview.fmt import fmt_dollars, fmt_sig, fmt_time

LIMIT_WORDS = {
    "compute": "compute",
    "memory": "KV-cache memory",
    "tpot": "the TPOT target",
    "ttft": "the TTFT target",
    "link": "the link",
}


SIDEBAR_NOTE = (
    "From the sidebar the plan takes the model, GPU, interconnect (with its efficiency and "
    "parallel links), transfer stack, KV dtype, compression and layer-wise sending; it sets "
    "batches, prompt lengths and the prefill and decode times itself."
)


def gpus(n) -> str:
    n = int(n)
    return f"{n:,} GPU" if n == 1 else f"{n:,} GPUs"


TILE_EXACT_BELOW = 100_000  # a page tile shows counts up to 99,999 in full (six digits are cut)


def tile_gpus(n) -> str:
    """A GPU count short enough for a quarter-width tile: '47,932 GPUs', '123.5k GPUs',
    '1.24M GPUs' (the exact count goes in the tile's help: :func:`gpus`)."""
    n = int(n)
    if abs(n) < TILE_EXACT_BELOW:
        return gpus(n)
    if abs(n) < 1_000_000:
        return f"{n / 1e3:,.1f}k GPUs"
    return f"{n / 1e6:,.2f}M GPUs"


def tile_split(prefill: int, decode: int) -> tuple[str, str | None]:
    """The P:D tile's value and delta: '16 : 24' when short, else '1.99 : 1' with the counts
    below it."""
    full = f"{prefill:,} : {decode:,}"
    if len(full) <= 11 or decode <= 0:
        return full, None
    return f"{prefill / decode:,.2f} : 1", f"{full} GPUs"


def pct_label(p: float) -> str:
    """90.0 → 'p90', 99.9 → 'p99.9'."""
    return f"p{p:g}"


def pool_gpu_names(plan) -> tuple[str, str] | None:
    """(prefill GPU, decode GPU) names when the two pools run on different GPUs (``--gpu-decode``,
    URL ``gpud``), else None: one GPU type needs no naming per pool."""
    p, d = getattr(plan, "prefill_gpu", ""), getattr(plan, "decode_gpu", "")
    if not p or not d or p == d:
        return None
    return catalog.get_gpu(p).name, catalog.get_gpu(d).name


def split_text(plan) -> str:
    """'16 prefill (2 × TP 8) + 24 decode (3 × TP 8)'; 'EP 32' for an expert-parallel pool;
    each pool's GPU named when they differ ('… on NVIDIA H100 SXM 80GB + … on NVIDIA L40S')."""
    pe, de = getattr(plan, "prefill_ep", 1), getattr(plan, "decode_ep", 1)
    names = pool_gpu_names(plan)
    on_p, on_d = (f" on {names[0]}", f" on {names[1]}") if names else ("", "")
    return (
        f"{plan.prefill_gpus:,} prefill ({plan.prefill_instances:,} × "
        f"{par_text(plan.prefill_tp, pe)}){on_p} + {plan.decode_gpus:,} decode "
        f"({plan.decode_instances:,} × {par_text(plan.decode_tp, de)}){on_d}"
    )


def price_text(price: float | None, price_decode: float | None, plan) -> str:
    """'$3.50 per GPU-hour', or with a decode GPU of its own '$3.50 per prefill GPU-hour and
    $1.10 per decode GPU-hour' (no decode price: the decode GPUs cost the prefill price)."""
    if not pool_gpu_names(plan) and not price_decode:
        return f"${price:,.2f} per GPU-hour"
    d = price_decode or price
    return f"${price:,.2f} per prefill GPU-hour and ${d:,.2f} per decode GPU-hour"


def saves_text(saves) -> str:
    """The colocated − disaggregated difference as words ('saves 8 GPUs', 'costs 8 more');
    None (a side misses the targets: kvmodel.capacity counts no saving) as 'no saving'."""
    if saves is None:
        return "no saving counted: a side misses the targets"
    if saves > 0:
        return f"saves {gpus(saves)}"
    if saves < 0:
        n = int(-saves)
        return f"costs {n:,} more GPU{'' if n == 1 else 's'}"
    return "same GPUs"


def cheaper_text(saves) -> str:
    """Which option needs fewer GPUs, from colocated − disaggregated (None: not compared)."""
    if saves is None:
        return "not compared: a side misses the targets"
    if saves > 0:
        return "disaggregated is cheaper"
    return "colocated is cheaper" if saves < 0 else "a tie"


NO_TP = " No TP up to 64"  # what nearest_text says when no parallelism meets the targets


def nearest_text(plan, side: str) -> str:
    """Where an infeasible side meets the targets: ' At TP 8 it meets them with 32 GPUs
    (4 × TP 8).' ('' when the plan did not search or the side meets them)."""
    if side == "colocated":
        n, ok = plan.colocated_nearest, plan.colocated_feasible
    else:
        n, ok = plan.disaggregated_nearest, plan.disaggregated_feasible
    if ok or not getattr(plan, "nearest_searched", False):
        return ""
    if n is None:
        return f"{NO_TP} meets both targets {side}."  # "colocated", "disaggregated"
    if side == "colocated":
        par = par_text(n.tp, n.ep)
        return (
            f" The nearest parallelism that meets them is {par}: {gpus(n.gpus)} "
            f"({n.instances:,} × {par})."
        )
    pre, dec = par_text(n.prefill_tp, n.prefill_ep), par_text(n.decode_tp, n.decode_ep)
    return (
        f" The nearest parallelisms that meet them are prefill {pre} and decode {dec}: "
        f"{gpus(n.gpus)} ({n.prefill_instances:,} × {pre} + {n.decode_instances:,} × {dec})."
    )


def nearest_delta(plan, side: str) -> str:
    """The short form under an infeasible side's tile: 'TP 4: 32 GPUs meet them'."""
    n = plan.colocated_nearest if side == "colocated" else plan.disaggregated_nearest
    if n is None:
        return "misses the targets" if not plan.nearest_searched else "no TP meets them"
    if side == "colocated":
        pars = par_text(n.tp, n.ep)
    elif n.prefill_ep <= 1 and n.decode_ep <= 1:
        pars = f"TP {n.prefill_tp} / {n.decode_tp}"
    else:
        pars = f"{par_text(n.prefill_tp, n.prefill_ep)} / {par_text(n.decode_tp, n.decode_ep)}"
    return f"{pars}: {gpus(n.gpus)} meet them"


def limit_text(limits: dict, pool: str) -> str:
    what = limits.get(pool)
    return LIMIT_WORDS.get(what, str(what)) if what else "–"


def out_of_reach(plan, slo) -> list[str]:
    """Why the disaggregated pools miss a target at their parallelism whatever their size:
    the TPOT target under one request's decode step, the TTFT percentile over its target with
    the prefill pool sized for it (its floor: framework cost, prefill, transfer and first
    step); an instance that holds no request beside its weights (the pools' notes) when both
    times meet their targets.  Empty otherwise (more GPUs, a link or memory would have helped:
    the plan's notes say which)."""
    why = []
    if plan.tpot_s > slo.tpot_s:
        at = par_text(plan.decode_tp, plan.decode_ep)
        one = "even for one request" if plan.decode_batch <= 1.0 + 1e-9 else "at its batch"
        why.append(f"one decode step at {at} takes {fmt_time(plan.tpot_s)} {one}, over the "
                   f"TPOT target of {fmt_time(slo.tpot_s)}")  # fmt: skip
    if plan.ttft_s > slo.ttft_s and plan.limits.get("prefill") == "ttft":
        parts = plan.ttft_parts
        floor = plan.ttft_s - (parts.queue_s if parts is not None else 0.0)
        why.append(f"at {par_text(plan.prefill_tp, plan.prefill_ep)} a request's framework "
                   f"cost, prefill, transfer and first decode step alone take "
                   f"{fmt_time(floor)} at {pct_label(slo.ttft_percentile)}, over the TTFT "
                   f"target of {fmt_time(slo.ttft_s)}")  # fmt: skip
    if not why and plan.ttft_s <= slo.ttft_s and plan.tpot_s <= slo.tpot_s:
        # both times met, yet missed: an instance holds no request beside its weights (the
        # pools' own notes say which; more GPUs of this parallelism cannot help)
        why += [n for n in plan.notes if "cannot hold" in n]
    return why


def _missed_text(plan, slo) -> str:
    """The takeaway when no disaggregated plan meets the targets: why (a target out of reach
    at this parallelism) or what it reaches and what sized its pools, the nearest TP that
    meets them, and the colocated side."""
    why = out_of_reach(plan, slo)
    if why:
        head = (f"no disaggregated plan meets the targets: {'; '.join(why)}. No number of GPUs "
                "meets them at this parallelism, so no saving is counted.")  # fmt: skip
    else:
        pools = [pool for pool in ("prefill", "decode") if pool in plan.limits]
        binds = ", ".join(f"the {pool} pool {'sized ' if i == 0 else ''}by "
                          f"{limit_text(plan.limits, pool)}"
                          for i, pool in enumerate(pools))  # fmt: skip
        head = (f"no disaggregated plan meets the targets (with {gpus(plan.disaggregated_gpus)}"
                f": {pct_label(slo.ttft_percentile)} TTFT {fmt_time(plan.ttft_s)}, TPOT "
                f"{fmt_time(plan.tpot_s)}; {binds}), so no saving is counted.")  # fmt: skip
    colo_nearest = nearest_text(plan, "colocated")
    if colo_nearest.startswith(NO_TP) and nearest_text(plan, "disaggregated").startswith(NO_TP):
        colo_nearest = " No TP up to 64 meets them there either."  # not the same line twice
    colo = (
        f" Colocated serving meets them with {gpus(plan.colocated_gpus)}."
        if plan.colocated_meets_slo
        else " Colocated serving misses them too." + colo_nearest
    )
    return (
        f"{head}{nearest_text(plan, 'disaggregated')}{colo} Relax the targets, or pick a "
        "faster GPU or link, or a smaller model."
    )


def capacity_takeaway(plan, *, rps: float, slo, price: float | None = None) -> str:
    """Which option is cheaper for this traffic and these targets, and by how many GPUs."""
    target = (
        f"{pct_label(slo.ttft_percentile)} TTFT ≤ {fmt_time(slo.ttft_s)} and TPOT ≤ "
        f"{fmt_time(slo.tpot_s)}"
    )
    head = f"At {fmt_sig(rps, 3)} requests/s with {target}: "
    dis, col = plan.disaggregated_gpus, plan.colocated_gpus
    if not plan.meets_slo:
        return head + _missed_text(plan, slo)
    money = ""
    if price and plan.cost_per_hour is not None and plan.colocated_cost_per_hour is not None:
        diff = plan.colocated_cost_per_hour - plan.cost_per_hour
        money = f" ({fmt_dollars(abs(diff))} per hour {'less' if diff >= 0 else 'more'})"
    if not col:  # kvmodel.capacity: no colocated shape at all
        return (
            head + f"disaggregated serving needs {gpus(dis)} ({split_text(plan)}); colocated "
            "serving is not an option here: no colocated instance holds a decode batch beside "
            "a prefilling request."
        )
    if not plan.colocated_meets_slo:
        return (
            head + f"disaggregated serving needs {gpus(dis)} ({split_text(plan)}); colocated "
            f"serving at TP {plan.colocated_tp} does not meet the targets at any size (with "
            f"{gpus(col)}: {pct_label(slo.ttft_percentile)} TTFT "
            f"{fmt_time(plan.colocated_ttft_s)}, TPOT {fmt_time(plan.colocated_tpot_s)}), so no "
            f"saving is counted against it.{nearest_text(plan, 'colocated')}"
        )
    saves = col - dis
    if saves > 0:
        return (
            head + f"disaggregated serving is cheaper: {gpus(dis)} ({split_text(plan)}) "
            f"against {gpus(col)} colocated, {gpus(saves)} fewer{money}."
        )
    if saves < 0:
        return (
            head + f"colocated serving is cheaper: {gpus(col)} against {gpus(dis)} "
            f"disaggregated ({split_text(plan)}); disaggregation costs "
            f"{saves_text(saves).removeprefix('costs ')}{money}."
        )
    return (
        head + f"both need {gpus(dis)} ({split_text(plan)} disaggregated); disaggregation "
        "saves no GPUs here, so choose on latency or operations."
    )


def source_caption(label: str, fallback: str | None, output_len: int | None = None) -> str:
    """Where the traffic came from, why it fell back to a sample when it did, and the output
    length used when the traffic has none."""
    text = f"Traffic: {label}" + (f" ({fallback})" if fallback else "") + "."
    if output_len is not None:
        text += (
            f" It gives no output lengths (an upload is kept as counts per prompt length): "
            f"every request generates {output_len:,} tokens (Output tokens per request)."
        )
    return text


def plan_point(plan) -> tuple:
    """The plan at the user's own rate as :func:`crossover_sentence` takes it: (rate,
    disaggregated GPUs, colocated GPUs, disaggregated feasible, colocated feasible)."""
    return (plan.rps, plan.disaggregated_gpus, plan.colocated_gpus,
            bool(plan.disaggregated_feasible), bool(plan.colocated_feasible))  # fmt: skip


def with_point(sweep, point: tuple | None):
    """``sweep`` with the plan at the user's rate among its rows (rates ascending), so what
    the sentence says of that rate is what the plan above it says (session 19's review: at 20
    req/s between grid rates 17.8 and 21.5 the plan saved 2 GPUs and the sentence put 20 in
    'elsewhere colocated needs as few or fewer')."""
    if point is None or point[0] in set(sweep["rps"]):
        return sweep
    import pandas as pd

    rate, dis, col, dis_ok, col_ok = point
    row = {"rps": rate, "disaggregated_gpus": dis, "colocated_gpus": col, "meets_slo": dis_ok,
           "colocated_meets_slo": col_ok}  # fmt: skip
    cols = [c for c in row if c in sweep.columns]
    return pd.concat([sweep[cols], pd.DataFrame([{c: row[c] for c in cols}])]).sort_values("rps")


def crossover_sentence(sweep, rps: float, point: tuple | None = None) -> str:
    """Where the two curves of the rate sweep cross: from which rate disaggregation needs fewer
    GPUs than colocated serving, read off the sweep's rows (rates ascending) and, when given,
    the plan at the user's rate (``point``: :func:`plan_point`)."""
    sweep = with_point(sweep, point)
    r = sweep["rps"].to_numpy(dtype=float)
    col = sweep["colocated_gpus"].to_numpy(dtype=float)
    drawn = f"from {fmt_sig(r[0], 3)} to {fmt_sig(r[-1], 3)} requests/s"
    if not col.any():  # 0: no colocated shape at all (kvmodel.capacity)
        return f"No colocated instance can serve this traffic at any rate drawn, {drawn}."
    both = feasible_both(sweep)
    # a saving is counted only where both sides meet the targets
    fewer = (sweep["disaggregated_gpus"].to_numpy(dtype=float) < col) & both
    if not both.any():
        return (
            f"At no rate drawn, {drawn}, do both options meet the targets: no saving is "
            "counted (the missing points are gaps in the chart)."
        )
    gaps = "" if both.all() else (" Where a side misses the targets no saving is counted "
                                  "(gaps in the chart).")  # fmt: skip
    return crossing_text(fewer, r, rps, drawn) + gaps


def no_sweep_text(rates, rps: float, exc: Exception) -> str:
    """Why 'Across request rates' is missing: the sweep's rates cannot all be sized."""
    return (
        f"No sweep from {fmt_sig(rates[0], 3)} to {fmt_sig(rates[-1], 3)} requests/s: {exc}. "
        f"The plan at {fmt_sig(rps, 3)} requests/s is above; lower the request rate to see the "
        "sweep."
    )


def feasible_both(sweep) -> np.ndarray:
    """Per row of a rate sweep: both sides meet the targets (columns ``meets_slo`` and
    ``colocated_meets_slo``; a frame without them counts as feasible)."""
    n = len(sweep)
    dis = sweep["meets_slo"] if "meets_slo" in sweep else np.ones(n, dtype=bool)
    col = sweep["colocated_meets_slo"] if "colocated_meets_slo" in sweep else np.ones(n, bool)
    some = sweep["colocated_gpus"].to_numpy(dtype=float) > 0  # 0: no colocated shape
    return np.asarray(dis, dtype=bool) & np.asarray(col, dtype=bool) & some


def _runs(fewer: np.ndarray, r: np.ndarray) -> list[tuple[float, float]]:
    """(first, last) rate of each run of rates where disaggregation needs fewer GPUs."""
    edges = np.diff(np.concatenate(([0], fewer.astype(int), [0])))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(float(r[a]), float(r[b])) for a, b in zip(starts, ends, strict=True)]


def crossing_text(fewer: np.ndarray, r: np.ndarray, rps: float, drawn: str) -> str:
    """Where disaggregation needs fewer GPUs across a rate sweep (``fewer`` per rate ``r``), in
    a sentence: everywhere, nowhere, from a rate up, up to a rate, or every range."""
    if fewer.all():
        return f"Disaggregated serving needs fewer GPUs at every rate drawn, {drawn}."
    if not fewer.any():
        return f"Disaggregated serving never needs fewer GPUs than colocated {drawn}."
    runs = _runs(fewer, r)
    if len(runs) > 1:  # the lines cross more than once: name every range (the chart shades all)
        spans = [f"{fmt_sig(a, 3)}" if a == b else f"{fmt_sig(a, 3)}–{fmt_sig(b, 3)}"
                 for a, b in runs]  # fmt: skip
        if fewer[-1]:
            spans[-1] = f"from {fmt_sig(runs[-1][0], 3)} up"
        return (
            f"Disaggregated serving needs fewer GPUs at about {', '.join(spans[:-1])} and "
            f"{spans[-1]} requests/s (shaded); elsewhere colocated serving needs as few or fewer."
        )
    if fewer[-1]:
        start = float(r[len(fewer) - int(np.argmin(fewer[::-1]))])  # the last run of wins
        you = (
            f"{start / rps:,.2g}× your rate"
            if start > rps
            else "your rate included"
            if start < rps
            else "your rate"
        )
        return (
            f"Where the lines cross: disaggregated serving needs fewer GPUs from about "
            f"{fmt_sig(start, 3)} requests/s up ({you}; shaded)."
        )
    if fewer[0]:
        end = float(r[int(np.argmin(fewer)) - 1])
        return (
            f"Disaggregated serving needs fewer GPUs up to about {fmt_sig(end, 3)} requests/s; "
            "above it colocated serving needs as few or fewer (shaded: where disaggregation wins)."
        )
    return "Disaggregated serving needs fewer GPUs only at the shaded rates."


def optimistic_links(nets) -> dict[str, str]:
    """Interconnect name → 'optimistic' for the rows of ``capacity.network_plans`` whose
    scale-up link (NVLink) joins fewer GPUs than the deployment has."""
    return {
        r.link_name: f"{r.disaggregated_gpus:,} GPUs > one {r.domain_gpus:,}-GPU domain"
        for r in nets.itertuples(index=False)
        if r.domain_gpus and r.disaggregated_gpus > r.domain_gpus
    }


def network_caption(nets, current: str) -> str:
    """What the table of ``capacity.network_plans`` says: which interconnects need fewest GPUs
    (meeting the targets), what the others need, and which scale-up rows are optimistic."""
    rows = list(nets.itertuples(index=False))
    ok = [r for r in rows if r.meets_slo]
    if not ok:
        return (
            f"No interconnect here meets the targets. The first column is the sidebar's: {current}."
        )
    fewest = min(r.disaggregated_gpus for r in ok)
    best = [r.link_name for r in ok if r.disaggregated_gpus == fewest]
    more = [f"{r.link_name} {gpus(r.disaggregated_gpus)}" for r in ok
            if r.disaggregated_gpus != fewest]  # fmt: skip
    missed = [r.link_name for r in rows if not r.meets_slo]
    out = f"Fewest GPUs disaggregated: {gpus(fewest)} on {', '.join(best)}."
    if more:
        out += f" The others need more: {', '.join(more)}."
    if missed:
        out += f" Missing the targets: {', '.join(missed)}."
    for r in rows:
        if r.domain_gpus and r.disaggregated_gpus > r.domain_gpus:
            out += (f" {r.link_name} joins at most {r.domain_gpus:,} GPUs: a deployment of "
                    f"{r.disaggregated_gpus:,} sends part of its transfers over the scale-out "
                    "network, so its column is optimistic.")  # fmt: skip
    return out + f" The first column is the sidebar's interconnect: {current}."


TTFT_PART_NAMES = {"request": "framework", "queue": "queues", "prefill": "prefill",
                   "transfer": "transfer", "first_step": "first step"}  # fmt: skip


def ttft_parts_text(parts) -> str:
    """A planned TTFT percentile's parts (``kvmodel.steps.TtftParts``) in the order they
    happen, each in ms: "framework 37.7 + queues 73.9 + … ms"."""
    return " + ".join(f"{TTFT_PART_NAMES[k]} {v:,.1f}" for k, v in parts.as_ms().items()) + " ms"


def ttft_help(plan) -> str:
    """The TTFT tile's help: what the disaggregated TTFT is made of, with the plan's parts."""
    what = (
        "the framework's per-request cost (API server, tokenizer, P/D proxy), the prefill "
        "and link queues, the prefill, the exposed KV transfer and the first decode step"
    )
    if plan.ttft_parts is None:
        return what[0].upper() + what[1:]
    return f"{ttft_parts_text(plan.ttft_parts)}: {what}"
