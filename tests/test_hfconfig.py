"""Tests for kvmodel.hfconfig: real Hugging Face configs, the catalog, and bad inputs."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from refdata import QUANT_SUFFIX, model_config, model_configs, quant_config

from kvmodel.hfconfig import load_hf_config
from kvmodel.specs import ATTENTION_LAYOUTS, AttentionGroup

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "data" / "models.csv"

COLUMNS = (
    "id,name,attention,layers,q_heads,head_dim_qk,global_layers,global_kv_heads,"
    "global_k_head_dim,global_v_head_dim,local_layers,local_kv_heads,local_k_head_dim,"
    "local_v_head_dim,local_window_tokens,local_kind,state_layers,state_bytes_per_layer,"
    "max_context_tokens,params_total_b,params_active_b,kv_dtype_native,weight_dtype,aliases,"
    "hidden_size,experts,experts_per_token,source"
).split(",")

# Catalog rows backed by a file in tests/data/model-configs: catalog id -> file stem.
CONFIG_ROWS = {
    "llama-3.1-8b": "meta-llama--Meta-Llama-3.1-8B",
    "llama-3.1-70b": "meta-llama--Meta-Llama-3.1-70B",
    "llama-3.1-405b": "meta-llama--Meta-Llama-3.1-405B",
    "llama-3.1-70b-fp8": "nvidia--Llama-3.1-70B-Instruct-FP8",
    "mixtral-8x7b": "mistralai--Mixtral-8x7B-v0.1",
    "mixtral-8x22b": "mistralai--Mixtral-8x22B-v0.1",
    "qwen3-8b": "Qwen--Qwen3-8B",
    "qwen3-32b": "Qwen--Qwen3-32B",
    "qwen3-235b-a22b": "Qwen--Qwen3-235B-A22B",
    "deepseek-v3": "deepseek-ai--DeepSeek-V3",
    "deepseek-r1": "deepseek-ai--DeepSeek-R1",
    "gpt-oss-20b": "openai--gpt-oss-20b",
    "gpt-oss-120b": "openai--gpt-oss-120b",
    "gemma-4-26b-a4b": "google--gemma-4-26B-A4B",
    "llama-4-scout": "meta-llama--Llama-4-Scout-17B-16E-Instruct",
    "qwen3.5-27b": "Qwen--Qwen3.5-27B",
    "nemotron-h-56b": "nvidia--Nemotron-H-56B-Base-8K",
}

# Inline configs for catalog rows whose config.json is not vendored (fields as published;
# the attention facts are the ones tests/data/README.md lists).
INLINE_ROWS = {
    "llama-2-7b": dict(
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        hidden_size=4096,
        max_position_embeddings=4096,
        vocab_size=32000,
        intermediate_size=11008,
    ),
    "mistral-7b": dict(
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=8,
        hidden_size=4096,
        sliding_window=4096,
        max_position_embeddings=32768,
        vocab_size=32000,
        intermediate_size=14336,
    ),
    "qwen2.5-7b": dict(
        num_hidden_layers=28,
        num_attention_heads=28,
        num_key_value_heads=4,
        hidden_size=3584,
        sliding_window=131072,
        use_sliding_window=False,
        max_window_layers=28,
        max_position_embeddings=131072,
        vocab_size=152064,
        intermediate_size=18944,
    ),
    "qwen2.5-72b": dict(
        num_hidden_layers=80,
        num_attention_heads=64,
        num_key_value_heads=8,
        hidden_size=8192,
        sliding_window=131072,
        use_sliding_window=False,
        max_window_layers=70,
        max_position_embeddings=131072,
        vocab_size=152064,
        intermediate_size=29568,
    ),
    "falcon-7b": dict(
        model_type="falcon",
        num_hidden_layers=32,
        num_attention_heads=71,
        multi_query=True,
        hidden_size=4544,
        max_position_embeddings=2048,
        vocab_size=65024,
        tie_word_embeddings=True,
    ),
    "phi-3-mini": dict(
        num_hidden_layers=32,
        num_attention_heads=32,
        num_key_value_heads=32,
        hidden_size=3072,
        max_position_embeddings=4096,
        vocab_size=32064,
        intermediate_size=8192,
    ),
    "gemma-3-27b": dict(
        model_type="gemma3",
        text_config=dict(
            model_type="gemma3_text",
            num_hidden_layers=62,
            num_attention_heads=32,
            num_key_value_heads=16,
            head_dim=128,
            hidden_size=5376,
            sliding_window=1024,
            max_position_embeddings=131072,
            vocab_size=262208,
            intermediate_size=21504,
            tie_word_embeddings=True,
        ),
    ),
}


def _config_files() -> list[Path]:
    return model_configs()


def _config_params():
    return [pytest.param(p, id=p.stem) for p in _config_files()]


def _load(stem: str, **kwargs):
    return load_hf_config(model_config(stem), quant_config=quant_config(stem), **kwargs)


def _catalog() -> dict[str, dict]:
    with CATALOG.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == COLUMNS
        return {row["id"]: row for row in reader}


def _row_groups(row: dict) -> tuple[AttentionGroup, ...]:
    """The catalog row's attention groups (global first, then local), as the importer orders."""
    groups = []
    for prefix in ("global", "local"):
        if not int(row[f"{prefix}_layers"] or 0):
            continue
        window = row["local_window_tokens"] if prefix == "local" else ""
        groups.append(
            AttentionGroup(
                layers=int(row[f"{prefix}_layers"]),
                kv_heads=int(row[f"{prefix}_kv_heads"]),
                k_head_dim=int(row[f"{prefix}_k_head_dim"]),
                v_head_dim=int(row[f"{prefix}_v_head_dim"]),
                window_tokens=int(window) if window else None,
                window_kind=(row["local_kind"] or None) if prefix == "local" else None,
            )
        )
    return tuple(groups)


