"""The Measured page's helpers: cached parsing, tables, takeaway sentences, the apply-fit action.

Parsing is cached on the file's content (``st.cache_data`` hashes the bytes), so a rerun never
parses again; errors are cached too and come back as text (a :class:`MeasureError` names the
line and what was expected there), never as an exception.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pandas as pd
import streamlit as st

from kvmodel.calibrate import (
    Fit,
    NsysComparison,
    ScrapeComparison,
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
from kvmodel.units import fmt_bandwidth, fmt_bytes, fmt_time

from . import params as P

SAMPLES_DIR = Path(__file__).resolve().parents[1] / "data" / "measurements"
MAX_UPLOAD_MB = int(DEFAULT_MAX_BYTES / 1e6)  # the parsers' limit
KIND_LABELS = {
    "prometheus": "Prometheus text (a /metrics scrape)",
    "perftest": "perftest bandwidth table (ib_send_bw / ib_write_bw / ib_read_bw)",
    "perftest-json": "perftest --out_json output",
    "nsys": "Nsight Systems stats CSV (nsys stats --format csv)",
    "pairs": "CSV of transfer size and time (bytes, seconds)",
}
DEFAULT_SAMPLE = "vllm_pd_metrics.prom"  # a histogram scrape: the recommended form
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
    order = {".prom": 0, ".txt": 1, ".json": 2, ".csv": 3}
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


@st.cache_data(max_entries=32, show_spinner=False)
def detect(data: bytes, name: str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str | None, str]:
    """``(kind, "")`` or ``(None, error message)``; cached on the content."""
    text = None
    try:
        text, label = read_text(data, name, max_bytes)
        return detect_measurement(text, label), ""
    except MeasureError as exc:
        return None, _with_line(str(exc), text)


@st.cache_data(max_entries=32, show_spinner="Reading the measurement…")
def load(
    data: bytes,
    name: str,
    kind: str,
    pattern: str | None,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Loaded:
    """Parse ``data`` as ``kind`` (and fit it, for perftest and pairs); cached on the content."""
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
        return Loaded(kind=kind, error=str(exc))
    except (ValueError, TypeError) as exc:  # a parser gap: still a message, not a traceback
        return Loaded(kind=kind, error=f"{name}: could not be read as {kind} ({exc})")


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
    return f":material/fact_check: Read **{m.name}** as {what}: {detail}."


# --------------------------------------------------------------------------- formatting


def _ms(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v * 1e3:,.2f} ms"


def _pct(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v:.1%}"


def _gbs(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else fmt_bandwidth(v)


def _ratio(v: float | None) -> str:
    return "–" if v is None or not math.isfinite(v) else f"{v:,.2f}×"


def _time(v: float | None) -> str:
    return "–" if v is None else fmt_time(v)


# --------------------------------------------------------------------------- Prometheus

PROM_ROWS = (  # key, label, formatter
    ("exposed_transfer_s", "Exposed KV transfer (model) vs transfer gap (measured)", _ms),
    ("transfer_s", "Whole KV transfer (model) vs NIXL transfer time (measured)", _ms),
    ("prefill_s", "Prefill", _ms),
    ("ttft_s", "Time to first token", _ms),
    ("transfer_share_of_ttft", "Transfer share of TTFT", _pct),
    ("bandwidth_per_stream_bytes_per_s", "Bandwidth per stream (link × efficiency)", _gbs),
)


def prometheus_table(cmp: ScrapeComparison) -> pd.DataFrame:
    """``compare_to_model`` → a readable table: quantity, model, measured, measured ÷ model."""
    rows = []
    for key, label, fmt in PROM_ROWS:
        r = getattr(cmp, key)
        rows.append(
            {
                "Quantity": label,
                "Model": fmt(r.model),
                "Measured": fmt(r.measured) if r.measured is not None else "not in scrape",
                "Measured ÷ model": _ratio(r.ratio),
            }
        )
    v = cmp.verdict
    rows.append(
        {
            "Quantity": f"Verdict vs the {v.share_target:.0%} line",
            "Model": v.model,
            "Measured": v.measured or "no TTFT in scrape",
            "Measured ÷ model": "–" if v.agree is None else ("agree" if v.agree else "disagree"),
        }
    )
    return pd.DataFrame(rows)


def scenario_label(sc) -> str:
    return f"{sc.model.name}, {sc.seq_len:,} tokens × {sc.batch} on {sc.link.name}"


def prometheus_takeaway(metrics, cmp: ScrapeComparison, sc) -> str:
    """One sentence: the measured share and its verdict, beside the model's."""
    target = sc.share_target
    model_share = cmp.transfer_share_of_ttft.model
    model_part = (
        f"The model for this scenario ({scenario_label(sc)}) predicts {model_share:.1%}"
        f" ({cmp.verdict.model} the line)"
    )
    share = metrics.transfer_share_of_ttft
    if metrics.gap_mean_s is None:
        return (
            "This scrape has no transfer gap (llm_kv_transfer_gap_seconds, SGLang's or NIXL's "
            f"transfer time), so the share of TTFT cannot be measured. {model_part}."
        )
    if share is None:
        return (
            f"The measured transfer gap averages {_ms(metrics.gap_mean_s)}, but the scrape has no "
            f"TTFT, so its share of TTFT is unknown. {model_part}."
        )
    over = cmp.verdict.measured == "over"
    verdict = (
        f"over the {target:.0%} line: this deployment gives back much of what disaggregation gains"
        if over
        else f"under the {target:.0%} line: the transfer is not what limits TTFT"
    )
    agree = "; the model agrees" if cmp.verdict.agree else "; the model disagrees"
    return (
        f"Measured: the KV transfer gap is {share:.1%} of TTFT ({_ms(metrics.gap_mean_s)} of "
        f"{_ms(metrics.ttft_mean_s)} on average), {verdict}. {model_part}{agree}."
    )


