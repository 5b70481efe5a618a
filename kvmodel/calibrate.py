"""Fit the link model to measurements and set the model beside what a cluster measured.

The model of one transfer is ``t = latency + bytes ÷ bandwidth``.  :func:`fit_latency_bandwidth`
finds the latency and bandwidth that best explain measured (bytes, seconds) pairs, minimising the
*relative* error so that 2-byte and 8-MB messages count alike; :func:`fit_from_bandwidth_points`
does the same for perftest's (message size, bandwidth) points.  :func:`calibrated_link` and
:func:`apply_fit` put a fit into a :class:`~kvmodel.specs.LinkSpec` / :class:`Scenario`;
:func:`compare_to_model` and :func:`compare_nsys_to_model` put the model's numbers next to a
scrape's or a profile's.

What a perftest fit's latency means: ``ib_*_bw`` keeps up to ``tx_depth`` (128) messages in
flight, so ``size ÷ bandwidth`` at small sizes is the per-message cost of a pipelined stream (the
inverse of the message rate, ~0.1-0.3 µs), not the one-way latency (~1-2 µs, ``ib_*_lat``).
The fit's ``source`` says which kind it is; :func:`apply_fit` keeps the link's own latency for a
bandwidth fit unless told otherwise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from .measure import MeasureError, Metrics, NsysResult
from .specs import LinkSpec
from .transfer import Scenario, chunk_times_s, evaluate
from .verdicts import ShareVerdict, share_verdict


@dataclass(frozen=True)
class Fit:
    """``t = latency_s + bytes ÷ bandwidth_bytes_per_s`` fitted to ``n`` measurements."""

    latency_s: float  # ≥ 0
    bandwidth_bytes_per_s: float  # asymptotic, per direction, one stream
    rms_relative_error: float  # sqrt(mean(((model − measured) ÷ measured)²))
    n: int
    source: str = "time"  # "time": measured (bytes, seconds); "bandwidth": perftest points
    latency_clamped: bool = False  # the free fit gave latency < 0; refitted through the origin
    # (message bytes, measured bandwidth ÷ fitted bandwidth), perftest fits only, file order
    efficiency_curve: tuple[tuple[float, float], ...] = ()

    def time_s(self, nbytes):
        """The fitted transfer time of ``nbytes`` (scalar or array)."""
        return self.latency_s + np.asarray(nbytes, dtype=float) / self.bandwidth_bytes_per_s

    def bandwidth_at(self, nbytes):
        """The fitted achieved bandwidth ``bytes ÷ time`` at ``nbytes`` (for efficiency curves)."""
        x = np.asarray(nbytes, dtype=float)
        return x / self.time_s(x)



FLAT_GROWTH = 1e-9  # relative growth of the times below which the fit has no slope

def _as_arrays(sizes, seconds) -> tuple[np.ndarray, np.ndarray]:
    x = np.asarray(sizes, dtype=float).ravel()
    t = np.asarray(seconds, dtype=float).ravel()
    if x.shape != t.shape:
        raise MeasureError(f"{x.size} sizes but {t.size} times; expected one time per size")
    if x.size == 0:
        raise MeasureError("no measurements; the fit needs (bytes, seconds) pairs")
    bad = ~np.isfinite(x) | ~np.isfinite(t) | (x < 0) | (t <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise MeasureError(
            f"measurement {i + 1} is {x[i]:g} bytes in {t[i]:g} s; expected bytes ≥ 0, seconds > 0"
        )
    return x, t


def fit_latency_bandwidth(sizes, seconds, *, source: str = "time") -> Fit:
    """Least-squares fit of ``t = latency + bytes ÷ bandwidth`` minimising relative error.

    Rows are weighted by ``1 ÷ t``: the fit minimises ``Σ ((latency + b·x − t) ÷ t)²`` with
    ``b = 1 ÷ bandwidth``.  A negative latency is clamped to 0 and the slope refitted through the
    origin (``latency_clamped``).  Needs at least two distinct sizes; a slope ≤ 0 (times that do
    not grow with size) is an error.
    """
    x, t = _as_arrays(sizes, seconds)
    if np.unique(x).size < 2:
        raise MeasureError(
            f"the fit needs at least 2 distinct message sizes; got {x.size} measurement(s) of "
            f"{', '.join(f'{v:g}' for v in np.unique(x)[:3])} bytes"
        )
    unfit = MeasureError(
        f"cannot fit a latency and a bandwidth to sizes from {x.min():g} to {x.max():g} bytes "
        f"and times from {t.min():g} to {t.max():g} s (the numbers span too wide a range to "
        "compute with); expected the sizes in bytes and the times in seconds of one benchmark"
    )
    x_scale, t_scale = float(x.max()) or 1.0, float(t.max())
    with np.errstate(all="ignore"):  # overflow and underflow are checked, not printed
        xs, ts = x / x_scale, t / t_scale  # fit in [0, 1] (sizes near 1e308 overflow x / t)
        w = 1.0 / ts
        a_cols = np.column_stack([w, xs * w])
        norms = np.linalg.norm(a_cols, axis=0)
        norms[norms == 0] = 1.0
        if not np.isfinite(a_cols).all() or not np.isfinite(norms).all():
            raise unfit  # LAPACK would print its own complaint on stderr
        try:
            coef, *_ = np.linalg.lstsq(a_cols / norms, np.ones_like(ts), rcond=None)
        except np.linalg.LinAlgError:  # "SVD did not converge"
            raise unfit from None
        latency, slope = coef / norms
        clamped = False
        if latency < 0:
            xw = xs * w
            latency, slope, clamped = 0.0, float(xw.sum() / (xw * xw).sum()), True
        latency, slope = latency * t_scale, slope * t_scale / x_scale
        if not (math.isfinite(latency) and math.isfinite(slope)):
            raise unfit
        if slope > 0 and not math.isfinite(1.0 / slope):  # a bandwidth beyond a float's range
            raise unfit
    # a slope whose growth over the sizes measured is rounding noise (1e-9 of the longest time:
    # no timer resolves it) is no slope: two equal times fit 1e-19 s a byte, 1e19 B/s
    if not slope * float(x.max() - x.min()) > FLAT_GROWTH * float(t.max()):
        raise MeasureError(
            "the times do not grow with the message size (fitted slope ≤ 0), so no bandwidth can "
            "be fitted; expected larger messages to take longer"
        )
    rel = (latency + slope * x - t) / t
    return Fit(
        latency_s=float(latency),
        bandwidth_bytes_per_s=float(1.0 / slope),
        rms_relative_error=float(np.sqrt(np.mean(rel * rel))),
        n=int(x.size),
        source=source,
        latency_clamped=clamped,
    )


def fit_from_bandwidth_points(points) -> Fit:
    """Fit perftest's ``[(message bytes, bandwidth bytes/s), ...]``: ``t = size ÷ bandwidth``.

    The returned :class:`Fit` has ``source="bandwidth"`` and ``efficiency_curve``: per point,
    measured bandwidth ÷ the fitted asymptotic bandwidth (→ 1 for large messages).
    """
    pts = [(float(s), float(b)) for s, b in points]
    if not pts:
        raise MeasureError("no bandwidth points; expected (message bytes, bytes/s) pairs")
    for i, (s, b) in enumerate(pts, start=1):
        if not (s > 0 and b > 0 and math.isfinite(s) and math.isfinite(b)):
            raise MeasureError(
                f"point {i} is {s:g} bytes at {b:g} B/s; expected both finite and > 0"
            )
    sizes = np.array([s for s, _ in pts])
    bws = np.array([b for _, b in pts])
    fit = fit_latency_bandwidth(sizes, sizes / bws, source="bandwidth")
    curve = tuple(
        (float(s), float(b / fit.bandwidth_bytes_per_s)) for s, b in zip(sizes, bws, strict=True)
    )
    return replace(fit, efficiency_curve=curve)


def link_efficiency(link: LinkSpec, fit: Fit, *, nics: int = 1) -> float:
    """Fitted bandwidth ÷ the nominal per-direction bandwidth of ``nics`` such links (a
    measurement over several NICs is divided by their count).  May exceed 1: see
    :func:`efficiency_warning`, never use such a value as a result."""
    if isinstance(nics, bool) or not isinstance(nics, int) or nics < 1:
        raise ValueError(f"nics must be a whole number >= 1, got {nics!r}")
    return fit.bandwidth_bytes_per_s / (link.bandwidth_bytes_per_s * nics)


def efficiency_warning(eff: float, link: LinkSpec, *, nics: int = 1) -> str | None:
    """Why an efficiency above 100 % cannot be one (None when it is at most 100 %)."""
    if eff <= 1:
        return None
    return (
        f"the measurement is {eff:.2f}× what {nics} × {link.name} can carry one way: it was "
        "probably taken over more NICs (give their count), both directions at once (perftest "
        "-b), or on another link"
    )


def calibrated_link(link: LinkSpec, fit: Fit, *, use_latency: bool = True) -> LinkSpec:
    """``link`` with the fitted bandwidth (and the fitted latency unless ``use_latency`` is
    False): ``id`` gets ``-measured``, ``source`` says what was fitted."""
    return replace(
        link,
        id=f"{link.id}-measured",
        name=f"{link.name} (measured)",
        bandwidth_bytes_per_s=fit.bandwidth_bytes_per_s,
        latency_s=fit.latency_s if use_latency else link.latency_s,
        source=(
            f"fit of {fit.n} measured points ({fit.source}), rms relative error "
            f"{fit.rms_relative_error:.1%}; nominal {link.bandwidth_bytes_per_s / 1e9:g} GB/s"
        ),
    )


def apply_fit(
    scenario: Scenario, fit: Fit, *, mode: str = "link", use_latency: bool | None = None
) -> Scenario:
    """One action that puts a fit into a scenario.

    ``mode="link"``: the link's bandwidth and latency become the fitted ones and ``efficiency``
    becomes 1 (the measurement already holds the losses).  ``mode="efficiency"``: the nominal
    link stays; ``efficiency`` becomes fitted ÷ nominal bandwidth (an error above 1: the link id
    or the per-direction reading is probably wrong).  ``use_latency`` defaults to True for a
    (bytes, seconds) fit and False for a perftest bandwidth fit (see the module notes).
    """
    if use_latency is None:
        use_latency = fit.source != "bandwidth"
    link = scenario.link
    if mode == "link":
        return replace(
            scenario, link=calibrated_link(link, fit, use_latency=use_latency), efficiency=1.0
        )
    if mode == "efficiency":
        eff = link_efficiency(link, fit)
        if not 0 < eff <= 1:
            raise MeasureError(
                f"measured {fit.bandwidth_bytes_per_s / 1e9:.4g} GB/s is {eff:.3g}× the "
                f"nominal {link.bandwidth_bytes_per_s / 1e9:g} GB/s per direction of {link.id}; "
                "an efficiency must be in (0, 1]: check the link, or a bidirectional (-b) test"
            )
        new_link = replace(link, latency_s=fit.latency_s) if use_latency else link
        return replace(scenario, link=new_link, efficiency=eff)
    raise ValueError(f"mode must be 'link' or 'efficiency', got {mode!r}")


@dataclass(frozen=True)
class ModelVsMeasured:
    """One quantity from the model and as measured (SI units; None where a side is missing)."""

    model: float | None
    measured: float | None

    @property
    def ratio(self) -> float | None:
        """Measured ÷ model (None without both, or for a model value ≤ 0 or infinite)."""
        model, measured = self.model, self.measured
        if model is None or measured is None or not (model > 0 and math.isfinite(model)):
            return None
        return measured / model


@dataclass(frozen=True)
class ScrapeComparison:
    """The model's numbers for a scenario next to a /metrics scrape's (:func:`compare_to_model`)."""

    exposed_transfer_s: ModelVsMeasured  # model exposed transfer vs the measured gap
    transfer_s: ModelVsMeasured  # model whole transfer vs NIXL's mean transfer time
    prefill_s: ModelVsMeasured
    ttft_s: ModelVsMeasured
    transfer_share_of_ttft: ModelVsMeasured
    bandwidth_per_stream_bytes_per_s: ModelVsMeasured  # link × efficiency × stack vs per transfer
    verdict: ShareVerdict  # against the scenario's share target
    notes: tuple[str, ...]  # what differs in what is measured


@dataclass(frozen=True)
class NsysComparison:
    """The model's per-layer transfer next to profiled transfers (:func:`compare_nsys_to_model`)."""

    per_layer_s: ModelVsMeasured  # model mean per layer vs the profiled mean
    per_layer_median_s: ModelVsMeasured
    model_min_s: float
    model_max_s: float
    model_layers: int


