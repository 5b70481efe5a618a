"""Loaders for the human-editable catalogs in ``data/`` (models, interconnects, GPUs).

Nothing is read at import time.  A bad row raises ``CatalogError`` naming the file, the row (as
a spreadsheet shows it: the header is row 1) and the field.  An unknown id raises
``UnknownIdError`` listing the closest valid ids.
"""

from __future__ import annotations

import csv
import difflib
from functools import lru_cache
from pathlib import Path

from .frameworks import FrameworkSpec
from .specs import AttentionGroup, GpuSpec, LinkSpec, ModelSpec, StackSpec

DATA_DIR = Path(__file__).resolve().parents[1] / "data"


class CatalogError(ValueError):
    """A catalog file or row is malformed."""


class UnknownIdError(ValueError):
    """An id is not in a catalog."""

    def __init__(self, kind: str, given: str, valid):
        self.kind, self.given = kind, given
        self.closest = difflib.get_close_matches(str(given).lower(), list(valid), n=3, cutoff=0.3)
        hint = f"; closest: {', '.join(self.closest)}" if self.closest else ""
        listing = {
            "model": "models",
            "link": "links",
            "GPU": "gpus",
            "stack": "stacks",
            "framework": "frameworks",
        }.get(  # fmt: skip
            kind, kind
        )
        super().__init__(
            f"unknown {kind} {given!r}{hint} (all of them: python -m kvmodel {listing})"
        )


def _rows(path: Path, columns: tuple[str, ...]):
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise CatalogError(f"{path.name}: missing column(s) {', '.join(missing)}")
            yield from enumerate(reader, start=2)
    except OSError as exc:
        raise CatalogError(f"cannot read catalog {path}: {exc.strerror}") from exc


class _Row:
    """Typed access to one CSV row; errors name file, row and field."""

    def __init__(self, path: Path, n: int, row: dict):
        self.path, self.n, self.row = path, n, row

    def fail(self, field: str, msg: str):
        raise CatalogError(f"{self.path.name} row {self.n}, field {field}: {msg}")

    def text(self, field: str, *, required: bool = True) -> str:
        value = (self.row.get(field) or "").strip()
        if required and not value:
            self.fail(field, "is empty")
        return value

    def number(self, field: str, *, required: bool = True, integer: bool = False):
        raw = self.text(field, required=required)
        if not raw:
            return None
        try:
            value = float(raw)
        except ValueError:
            self.fail(field, f"{raw!r} is not a number")
        if integer:
            if value != int(value):
                self.fail(field, f"{raw!r} is not a whole number")
            return int(value)
        return value

    def flag(self, field: str) -> bool:
        raw = self.text(field).lower()
        if raw not in ("yes", "no"):
            self.fail(field, f"{raw!r} must be yes or no")
        return raw == "yes"

    def build(self, factory, **kwargs):
        try:
            return factory(**kwargs)
        except ValueError as exc:
            raise CatalogError(f"{self.path.name} row {self.n}: {exc}") from exc


MODEL_COLUMNS = (
    "id",
    "name",
    "attention",
    "layers",
    "q_heads",
    "head_dim_qk",
    "global_layers",
    "global_kv_heads",
    "global_k_head_dim",
    "global_v_head_dim",
    "local_layers",
    "local_kv_heads",
    "local_k_head_dim",
    "local_v_head_dim",
    "local_window_tokens",
    "local_kind",
    "state_layers",
    "state_bytes_per_layer",
    "max_context_tokens",
    "params_total_b",
    "params_active_b",
    "kv_dtype_native",
    "aliases",
    "source",
)


