"""Which part of real traffic gains from disaggregation, and what the link has to carry.

Every request moves the KV of its *uncached* prompt tokens (prefix-cache hits stay on the decode
side) on its own (batch 1).  Regions, by those tokens S:

- too short to gain:   S < min_seq_len (prefill is too small to be worth moving away)
- transfer-bound:      exposed transfer(S) ≥ k × decode step          (criterion "step")
                       or transfer share of TTFT(S) > share target      (criterion "share")
- gains:               everything else (the default: min_seq_len ≤ S < critical length)

Load: with an arrival rate λ (from timestamps, or given) the link is an M/G/1 queue whose
service times are the requests' own transfer times.  Utilisation ρ = λ·E[x]; the mean wait is
Pollaczek–Khinchine, λ·E[x²] / (2(1 − ρ)); percentiles come from a Lindley recursion over
Poisson arrivals and service times drawn from the trace (fixed seed, so results repeat).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from . import catalog
from .inputs import CRITERIA, DEFAULT_MIN_SEQ_LEN  # defined once, with every input
from .transfer import Scenario, Volume, critical_seq_len, transfer

SIM_REQUESTS = 200_000  # Lindley recursion length for percentiles
SEED = 20231116


@dataclass(frozen=True)
class Mix:
    """A request-length distribution: distinct moved-token counts with their request counts.

    Kept as a histogram so that a 10-million-request trace costs one pass to build and every
    later question (another link, another threshold) works on the distinct lengths only.
    """

    tokens: np.ndarray  # distinct uncached prompt tokens that must move, ascending
    weights: np.ndarray  # requests with that many tokens
    span_s: float | None = None  # time from first to last arrival, when the trace has times

    @property
    def n_requests(self) -> float:
        return float(self.weights.sum())


def _histogram(values: np.ndarray, weights: np.ndarray | None = None):
    """Distinct values and their (weighted) counts: bincount when dense, else unique."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and weights is None and 0 <= v.min() and v.max() < 50_000_000:
        counts = np.bincount(v)
        nz = np.flatnonzero(counts)
        return nz, counts[nz].astype(np.float64)
    uniq, inverse = np.unique(v, return_inverse=True)
    return uniq, np.bincount(inverse, weights=weights, minlength=len(uniq)).astype(np.float64)


def mix_from_requests(req, *, hit_ratio: float | None = None) -> Mix:
    """Build the moved-token mix from a ``traffic_io.Requests``.

    ``hit_ratio`` (0–1) removes that share of every prompt; without it, per-request
    ``cached_tokens`` (Mooncake ``hash_ids``) are used where the trace has them.
    """
    prompt = np.asarray(req.prompt_tokens, dtype=np.int64)
    weights = None if req.weights is None else np.asarray(req.weights, dtype=np.float64)
    if hit_ratio is not None:
        if not 0 <= hit_ratio < 1:
            raise ValueError(f"hit_ratio must be in [0, 1), got {hit_ratio!r}")
        moved = np.round(prompt * (1.0 - hit_ratio)).astype(np.int64)
    elif getattr(req, "cached_tokens", None) is not None:
        moved = np.maximum(prompt - np.asarray(req.cached_tokens, dtype=np.int64), 0)
    else:
        moved = prompt
    tokens, counts = _histogram(moved, weights)
    span = getattr(req, "span_s", None)
    if span is None and req.arrival_s is not None and len(req.arrival_s) > 1:
        t = np.asarray(req.arrival_s, dtype=np.float64)
        span = float(np.nanmax(t) - np.nanmin(t)) or None
    return Mix(tokens=tokens, weights=counts, span_s=span)


def per_request_scenario(sc: Scenario) -> Scenario:
    """The scenario as traffic sees it: one request at a time, prefill estimated per length."""
    return replace(sc, batch=1, prefill_s=None, seq_len=1)


def _per_length(sc: Scenario, tokens: np.ndarray, volume: Volume | None = None):
    """Transfer quantities per unique length (estimated prefill per length), and the inverse.

    ``volume``: from ``_length_volume`` of a scenario differing from ``sc`` only per link.
    """
    uniq, inverse = np.unique(tokens, return_inverse=True)
    sc1 = per_request_scenario(sc)
    if volume is None:
        t = transfer(sc1, seq_len=np.minimum(uniq, sc.model.max_context_tokens))
    else:
        t = transfer(sc1, volume=volume)
    exposed = np.atleast_1d(t.exposed_s)
    prefill = np.atleast_1d(t.prefill_s)
    wire = np.atleast_1d(t.wire_bytes)
    whole = np.atleast_1d(t.transfer_s)
    return uniq, inverse, exposed, prefill, wire, whole


