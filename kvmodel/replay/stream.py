"""The requests a replay plays: the trace's own (timestamps, prompt, output and cached tokens per
request) or, for a workload without timestamps (a fixed length and rate, a histogram), Poisson
arrivals at its rate with lengths drawn by its weights, from a fixed seed (``traffic.SEED``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kvmodel.traffic.queue import SEED

MAX_REQUESTS = 10_000_000  # a longer replay is an input error (memory: ~1 KB per request)
MAX_SPAN_S = 31 * 86_400.0  # a trace spanning more than a month is not one deployment's day
DEFAULT_POISSON_REQUESTS = 20_000  # requests replayed when the workload has no timestamps


@dataclass(frozen=True, eq=False)
class Stream:
    """Requests in arrival order (SI units; times from the first arrival)."""

    arrival_s: np.ndarray  # float64, rising, first 0
    prompt_tokens: np.ndarray  # int64, clipped to the model's context
    output_tokens: np.ndarray  # int64 >= 1 (a request decodes at least its first token)
    cached_tokens: np.ndarray  # int64, prompt tokens a prefix cache holds (not computed or sent)
    poisson: bool  # True: arrivals drawn, not the trace's

    @property
    def n(self) -> int:
        return len(self.arrival_s)

    @property
    def span_s(self) -> float:
        return float(self.arrival_s[-1]) if self.n else 0.0


def _count(n) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 1 <= n <= MAX_REQUESTS:
        raise ValueError(f"a replay takes 1 to {MAX_REQUESTS:,} requests, got {n!r}")
    return int(n)


def _finish(t, prompt, output, cached, max_context: int, poisson: bool) -> Stream:
    order = np.argsort(t, kind="stable")
    t = t[order] - t[order[0]]
    span = float(t[-1])
    if not np.isfinite(span) or span > MAX_SPAN_S:
        raise ValueError(
            f"the trace spans {span / 86_400:,.1f} days; a replay covers at most "
            f"{MAX_SPAN_S / 86_400:,.0f} days: cut the trace, or check its timestamps' unit"
        )
    p = np.minimum(np.asarray(prompt, dtype=np.int64)[order], max_context)
    o = np.clip(np.rint(np.asarray(output, dtype=float)[order]), 1, max_context).astype(np.int64)
    c = np.zeros_like(p) if cached is None else np.minimum(np.asarray(cached)[order], p)
    return Stream(t, p, o, c.astype(np.int64), poisson)


def poisson_stream(workload, max_context: int, n: int = DEFAULT_POISSON_REQUESTS) -> Stream:
    """``n`` requests at ``workload.rps`` (Poisson), lengths drawn by its weights (seeded)."""
    n = _count(n)
    rng = np.random.default_rng(SEED)
    gaps = rng.exponential(1.0 / workload.rps, size=n)
    gaps[0] = 0.0
    k = len(workload.prompt_tokens)
    idx = np.zeros(n, dtype=np.int64) if k == 1 else rng.choice(k, size=n, p=workload.weights)
    cached = None if workload.cached_tokens is None else workload.cached_tokens[idx]
    return _finish(np.cumsum(gaps), workload.prompt_tokens[idx], workload.output_tokens[idx],
                   cached, max_context, poisson=True)  # fmt: skip


def trace_stream(requests, max_context: int, *, rps: float | None = None,
                 output_len: int | None = None) -> Stream:  # fmt: skip
    """The requests of a per-request :class:`kvmodel.traffic.Requests` with timestamps, in
    arrival order.  ``rps``: play them at this rate instead (the timestamps scaled); outputs
    ``output_len`` each when the trace has none."""
    if requests.arrival_s is None or requests.weights is not None:
        raise ValueError("the traffic has no per-request timestamps to replay")
    n = _count(len(requests.prompt_tokens))
    if n < 2:
        raise ValueError("a trace replay needs at least 2 timestamped requests")
    t = np.asarray(requests.arrival_s, dtype=float)
    if not np.all(np.isfinite(t)):
        raise ValueError("the trace's timestamps must be finite numbers")
    span = float(t.max() - t.min())
    if rps is not None and span > 0:
        t = t * ((n / span) / rps)  # the same shape of bursts at the rate asked
    if requests.output_tokens is not None:
        output = requests.output_tokens
    elif output_len is not None:
        output = np.full(n, int(output_len))
    else:
        raise ValueError("the traffic has no output lengths: give the output tokens per request")
    return _finish(t, requests.prompt_tokens, output, requests.cached_tokens, max_context,
                   poisson=False)  # fmt: skip


def stream_for(
    workload,
    max_context: int,
    requests=None,
    *,
    rps: float | None = None,
    output_len: int | None = None,
    n: int = DEFAULT_POISSON_REQUESTS,
) -> Stream:
    """The trace's own arrivals when ``requests`` has per-request timestamps, else Poisson
    arrivals of ``workload`` at its rate (``n`` requests)."""
    if requests is not None and requests.arrival_s is not None and requests.weights is None:
        return trace_stream(requests, max_context, rps=rps, output_len=output_len)
    return poisson_stream(workload, max_context, n)
