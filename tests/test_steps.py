"""The decode step, prefill and TTFT from their parts (kvmodel.steps, kvmodel.timing), expert
parallelism and the serving frameworks."""

import json

import numpy as np
import pytest
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario, to_scenario
from kvmodel.cli import main
from kvmodel.memory import weights_bytes_per_gpu
from kvmodel.timing import (
    decode_attention_flops_per_token,
    decode_step_parts,
    estimate_decode_step_s,
    prefill_parts,
)
from kvmodel.transfer import evaluate

H100 = catalog.get_gpu("h100-sxm")
H800 = catalog.get_gpu("h800")


@pytest.mark.parametrize(
    ("model", "seq", "batch", "tp", "ep", "fw"),
    [("llama-3.1-70b", 2048, 32, 4, 1, "vllm"), ("deepseek-v3", 4096, 256, 1, 32, "sglang"),
     ("qwen3-235b-a22b", 8192, 1, 8, 1, "trtllm"), ("qwen3-8b", 1, 1, 1, 1, "none")],
)  # fmt: skip
def test_the_parts_add_up_to_the_totals(model, seq, batch, tp, ep, fw):
    spec = catalog.get_model(model)
    parts = decode_step_parts(spec, seq, batch, gpu=H800, tp=tp, ep=ep, framework=fw)
    assert_allclose(sum(parts.terms().values()), parts.total_s, rtol=1e-12)
    assert_allclose(parts.total_s, estimate_decode_step_s(spec, seq, batch, gpu=H800, tp=tp,
                                                          ep=ep, framework=fw))  # fmt: skip
    assert all(v >= 0 for v in parts.terms().values())
    pre = prefill_parts(spec, seq, 1, gpu=H800, tp=tp, ep=ep)
    assert_allclose(sum(pre.as_ms().values()), pre.total_s * 1e3, rtol=1e-12)


def test_json_breakdowns_add_up_to_the_shown_totals(capsys):
    assert main(["transfer", "--model", "deepseek-v3", "--gpu", "h800", "--tp", "1",
                 "--tp-decode", "1", "--ep", "32", "--ep-decode", "72", "--framework", "sglang",
                 "--seq-len", "4096", "--batch", "8", "--json"]) == 0  # fmt: skip
    d = json.loads(capsys.readouterr().out)
    assert (d["framework"], d["ep_prefill"], d["ep_decode"]) == ("sglang", 32, 72)
    assert sum(d["step_breakdown_ms"].values()) == pytest.approx(d["decode_step_ms"])
    assert sum(d["prefill_breakdown_ms"].values()) == pytest.approx(d["prefill_ms"])
    assert sum(d["ttft_breakdown_ms"].values()) == pytest.approx(d["ttft_ms"])
    assert d["step_breakdown_ms"]["ep_dispatch_combine"] > 0  # EP 72 crosses nodes
    assert d["ttft_breakdown_ms"]["request"] == pytest.approx(28.4 + 18.4)  # SGLang + router


def test_mla_absorbed_attention_from_the_config_fields():
    # DeepSeek-V3: 61 layers × 2 · 128 heads · (kv_lora_rank 512 + rope 64) · 2 per cached
    # token (v_head_dim 0: one latent); at 2,048 tokens
    v3 = catalog.get_model("deepseek-v3")
    assert_allclose(decode_attention_flops_per_token(v3, 2048), 61 * 2 * 128 * 576 * 2 * 2048)
    # GQA: Llama-3.1-70B, 80 layers × 2 · 64 · (128 + 128) per token
    l70 = catalog.get_model("llama-3.1-70b")
    assert_allclose(decode_attention_flops_per_token(l70, 1000), 80 * 2 * 64 * 256 * 1000)


def test_expert_parallel_weights_per_gpu():
    # DeepSeek-V3 FP8: routed experts = (671 − 37)e9 × 256 / 248 = 654.45e9; the rest, 16.55e9,
    # on every GPU at TP 1; EP 32 holds 1/32 of the routed experts
    v3 = catalog.get_model("deepseek-v3")
    routed = 634e9 * 256 / 248
    assert_allclose(v3.routed_expert_params, routed)
    assert_allclose(weights_bytes_per_gpu(v3, 1, 32), (671e9 - routed) + routed / 32)
    assert_allclose(weights_bytes_per_gpu(v3, 8), 671e9 / 8)  # EP off: all over TP