def _group_view(spec):
    """(layers, KV elements per token per layer, window, kind) for each group."""
    return [
        (g.layers, g.elements_per_token_per_layer, g.window_tokens, g.window_kind)
        for g in spec.groups
    ]


# ---------------------------------------------------------------- every real config imports


@pytest.mark.parametrize("path", _config_params())
def test_every_reference_config_imports(path):
    quant = path.with_name(path.stem + QUANT_SUFFIX)
    spec = load_hf_config(path, quant_config=quant if quant.exists() else None)
    assert spec.attention in ATTENTION_LAYOUTS
    assert spec.attention_layers + spec.state_layers <= spec.layers
    assert spec.params_total >= spec.params_active > 0
    assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", spec.id)
    # The same config as JSON text and as a dict gives the same spec.
    text = path.read_text(encoding="utf-8")
    assert (
        load_hf_config(
            text,
            model_id=spec.id,
            name=spec.name,
            source=spec.source,
            quant_config=quant if quant.exists() else None,
        )
        == spec
    )
    assert load_hf_config(json.loads(text), model_id=spec.id).groups == spec.groups


# ---------------------------------------------------- hand-computed KV elements per layout

# (layers, kv_heads × (k_head_dim + v_head_dim) per token per layer, window, kind) per group.
LAYOUTS = {
    # num_key_value_heads 8, hidden 8192 / 64 heads = 128: 8 × (128 + 128) = 2048
    "meta-llama--Meta-Llama-3.1-70B": ("gqa", [(80, 2048, None, None)], 0, 0),
    # num_key_value_heads 8, head dim 4096 / 32 = 128: 8 × 256 = 2048
    "mistralai--Mixtral-8x7B-v0.1": ("gqa", [(32, 2048, None, None)], 0, 0),
    # head_dim 128, num_key_value_heads 4, use_sliding_window false: 4 × 256 = 1024, no window
    "Qwen--Qwen3-235B-A22B": ("gqa", [(94, 1024, None, None)], 0, 0),
    # MLA: one latent of kv_lora_rank 512 + qk_rope_head_dim 64 = 576, no V: 1 × (576 + 0)
    "deepseek-ai--DeepSeek-V3": ("mla", [(61, 576, None, None)], 0, 0),
    # layer_types 12 full + 12 sliding (sliding_window 128); 8 KV heads × (64 + 64) = 1024
    "openai--gpt-oss-20b": (
        "sliding+global",
        [(12, 1024, None, None), (12, 1024, 128, "sliding")],
        0,
        0,
    ),
    # full: num_global_key_value_heads 2 × (global_head_dim 512 + 0, attention_k_eq_v) = 1024;
    # sliding: num_key_value_heads 8 × (head_dim 256 + 256) = 4096, sliding_window 1024
    "google--gemma-4-26B-A4B": (
        "sliding+global",
        [(5, 1024, None, None), (25, 4096, 1024, "sliding")],
        0,
        0,
    ),
    # 48 layers, every 4th NoPE/global: 12 full + 36 chunked (attention_chunk_size 8192);
    # 8 KV heads × (128 + 128) = 2048
    "meta-llama--Llama-4-Scout-17B-16E-Instruct": (
        "chunked",
        [(12, 2048, None, None), (36, 2048, 8192, "chunked")],
        0,
        0,
    ),
    # 16 full_attention layers, 4 KV heads × (256 + 256) = 2048.  48 linear_attention layers:
    # ssm 48 value heads × 128 × 128 × 4 B (float32) = 3,145,728
    # conv (4 - 1) × (2 × 16 × 128 + 48 × 128) × 2 B (bf16) = 3 × 10,240 × 2 = 61,440
    "Qwen--Qwen3.5-27B": ("hybrid-linear", [(16, 2048, None, None)], 48, 3_207_168),
    # pattern: 10 '*' attention, 54 'M' Mamba2, 54 '-' MLP; attention 8 × (128 + 128) = 2048.
    # ssm 256 mamba heads × 64 × ssm_state 256 × 2 B = 8,388,608
    # conv (4 - 1) × (256 × 64 + 2 × 8 groups × 256) × 2 B = 3 × 20,480 × 2 = 122,880
    "nvidia--Nemotron-H-56B-Base-8K": ("hybrid-mamba", [(10, 2048, None, None)], 54, 8_511_488),
}


