"""The reverse question: what does it take to meet the target?

A scenario *meets the target* when it is not transfer-bound in the sense the rest of kvmodel
uses (``critical_seq_len``, ``traffic.classify``):

- criterion ``"step"``:  exposed transfer < k × decode step
- criterion ``"share"``: exposed transfer ÷ TTFT ≤ share target

(the boundary itself has measure zero: the bandwidth solver returns the upper end of a 0.1 %
bracket, where both readings hold).

- ``min_bandwidth``: the smallest per-direction link bandwidth [bytes/s] that meets the target,
  everything else (efficiency, latency, parallel links, compression, layer-wise, descriptor
  cost, prefill, decode step) kept.  Exposed transfer falls monotonically with bandwidth, so a
  bisection on a log scale finds it to 0.1 %.  ``unreachable`` says why there is none.
- ``max_seq_len`` / ``max_batch``: the end of the first run of passing values from 1 (with an
  estimated prefill and layer-wise sending, prefill can grow fast enough to hide the transfer
  again at longer prompts; those later values are not counted as "sustained").
- ``cheapest_mitigation``: the first option meeting the target in ``mitigation_ladder`` order
  (``search_mitigations`` also returns the options tried up to it).

Order of ``mitigation_ladder``: lossless before lossy.  Options that leave the KV values
untouched come first, cheapest first (software before hardware), then those that quantize it
for the trip, smallest accuracy risk first:

1. as is
2. layer-wise sending
3. each faster link the deployment can use, slowest first, as is and with layer-wise sending
   (a scale-up link only when prefill and decode fit in one NVLink domain: never recommended
   where it cannot be built)
4. FP8, then INT8 transfer compression, each alone and with layer-wise sending, on the
   scenario's link and then on each faster link
5. INT4 (the largest accuracy risk), alone and with layer-wise sending, likewise

(rung 1 on another link means the scenario's own compression and layer-wise setting there, with
the link's own catalog latency).  Options that repeat an earlier scenario exactly are skipped.
Every lossy option's label says it changes the KV values (``LOSSY``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from . import catalog

# one definition of the two targets, from the input table (not via .traffic: its readers are
# ~25 ms of imports the Overview's first run does not need)
from .inputs import CRITERIA
from .sweeps import Option
from .topology import is_scale_up, scale_up_feasible
from .transfer import Evaluation, Scenario, Volume, critical_seq_len, evaluate, transfer

REL_PRECISION = 1e-3  # bandwidth bisection: hi / lo ≤ 1 + this
INFINITE_BANDWIDTH = 1e30  # bytes/s: serialization of any cache is then ~1e-17 s
MIN_BANDWIDTH = 1.0  # bytes/s: the solver never answers below this
DEFAULT_BATCH_LIMIT = 65536
GRID_POINTS = 4096  # first-crossing search grid for max_seq_len / max_batch

LOSSLESS = (("as is", None, None), ("layer-wise", "none", True))  # (label, compression, lw)
LOSSY = (
    ("FP8 transfer", "fp8", False),
    ("FP8 + layer-wise", "fp8", True),
    ("INT8 transfer", "int8", False),
    ("INT8 + layer-wise", "int8", True),
    ("INT4 transfer", "int4", False),
    ("INT4 + layer-wise", "int4", True),
)
LADDER = LOSSLESS + LOSSY
ACCURACY_RISK = {  # what quantizing the KV for the trip risks (the Mitigations page)
    "fp8": "lossy: small accuracy risk",
    "int8": "lossy: small accuracy risk",
    "int4": "lossy: the largest accuracy risk",
}


def _check_criterion(criterion: str) -> None:
    if criterion not in CRITERIA:
        raise ValueError(f"criterion must be one of {', '.join(CRITERIA)}, got {criterion!r}")


def _passes(sc: Scenario, criterion: str, *, seq_len=None, batch=None) -> np.ndarray:
    """Boolean (array) for whether ``sc`` meets the target, optionally over S or batch arrays."""
    t = transfer(sc, seq_len=seq_len, batch=batch)
    exposed = np.asarray(t.exposed_s, dtype=float)
    if criterion == "step":
        return exposed < sc.k * sc.decode_step_s
    share = exposed / sc.ttft_s(np.asarray(t.prefill_s, dtype=float), exposed)
    return share <= sc.share_target


def meets_target(sc: Scenario, *, criterion: str = "step") -> bool:
    """True when ``sc`` is not transfer-bound under ``criterion`` ("step" or "share")."""
    _check_criterion(criterion)
    return bool(_passes(sc, criterion))


def with_bandwidth(sc: Scenario, bandwidth_bytes_per_s: float) -> Scenario:
    """``sc`` with its link's per-direction bandwidth replaced (latency and the rest kept)."""
    return sc.with_link(replace(sc.link, bandwidth_bytes_per_s=float(bandwidth_bytes_per_s)))


