"""What the link has to carry: the traffic's load, queueing and decode idle time.

With an arrival rate λ (from timestamps, or given) the link is an M/G/1 queue whose service
times are the requests' own transfer times.  Utilisation ρ = λ·E[x]; the mean wait is
Pollaczek–Khinchine, λ·E[x²] / (2(1 − ρ)); percentiles come from a Lindley recursion over
Poisson arrivals and service times drawn from the trace (fixed seed, so results repeat).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..transfer import Scenario
from .analysis import Mix, per_length

SIM_REQUESTS = 200_000  # Lindley recursion length for percentiles
SEED = 20231116


def arrival_rate(mix: Mix, rps: float | None = None) -> float | None:
    """Requests per second: given, or n / span of the timestamps (None when neither)."""
    if rps is not None:
        if not rps > 0:
            raise ValueError(f"requests per second must be > 0, got {rps!r}")
        return float(rps)
    return mix.n_requests / mix.span_s if mix.span_s else None


@dataclass(frozen=True)
class Load:
    rps: float
    bytes_per_s: float  # demanded on the link
    capacity_bytes_per_s: float
    utilization: float
    stable: bool
    mean_wait_s: float  # Pollaczek–Khinchine (inf when unstable)
    p50_s: float  # transfer incl. queueing
    p90_s: float
    p99_s: float
    p99_share_of_ttft: float
    decode_idle_s_per_s: float  # decode-side seconds spent waiting for KV per second of traffic
    decode_steps_lost_per_s: float
    bandwidth_for_target_bytes_per_s: float | None  # per direction, p99 share ≤ share_target


def _sample(mix: Mix, n: int, rng) -> np.ndarray:
    p = mix.weights / mix.weights.sum()
    return rng.choice(len(mix.tokens), size=n, p=p)


def simulate_waits(service: np.ndarray, rate: float, rng) -> np.ndarray:
    """Waiting times of an FCFS queue with Poisson arrivals.

    Lindley's recursion W₀ = 0, W_{n+1} = max(0, W_n + X_n − A_n) unrolls to
    W_n = S_n − min_{k ≤ n} S_k with S_n = Σ_{i<n} (X_i − A_i), S₀ = 0: a cumulative sum and a
    running minimum instead of a Python loop over every request.
    """
    gaps = rng.exponential(1.0 / rate, size=len(service))
    s = np.concatenate(([0.0], np.cumsum(service[:-1] - gaps[:-1])))
    return np.maximum(s - np.minimum.accumulate(s), 0.0)


def load(sc: Scenario, mix: Mix, *, rps: float | None = None, sim_requests: int = SIM_REQUESTS):
    """Link load, queueing and decode idle time for the traffic (None without a rate)."""
    rate = arrival_rate(mix, rps)
    if rate is None:
        return None
    uniq, inverse, exposed, prefill, wire, whole = per_length(sc, mix.tokens)
    w = mix.weights / mix.weights.sum()
    x = whole[inverse]  # each request holds the link for its whole transfer
    ex, ex2 = float((w * x).sum()), float((w * x * x).sum())
    rho = rate * ex
    stable = rho < 1
    mean_wait = rate * ex2 / (2 * (1 - rho)) if stable else float("inf")
    rng = np.random.default_rng(SEED)
    idx = _sample(mix, sim_requests, rng)
    svc = x[idx]
    if stable:
        wait = simulate_waits(svc, rate, rng)
        total = wait + exposed[inverse][idx]
        share = total / (prefill[inverse][idx] + total + sc.decode_step_s)
        p50, p90, p99 = (float(np.percentile(total, q)) for q in (50, 90, 99))
        p99_share = float(np.percentile(share, 99))
        idle = rate * float(np.mean(total))
    else:  # the queue grows without bound
        p50 = p90 = p99 = idle = float("inf")
        p99_share = 1.0
    return Load(
        rps=rate,
        bytes_per_s=rate * float((w * wire[inverse]).sum()),
        capacity_bytes_per_s=sc.effective_bandwidth_bytes_per_s,
        utilization=rho,
        stable=stable,
        mean_wait_s=mean_wait,
        p50_s=p50,
        p90_s=p90,
        p99_s=p99,
        p99_share_of_ttft=p99_share,
        decode_idle_s_per_s=idle,
        decode_steps_lost_per_s=idle / sc.decode_step_s,
        bandwidth_for_target_bytes_per_s=_bandwidth_for_target(sc, mix, rate, idx),
    )


def _p99_share(sc: Scenario, mix: Mix, rate: float, idx: np.ndarray) -> float:
    _, inverse, exposed, prefill, _, whole = per_length(sc, mix.tokens)
    svc = whole[inverse][idx]
    w = mix.weights / mix.weights.sum()
    if rate * float((w * whole[inverse]).sum()) >= 1:
        return float("inf")
    wait = simulate_waits(svc, rate, np.random.default_rng(SEED + 1))
    total = wait + exposed[inverse][idx]
    share = total / (prefill[inverse][idx] + total + sc.decode_step_s)
    return float(np.percentile(share, 99))


def _bandwidth_for_target(sc: Scenario, mix: Mix, rate: float, idx: np.ndarray):
    """Smallest per-direction bandwidth whose p99 transfer share of TTFT ≤ the target."""
    idx = idx[:20_000]

    def at(bw):
        return _p99_share(
            replace(sc, link=replace(sc.link, bandwidth_bytes_per_s=bw)), mix, rate, idx
        )

    lo, hi = 1e6, 1e15
    if at(hi) > sc.share_target:
        return None  # latency or codec alone exceed the target
    for _ in range(60):
        mid = (lo * hi) ** 0.5
        if at(mid) <= sc.share_target:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1.01:
            break
    return hi
