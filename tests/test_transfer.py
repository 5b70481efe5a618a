"""Transfer time, layer-wise overlap, TTFT and critical length against hand-computed values.

Article = ../shared/seed-article.txt ("Why KV Cache Transfer Becomes the Bottleneck ...").
"""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.transfer import critical_seq_len, evaluate, exposed_transfer_s, transfer

LLAMA70_BYTES_PER_TOKEN = 2 * 80 * 8 * 128 * 2  # article: 327,680 bytes per token


def article(link="100gbe", **kw):
    """The article's setting: Llama-3-70B, FP16, no latency (its numbers are bytes ÷ bandwidth)."""
    return build_scenario(model="llama-3-70b", link=link, latency_us=0.0, **kw)


def test_article_bytes_at_1024_tokens():
    # article: 327,680 × 1,024 = 335,544,320 bytes; × 32 ≈ 10.7 GB
    assert evaluate(article()).kv_total_bytes == 335_544_320
    assert evaluate(article(batch=32)).kv_total_bytes == 335_544_320 * 32


@pytest.mark.parametrize(
    "bandwidth_gbs, batch, article_ms",
    [
        # article table + text: NVLink (900 GB/s as the article counts it) 12 ms at batch 32;
        # IB NDR 6.7 ms single, 214 ms at 32; IB HDR 13 ms single; 100GbE 27 ms single, 856 ms
        # at 32 (the article rounds 10.7 GB before dividing; exactly it is 859 ms).
        (900, 32, 11.93),
        (50, 1, 6.71),
        (50, 32, 214.75),
        (25, 1, 13.42),
        (12.5, 1, 26.84),
        (12.5, 32, 859.0),
    ],
)
def test_article_link_table(bandwidth_gbs, batch, article_ms):
    ev = evaluate(article(bandwidth_gbs=bandwidth_gbs, batch=batch))
    assert_allclose(ev.transfer_s * 1e3, article_ms, rtol=2e-3)


def test_catalog_links_per_direction_halve_the_article_nvlink():
    # The catalog stores NVLink 4 per direction (450 GB/s): twice the article's 12 ms.
    ev = evaluate(article(link="nvlink4", batch=32))
    assert_allclose(ev.transfer_s, 335_544_320 * 32 / 450e9, rtol=1e-12)


def test_article_critical_length_on_100gbe():
    # article: S > 30 ms × 12.5 GB/s × 1024 / 336 MB ≈ 1,143; exactly 375e6 / 327,680 = 1144.4
    # so the smallest whole S with transfer ≥ 30 ms is 1,145.
    assert critical_seq_len(article()) == 1145
    # with the catalog latency of 100GbE (4 µs) it is still 1,145: (0.030 − 4e-6)·12.5e9/327,680
    assert evaluate(build_scenario(model="llama-3-70b", link="100gbe")).critical_seq_len == 1145


def test_transfer_adds_latency_and_efficiency():
    sc = build_scenario(model="llama-3-70b", link="ib-ndr", efficiency=0.8, latency_us=5)
    expected = 5e-6 + 335_544_320 / (50e9 * 0.8)
    assert_allclose(evaluate(sc).transfer_s, expected, rtol=1e-12)


def test_parallel_links_follow_tp():
    # TP 8 on both sides: 8 NICs move 8 shards at once → 8× the bandwidth.
    one = evaluate(article(link="ib-ndr"))
    eight = evaluate(article(link="ib-ndr", tp=8))
    assert eight.streams == 8
    assert_allclose(eight.transfer_s, one.transfer_s / 8, rtol=1e-12)
    mixed = evaluate(article(link="ib-ndr", tp=2, tp_decode=8))
    assert mixed.streams == 2


def test_int8_compression_halves_bytes_plus_scales_and_costs_codec_time():
    ev = evaluate(article(compression="int8"))
    # 1 byte per value + one FP16 scale per 128 values, against 2 bytes: ratio 0.5078125
    assert_allclose(ev.compression_ratio, (1 + 2 / 128) / 2)
    assert_allclose(ev.wire_bytes, 335_544_320 * 0.5078125)
    # quantize + dequantize at 1,000 GB/s of uncompressed KV each
    assert_allclose(ev.codec_s, 2 * 335_544_320 / 1e12)
    assert_allclose(ev.transfer_s, ev.wire_bytes / 12.5e9 + ev.codec_s)
    no_scales = evaluate(article(compression="int8", comp_group=0))
    assert_allclose(no_scales.wire_bytes, 335_544_320 / 2)


def test_fp8_cache_gains_nothing_from_fp8_transfer():
    ev = evaluate(article(kv_dtype="fp8", compression="fp8"))
    assert ev.compression_ratio == 1.0 and ev.codec_s == 0.0
    assert any("saves nothing" in n for n in ev.notes)