def _length_volume(sc: Scenario, tokens: np.ndarray) -> Volume:
    """Bytes and prefill per unique length: shared by scenarios that differ only per link."""
    uniq = np.unique(tokens)
    return Volume(per_request_scenario(sc), seq_len=np.minimum(uniq, sc.model.max_context_tokens))


def classify(
    sc: Scenario,
    tokens: np.ndarray,
    *,
    min_seq_len: int = DEFAULT_MIN_SEQ_LEN,
    criterion: str = "step",
    _volume: Volume | None = None,
) -> np.ndarray:
    """Region per entry: 0 too short, 1 gains, 2 transfer-bound."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    uniq, inverse, exposed, prefill, _, _ = _per_length(sc, tokens, _volume)
    if criterion == "step":
        bound = exposed >= sc.k * sc.decode_step_s
    else:
        share = exposed / (prefill + exposed + sc.decode_step_s)
        bound = share > sc.share_target
    region = np.where(uniq < min_seq_len, 0, np.where(bound, 2, 1))
    return region[inverse]


def critical_for_traffic(sc: Scenario, *, criterion: str = "step") -> int | None:
    """Smallest S that is transfer-bound for one request under ``criterion`` (None: never)."""
    sc1 = replace(sc, batch=1, prefill_s=None, seq_len=1)
    if criterion == "step":
        return critical_seq_len(sc1)
    grid = np.arange(1, sc.model.max_context_tokens + 1, dtype=np.int64)
    if grid.size > 2_000_000:  # very long contexts: a log grid refined by a scan
        grid = np.unique(np.geomspace(1, sc.model.max_context_tokens, 200_000).astype(np.int64))
    t = transfer(sc1, seq_len=grid)
    share = t.exposed_s / (t.prefill_s + t.exposed_s + sc.decode_step_s)
    hit = np.nonzero(share > sc.share_target)[0]
    return int(grid[hit[0]]) if hit.size else None


@dataclass(frozen=True)
class Regions:
    n_requests: float
    fraction_too_short: float
    fraction_gain: float
    fraction_transfer_bound: float
    tokens_too_short: float
    tokens_gain: float
    tokens_transfer_bound: float
    critical_seq_len: int | None
    min_seq_len: int
    criterion: str
    n_over_context: float = 0.0  # requests longer than the model's max context (counted at it)

    @property
    def fraction_tokens_gain(self) -> float:
        total = self.tokens_too_short + self.tokens_gain + self.tokens_transfer_bound
        return self.tokens_gain / total if total else 0.0


def regions(
    sc: Scenario,
    mix: Mix,
    *,
    min_seq_len: int = DEFAULT_MIN_SEQ_LEN,
    criterion: str = "step",
    _volume: Volume | None = None,
) -> Regions:
    """Fractions of requests and of tokens in each region.

    A request longer than the model's max context counts as that long, for its tokens as for
    its transfer (``n_over_context`` says how many there are: a trace from another model, or
    bad lengths).
    """
    reg = classify(sc, mix.tokens, min_seq_len=min_seq_len, criterion=criterion, _volume=_volume)
    w = mix.weights
    ctx = sc.model.max_context_tokens
    tok = np.minimum(mix.tokens, ctx) * w
    n = w.sum()
    if n <= 0:
        raise ValueError("the traffic holds no requests")
    by_req = [float(w[reg == r].sum() / n) for r in (0, 1, 2)]
    by_tok = [float(tok[reg == r].sum()) for r in (0, 1, 2)]
    return Regions(
        n_requests=float(n),
        fraction_too_short=by_req[0],
        fraction_gain=by_req[1],
        fraction_transfer_bound=by_req[2],
        tokens_too_short=by_tok[0],
        tokens_gain=by_tok[1],
        tokens_transfer_bound=by_tok[2],
        critical_seq_len=critical_for_traffic(sc, criterion=criterion),
        min_seq_len=min_seq_len,
        criterion=criterion,
        n_over_context=float(w[mix.tokens > ctx].sum()),
    )


def comparison(
    sc: Scenario,
    mix: Mix,
    *,
    link_ids,
    compressions=("none", "int8", "int4"),
    layerwise=(False, True),
    min_seq_len: int = DEFAULT_MIN_SEQ_LEN,
    criterion: str = "step",
) -> list[dict]:
    """Fraction of requests (and tokens) that gain, per link × compression × layer-wise."""
    rows = []
    volume = _length_volume(sc, mix.tokens)  # the same bytes and prefill on every row
    for lid in link_ids:
        link = catalog.get_link(lid)
        for comp in compressions:
            for lw in layerwise:
                s = replace(sc, link=link, compression=comp, layerwise=lw)
                r = regions(s, mix, min_seq_len=min_seq_len, criterion=criterion, _volume=volume)
                rows.append(
                    {
                        "link": lid,
                        "link_name": link.name,
                        "compression": comp,
                        "layerwise": lw,
                        "fraction_requests_gain": r.fraction_gain,
                        "fraction_tokens_gain": r.fraction_tokens_gain,
                        "fraction_transfer_bound": r.fraction_transfer_bound,
                        "critical_seq_len": r.critical_seq_len,
                    }
                )
    return rows


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


def _simulate(service: np.ndarray, rate: float, rng) -> np.ndarray:
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
    uniq, inverse, exposed, prefill, wire, whole = _per_length(sc, mix.tokens)
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
        wait = _simulate(svc, rate, rng)
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
    _, inverse, exposed, prefill, _, whole = _per_length(sc, mix.tokens)
    svc = whole[inverse][idx]
    w = mix.weights / mix.weights.sum()
    if rate * float((w * whole[inverse]).sum()) >= 1:
        return float("inf")
    wait = _simulate(svc, rate, np.random.default_rng(SEED + 1))
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


@dataclass(frozen=True)
class Window:
    """Prefill locally below ``l_min``, disaggregate in [l_min, l_max), warn at and above l_max."""

    l_min: int
    l_max: int | None  # None: no upper limit up to the model's max context
    fraction_local: float
    fraction_disaggregated: float
    fraction_warn: float
    exists: bool


def recommended_window(
    sc: Scenario, mix: Mix, *, min_seq_len: int = DEFAULT_MIN_SEQ_LEN, criterion: str = "step"
) -> Window:
    """Conditional-disaggregation window from the scenario's critical length and the traffic."""
    crit = critical_for_traffic(sc, criterion=criterion)
    w = mix.weights / mix.weights.sum()
    s = mix.tokens
    local = float(w[s < min_seq_len].sum())
    warn = float(w[s >= crit].sum()) if crit is not None else 0.0
    exists = crit is None or crit > min_seq_len
    if not exists:
        return Window(min_seq_len, crit, local, 0.0, 1.0 - local, False)
    return Window(min_seq_len, crit, local, 1.0 - local - warn, warn, True)


