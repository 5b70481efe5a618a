"""Sweeps and tables (kvmodel.sweeps) against kvmodel.transfer and the article's numbers."""

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kvmodel.build import build_scenario
from kvmodel.sweeps import (
    batch_sweep,
    link_batch_table,
    mitigation_options,
    mitigation_table,
    model_seq_sweep,
    models_table,
    seq_grid,
    seq_sweep,
    timeline,
)
from kvmodel.transfer import evaluate


def test_link_batch_table_matches_transfer():
    sc = build_scenario(model="llama-3-70b", latency_us=0)
    t = link_batch_table(sc, ["ib-ndr", "100gbe"], (1, 32))
    # article: IB NDR 6.7 / 214 ms; 100GbE 27 / 856 ms (exact 26.8 / 859.0); seconds inside
    assert_allclose(t["batch 1"], [6.71e-3, 26.84e-3], atol=1e-5)
    assert_allclose(t["batch 32"], [214.75e-3, 859.0e-3], atol=1e-5)
    long = batch_sweep(sc, ["ib-ndr"], [1, 32])
    assert_allclose(long["transfer_s"], [6.71e-3, 214.75e-3], atol=1e-5)


def test_seq_grid_and_sweep():
    g = seq_grid(131_072)
    assert g[0] == 128 and g[-1] == 131_072 and np.all(np.diff(g) > 0)
    sc = build_scenario(model="llama-3-70b")
    curves, crit = seq_sweep(sc, ["100gbe", "nvlink4"])
    assert set(curves["link"]) == {"100gbe", "nvlink4"}
    assert dict(zip(crit["link"], crit["critical_seq_len"], strict=True))["100gbe"] == 1145


def test_model_seq_sweep_clips_to_context():
    sc = build_scenario(model="llama-3-70b")
    df = model_seq_sweep(sc, ["llama-2-7b", "llama-3.1-8b"], [1024, 8192])
    assert list(df[df["model"] == "llama-2-7b"]["seq_len"]) == [1024]  # 4,096-token model


def test_models_table_bytes_per_token():
    t = models_table("fp16", 1024).set_index("model")
    assert t.loc["llama-3.1-70b", "bytes_per_token_short"] == 327_680
    assert t.loc["deepseek-v3", "bytes_per_token_short"] == 70_272
    # gemma-3-27b at 8,192 tokens: (10 × 8,192 × 8,192 + 52 × 8,192 × 1,024) / 8,192 B/token
    t8 = models_table("fp16", 8192).set_index("model")
    assert_allclose(
        t8.loc["gemma-3-27b", "bytes_per_token_at_seq"],
        (10 * 8192 * 8192 + 52 * 8192 * 1024) / 8192,
    )


def test_mitigation_table_savings_and_order():
    sc = build_scenario(model="llama-3-70b", prefill_ms=200)
    opts = mitigation_options(sc)
    t = mitigation_table(sc, opts)
    assert t.iloc[0]["option"] == "Baseline" and t.iloc[0]["ttft_saving_s"] == 0
    base = evaluate(sc)
    int8 = t[t["option"] == "INT8 transfer"].iloc[0]
    ev8 = evaluate(build_scenario(model="llama-3-70b", prefill_ms=200, compression="int8"))
    assert_allclose(int8["ttft_saving_s"], base.ttft_s - ev8.ttft_s)
    assert any("NVLink 4" in o for o in t["option"])  # the H100's scale-up link


def test_timeline_ends_where_ttft_ends():
    for kw in ({}, {"layerwise": True}, {"layerwise": True, "compression": "int8"}):
        sc = build_scenario(model="llama-3-70b", prefill_ms=100, **kw)
        tl = timeline(sc)
        ev = evaluate(sc)
        assert_allclose(tl["end_s"].max(), ev.ttft_s, rtol=1e-9)
        n_chunks = (tl["lane"] == "KV transfer").sum()
        assert n_chunks == (80 if kw.get("layerwise") else 1)


def test_every_time_column_is_in_seconds():
    sc = build_scenario(model="llama-3-70b", prefill_ms=100, layerwise=True)
    frames = [
        batch_sweep(sc, ["ib-ndr"], [1, 8]),
        seq_sweep(sc, ["ib-ndr"])[0],
        model_seq_sweep(sc, ["llama-2-7b"], [1024]),
        mitigation_table(sc, mitigation_options(sc)),
        timeline(sc),
    ]
    for df in frames:
        assert not [c for c in df.columns if c.endswith("_ms")], list(df.columns)


def test_model_sweep_uses_the_scenarios_tp_where_the_heads_allow():
    # Llama-3.1-70B (8 KV heads) at TP 8 sends over 8 links; Mistral-7B (8 heads) too; a TP the
    # heads do not allow falls to the largest one below it
    from kvmodel.sweeps import model_seq_sweep

    sc = build_scenario(model="llama-3.1-70b", tp=8, link="ib-ndr")
    df = model_seq_sweep(sc, ["llama-3.1-70b", "deepseek-v3"], [1024])
    assert set(df["tp"]) == {8}
    one = model_seq_sweep(replace(sc, tp_prefill=1, tp_decode=1), ["llama-3.1-70b"], [1024])
    assert float(df["transfer_s"].iloc[0]) < float(one["transfer_s"].iloc[0]) / 4  # 8 links


def test_stacked_is_the_concat_of_one_frame_per_block():
    """``sweeps.stacked`` makes the frame that a DataFrame per block and ``pd.concat`` made
    (the sweeps' old way): the same columns, dtypes, values and index."""
    import pandas as pd

    from kvmodel.sweeps import stacked

    blocks = [
        {"link": "a", "seq_len": np.array([1, 5]), "transfer_s": np.array([0.5, 0.25]), "tp": 2},
        {"link": "b", "seq_len": np.array([7]), "transfer_s": np.array([1.5]), "tp": 8},
        {"link": "c", "seq_len": np.array([2, 3, 4]), "transfer_s": np.array([1.0, 2, 3]), "tp": 1},
    ]
    expected = pd.concat([pd.DataFrame(b) for b in blocks], ignore_index=True)
    pd.testing.assert_frame_equal(stacked(blocks), expected, check_exact=True)
    assert list(stacked(blocks).dtypes) == list(expected.dtypes)
    with pytest.raises(ValueError):
        stacked([])


@pytest.mark.parametrize("attention", ["tp", "dp"])
@pytest.mark.parametrize("layerwise", [False, True])
def test_the_tables_over_batches_are_the_batch_free_scenarios(attention, layerwise):
    """Interconnects keys its tables over batches by ``batch_free(sc)``: every point sets its
    own batch, so the sidebar's batch changes nothing in them (data-parallel attention's
    streams per request and an estimated decode step included)."""
    from kvmodel.sweeps import batch_free

    sc = build_scenario(model="deepseek-v3", batch=48, tp=8, tp_decode=8, stack="nixl",
                        attention_parallel=attention, layerwise=layerwise)  # fmt: skip
    free = batch_free(sc)
    assert free.batch == 1 and batch_free(free) is free
    batches = [1, 2, 3, 8, 33, 256]
    links = ["nvlink4", "ib-ndr", "100gbe"]
    assert batch_sweep(sc, links, batches).equals(batch_sweep(free, links, batches))
    assert link_batch_table(sc, links, batches).equals(link_batch_table(free, links, batches))
