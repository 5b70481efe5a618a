"""What a capacity plan sizes: the traffic (:class:`Workload`) and the targets (:class:`Slo`).

A workload is a request-length distribution (prompt and output tokens per entry, with weights)
and an arrival rate.  :class:`Shape` is its rate-independent summary for one model: the distinct
prompt lengths a prefill computes and sends, their probabilities, and the decode-side moments.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from kvmodel.capacity.queue import Draws, make_draws

DENSE_LENGTHS = 50_000_000  # below this max context, lengths are counted with one bincount


def _mean_tokens(name: str, value) -> np.ndarray:
    """Output tokens per entry: whole numbers, or a mean when an entry stands for several
    requests (``Workload.from_requests`` of counts per length), finite and >= 0."""
    arr = np.atleast_1d(np.asarray(value))
    if arr.dtype.kind in "iu":
        return _tokens(name, arr)
    if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise ValueError(f"{name} must be numbers of tokens >= 0, got {value!r}")
    return arr


def _tokens(name: str, value) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(value))
    if arr.dtype.kind in "iu":  # whole already: one pass for the sign (10 million in ~10 ms)
        if arr.size and arr.min() < 0:
            raise ValueError(f"{name} must be whole numbers >= 0")
        return arr.astype(np.int64, copy=False)
    if arr.dtype.kind != "f" or not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be numbers of tokens, got {value!r}")
    if np.any(arr < 0) or np.any(arr != np.floor(arr)):
        raise ValueError(f"{name} must be whole numbers >= 0")
    return arr.astype(np.int64)


@dataclass(frozen=True, eq=False)  # arrays: compared by identity, never element-wise
class Workload:
    """Requests to serve: per entry prompt and output tokens, a weight, and the arrival rate.
    Output tokens may be fractional: an entry then stands for requests of that mean output.

    ``weights`` are probabilities (scaled to sum to 1 on construction).  ``cached_tokens``:
    prompt tokens a prefix cache already holds (they are neither computed nor sent).
    """

    prompt_tokens: np.ndarray
    output_tokens: np.ndarray
    weights: np.ndarray
    rps: float
    cached_tokens: np.ndarray | None = None
    source: str = field(default="", compare=False)  # where it came from, for notes

    def __post_init__(self):
        p = _tokens("prompt_tokens", self.prompt_tokens)
        o = _mean_tokens("output_tokens", self.output_tokens)
        w = np.atleast_1d(np.asarray(self.weights, dtype=float))
        if not (len(p) == len(o) == len(w)) or len(p) == 0:
            raise ValueError(
                f"prompt_tokens, output_tokens and weights need the same non-zero length, got "
                f"{len(p)}, {len(o)} and {len(w)}"
            )
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, >= 0 and not all 0")
        rps = self.rps
        if isinstance(rps, bool) or not isinstance(rps, (int, float)) or not 0 < rps < math.inf:
            raise ValueError(f"the arrival rate must be > 0 requests/s, got {rps!r}")
        object.__setattr__(self, "prompt_tokens", p)
        object.__setattr__(self, "output_tokens", o)
        object.__setattr__(self, "weights", w / w.sum())
        object.__setattr__(self, "rps", float(rps))
        if self.cached_tokens is not None:
            c = _tokens("cached_tokens", self.cached_tokens)
            if len(c) != len(p):
                raise ValueError("cached_tokens needs one entry per prompt")
            object.__setattr__(self, "cached_tokens", np.minimum(c, p))

    @classmethod
    def fixed(cls, rps: float, seq_len: int, output_len: int) -> Workload:
        """Every request ``seq_len`` prompt tokens and ``output_len`` output tokens."""
        return cls(np.array([seq_len]), np.array([output_len]), np.array([1.0]), rps,
                   source=f"{seq_len:,} prompt + {output_len:,} output tokens")  # fmt: skip

    @classmethod
    def from_requests(cls, requests, rps: float | None = None, *, output_len: int | None = None):
        """From a :class:`kvmodel.traffic.Requests`.

        ``rps`` None: requests ÷ the span of the trace's timestamps (an error without them).
        ``output_len``: the output tokens of every request when the trace has none (an error
        when neither is there).
        """
        prompt = np.asarray(requests.prompt_tokens, dtype=np.int64)
        n = len(prompt)
        if n == 0:
            raise ValueError("the traffic holds no requests")
        weights = (
            np.ones(n) if requests.weights is None else np.asarray(requests.weights, dtype=float)
        )
        cached = requests.cached_tokens
        if requests.output_tokens is not None:
            output = np.asarray(requests.output_tokens, dtype=np.int64)
        elif requests.output_moments is not None:
            prompt, output, weights = _two_points(prompt, requests.output_moments, weights)
            if cached is not None:
                cached = np.concatenate([cached, cached])
        elif output_len is not None:
            output = np.full(n, int(output_len), dtype=np.int64)
        else:
            raise ValueError(
                "the traffic has no output lengths: give the output tokens per request "
                "(--output-len)"
            )
        if rps is None:
            rps = cls.trace_rps(requests)
        return cls(prompt, output, weights, float(rps), cached, source=requests.fmt)

    @staticmethod
    def trace_rps(requests) -> float:
        """The arrival rate of a :class:`kvmodel.traffic.Requests` [requests/s]: requests ÷
        the span of its timestamps (ValueError without them)."""
        span = requests.span_s
        n = len(requests.prompt_tokens)
        if span is None and requests.arrival_s is not None and n > 1:
            t = np.asarray(requests.arrival_s, dtype=float)
            span = float(np.nanmax(t) - np.nanmin(t)) or None
        if not span or not requests.count_known:
            raise ValueError(
                "the traffic has no timestamps to tell its arrival rate: give the rate "
                "in requests/s (--rps)"
            )
        return requests.n_requests / span

    def with_rps(self, rps: float) -> Workload:
        return Workload(self.prompt_tokens, self.output_tokens, self.weights, rps,
                        self.cached_tokens, self.source)  # fmt: skip

    @property
    def mean_prompt_tokens(self) -> float:
        return float((self.weights * self.prompt_tokens).sum())

    @property
    def mean_output_tokens(self) -> float:
        return float((self.weights * self.output_tokens).sum())


def _two_points(prompt, moments, weights):
    """Counts per prompt length with their output tokens' mean m and mean square q, as two
    entries per length that keep both exactly (all the plan reads of the outputs, ``shape``):
    m − σ and m + σ at half the weight each (σ² = q − m²); when σ > m, 0 and q/m at weights
    1 − m²/q and m²/q (outputs are never negative)."""
    m = np.asarray(moments[:, 0], dtype=float)
    q = np.maximum(np.asarray(moments[:, 1], dtype=float), m * m)
    sd = np.sqrt(q - m * m)
    sym = m >= sd
    safe_m = np.where(m > 0, m, 1.0)
    safe_q = np.where(q > 0, q, 1.0)
    lo = np.where(sym, m - sd, 0.0)
    hi = np.where(sym, m + sd, q / safe_m)
    share_hi = np.where(sym, 0.5, m * m / safe_q)
    return (np.concatenate([prompt, prompt]), np.concatenate([lo, hi]),
            np.concatenate([weights * (1 - share_hi), weights * share_hi]))  # fmt: skip


@dataclass(frozen=True)
class Slo:
    """Latency targets: TTFT at a percentile and the mean time per output token [s]."""

    ttft_s: float
    tpot_s: float
    ttft_percentile: float = 90.0

    def __post_init__(self):
        for name in ("ttft_s", "tpot_s"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
                raise ValueError(f"{name} must be a time > 0 s, got {v!r}")
        q = self.ttft_percentile
        if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0 < q < 100:
            raise ValueError(f"ttft_percentile must be in (0, 100), got {q!r}")


@dataclass(frozen=True)
class Shape:
    """A workload's rate-independent summary for one model (module doc)."""

    moved: np.ndarray  # distinct prompt tokens computed and sent (uncached, ≥ 1, ≤ max context)
    weights: np.ndarray  # probability of each
    mean_moved: float
    mean_output: float
    decode_context: int  # mean tokens a decode slot holds, weighted by the time it holds them
    longest_prompt: int
    draws: Draws
    clipped: float  # share of requests whose prompt or output is longer than the max context
    # mean cached prompt tokens before each moved length (their attention is computed too:
    # ``timing.prefill_flops``); None when no request has a cached prefix
    prefix: np.ndarray | None = None
    # the mean square of the tokens a decode slot holds, weighted by the time it holds them
    # (a request's KV grows from p to p + o over its stay: p² + p·o + o²/3 on average);
    # 0: unknown (``capacity.pools.memory_batch`` then leaves no room for fluctuation)
    decode_context_sq: float = 0.0
    # what a slot reserves when the framework reserves the whole output at admission
    # (prompt + output, weighted by the time it holds it), and its mean square
    reserve_context: int = 0
    reserve_context_sq: float = 0.0


