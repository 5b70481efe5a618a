"""Realistic time: memory, nodes and NICs, data-parallel attention, sliding windows on the wire,
stack costs of layer-wise sending, and the estimated decode step (issue 12), hand-computed."""

import math
from dataclasses import replace

import pytest
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.memory import USABLE_FRACTION, instance_memory, weights_bytes_per_gpu
from kvmodel.specs import StackSpec
from kvmodel.topology import default_streams, nics, scale_up_feasible
from kvmodel.transfer import evaluate, transfer

H100 = catalog.get_gpu("h100-sxm")


# ---------------------------------------------------------------- memory


def test_llama_70b_does_not_fit_one_h100_but_fits_tp8():
    m = catalog.get_model("llama-3.1-70b")
    # 70.6e9 parameters × 2 B = 141.2 GB on one GPU, 17.65 GB at TP 8
    assert weights_bytes_per_gpu(m, 1) == pytest.approx(141.2e9)
    assert weights_bytes_per_gpu(m, 8) == pytest.approx(17.65e9)
    ev1 = evaluate(build_scenario(model=m, tp=1))
    assert not ev1.fits_in_memory and ev1.max_concurrent_requests == 0
    assert any("weights do not fit" in n for n in ev1.notes)
    # TP 8: usable 0.9 × 80 GB − 17.65 GB = 54.35 GB per GPU; one 1,024-token request holds
    # 335,544,320 B ÷ 8 = 41.9 MB per GPU → ⌊54.35e9 ÷ 41,943,040⌋ = 1,295 requests
    ev8 = evaluate(build_scenario(model=m, tp=8))
    assert ev8.fits_in_memory
    assert ev8.max_concurrent_requests == math.floor((0.9 * 80e9 - 17.65e9) / (335_544_320 / 8))
    assert ev8.max_concurrent_requests == 1295


def test_a_memory_warning_names_the_gpu_of_its_own_side():
    """Prefill on H100, decode on L40S, both at TP 1: the decode side's warning names the L40S
    and its 0.9 × 48 GB = 43.2 GB (it once named the prefill GPU's 72.0 GB for both)."""
    m = catalog.get_model("llama-3.1-70b")
    ev = evaluate(build_scenario(model=m, tp=1, gpu="h100-sxm", gpu_decode="l40s"))
    (pre,) = [n for n in ev.notes if "on the prefill GPUs" in n]
    (dec,) = [n for n in ev.notes if "on the decode GPUs" in n]
    assert "NVIDIA H100 SXM 80GB offers 72.0 GB usable" in pre
    assert "NVIDIA L40S offers 43.2 GB usable" in dec


def test_fp8_checkpoint_weights_are_one_byte():
    m = catalog.get_model("llama-3.1-70b-fp8")
    assert m.weight_dtype == "fp8"
    assert weights_bytes_per_gpu(m, 2) == pytest.approx(70.6e9 / 2)


def test_batch_over_memory_is_reported():
    sc = build_scenario(model="llama-3.1-70b", tp=8, seq_len=8192, batch=4096)
    ev = evaluate(sc)
    assert not ev.fits_in_memory
    assert any("does not fit in memory" in n for n in ev.notes)


def test_dp_attention_memory_holds_whole_requests_per_rank():
    m = catalog.get_model("deepseek-v3")
    h200 = catalog.get_gpu("h200")
    mem = instance_memory(m, h200, tp=8, seq_len=4096, batch=1, kv_dtype="bf16",
                          data_parallel_attention=True)  # fmt: skip
    # 671e9 × 1 B (FP8) ÷ 8 = 83.9 GB per GPU; 0.9 × 141 GB − that = 43.0 GB usable.
    # One request: 61 layers × 576 × 2 B × 4,096 tokens = 287.8 MB, all on one rank
    per_request = 61 * 576 * 2 * 4096
    usable = USABLE_FRACTION * 141e9 - m.params_total / 8
    assert mem.kv_bytes_per_request_per_gpu == pytest.approx(per_request)
    assert mem.max_concurrent_requests == 8 * math.floor(usable / per_request)


# ---------------------------------------------------------------- nodes, NICs, NVLink domain


def test_nics_per_instance():
    pcie = catalog.get_gpu("h100-pcie")  # 4 NICs for 8 GPUs
    assert [nics(pcie, tp) for tp in (1, 2, 4, 8)] == [1, 1, 2, 4]
    assert [nics(H100, tp) for tp in (1, 2, 8)] == [1, 2, 8]
    ib = catalog.get_link("ib-ndr")
    assert default_streams(pcie, ib, 8, 8) == 4
    assert default_streams(H100, catalog.get_link("nvlink4"), 8, 4) == 4  # per-GPU links


