"""Reverse solver: minimum bandwidth, longest prompt, largest batch, cheapest mitigation."""

import math
from dataclasses import replace

import pytest

from kvmodel import catalog, solve
from kvmodel.build import build_scenario
from kvmodel.transfer import critical_seq_len, evaluate
from kvview.words import unreachable_reason

LLAMA70_1024_BYTES = 335_544_320  # 327,680 B/token × 1,024 tokens (fp16)


def article(**kw):
    """Llama-3-70B, FP16, 1,024 tokens, batch 1, no latency: bytes ÷ bandwidth."""
    kw.setdefault("latency_us", 0.0)
    kw.setdefault("link", "100gbe")
    return build_scenario(model="llama-3-70b", **kw)


def test_min_bandwidth_hand_computed():
    # 335,544,320 B must cross within one 30 ms decode step: 11.18 GB/s per direction
    bw = solve.min_bandwidth(article())
    assert bw == pytest.approx(LLAMA70_1024_BYTES / 0.030, rel=1e-3)
    assert bw >= LLAMA70_1024_BYTES / 0.030  # the upper end of the bracket: it meets the target


@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"latency_us": 50.0, "efficiency": 0.7},
        {"compression": "int8", "layerwise": True, "prefill_ms": 20.0, "seq_len": 8192},
        {"tp": 8, "seq_len": 32768, "descriptor_us": 0.01},
        {"layerwise": True, "batch": 4},
    ],
)
@pytest.mark.parametrize("criterion", ["step", "share"])
def test_min_bandwidth_is_the_boundary(kw, criterion):
    sc = article(**kw)
    bw = solve.min_bandwidth(sc, criterion=criterion)
    assert bw is not None
    assert solve.meets_target(solve.with_bandwidth(sc, bw), criterion=criterion)
    assert not solve.meets_target(solve.with_bandwidth(sc, 0.99 * bw), criterion=criterion)


def test_min_bandwidth_keeps_efficiency_and_streams():
    base = solve.min_bandwidth(article())
    assert solve.min_bandwidth(article(efficiency=0.5)) == pytest.approx(2 * base, rel=2e-3)
    # TP 2 → two parallel links each carrying half of the (sharded) cache
    assert solve.min_bandwidth(article(tp=2)) == pytest.approx(base / 2, rel=2e-3)


def test_min_bandwidth_share_hand_computed():
    # share ≤ 20 % with prefill 200 ms and step 30 ms: exposed ≤ 0.25 × 230 ms = 57.5 ms
    sc = article(prefill_ms=200.0)
    bw = solve.min_bandwidth(sc, criterion="share")
    assert bw == pytest.approx(LLAMA70_1024_BYTES / 0.0575, rel=1e-3)


def test_unreachable_latency():
    # the decode step is shorter than the link latency: no bandwidth helps
    sc = article(latency_us=100.0, decode_step_ms=0.05)
    assert solve.min_bandwidth(sc) is None
    reason = unreachable_reason(sc)
    assert "unreachable" in reason and "link latency" in reason
    assert unreachable_reason(article()) is None


def test_unreachable_codec_share():
    sc = article(compression="int8", codec_gbs=1.0, prefill_ms=100.0)
    assert solve.min_bandwidth(sc, criterion="share") is None
    assert "INT8 quantize/dequantize" in unreachable_reason(sc, criterion="share")


def test_unreachable_descriptors():
    sc = article(descriptor_us=100.0)
    assert solve.min_bandwidth(sc) is None
    assert "descriptors" in unreachable_reason(sc)


def test_max_seq_len_is_critical_minus_one():
    sc = article()
    assert critical_seq_len(sc) == 1145
    assert solve.max_seq_len(sc) == 1144
    for kw in ({"link": "ib-ndr"}, {"compression": "int8"}, {"layerwise": True, "prefill_ms": 5}):
        s = article(**kw)
        crit = critical_seq_len(s)
        assert solve.max_seq_len(s) == (s.model.max_context_tokens if crit is None else crit - 1)


def test_max_seq_len_share_boundary():
    sc = article(prefill_ms=200.0)
    s = solve.max_seq_len(sc, criterion="share")
    assert solve.meets_target(replace(sc, seq_len=s), criterion="share")
    assert not solve.meets_target(replace(sc, seq_len=s + 1), criterion="share")


