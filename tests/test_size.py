"""KV bytes per layout, hand-computed from each model's published config.json values."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.dtypes import compression_ratio, kv_dtype_bytes
from kvmodel.size import bytes_per_token_full, chunk_bytes, kv_bytes, shard_heads, valid_tp


def kv(model_id, s, b=1, **kw):
    return kv_bytes(catalog.get_model(model_id), s, b, **kw)


@pytest.mark.parametrize(
    "model_id, bytes_per_token",
    [
        ("llama-3.1-70b", 2 * 80 * 8 * 128 * 2),  # GQA: 327,680 (article)
        ("llama-3-70b", 2 * 80 * 8 * 128 * 2),  # alias, same attention shape
        ("llama-3.1-8b", 2 * 32 * 8 * 128 * 2),  # 131,072
        ("llama-3.1-405b", 2 * 126 * 8 * 128 * 2),  # 516,096
        ("llama-2-7b", 2 * 32 * 32 * 128 * 2),  # MHA: 524,288
        ("falcon-7b", 2 * 32 * 1 * 64 * 2),  # MQA: 8,192
        ("phi-3-mini", 2 * 32 * 32 * 96 * 2),  # MHA, head dim 96: 393,216
        ("qwen3-235b-a22b", 2 * 94 * 4 * 128 * 2),  # 192,512
        ("deepseek-v3", 61 * (512 + 64) * 2),  # MLA latent, no ×2 for K/V: 70,272
        ("deepseek-r1", 61 * (512 + 64) * 2),
        ("mixtral-8x22b", 2 * 56 * 8 * 128 * 2),
    ],
)
def test_full_attention_bytes_per_token(model_id, bytes_per_token):
    assert bytes_per_token_full(catalog.get_model(model_id)) == bytes_per_token
    assert_allclose(kv(model_id, 1000).total, 1000 * bytes_per_token)


def test_sliding_window_mistral_flat_past_4096():
    # 32 layers × 8 heads × (128 + 128) × 2 B = 131,072 B/token, at most 4,096 tokens
    assert_allclose(kv("mistral-7b", 4096).total, 131_072 * 4096)
    assert_allclose(kv("mistral-7b", 32_768).total, 131_072 * 4096)


def test_alternating_window_gpt_oss_120b():
    # 36 layers: 18 full + 18 sliding (128); 8 heads × (64 + 64) × 2 B = 2,048 B per layer-token
    s = 10_000
    assert_allclose(kv("gpt-oss-120b", s).total, 18 * 2048 * s + 18 * 2048 * 128)


def test_gemma3_five_local_one_global():
    # 62 layers: 10 global + 52 local (window 1,024); 16 × 256 × 2 B = 8,192 B per layer-token
    s = 8192
    assert_allclose(kv("gemma-3-27b", s).total, 10 * 8192 * s + 52 * 8192 * 1024)


def test_gemma4_global_k_eq_v():
    # 5 global: 2 heads × 512 (K shared with V) × 2 B = 2,048; 25 sliding (1,024):
    # 8 × (256 + 256) × 2 B = 8,192 B per layer-token
    s = 4096
    assert_allclose(kv("gemma-4-26b-a4b", s).total, 5 * 2048 * s + 25 * 8192 * 1024)


def test_llama4_chunked():
    # 48 layers: 12 NoPE global + 36 chunked (8,192); 8 × 256 × 2 B = 4,096 B per layer-token
    s = 100_000
    assert_allclose(kv("llama-4-scout", s).total, 12 * 4096 * s + 36 * 4096 * 8192)


def test_hybrid_linear_qwen35_state():
    # 16 full layers × 4 heads × (256 + 256) × 2 B = 65,536 B/token; 48 Gated-DeltaNet layers of
    # 48 × 128 × 128 × 4 B (fp32 ssm) + 3 × (2·16·128 + 48·128) × 2 B (conv) = 3,207,168 B each
    m = catalog.get_model("qwen3.5-27b")
    assert m.state_layers == 48 and m.state_bytes_per_layer == 3_207_168
    assert_allclose(kv("qwen3.5-27b", 1000).total, 65_536 * 1000 + 48 * 3_207_168)
    assert_allclose(kv("qwen3.5-27b", 1000).state, 48 * 3_207_168)


def test_hybrid_mamba_nemotron_state():
    # pattern has 10 '*' attention and 54 'M' Mamba2 layers; attention 8 × 256 × 2 B = 4,096
    # per layer-token; Mamba2 state (256·64·256 + 3·(256·64 + 2·8·256)) × 2 B = 8,511,488 B
    m = catalog.get_model("nemotron-h-56b")
    assert m.attention_layers == 10 and m.state_layers == 54
    assert m.state_bytes_per_layer == 8_511_488
    assert_allclose(kv("nemotron-h-56b", 2048).total, 40_960 * 2048 + 54 * 8_511_488)


@pytest.mark.parametrize(
    "dtype, scale_group, per_value",
    [
        ("fp32", 0, 4),
        ("bf16", 0, 2),
        ("fp16", 0, 2),
        ("fp8", 0, 1),
        ("int8", 0, 1),
        ("int4", 0, 0.5),
        ("int4", 64, 0.5 + 2 / 64),
        ("int8", 128, 1 + 2 / 128),
    ],
)
def test_dtype_bytes(dtype, scale_group, per_value):
    assert kv_dtype_bytes(dtype, scale_group=scale_group) == per_value
    total = kv("llama-3.1-70b", 1024, kv_dtype=dtype, kv_scale_group=scale_group).total
    assert_allclose(total, 2 * 80 * 8 * 128 * 1024 * per_value)


def test_compression_ratios():
    assert compression_ratio("none") == 1
    assert compression_ratio("int8", group=0) == 0.5
    assert compression_ratio("fp8") == 0.5
    assert compression_ratio("int4", group=0) == 0.25
    assert compression_ratio("int4", group=128) == (0.5 + 2 / 128) / 2
    assert compression_ratio("fp8", kv_dtype="fp8") == 1  # nothing left to gain
    assert compression_ratio("int4", kv_dtype="fp8", group=0) == 0.5


def test_tensor_parallel_shards():
    full = kv("llama-3.1-70b", 1024).total
    tp8 = kv("llama-3.1-70b", 1024, tp_prefill=8, tp_decode=8)
    assert_allclose(tp8.per_gpu_prefill, full / 8)
    assert_allclose(tp8.wire, full)
    # decode TP 16 > 8 heads: each decode GPU needs one (replicated) head → 2× on the wire
    tp16 = kv("llama-3.1-70b", 1024, tp_prefill=8, tp_decode=16)
    assert_allclose(tp16.per_gpu_decode, full / 8)
    assert_allclose(tp16.wire, 2 * full)
    # MLA's single latent is replicated on every rank
    mla = kv("deepseek-v3", 1024, tp_decode=8)
    assert_allclose(mla.per_gpu_decode, kv("deepseek-v3", 1024).total)
    assert_allclose(mla.wire, 8 * mla.total)


@pytest.mark.parametrize("heads, tp, shard", [(8, 1, 8), (8, 8, 1), (8, 16, 1), (1, 4, 1)])
def test_shard_heads(heads, tp, shard):
    assert shard_heads(heads, tp) == shard


@pytest.mark.parametrize("heads, tp", [(8, 3), (8, 12), (8, 0)])
def test_shard_heads_rejects(heads, tp):
    with pytest.raises(ValueError, match="tp"):
        shard_heads(heads, tp)


@pytest.mark.parametrize("model_id", ["llama-3.1-70b", "gemma-3-27b", "qwen3.5-27b", "deepseek-v3"])
def test_chunks_sum_to_wire(model_id):
    m = catalog.get_model(model_id)
    seqs = np.array([1, 500, 5000])
    chunks = chunk_bytes(m, seqs, 3, tp_decode=1)
    assert chunks.shape[0] == m.attention_layers + m.state_layers
    assert_allclose(chunks.sum(axis=0), kv_bytes(m, seqs, 3).wire)


@settings(max_examples=50, deadline=None)
@given(s=st.integers(0, 200_000), b=st.integers(1, 256), c=st.integers(2, 5))
def test_linear_in_seq_and_batch_for_full_attention(s, b, c):
    m = catalog.get_model("qwen3-32b")
    base = float(kv_bytes(m, s, b).total)
    assert_allclose(float(kv_bytes(m, c * s, b).total), c * base)
    assert_allclose(float(kv_bytes(m, s, c * b).total), c * base)


@settings(max_examples=50, deadline=None)
@given(s=st.integers(4096, 32_768), extra=st.integers(1, 10_000))
def test_flat_past_the_window(s, extra):
    m = catalog.get_model("mistral-7b")
    assert float(kv_bytes(m, s).total) == float(kv_bytes(m, s + extra).total)


def test_array_equals_loop():
    m = catalog.get_model("gemma-3-27b")
    seqs, batches = np.array([1, 700, 1024, 9000]), np.array([[1], [4]])
    arr = kv_bytes(m, seqs, batches).total
    loop = [[float(kv_bytes(m, int(s), int(b)).total) for s in seqs] for b in batches[:, 0]]
    assert_allclose(arr, loop)


@pytest.mark.parametrize("bad", [-1, 1.5, float("nan"), "x"])
def test_bad_seq_len(bad):
    with pytest.raises(ValueError, match="seq_len"):
        kv("llama-3.1-70b", bad)


@pytest.mark.parametrize("mid", catalog.model_ids())
def test_scalar_path_equals_array_path(mid):
    # kv_bytes takes a plain-float path for one (S, B): it must give the array path's numbers
    m = catalog.get_model(mid)
    seqs = np.array([1, 777, 4096, m.max_context_tokens])
    arr = kv_bytes(m, seqs, 3, kv_dtype="fp8", tp_prefill=1, tp_decode=valid_tp(m)[-1])
    for i, s in enumerate(seqs):
        one = kv_bytes(m, int(s), 3, kv_dtype="fp8", tp_prefill=1, tp_decode=valid_tp(m)[-1])
        for name in ("total", "state", "per_gpu_prefill", "per_gpu_decode", "wire", "per_token"):
            assert float(getattr(one, name)) == float(getattr(arr, name)[i]), (name, s)
    assert np.isnan(kv_bytes(m, 0, 1).per_token)
