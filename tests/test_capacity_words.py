"""The Capacity page's sentences (kvview.capacity_words) on hand-made plans and sweeps."""

from dataclasses import replace

import pandas as pd
import pytest

from kvmodel import capacity as cap
from kvmodel.build import scenario_from_inputs
from kvview.capacity_words import (
    capacity_takeaway,
    cheaper_text,
    crossover_sentence,
    gpus,
    pct_label,
    saves_text,
    source_caption,
)

SLO = cap.Slo(ttft_s=2.0, tpot_s=0.05, ttft_percentile=90.0)


@pytest.fixture(scope="module")
def plan():
    return cap.plan(scenario_from_inputs({}), cap.Workload.fixed(20.0, 2048, 300), SLO)


def _sweep(dis, col, rates=(1.0, 2.0, 4.0, 8.0)):
    return pd.DataFrame({"rps": rates, "disaggregated_gpus": dis, "colocated_gpus": col})


def test_counts_and_labels():
    assert gpus(1) == "1 GPU" and gpus(1200) == "1,200 GPUs"
    assert pct_label(90.0) == "p90" and pct_label(99.9) == "p99.9"
    assert saves_text(8) == "saves 8 GPUs" and saves_text(-1) == "costs 1 more GPU"
    assert saves_text(0) == "same GPUs"
    assert cheaper_text(3) == "disaggregated is cheaper"
    assert cheaper_text(-3) == "colocated is cheaper" and cheaper_text(0) == "a tie"


@pytest.mark.parametrize(
    ("dis", "col", "says"),
    [
        # wins only at 8 req/s, the top rate: from 8 up, 8 ÷ 4 = 2× the rate asked
        ([8, 8, 8, 8], [4, 6, 8, 12], "from about 8 requests/s up (2× your rate; shaded)"),
        # wins from 2 req/s up: the rate asked (4) is inside
        ([8, 8, 8, 8], [4, 9, 9, 9], "from about 2 requests/s up (your rate included"),
        # wins at 1 and 2 req/s only
        ([4, 4, 8, 8], [8, 8, 8, 8], "fewer GPUs up to about 2 requests/s; above it colocated"),
        ([4, 4, 4, 4], [8, 8, 8, 8], "fewer GPUs at every rate drawn, from 1 to 8 requests/s"),
        ([8, 8, 8, 8], [8, 8, 8, 8], "never needs fewer GPUs than colocated from 1 to 8"),
        ([8, 4, 8, 8], [8, 8, 8, 4], "only at the shaded rates"),
    ],
)
def test_crossover_sentence(dis, col, says):
    assert says in crossover_sentence(_sweep(dis, col), rps=4.0)


def test_takeaway_names_the_cheaper_option_and_by_how_many(plan):
    win = replace(plan, disaggregated_gpus=16, colocated_gpus=24, prefill_gpus=8, decode_gpus=8,
                  prefill_instances=2, prefill_tp=4, decode_instances=1, decode_tp=8,
                  meets_slo=True, colocated_meets_slo=True, cost_per_hour=32.0,
                  colocated_cost_per_hour=48.0)  # fmt: skip
    text = capacity_takeaway(win, rps=20.0, slo=SLO, price=2.0)
    assert text.startswith("At 20 requests/s with p90 TTFT ≤ 2.00 s and TPOT ≤ 50.0 ms: ")
    assert "disaggregated serving is cheaper: 16 GPUs (8 prefill (2 × TP 4) + 8 decode " in text
    assert "against 24 GPUs colocated, 8 GPUs fewer ($16 per hour less)." in text  # 48 − 32
    lose = replace(win, colocated_gpus=12, colocated_cost_per_hour=24.0)
    text = capacity_takeaway(lose, rps=20.0, slo=SLO, price=2.0)
    assert "colocated serving is cheaper: 12 GPUs against 16 GPUs disaggregated" in text
    assert "disaggregation costs 4 more GPUs ($8 per hour more)." in text
    tie = replace(win, colocated_gpus=16)
    assert "both need 16 GPUs" in capacity_takeaway(tie, rps=20.0, slo=SLO)