@pytest.mark.parametrize("stem", list(LAYOUTS))
def test_hand_computed_kv_elements(stem):
    attention, groups, state_layers, state_bytes = LAYOUTS[stem]
    spec = _load(stem)
    assert spec.attention == attention
    assert _group_view(spec) == groups
    assert (spec.state_layers, spec.state_bytes_per_layer) == (state_layers, state_bytes)


def test_inline_layouts_by_hand():
    # MHA without num_key_value_heads: KV heads = 32 q heads, head dim 4096 / 32 = 128:
    # 32 × (128 + 128) = 8192
    mha = load_hf_config(dict(INLINE_ROWS["llama-2-7b"], num_key_value_heads=None))
    assert (mha.attention, _group_view(mha)) == ("mha", [(32, 8192, None, None)])
    # Falcon multi_query: 1 KV head × (4544 / 71 = 64 + 64) = 128
    mqa = load_hf_config(INLINE_ROWS["falcon-7b"])
    assert (mqa.attention, _group_view(mqa)) == ("mqa", [(32, 128, None, None)])
    # Mistral sliding_window 4096 on all 32 layers: 8 × 256 = 2048
    swa = load_hf_config(INLINE_ROWS["mistral-7b"])
    assert (swa.attention, _group_view(swa)) == ("sliding", [(32, 2048, 4096, "sliding")])
    # Gemma-3 (sliding_window_pattern 6 by default): 62 // 6 = 10 global, 52 local;
    # 16 KV heads × (128 + 128) = 4096
    g3 = load_hf_config(INLINE_ROWS["gemma-3-27b"])
    assert _group_view(g3) == [(10, 4096, None, None), (52, 4096, 1024, "sliding")]
    assert g3.layer_order == (1, 1, 1, 1, 1, 0) * 10 + (1, 1)


# ---------------------------------------------------------------- agreement with the catalog


def test_catalog_table_shape():
    rows = _catalog()
    assert len(rows) >= 22
    required = set(CONFIG_ROWS) | set(INLINE_ROWS)
    assert required <= set(rows), sorted(required - set(rows))
    for rid, row in rows.items():
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", rid), rid
        assert row["attention"] in ATTENTION_LAYOUTS, rid
        assert row["source"].strip(), rid
        assert float(row["params_total_b"]) >= float(row["params_active_b"]) > 0, rid
        groups = _row_groups(row)
        attn = sum(g.layers for g in groups) + int(row["state_layers"] or 0)
        assert groups and attn <= int(row["layers"]), rid
    assert "llama-3-70b" in rows["llama-3.1-70b"]["aliases"].split(";")