def _model_from_row(r: _Row) -> ModelSpec:
    groups = []
    for prefix in ("global", "local"):
        layers = r.number(f"{prefix}_layers", required=prefix == "global", integer=True)
        if not layers:
            continue
        window = kind = None
        if prefix == "local":
            window = r.number("local_window_tokens", integer=True)
            kind = r.text("local_kind")
        groups.append(
            r.build(
                AttentionGroup,
                layers=layers,
                kv_heads=r.number(f"{prefix}_kv_heads", integer=True),
                k_head_dim=r.number(f"{prefix}_k_head_dim", integer=True),
                v_head_dim=r.number(f"{prefix}_v_head_dim", integer=True),
                window_tokens=window,
                window_kind=kind,
            )
        )
    return r.build(
        ModelSpec,
        id=r.text("id"),
        name=r.text("name"),
        attention=r.text("attention"),
        layers=r.number("layers", integer=True),
        q_heads=r.number("q_heads", integer=True),
        head_dim_qk=r.number("head_dim_qk", integer=True),
        groups=tuple(groups),
        max_context_tokens=r.number("max_context_tokens", integer=True),
        params_total=r.number("params_total_b") * 1e9,
        params_active=r.number("params_active_b") * 1e9,
        state_layers=r.number("state_layers", required=False, integer=True) or 0,
        state_bytes_per_layer=r.number("state_bytes_per_layer", required=False, integer=True) or 0,
        aliases=tuple(a.strip() for a in r.text("aliases", required=False).split(";") if a.strip()),
        source=r.text("source"),
        kv_dtype_native=r.text("kv_dtype_native", required=False) or None,
        weight_dtype=r.text("weight_dtype", required=False) or "bf16",
        hidden_size=r.number("hidden_size", required=False, integer=True) or 0,
        experts=r.number("experts", required=False, integer=True) or 0,
        experts_per_token=r.number("experts_per_token", required=False, integer=True) or 0,
    )


LINK_COLUMNS = ("id", "name", "kind", "bandwidth_gbs_per_direction", "latency_us", "source")
GPU_COLUMNS = (
    "id",
    "name",
    "hbm_gbs",
    "bf16_dense_tflops",
    "fp8_dense_tflops",
    "memory_gb",
    "nvlink",
    "nic",
    "gpus_per_node",
    "nics_per_node",
    "nvlink_domain_gpus",
    "source",
)
STACK_COLUMNS = (
    "id",
    "name",
    "request_ms",
    "chunk_us",
    "message_us",
    "efficiency_max",
    "message",
    "overlap",
    "source",
)


def _link_from_row(r: _Row) -> LinkSpec:
    return r.build(
        LinkSpec,
        id=r.text("id"),
        name=r.text("name"),
        kind=r.text("kind"),
        bandwidth_bytes_per_s=r.number("bandwidth_gbs_per_direction") * 1e9,
        latency_s=r.number("latency_us") * 1e-6,
        source=r.text("source"),
        note=r.text("note", required=False),
    )


def _gpu_from_row(r: _Row) -> GpuSpec:
    fp8 = r.number("fp8_dense_tflops", required=False)
    moe = r.number("moe_gemm_tflops", required=False)
    exp = r.number("exp_tops", required=False)
    return r.build(
        GpuSpec,
        id=r.text("id"),
        name=r.text("name"),
        hbm_bytes_per_s=r.number("hbm_gbs") * 1e9,
        bf16_flops=r.number("bf16_dense_tflops") * 1e12,
        fp8_flops=None if fp8 is None else fp8 * 1e12,
        memory_bytes=r.number("memory_gb") * 1e9,
        nvlink=r.text("nvlink"),
        nic=r.text("nic"),
        source=r.text("source"),
        gpus_per_node=r.number("gpus_per_node", integer=True),
        nics_per_node=r.number("nics_per_node", integer=True),
        nvlink_domain_gpus=r.number("nvlink_domain_gpus", integer=True),
        hbm_efficiency=r.number("hbm_efficiency", required=False) or 0.8,
        flops_efficiency=r.number("flops_efficiency", required=False) or 0.7,
        moe_gemm_flops=None if moe is None else moe * 1e12,
        exp_ops=None if exp is None else exp * 1e12,
        mma_min_rows=r.number("mma_min_rows", required=False, integer=True) or 1,
    )


def _stack_from_row(r: _Row) -> StackSpec:
    return r.build(
        StackSpec,
        id=r.text("id"),
        name=r.text("name"),
        request_s=r.number("request_ms") * 1e-3,
        chunk_s=r.number("chunk_us") * 1e-6,
        message_s=r.number("message_us") * 1e-6,
        efficiency_max=r.number("efficiency_max"),
        message=r.text("message"),
        overlap=r.flag("overlap"),
        source=r.text("source"),
        note=r.text("note", required=False),
    )


