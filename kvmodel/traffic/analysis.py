"""Which part of real traffic gains from disaggregation.

Every request moves the KV of its *uncached* prompt tokens (prefix-cache hits stay on the decode
side) on its own (batch 1).  Regions, by those tokens S:

- too short to gain:   S < min_seq_len (prefill is too small to be worth moving away)
- transfer-bound:      exposed transfer(S) ≥ k × decode step          (criterion "step")
                       or transfer share of TTFT(S) > share target      (criterion "share")
- gains:               everything else (the default: min_seq_len ≤ S < critical length)

What the link has to carry under load is in :mod:`.queue`.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from .. import catalog
from ..inputs import CRITERIA, DEFAULT_MIN_SEQ_LEN  # defined once, with every input
from ..kept import Kept
from ..topology import unbuildable_links
from ..transfer import Scenario, Volume, critical_seq_len, transfer


@dataclass(frozen=True)
class Mix:
    """A request-length distribution: distinct moved-token counts with their request counts.

    Kept as a histogram so that a 10-million-request trace costs one pass to build and every
    later question (another link, another threshold) works on the distinct lengths only.
    """

    tokens: np.ndarray  # distinct uncached prompt tokens that must move, ascending
    weights: np.ndarray  # requests with that many tokens
    span_s: float | None = None  # time from first to last arrival, when the trace has times
    # mean cached prompt tokens before each length (prefix-cache hits: the moved tokens attend
    # to them, so their prefill is longer); None when no request has a cached prefix
    prefix: np.ndarray | None = None

    @property
    def n_requests(self) -> float:
        return float(self.weights.sum())

    @property
    def mean_prefix(self) -> float:
        """Mean cached prompt tokens ahead of a request's moved ones (0 without a prefix)."""
        if self.prefix is None or self.weights.sum() <= 0:
            return 0.0
        return float((self.prefix * self.weights).sum() / self.weights.sum())


DENSE_MAX = 50_000_000  # lengths below this are counted by bincount (one pass), not unique


def _histogram(values: np.ndarray, weights: np.ndarray | None = None):
    """Distinct values and their (weighted) counts: bincount when dense, else unique."""
    v = np.asarray(values, dtype=np.int64)
    if v.size and weights is None and 0 <= v.min() and v.max() < DENSE_MAX:
        counts = np.bincount(v)
        nz = np.flatnonzero(counts)
        return nz, counts[nz].astype(np.float64)
    uniq, inverse = np.unique(v, return_inverse=True)
    return uniq, np.bincount(inverse, weights=weights, minlength=len(uniq)).astype(np.float64)