@dataclass(frozen=True)
class Unreachable:
    """Why no bandwidth meets the target, in numbers (``kvview.words.unreachable_reason`` says it).

    ``costs``: what no bandwidth removes, as (seconds, kind) largest first, kind one of
    ``"latency"`` (× ``latency_chunks`` when sent layer-wise), ``"codec"``, ``"descriptors"`` and
    ``"stack"`` (the transfer stack's per-request, per-chunk and message-posting costs).
    """

    criterion: str
    exposed_s: float  # what the decode node still waits with an infinitely fast link
    share_of_ttft: float
    target_s: float  # k × decode step (criterion "step")
    k: float
    share_target: float
    latency_s: float  # the link's latency, once per chunk
    latency_chunks: int
    compression: str
    layerwise: bool
    costs: tuple[tuple[float, str], ...]
    stack: str = ""  # the stack's name


def unreachable(sc: Scenario, *, criterion: str = "step") -> Unreachable | None:
    """Why no bandwidth meets the target (None when one does).

    Evaluated with an infinitely fast link (``INFINITE_BANDWIDTH``): what is left is the
    per-transfer latency (once per layer chunk when sent layer-wise), quantize/dequantize time
    and descriptor cost.
    """
    _check_criterion(criterion)
    inf = with_bandwidth(sc, INFINITE_BANDWIDTH)
    if _passes(inf, criterion):
        return None
    t = transfer(inf)
    exposed = float(t.exposed_s)
    n_lat = 1
    if sc.layerwise:
        n_lat = sc.model.attention_layers + sc.model.state_layers
    fixed = (sc.link.latency_s * n_lat, float(t.codec_s), float(t.descriptor_s))
    # what is left is the stack's: its per-request, per-chunk and message-posting costs
    stack_s = max(0.0, float(t.transfer_s) - sum(fixed))
    costs = (
        (fixed[0], "latency"),
        (fixed[1], "codec"),
        (fixed[2], "descriptors"),
        (stack_s if stack_s > 1e-12 else 0.0, "stack"),
    )
    return Unreachable(
        criterion=criterion,
        exposed_s=exposed,
        share_of_ttft=exposed / sc.ttft_s(float(t.prefill_s), exposed),
        target_s=sc.k * sc.decode_step_s,
        k=sc.k,
        share_target=sc.share_target,
        latency_s=sc.link.latency_s,
        latency_chunks=n_lat,
        compression=sc.compression,
        layerwise=sc.layerwise,
        costs=tuple(sorted((c for c in costs if c[0] > 0), key=lambda c: -c[0])),
        stack=sc.stack.name,
    )


