"""Import a Hugging Face ``config.json`` as a :class:`~kvmodel.specs.ModelSpec`.

Reads the attention layouts the planner models: plain MHA/GQA/MQA; MLA (one latent of
``kv_lora_rank + qk_rope_head_dim`` values per token and layer); per-layer ``layer_types``
(full / sliding / chunked / linear attention); Mistral-style ``sliding_window`` on every layer;
Llama-4 chunked attention whose NoPE layers are global; Gemma-4 full layers with their own KV
heads and head dim (``attention_k_eq_v``: K doubles as V, one tensor cached); and hybrids whose
Mamba2 (``hybrid_override_pattern``) or Gated-DeltaNet layers keep a constant per-request state.

Units: heads and head dims are counts of values; windows and contexts are tokens; the state is
bytes per layer; parameters are counts.  Fields may sit under ``text_config`` (it wins).  A
missing, mistyped, out-of-range or contradictory field raises ``ValueError`` naming the field
and what is expected; every count is bounded by ``specs.MODEL_LIMITS`` before a per-layer list
is built from it, and the JSON's nesting is checked before it is parsed.
"""

from __future__ import annotations

import re

from .hfconfig_fields import (
    dict_field,
    display_name,
    fail,
    first_key,
    int_field,
    read_json,
    show,
    text_field,
)
from .specs import AttentionGroup, ModelSpec