TRACES_DIR = catalog.DATA_DIR / "traces"
SAMPLES = {
    "azure-conv": (
        "azure2023/AzureLLMInferenceTrace_conv.csv",
        "Azure LLM inference 2023: conversation",
        "Azure LLM inference trace 2023, Microsoft Azure (AzurePublicDataset), CC-BY-4.0; "
        "Patel et al., Splitwise, ISCA 2024",
    ),
    "azure-code": (
        "azure2023/AzureLLMInferenceTrace_code.csv",
        "Azure LLM inference 2023: code",
        "Azure LLM inference trace 2023, Microsoft Azure (AzurePublicDataset), CC-BY-4.0; "
        "Patel et al., Splitwise, ISCA 2024",
    ),
    "mooncake": (
        "mooncake/conversation_trace.jsonl",
        "Mooncake FAST'25: conversation (with prefix-cache blocks)",
        "Mooncake FAST'25 conversation trace, kvcache-ai/Mooncake, Apache-2.0; "
        "Qin et al., FAST 2025",
    ),
    "burstgpt": (
        "samples/burstgpt_sample.csv",
        "BurstGPT layout (synthetic sample)",
        "synthetic sample in the BurstGPT CSV layout, written for this project",
    ),
    "vllm-prom": (
        "samples/vllm_metrics_sample.prom",
        "vLLM /metrics scrape (synthetic sample)",
        "synthetic sample of vLLM's Prometheus exposition, written for this project",
    ),
}
DEFAULT_SAMPLE = "azure-conv"


def sample_path(sample_id: str):
    if sample_id not in SAMPLES:
        raise catalog.UnknownIdError("trace", sample_id, SAMPLES)
    return TRACES_DIR / SAMPLES[sample_id][0]