def _load(path: Path, columns, build) -> dict:
    out: dict = {}
    for n, row in _rows(path, columns):
        r = _Row(path, n, row)
        spec = build(r)
        keys = [spec.id, *getattr(spec, "aliases", ())]
        for key in keys:
            if key != key.lower() or not key.replace("-", "").replace(".", "").isalnum():
                r.fail("id", f"{key!r} must be lowercase letters, digits, '-' and '.'")
            if key in out:
                r.fail("id", f"{key!r} appears twice")
            out[key] = spec
    if not out:
        raise CatalogError(f"{path.name}: no rows")
    return out


@lru_cache(maxsize=4)
def models(path: Path = DATA_DIR / "models.csv") -> dict[str, ModelSpec]:
    """Catalog models by id and alias (aliases map to the same spec)."""
    return _load(path, MODEL_COLUMNS, _model_from_row)


@lru_cache(maxsize=4)
def links(path: Path = DATA_DIR / "interconnects.csv") -> dict[str, LinkSpec]:
    return _load(path, LINK_COLUMNS, _link_from_row)


@lru_cache(maxsize=4)
def gpus(path: Path = DATA_DIR / "gpus.csv") -> dict[str, GpuSpec]:
    table = _load(path, GPU_COLUMNS, _gpu_from_row)
    known = links()
    for gpu in table.values():
        for field in ("nvlink", "nic"):
            if getattr(gpu, field) not in known:
                raise CatalogError(
                    f"{path.name}: GPU {gpu.id} {field} {getattr(gpu, field)!r} is not an "
                    "interconnect id"
                )
    return table


@lru_cache(maxsize=4)
def stacks(path: Path = DATA_DIR / "stacks.csv") -> dict[str, StackSpec]:
    """Transfer stacks (data/stacks.csv): measured per-request, per-chunk and bandwidth costs."""
    return _load(path, STACK_COLUMNS, _stack_from_row)


FRAMEWORK_COLUMNS = (
    "id",
    "name",
    "request_ms",
    "pd_request_ms",
    "step_ms",
    "graph_batch_multiple",
    "graph_max_batch",
    "kv_admission",
    "source",
)


def _framework_from_row(r: _Row) -> FrameworkSpec:
    return r.build(
        FrameworkSpec,
        id=r.text("id"),
        name=r.text("name"),
        request_s=r.number("request_ms") * 1e-3,
        step_s=r.number("step_ms") * 1e-3,
        pd_request_s=r.number("pd_request_ms") * 1e-3,
        graph_batch_multiple=r.number("graph_batch_multiple", integer=True),
        graph_max_batch=r.number("graph_max_batch", integer=True),
        kv_admission=r.text("kv_admission"),
        mla_prefill_floor_s=(r.number("mla_prefill_floor_ms", required=False) or 0.0) * 1e-3,
        prefill_graph_tokens=r.number("prefill_graph_tokens", required=False, integer=True) or 0,
        source=r.text("source"),
    )


@lru_cache(maxsize=4)
def frameworks(path: Path = DATA_DIR / "frameworks.csv") -> dict[str, FrameworkSpec]:
    """Serving frameworks (data/frameworks.csv): per-request and per-step costs, CUDA graphs."""
    return _load(path, FRAMEWORK_COLUMNS, _framework_from_row)


def get_framework(framework_id: str) -> FrameworkSpec:
    return _get(frameworks(), "framework", framework_id)


def get_stack(stack_id: str) -> StackSpec:
    return _get(stacks(), "stack", stack_id)


def model_ids() -> list[str]:
    """Canonical model ids in catalog order (aliases left out)."""
    return list(dict.fromkeys(m.id for m in models().values()))


def _get(table: dict, kind: str, key: str):
    if not isinstance(key, str) or key.strip().lower() not in table:
        raise UnknownIdError(kind, key, table)
    return table[key.strip().lower()]


def get_model(model_id: str) -> ModelSpec:
    return _get(models(), "model", model_id)


def get_link(link_id: str) -> LinkSpec:
    return _get(links(), "link", link_id)


def get_gpu(gpu_id: str) -> GpuSpec:
    return _get(gpus(), "GPU", gpu_id)
