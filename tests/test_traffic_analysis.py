"""Traffic regions, prefix caching and the window (kvmodel.traffic.analysis), against
hand-computed values."""

from dataclasses import replace

import numpy as np
import pytest
from numpy.testing import assert_allclose
from traffic_helpers import requests_like

from kvmodel.build import build_scenario
from kvmodel.traffic import (
    classify,
    comparison,
    critical_for_traffic,
    mix_from_requests,
    recommended_window,
    regions,
)
from kvmodel.transfer import transfer

SC = build_scenario(model="llama-3-70b", link="100gbe")  # critical length 1,145 (article)


def test_regions_by_requests_and_tokens():
    # 64 and 100 are below 128 (too short); 500, 1000, 1144 gain; 1145 and 5000 are
    # transfer-bound (≥ 30 ms on 100GbE from 1,145 tokens)
    mix = mix_from_requests(requests_like([64, 100, 500, 1000, 1144, 1145, 5000]))
    r = regions(SC, mix)
    assert r.n_requests == 7 and r.critical_seq_len == 1145
    assert_allclose(
        [r.fraction_too_short, r.fraction_gain, r.fraction_transfer_bound], [2 / 7, 3 / 7, 2 / 7]
    )
    assert_allclose(
        r.fraction_tokens_gain, (500 + 1000 + 1144) / (64 + 100 + 500 + 1000 + 1144 + 1145 + 5000)
    )


def test_histogram_weights_equal_repeated_requests():
    a = regions(SC, mix_from_requests(requests_like([200, 2000], weights=np.array([3.0, 1.0]))))
    b = regions(SC, mix_from_requests(requests_like([200, 200, 200, 2000])))
    assert a == b
    assert a.fraction_gain == 0.75


def test_min_seq_len_and_share_criterion():
    mix = mix_from_requests(requests_like([100, 300, 3000, 30_000]))
    assert regions(SC, mix, min_seq_len=500).fraction_too_short == 0.5
    # share criterion: bound when exposed / (estimated prefill + exposed + step) > 20 %;
    # on 25GbE (3.125 GB/s) check each length against that definition directly
    slow = build_scenario(model="llama-3-70b", link="25gbe")
    lengths = [300, 3000, 100_000]  # 300 tokens: 16 % (the 43 ms prefill floor), 3,000: bound
    got = classify(slow, np.array(lengths), min_seq_len=128, criterion="share")
    t = transfer(replace(slow, prefill_s=None), seq_len=np.array(lengths))
    share = t.exposed_s / (t.prefill_s + t.exposed_s + slow.decode_step_s)
    assert list(got) == [2 if s > 0.2 else 1 for s in share]
    assert set(got) == {1, 2}  # both regions occur in this example
    # the share falls again at 100k tokens (quadratic prefill hides the transfer), so the
    # critical length is the first bound S, not a boundary for all longer prompts
    crit = critical_for_traffic(slow, criterion="share")
    assert crit is not None and 300 < crit <= 3000


def test_prefix_cache_hit_ratio_and_per_request_cached_tokens():
    # 2,000-token prompts: 60 % cached leaves 800 to move (gains); none cached → bound
    plain = regions(SC, mix_from_requests(requests_like([2000, 2000])))
    assert plain.fraction_transfer_bound == 1
    hit = regions(SC, mix_from_requests(requests_like([2000, 2000]), hit_ratio=0.6))
    assert hit.fraction_gain == 1
    per_req = regions(
        SC, mix_from_requests(requests_like([2000, 2000], cached=np.array([1536, 0])))
    )
    assert per_req.fraction_gain == 0.5 and per_req.fraction_transfer_bound == 0.5


def test_comparison_rows_and_compression_moves_the_boundary():
    mix = mix_from_requests(requests_like([200, 1500, 3000]))
    rows = comparison(
        SC, mix, link_ids=["100gbe", "ib-ndr"], compressions=("none", "int8"), layerwise=(False,)
    )
    assert len(rows) == 4
    by = {(r["link"], r["compression"]): r for r in rows}
    assert by[("100gbe", "none")]["fraction_requests_gain"] == pytest.approx(1 / 3)
    # INT8 halves the bytes: critical 2,148 tokens, so 1,500 now gains
    assert by[("100gbe", "int8")]["fraction_requests_gain"] == pytest.approx(2 / 3)
    assert by[("ib-ndr", "none")]["fraction_requests_gain"] == pytest.approx(1.0)


def test_window():
    mix = mix_from_requests(requests_like([50, 500, 1000, 2000]))
    w = recommended_window(SC, mix)
    assert (w.l_min, w.l_max, w.exists) == (128, 1145, True)
    assert_allclose(
        [w.fraction_local, w.fraction_disaggregated, w.fraction_warn], [0.25, 0.5, 0.25]
    )
    slow = build_scenario(model="llama-3-70b", link="25gbe")  # critical 287 tokens
    assert recommended_window(slow, mix, min_seq_len=300).exists is False


@pytest.mark.parametrize("bad", [-0.1, 1.0])
def test_bad_hit_ratio(bad):
    with pytest.raises(ValueError, match="hit_ratio"):
        mix_from_requests(requests_like([10]), hit_ratio=bad)


def test_requests_longer_than_the_max_context_count_as_that_long():
    # Llama-3.1-70B serves 131,072 tokens: a 10^12-token "request" (bad data, or a trace from
    # another model) counts as 131,072 tokens for its share of tokens, as for its transfer.
    assert SC.model.max_context_tokens == 131_072
    reg = regions(SC, mix_from_requests(requests_like([100, 2_000, 10**12])))
    assert reg.n_over_context == 1
    assert (reg.tokens_too_short, reg.tokens_gain, reg.tokens_transfer_bound) == (
        100,
        0,
        2_000 + 131_072,
    )
    assert reg.fraction_transfer_bound == pytest.approx(2 / 3)  # 2,000 and the long one
    assert regions(SC, mix_from_requests(requests_like([100, 2_000]))).n_over_context == 0