@pytest.mark.parametrize("rid", list(CONFIG_ROWS) + list(INLINE_ROWS))
def test_import_agrees_with_catalog(rid):
    row = _catalog()[rid]
    if rid in CONFIG_ROWS:
        spec = _load(CONFIG_ROWS[rid])
    else:
        spec = load_hf_config(INLINE_ROWS[rid])
    assert spec.groups == _row_groups(row)
    assert spec.attention == row["attention"]
    assert spec.weight_dtype == row["weight_dtype"]  # fp8 for DeepSeek, mxfp4 for gpt-oss
    assert spec.layers == int(row["layers"])
    assert spec.q_heads == int(row["q_heads"])
    assert spec.head_dim_qk == int(row["head_dim_qk"])
    assert spec.max_context_tokens == int(row["max_context_tokens"])
    assert spec.state_layers == int(row["state_layers"] or 0)
    assert spec.state_bytes_per_layer == int(row["state_bytes_per_layer"] or 0)
    assert spec.kv_dtype_native == (row["kv_dtype_native"] or None)
    # the width and the routed experts drive the TP all-reduce and EP traffic (kvmodel.steps)
    assert spec.hidden_size == int(row["hidden_size"])
    assert spec.experts == int(row["experts"] or 0)
    assert spec.experts_per_token == int(row["experts_per_token"] or 0)
    # The estimate (matrices only; vision towers left out) lands near the published counts;
    # active is looser: cards differ on whether the embedding table counts as active.
    assert spec.params_total / 1e9 == pytest.approx(float(row["params_total_b"]), rel=0.06)
    assert spec.params_active / 1e9 == pytest.approx(float(row["params_active_b"]), rel=0.2)


# --------------------------------------------------------------------------- readers


BASE = dict(
    num_hidden_layers=4,
    num_attention_heads=8,
    num_key_value_heads=2,
    hidden_size=512,
    max_position_embeddings=8192,
    vocab_size=1000,
    intermediate_size=1024,
)


def test_text_config_wins_and_defaults():
    spec = load_hf_config(dict(BASE, model_type="outer", text_config={"num_key_value_heads": 4}))
    assert spec.groups == (AttentionGroup(4, 4, 64, 64),)  # head dim 512 // 8 = 64
    assert spec.id == "outer" and spec.layer_order == ()
    # The model dtype matters only for state layers: an unknown one does not stop a plain model.
    assert load_hf_config(dict(BASE, torch_dtype="float8_e4m3fn")).attention == "gqa"


def test_qwen_window_switched_off_and_window_beyond_context():
    off = load_hf_config(dict(BASE, sliding_window=4096, use_sliding_window=False))
    assert off.attention == "gqa" and off.groups[0].window_tokens is None
    wide = load_hf_config(dict(BASE, sliding_window=10**6))  # larger than the context: fine
    assert wide.groups[0].window_tokens == 10**6


def test_llama4_respects_no_rope_layers():
    cfg = dict(BASE, attention_chunk_size=8192, no_rope_layers=[1, 0, 1, 1])
    spec = load_hf_config(cfg)
    assert [(g.layers, g.window_kind) for g in spec.groups] == [(1, None), (3, "chunked")]
    assert spec.layer_order == (1, 0, 1, 1)
    assert load_hf_config(dict(BASE, attention_chunk_size=8192)).layer_order == (1, 1, 1, 0)


def test_kv_shared_layers_store_no_cache():
    types = ["sliding_attention", "full_attention"] * 2
    spec = load_hf_config(dict(BASE, layer_types=types, sliding_window=512, num_kv_shared_layers=2))
    assert [(g.layers, g.window_tokens) for g in spec.groups] == [(1, None), (1, 512)]
    assert spec.layer_order == (1, 0) and spec.attention_layers == 2 < spec.layers


def test_layer_order_follows_layer_types():
    spec = _load("openai--gpt-oss-120b")
    assert spec.layer_order == (1, 0) * 18  # sliding first, group 0 is the full-attention group
    assert _load("Qwen--Qwen3.5-27B").layer_order == (0,) * 16


