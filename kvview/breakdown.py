"""Tables of the model's time breakdowns and of its fidelity (pure pandas; no Streamlit)."""

from __future__ import annotations

import pandas as pd

from kvmodel import catalog
from kvmodel.steps import LABELS


def catalog_name(kind: str, item_id: str) -> str:
    """A catalog id's display name ("h200" → "NVIDIA H200 SXM 141GB"), the id when the catalog
    has none (a deployment's own model id): tables show names, as the sidebar does (a browser
    review, session 23: the Models page's sweep read "b200", "sglang")."""
    get = {"model": catalog.get_model, "gpu": catalog.get_gpu,
           "framework": catalog.get_framework}[kind]  # fmt: skip
    try:
        return get(item_id).name
    except (KeyError, ValueError):
        return item_id


def breakdown_frame(parts) -> pd.DataFrame:
    """One row per term of a ``kvmodel.steps.Parts``: its name, ``ms`` and ``share`` of the
    total (a fraction); the last row is the total (the sum of the rows above)."""
    ms = parts.as_ms()
    total = sum(ms.values())
    rows = [
        {"part": LABELS.get(k, k), "ms": v, "share": v / total if total else 0.0}
        for k, v in ms.items()
    ]
    rows.append({"part": "Total", "ms": total, "share": 1.0})
    return pd.DataFrame(rows)


def _ms_text(ms: float) -> str:
    """A part's time in ms as the Overview prints it: 3 decimals under 100 ms (a µs part of a
    decode step still shows), 1 under 10,000, none above (a 2.5-minute prefill reads
    "148,855", not "148,854.863")."""
    decimals = 3 if abs(ms) < 100 else 1 if abs(ms) < 10_000 else 0
    return f"{ms:,.{decimals}f}"


def breakdown_shown(parts) -> pd.DataFrame:
    """:func:`breakdown_frame` as the Overview shows it, indexed by part: ``ms`` as text
    (:func:`_ms_text`, thousands separators) and ``share`` in whole percent.  A static table
    of text (``st.table``) costs the browser less to redraw than a data grid (bench/README.md,
    Session 25: Overview's control → chart)."""
    frame = breakdown_frame(parts)
    return pd.DataFrame(
        {"ms": [_ms_text(v) for v in frame["ms"]],
         "share": [f"{100 * v:.0f}%" for v in frame["share"]]},
        index=pd.Index(frame["part"], name="part"),
    )  # fmt: skip


def fidelity_frames(rows: list[dict], summary: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary per figure and set, every point) for the Models page, times in ms."""
    head = pd.DataFrame(
        [
            {
                "figure": s["what"],
                "set": "fitted" if s["part"] == "fit" else "held out",
                "points": s["n"],
                "mean error [%]": 100 * s["mean_abs_error"],
                "worst error [%]": 100 * s["max_abs_error"],
                "worst point": s["worst"],
            }
            for s in summary
        ]  # fmt: skip
    )
    points = pd.DataFrame(  # the source third: last, it lay past the right edge at 1280 px
        [
            {
                "figure": r["what"],
                "set": "fitted" if r["part"] == "fit" else "held out",
                "source": f"{r['source']}: {r['source_ref']}",
                "measured [ms]": r["measured_ms"],
                "model [ms]": r["predicted_ms"],
                "model ÷ measured": r["ratio"],
                "known miss: why": r.get("known_miss") or "",  # beside the ratio it explains
                "measured": r["label"],
                "framework or stack": r["stack"],
            }
            for r in rows
        ]  # fmt: skip
    )
    return head, points


def sweep_frame(sweep: dict) -> pd.DataFrame:
    """The silicon sweep's served-TPOT ratios per model × GPU × framework (Models page)."""
    return pd.DataFrame(
        [
            {
                "model": catalog_name("model", g["model"]),
                "GPU": catalog_name("gpu", g["gpu"]),
                "framework": catalog_name("framework", g["framework"]),
                "runs": g["n"],
                "median model ÷ measured": g["median_ratio"],
                "10th – 90th percentile": f"{g['p10_ratio']:.2f} – {g['p90_ratio']:.2f}",
                f"within ±{sweep['band']:.0%} [%]": 100 * g["within_band"],
            }
            for g in sweep["groups"]
        ]  # fmt: skip
    )


def _side_unit(side: str) -> str:
    """What a side's tokens per node count: a prefill pool's input, a decode pool's output."""
    return {"prefill": "input", "decode": "output"}.get(side, "")


def deployments_frame(rows: list[dict]) -> pd.DataFrame:
    """Published deployments and peer plans beside this planner's (``capacity.deployments``):
    GPUs published and planned, and for one pool of a deployment its tokens/s per node.  The
    source second (last, it lay past the right edge at 1280 px), the side (the id names it
    too) beside the tokens/s it qualifies."""
    return pd.DataFrame(
        [
            {
                "deployment or plan": r["id"],
                "source": r["source"],
                "GPUs published": r["published_gpus"],
                "GPUs planned": r["planned_gpus"],
                "planned ÷ published": r["ratio"],
                "side": r["side"],
                "tokens/s per node measured": r["published_tokens_per_s_per_node"],
                "tokens/s per node planned": r["tokens_per_s_per_node"],
                "planned ÷ measured": r["throughput_ratio"],
                "tokens": _side_unit(r["side"]),
                "model, GPU": f"{catalog_name('model', r['model'])}, "
                f"{catalog_name('gpu', r['gpu'])}",
            }
            for r in rows
        ]  # fmt: skip
    )

