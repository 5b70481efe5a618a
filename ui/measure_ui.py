"""The Measured page's helpers: samples, cached parsing, the apply-fit and paste actions (its
tables and takeaway sentences are in ``kvview.measure_text``, the Recipes page's files in
``ui.recipes_ui``).

Parsing is memoised on the file's content (``ui.perf.MEASUREMENTS``, keyed by the bytes'
digest), so a rerun never parses again; errors are cached too and come back as text (a
:class:`MeasureError` names the line and what was expected there), never as an exception.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import streamlit as st

from kvmodel import inputs as I
from kvmodel.calibrate import (
    Fit,
    apply_fit,
    fit_from_bandwidth_points,
    fit_latency_bandwidth,
)
from kvmodel.measure import (
    DEFAULT_MAX_BYTES,
    MeasureError,
    Measurement,
    detect_measurement,
    load_measurement,
    read_text,
)
from kvmodel.measure.nsys import check_pattern
from kvview import params as P
from kvview.fmt import fmt_bandwidth, fmt_bytes
from kvview.mdtext import md_escape
from kvview.measure_text import can_set_efficiency
from ui import perf

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "data" / "measurements"
MAX_UPLOAD_MB = int(DEFAULT_MAX_BYTES / 1e6)  # the parsers' limit
KIND_LABELS = {
    "prometheus": "Prometheus text (a /metrics scrape)",
    "perftest": "perftest bandwidth table (ib_send_bw / ib_write_bw / ib_read_bw)",
    "perftest-json": "perftest --out_json output",
    "nsys": "Nsight Systems stats CSV (nsys stats --format csv)",
    "pairs": "CSV of transfer size and time (bytes, seconds)",
}
DEFAULT_SAMPLE = I.default("meas")  # a histogram scrape: the recommended form
READ_AS = {
    "auto": "Detect automatically",
    "prometheus": "Prometheus text",
    "perftest": "perftest output (text or JSON)",
    "nsys": "nsys stats CSV",
    "pairs": "bytes,seconds CSV",
}
FIT_KINDS = ("perftest", "perftest-json", "pairs")
APPLIED = "_measure_applied"
PASTED = "_measure_pasted"


# --------------------------------------------------------------------------- samples


def sample_files() -> list[str]:
    """The sample measurements, Prometheus scrapes first (the page's default)."""
    order = {suffix: n for n, suffix in enumerate(I.MEASUREMENT_SUFFIXES)}
    files = [p for p in SAMPLES_DIR.iterdir() if p.is_file() and p.suffix in order]
    return [p.name for p in sorted(files, key=lambda p: (order[p.suffix], p.name))]


@lru_cache(maxsize=1)
def _sample_formats() -> dict[str, str]:
    """file → format column of the samples' README table."""
    out = {}
    readme = SAMPLES_DIR / "README.md"
    if readme.is_file():
        for line in readme.read_text(encoding="utf-8").splitlines():
            m = re.match(r"^\|\s*`([^`]+)`\s*\|\s*([^|]+?)\s*\|", line)
            if m:
                out[m.group(1)] = m.group(2).replace("`", "")
    return out


def sample_label(name: str) -> str:
    fmt = _sample_formats().get(name)
    return f"{name} · {fmt}" if fmt else name


# --------------------------------------------------------------------------- parsing


@dataclass(frozen=True)
class Loaded:
    """One parsed measurement, its fit (perftest, pairs) or the error to show."""

    kind: str | None
    measurement: Measurement | None = None
    fit: Fit | None = None
    unit: str | None = None  # perftest's bandwidth column unit, as printed
    error: str | None = None


def _with_line(message: str, text: str | None) -> str:
    """Name the first line when the message names none (e.g. unrecognisable text)."""
    if text is None or re.search(r"\bline \d+", message):
        return message
    for n, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            return f"{message} (line {n} reads {line.strip()[:60]!r})"
    return message


def detect(data: bytes, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str | None, str]:
    """``(kind, "")`` or ``(None, error message)``; cached on the content."""
    key = ("detect", perf.digest(data), name, max_bytes)
    return perf.MEASUREMENTS.call(_detect, (data, name, max_bytes), {}, key=key)


def _detect(data: bytes, name: str, max_bytes: int) -> tuple[str | None, str]:
    text = None
    try:
        text, label = read_text(data, name, max_bytes)
        return detect_measurement(text, label), ""
    except MeasureError as exc:
        return None, md_escape(_with_line(str(exc), text))  # file text: shown as markdown


def load(
    data: bytes,
    name: str,
    kind: str,
    pattern: str | None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Loaded:
    """Parse ``data`` as ``kind`` (and fit it, for perftest and pairs); cached on the content.
    Errors are escaped for markdown (they quote the file's name and text)."""
    key = ("load", perf.digest(data), name, kind, pattern, max_bytes)
    args = (data, name, kind, pattern, max_bytes)
    spinner = lambda: st.spinner("Reading the measurement…")  # noqa: E731
    return perf.MEASUREMENTS.call(_load, args, {}, key=key, around_miss=spinner)


def _load(data: bytes, name: str, kind: str, pattern: str | None, max_bytes: int) -> Loaded:
    if pattern is not None:
        try:
            check_pattern(pattern)  # before any matching: a bad regex blocks every session
        except MeasureError as exc:
            return Loaded(kind=kind, error=f"Transfers to select: {md_escape(exc)}")
    try:
        m = load_measurement(
            data,
            name,
            kind=kind,
            pattern=pattern,
            max_bytes=max_bytes,
        )
        fit = None
        if m.kind in ("perftest", "perftest-json"):
            fit = fit_from_bandwidth_points(m.data.points)
        elif m.kind == "pairs":
            fit = fit_latency_bandwidth(m.data.sizes_bytes, m.data.seconds)
        unit = m.data.unit if m.kind == "perftest" else None
        return Loaded(kind=m.kind, measurement=m, fit=fit, unit=unit)
    except MeasureError as exc:
        return Loaded(kind=kind, error=md_escape(exc))
    except (ValueError, TypeError) as exc:  # a parser gap: still a message, not a traceback
        return Loaded(kind=kind, error=md_escape(f"{name}: could not be read as {kind} ({exc})"))


def recognised(res: Loaded) -> str:
    """One line on what the file was read as."""
    m = res.measurement
    what = KIND_LABELS.get(res.kind, res.kind)
    if res.kind == "prometheus":
        detail = f"metrics used: {', '.join(m.data.metrics_found)}"
    elif res.kind in ("perftest", "perftest-json"):
        sizes = m.data.sizes_bytes
        unit = f"; bandwidth column in {res.unit}" if res.unit else ""
        detail = f"{len(sizes)} message sizes, {fmt_bytes(min(sizes))} – {fmt_bytes(max(sizes))}"
        detail += unit
    elif res.kind == "nsys":
        detail = f"report {m.data.report}, {m.data.count:,} transfers selected"
    else:
        sizes = m.data.sizes_bytes
        detail = f"{len(sizes)} transfers, {fmt_bytes(min(sizes))} – {fmt_bytes(max(sizes))}"
    return f":material/fact_check: Read **{md_escape(m.name)}** as {what}: {detail}."


# --------------------------------------------------------------------------- fits


def fit_points(res: Loaded) -> tuple[list[float], list[float]]:
    """(sizes [bytes], achieved bandwidth [bytes/s]) of a perftest or pairs measurement."""
    data = res.measurement.data
    sizes = [float(s) for s in data.sizes_bytes]
    if res.kind == "pairs":
        return sizes, [s / t for s, t in data.points]
    return sizes, [float(b) for b in data.bandwidths_bytes_per_s]


def apply_fit_to_sidebar(sc, fit: Fit, name: str) -> None:
    """Button callback (runs before the script, so it may set the sidebar's widget keys)."""
    ss = st.session_state
    mode = ss.get("measure_apply_mode", "link")
    try:
        if mode == "efficiency" and can_set_efficiency(fit, sc.link):
            new = apply_fit(sc, fit, mode="efficiency")
            pct = min(max(round(new.efficiency * 100), 1), 100)
            ss["eff"] = float(pct)
            ss[APPLIED] = (
                "success",
                f"Applied {name}: {sc.link.name} stays, link efficiency is now {pct} % "
                f"({fmt_bandwidth(fit.bandwidth_bytes_per_s)} measured of "
                f"{fmt_bandwidth(sc.link.bandwidth_bytes_per_s)} nominal). The link carries it.",
            )
            return
        new = apply_fit(sc, fit, mode="link")
        bw = float(f"{new.link.bandwidth_bytes_per_s / 1e9:.4g}")
        lat = float(f"{new.link.latency_s * 1e6:.3g}")
        ss["link"] = P.CUSTOM_LINK
        ss["bw"] = min(max(bw, 0.001), 100_000.0)
        ss["lat"] = min(max(lat, 0.0), 1_000_000.0)
        ss["eff"] = 100.0
        kept = (
            f", keeping {sc.link.name}'s {lat:g} µs latency (perftest's intercept is a "
            "per-message cost, not a latency)"
            if fit.source == "bandwidth"
            else f" with the fitted {lat:g} µs latency"
        )
        ss[APPLIED] = (
            "success",
            f"Applied {md_escape(name)}: the sidebar's interconnect is now a custom link at "
            f"{bw:g} GB/s per direction{kept}, efficiency 100 % (the measurement already holds "
            "the losses). The link carries it.",
        )
    except (MeasureError, ValueError) as exc:
        ss[APPLIED] = ("error", md_escape(f"Could not apply {name}: {exc}"))


def apply_scrape_to_sidebar(values: dict, name: str) -> None:
    """Button callback: set the prompt length and link a scrape reveals (``scrape_settings``)."""
    ss = st.session_state
    done = []
    if "seq" in values:
        ss["seq"] = int(values["seq"])
        done.append(f"prompt length {values['seq']:,} tokens (its bytes per transfer)")
    if "bw" in values:
        ss["link"] = P.CUSTOM_LINK
        ss["bw"] = min(max(values["bw"], 0.001), 100_000.0)
        ss["eff"] = 100.0
        done.append(f"a custom link at its achieved {values['bw']:g} GB/s, efficiency 100 %")
    msg = f"Applied {md_escape(name)}: " + "; ".join(done) + ". The link carries it."
    ss[APPLIED] = ("success", msg)


def show_apply_result() -> None:
    kind, msg = st.session_state.pop(APPLIED, (None, None))
    if kind == "success":
        st.success(msg, icon=":material/check_circle:")
    elif kind == "error":
        st.error(msg)


def take_paste() -> None:
    """Button callback: read the text area's text (the page parses what was read)."""
    st.session_state[PASTED] = st.session_state.get("measure_paste") or ""
