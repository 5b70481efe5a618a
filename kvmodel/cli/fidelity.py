"""``python -m kvmodel fidelity``: every cited measurement beside the model's value."""

from __future__ import annotations

from .. import fidelity
from .output import emit


def cmd_fidelity(args):
    points = fidelity.all_points()
    rows = fidelity.point_rows(points)
    summary = fidelity.kind_summary(points)
    band = {k: list(v) for k, v in fidelity.HELD_OUT_BAND.items()}
    sweep = fidelity.sweep_summary()
    payload = {"points": rows, "summary": summary, "held_out_band": band, "sweep": sweep}
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
    emit(args, payload, heads, table, notes + sweep_lines(sweep) + tail)


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
