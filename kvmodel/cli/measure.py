"""Measurement commands: ``calibrate`` (perftest or timing pairs) and ``metrics`` (a /metrics
scrape)."""

from __future__ import annotations

from .. import catalog
from .. import inputs as I
from .edge import fmt_bytes
from .output import emit


def _fit_measurement(m):
    from ..calibrate import fit_from_bandwidth_points, fit_latency_bandwidth
    from ..measure import MeasureError

    if m.kind in ("perftest", "perftest-json"):
        return fit_from_bandwidth_points(m.data.points)
    if m.kind == "pairs":
        return fit_latency_bandwidth(m.data.sizes_bytes, m.data.seconds)
    raise MeasureError(
        f"{m.name}: {m.kind} output has no (size, time) pairs to fit; calibrate reads perftest "
        "ib_*_bw output (text or --out_json) or a bytes,seconds CSV"
        + (
            "; for a /metrics scrape use: python -m kvmodel metrics FILE"
            if m.kind == "prometheus"
            else ""
        )
    )


MAX_NICS = 1024  # NICs one measurement ran over (a node has 8-16)


def cmd_calibrate(args):
    from pathlib import Path

    from ..calibrate import efficiency_warning, link_efficiency
    from ..measure import load_measurement

    link = catalog.get_link(args.link) if args.link else None
    if not 1 <= args.nics <= MAX_NICS:
        raise ValueError(
            f"--nics must be a whole number from 1 to {MAX_NICS:,}, got {I.shown_number(args.nics)}"
        )
    m = load_measurement(Path(args.file))
    fit = _fit_measurement(m)
    eff = None if link is None else link_efficiency(link, fit, nics=args.nics)
    warning = None if eff is None else efficiency_warning(eff, link, nics=args.nics)
    if warning:
        eff = None  # an efficiency above 100 % is a warning, never a result
    payload = {
        "file": str(args.file),
        "kind": m.kind,
        "n_points": fit.n,
        "bandwidth_gbs": fit.bandwidth_bytes_per_s / 1e9,
        "latency_us": fit.latency_s * 1e6,
        "latency_clamped": fit.latency_clamped,
        "rms_relative_error": fit.rms_relative_error,
        "link": None if link is None else link.id,
        "nominal_bandwidth_gbs": None if link is None else link.bandwidth_bytes_per_s / 1e9,
        "efficiency": eff,
        "nics": args.nics,
        "warnings": [warning] if warning else [],
        "fit_source": fit.source,
        "efficiency_curve": [{"bytes": b, "efficiency": e} for b, e in fit.efficiency_curve],
    }
    rows = [
        ("measurement", f"{m.name} ({m.kind}, {fit.n} points)"),
        ("bandwidth", f"{fit.bandwidth_bytes_per_s / 1e9:,.4g} GB/s per direction"),
        (
            "latency" if fit.source == "time" else "per-message cost",
            f"{fit.latency_s * 1e6:,.3g} µs" + (" (clamped at 0)" if fit.latency_clamped else ""),
        ),
        ("rms relative error", f"{fit.rms_relative_error:.2%}"),
        (
            "efficiency",
            "– (give --link)"
            if link is None
            else "– (over 100 %: see the warning)"
            if warning
            else f"{eff:.1%} of "
            + (f"{args.nics} × " if args.nics > 1 else "")
            + f"{link.name}'s {link.bandwidth_bytes_per_s / 1e9:g} GB/s",
        ),
    ]
    footer = [f"warning: {warning}"] if warning else []
    if fit.source == "bandwidth":
        footer.append(
            "perftest keeps many messages in flight: the intercept is the per-message cost of a "
            "pipelined stream, not the one-way latency (measure that with ib_write_lat)."
        )
    emit(args, payload, ("quantity", "value"), rows, footer)


def cmd_metrics(args):
    from pathlib import Path

    from ..measure import MeasureError, load_measurement
    from ..transfer import DEFAULT_SHARE_TARGET
    from ..verdicts import share_verdict

    m = load_measurement(Path(args.file))
    if m.kind != "prometheus":
        raise MeasureError(
            f"{m.name}: this is {m.kind} output, not Prometheus text; metrics reads a /metrics "
            "scrape (for perftest or bytes,seconds files use: python -m kvmodel calibrate FILE)"
        )
    d = m.data
    verdict = share_verdict(d.transfer_share_of_ttft, share_target=DEFAULT_SHARE_TARGET)

    def ms(x):
        return None if x is None else x * 1e3

    payload = {
        "file": str(args.file),
        "gap_mean_ms": ms(d.gap_mean_s),
        "gap_p50_ms": ms(d.gap_p50_s),
        "gap_p90_ms": ms(d.gap_p90_s),
        "gap_p99_ms": ms(d.gap_p99_s),
        "gap_source": d.gap_source,
        "ttft_mean_ms": ms(d.ttft_mean_s),
        "ttft_p50_ms": ms(d.ttft_p50_s),
        "ttft_p90_ms": ms(d.ttft_p90_s),
        "ttft_p99_ms": ms(d.ttft_p99_s),
        "ttft_source": d.ttft_source,
        "prefill_mean_ms": ms(d.prefill_mean_s),
        "nixl_xfer_mean_ms": ms(d.nixl_xfer_mean_s),
        "nixl_bytes_mean": d.nixl_bytes_mean,
        "effective_bandwidth_gbs": None
        if d.effective_bandwidth_bytes_per_s is None
        else d.effective_bandwidth_bytes_per_s / 1e9,
        "bandwidth_source": d.bandwidth_source,
        "transfer_share_of_ttft": d.transfer_share_of_ttft,
        "share_target": verdict.share_target,
        "verdict": verdict.measured,
        "metrics_found": list(d.metrics_found),
        "notes": list(d.notes),
    }

    def fmt(x, digits=2):
        return "–" if x is None else f"{x:,.{digits}f} ms"

    def pcts(prefix):
        return " / ".join(fmt(payload[f"{prefix}_{p}_ms"]) for p in ("p50", "p90", "p99"))

    share = d.transfer_share_of_ttft
    rows = [
        (
            "transfer gap mean",
            fmt(payload["gap_mean_ms"]) + (f" ({d.gap_source})" if d.gap_source else ""),
        ),
        ("transfer gap p50 / p90 / p99", pcts("gap")),
        ("TTFT mean", fmt(payload["ttft_mean_ms"], 1)),
        ("TTFT p50 / p90 / p99", pcts("ttft")),
        ("prefill mean", fmt(payload["prefill_mean_ms"], 1)),
        ("NIXL transfer mean", fmt(payload["nixl_xfer_mean_ms"])),
        (
            "NIXL bytes per transfer",
            "–" if d.nixl_bytes_mean is None else fmt_bytes(d.nixl_bytes_mean),
        ),
        (
            "effective bandwidth",
            "–"
            if d.effective_bandwidth_bytes_per_s is None
            else f"{d.effective_bandwidth_bytes_per_s / 1e9:,.4g} GB/s",
        ),
        (
            "transfer share of TTFT",
            "–"
            if share is None
            else f"{share:.1%} — {verdict.measured} the {verdict.share_target:.0%} line",
        ),
    ]
    footer = [f"metrics found: {', '.join(d.metrics_found)}", *(f"note: {n}" for n in d.notes)]
    emit(args, payload, ("quantity", "value"), rows, footer)