def test_layerwise_equal_chunks_closed_form():
    # n equal chunks: exposed = max(T/n, T − P (n−1)/n)
    for prefill_ms in (1.0, 10.0, 30.0, 300.0):
        sc = article(layerwise=True, prefill_ms=prefill_ms)
        t, p, n = 335_544_320 / 12.5e9, prefill_ms / 1e3, 80
        assert_allclose(evaluate(sc).exposed_s, max(t / n, t - p * (n - 1) / n), rtol=1e-9)


def test_layerwise_never_worse_than_whole_without_latency():
    sc = article(layerwise=True, prefill_ms=50)
    ev = evaluate(sc)
    assert ev.exposed_s <= evaluate(replace(sc, layerwise=False)).exposed_s


def test_descriptor_cost():
    # 1,024 tokens / 16 = 64 blocks × 2 tensors × 80 layers = 10,240 descriptors at 1 µs
    ev = evaluate(article(descriptor_us=1.0))
    assert_allclose(ev.descriptor_s, 10_240e-6)
    assert_allclose(ev.transfer_s, 335_544_320 / 12.5e9 + 10_240e-6)


def test_ttft_and_share():
    ev = evaluate(article(prefill_ms=200))
    t = 335_544_320 / 12.5e9
    assert_allclose(ev.ttft_s, 0.2 + t + 0.030)
    assert_allclose(ev.transfer_share_of_ttft, t / (0.2 + t + 0.030))
    assert not ev.over_share_target  # 10.4 % < 20 %
    assert evaluate(article(prefill_ms=50)).over_share_target  # 25.1 %


def test_prefill_estimate_formula():
    # The prefill from its parts (kvmodel.steps; docs/model.md), Llama-3-70B BF16, 1,024 tokens,
    # one H100 SXM: 989e12 BF16 FLOP/s × 0.7 and 3.35e12 B/s × 0.8 (data/gpus.csv defaults).
    # The old single-formula pin (0.542 ms × layers + FLOPs at 50 % MFU × TP^−0.214) is replaced:
    # the parts are fitted on four GPUs and four frameworks, not on Llama-70B on vLLM alone.
    flops_gemm = 2 * 70.6e9 * 1024
    flops_attn = 4 * 64 * 128 * 80 * 1024 * 1025 / 2
    hbm = 3.35e12 * 0.8
    memory = 70.6e9 * 2 / hbm  # the weights, read under the GEMMs
    # the softmax's exponentials, one per query head and (query, key) pair, 0.55 of them exposed
    # at H100's 132 SMs × 16 × 1.98 GHz = 4.18e12 a second (session 18: steps.EXP_EXPOSED_SHARE)
    softmax = 0.55 * 64 * 80 * 1024 * 1025 / 2 / 4.18e12
    compute = (flops_gemm + flops_attn) / (989e12 * 0.7) + softmax
    overlapped = (memory**2.5 + compute**2.5) ** (1 / 2.5)
    # The non-GEMM kernels' own passes (session 18, counted): 8 hidden vectors replicated on every
    # rank (two fused add + RMSNorm) and 5 + 3 × MLP width ÷ hidden split over TP, the width
    # from the parameters: (70.6e9 ÷ 80 − 4 × 8,192²) ÷ (3 × 8,192) = 24,986.6
    width = (70.6e9 / 80 - 4 * 8192**2) / (3 * 8192)
    split = 5 + 3 * width / 8192  # 14.15
    activations = 1024 * 80 * 8192 * 2 * (8 + split) / hbm
    floor = 274.6e-6 * 80  # steps.PREFILL_KERNEL_S_PER_LAYER (323 µs before session 24)
    assert_allclose(evaluate(article()).prefill_s, floor + overlapped + activations, rtol=1e-9)
    # TP 8: FLOPs, weights and the split passes 8 ways, plus 160 ring all-reduces of
    # 1,024 × 8,192 × 2 B = 16.8 MB at 10 µs each; past the custom all-reduce's 8 MiB, NCCL
    # runs them at its measured 0.77 of NVLink 4's 450 GB/s at 8 GPUs (session 18:
    # aiconfigurator's nccl_perf tables, kvmodel/steps.py)
    memory8 = 70.6e9 * 2 / 8 / hbm
    compute8 = compute / 8
    activations8 = 1024 * 80 * 8192 * 2 * (8 + split / 8) / hbm
    ring = 160 * (2 * 7 / 8 * 1024 * 8192 * 2 / (450e9 * 0.77) + 10e-6)
    tp8 = evaluate(article(tp=8)).prefill_s
    assert_allclose(tp8, floor + (memory8**2.5 + compute8**2.5) ** 0.4 + activations8 + ring,
                    rtol=1e-9)  # fmt: skip