def test_max_seq_len_edges():
    # NVLink 5 moves 900 GB/s × 60 ms = 54 GB ≫ 131,072 tokens × 327,680 B = 42.9 GB
    fast = article(link="nvlink5", k=2.0)
    assert critical_seq_len(fast) is None
    assert solve.max_seq_len(fast) == fast.model.max_context_tokens
    # even 1 token misses (a given 0.01 ms prefill: the estimate's per-layer floor alone is
    # 43 ms, which would keep the share small)
    slow = article(latency_us=100.0, decode_step_ms=0.05, prefill_ms=0.01)
    assert solve.max_seq_len(slow) is None
    assert solve.max_seq_len(slow, criterion="share") is None


def test_max_batch():
    # 83.9 MB → 6.7 ms per request on one 100GbE link: 4 fit in 30 ms.  TP 8 so the weights fit
    # (one link kept: the same transfer as the article's TP 1)
    sc = article(seq_len=256, tp=8, parallel_links=1)
    b = solve.max_batch(sc)
    assert b == 4
    assert solve.meets_target(replace(sc, batch=b)) and not solve.meets_target(replace(sc, batch=5))
    fast = article(link="nvlink5", seq_len=16, tp=8, parallel_links=1)
    assert solve.max_batch(fast, limit=1000) == 1000
    assert solve.max_batch(article(seq_len=4096, tp=8, parallel_links=1)) is None
    assert solve.max_batch(article(seq_len=256)) is None  # TP 1: 141 GB of weights on one H100
    with pytest.raises(ValueError, match="limit"):
        solve.max_batch(sc, limit=0)


def test_batch_cap_is_memory():
    # TP 8 on H100: 0.9 × 80 GB − 17.65 GB = 54.35 GB per GPU; one 131,072-token request is
    # 42.95 GB ÷ 8 = 5.37 GB per GPU → 10 requests, whatever the link could carry
    sc = article(link="nvlink5", seq_len=131_072, tp=8)
    assert solve.batch_cap(sc) == math.floor((0.9 * 80e9 - 70.6e9 * 2 / 8) / (42_949_672_960 / 8))
    assert solve.batch_cap(sc) == 10
    assert solve.max_batch(replace(sc, link=catalog.get_link("nvlink5")), limit=10**6) <= 10
    assert solve.batch_cap(article()) == 0  # TP 1: the weights do not fit


def test_bad_criterion():
    for fn in (solve.min_bandwidth, solve.max_seq_len, solve.max_batch, solve.cheapest_mitigation):
        with pytest.raises(ValueError, match="criterion"):
            fn(article(), criterion="ttft")


def test_cheapest_mitigation_lossless_first():
    # 26.8 ms against a 20 ms step; the estimated 339 ms prefill hides layer-wise sending,
    # which changes no value, so it comes before any compression
    sc = article(decode_step_ms=20.0)
    m = solve.cheapest_mitigation(sc)
    assert m.label == "100 GbE (RoCE) + layer-wise"
    assert [a.passed for a in m.tried] == [False, True]


def test_cheapest_mitigation_compression_suffices():
    # no prefill to overlap and no faster link: FP8 halves the bytes (+0.7 ms codec) and
    # suffices, and says it is lossy
    sc = article(decode_step_ms=20.0, prefill_ms=0.0)
    m = solve.cheapest_mitigation(sc, link_ids=[])
    assert m is not None
    assert m.scenario.compression == "fp8"
    assert m.scenario.link == sc.link and not m.scenario.layerwise
    assert m.label == "100 GbE (RoCE) + FP8 transfer (lossy: small accuracy risk)"
    assert [a.passed for a in m.tried] == [False, False, True]
    assert m.evaluation.exposed_s < 0.020