def shape(workload: Workload, max_context: int) -> Shape:
    """The summary of ``workload`` for a model with ``max_context`` tokens."""
    w = workload.weights
    p = np.minimum(workload.prompt_tokens, max_context)
    cached = 0 if workload.cached_tokens is None else workload.cached_tokens
    moved = np.clip(p - cached, 1, max_context)
    ahead = p - moved  # the cached tokens before the moved ones (prefix + moved = prompt)
    has_prefix = workload.cached_tokens is not None and bool(np.any(ahead > 0))
    prefix = None
    if max_context <= DENSE_LENGTHS:  # one pass (a sort of 10 million lengths takes ~1 s)
        counts = np.bincount(moved, weights=w)
        uniq = np.flatnonzero(counts)
        uw = counts[uniq]
        if has_prefix:
            prefix = np.bincount(moved, weights=w * ahead, minlength=len(counts))[uniq] / uw
    else:
        uniq, inverse = np.unique(moved, return_inverse=True)
        uw = np.bincount(inverse, weights=w, minlength=len(uniq))
        if has_prefix:
            prefix = np.bincount(inverse, weights=w * ahead, minlength=len(uniq)) / uw
    o = np.minimum(workload.output_tokens, max_context)  # no answer outgrows the context
    wo = w * o  # one temporary per product over the requests (10 million: ~80 MB each)
    held = float(wo.sum())
    # a request holds a slot for o steps with p + o/2 tokens on average over them
    ctx = (float(wo @ p) + float(wo @ o) / 2) / held if held > 0 else float(w @ p)
    pf = p.astype(float)
    oo = float(wo @ (o * o.astype(float)))
    pp, po = float(wo @ (pf * pf)), float(wo @ (pf * o))
    sq = (pp + po + oo / 3) / held if held > 0 else float(w @ (pf * pf))
    whole = (float(wo @ p) + float(wo @ o)) / held if held > 0 else float(w @ p)
    whole_sq = (pp + 2 * po + oo) / held if held > 0 else float(w @ (pf * pf))
    return Shape(
        moved=uniq,
        weights=uw,
        mean_moved=float((uw * uniq).sum()),
        mean_output=held,
        decode_context=int(min(max(math.ceil(ctx), 1), max_context)),
        longest_prompt=int(max(p.max(), 1)),
        draws=make_draws(uw),
        clipped=float(
            w[(workload.prompt_tokens > max_context) | (workload.output_tokens > max_context)].sum()
        ),  # fmt: skip
        prefix=prefix,
        decode_context_sq=sq,
        reserve_context=int(min(max(math.ceil(whole), 1), max_context)),
        reserve_context_sq=whole_sq,
    )