def test_decode_lower_bound():
    # Llama 70B on 8 × H100: (70.6e9 × 2 B + KV) / (8 × 3.35 TB/s)
    ev = evaluate(article(tp=8))
    assert_allclose(ev.decode_step_lower_bound_s, (70.6e9 * 2 + 335_544_320) / (8 * 3350e9))


def test_critical_none_when_never_reached():
    # NVLink 4 at the full 131,072-token context: 131,072 × 327,680 B / 450 GB/s = 95.4 ms,
    # so it crosses 1 × 30 ms (at ceil(0.03 × 450e9 / 327,680) = 41,199) but never 4 × 30 ms.
    sc = article(link="nvlink4")
    assert critical_seq_len(sc) == 41_199
    assert critical_seq_len(replace(sc, k=4.0)) is None


@pytest.mark.parametrize("link", ["nvlink4", "ib-ndr", "100gbe"])
@pytest.mark.parametrize(
    "extra",
    [{}, {"descriptor_us": 2.0}, {"layerwise": True, "prefill_ms": 100}, {"compression": "int4"}],
)
def test_critical_consistent_with_transfer(link, extra):
    sc = build_scenario(model="llama-3.1-70b", link=link, **extra)
    s = critical_seq_len(sc)
    target = sc.k * sc.decode_step_s
    if s is None:
        assert exposed_transfer_s(sc, sc.model.max_context_tokens) < target
    else:
        assert exposed_transfer_s(sc, s) >= target
        assert s == 1 or exposed_transfer_s(sc, s - 1) < target


def test_critical_on_sliding_window_model_is_none_when_flat():
    # Mistral-7B keeps at most 4,096 tokens: 32 × 8 × 256 × 2 B × 4,096 = 536,870,912 B flat,
    # 43 ms on 100GbE → it crosses 30 ms before the window fills: S = ceil(0.03·12.5e9/131,072)
    sc = build_scenario(model="mistral-7b", link="100gbe", latency_us=0)
    assert critical_seq_len(sc) == int(np.ceil(0.030 * 12.5e9 / 131_072))
    assert critical_seq_len(replace(sc, k=2.0)) is None  # 86 ms never reached: flat at 43 ms


def test_array_equals_loop():
    sc = article(compression="int8", descriptor_us=1, layerwise=True, prefill_ms=40)
    seqs = np.array([1, 100, 1024, 5000, 70000])
    arr = transfer(sc, seq_len=seqs).exposed_s
    loop = [float(transfer(sc, seq_len=int(s)).exposed_s) for s in seqs]
    assert_allclose(arr, loop, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    s=st.integers(1, 100_000),
    b=st.integers(1, 64),
    link=st.sampled_from(["100gbe", "ib-ndr", "nvlink4", "pcie5"]),
)
def test_transfer_monotone_in_seq_and_batch(s, b, link):
    sc = build_scenario(model="gemma-3-27b", link=link, descriptor_us=0.5)
    t = transfer(sc, seq_len=np.array([s, s + 1, s + 1000]), batch=b).exposed_s
    assert np.all(np.diff(t) >= 0)
    assert float(transfer(sc, seq_len=s, batch=b + 1).exposed_s) >= float(
        transfer(sc, seq_len=s, batch=b).exposed_s
    )


@settings(max_examples=40, deadline=None)
@given(k=st.floats(0.1, 20), step_ms=st.floats(1, 200))
def test_critical_property(k, step_ms):
    sc = build_scenario(model="llama-3.1-8b", link="25gbe", k=k, decode_step_ms=step_ms)
    s = critical_seq_len(sc)
    target = k * step_ms / 1e3
    if s is None:
        assert exposed_transfer_s(sc, sc.model.max_context_tokens) < target
    else:
        assert exposed_transfer_s(sc, s) >= target
        assert s == 1 or exposed_transfer_s(sc, s - 1) < target


def test_every_catalog_link_and_model_evaluates():
    for mid in catalog.model_ids():
        for lid in ("100gbe", "nvlink4"):
            ev = evaluate(build_scenario(model=mid, link=lid, seq_len=1024))
            assert ev.transfer_s > 0 and 0 < ev.transfer_share_of_ttft < 1