def test_cheapest_mitigation_needs_a_faster_link():
    # 8,192 tokens: 214.7 ms on 100GbE; even INT4 + layer-wise with a 10 ms prefill leaves ~51 ms
    sc = article(seq_len=8192, prefill_ms=10.0)
    m = solve.cheapest_mitigation(sc)
    assert m is not None
    assert m.scenario.link.bandwidth_bytes_per_s > sc.link.bandwidth_bytes_per_s
    assert m.scenario.link.id in catalog.links()
    on_link = [a for a in m.tried if a.scenario.link == sc.link]
    assert len(on_link) == 2 and not any(a.passed for a in on_link)  # as is, layer-wise
    assert all(a.scenario.compression == "none" for a in m.tried)  # lossless before lossy
    assert m.tried[-1].passed and not any(a.passed for a in m.tried[:-1])
    assert evaluate(m.scenario).exposed_s < sc.decode_step_s
    # links are tried slowest first
    bws = list(dict.fromkeys(a.scenario.link.bandwidth_bytes_per_s for a in m.tried))
    assert bws == sorted(bws)


def test_cheapest_mitigation_link_ids_and_none():
    sc = article(seq_len=8192, prefill_ms=10.0)
    m = solve.cheapest_mitigation(sc, link_ids=["nvlink4", "25gbe"])  # 25GbE is slower: skipped
    assert m.scenario.link.id == "nvlink4"
    assert m.label == "NVLink 4 (H100)"
    assert solve.cheapest_mitigation(sc, link_ids=[]) is None
    tried = solve.try_mitigations(sc, link_ids=[], stop_at_first=False)
    assert len(tried) == 8 and not any(a.passed for a in tried)
    # a decode step shorter than every catalog link's latency: nothing helps
    assert solve.cheapest_mitigation(article(decode_step_ms=0.001)) is None


def test_search_mitigations_returns_what_was_tried():
    sc = article(seq_len=8192, prefill_ms=10.0)
    mit, tried = solve.search_mitigations(sc)
    assert mit == solve.cheapest_mitigation(sc)
    assert tried == mit.tried and tried[-1].passed
    # nothing passes: the whole failed ladder, as try_mitigations without stopping
    mit, tried = solve.search_mitigations(sc, link_ids=[])
    assert mit is None
    assert list(tried) == solve.try_mitigations(sc, link_ids=[], stop_at_first=False)
    assert len(tried) == 8


def test_ladder_order_and_dedup():
    sc = article(compression="int8")
    labels = [o.label for o in solve.mitigation_ladder(sc, link_ids=[])]
    small, large = "(lossy: small accuracy risk)", "(lossy: the largest accuracy risk)"
    assert labels == [
        f"as is: 100 GbE (RoCE) + INT8 transfer {small}",
        "100 GbE (RoCE) + layer-wise",
        f"100 GbE (RoCE) + FP8 transfer {small}",
        f"100 GbE (RoCE) + FP8 transfer + layer-wise {small}",
        f"100 GbE (RoCE) + INT8 transfer + layer-wise {small}",
        f"100 GbE (RoCE) + INT4 transfer {large}",
        f"100 GbE (RoCE) + INT4 transfer + layer-wise {large}",
    ]


def test_nvlink_is_never_recommended_where_it_cannot_be_built():
    sc = article(seq_len=8192, prefill_ms=10.0, tp=8)  # 8 + 8 GPUs: no common HGX domain
    labels = [o.label for o in solve.mitigation_ladder(sc)]
    assert not any("NVLink" in lab for lab in labels)
    assert any("NVLink" in lab for lab in (o.label for o in solve.mitigation_ladder(article())))
    with pytest.raises(ValueError, match="link_ids"):
        solve.mitigation_ladder(sc, link_ids="ib-ndr")
    with pytest.raises(ValueError, match="unknown link"):
        solve.mitigation_ladder(sc, link_ids=["nope"])


def test_unreachable_names_the_stacks_costs():
    # NIXL posts 499,712 16-token blocks (8,192 tokens × 16 requests × 61 layers) at 3.75 µs over
    # 8 ranks: 234 ms no bandwidth removes
    sc = build_scenario(model="deepseek-v3", gpu="h200", seq_len=8192, batch=16, link="ib-ndr",
                        tp=8, stack="nixl")  # fmt: skip
    u = solve.unreachable(sc)
    assert u.costs[0][1] == "stack" and u.costs[0][0] == pytest.approx(0.285e-3 + 0.2342, rel=2e-3)