def test_takeaway_when_a_side_misses_the_targets(plan):
    colo_misses = replace(plan, meets_slo=True, colocated_meets_slo=False)
    text = capacity_takeaway(colo_misses, rps=20.0, slo=SLO)
    assert f"colocated serving at TP {plan.colocated_tp} does not meet the targets at any " in text
    assert "so no saving is counted against it" in text
    missed = replace(plan, meets_slo=False, colocated_meets_slo=True)
    text = capacity_takeaway(missed, rps=20.0, slo=SLO)
    assert "no disaggregated plan meets the targets" in text
    assert f"Colocated serving meets them with {gpus(plan.colocated_gpus)}." in text


def test_source_caption():
    assert source_caption("A", None) == "Traffic: A."
    text = source_caption("A", "a sample: no upload", 300)
    assert text.startswith("Traffic: A (a sample: no upload).")
    assert "every request generates 300 tokens" in text


def test_no_colocated_shape_is_said_and_counts_no_saving(plan):
    none = replace(plan, colocated_gpus=0, colocated_meets_slo=False,
                   disaggregation_saves_gpus=None)  # fmt: skip
    assert "colocated serving is not an option here" in capacity_takeaway(none, rps=1.0, slo=SLO)
    # no colocated shape at 4 and 8 req/s: no saving is counted there (issue 24: never a
    # saving against a side that cannot serve the traffic), and the gaps are said
    says = crossover_sentence(_sweep([8, 8, 8, 8], [4, 6, 0, 0]), rps=4.0)
    assert "never needs fewer GPUs" in says
    assert "Where a side misses the targets no saving is counted (gaps in the chart)." in says
    assert "No colocated instance can serve" in crossover_sentence(_sweep([8] * 4, [0] * 4), 4.0)


def test_rates_above_a_thousand_are_written_out():
    sweep = _sweep([4, 4, 4, 4], [8, 8, 8, 8])
    sweep["rps"] = [17.8, 100.0, 1000.0, 2154.4]
    said = crossover_sentence(sweep, rps=200.0)
    assert "from 17.8 to 2,154 requests/s" in said and "e+" not in said


def test_network_caption_names_the_fewest_the_rest_and_optimistic_scale_up_rows():
    import pandas as pd

    from kvview.capacity_words import network_caption

    nets = pd.DataFrame({
        "link_name": ["100 GbE", "NVLink 4", "25 GbE", "PCIe"],
        "disaggregated_gpus": [24, 24, 32, 40],
        "meets_slo": [True, True, True, False],
        "domain_gpus": [0, 8, 0, 0],
    })  # fmt: skip
    said = network_caption(nets, "100 GbE")
    assert said.startswith("Fewest GPUs disaggregated: 24 GPUs on 100 GbE, NVLink 4.")
    assert "The others need more: 25 GbE 32 GPUs." in said
    assert "Missing the targets: PCIe." in said
    assert "NVLink 4 joins at most 8 GPUs: a deployment of 24" in said  # optimistic row
    assert said.endswith("The first column is the sidebar's interconnect: 100 GbE.")
    none = network_caption(nets.assign(meets_slo=False), "100 GbE")
    assert none.startswith("No interconnect here meets the targets")


def test_ttft_help_gives_the_plans_parts():
    from kvview.capacity_words import ttft_help

    sc = scenario_from_inputs({"stack": "ideal"})
    p = cap.plan(sc, cap.Workload.fixed(5, 1024, 256), cap.Slo(0.2, 0.015), prefill_tp=8,
                 decode_tp=8)  # fmt: skip
    text = ttft_help(p)
    # vLLM's 21.3 + 25.4 ms per P/D request, then the queues, prefill, transfer, first step
    assert text.startswith("framework 46.7 + queues ") and " + first step " in text
    assert "per-request cost" in text
    assert ttft_help(replace(p, ttft_parts=None)).startswith("The framework's per-request cost")


def test_tiles_keep_large_counts_short():
    from kvview.capacity_words import tile_gpus, tile_split

    assert tile_gpus(1) == "1 GPU" and tile_gpus(99_999) == "99,999 GPUs"
    assert tile_gpus(123_456) == "123.5k GPUs" and tile_gpus(1_236_000) == "1.24M GPUs"
    assert tile_split(16, 24) == ("16 : 24", None)
    # "28,792 : 14,480" is 15 characters: the ratio instead, the counts below it
    assert tile_split(28_792, 14_480) == ("1.99 : 1", "28,792 : 14,480 GPUs")


