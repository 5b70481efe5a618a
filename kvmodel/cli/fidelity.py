"""``python -m kvmodel fidelity``: every cited measurement beside the model's value."""

from __future__ import annotations

from .. import fidelity
from ..capacity.deployments import compared
from .output import emit


def cmd_fidelity(args):
    points = fidelity.all_points()
    rows = fidelity.point_rows(points)
    summary = fidelity.kind_summary(points)
    band = {k: list(v) for k, v in fidelity.HELD_OUT_BAND.items()}
    sweep = fidelity.sweep_summary()
    deployments = compared()
    payload = {"points": rows, "summary": summary, "held_out_band": band, "sweep": sweep,
               "deployments": deployments}  # fmt: skip
    table = [
        (r["what"], r["stack"], "fitted" if r["part"] == "fit" else "held out", r["label"],
         f"{r['measured_ms']:,.2f}", f"{r['predicted_ms']:,.2f}", f"{r['ratio']:.2f}")
        for r in rows
    ]  # fmt: skip
    notes = [
        f"{s['what']} ({'fitted' if s['part'] == 'fit' else 'held out'}, {s['n']} points): "
        f"mean error {s['mean_abs_error']:.1%}, worst {s['max_abs_error']:.1%} ({s['worst']})"
        for s in summary
    ]
    heads = ("figure", "stack or framework", "set", "measured", "measured ms", "model ms", "ratio")
    tail = ["Sources: data/fidelity/*.csv (--json lists each point's source)."]
    emit(args, payload, heads, table,
         notes + miss_lines(rows) + sweep_lines(sweep) + deployment_lines(deployments)
         + tail)  # fmt: skip


def miss_lines(rows: list[dict]) -> list[str]:
    """The held-out points known to leave the band, each with what is known of why (JSON: each
    point's ``known_miss``)."""
    misses = [r for r in rows if r["known_miss"]]
    if not misses:
        return []
    out = [f"Known misses ({len(misses)} held-out points outside the band; docs/model.md):"]
    out += [f"  {r['what']}, {r['label']}: {r['ratio']:.2f}× — {r['known_miss']}" for r in misses]
    return out


def sweep_lines(sweep: dict) -> list[str]:
    """The silicon sweep's served-TPOT ratios, overall and per GPU, one line each."""

    def line(name: str, g: dict) -> str:
        return (f"  {name}: {g['n']:,} rows, median {g['median_ratio']:.2f}×, 10–90 % "
                f"{g['p10_ratio']:.2f}–{g['p90_ratio']:.2f}×, {g['within_band']:.0%} within "
                f"±{sweep['band']:.0%}")  # fmt: skip

    head = (
        f"Served TPOT against {sweep['source']} (model ÷ measured, "
        "data/fidelity/silicon_agg.csv; it also holds the 157 silicon rows of compute.csv; "
        "only the MoE read efficiency was set on it, without compute.csv's held-out rows):"
    )
    return [head, line("all", sweep["overall"])] + [line(g["gpu"], g) for g in sweep["by_gpu"]]


def deployment_lines(rows: list[dict]) -> list[str]:
    """Published deployments and peer plans beside the planner's, one line each
    (``capacity.deployments.compared``)."""
    out = ["Published deployments and peer plans (planned ÷ published GPUs; planner ÷ measured "
           "tokens/s per node; data/fidelity/deployments.csv):"]  # fmt: skip
    for r in rows:
        line = (f"  {r['id']} ({r['model']}, {r['gpu']}, {r['side']}): {r['published_gpus']:,} "
                f"GPUs published, {r['planned_gpus']:,} planned ({r['ratio']:.2f}×)")  # fmt: skip
        if r["throughput_ratio"] is not None:
            unit = "input" if r["side"] == "prefill" else "output"
            line += (f"; {r['published_tokens_per_s_per_node']:,.0f} {unit} tokens/s per node "
                     f"measured, {r['tokens_per_s_per_node']:,.0f} planned "
                     f"({r['throughput_ratio']:.2f}×)")  # fmt: skip
        out.append(line)
    return out
