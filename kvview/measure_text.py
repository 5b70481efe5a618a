"""The Measured page's words and numbers: tables and takeaway sentences beside the model, and
what a fit means for the sidebar's link.  No streamlit here (``ui.measure_ui`` parses and acts).
"""

from __future__ import annotations

import math

import pandas as pd

from kvmodel.calibrate import Fit, NsysComparison, ScrapeComparison
from kvmodel.transfer import wire_bytes_per_token
from kvmodel.verdicts import AGREEMENT_FACTOR
from kvview.fmt import fmt_bandwidth, fmt_bytes, fmt_time
from kvview.mdtext import md_escape

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
    ("bandwidth_per_stream_bytes_per_s", "Bandwidth per stream (link × efficiency × stack)", _gbs),
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
            "Measured ÷ model": "–"
            if v.agree is None
            else (
                "agree"
                if v.agree
                else f"disagree ({v.factor:,.1f}× apart)"
                if v.factor and v.factor > AGREEMENT_FACTOR
                else "disagree"
            ),
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
    v = cmp.verdict
    faster = any("faster link than this scenario" in n for n in cmp.notes)
    if v.agree and faster:  # the share agrees, but the bandwidth row says another link
        agree = (
            f"; the shares agree (within {AGREEMENT_FACTOR:g}× and on the same side), but each "
            "of the cluster's transfers moved faster than one link of this scenario allows, so "
            "it ran on another network: set its interconnect for a like-for-like comparison "
            "(notes below the table)."
        )
    elif v.agree:
        agree = (
            f"; the model's share agrees (within {AGREEMENT_FACTOR:g}× and on the same side of "
            "the line)"
        )
    elif v.factor is not None and v.factor > AGREEMENT_FACTOR:
        agree = (
            f". They differ by {v.factor:,.1f}×, more than the {AGREEMENT_FACTOR:g}× the model "
            "is good for: the sidebar's scenario probably does not match this cluster (prompt "
            "length, bytes per request, link). Set what the scrape reveals with the button below."
        )
    else:
        agree = "; the model falls on the other side of the line"
    return (
        f"Measured: the KV transfer gap is {share:.1%} of TTFT ({_ms(metrics.gap_mean_s)} of "
        f"{_ms(metrics.ttft_mean_s)} on average), {verdict}. {model_part}{agree}"
        + ("" if agree.endswith(".") else ".")
    )


def scrape_settings(metrics, sc) -> dict:
    """What a scrape reveals about the deployment, as sidebar values: the prompt length that
    gives its bytes per transfer, and its achieved bandwidth as a custom link (empty when the
    scrape has neither)."""
    out = {}
    if metrics.nixl_bytes_mean:
        per_token = float(wire_bytes_per_token(sc))
        tokens = round(metrics.nixl_bytes_mean / per_token) if per_token else 0
        if 1 <= tokens <= sc.model.max_context_tokens:
            out["seq"] = tokens
    if metrics.effective_bandwidth_bytes_per_s:
        out["bw"] = float(f"{metrics.effective_bandwidth_bytes_per_s / 1e9:.4g}")
    return out


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
    head = f"{md_escape(name)} fits {fmt_bandwidth(fit.bandwidth_bytes_per_s)} per direction"
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
