"""A serving framework's costs beyond the GPU work (``data/frameworks.csv``): per request, per
P/D request, per decode step, and the CUDA-graph batch padding (docs/model.md, "Serving
frameworks")."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

KV_ADMISSIONS = ("on_demand", "reserve_output")


@dataclass(frozen=True)
class FrameworkSpec:
    """A serving engine's costs beyond the GPU work (``data/frameworks.csv``).

    ``request_s`` once per request before its prefill (HTTP, tokenizer, scheduling), and
    ``pd_request_s`` more when prefill and decode are disaggregated (the proxy or router hop and
    the decode instance's admission); ``step_s`` once per decode step (the scheduler's and
    sampler's host time that CUDA graphs do not hide); a decode batch is padded up to a multiple of
    ``graph_batch_multiple`` (the captured CUDA-graph sizes) up to ``graph_max_batch``.
    ``kv_admission``: how a decode instance admits a request into KV memory, ``on_demand``
    (paged blocks as tokens arrive, preemption when full: vLLM, SGLang) or ``reserve_output``
    (prompt + the whole output reserved up front, never evicted: TensorRT-LLM's default
    ``GUARANTEED_NO_EVICT`` capacity scheduler).  ``prefill_graph_tokens``: a prefill pass of
    at most this many tokens replays captured CUDA graphs (vLLM V1's piecewise graphs for prefill
    and mixed batches up to its largest capture size), so it pays the decode step's per-layer
    launch floor instead of an eager pass's; 0: every prefill pass runs eagerly.
    """

    id: str
    name: str
    request_s: float
    step_s: float
    pd_request_s: float = 0.0  # more per request when disaggregated: the proxy/router hop
    graph_batch_multiple: int = 8
    graph_max_batch: int = 512
    kv_admission: str = "on_demand"
    # a prefill pass of an MLA model takes at least this long (the host launching an eager
    # MLA + MoE layer's kernels bounds a short prompt; the GPU works under it) [s]
    mla_prefill_floor_s: float = 0.0
    prefill_graph_tokens: int = 0
    source: str = ""

    def __post_init__(self):
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"id must be a non-empty string, got {self.id!r}")
        for name in ("request_s", "step_s", "pd_request_s", "mla_prefill_floor_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")
            if v < 0:
                raise ValueError(f"{name} must be >= 0, got {v!r}")
        if self.kv_admission not in KV_ADMISSIONS:
            raise ValueError(f"kv_admission must be one of {', '.join(KV_ADMISSIONS)}, got "
                             f"{self.kv_admission!r}")  # fmt: skip
        for name in ("graph_batch_multiple", "graph_max_batch"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a whole number >= 1, got {v!r}")
        v = self.prefill_graph_tokens
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"prefill_graph_tokens must be a whole number >= 0, got {v!r}")

    @property
    def reserves_output(self) -> bool:
        """Whether a request's KV memory is its prompt + whole output from admission on."""
        return self.kv_admission == "reserve_output"

    def request_cost_s(self, disaggregated: bool = True) -> float:
        """What one request pays before its prefill [s]: ``request_s``, plus ``pd_request_s``
        when prefill and decode run on different instances."""
        return self.request_s + (self.pd_request_s if disaggregated else 0.0)

    def padded_batch(self, batch):
        """The batch a CUDA-graph replay computes: ``batch`` rounded up to the multiple (1, 2
        and 4 are captured too), unchanged above ``graph_max_batch`` (eager)."""
        b = np.asarray(batch, dtype=float)
        m = float(self.graph_batch_multiple)
        small = np.where(b <= 1, 1.0, np.where(b <= 2, 2.0, np.where(b <= 4, 4.0, b)))
        padded = np.where(b <= 4, small, np.ceil(b / m) * m)
        return np.where(b > self.graph_max_batch, b, padded)
