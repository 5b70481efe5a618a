"""Prefill and decode on different GPUs (issue 22, item 5): step times, memory, NICs, cost."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kvmodel import capacity as cap
from kvmodel import catalog
from kvmodel import replay as rp
from kvmodel.build import build_scenario, inputs_from_scenario, scenario_from_inputs
from kvmodel.capacity.pools import decode_side
from kvmodel.capacity.workload import shape
from kvmodel.memory import instance_memory
from kvmodel.timing import estimate_decode_step_s
from kvmodel.topology import nics
from kvview import params as P

H100, H20 = catalog.get_gpu("h100-sxm"), catalog.get_gpu("h20")


@pytest.fixture(scope="module")
def pair():
    return build_scenario(model="llama-3.1-70b", link="100gbe", gpu="h100-sxm", gpu_decode="h20",
                          tp=8)  # fmt: skip


def test_same_gpu_is_no_decode_gpu():
    sc = build_scenario(gpu="h100-sxm", gpu_decode="h100-sxm")
    assert sc.gpu_decode is None and sc.decode_gpu == sc.gpu


def test_decode_side_steps_and_memory_come_from_the_decode_gpu(pair):
    shp = shape(cap.Workload.fixed(10.0, 2048, 256), pair.model.max_context_tokens)
    dec = decode_side(pair, shp, 0.05, 8)
    steps = estimate_decode_step_s(pair.model, shp.decode_context, dec.batches, gpu=H20, tp=8,
                                   kv_dtype=pair.kv_dtype, framework=pair.framework,
                                   data_parallel_attention=pair.data_parallel_attention,
                                   )  # fmt: skip
    assert_allclose(dec.steps_s, steps)
    mem = instance_memory(pair.model, H20, tp=8, seq_len=shp.decode_context, batch=1,
                          kv_dtype=pair.kv_dtype)  # fmt: skip
    assert dec.max_concurrent == mem.max_concurrent_requests
    same = decode_side(replace(pair, gpu_decode=None), shp, 0.05, 8)
    # H20: 4.0 TB/s against H100's 3.35 TB/s and 96 GB against 80 GB (data/gpus.csv)
    assert dec.max_concurrent > same.max_concurrent


def test_transfer_uses_the_side_with_fewer_nics(pair):
    # H100 nodes: 8 NICs for 8 GPUs; H20 nodes: 4 (catalog): the slower side bounds it
    assert pair.streams == min(nics(H100, 8), nics(H20, 8)) == nics(H20, 8)


def test_replay_decodes_on_the_decode_gpu(pair):
    dep = rp.Deployment(pair, 8, 8, 2, 1)
    assert dep.decode_gpu == H20
    ctx = 1000
    mem = instance_memory(pair.model, H20, tp=8, seq_len=ctx, batch=1, kv_dtype=pair.kv_dtype)
    tokens = rp.sim.decode_capacity_tokens(pair, dep, ctx)
    assert_allclose(tokens, mem.usable_bytes_per_gpu / (mem.kv_bytes_per_request_per_gpu / ctx))
    table = rp.sim.StepTable(pair, dep, 4096, 64)
    want = estimate_decode_step_s(pair.model, 1024, 16, gpu=H20, tp=8, kv_dtype=pair.kv_dtype)
    assert_allclose(table(np.array([1024.0]), np.array([16.0])), [want], rtol=1e-9)


def test_plan_keys_and_costs(pair):
    wl = cap.Workload.fixed(20.0, 2048, 256)
    p = cap.plan(pair, wl, cap.Slo(2.0, 0.05), prefill_tp=8, decode_tp=8, gpu_price_per_hour=3.0,
                 gpu_price_decode_per_hour=1.5)  # fmt: skip
    j = p.to_json()
    assert (j["prefill_gpu"], j["decode_gpu"]) == ("h100-sxm", "h20")
    assert j["cost_per_hour"] == pytest.approx(p.prefill_gpus * 3.0 + p.decode_gpus * 1.5)
    per_token_hour = 20.0 * 256 * 3600  # output tokens per hour
    assert j["cost_per_million_output_tokens"] == pytest.approx(
        j["cost_per_hour"] / per_token_hour * 1e6
    )


def test_absurd_price_is_refused(pair):
    with pytest.raises(ValueError, match="at most"):
        cap.plan(pair, cap.Workload.fixed(1.0, 128, 16), cap.Slo(2.0, 0.05),
                 gpu_price_per_hour=1e300)  # fmt: skip


def test_link_round_trip_and_bad_id():
    values, warnings, _ = P.parse_query({"gpud": "h20", "stack": "ideal"})
    assert values["gpud"] == "h20" and not warnings
    sc = scenario_from_inputs(values)
    assert sc.decode_gpu.id == "h20" and inputs_from_scenario(sc)[0]["gpud"] == "h20"
    values, warnings, _ = P.parse_query({"gpud": "h2o", "stack": "ideal"})
    assert values["gpud"] == "" and any("gpud=" in w for w in warnings)
    assert scenario_from_inputs(P.parse_query({})[0]).gpu_decode is None  # old links: same GPU


def test_compare_takes_the_decode_gpu():
    values, warnings, _ = P.parse_query({"cmp": "gpud:h20", "stack": "mooncake"})
    assert values["cmp"] == "gpud:h20" and not warnings
    over_values, extra = P.variant_values(values, {"gpud": "h20"})
    assert scenario_from_inputs(over_values).decode_gpu.id == "h20" and not extra


def test_which_decode_gpu_cheapest_first():
    from kvmodel.capacity.pairs import decode_gpu_plans

    sc = build_scenario(model="llama-3.1-70b", link="100gbe", tp=8)
    wl, slo = cap.Workload.fixed(20.0, 2048, 256), cap.Slo(2.0, 0.05)
    df = decode_gpu_plans(sc, wl, slo, ["h20", "l40s", "a100-40"], gpu_price_per_hour=3.0,
                          gpu_price_decode_per_hour=2.0)  # fmt: skip
    assert df.decode_gpu.iloc[0] in ("h100-sxm", "h20", "l40s")  # the scenario's own is a row
    assert set(df.decode_gpu) == {"h100-sxm", "h20", "l40s", "a100-40"}
    ok = df[df.meets_slo.astype(bool)]
    assert list(ok.cost_per_hour) == sorted(ok.cost_per_hour)
    alone = cap.plan(replace(sc, gpu_decode=H20), wl, slo, gpu_price_per_hour=3.0,
                     gpu_price_decode_per_hour=2.0)  # fmt: skip
    row = df[df.decode_gpu == "h20"].iloc[0]
    assert row.decode_gpus == alone.decode_gpus and row.cost_per_hour == alone.cost_per_hour


def test_a_lone_decode_price_prices_one_gpu_type_but_not_another():
    """Only a decode price (priced / --gpu-price-decode): with one GPU type it prices every GPU
    (16 × $1.10 = $17.60); with decode on L40S and prefill on H100, pricing the H100s at the
    L40S's $1.10 was a wrong cost: now none is counted, and a note says why."""
    from kvmodel import capacity as cap
    from kvmodel.build import scenario_from_inputs

    wl = cap.Workload.fixed(5.0, 1024, 256)
    slo = cap.Slo(ttft_s=2.0, tpot_s=0.05, ttft_percentile=90.0)
    one = cap.plan(scenario_from_inputs({}), wl, slo, gpu_price_decode_per_hour=1.1)
    assert one.cost_per_hour == pytest.approx(one.disaggregated_gpus * 1.1)
    two = cap.plan(scenario_from_inputs({"gpud": "l40s"}), wl, slo, gpu_price_decode_per_hour=1.1)
    assert two.cost_per_hour is None and two.colocated_cost_per_hour is None
    assert two.cost_per_million_output_tokens is None
    assert any("no cost is counted" in n and "H100" in n for n in two.notes)
    both = cap.plan(scenario_from_inputs({"gpud": "l40s"}), wl, slo, gpu_price_per_hour=3.5,
                    gpu_price_decode_per_hour=1.1)  # fmt: skip
    assert both.cost_per_hour == pytest.approx(both.prefill_gpus * 3.5 + both.decode_gpus * 1.1)