def min_bandwidth(sc: Scenario, *, criterion: str = "step") -> float | None:
    """Smallest per-direction link bandwidth [bytes/s] meeting the target at the scenario's S
    and batch, to 0.1 % (the upper end of the final bracket, so it always meets it).

    Efficiency, parallel links, latency, compression, layer-wise and the rest stay as they are,
    so the effective bandwidth is the answer × efficiency × streams.  None when even an
    infinitely fast link misses the target (see ``unreachable``).
    """
    _check_criterion(criterion)

    def ok(bw: float) -> bool:
        return bool(_passes(with_bandwidth(sc, bw), criterion))

    if unreachable(sc, criterion=criterion) is not None:
        return None
    lo = hi = sc.link.bandwidth_bytes_per_s
    if ok(hi):
        while ok(lo):
            if lo <= MIN_BANDWIDTH:
                return MIN_BANDWIDTH
            hi, lo = lo, max(lo / 10.0, MIN_BANDWIDTH)
    else:
        while not ok(hi):  # terminates: INFINITE_BANDWIDTH passes
            lo, hi = hi, min(hi * 10.0, INFINITE_BANDWIDTH)
    while hi / lo > 1 + REL_PRECISION:  # invariant: lo misses, hi meets
        mid = math.sqrt(lo * hi)
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def _first_run_end(ok_at, n_max: int) -> int | None:
    """Largest n with ok(1..n) on a log grid refined by integer bisection; None if ok(1) fails."""
    grid = np.unique(
        np.concatenate(([1], np.geomspace(1, n_max, GRID_POINTS).astype(np.int64), [n_max]))
    )
    good = np.atleast_1d(ok_at(grid))
    if good.all():
        return int(n_max)
    i = int(np.argmax(~good))
    if i == 0:
        return None
    lo, hi = int(grid[i - 1]), int(grid[i])
    while hi - lo > 1:  # invariant: ok(lo), not ok(hi)
        mid = (lo + hi) // 2
        if bool(np.atleast_1d(ok_at(np.asarray([mid])))[0]):
            lo = mid
        else:
            hi = mid
    return lo


def max_seq_len(sc: Scenario, *, criterion: str = "step") -> int | None:
    """Largest prompt length [tokens] (≤ the model's max context) meeting the target at the
    scenario's batch, for every length from 1 up to it.

    With criterion "step" this is ``critical_seq_len − 1`` (max context when there is no
    critical length).  None when even a 1-token prompt misses the target.
    """
    _check_criterion(criterion)
    max_s = sc.model.max_context_tokens
    if criterion == "step":
        crit = critical_seq_len(sc)
        if crit is None:
            return max_s
        return crit - 1 if crit > 1 else None
    return _first_run_end(lambda s: _passes(sc, criterion, seq_len=s), max_s)


def max_batch(
    sc: Scenario, *, criterion: str = "step", limit: int = DEFAULT_BATCH_LIMIT
) -> int | None:
    """Largest batch [requests] (≤ ``limit`` and ≤ what memory holds) meeting the target at the
    scenario's S, for every batch from 1 up to it.  The cap when never missed; None when batch
    1 misses or not even one request fits (``batch_cap``)."""
    _check_criterion(criterion)
    if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
        raise ValueError(f"limit must be a whole number >= 1, got {limit!r}")
    cap = batch_cap(sc, limit)
    if cap < 1:
        return None
    return _first_run_end(lambda b: _passes(sc, criterion, batch=b), cap)


def batch_cap(sc: Scenario, limit: int = DEFAULT_BATCH_LIMIT) -> int:
    """The largest batch the question can have: ``limit``, and the requests of this length that
    both instances hold in memory (kvmodel.memory); 0 when the weights do not fit."""
    ev = evaluate(sc)  # memoised: the page has evaluated this scenario already
    return int(min(limit, ev.max_concurrent_requests, ev.max_concurrent_requests_prefill))


def _describe(link_name: str, compression: str, layerwise: bool) -> str:
    parts = [link_name]
    if compression != "none":
        parts.append(f"{compression.upper()} transfer")
    if layerwise:
        parts.append("layer-wise")
    return " + ".join(parts)


def faster_links(sc: Scenario, link_ids=None) -> list:
    """Links (catalog, or ``link_ids``) faster per direction than ``sc``'s that the deployment
    can use (a scale-up link only when prefill and decode fit in one domain), slowest first."""
    if link_ids is None:
        links = list(dict.fromkeys(catalog.links().values()))
    else:
        if isinstance(link_ids, str):
            raise ValueError("link_ids must be a list of interconnect ids, not one string")
        links = list(dict.fromkeys(catalog.get_link(i) for i in link_ids))
    faster = [
        lk
        for lk in links
        if lk.bandwidth_bytes_per_s > sc.link.bandwidth_bytes_per_s
        and (not is_scale_up(lk) or scale_up_feasible(sc.gpu, sc.gpus_prefill, sc.gpus_decode, lk))
    ]
    return sorted(faster, key=lambda lk: lk.bandwidth_bytes_per_s)  # stable: catalog order ties


