"""Carry a ModelSpec that is not in the catalog inside a link: compact JSON, base64url.

``decode_model`` validates everything (through ModelSpec, whose ``MODEL_LIMITS`` bound every
count before anything is built from it) and raises ``ValueError`` with a readable reason; a
tampered or truncated string never yields a silently wrong model.  Whether the id is a slug
(``ID_PATTERN``) that collides with no catalog id is the caller's check (``kvview.params``).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

from .hfconfig_fields import display_name
from .specs import AttentionGroup, ModelSpec
from .textio import check_nesting

_VERSION = 1
MAX_ENCODED_CHARS = 4000
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]{0,99}")  # a slug, as the importer makes


def slug(text: str) -> str:
    """``text`` as an id: lowercase a-z, 0-9, '.', '_', '-' (other runs become one '-')."""
    out = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9._]+", "-", str(text).lower())).strip("-._")
    return out[:100].rstrip("-._")


MAX_NAME_CHARS = 200


def encode_model(spec: ModelSpec) -> str:
    data = {
        "v": _VERSION,
        "id": spec.id,
        "n": spec.name,
        "a": spec.attention,
        "L": spec.layers,
        "q": spec.q_heads,
        "d": spec.head_dim_qk,
        "c": spec.max_context_tokens,
        "pt": spec.params_total,
        "pa": spec.params_active,
        "sl": spec.state_layers,
        "sb": spec.state_bytes_per_layer,
        "kv": spec.kv_dtype_native,
        "g": [
            [g.layers, g.kv_heads, g.k_head_dim, g.v_head_dim, g.window_tokens, g.window_kind]
            for g in spec.groups
        ],
    }
    if spec.weight_dtype != "bf16":  # written only when set: older links stay byte-identical
        data["w"] = spec.weight_dtype
    for key, value in (("h", spec.hidden_size), ("E", spec.experts), ("k", spec.experts_per_token)):
        if value:  # written only when known: older links stay byte-identical
            data[key] = value
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_model(text: str) -> ModelSpec:
    if not isinstance(text, str) or not text or len(text) > MAX_ENCODED_CHARS:
        raise ValueError("expected a non-empty encoded model of at most 4,000 characters")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        check_nesting(raw, "the encoded model")
        data = json.loads(raw)
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise ValueError("the encoded model is not valid (truncated or altered?)") from None
    if not isinstance(data, dict) or data.get("v") != _VERSION:
        raise ValueError("the encoded model has an unknown format version")
    mid, name = data.get("id"), data.get("n")
    if not isinstance(mid, str) or not 0 < len(mid) <= MAX_NAME_CHARS:
        raise ValueError(f"the encoded model's id must be text of 1-{MAX_NAME_CHARS} characters")
    if not isinstance(name, str) or not 0 < len(name) <= MAX_NAME_CHARS:
        raise ValueError(f"the encoded model's name must be text of 1-{MAX_NAME_CHARS} characters")
    if not isinstance(data.get("g"), list):
        raise ValueError("the encoded model's groups are not a list")
    try:
        groups = tuple(
            AttentionGroup(
                layers=g[0],
                kv_heads=g[1],
                k_head_dim=g[2],
                v_head_dim=g[3],
                window_tokens=g[4],
                window_kind=g[5],
            )
            for g in data["g"]
        )
        return ModelSpec(
            id=mid,
            name=display_name(name),
            attention=data["a"],
            layers=data["L"],
            q_heads=data["q"],
            head_dim_qk=data["d"],
            groups=groups,
            max_context_tokens=data["c"],
            params_total=_number(data["pt"], "pt"),
            params_active=_number(data["pa"], "pa"),
            state_layers=data["sl"],
            state_bytes_per_layer=data["sb"],
            kv_dtype_native=data.get("kv"),
            weight_dtype=data.get("w", "bf16"),
            hidden_size=data.get("h", 0),
            experts=data.get("E", 0),
            experts_per_token=data.get("k", 0),
            source="imported config.json (carried in the link)",
        )
    except (KeyError, IndexError, TypeError) as exc:
        raise ValueError(f"the encoded model lacks a field ({exc})") from None


def _number(value, key: str) -> float:
    """A JSON number as a float (ModelSpec checks its range); ValueError for anything else."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"the encoded model's {key} is not a number")
    try:
        return float(value)
    except OverflowError:
        raise ValueError(f"the encoded model's {key} is too large") from None