def test_money_keeps_the_cents_a_difference_lives_in():
    # session 18's browser review: $8.50 against $8 read "$0 per hour more" and "$8 / $8"
    from kvview.fmt import fmt_dollars

    assert [fmt_dollars(x) for x in (16, 8.5, 0.5, 1200, 0, -2.25, 7.999)] == [
        "$16", "$8.50", "$0.50", "$1,200", "$0", "-$2.25", "$8"]  # fmt: skip


def test_a_crossing_more_than_once_names_every_range():
    # session 18's browser review: the sentence named only the last range ("from about 17.8
    # requests/s up") where the chart also shaded 7.5-11
    import numpy as np

    from kvview.capacity_words import crossing_text

    r = np.array([2.0, 5.0, 7.5, 9.0, 11.0, 14.0, 17.8, 25.0])
    fewer = np.array([False, False, True, True, True, False, True, True])
    text = crossing_text(fewer, r, 10.0, "from 2 to 25 requests/s")
    assert text.startswith(
        "Disaggregated serving needs fewer GPUs at about 7.5–11 and from 17.8 up"
    )
    one = crossing_text(np.array([False] * 6 + [True, True]), r, 10.0, "")
    assert one.startswith("Where the lines cross: disaggregated serving needs fewer GPUs from")


def test_a_target_out_of_reach_is_said_with_its_floor():
    """A TTFT target under one request's own unloaded TTFT (default scenario, 1,024 + 256
    tokens at 5.53 req/s, p90 TTFT ≤ 80 ms): the summary gives that floor, which is the sum of
    the plan's TTFT parts without the queue (framework + prefill + transfer + first step), and
    no 'best' count; a TPOT target under the batch-1 step names the step."""
    slo = cap.Slo(ttft_s=0.08, tpot_s=0.005, ttft_percentile=90.0)
    p = cap.plan(scenario_from_inputs({}), cap.Workload.fixed(5.53, 1024, 256), slo)
    parts = p.ttft_parts
    floor = parts.request_s + parts.prefill_s + parts.transfer_s + parts.first_step_s
    assert floor > slo.ttft_s and p.tpot_s > slo.tpot_s
    from kvview.capacity_words import out_of_reach
    from kvview.fmt import fmt_time

    why = out_of_reach(p, slo)
    assert why[0] == (f"one decode step at TP {p.decode_tp} takes {fmt_time(p.tpot_s)} even "
                      "for one request, over the TPOT target of 5.0 ms")  # fmt: skip
    assert f"first decode step alone take {fmt_time(floor)} at p90" in why[1]
    text = capacity_takeaway(p, rps=5.53, slo=slo)
    assert "best" not in text and "so no saving is counted" in text
    met = cap.plan(scenario_from_inputs({}), cap.Workload.fixed(5.53, 1024, 256), SLO)
    assert out_of_reach(met, SLO) == []


def test_the_rates_sentence_counts_the_plan_at_the_users_own_rate():
    """Session 19's review: at 20 req/s, between the sweep's grid rates 17.8 and 21.5, the
    plan saved 2 GPUs while the sentence, read off the grid alone, put 20 req/s among the
    rates where colocated needs as few or fewer.  With the plan's own point among the rows the
    run of rates where disaggregation wins starts at the user's rate."""
    from kvview.capacity_words import plan_point, with_point

    sweep = _sweep([40, 40, 42, 44], [38, 40, 46, 50], rates=(14.7, 17.8, 21.5, 26.1))
    grid_only = crossover_sentence(sweep, rps=20.0)
    assert "from about 21.5 requests/s up" in grid_only
    point = (20.0, 38, 40, True, True)  # the plan: 38 disaggregated against 40 colocated
    said = crossover_sentence(sweep, rps=20.0, point=point)
    assert "needs fewer GPUs from about 20 requests/s up (your rate; shaded)" in said
    assert list(with_point(sweep, point)["rps"]) == [14.7, 17.8, 20.0, 21.5, 26.1]
    assert with_point(sweep, (17.8, 1, 2, True, True)) is sweep  # a grid rate: the grid's row
    p = cap.plan(scenario_from_inputs({}), cap.Workload.fixed(20.0, 2048, 300), SLO)
    assert plan_point(p) == (20.0, p.disaggregated_gpus, p.colocated_gpus,
                             p.disaggregated_feasible, p.colocated_feasible)  # fmt: skip