def test_expert_parallelism_needs_a_moe_and_a_multiple_of_tp():
    with pytest.raises(ValueError, match="dense model"):
        build_scenario(model="llama-3.1-70b", ep=8)
    with pytest.raises(ValueError, match="multiple of its TP"):
        build_scenario(model="deepseek-v3", tp=8, ep=12)
    sc = build_scenario(model="deepseek-v3", tp=1, tp_decode=1, ep=32, ep_decode=72)
    assert (sc.gpus_prefill, sc.gpus_decode) == (32, 72)


@pytest.mark.parametrize("argv", [["--ep", "8"], ["--model", "deepseek-v3", "--ep", "12"],
                                  ["--ep", "0"], ["--framework", "tgi"]])  # fmt: skip
def test_cli_rejects_bad_ep_and_framework(argv, capsys):
    assert main(["transfer", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and ("--ep" in err or "--framework" in err), err


def test_a_link_without_fw_or_ep_keeps_its_meaning():
    plain = to_scenario({"model": "llama-3.1-70b"})
    assert (plain.framework, plain.ep_prefill, plain.ep_decode) == ("vllm", 1, 1)
    # the Python API and version-1 links keep the article's arithmetic: no framework costs
    assert build_scenario().framework == "none"
    assert evaluate(build_scenario()).framework_request_s == 0


def test_framework_costs_reach_ttft_and_padding_reaches_the_step():
    vllm = to_scenario({"model": "llama-3.1-8b", "fw": "vllm", "tp": 1})
    none = to_scenario({"model": "llama-3.1-8b", "fw": "none", "tp": 1})
    assert evaluate(vllm).ttft_s - evaluate(none).ttft_s == pytest.approx(0.0213 + 0.0254)
    fw = catalog.get_framework("vllm")
    assert list(fw.padded_batch(np.array([1, 3, 5, 9, 64, 513]))) == [1, 4, 8, 16, 64, 513]


def test_a_wider_ep_spreads_the_experts_and_pays_the_all_to_all():
    v3 = catalog.get_model("deepseek-v3")
    narrow = decode_step_parts(v3, 2048, 8 * 64, gpu=H800, tp=1, ep=8)
    wide = decode_step_parts(v3, 2048, 72 * 64, gpu=H800, tp=1, ep=72)
    # the same 64 requests per GPU: EP 72 reads fewer expert bytes per GPU but crosses nodes
    assert wide.weights_read_s < narrow.weights_read_s
    assert wide.ep_dispatch_combine_s > narrow.ep_dispatch_combine_s > 0


def test_a_prefill_pass_sends_one_copy_per_node_a_decode_step_one_per_expert():
    """DeepEP's two kernel families (deepseek-ai/DeepEP README): the low-latency kernels of a
    decode step send a token to each routed expert; the normal kernels of a prefill pass send
    it once to each distinct remote node, then forward it over NVLink to each target GPU."""
    from kvmodel.steps import ep_copies, ep_exchange_s

    # per expert, EP 32 over 4 nodes of 8, top-8: 8 × 7/32 over NVLink, 8 × 24/32 over NICs
    assert ep_copies(8, 32, 8, per_node=False) == pytest.approx((1.75, 6.0))
    # per node: 3 remote nodes × (1 − (3/4)^8) = 2.69966; target GPUs 32 × (1 − (31/32)^8)
    # = 7.17760 (0.96875^8 = 0.77570), of which 7/8 over NVLink = 6.28040
    local, remote = ep_copies(8, 32, 8, per_node=True)
    assert remote == pytest.approx(3 * (1 - 0.75**8))
    assert local == pytest.approx(32 * (1 - (31 / 32) ** 8) * 7 / 8)
    assert (remote, local) == pytest.approx((2.69966, 6.28040), abs=1e-5)
    # one node: nothing over the NICs either way
    assert ep_copies(8, 8, 8, per_node=True)[1] == 0.0 == ep_copies(8, 8, 8, per_node=False)[1]
    # the time: 1,000 tokens per GPU of hidden 7,168, 3 bytes a value (FP8 out, BF16 back),
    # NICs at 50 GB/s dominate NVLink at 450 GB/s; 61 layers, 2 × 20 µs each
    kw = dict(hidden=7168, top_k=8, ep=32, layers=61, node_gpus=8,
              scaleup_bytes_per_s=450e9, nic_bytes_per_s=50e9)  # fmt: skip
    want = 61 * (1000 * 7168 * 3 * 2.69966 / 50e9 + 40e-6)
    assert float(ep_exchange_s(1000.0, per_node=True, **kw)) == pytest.approx(want, rel=1e-5)
    assert float(ep_exchange_s(1000.0, **kw)) == pytest.approx(61 * (1000 * 7168 * 3 * 6 / 50e9
                                                                      + 40e-6))


def test_a_cached_prefix_adds_its_attention_to_the_computed_tokens():
    """1,000 computed tokens after 9,000 cached ones attend to positions 9,001 … 10,000: the
    pairs are Σ_{t=9001}^{10000} t = 10,000·10,001/2 − 9,000·9,001/2 = 9,500,500, against
    1,000·1,001/2 = 500,500 from position 0: 9,000,000 more, × 80 layers × 4 × 64 heads × 128
    (Llama-3.1-70B) = 2.359296e13 FLOPs more."""
    from kvmodel.timing import estimate_prefill_s, prefill_flops

    m = catalog.get_model("llama-3.1-70b")
    extra = prefill_flops(m, 1000, prefix=9000) - prefill_flops(m, 1000)
    assert float(extra) == pytest.approx(80 * 4 * 64 * 128 * 9_000_000, rel=1e-12)
    assert prefill_flops(m, 1000, prefix=0) == prefill_flops(m, 1000)
    # a mean prefix is exact without a window: attention is linear in it
    both = prefill_flops(m, np.array([1000, 1000]), prefix=np.array([0.0, 9000.0]))
    assert float(both.mean()) == pytest.approx(float(prefill_flops(m, 1000, prefix=4500)))
    # a sliding window of 4,096 (Mistral-7B): each token attends to at most 4,096 keys, so
    # 100 tokens after 10,000 cached ones cost 100 × 4,096 pairs per layer
    mis = catalog.get_model("mistral-7b")
    win = prefill_flops(mis, 100, prefix=10_000) - prefill_flops(mis, 100)
    per_pair = 32 * 4 * 32 * 128  # layers × 4 × query heads × head dim
    assert float(win) == pytest.approx(per_pair * (100 * 4096 - 100 * 101 / 2))
    gpu = catalog.get_gpu("h100-sxm")
    assert estimate_prefill_s(m, 1000, gpu=gpu, tp=8, prefix=9000) > estimate_prefill_s(
        m, 1000, gpu=gpu, tp=8)


def test_an_nvl72_rack_exchanges_experts_over_nvlink():
    """GB200 NVL72: 4 GPUs a tray, but one NVLink domain of 72 (its gpus.csv row); EP 72
    stays on NVLink (no copy over the NICs), where 9 HGX B200 nodes send 8 × 64/72 of a
    token's copies over their NICs."""
    v3 = catalog.get_model("deepseek-v3")
    gb = catalog.get_gpu("gb200")
    b200 = catalog.get_gpu("b200")
    rack = decode_step_parts(v3, 2048, 72 * 64, gpu=gb, tp=1, ep=72)
    nodes = decode_step_parts(v3, 2048, 72 * 64, gpu=b200, tp=1, ep=72)
    assert 0 < rack.ep_dispatch_combine_s < nodes.ep_dispatch_combine_s
    # by hand: 64 tokens a GPU, hidden 7,168, top-8 × 71/72 copies, 3 bytes, over NVLink 5 at
    # its catalog rate per direction, 61 layers + 2 × 20 µs each
    from kvmodel.timing import catalog_up

    want = 61 * (64 * 7168 * 8 * 71 / 72 * 3 / catalog_up(gb) + 40e-6)
    assert float(rack.ep_dispatch_combine_s) == pytest.approx(want, rel=1e-9)


def test_routed_experts_prefill_at_the_grouped_gemm_rate():
    """A prefill's routed experts run at min(dense, moe_gemm_tflops × w ÷ (w + 300)), w the
    expert's columns per GPU (docs/model.md, aiconfigurator-core 0.12.0 moe_perf.parquet)."""
    from kvmodel.timing import (
        expert_width_per_gpu,
        prefill_parts,
        routed_gemm_flops,
        routed_slowdown_s_per_token,
    )

    qwen, ds = catalog.get_model("qwen3-235b-a22b"), catalog.get_model("deepseek-r1")
    h200, h20 = catalog.get_gpu("h200"), catalog.get_gpu("h20-3e")
    # from the routed weights: 213e9 × 128/120 ÷ 128 ÷ 94 ÷ (3 × 4096) = 1,536.7; the HF config's
    # moe_intermediate_size is 1,536 (shared/data/model-configs/Qwen--Qwen3-235B-A22B.json)
    assert expert_width_per_gpu(qwen) == pytest.approx(1536, rel=1e-3)
    # DeepSeek-R1: 634e9 × 256/248 ÷ 256 ÷ 61 ÷ (3 × 7168) = 1,949 (config: 2,048 on 58 MoE
    # layers of 61); TP 8 splits each expert 8 ways, EP 8 keeps them whole, TP 8 × EP 2 4 ways
    w = 634e9 * 256 / 248 / 256 / 61 / (3 * 7168)
    assert expert_width_per_gpu(ds, tp=8) == pytest.approx(w / 8)
    assert expert_width_per_gpu(ds, tp=1, ep=8) == pytest.approx(w)
    assert expert_width_per_gpu(ds, tp=8, ep=2) == pytest.approx(w / 4)
    assert expert_width_per_gpu(catalog.get_model("llama-3.1-70b")) == 0
    # H200 at TP 8: 610 TFLOP/s × 243.6 ÷ 543.6 = 273.4 TFLOP/s, below the dense 0.7 × 1,979
    assert routed_gemm_flops(ds, h200, "fp8", tp=8) == pytest.approx(
        610e12 * (w / 8) / (w / 8 + 300), rel=1e-9)  # fmt: skip
    # wide slices reach the dense rate's cap no sooner than R_moe itself allows
    assert routed_gemm_flops(ds, h200, "fp8", tp=1, ep=8) < 0.7 * 1979e12
    # H20-3e has no table: its experts run at its dense rate (e_flop 0.9), nothing added
    assert routed_gemm_flops(qwen, h20, "bf16", tp=8) == pytest.approx(0.9 * 148e12)
    assert routed_slowdown_s_per_token(qwen, h20, "bf16", gpus=8, tp=8) == 0
    # the slowdown per prompt token: 2 × 8/256 of the routed weights ÷ 8 GPUs at 273.4 minus
    # at 1,385.3 TFLOP/s
    flops = 2 * 634e9 * 256 / 248 * 8 / 256 / 8
    extra = flops * (1 / (610e12 * (w / 8) / (w / 8 + 300)) - 1 / (0.7 * 1979e12))
    assert routed_slowdown_s_per_token(ds, h200, "fp8", gpus=8, tp=8) == pytest.approx(extra)
    # ... and only prompt tokens of an MoE pay it: a prefill slows, a dense model's does not,
    # nor does a decode step without a chunk
    import dataclasses

    untabled = dataclasses.replace(h200, moe_gemm_flops=None)
    with_t = prefill_parts(ds, 8192, 1, gpu=h200, tp=8, weight_dtype="fp8")
    without = prefill_parts(ds, 8192, 1, gpu=untabled, tp=8, weight_dtype="fp8")
    # (compute and memory combine as a p-norm, so the sum grows by less than the GEMMs did)
    grew = float(with_t.total_s) - float(without.total_s)
    assert 0.5 * 8192 * extra < grew <= 8192 * extra
    llama = catalog.get_model("llama-3.1-70b")
    assert float(prefill_parts(llama, 8192, 1, gpu=h200, tp=8).total_s) == float(
        prefill_parts(llama, 8192, 1, gpu=untabled, tp=8).total_s)  # fmt: skip
    kw = dict(gpu=h200, tp=8, kv_dtype="bf16", weight_dtype="fp8")
    assert float(decode_step_parts(ds, 2048, 64, **kw).total_s) == float(
        decode_step_parts(ds, 2048, 64, **{**kw, "gpu": untabled}).total_s)  # fmt: skip
    chunked = dict(kw, chunk_tokens=256, chunk_flops_per_token=2 * 37e9)
    grew = float(decode_step_parts(ds, 2048, 64, **chunked).total_s) - float(
        decode_step_parts(ds, 2048, 64, **{**chunked, "gpu": untabled}).total_s)  # fmt: skip
    assert 0 < grew <= 256 * extra  # mostly hidden under the weights and KV read (p-norm)


def test_a_tp_across_nodes_rings_through_all_of_the_nodes_nics():
    # NCCL crosses each ring channel between nodes on a NIC of its own: a DGX H100's 8 × 400
    # Gb/s (8 × 50 GB/s = 400 GB/s) together, below its NVLink's 450 GB/s; inside a node the
    # ring runs on NVLink.  Until session 16 one GPU's NIC share (50 GB/s) carried it all.
    from kvmodel.steps import ALLREDUCE_BW_EFFICIENCY, ALLREDUCE_LATENCY_S
    from kvmodel.timing import link_rates

    h100 = catalog.get_gpu("h100-sxm")
    assert link_rates(h100, 8) == (450e9, 50e9)
    assert link_rates(h100, 16) == (400e9, 50e9)
    # Mooncake's H20-3e nodes: 4 × 400 GbE for 8 GPUs, 200 GB/s between nodes
    assert link_rates(catalog.get_gpu("h20-3e"), 16)[0] == pytest.approx(200e9)
    # DeepSeek-R1 at TP 16, a 4,096-token prefill: 2 all-reduces a layer of 4,096 × 7,168 × 2 B
    ds = catalog.get_model("deepseek-r1")
    parts = prefill_parts(ds, 4096, 1, gpu=h100, tp=16)
    # across the two nodes the fixed cost is NCCL's Tree/LL 25.2 µs (the next test), not 10 µs
    one = 2 * 15 / 16 * 4096 * 7168 * 2 / (400e9 * ALLREDUCE_BW_EFFICIENCY) + 25.2e-6
    assert float(parts.tp_allreduce_s) == pytest.approx(2 * 61 * one)
    # inside one node a 58.7 MB message is past the custom all-reduce's 8 MiB: NCCL's measured
    # share on NVLink 4 at 8 GPUs, 0.77 (steps.ALLREDUCE_BW_EFFICIENCY_BY_LINK); across the
    # nodes no table applies (0.75, above)
    inside = prefill_parts(ds, 4096, 1, gpu=h100, tp=8)
    one_node = 2 * 7 / 8 * 4096 * 7168 * 2 / (450e9 * 0.77) + ALLREDUCE_LATENCY_S
    assert float(inside.tp_allreduce_s) == pytest.approx(2 * 61 * one_node)


def test_an_all_reduce_across_nodes_pays_nccls_tree_latency():
    # NVIDIA/nccl src/graph/tuning.cc: Tree/LL latency = 6.8 µs + 2 × ((GPUs per node − 1) ×
    # 0.6 µs + log2i(nodes) × 5.0 µs).  Two 8-GPU nodes: 6.8 + 2 × (4.2 + 5.0) = 25.2 µs, the
    # value NCCL's own debug log prints (NVIDIA/nccl issue 1453) and nccl-tests measured on two
    # healthy 8 × H100 nodes (25.0 µs at 16 B, NVIDIA/nccl-tests issue 309).
    from kvmodel.steps import ALLREDUCE_LATENCY_S, allreduce_latency_s

    assert allreduce_latency_s(16, 8) == pytest.approx(25.2e-6)
    assert allreduce_latency_s(24, 8) == pytest.approx(25.2e-6)  # log2i(3) = 1
    assert allreduce_latency_s(32, 8) == pytest.approx(6.8e-6 + 2 * (4.2e-6 + 2 * 5.0e-6))
    assert allreduce_latency_s(8, 8) == ALLREDUCE_LATENCY_S == 10e-6  # the custom all-reduce
    assert allreduce_latency_s(16, 72) == ALLREDUCE_LATENCY_S  # inside one NVL72 domain
    # a DeepSeek-R1 decode step at TP 16 on two H100 nodes: 122 all-reduces of 14,336 B,
    # each 25.2 µs + the ring's bytes, where one NVLink domain would pay 10 µs
    ds, h100 = catalog.get_model("deepseek-r1"), catalog.get_gpu("h100-sxm")
    step = decode_step_parts(ds, 1024, 1, gpu=h100, tp=16, weight_dtype="fp8")
    ring = 2 * 15 / 16 * 7168 * 2 / (400e9 * 0.75)
    assert float(step.tp_allreduce_s) == pytest.approx(122 * (ring + 25.2e-6))


def test_an_eager_engine_holds_an_mla_prefill_to_its_host_floor():
    # SGLang's mla_prefill_floor_ms (data/frameworks.csv, 165 ms): an MLA model's pass takes
    # max(GPU work, floor); the part host_floor_s is the difference, so the parts still add up
    from dataclasses import replace as copy

    from kvmodel.capacity.pools import pass_fixed_s
    from kvmodel.timing import prefill_host_floor_s

    ds, llama = catalog.get_model("deepseek-r1"), catalog.get_model("llama-3.1-70b")
    h200 = catalog.get_gpu("h200")
    assert prefill_host_floor_s(ds, "sglang") == pytest.approx(0.165)
    # TensorRT-LLM's PyTorch backend prefills eagerly too: 185 ms (fitted on DeepSeek-R1 TP 8
    # FP8 on B200 at 1,024 tokens, aiconfigurator's silicon_sample; data/frameworks.csv)
    assert prefill_host_floor_s(ds, "trtllm") == pytest.approx(0.185)
    assert prefill_host_floor_s(ds, "vllm") == prefill_host_floor_s(ds, None) == 0
    assert prefill_host_floor_s(llama, "sglang") == 0  # GQA: not an MLA layer
    bare = prefill_parts(ds, 1024, 1, gpu=h200, tp=8)
    held = prefill_parts(ds, 1024, 1, gpu=h200, tp=8, framework="sglang")
    assert float(bare.total_s) < 0.165
    assert float(held.total_s) == pytest.approx(0.165)
    assert float(held.host_floor_s) == pytest.approx(0.165 - float(bare.total_s))
    assert held.as_ms()["host_floor"] == pytest.approx(float(held.host_floor_s) * 1e3)
    long = prefill_parts(ds, 32768, 1, gpu=h200, tp=8, framework="sglang")  # GPU work longer
    assert float(long.host_floor_s) == 0
    assert float(long.total_s) == float(prefill_parts(ds, 32768, 1, gpu=h200, tp=8).total_s)
    # a capacity plan's pass pays it once for all its prompts, like the kernel floor
    sc = build_scenario(model="deepseek-r1", gpu="h200", tp=8, tp_decode=8, framework="sglang")
    lens = np.array([512, 1024])
    with_floor = pass_fixed_s(sc, lens, 8)
    without = pass_fixed_s(copy(sc, framework="none"), lens, 8)  # eager, no host floor
    gpu_work = prefill_parts(ds, lens, 1, gpu=h200, tp=8).total_s
    assert np.allclose(with_floor - without, 0.165 - gpu_work)


def test_a_prefill_bound_by_its_all_reduce_is_said():
    """Llama-3.1-70B at TP 8 on L40S, 8,192 tokens × 8: NCCL's all-reduce through host memory
    (0.05 of PCIe Gen4 at 8 GPUs, steps.ALLREDUCE_BW_EFFICIENCY_BY_LINK) is 96 % of the prefill;
    the evaluation says so (session 19's review: a 199 s TTFT got no word).  The default H100
    scenario's all-reduce is a fifth of its prefill: no note."""
    from kvmodel.build import scenario_from_inputs
    from kvmodel.evaluation import ALLREDUCE_BOUND_SHARE, evaluate

    sc = scenario_from_inputs({"model": "llama-3.1-70b", "gpu": "l40s", "seq": 8192, "batch": 8})
    ev = evaluate(sc)
    share = ev.prefill_parts.tp_allreduce_s / ev.prefill_parts.total_s
    assert share == pytest.approx(0.96, abs=0.005) and share > ALLREDUCE_BOUND_SHARE
    assert ev.notes[0].startswith("the prefill spends 96% of its time in the TP 8 all-reduce "
                                  "over PCIe Gen4 x16")  # fmt: skip
    base = evaluate(scenario_from_inputs({}))
    assert base.prefill_parts.tp_allreduce_s / base.prefill_parts.total_s < 0.25
    assert not any("all-reduce" in n for n in base.notes)


def test_a_decode_step_pays_the_tensor_cores_fewest_rows():
    # Hopper's wgmma computes 64 rows at least (PTX ISA, wgmma.mma_async shapes m64nNk16), so
    # one request's GEMMs cost 64 rows' FLOPs; on H20-3e (148 TFLOP/s BF16 dense, e_flop 0.9:
    # data/gpus.csv) Llama-3.1-8B's 2 × 8.03e9 × 64 FLOPs take ~7.7 ms, more than reading its
    # 16 GB of weights (~4.1 ms at 4,917 GB/s × 0.8), so the GEMMs are the larger side, shown whole.
    from dataclasses import replace

    h20 = catalog.get_gpu("h20-3e")
    assert (h20.mma_min_rows, catalog.get_gpu("a100-80").mma_min_rows) == (64, 16)
    model = catalog.get_model("llama-3.1-8b")
    one = decode_step_parts(model, 1024, 1, gpu=h20, framework="none")
    full = decode_step_parts(model, 1024, 64, gpu=h20, framework="none")
    want = 2.0 * model.params_active * 64 / (148e12 * 0.9)
    assert 7.5e-3 < want < 8.0e-3
    assert float(one.gemm_s) == pytest.approx(want)
    assert float(full.gemm_s) == pytest.approx(want)  # 64 requests fill the rows: same GEMMs
    bare = decode_step_parts(model, 1024, 1, gpu=replace(h20, mma_min_rows=1), framework="none")
    assert float(bare.total_s) < float(one.total_s) - 3e-3  # memory-bound without the rows
    # a chunk of prompt tokens riding the step fills the rows itself: no padding is added
    mixed = decode_step_parts(model, 1024, 1, gpu=h20, framework="none", chunk_tokens=512,
                              chunk_flops_per_token=2.0 * model.params_active)  # fmt: skip
    assert float(mixed.gemm_s) == pytest.approx(2.0 * model.params_active * 513 / (148e12 * 0.9))


def test_a_wide_ep_batch_moves_over_every_attention_groups_nic():
    # A review (session 23): DeepSeek-V3 at EP 32 → EP 72 (TP 1) on H800 moved a batch of 64
    # over one NIC (1,989 ms) and showed the whole 18.4 GB cache "per GPU".  Each of the 32
    # prefill GPUs is an attention group holding whole requests (EP ÷ TP) with a NIC of its own
    # (H800: 8 NICs for 8 GPUs), so 64 requests move 32 at a time: 2 per NIC, twice the lone
    # request's time less the shared fixed costs; the busiest prefill GPU holds ⌈64 ÷ 32⌉ = 2
    # requests, the busiest decode GPU ⌈64 ÷ 72⌉ = 1.
    link = {"stack": "mooncake", "model": "deepseek-v3", "gpu": "h800", "tp": "1", "tpd": "1",
            "ep": "32", "epd": "72", "fw": "sglang", "seq": "4096"}  # fmt: skip
    batch = to_scenario({**link, "batch": "64"})
    one = to_scenario({**link, "batch": "1"})
    assert (batch.streams, batch.request_holders, one.streams) == (32, 32, 1)
    ev, ev1 = evaluate(batch), evaluate(one)
    per_request = ev.kv_total_bytes / 64
    assert ev.kv_per_gpu_prefill_bytes == pytest.approx(2 * per_request)
    assert ev.kv_per_gpu_decode_bytes == pytest.approx(per_request)
    assert ev1.transfer_s < ev.transfer_s < 2 * ev1.transfer_s + 1e-9
    # a plain TP instance keeps its NICs at any batch; data-parallel attention at TP 8 one per
    # request up to its 8 ranks (unchanged from before)
    tp8 = to_scenario({"model": "llama-3.1-70b", "link": "ib-ndr", "tp": "8", "batch": "2"})
    dp8 = to_scenario({"model": "llama-3.1-70b", "link": "ib-ndr", "tp": "8", "batch": "2",
                       "attn": "dp"})  # fmt: skip
    assert (tp8.streams, dp8.streams) == (8, 2)
    assert evaluate(dp8).kv_per_gpu_decode_bytes == pytest.approx(evaluate(dp8).kv_total_bytes / 2)


def test_vllm_replays_graphs_for_a_prefill_of_at_most_512_tokens():
    # vLLM V1 replays piecewise CUDA graphs for prefill batches up to its largest capture size
    # (data/frameworks.csv prefill_graph_tokens 512; vLLM's "CUDA Graphs" design page): such a
    # pass pays the decode step's 43.7 µs a layer, a longer one the eager 274.6 µs; SGLang and
    # TensorRT-LLM prefill eagerly, and no framework (the article's arithmetic) stays eager
    from kvmodel.frameworks import FrameworkSpec
    from kvmodel.timing import prefill_launch_floor_s

    llama = catalog.get_model("llama-3.1-70b")
    h100 = catalog.get_gpu("h100-sxm")
    assert catalog.get_framework("vllm").prefill_graph_tokens == 512
    assert [catalog.get_framework(f).prefill_graph_tokens for f in ("sglang", "trtllm", "none")] \
        == [0, 0, 0]  # fmt: skip
    assert_allclose(prefill_launch_floor_s(llama, [128, 512, 513, 8192], "vllm"),
                    [80 * 43.7e-6] * 2 + [80 * 274.6e-6] * 2, rtol=1e-12)  # fmt: skip
    for fw in ("sglang", "trtllm", "none", None):
        assert prefill_launch_floor_s(llama, 128, fw) == pytest.approx(80 * 274.6e-6)
    short = prefill_parts(llama, 512, 1, gpu=h100, tp=4, framework="vllm")
    eager = prefill_parts(llama, 512, 1, gpu=h100, tp=4, framework="sglang")
    assert float(short.kernel_floor_s) == pytest.approx(80 * 43.7e-6)
    assert float(eager.total_s - short.total_s) == pytest.approx(80 * (274.6e-6 - 43.7e-6))
    # a batch of prompts is one pass: 4 × 128 = 512 tokens still replay a graph, 5 × 128 not
    both = prefill_parts(llama, 128, np.array([4, 5]), gpu=h100, tp=4, framework="vllm")
    assert_allclose(both.kernel_floor_s, [80 * 43.7e-6, 80 * 274.6e-6], rtol=1e-12)
    with pytest.raises(ValueError, match="prefill_graph_tokens must be a whole number >= 0"):
        FrameworkSpec(id="x", name="x", request_s=0.0, step_s=0.0, prefill_graph_tokens=-1)


def test_vllm_v0_runs_prefill_eagerly_in_the_fidelity_table():
    # vLLM before 0.8 (V0) captured decode-only batches: its measured runs keep the eager floor
    from kvmodel.fidelity import run_framework

    row = {"framework": "vllm", "version": "0.7.3", "source": "AccelMark"}
    assert run_framework(row).prefill_graph_tokens == 0
    assert run_framework({**row, "version": "0.12.0"}).prefill_graph_tokens == 512
    assert run_framework({**row, "version": ""}).prefill_graph_tokens == 512
    oracle = {**row, "version": "", "source": "Oracle Cloud Infrastructure blog: Serving ..."}
    assert run_framework(oracle).prefill_graph_tokens == 0
    assert run_framework({**row, "framework": "NIM"}).id == "trtllm"