def test_thresholds_of_the_traffic_reuse_the_critical_lengths():
    # a new "too short" length or rate leaves every option's critical length as it was: the
    # comparison asks each once (memoised per scenario and criterion), and gets the article's
    # 1,145 tokens for 100GbE either way
    from kvmodel.traffic import comparison

    mix = mix_from_requests(requests_like([100, 900, 1200, 5000]))
    comparison(SC, mix, link_ids=["100gbe", "ib-ndr"], min_seq_len=128)
    before = critical_for_traffic.cache_info()
    rows = comparison(SC, mix, link_ids=["100gbe", "ib-ndr"], min_seq_len=256)
    after = critical_for_traffic.cache_info()
    assert after.misses == before.misses and after.hits - before.hits == len(rows) == 12
    plain = next(r for r in rows if r["link"] == "100gbe" and r["compression"] == "none"
                 and not r["layerwise"])  # fmt: skip
    assert plain["critical_seq_len"] == 1145
    assert critical_for_traffic(replace(SC, decode_step_s=SC.decode_step_s * 2)) > 1145


def test_a_cached_prefix_lengthens_the_prefill_the_share_criterion_sees():
    """Prompts of 1,000 tokens with 600 cached and of 400 with none both move 400 tokens; the
    mix keeps their mean prefix (300, by hand), the prefill of 400 tokens after 300 cached
    ones (timing.prefill_flops: their attention) is longer than from position 0, so the
    transfer's share of TTFT is smaller: on 25 GbE the 400-token request is transfer-bound
    under the share criterion without the prefix and gains with a longer one."""
    mix = mix_from_requests(requests_like([1000, 400], cached=np.array([600, 0])))
    assert mix.tokens.tolist() == [400] and mix.prefix.tolist() == [300.0]
    assert mix_from_requests(requests_like([1000, 400])).prefix is None
    sc = build_scenario(model="llama-3-70b", link="25gbe")
    plain = transfer(replace(sc, batch=1, prefill_s=None, seq_len=1), seq_len=np.array([400]))
    cached = transfer(replace(sc, batch=1, prefill_s=None, seq_len=1), seq_len=np.array([400]),
                      prefix=np.array([300.0]))  # fmt: skip
    assert float(cached.prefill_s[0]) > float(plain.prefill_s[0])
    deep = mix_from_requests(requests_like([40_400], cached=np.array([40_000])))
    assert deep.tokens.tolist() == [400]
    without = regions(sc, replace(deep, prefix=None), criterion="share")
    with_prefix = regions(sc, deep, criterion="share")
    assert without.fraction_transfer_bound == 1.0 and with_prefix.fraction_transfer_bound == 0.0


def test_the_comparison_at_another_too_short_length_is_tallied_afresh_from_kept_options():
    # the options' transfer-bound lengths are kept per scenario, mix and criterion: the
    # Traffic page's "too short" control re-tallies them; each row equals regions() of that
    # option's scenario at that length
    from kvmodel import catalog
    from kvmodel.traffic import comparison, regions

    mix = mix_from_requests(requests_like([100, 300, 900, 2000, 5000, 12000, 12000]))
    links = ["100gbe", "ib-ndr"]
    first = comparison(SC, mix, link_ids=links, min_seq_len=128)
    for minlen in (128, 129, 1000, 4096):
        for crit in ("step", "share"):
            rows = comparison(SC, mix, link_ids=links, min_seq_len=minlen, criterion=crit)
            assert len(rows) == len(first) == 12
            for row in rows:
                link, lw = catalog.get_link(row["link"]), row["layerwise"]
                s = replace(SC, link=link, compression=row["compression"], layerwise=lw)
                r = regions(s, mix, min_seq_len=minlen, criterion=crit)
                assert row["fraction_requests_gain"] == r.fraction_gain
                assert row["fraction_tokens_gain"] == r.fraction_tokens_gain
                assert row["fraction_transfer_bound"] == r.fraction_transfer_bound
                assert row["critical_seq_len"] == r.critical_seq_len


@pytest.mark.parametrize("query", [{"stack": "mooncake"}, {"stack": "mooncake", "link": "ib-ndr"},
                                   {"stack": "mooncake", "comp": "int8"},
                                   {"stack": "mooncake", "batch": "8", "seq": "8192"}])  # fmt: skip
def test_traffic_sees_the_batch_1_scenarios_decode_step_and_critical_length(query):
    """Traffic's one-request scenario keeps the sidebar's prompt length, so its estimated step
    and critical length are the batch-1 scenario's on every other page (its step was estimated
    at a 1-token context: 2,555 tokens on Traffic beside 2,559 on Overview; session 20)."""
    from kvmodel.build import scenario_from_inputs
    from kvmodel.critical import critical_seq_len
    from kvmodel.traffic import per_request_scenario

    sc = scenario_from_inputs(query)
    one = scenario_from_inputs({**query, "batch": "1"})
    tsc = per_request_scenario(sc)
    assert tsc.batch == 1 and tsc.decode_step_s == one.decode_step_s
    assert critical_seq_len(tsc) == critical_seq_len(one)
    from kvmodel.traffic.analysis import critical_for_traffic

    assert critical_for_traffic(sc) == critical_seq_len(one)  # what the Traffic page shows