def mitigation_ladder(sc: Scenario, *, link_ids=None) -> list[Option]:
    """Every option in cost order (see the module docstring), duplicates left out."""
    out: list[Option] = []
    seen: set[tuple] = set()  # candidates differ from sc only in these fields
    links = [sc.link, *faster_links(sc, link_ids)]
    rungs = [(rungs, link) for rungs in (LOSSLESS, LOSSY[:4], LOSSY[4:]) for link in links]
    for group, link in rungs:
        on_link = sc if link is sc.link else sc.with_link(link)
        for rung, comp, lw in group:
            cand = (on_link if comp is None
                    else on_link.with_transfer(compression=comp, layerwise=lw))  # fmt: skip
            key = (cand.link, cand.compression, cand.layerwise)
            if key in seen:
                continue
            seen.add(key)
            label = _describe(link.name, cand.compression, cand.layerwise)
            if link is sc.link and rung == "as is":
                label = f"as is: {label}"
            if cand.compression != "none":
                label += f" ({ACCURACY_RISK[cand.compression]})"
            out.append(Option(label, cand))
    return out


@dataclass(frozen=True)
class Attempt:
    """One option tried by ``cheapest_mitigation``."""

    label: str
    scenario: Scenario
    passed: bool
    exposed_s: float
    transfer_share: float


@dataclass(frozen=True)
class Mitigation:
    """The cheapest option meeting the target, and every option tried up to it."""

    label: str
    scenario: Scenario
    evaluation: Evaluation
    criterion: str
    tried: tuple[Attempt, ...]


def try_mitigations(
    sc: Scenario, *, criterion: str = "step", link_ids=None, stop_at_first: bool = True
) -> list[Attempt]:
    """Evaluate ``mitigation_ladder`` options in order with pass/fail (up to the first pass
    when ``stop_at_first``, else all of them)."""
    _check_criterion(criterion)
    tried = []
    volume = Volume(sc)  # the options change only the link, compression and layer-wise sending
    for opt in mitigation_ladder(sc, link_ids=link_ids):
        t = transfer(opt.scenario, volume=volume)
        exposed = float(t.exposed_s)
        share = exposed / opt.scenario.ttft_s(float(t.prefill_s), exposed)
        if criterion == "step":
            passed = exposed < opt.scenario.k * opt.scenario.decode_step_s
        else:
            passed = share <= opt.scenario.share_target
        tried.append(Attempt(opt.label, opt.scenario, bool(passed), exposed, share))
        if passed and stop_at_first:
            break
    return tried


def search_mitigations(
    sc: Scenario, *, criterion: str = "step", link_ids=None
) -> tuple[Mitigation | None, tuple[Attempt, ...]]:
    """``cheapest_mitigation`` and every option tried, in one pass over the ladder.

    When nothing passes, the options tried are the whole failed ladder.
    """
    tried = tuple(try_mitigations(sc, criterion=criterion, link_ids=link_ids))
    if not tried or not tried[-1].passed:
        return None, tried
    win = tried[-1]
    mit = Mitigation(
        label=win.label,
        scenario=win.scenario,
        evaluation=evaluate(win.scenario),
        criterion=criterion,
        tried=tried,
    )
    return mit, tried


def cheapest_mitigation(
    sc: Scenario, *, criterion: str = "step", link_ids=None
) -> Mitigation | None:
    """First option of ``mitigation_ladder`` that meets the target (None when none does).

    ``tried`` lists every option evaluated, in order, with pass/fail; the search stops at the
    first pass.  ``link_ids`` restricts the links considered (only faster ones are used).  When
    nothing passes, ``search_mitigations`` also gives the whole failed ladder.
    """
    return search_mitigations(sc, criterion=criterion, link_ids=link_ids)[0]
