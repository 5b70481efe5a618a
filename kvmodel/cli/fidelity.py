"""``python -m kvmodel fidelity``: every cited measurement beside the model's value."""

from __future__ import annotations

from .. import fidelity
from .output import emit


def cmd_fidelity(args):
    points = fidelity.all_points()
    rows = fidelity.point_rows(points)
    summary = fidelity.kind_summary(points)
    band = {k: list(v) for k, v in fidelity.HELD_OUT_BAND.items()}
    payload = {"points": rows, "summary": summary, "held_out_band": band}
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
    emit(args, payload, heads, table, notes + tail)