@pytest.mark.parametrize(
    "kw, field",
    [
        ({"seq_len": 0}, "seq_len"),
        ({"batch": -1}, "batch"),
        ({"efficiency": 1.5}, "efficiency"),
        ({"tp": 3}, "tp=3"),
        ({"seq_len": 10_000_000}, "max context"),
        ({"decode_step_ms": 0}, "decode_step_s"),
        ({"bandwidth_gbs": -5}, "bandwidth"),
        ({"compression": "zip"}, "compression"),
    ],
)
def test_bad_values_raise_value_error_naming_the_field(kw, field):
    with pytest.raises(ValueError, match=field):
        build_scenario(model="llama-3.1-70b", **kw)


@settings(max_examples=60, deadline=None)
@given(
    max_s=st.integers(1, 300_000),
    cross=st.integers(1, 300_000),
)
def test_first_crossing_is_the_smallest_whole_crossing(max_s, cross):
    # a step at `cross` (monotone): exactly `cross` when it is within range, else None
    from kvmodel.transfer import first_crossing

    def g(s):
        s = np.asarray(s)
        return np.where(s >= cross, 1.0, 0.0)

    got = first_crossing(g, 0.5, max_s)
    assert got == (cross if cross <= max_s else None)


def test_first_crossing_non_monotone_finds_the_first_window():
    from kvmodel.transfer import first_crossing

    # above the target only on [5,000, 9,000]: found at its start, not at a later crossing
    def g(s):
        s = np.asarray(s)
        return ((s >= 5_000) & (s <= 9_000)).astype(float)

    assert first_crossing(g, 0.5, 131_072) == 5_000


def test_volume_reused_across_links_equals_fresh():
    from kvmodel.transfer import Volume

    sc = article(descriptor_us=1.0, layerwise=True, prefill_ms=40)
    vol = Volume(sc)
    for link in ("ib-ndr", "nvlink4"):
        for extra in ({}, {"compression": "int8", "layerwise": False}):
            other = replace(sc, link=catalog.get_link(link), **extra)
            assert vol.fits(other)
            a, b = transfer(other, volume=vol), transfer(other)
            assert_allclose(a.exposed_s, b.exposed_s, rtol=1e-12)
            assert_allclose(a.transfer_s, b.transfer_s, rtol=1e-12)
    # anything that changes the bytes or the prefill is refused, never silently reused
    for changed in (replace(sc, batch=2), replace(sc, kv_dtype="fp8"), replace(sc, prefill_s=0.1)):
        assert not vol.fits(changed)
        with pytest.raises(ValueError, match="volume"):
            transfer(changed, volume=vol)
    with pytest.raises(ValueError, match="volume"):
        transfer(sc, seq_len=10, volume=vol)


def test_a_stack_built_for_another_engine_is_named():
    # data/stacks.csv has Mooncake measured twice: under vLLM (MooncakeConnector, 0.395 ms a
    # request) and under SGLang (its own backend, 1.78 ms): serving with SGLang over vLLM's
    # build says so, and which stack is SGLang's own; matching pairs and other stacks say nothing
    from kvmodel.build import to_scenario
    from kvmodel.evaluation import evaluate as ev_of

    (note,) = ev_of(to_scenario({"fw": "sglang", "stack": "mooncake"})).notes
    assert "measured under vLLM" in note and "SGLang serves this scenario" in note
    assert "Mooncake Transfer Engine (SGLang backend) stack (1.78 ms per request" in note
    assert any("measured under SGLang" in n
               for n in ev_of(to_scenario({"fw": "vllm", "stack": "mooncake-sglang"})).notes)
    for q in ({"fw": "sglang", "stack": "mooncake-sglang"}, {"fw": "vllm", "stack": "mooncake"},
              {"fw": "sglang", "stack": "nixl"}, {"fw": "none", "stack": "mooncake"}):
        assert not [n for n in ev_of(to_scenario(q)).notes if "measured under" in n], q


def test_with_data_parallel_attention_one_decode_gpu_takes_whole_requests():
    # DeepSeek-V3 (MLA, served with data-parallel attention) at TP 8: each request's KV lives
    # on one decode rank, so at batch 1 one GPU receives all 71,958,528 B (a 1,024-token
    # cache), at batch 9 the busiest takes 2 requests, at batch 16 two each (the average)
    from kvmodel.evaluation import evaluate as ev_of

    one = ev_of(build_scenario(model="deepseek-v3", tp=8, batch=1))
    assert one.scenario.data_parallel_attention
    assert one.kv_per_gpu_decode_bytes == one.kv_total_bytes == 71_958_528
    nine = ev_of(build_scenario(model="deepseek-v3", tp=8, batch=9))
    assert nine.kv_per_gpu_decode_bytes == pytest.approx(2 * 71_958_528)
    sixteen = ev_of(build_scenario(model="deepseek-v3", tp=8, batch=16))
    assert sixteen.kv_per_gpu_decode_bytes == pytest.approx(sixteen.kv_total_bytes / 8)