def test_streams_follow_the_nics_in_the_transfer():
    a = evaluate(build_scenario(gpu="h100-sxm", link="ib-ndr", tp=8))
    b = evaluate(build_scenario(gpu="h100-pcie", link="ib-ndr", tp=8))
    assert (a.streams, b.streams) == (8, 4)
    assert_allclose(b.serialization_s, 2 * a.serialization_s)


@pytest.mark.parametrize(
    "gpu, tp_p, tp_d, ok",
    [("h100-sxm", 4, 4, True), ("h100-sxm", 8, 8, False), ("gb200", 8, 8, True),
     ("gb200", 64, 8, True), ("gb200", 64, 16, False)],
)  # fmt: skip
def test_scale_up_needs_one_domain(gpu, tp_p, tp_d, ok):
    g = catalog.get_gpu(gpu)
    assert scale_up_feasible(g, tp_p, tp_d) is ok


def test_nvlink_between_tp8_instances_is_not_buildable_on_hgx():
    ev = evaluate(build_scenario(link="nvlink4", tp=8))
    assert ev.scale_up_feasible is False
    assert any("cannot carry the transfer" in n for n in ev.notes)
    assert evaluate(build_scenario(link="nvlink4", tp=4)).scale_up_feasible


# ---------------------------------------------------------------- DP attention, windows


def test_dp_attention_sends_the_latent_once():
    # DeepSeek-V3: one 576-value latent per layer per token; TP 8 replicates it on every rank
    # (8 copies on the wire), data-parallel attention sends it to one rank only.
    kw = dict(model="deepseek-v3", tp=8, seq_len=8192, batch=16, link="ib-ndr")
    tp = evaluate(build_scenario(**kw, attention_parallel="tp"))
    dp = evaluate(build_scenario(**kw, attention_parallel="dp"))
    one = 61 * 576 * 2 * 8192 * 16  # 9.21 GB
    assert dp.wire_bytes == pytest.approx(one)
    assert tp.wire_bytes == pytest.approx(8 * one)  # 73.7 GB
    assert build_scenario(model="deepseek-v3").attention_parallel == "dp"  # MLA's default


def test_dp_attention_single_request_uses_one_stream():
    sc = build_scenario(model="deepseek-v3", tp=8, batch=1, link="ib-ndr", attention_parallel="dp")
    assert sc.streams == 1
    assert replace(sc, batch=16).streams == 8


def test_window_full_sends_sliding_layers_whole():
    kw = dict(model="gemma-3-27b", seq_len=32_768)
    window = evaluate(build_scenario(**kw))
    full = evaluate(build_scenario(**kw, window_transfer="full"))
    spec = catalog.get_model("gemma-3-27b")
    per_token = sum(g.layers * g.elements_per_token_per_layer for g in spec.groups) * 2
    assert full.wire_bytes == pytest.approx(per_token * 32_768)
    assert full.kv_total_bytes == window.kv_total_bytes  # what is stored does not change
    assert full.wire_bytes / window.wire_bytes > 4


# ---------------------------------------------------------------- stacks and layer-wise


TOY = StackSpec("toy", "toy", request_s=1e-3, chunk_s=50e-6, message_s=0.0,
                efficiency_max=0.5, message="layer", overlap=False)  # fmt: skip


def test_stack_whole_transfer_hand_computed():
    # Llama-3-70B, 1,024 tokens on 100GbE, TP 1: 335,544,320 B at 50 % of 12.5 GB/s = 53.69 ms,
    # + 1 ms per request + 50 µs for the one chunk + the link's latency
    sc = build_scenario(model="llama-3-70b", stack=TOY)
    link = catalog.get_link("100gbe")
    t = transfer(sc)
    expected = 1e-3 + 50e-6 + link.latency_s + 335_544_320 / (12.5e9 * 0.5)
    assert_allclose(t.transfer_s, expected, rtol=1e-12)


def test_layerwise_pays_the_request_once_and_the_chunk_cost_per_layer():
    sc = build_scenario(model="llama-3-70b", stack=TOY, layerwise=True, prefill_ms=1.0)
    link = catalog.get_link("100gbe")
    t = transfer(sc)
    per_layer = 50e-6 + link.latency_s + 335_544_320 / 80 / (12.5e9 * 0.5)
    # the link is the bottleneck (80 × 0.72 ms ≫ 1 ms prefill): everything after the first
    # layer's readiness at 1/80 of the prefill, plus the request cost once
    assert_allclose(t.transfer_s, 1e-3 + 80 * per_layer, rtol=1e-9)
    assert_allclose(t.exposed_s, 1e-3 + 80 * per_layer - 1e-3 * 79 / 80, rtol=1e-9)