DTYPE_BYTES = {"float32": 4, "fp32": 4, "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2}
LAYER_TYPES = {f"{k}_attention": k for k in ("full", "sliding", "chunked", "linear")}
PATTERN_CHARS = {"M": "mamba", "*": "full", "-": "mlp", "E": "mlp"}  # Nemotron-H
WINDOW_FIELDS = {"sliding": "sliding_window", "chunked": "attention_chunk_size"}
# Gemma-2/3 configs without layer_types: layer i is global when (i + 1) % pattern == 0.
DEFAULT_SLIDING_PATTERN = {"gemma2": 2, "gemma3": 6, "gemma3_text": 6}
UNGATED_MLP_TYPES = {"falcon", "gpt2", "gpt_neox", "gptj", "opt", "bloom", "starcoder2"}


def _dtype_bytes(cfg: dict, key: str, default: int) -> int:
    """Bytes per value of the dtype named by ``cfg[key]`` (``default`` when absent)."""
    name = cfg.get(key)
    if name is not None and (not isinstance(name, str) or name.lower() not in DTYPE_BYTES):
        fail(key, f"is {show(name)}", f"one of {sorted(DTYPE_BYTES)}")
    return default if name is None else DTYPE_BYTES[str(name).lower()]


def _per_layer(cfg: dict, key: str, n: int, allowed: dict) -> list[str]:
    seq = cfg[key]
    if not isinstance(seq, (list, str)) or len(seq) != n:
        got = f"has {len(seq)} entries" if isinstance(seq, (list, str)) else f"is {show(seq)}"
        fail(key, got, f"one entry per layer (num_hidden_layers = {n})")
    for item in seq:
        if isinstance(item, bool) or not isinstance(item, (str, int)) or item not in allowed:
            fail(key, f"holds {show(item)}", f"only {', '.join(map(str, allowed))}")
    return [allowed[item] for item in seq]


def _layer_kinds(cfg: dict, n: int) -> tuple[list[str], bool]:
    """Kind of each layer (full, sliding, chunked, linear, mamba, mlp) and whether the config
    spells out a per-layer pattern (then ``layer_order`` is set)."""
    if cfg.get("layer_types") is not None:
        return _per_layer(cfg, "layer_types", n, LAYER_TYPES), True
    if cfg.get("hybrid_override_pattern") is not None:
        return _per_layer(cfg, "hybrid_override_pattern", n, PATTERN_CHARS), True
    if cfg.get("attention_chunk_size"):  # Llama-4: RoPE layers are chunked, NoPE layers global
        if cfg.get("no_rope_layers"):  # 1 = RoPE (chunked), 0 = NoPE (global)
            return _per_layer(cfg, "no_rope_layers", n, {1: "chunked", 0: "full"}), True
        every = int_field(cfg, "no_rope_layer_interval", "the NoPE layer spacing", default=4)
        return ["full" if (i + 1) % every == 0 else "chunked" for i in range(n)], True
    if cfg.get("full_attention_interval") and cfg.get("linear_num_value_heads"):
        every = int_field(cfg, "full_attention_interval", "the spacing of full-attention layers")
        return ["full" if (i + 1) % every == 0 else "linear" for i in range(n)], True
    if cfg.get("sliding_window") is None or cfg.get("use_sliding_window") is False:
        return ["full"] * n, False  # Qwen2/3 carry a window but switch it off
    default = DEFAULT_SLIDING_PATTERN.get(cfg.get("model_type"), 0)
    every = int_field(cfg, "sliding_window_pattern", "local layers per global + 1", default, 0)
    if every:
        return ["full" if (i + 1) % every == 0 else "sliding" for i in range(n)], True
    if "max_window_layers" in cfg:  # Qwen2 with the window on: layers below it stay full
        first = int_field(cfg, "max_window_layers", "the first sliding layer", minimum=0)
        return ["full" if i < first else "sliding" for i in range(n)], 0 < first < n
    return ["sliding"] * n, False  # Mistral: every layer slides


def _state_bytes(cfg: dict, kind: str) -> int:
    """Per-request state of one Mamba2 or Gated-DeltaNet layer [bytes]: SSM + conv tail.

    Both parts are in the model dtype (bf16 when unnamed) unless ``mamba_ssm_dtype`` names the
    SSM part's dtype."""
    model_bytes = _dtype_bytes(cfg, "torch_dtype" if cfg.get("torch_dtype") else "dtype", 2)
    ssm_bytes = _dtype_bytes(cfg, "mamba_ssm_dtype", model_bytes)
    if kind == "mamba":  # ssm: heads × head_dim × N; conv: (k-1) × (heads × head_dim + 2 g N)
        heads = int_field(cfg, "mamba_num_heads", "the number of Mamba2 heads")
        dim = int_field(cfg, "mamba_head_dim", "the Mamba2 head dim")
        n_state = int_field(cfg, "ssm_state_size", "the SSM state size N")
        kernel = int_field(cfg, "conv_kernel", "the causal conv kernel width", minimum=2)
        groups = int_field(cfg, "n_groups", "the number of B/C groups")
        conv = heads * dim + 2 * groups * n_state
        return heads * dim * n_state * ssm_bytes + (kernel - 1) * conv * model_bytes
    # Gated DeltaNet: ssm: value heads × dk × dv; conv: (k-1) × (2 nk dk + nv dv)
    nk = int_field(cfg, "linear_num_key_heads", "the linear-attention key heads")
    nv = int_field(cfg, "linear_num_value_heads", "the linear-attention value heads")
    dk = int_field(cfg, "linear_key_head_dim", "the linear-attention key head dim")
    dv = int_field(cfg, "linear_value_head_dim", "the linear-attention value head dim")
    kernel = int_field(cfg, "linear_conv_kernel_dim", "the causal conv kernel width", minimum=2)
    return nv * dk * dv * ssm_bytes + (kernel - 1) * (2 * nk * dk + nv * dv) * model_bytes


def _kv_dtype(cfg: dict, quant_config) -> str | None:
    """Native KV-cache dtype ("fp8" or "int8") from hf_quant_config.json or config.json."""
    qc = dict_field(cfg, "quantization_config", "an object (the checkpoint's quantization)")
    field, value = "config.json: kv_cache_dtype", cfg.get("kv_cache_dtype")
    if value is None and qc.get("kv_cache_quant_algo") is not None:
        field = "config.json: quantization_config.kv_cache_quant_algo"
        value = qc["kv_cache_quant_algo"]
    if quant_config is not None:
        q, _ = read_json(quant_config, "hf_quant_config.json")
        field = "hf_quant_config.json: quantization.kv_cache_quant_algo"
        inner = dict_field(q, "quantization", "an object", "hf_quant_config.json")
        value = (inner or q).get("kv_cache_quant_algo")
    elif value is None and qc.get("kv_cache_scheme"):  # compressed-tensors
        scheme = qc["kv_cache_scheme"]
        field, value = "config.json: quantization_config.kv_cache_scheme", scheme
        if isinstance(scheme, dict) and scheme.get("num_bits") == 8:
            value = {"float": "fp8", "int": "int8"}.get(scheme.get("type"), scheme)
    text = value.strip().lower() if isinstance(value, str) else "?" if value is not None else ""
    if text in ("", "none", "null", "auto"):
        return None
    if text.startswith(("fp8", "float8")) or text in ("int8",):
        return "int8" if text == "int8" else "fp8"
    raise ValueError(f"{field} is {show(value)}; expected FP8, INT8 or null")


def _weight_dtype(cfg: dict, quant_config) -> str:
    """The checkpoint's weight dtype: fp8 / mxfp4 / int4 from a quantization config, else bf16."""
    qc = dict_field(cfg, "quantization_config", "an object (the checkpoint's quantization)")
    method = (text_field(qc, "quant_method", "a method name") or "").lower()
    if quant_config is not None:
        q, _ = read_json(quant_config, "hf_quant_config.json")
        inner = dict_field(q, "quantization", "an object", "hf_quant_config.json") or q
        method = (
            text_field(inner, "quant_algo", "a name", "hf_quant_config.json") or method
        ).lower()
    if method.startswith(("fp8", "float8")) or method in ("fbgemm_fp8",):
        return "fp8"
    if method == "mxfp4":
        return "mxfp4"
    if method.startswith(("nvfp4", "w4a", "awq", "gptq", "int4")):
        return "int4"
    return "bf16"


def estimate_params(cfg: dict, kinds: list[str]) -> tuple[float, float]:
    """Rough (total, active) parameter counts from a merged config.

    Counts weight matrices only (norms, biases, routers, conv filters are < 1 %): embeddings
    vocab × hidden (twice unless ``tie_word_embeddings``); per attention layer Q, K, V, O (MLA:
    q_a, q_b, kv_a, kv_b, o); per Mamba2 layer its in/out projections; per Gated-DeltaNet layer
    its qkv, z, a/b and out projections; per MLP 3 × hidden × width (2 × when ungated, e.g.
    relu2).  MoE layers count every routed expert in the total but only ``num_experts_per_tok``
    of them (plus shared experts) in the active count.  Vision towers and multi-token-prediction
    layers are left out.  Within a few % of model cards for the bundled configs.
    """
    h, q = cfg["hidden_size"], cfg["num_attention_heads"]
    vocab = int_field(cfg, "vocab_size", "the vocabulary size (or pass params_total)")
    kv, hd = cfg.get("num_key_value_heads") or q, cfg.get("head_dim") or h // q
    mix = {}
    if cfg.get("kv_lora_rank"):
        rope, nope, kvr = cfg["qk_rope_head_dim"], cfg["qk_nope_head_dim"], cfg["kv_lora_rank"]
        qr = int_field(cfg, "q_lora_rank", "the MLA query rank", default=0, minimum=0)
        vd = int_field(cfg, "v_head_dim", "the MLA value head dim", default=0, minimum=0) or nope
        q_proj = h * qr + qr * q * (nope + rope) if qr else h * q * (nope + rope)
        mix["full"] = q_proj + h * (kvr + rope) + kvr * q * (nope + vd) + q * vd * h
    else:
        qo = 3 if cfg.get("attn_output_gate") else 2  # Q (twice when gated) and O
        mix["sliding"] = mix["chunked"] = qo * h * q * hd + 2 * h * kv * hd
        ghd, gkv = cfg.get("global_head_dim") or hd, cfg.get("num_global_key_value_heads") or kv
        mix["full"] = qo * h * q * ghd + (1 if cfg.get("attention_k_eq_v") else 2) * h * gkv * ghd
    if "linear" in kinds:
        nk, nv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
        dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
        mix["linear"] = h * (2 * nk * dk + 2 * nv * dv + 2 * nv) + nv * dv * h
    if "mamba" in kinds:
        heads, d_in = cfg["mamba_num_heads"], cfg["mamba_num_heads"] * cfg["mamba_head_dim"]
        mix["mamba"] = h * (2 * d_in + 2 * cfg["n_groups"] * cfg["ssm_state_size"] + heads)
        mix["mamba"] += d_in * h
    act = cfg.get("mlp_hidden_act") or cfg.get("hidden_act")
    mats = 2 if act == "relu2" or cfg.get("model_type") in UNGATED_MLP_TYPES else 3
    mlp_layers = kinds.count("mlp") if "mlp" in kinds else len(kinds)  # Nemotron: '-' only
    ff = int_field(cfg, "intermediate_size", "the MLP width", default=0, minimum=0) or 4 * h
    total_ff = active_ff = mlp_layers * ff
    experts = first_key(cfg, "num_experts", "num_local_experts", "n_routed_experts")
    if experts:
        top_k = first_key(
            cfg, "num_experts_per_tok", "experts_per_token", "top_k_experts", default=1
        )
        moe_ff = first_key(cfg, "moe_intermediate_size", default=ff)
        shared = first_key(cfg, "shared_expert_intermediate_size", default=0)
        shared = shared or moe_ff * first_key(cfg, "n_shared_experts", default=0)
        if not shared and (cfg.get("enable_moe_block") or "llama4" in str(cfg.get("model_type"))):
            shared = ff  # Gemma-4: dense MLP beside the experts; Llama-4: one shared expert
        only = cfg.get("mlp_only_layers") or []
        if not isinstance(only, list):
            fail("mlp_only_layers", f"is {show(only)}", "a list of layer indices")
        dense = min(first_key(cfg, "first_k_dense_replace", default=0) + len(only), mlp_layers)
        step = first_key(cfg, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq")
        moe = (mlp_layers - dense) // (step or 1)
        base = (mlp_layers - moe) * first_key(
            cfg, "intermediate_size_mlp", default=ff
        ) + moe * shared
        total_ff, active_ff = base + moe * experts * moe_ff, base + moe * top_k * moe_ff
    fixed = vocab * h * (1 if cfg.get("tie_word_embeddings") else 2)
    fixed += sum(mix[k] for k in kinds if k in mix)
    return float(fixed + mats * h * total_ff), float(fixed + mats * h * active_ff)


def load_hf_config(
    src,
    *,
    model_id: str | None = None,
    quant_config=None,
    name: str | None = None,
    params_total: float | None = None,
    params_active: float | None = None,
    aliases: tuple[str, ...] = (),
    source: str | None = None,
) -> ModelSpec:
    """Build a :class:`ModelSpec` from a Hugging Face config (a path, JSON text or a dict).

    ``quant_config``: an ``hf_quant_config.json`` (path, text or dict) whose
    ``kv_cache_quant_algo`` sets ``kv_dtype_native``.  ``params_total``/``params_active``
    (counts) override :func:`estimate_params`; given only the total, active keeps the estimated
    ratio.  ``model_id`` defaults to a lowercase slug of the file name (``org--model.json`` →
    ``model``; the file name is the surest label), else of ``_name_or_path``, else ``model_type``.
    """
    raw, stem = read_json(src, "config.json")
    cfg = {**raw, **dict_field(raw, "text_config", "an object (the language model's fields)")}
    for key in ("model_type", "_name_or_path", "hidden_act", "mlp_hidden_act"):
        text_field(cfg, key, "a name")
    n = int_field(cfg, "num_hidden_layers", "the number of transformer layers")
    q = int_field(cfg, "num_attention_heads", "the number of query heads per layer")
    hidden = int_field(cfg, "hidden_size", "the model width in values")
    mqa = cfg.get("multi_query") and not cfg.get("new_decoder_architecture")  # Falcon-7B
    kv = int_field(cfg, "num_key_value_heads", "KV heads per layer", default=1 if mqa else q)
    if q % kv:
        fail("num_key_value_heads", f"is {kv}", f"a divisor of num_attention_heads ({q})")
    hd_key = "head_dim" if cfg.get("head_dim") is not None else "attention_head_dim"
    hd = int_field(cfg, hd_key, "the per-head dim", default=hidden // q)
    cfg.update(num_key_value_heads=kv, head_dim=hd)  # resolved, for estimate_params
    ctx = int_field(cfg, "max_position_embeddings", "the longest context in tokens")
    kinds, explicit = _layer_kinds(cfg, n)
    shared_kv = int_field(cfg, "num_kv_shared_layers", "layers reusing earlier KV", 0, minimum=0)
    if shared_kv:  # Gemma-3n/4: the last layers read an earlier layer's cache, store none
        kinds[n - min(shared_kv, n) :] = ["kv-shared"] * min(shared_kv, n)

    mla = cfg.get("kv_lora_rank") is not None
    if mla:  # one latent per token and layer: compressed KV + the decoupled RoPE key
        rope = int_field(cfg, "qk_rope_head_dim", "the MLA decoupled RoPE dim")
        rank = int_field(cfg, "kv_lora_rank", "the MLA latent rank")
        full = dict(kv_heads=1, k_head_dim=rank + rope, v_head_dim=0)
        hd = int_field(cfg, "qk_nope_head_dim", "the MLA no-RoPE head dim") + rope
    else:
        gkv = int_field(cfg, "num_global_key_value_heads", "KV heads of full layers", default=kv)
        if q % gkv:
            fail("num_global_key_value_heads", f"is {gkv}", f"a divisor of {q} query heads")
        ghd = int_field(cfg, "global_head_dim", "the head dim of full layers", default=hd)
        v_dim = 0 if cfg.get("attention_k_eq_v") else ghd
        full = dict(kv_heads=gkv, k_head_dim=ghd, v_head_dim=v_dim)
    groups, index = [], {}
    for kind in ("full", "sliding", "chunked"):  # global group first, then local
        if kind not in kinds:
            continue
        index[kind], count = len(groups), kinds.count(kind)
        shape = full
        if kind != "full":  # local layers keep the base KV heads and head dim
            window = int_field(cfg, WINDOW_FIELDS[kind], f"the {kind} window in tokens")
            shape = dict(kv_heads=kv, k_head_dim=hd, v_head_dim=hd, window_tokens=window,
                         window_kind=kind)  # fmt: skip
        try:  # every count is in range; a derived one (hidden_size // heads = 0) may not be
            groups.append(AttentionGroup(layers=count, **shape))
        except ValueError as exc:
            raise ValueError(f"config.json: {exc}") from None
    if not groups:
        fail("layer_types", "hold no attention layer", "at least one full/sliding/chunked layer")

    n_state = kinds.count("mamba") or kinds.count("linear")
    if kinds.count("mamba") and kinds.count("linear"):
        fail("layer_types", "mix Mamba and linear attention", "one kind of state layer")
    state_kind = "mamba" if "mamba" in kinds else "linear"
    state_bytes = _state_bytes(cfg, state_kind) if n_state else 0
    local = [k for k in ("chunked", "sliding") if k in index]
    if n_state:
        attention = "hybrid-mamba" if state_kind == "mamba" else "hybrid-linear"
    elif mla:
        attention = "mla"
    elif local:
        attention = local[0] if local[0] == "chunked" or "full" not in index else "sliding+global"
    else:
        attention = "mqa" if kv == 1 else "mha" if kv == q else "gqa"

    note = "params: given"
    if params_total is None or params_active is None:
        est_total, est_active = estimate_params(cfg, kinds)
        note = "params: estimated from config (embeddings + attention + MLP/MoE)"
        if params_total is None:
            params_total, params_active = est_total, params_active or est_active
        else:
            params_active = params_total * est_active / est_total
    path_name = str(cfg.get("_name_or_path") or "").rstrip("/").split("/")[-1]
    label = (
        ("" if stem in (None, "config") else stem.split("--")[-1])
        or path_name
        or str(cfg.get("model_type") or "model")
    )
    slug = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9.]+", "-", label.lower())).strip("-.")
    if stem in (None, "config") and not path_name:  # named after model_type: add the size
        label = f"{label} ({params_total / 1e9:,.3g}B params)"
    kv_dtype, weight_dtype = _kv_dtype(cfg, quant_config), _weight_dtype(cfg, quant_config)
    experts = first_key(cfg, "num_experts", "num_local_experts", "n_routed_experts", default=0)
    top_k = first_key(cfg, "num_experts_per_tok", "experts_per_token", "top_k_experts", default=1)
    try:
        spec = ModelSpec(
            id=model_id or slug or "model",
            name=display_name(name or label),
            attention=attention,
            layers=n,
            q_heads=q,
            head_dim_qk=hd,
            groups=tuple(groups),
            max_context_tokens=ctx,
            params_total=float(params_total),
            params_active=float(min(params_active, params_total)),
            state_layers=n_state,
            state_bytes_per_layer=state_bytes,
            aliases=tuple(aliases),
            source=source or f"HF config.json {stem or '(given inline)'}; {note}",
            kv_dtype_native=kv_dtype,
            weight_dtype=weight_dtype,
            layer_order=tuple(index[k] for k in kinds if k in index) if explicit else (),
            hidden_size=hidden,
            experts=experts if experts > 1 else 0,
            experts_per_token=min(top_k, experts) if experts > 1 else 0,
        )
    except ValueError as exc:  # beyond a limit of specs.MODEL_LIMITS (parameters)
        raise ValueError(f"config.json: {exc}") from None
    return spec
