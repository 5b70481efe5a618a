"""Refit the compute-time constants on the ``fit`` rows of data/fidelity/compute.csv.

Coordinate descent on the mean squared log ratio (model ÷ measured) over the constants of
``kvmodel.steps`` and the per-framework costs of data/frameworks.csv; held-out rows are never
read.  Prints the values to paste into kvmodel/steps.py and data/frameworks.csv, and the
errors fitted and held out.  Run: ``.venv/bin/python bench/fit_compute.py``.

``--fine`` goes on from there with smaller steps (±10 %, ±5 %, ±2 %) until none helps, printing
the constants after each: the fit is flat along the trade-off between a request's cost and the
per-layer prefill floor, so they keep drifting for little gain (docs/model.md, Fidelity,
session 24); the constants in the repository are the coarse steps' fixed point.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kvmodel import catalog, evaluation, fidelity, scenario, steps, wire  # noqa: E402

# MOE_READ_EFFICIENCY is set on the wider silicon sweep (kvmodel/steps.py says why), not here.
# The activation passes of a prefill are counted, not fitted (kvmodel/steps.py says how).
STEP_KNOBS = ("OVERLAP_P", "DECODE_KERNEL_S_PER_LAYER", "PREFILL_KERNEL_S_PER_LAYER")
FW_KNOBS = (("vllm", "request_s"), ("vllm", "pd_request_s"), ("sglang", "request_s"),
            ("sglang", "pd_request_s"), ("trtllm", "request_s"), ("vllm", "step_s"),
            ("sglang", "step_s"), ("trtllm", "step_s"))  # fmt: skip


def _clear():
    scenario.clear_estimate_caches()
    evaluation.evaluate.cache_clear()
    wire.clear_volumes()  # a kept Volume holds its prefill: the P/D TTFT rows read it


def loss(part: str = "fit") -> tuple[float, dict]:
    _clear()
    pts = [p for p in fidelity.compute_points() if p.part == part]
    logs = np.array([np.log(p.predicted_s / p.measured_s) for p in pts])
    by: dict = {}
    for p in pts:
        by.setdefault(p.what, []).append(abs(p.error))
    return float(np.mean(logs**2)), {k: float(np.mean(v)) for k, v in by.items()}


def _set_fw(fw_id: str, field: str, value: float) -> None:
    table = catalog.frameworks()
    table[fw_id] = replace(table[fw_id], **{field: max(0.0, value)})


def _get(knob):
    if isinstance(knob, str):
        return getattr(steps, knob)
    return getattr(catalog.frameworks()[knob[0]], knob[1])


def _put(knob, value):
    if isinstance(knob, str):
        setattr(steps, knob, value)
    else:
        _set_fw(knob[0], knob[1], value)


def _sweep(knobs, factors, best: float) -> tuple[float, bool]:
    """One pass over ``knobs``, each tried at its value × ``factors``; keeps what lowers the
    loss.  Returns the best loss and whether any knob moved."""
    moved = False
    for knob in knobs:
        x0 = _get(knob)
        for f in factors:
            x = x0 * f if x0 else (0.005 if f > 1 else 0.0)
            if knob == "OVERLAP_P" and x < 1.0:
                continue
            _put(knob, x)
            score, _ = loss()
            if score < best - 1e-12:
                best, x0, moved = score, x, True
        _put(knob, x0)
    return best, moved


def fit(rounds: int = 3, fine: bool = False) -> None:
    knobs = [*STEP_KNOBS, *FW_KNOBS]
    best, _ = loss()
    for _ in range(rounds):
        best, _ = _sweep(knobs, (0.5, 0.7, 0.85, 1.15, 1.4, 2.0), best)
    for knob in knobs:
        print(knob, _get(knob))
    if fine:
        for step in (1.1, 1.05, 1.02):
            moved = True
            while moved:
                best, moved = _sweep(knobs, (1 / step, step), best)
            print(f"after steps of ±{step - 1:.0%}: loss {best:.6f}",
                  {str(k): f"{_get(k):.4g}" for k in knobs})  # fmt: skip
    print("fit", loss("fit"))
    print("holdout", loss("holdout"))


if __name__ == "__main__":
    fit(fine="--fine" in sys.argv[1:])
