"""Verdicts and takeaway sentences (kvmodel.verdicts) carry the numbers."""

import pytest

from kvmodel.build import build_scenario
from kvmodel.sweeps import (
    link_batch_table,
    mitigation_options,
    mitigation_table,
    models_table,
    seq_sweep,
)
from kvmodel.transfer import evaluate
from kvmodel.verdicts import (
    interconnect_takeaway,
    mitigation_takeaway,
    models_takeaway,
    overview_takeaway,
    sequence_takeaway,
    step_verdict,
)


@pytest.mark.parametrize(
    "ratio, word",
    [(0.1, "comfortable"), (0.9, "borderline"), (1.5, "borderline"), (3, "transfer-bound")],
)
def test_step_verdict(ratio, word):
    assert step_verdict(ratio) == word


def test_takeaways_carry_the_numbers():
    sc = build_scenario(model="llama-3-70b", prefill_ms=200)
    ev = evaluate(sc)
    text = overview_takeaway(ev)
    assert "0.89 decode steps" in text and "borderline" in text and "1,145 tokens" in text
    t = link_batch_table(sc, ["nvlink4", "ib-ndr", "100gbe"], (1, 32))
    it = interconnect_takeaway(t, 32, (20, 50), "100gbe")
    assert "0 of 3" in it and "2 take longer than 50 ms" in it  # NVLink 23.9 ms is within
    _, crit = seq_sweep(sc, ["100gbe"])
    assert "1,145 tokens" in sequence_takeaway(crit, {"100gbe": "100 GbE"}, 0.03)
    mt = mitigation_takeaway(mitigation_table(sc, mitigation_options(sc)))
    assert mt.startswith("Baseline TTFT is 256.8 ms")
    assert "64× spread" in models_takeaway(models_table("fp16", 1024), "llama-3.1-70b")