def compare_to_model(scenario: Scenario, metrics: Metrics) -> ScrapeComparison:
    """The model's numbers for ``scenario`` next to a scrape's, ``ratio = measured ÷ model``.

    Each quantity is a :class:`ModelVsMeasured` in seconds / bytes per second:
    ``exposed_transfer_s`` (model exposed transfer vs measured gap), ``transfer_s`` (model
    whole transfer vs NIXL's mean transfer time), ``prefill_s``, ``ttft_s``,
    ``transfer_share_of_ttft``, ``bandwidth_per_stream_bytes_per_s`` (link × efficiency × the
    stack's share vs NIXL bytes ÷ time or SGLang's speed, which are per transfer, i.e. per NIC
    path).  ``verdict``:
    :func:`~kvmodel.verdicts.share_verdict` of both shares against the scenario's share target;
    ``notes``: what differs in what is measured.
    """
    ev = evaluate(scenario)
    share = metrics.transfer_share_of_ttft
    notes = [
        "model TTFT = the framework's request cost + prefill + exposed transfer + one decode "
        "step; measured TTFT also holds queueing",
        "measured bandwidth is per transfer (one NIC path); the model's per-stream bandwidth is "
        "link × efficiency × the share of it the stack reaches",
    ]
    if metrics.gap_source and metrics.gap_source != "llm_kv_transfer_gap_seconds":
        notes.append(f"measured gap taken from {metrics.gap_source}")
    measured_bw, line = metrics.effective_bandwidth_bytes_per_s, scenario.link.bandwidth_bytes_per_s
    if measured_bw is not None and measured_bw > line:
        notes.append(
            f"the scrape moved {measured_bw / 1e9:,.4g} GB/s per transfer, "
            f"{measured_bw / line:,.2g}× the line rate of the sidebar's {scenario.link.name} "
            f"({line / 1e9:,.4g} GB/s per direction): the cluster ran on a faster link than "
            "this scenario's; set its interconnect for a like-for-like comparison"
        )
    return ScrapeComparison(
        exposed_transfer_s=ModelVsMeasured(ev.exposed_s, metrics.gap_mean_s),
        transfer_s=ModelVsMeasured(ev.transfer_s, metrics.nixl_xfer_mean_s),
        prefill_s=ModelVsMeasured(ev.prefill_s, metrics.prefill_mean_s),
        ttft_s=ModelVsMeasured(ev.ttft_s, metrics.ttft_mean_s),
        transfer_share_of_ttft=ModelVsMeasured(ev.transfer_share_of_ttft, share),
        bandwidth_per_stream_bytes_per_s=ModelVsMeasured(
            # what one stream moves at in the model's transfer (wire._stack_s): the stack's
            # share of the link too (the Mooncake stack's 74 %; session 18's browser review)
            scenario.link.bandwidth_bytes_per_s * scenario.efficiency
            * scenario.stack.efficiency_max,
            metrics.effective_bandwidth_bytes_per_s,
        ),
        verdict=share_verdict(
            share, share_target=scenario.share_target, model_share=ev.transfer_share_of_ttft
        ),
        notes=tuple(notes),
    )


def compare_nsys_to_model(scenario: Scenario, nsys: NsysResult) -> NsysComparison:
    """The model's per-layer transfer time (layer-wise sending, one chunk per cache-carrying
    layer) next to the profiled per-transfer durations; ``ratio = measured ÷ model``.  The
    profile's own count, extremes and names stay on ``nsys``."""
    chunks = np.asarray(chunk_times_s(scenario), dtype=float).ravel()
    return NsysComparison(
        per_layer_s=ModelVsMeasured(float(chunks.mean()), nsys.mean_s),
        per_layer_median_s=ModelVsMeasured(float(np.median(chunks)), nsys.median_s),
        model_min_s=float(chunks.min()),
        model_max_s=float(chunks.max()),
        model_layers=int(chunks.size),
    )