# --------------------------------------------------------------------------- fits


def fit_points(res: Loaded) -> tuple[list[float], list[float]]:
    """(sizes [bytes], achieved bandwidth [bytes/s]) of a perftest or pairs measurement."""
    data = res.measurement.data
    sizes = [float(s) for s in data.sizes_bytes]
    if res.kind == "pairs":
        return sizes, [s / t for s, t in data.points]
    return sizes, [float(b) for b in data.bandwidths_bytes_per_s]


def half_bandwidth_bytes(fit: Fit) -> float:
    """The message size that reaches half the fitted bandwidth: latency × bandwidth."""
    return fit.latency_s * fit.bandwidth_bytes_per_s


def intercept_label(fit: Fit) -> str:
    return "Per-message cost" if fit.source == "bandwidth" else "Latency"


def fit_takeaway(fit: Fit, link, name: str) -> str:
    eff = fit.bandwidth_bytes_per_s / link.bandwidth_bytes_per_s
    nominal = fmt_bandwidth(link.bandwidth_bytes_per_s)
    tail = (
        f"; messages under {fmt_bytes(half_bandwidth_bytes(fit))} get less than half of the "
        "fitted bandwidth"
    )
    head = f"{name} fits {fmt_bandwidth(fit.bandwidth_bytes_per_s)} per direction"
    if abs(eff - 1) < 0.005:
        return f"{head}: the sidebar's link ({link.name}) already matches this fit{tail}."
    head += f", {eff:.0%} of the nominal {nominal} of the sidebar's {link.name}"
    if eff > 1.05:
        return (
            f"{head}: more than that link can carry, so the link measured is probably not "
            f"{link.name}; apply the fit to model the link you measured{tail}."
        )
    if eff < 0.8:
        return f"{head}: well below nominal, so datasheet arithmetic is optimistic here{tail}."
    return f"{head}{tail}."


def can_set_efficiency(fit: Fit, link) -> bool:
    """The "keep the nominal link, set efficiency" mode needs a fit below nominal."""
    eff = fit.bandwidth_bytes_per_s / link.bandwidth_bytes_per_s
    return 0 < eff < 1


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
            f"Applied {name}: the sidebar's interconnect is now a custom link at {bw:g} GB/s "
            f"per direction{kept}, efficiency 100 % (the measurement already holds the losses). "
            "The link carries it.",
        )
    except (MeasureError, ValueError) as exc:
        ss[APPLIED] = ("error", f"Could not apply {name}: {exc}")