@pytest.mark.parametrize(
    "extra, quant, expected",
    [
        ({}, {"quantization": {"kv_cache_quant_algo": "INT8"}}, "int8"),
        ({}, json.dumps({"quantization": {"kv_cache_quant_algo": None}}), None),
        ({"kv_cache_dtype": "fp8_e4m3"}, None, "fp8"),
        (
            {"quantization_config": {"kv_cache_scheme": {"num_bits": 8, "type": "float"}}},
            None,
            "fp8",
        ),
        ({"quantization_config": {"quant_method": "fp8"}}, None, None),  # weights only
    ],
)
def test_kv_dtype_native(extra, quant, expected):
    assert load_hf_config(dict(BASE, **extra), quant_config=quant).kv_dtype_native == expected


def test_ids_names_and_param_overrides(tmp_path):
    path = tmp_path / "some-org--My_Model 7B.json"
    path.write_text(json.dumps(BASE))
    spec = load_hf_config(path)
    assert (spec.id, spec.name) == ("my-model-7b", "My_Model 7B")
    plain = tmp_path / "config.json"  # the usual file name says nothing: use _name_or_path
    plain.write_text(json.dumps(dict(BASE, _name_or_path="org/Tiny-LM")))
    assert load_hf_config(str(plain)).id == "tiny-lm"
    inline = load_hf_config(dict(BASE, _name_or_path="/ckpts/Llama-3.1-70B-Instruct/"))
    assert inline.id == "llama-3.1-70b-instruct"
    given = load_hf_config(BASE, params_total=7e9, params_active=7e9, model_id="x")
    assert (given.params_total, given.params_active, given.id) == (7e9, 7e9, "x")
    moe = _load("mistralai--Mixtral-8x7B-v0.1", params_total=46.7e9)
    assert moe.params_active == pytest.approx(12.9e9, rel=0.02)  # keeps the estimated ratio


# ------------------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "cfg, field",
    [
        ({k: v for k, v in BASE.items() if k != "num_hidden_layers"}, "num_hidden_layers"),
        (dict(BASE, layer_types=["full_attention"] * 3), "layer_types"),
        (dict(BASE, layer_types=["full_attention"] * 3 + ["global"]), "layer_types"),
        (dict(BASE, num_attention_heads=-8), "num_attention_heads"),
        (dict(BASE, num_key_value_heads=-2), "num_key_value_heads"),
        (dict(BASE, num_key_value_heads=3), "num_key_value_heads"),
        (dict(BASE, num_hidden_layers=0), "num_hidden_layers"),
        (dict(BASE, head_dim=12.5), "head_dim"),
        (dict(BASE, layer_types=["sliding_attention"] * 4), "sliding_window"),
        (dict(BASE, hybrid_override_pattern="M*M"), "hybrid_override_pattern"),
        (dict(BASE, attention_chunk_size=64, no_rope_layers=[1, 0]), "no_rope_layers"),
        (
            dict(BASE, layer_types=["linear_attention", "full_attention"] * 2),
            "linear_num_key_heads",
        ),
        (dict(BASE, max_position_embeddings=None), "max_position_embeddings"),
        (
            dict(
                BASE,
                hybrid_override_pattern="M*M*",
                mamba_num_heads=8,
                mamba_head_dim=64,
                ssm_state_size=16,
                conv_kernel=4,
                n_groups=1,
                mamba_ssm_dtype="float13",
            ),
            "mamba_ssm_dtype",
        ),
        (dict(BASE, hybrid_override_pattern="M*M*"), "mamba_num_heads"),
    ],
)
def test_bad_fields_name_the_field(cfg, field):
    with pytest.raises(ValueError, match=field) as err:
        load_hf_config(cfg)
    assert "expected" in str(err.value)


def test_malformed_inputs():
    with pytest.raises(ValueError, match="malformed JSON at line 1"):
        load_hf_config('{"num_hidden_layers": 32,')
    with pytest.raises(ValueError, match="JSON object"):
        load_hf_config("[1, 2]")
    with pytest.raises(ValueError, match="cannot read"):
        load_hf_config(Path("/nonexistent/config.json"))
    with pytest.raises(ValueError, match="kv_cache_quant_algo"):
        load_hf_config(BASE, quant_config={"quantization": {"kv_cache_quant_algo": "NVFP3"}})
    with pytest.raises(ValueError, match="hf_quant_config.json: malformed JSON"):
        load_hf_config(BASE, quant_config="{oops")
