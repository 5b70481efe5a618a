"""Verdicts (kvmodel.verdicts): the takeaway sentences carry the numbers, and the share-of-TTFT
verdict, the one place "over" / "under" and "agree" are decided, against hand-computed shares."""

import pytest
from sweeps_ms import (
    link_batch_table,
    mitigation_options,
    mitigation_table,
    models_table,
    seq_sweep,
)

from kvmodel.build import build_scenario
from kvmodel.calibrate import compare_to_model
from kvmodel.measure import parse_prometheus_metrics
from kvmodel.transfer import evaluate
from kvmodel.verdicts import ShareVerdict, share_verdict, step_verdict
from kvview.words import (
    interconnect_takeaway,
    mitigation_takeaway,
    models_takeaway,
    overview_takeaway,
    sequence_takeaway,
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
    assert "own" not in it  # no step given: the band alone
    # a step below the band (an estimated 6.8 ms): how many links finish within it too
    mine = interconnect_takeaway(t, 32, (20, 50), "100gbe", step_ms=30.0)
    assert "own" not in mine  # inside the band: the band's verdict stands for it
    small = interconnect_takeaway(t, 1, (20, 50), "100gbe", step_ms=6.8, step_estimated=True)
    within = int((t["batch 1"] < 6.8).sum())
    assert f"own estimated decode step is 6.8 ms, outside that band: {within} of 3" in small
    assert small.endswith("finish within one such step (6.8 ms).")  # not 'within it' (band?)
    one = interconnect_takeaway(t.iloc[[2]], 32, (20, 50), "100gbe")  # 100 GbE alone: over
    assert "1 takes longer than 50 ms" in one  # not '1 take'
    _, crit = seq_sweep(sc, ["100gbe"])
    assert "1,145 tokens" in sequence_takeaway(crit, {"100gbe": "100 GbE"}, 0.03)
    mt = mitigation_takeaway(mitigation_table(sc, mitigation_options(sc)))
    assert mt.startswith("Baseline TTFT is 256.8 ms")
    said = models_takeaway(models_table("fp16", 1024), "llama-3.1-70b")
    assert "64× spread" in said and "(Falcon-7B, mqa)" in said and "(Llama-2-7B, mha)" in said


def test_mitigation_takeaway_breaks_a_tie_for_the_lossless_option_and_reads_long_times_in_s():
    """Session 19's review: INT8 + layer-wise (lossy) and layer-wise alone both give 122.5 ms
    (the codec's 0.03 ms aside): the sentence names the lossless one; a 199 s TTFT (Llama-3.1-70B
    at TP 8 on L40S, whose all-reduce goes through host memory) reads in seconds."""
    import pandas as pd

    rows = [("Baseline", 127.0, 0.039, 0.0, True, False),
            ("INT8 + layer-wise", 122.47, 0.004, 4.53, True, True),
            ("Layer-wise", 122.50, 0.004, 4.50, True, False),
            ("FP8 transfer", 124.8, 0.02, 2.2, True, True)]  # fmt: skip
    cols = ["option", "ttft_ms", "transfer_share", "ttft_saving_ms", "buildable", "lossy"]
    said = mitigation_takeaway(pd.DataFrame(rows, columns=cols))
    assert "Lowest TTFT here: Layer-wise (122.5 ms, −4.5 ms);" in said and "lossy" not in said
    assert "without changing the network or the values, the best is Layer-wise (−4.5 ms)" in said
    apart = [rows[0], rows[1], ("Layer-wise", 122.6, 0.004, 4.4, True, False)]
    said = mitigation_takeaway(pd.DataFrame(apart, columns=cols))  # 0.13 ms apart: no tie
    assert "Lowest TTFT here: INT8 + layer-wise (lossy: it changes the KV values)" in said
    slow = [("Baseline", 199_166.5, 0.003, 0.0, True, False),
            ("Layer-wise", 198_594.1, 0.0, 572.4, True, False)]  # fmt: skip
    said = mitigation_takeaway(pd.DataFrame(slow, columns=cols))
    assert said.startswith("Baseline TTFT is 199.2 s") and "(198.6 s, −572.4 ms)" in said


# Two engines' gap histograms and one TTFT histogram (the same numbers as
# tests/test_measure_prometheus.py's HIST): gap mean = (12.0 + 12.0) s / (40 + 20) = 0.4 s,
# TTFT mean = 90.0 s / 60 = 1.5 s, so the gap is 0.4 / 1.5 = 26.7 % of TTFT.
SCRAPE = """\
llm_kv_transfer_gap_seconds_bucket{engine="0",le="+Inf"} 40
llm_kv_transfer_gap_seconds_count{engine="0"} 40
llm_kv_transfer_gap_seconds_sum{engine="0"} 12.0
llm_kv_transfer_gap_seconds_bucket{engine="1",le="+Inf"} 20
llm_kv_transfer_gap_seconds_count{engine="1"} 20
llm_kv_transfer_gap_seconds_sum{engine="1"} 12.0
vllm:time_to_first_token_seconds_bucket{le="+Inf"} 60
vllm:time_to_first_token_seconds_count 60
vllm:time_to_first_token_seconds_sum 90.0
"""


def test_hand_computed_share_over_and_under():
    share = parse_prometheus_metrics(SCRAPE).transfer_share_of_ttft
    assert share == pytest.approx(0.4 / 1.5)
    assert share_verdict(share, share_target=0.2) == ShareVerdict(0.2, "over", None, share, None)
    assert share_verdict(share, share_target=0.3).measured == "under"


@pytest.mark.parametrize(
    ("share", "target", "expected"),
    [
        (0.0, 0.2, "under"),
        (0.2, 0.2, "under"),  # the line itself is not over it: share > target, strictly
        (0.2000001, 0.2, "over"),
        (5.36e-3 / 183.6e-3, 0.2, "under"),  # vllm_pd_metrics.prom: 5.36 ms of 183.6 ms, 2.9 %
        (1.0, 0.99, "over"),
        (None, 0.2, None),  # no TTFT in the scrape: no share, no verdict
    ],
)
def test_limit_cases(share, target, expected):
    assert share_verdict(share, share_target=target).measured == expected


@pytest.mark.parametrize(
    ("measured", "model", "agree"),
    [
        (0.1, 0.15, True),  # both under 20 %
        (0.3, 0.25, True),  # both over
        (0.3, 0.1, False),
        (0.1, 0.3, False),
        (0.3, 0.9, False),  # both over, but 3× apart: not the same deployment
        (0.04, 0.01, False),  # both under, 4× apart (the Measured page's 20-50× case)
        (None, 0.3, None),  # nothing measured to agree with
        (0.3, None, None),
    ],
)
def test_agree(measured, model, agree):  # (the 0.3 vs 0.25 case: same side, 1.2× apart)
    v = share_verdict(measured, share_target=0.2, model_share=model)
    assert v.agree is agree
    assert v.model == (None if model is None else "over" if model > 0.2 else "under")


@pytest.mark.parametrize("target", [0.0, 1.0, -0.1, 1.5])
def test_a_target_outside_0_1_is_refused(target):
    with pytest.raises(ValueError, match="share_target must be in"):
        share_verdict(0.1, share_target=target)


@pytest.mark.parametrize("link", ["100gbe", "25gbe", "ib-ndr", "nvlink4"])
def test_the_model_side_is_the_evaluations_own_verdict(link):
    sc = build_scenario(model="llama-3-70b", link=link)
    ev = evaluate(sc)
    cmp = compare_to_model(sc, parse_prometheus_metrics(SCRAPE))
    assert cmp.verdict == share_verdict(
        0.4 / 1.5, share_target=sc.share_target, model_share=ev.transfer_share_of_ttft
    )
    assert cmp.verdict.model == ("over" if ev.over_share_target else "under")
    assert cmp.verdict.agree is (cmp.verdict.model == "over")


def test_overview_sentence_gives_the_share_as_the_metric_does():
    # session 18's browser review: the sentence said "1% of TTFT" beside the tile's 0.6%
    from kvmodel.build import build_scenario
    from kvmodel.transfer import evaluate
    from kvview.words import overview_takeaway

    ev = evaluate(build_scenario(model="deepseek-v3", seq_len=8192, batch=8, link="ib-ndr",
                                 stack="mooncake"))  # fmt: skip
    share = ev.transfer_share_of_ttft  # 1.3 %: the old sentence rounded it to "1%"
    assert f"{share:.0%}" != f"{share:.1%}"
    assert f"it is {ev.transfer_share_of_ttft:.1%} of TTFT" in overview_takeaway(ev)


def test_mitigation_takeaway_never_calls_a_slower_option_a_saving():
    """A review's fuzz (session 23): at a 0.1 ms step layer-wise adds 0.3 ms; the sentence read
    "the best is Layer-wise (−-0.3 ms)".  Now a worse option is said to add its time."""
    import pandas as pd

    cols = ["option", "ttft_ms", "transfer_share", "ttft_saving_ms", "buildable", "lossy"]
    rows = [("Baseline", 41.2, 0.08, 0.0, True, False),
            ("INT4 transfer", 38.8, 0.01, 2.4, True, True),
            ("Layer-wise", 41.5, 0.0, -0.3, True, False)]  # fmt: skip
    said = mitigation_takeaway(pd.DataFrame(rows, columns=cols))
    assert "−-" not in said
    assert "without changing the network or the values, none lowers it (Layer-wise adds 0.3 ms)" \
        in said  # fmt: skip
    worse = [rows[0], ("Layer-wise", 41.5, 0.0, -0.3, True, False)]
    said = mitigation_takeaway(pd.DataFrame(worse, columns=cols))
    assert "No option lowers TTFT here: the closest, Layer-wise, adds 0.3 ms." in said
    same = [rows[0], ("Layer-wise", 41.2, 0.0, 0.0, True, False)]
    said = mitigation_takeaway(pd.DataFrame(same, columns=cols))
    assert "Layer-wise, leaves it unchanged" in said


def test_mitigation_takeaway_ties_only_what_it_shows_equal():
    """A review (session 23): Layer-wise at 122.56 ms was named the lowest, shown as 122.6 ms,
    beside INT8 + layer-wise's 122.52 ms shown as 122.5 (0.04 ms apart, under the old 0.05 ms
    tie); now a tie is equal as shown."""
    import pandas as pd

    cols = ["option", "ttft_ms", "transfer_share", "ttft_saving_ms", "buildable", "lossy"]
    rows = [("Baseline", 127.0, 0.039, 0.0, True, False),
            ("INT8 + layer-wise", 122.52, 0.004, 4.48, True, True),
            ("Layer-wise", 122.56, 0.004, 4.44, True, False)]  # fmt: skip
    said = mitigation_takeaway(pd.DataFrame(rows, columns=cols))
    assert "Lowest TTFT here: INT8 + layer-wise (lossy: it changes the KV values) (122.5 ms" in said