def test_small_blocks_make_nixl_posting_bound():
    # NIXL posts one descriptor per 16-token block per layer per tensor: at TP 8 on 8 NDR NICs
    # the posting, not the wire, sets the time
    sc = build_scenario(model="llama-3.1-70b", stack="nixl", tp=8, link="ib-ndr")
    t = transfer(sc)
    messages = 64 * 80 * 2 * 8  # blocks × layers × K,V × ranks
    assert_allclose(t.transfer_s, 0.285e-3 + 1.5e-6 + messages * 3.75e-6 / 8, rtol=1e-3)


def test_layerwise_can_lose_when_chunks_are_costly():
    costly = replace(TOY, chunk_s=5e-3)  # a 5 ms completion round trip per chunk
    kw = dict(model="llama-3-70b", stack=costly, prefill_ms=100.0)
    whole = evaluate(build_scenario(**kw))
    lw = evaluate(build_scenario(**kw, layerwise=True))
    assert lw.exposed_s > whole.exposed_s  # 80 chunks × 5 ms outweigh the overlap
    cheap = evaluate(build_scenario(model="llama-3-70b", stack=TOY, prefill_ms=100.0,
                                    layerwise=True))  # fmt: skip
    assert cheap.exposed_s < whole.exposed_s


def test_ideal_twin_is_in_every_evaluation():
    ev = evaluate(build_scenario(model="llama-3-70b", stack="mooncake"))
    assert ev.ideal_transfer_s == pytest.approx(evaluate(build_scenario(model="llama-3-70b"))
                                                .transfer_s)  # fmt: skip
    assert ev.transfer_s > 1.3 * ev.ideal_transfer_s


# ---------------------------------------------------------------- the decode step


def test_estimated_decode_step_hand_computed():
    # Llama-3.1-8B on one H100, batch 1, 1,024 tokens, from its parts (kvmodel.steps;
    # docs/model.md): HBM 3.35e12 × 0.8, BF16 989e12 × 0.7 (data/gpus.csv), smooth max p = 2.5,
    # 43.7 µs × 32 layers of kernel floor; the Python API's framework "none" adds nothing.
    # One request's GEMMs cost Hopper's 64 tensor-core rows (wgmma m64nNk16: mma_min_rows).
    # (Replaces the single-formula pin 57.3 µs × layers + bytes ÷ (HBM × 0.911): the parts
    # are fitted across four GPUs and frameworks.)
    sc = build_scenario(model="llama-3.1-8b", decode_step_ms=None)
    hbm, flops = 3.35e12 * 0.8, 989e12 * 0.7
    kv = 32 * 8 * 128 * 2 * 2 * 1024
    attn = 32 * 2 * 32 * (128 + 128) * 1024  # per token: 2 · H_q · (D_k + D_v) · context
    m, c = (8.03e9 * 2 + kv) / hbm, (attn + 2 * 8.03e9 * 64) / flops
    expected = 43.7e-6 * 32 + (m**2.5 + c**2.5) ** 0.4
    assert sc.decode_step_estimated and sc.decode_step_s == pytest.approx(expected)
    # it follows the scenario: TP 8 divides bytes and FLOPs (one KV head per GPU) and adds 64
    # ring all-reduces of 4,096 × 2 B over NVLink 4 (450 GB/s × 0.75) at 10 µs each
    tp8 = replace(sc, tp_prefill=8, tp_decode=8)
    ring = 64 * (2 * 7 / 8 * 4096 * 2 / (450e9 * 0.75) + 10e-6)
    assert tp8.decode_step_s == pytest.approx(
        43.7e-6 * 32 + ((m / 8) ** 2.5 + (c / 8) ** 2.5) ** 0.4 + ring
    )


def test_the_roofline_lower_bound_reads_the_checkpoint_over_the_instance():
    """DeepSeek-V3 (FP8, 37e9 active params) decoding at EP 8 on H20 (4.0 TB/s): the bound reads
    the active weights once over the 8 GPUs, 37e9 × 1 B ÷ (8 × 4.0e12 B/s) = 1.16 ms plus the
    KV, and stays under the estimated step (it was BF16 on 1 GPU: 18.5 ms, above the 11.4 ms
    estimate)."""
    sc = build_scenario(model="deepseek-v3", gpu="h200", gpu_decode="h20", tp=1, tp_decode=1,
                        ep=8, ep_decode=8, framework="sglang", decode_step_ms=None)  # fmt: skip
    ev = evaluate(sc)
    m = sc.model
    weights_s = m.params_active * 1.0 / (8 * 4.0e12)
    assert weights_s == pytest.approx(1.156e-3, rel=0.01)
    assert weights_s < ev.decode_step_lower_bound_s < 1.2 * weights_s  # + 1,024 tokens of KV
    assert ev.decode_step_lower_bound_s < ev.decode_step_s