def mix_from_requests(req, *, hit_ratio: float | None = None) -> Mix:
    """Build the moved-token mix from a :class:`~kvmodel.traffic.Requests`.

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
    prefix = _prefix_means(moved, prompt - moved, weights, tokens, counts)
    span = getattr(req, "span_s", None)
    if span is None and req.arrival_s is not None and len(req.arrival_s) > 1:
        t = np.asarray(req.arrival_s, dtype=np.float64)
        span = float(np.nanmax(t) - np.nanmin(t)) or None
    return Mix(tokens=tokens, weights=counts, span_s=span, prefix=prefix)


def _prefix_means(moved, ahead, weights, tokens, counts) -> np.ndarray | None:
    """Per distinct moved length (``tokens``, their request ``counts``), the mean cached tokens
    ahead of it; None when no request has any."""
    ahead = np.maximum(ahead, 0)
    if not ahead.any():
        return None
    wa = ahead.astype(np.float64) if weights is None else ahead * weights
    top = int(tokens[-1]) if len(tokens) else 0
    if top <= DENSE_MAX:  # one pass, as _histogram's dense case
        total = np.bincount(moved, weights=wa, minlength=top + 1)[tokens]
    else:
        total = np.bincount(np.searchsorted(tokens, moved), weights=wa, minlength=len(tokens))
    return np.divide(total, counts, out=np.zeros(len(tokens)), where=counts > 0)


def per_request_scenario(sc: Scenario) -> Scenario:
    """The scenario as traffic sees it: one request at a time, prefill estimated per length.
    The sidebar's prompt length stays: an estimated decode step is the one request's at it,
    as the other pages have it at batch 1 (at length 1 the step was shorter, and Traffic's
    critical length read 2,555 tokens beside Overview's 2,559: session 20's browser review)."""
    return replace(sc, batch=1, prefill_s=None)


def per_length(sc: Scenario, tokens: np.ndarray, volume: Volume | None = None,
               prefix: np.ndarray | None = None):  # fmt: skip
    """Transfer quantities per unique length (estimated prefill per length), and the inverse.

    ``volume``: from ``length_volume`` of a scenario differing from ``sc`` only per link;
    ``prefix``: cached tokens ahead of each entry of ``tokens`` (``Mix.prefix``), whose
    attention the prefill computes too.
    """
    uniq, inverse = np.unique(tokens, return_inverse=True)
    sc1 = per_request_scenario(sc)
    if volume is None:
        t = transfer(sc1, seq_len=np.minimum(uniq, sc.model.max_context_tokens),
                     prefix=unique_prefix(prefix, inverse, len(uniq)))  # fmt: skip
    else:
        t = transfer(sc1, volume=volume)
    exposed = np.atleast_1d(t.exposed_s)
    prefill = np.atleast_1d(t.prefill_s)
    wire = np.atleast_1d(t.wire_bytes)
    whole = np.atleast_1d(t.transfer_s)
    return uniq, inverse, exposed, prefill, wire, whole


def unique_prefix(prefix: np.ndarray | None, inverse: np.ndarray, n: int) -> np.ndarray | None:
    """``prefix`` (one per entry) as one mean per unique length (``inverse``: entry → length)."""
    if prefix is None:
        return None
    counts = np.bincount(inverse, minlength=n)
    total = np.bincount(inverse, weights=np.asarray(prefix, dtype=np.float64), minlength=n)
    return total / np.maximum(counts, 1)


def length_volume(sc: Scenario, tokens: np.ndarray, prefix: np.ndarray | None = None) -> Volume:
    """Bytes and prefill per unique length: shared by scenarios that differ only per link."""
    uniq, inverse = np.unique(tokens, return_inverse=True)
    return Volume(per_request_scenario(sc), seq_len=np.minimum(uniq, sc.model.max_context_tokens),
                  prefix=unique_prefix(prefix, inverse, len(uniq)))  # fmt: skip


def classify(
    sc: Scenario,
    tokens: np.ndarray,
    *,
    min_seq_len: int = DEFAULT_MIN_SEQ_LEN,
    criterion: str = "step",
    _volume: Volume | None = None,
    prefix: np.ndarray | None = None,
) -> np.ndarray:
    """Region per entry: 0 too short, 1 gains, 2 transfer-bound (``prefix``: ``Mix.prefix``,
    the cached tokens ahead of each entry)."""
    return _with_min_len(_bound(sc, tokens, criterion, _volume, prefix), min_seq_len)


def _bound(sc: Scenario, tokens: np.ndarray, criterion: str, volume: Volume | None,
           prefix: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """(distinct lengths, entry → length, whether each length is transfer-bound): what
    ``classify`` finds whatever the "too short" length."""
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {criterion!r}")
    uniq, inverse, exposed, prefill, _, _ = per_length(sc, tokens, volume, prefix)
    if criterion == "step":
        bound = exposed >= sc.k * sc.decode_step_s
    else:
        share = exposed / sc.ttft_s(prefill, exposed)
        bound = share > sc.share_target
    return uniq, inverse, bound


def _with_min_len(classified: tuple, min_seq_len: int) -> np.ndarray:
    """``classify``'s regions from ``_bound``'s answer and the "too short" length."""
    uniq, inverse, bound = classified
    region = np.where(uniq < min_seq_len, 0, np.where(bound, 2, 1))
    return region[inverse]


@lru_cache(maxsize=256)
def critical_for_traffic(sc: Scenario, *, criterion: str = "step") -> int | None:
    """Smallest S that is transfer-bound for one request under ``criterion`` (None: never).

    Memoised per scenario and criterion: the Traffic page asks it for each of the ~24 options
    it compares, on every change of the traffic's own thresholds (the "too short" length, the
    rate), which leave it as it was (``bench/README.md``, Session 12)."""
    sc1 = per_request_scenario(sc)
    if criterion == "step":
        return critical_seq_len(sc1)
    ctx = sc.model.max_context_tokens
    if ctx > 2_000_000:  # very long contexts: a log grid refined by a scan (never a full range)
        grid = np.unique(np.geomspace(1, ctx, 200_000).astype(np.int64))
    else:
        grid = np.arange(1, ctx + 1, dtype=np.int64)
    t = transfer(sc1, seq_len=grid)
    share = t.exposed_s / sc.ttft_s(t.prefill_s, t.exposed_s)
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
    reg = classify(sc, mix.tokens, min_seq_len=min_seq_len, criterion=criterion, _volume=_volume,
                   prefix=mix.prefix)  # fmt: skip
    return _tally(sc, mix, reg, min_seq_len, criterion)


def _tally(sc: Scenario, mix: Mix, reg: np.ndarray, min_seq_len: int, criterion: str) -> Regions:
    """``regions`` of the regions per entry ``reg`` (``classify``)."""
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
    """Fraction of requests (and tokens) that gain, per link × compression × layer-wise;
    ``buildable`` False for a scale-up link whose domain cannot hold the scenario's prefill and
    decode instances together (``topology.unbuildable_links``)."""
    rows = []
    key = (sc, tuple(link_ids), tuple(compressions), tuple(layerwise), criterion, id(mix))
    hit = _OPTIONS.get(key)
    kept = hit[1] if hit is not None and hit[0]() is mix else None
    built = []
    # each option tallied as it is made (an error comes from the same option as before)
    for option in kept or _options(sc, mix, link_ids, compressions, layerwise, criterion):
        lid, link, comp, lw, s, classified, buildable = option
        r = _tally(s, mix, _with_min_len(classified, min_seq_len), min_seq_len, criterion)
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
                "buildable": buildable,
            }
        )
        built.append(option)
    if kept is None:
        _OPTIONS.put(key, (weakref.ref(mix), tuple(built)))
    return rows


# comparison's options, whatever the "too short" length: (scenario, links, compressions,
# layer-wise, criterion, id(mix)) -> (weak reference to the mix, options).  The Traffic page's
# "too short" control re-tallied 24 options, each a transfer over the trace's lengths and a
# validated Scenario (~5 ms a change); a mix is keyed by identity, as a plan's basis is
# (kvmodel.capacity.prep), the weak reference telling a live mix from a new one at its id.
_OPTIONS = Kept(4)


def _options(sc: Scenario, mix: Mix, link_ids, compressions, layerwise, criterion: str):
    """Each option's (link id, link, compression, layer-wise, scenario, ``_bound``,
    buildable), made one at a time."""
    volume = length_volume(sc, mix.tokens, mix.prefix)  # the same bytes and prefill each row
    for lid in link_ids:
        link = catalog.get_link(lid)
        for comp in compressions:
            for lw in layerwise:
                s = replace(sc, link=link, compression=comp, layerwise=lw)
                classified = _bound(s, mix.tokens, criterion, volume, mix.prefix)
                for a in classified:
                    a.flags.writeable = False  # shared by every later call
                buildable = not unbuildable_links(sc.gpu, sc.gpus_prefill, sc.gpus_decode, [link])
                yield lid, link, comp, lw, s, classified, buildable


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