def show_apply_result() -> None:
    kind, msg = st.session_state.pop(APPLIED, (None, None))
    if kind == "success":
        st.success(msg, icon=":material/check_circle:")
    elif kind == "error":
        st.error(msg)


def take_paste() -> None:
    """Button callback: read the text area's text (the page parses what was read)."""
    st.session_state[PASTED] = st.session_state.get("measure_paste") or ""


# --------------------------------------------------------------------------- nsys


def nsys_table(cmp: NsysComparison, nsys) -> pd.DataFrame:
    model_mean = cmp.per_layer_s.model
    rows = [
        ("Mean per transfer", model_mean, nsys.mean_s),
        ("Median per transfer", cmp.per_layer_median_s.model, nsys.median_s),
        ("Shortest", cmp.model_min_s, nsys.min_s),
        ("Longest", cmp.model_max_s, nsys.max_s),
    ]
    return pd.DataFrame(
        {
            "Quantity": [r[0] for r in rows],
            "Model (one layer's KV)": [_time(r[1]) for r in rows],
            "Measured": [_time(r[2]) for r in rows],
            "Measured ÷ model": [
                _ratio(r[2] / r[1]) if r[2] is not None and r[1] else "–" for r in rows
            ],
        }
    )


def nsys_takeaway(cmp: NsysComparison, nsys, sc) -> str:
    ratio = cmp.per_layer_s.ratio
    what = {"nvtx": "NVTX ranges", "nccl-kernels": "NCCL send/recv kernels"}.get(
        nsys.selection, "selected kernels"
    )
    median = f" (median {fmt_time(nsys.median_s)})" if nsys.median_s is not None else ""
    head = (
        f"The {nsys.count:,} profiled {what} take {fmt_time(nsys.mean_s)} on average{median}; "
        f"the model sends one layer's KV ({cmp.model_layers} layers, {scenario_label(sc)}) "
        f"in {fmt_time(cmp.per_layer_s.model)}"
    )
    if ratio is None:
        return head + "."
    if ratio > 1.25:
        why = (
            "slower than modeled: lower the link efficiency, check launch overhead, or match "
            "the sidebar to the profiled run"
        )
    elif ratio < 0.8:
        why = (
            "faster than modeled: the profiled run had a faster link or fewer bytes per layer "
            "than the sidebar's scenario (check link, model, TP, prompt length, batch)"
        )
    else:
        why = "close to the model"
    return f"{head}: measured is {ratio:.2f}× the model, {why}."


# --------------------------------------------------------------------------- recipes

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"


def recipe_text(name: str) -> str:
    """The text of ``recipes/<name>`` (the Recipes page shows exactly the tested files)."""
    return (RECIPES_DIR / name).read_text(encoding="utf-8")


def load_gap_recipe():
    """``recipes/kv_gap_metrics.py`` as a fresh module (importing it registers nothing)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "kv_gap_metrics_recipe", RECIPES_DIR / "kv_gap_metrics.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@st.cache_data(max_entries=4, show_spinner=False)
def example_scrape(n: int = 400, seed: int = 7) -> str:
    """The exposition the recipe produces for ``n`` simulated requests (fresh registry)."""
    import numpy as np
    from prometheus_client import CollectorRegistry, generate_latest

    recipe = load_gap_recipe()
    registry = CollectorRegistry()
    metrics = recipe.KvGapMetrics(registry)
    rng = np.random.default_rng(seed)
    t = 0.0
    for i in range(n):
        rid = f"req-{i}"
        arrived = t
        t += float(rng.uniform(0.04, 0.3))  # prefill
        metrics.on_prefill_done(rid, arrived_at=arrived, at=t)
        t += float(rng.lognormal(np.log(0.004), 0.5))  # KV transfer and scheduling
        metrics.on_first_decode_step(rid, at=t)
        t += 0.025  # first decode step
        metrics.on_first_token(rid, at=t)
    return generate_latest(registry).decode("utf-8")
