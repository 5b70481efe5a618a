"""Reading config.json fields under limits: typed access to one field (whole numbers, objects,
strings) that names the field and what is expected, every count bounded by
``specs.MODEL_LIMITS`` before anything is built from it, and the JSON's nesting checked before
it is parsed.  Used by :mod:`kvmodel.hfconfig`.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from .specs import MODEL_LIMITS
from .textio import check_nesting, json_kind
from .textio.paths import read_bounded

MAX_CONFIG_BYTES = 10_000_000  # a config.json is a few kB; read no more than this (issue 23)

_REQUIRED = object()
_LIMIT_KEYS = {  # MODEL_LIMITS key of each whole-number field; unlisted fields: "width"
    "layers": (
        "num_hidden_layers num_kv_shared_layers max_window_layers no_rope_layer_interval "
        "full_attention_interval sliding_window_pattern first_k_dense_replace "
        "interleave_moe_layer_step decoder_sparse_step moe_layer_freq"
    ),
    "heads": (
        "num_attention_heads num_key_value_heads num_global_key_value_heads mamba_num_heads "
        "linear_num_key_heads linear_num_value_heads n_groups"
    ),
    "head_dim": (
        "head_dim attention_head_dim global_head_dim qk_rope_head_dim kv_lora_rank "
        "qk_nope_head_dim q_lora_rank v_head_dim mamba_head_dim ssm_state_size "
        "linear_key_head_dim linear_value_head_dim conv_kernel linear_conv_kernel_dim"
    ),
    "vocab": "vocab_size",
    "experts": (
        "num_experts num_local_experts n_routed_experts num_experts_per_tok experts_per_token "
        "top_k_experts n_shared_experts"
    ),
    "window_tokens": "sliding_window attention_chunk_size",
    "max_context_tokens": "max_position_embeddings",
}
LIMITS = {k: MODEL_LIMITS[lim] for lim, keys in _LIMIT_KEYS.items() for k in keys.split()}


def show(value) -> str:
    """``value`` for a message: short, even for a huge number or a long string."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 10**15:
        return f"a {int(math.log10(abs(value))) + 1}-digit number"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def first_key(cfg: dict, *keys: str, default=None):
    """The first of ``keys`` that ``cfg`` sets (not null, not 0) as a whole number (each one
    set is checked), else ``default``."""
    values = [int_field(cfg, k, "a count", default=0, minimum=0) for k in keys]
    return next((v for v in values if v), default)


def fail(field: str, problem: str, expected: str, what: str = "config.json"):
    raise ValueError(f"{what}: {field} {problem}; expected {expected}")


def dict_field(cfg: dict, key: str, expected: str, what: str = "config.json") -> dict:
    """``cfg[key]`` when it is an object; {} when absent or null."""
    value = cfg.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        fail(key, f"is {json_kind(value)} ({show(value)})", expected, what)
    return value


def text_field(cfg: dict, key: str, expected: str, what: str = "config.json") -> str | None:
    """``cfg[key]`` when it is a string; None when absent or null."""
    value = cfg.get(key)
    if value is not None and not isinstance(value, str):
        fail(key, f"is {show(value)}", expected, what)
    return value


def read_json(src, what: str) -> tuple[dict, str | None]:
    """Parse ``src`` (dict, JSON text or bytes, or a path) into a dict; also the file stem."""
    if isinstance(src, dict):
        return dict(src), None
    text, stem = src, None
    if isinstance(src, bytes | bytearray):  # a file's content, never a path
        try:
            text = bytes(src).decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ValueError(f"{what}: not UTF-8 text; expected a JSON file") from None
    elif isinstance(src, Path) or (isinstance(src, str) and src.lstrip()[:1] not in ("{", "[")):
        data = read_bounded(src, MAX_CONFIG_BYTES, ValueError, what=f"{what} ({src})")
        try:  # a regular file only, read to at most 10 MB (not /dev/zero's endless bytes)
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise ValueError(f"{what}: {src} is not UTF-8 text; expected a JSON file") from None
        stem = Path(src).name.removesuffix(".json").removesuffix(".hf_quant_config")
    elif not isinstance(src, str):
        raise ValueError(
            f"{what}: expected a path, JSON text, bytes or a dict, got a Python "
            f"{type(src).__name__}"
        )
    check_nesting(text, what)  # before json.loads, which would raise RecursionError
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        msg = f"{what}: malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        raise ValueError(msg) from None
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise ValueError(f"{what}: unreadable JSON ({exc}); expected a config.json") from None
    if not isinstance(data, dict):
        raise ValueError(f"{what}: expected a JSON object at the top, got {json_kind(data)}")
    return data, stem


def int_field(cfg: dict, key: str, expected: str, default=_REQUIRED, minimum: int = 1):
    """``cfg[key]`` as a whole number from ``minimum`` to its limit (``LIMITS``, else the
    width limit); ``default`` when absent or null."""
    value = cfg.get(key)
    if value is None:
        if default is _REQUIRED:
            fail(key, "is missing", expected)
        return default
    top = LIMITS.get(key, MODEL_LIMITS["width"])
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= top:
        fail(key, f"is {show(value)}", f"a whole number from {minimum} to {top:,} ({expected})")
    return value


_NAME_UNSAFE = re.compile(r"[^\w .,:+/()\-]")


def display_name(text, limit: int = 80) -> str:
    """A model name from a file or a link, as shown everywhere: letters, digits, spaces and
    ``.,:+/()-_`` only, at most ``limit`` characters (markdown and HTML have nothing to read)."""
    return _NAME_UNSAFE.sub("", str(text))[:limit].strip() or "model"
