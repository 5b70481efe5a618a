"""The Capacity page's CSV tables (conventions of ``kvview.csv_tables``: a label column, units in
the headers or row labels, numbers as numbers; ``csv_tables.csv_handout`` adds the scenario
link).  No streamlit here."""

from __future__ import annotations

import pandas as pd

from kvview.capacity_words import pct_label
from kvview.csv_tables import spec_columns


def _yes_no(flag) -> str:
    return "" if flag is None else ("yes" if flag else "no")


def _si(value, scale: float):
    return None if value is None else float(value) * scale


SAVES = "GPUs saved by disaggregation [GPUs]"


def _whole_or_blank(out: pd.DataFrame, header: str) -> None:
    """A count column that is blank where no number is counted (a saving against a side that
    misses the targets), whole numbers elsewhere."""
    if header in out.columns:
        out[header] = pd.array([None if v is None or v != v else int(v) for v in out[header]],
                               dtype="Int64")  # fmt: skip


def _nearest_rows(plan) -> list[tuple]:
    """Where a side that misses the targets meets them (the plan searched it)."""
    if not getattr(plan, "nearest_searched", False):
        return []
    n, c = plan.disaggregated_nearest, plan.colocated_nearest
    rows = []
    if not plan.disaggregated_feasible or not plan.colocated_feasible:
        rows += [
            ("nearest TP meeting the targets [GPUs per instance]",
             None if plan.disaggregated_feasible or n is None
             else f"prefill {n.prefill_tp}, decode {n.decode_tp}",
             None if plan.colocated_feasible or c is None else c.tp),
            ("GPUs at the nearest TP meeting the targets [GPUs]",
             None if plan.disaggregated_feasible or n is None else n.gpus,
             None if plan.colocated_feasible or c is None else c.gpus),
        ]  # fmt: skip
    return rows


def _gpu_rows(plan) -> list[tuple]:
    """Each pool's GPU (catalog ids), when the plan says (colocated runs on the prefill GPU)."""
    if not plan.prefill_gpu:
        return []
    return [("prefill GPU", plan.prefill_gpu, plan.prefill_gpu),
            ("decode GPU", plan.decode_gpu or plan.prefill_gpu, None)]  # fmt: skip


def _price_rows(plan, price: float | None, price_decode: float | None) -> list[tuple]:
    """The prices and costs, when a price is given (colocated runs on the prefill GPU)."""
    if not price:
        return []
    rows = [("GPU price [$ per GPU-hour]", price, price)]
    if price_decode:
        rows.append(("decode GPU price [$ per GPU-hour]", price_decode, None))
    rows.append(("cost [$ per hour]", plan.cost_per_hour, plan.colocated_cost_per_hour))
    return rows


def plan_frame(
    plan, *, rps: float, slo, price: float | None = None, price_decode: float | None = None
) -> pd.DataFrame:
    """One row per quantity (unit in its label), one column per option; ``price_decode`` the
    decode GPUs' own price (None: the prefill price)."""
    p = pct_label(slo.ttft_percentile)
    rows = [
        ("request rate [requests/s]", rps, rps),
        (f"TTFT target at {p} [ms]", slo.ttft_s * 1e3, slo.ttft_s * 1e3),
        ("TPOT target [ms]", slo.tpot_s * 1e3, slo.tpot_s * 1e3),
        ("GPUs [GPUs]", plan.disaggregated_gpus, plan.colocated_gpus),
        ("prefill GPUs [GPUs]", plan.prefill_gpus, None),
        ("decode GPUs [GPUs]", plan.decode_gpus, None),
        *_gpu_rows(plan),
        ("prefill : decode GPUs [ratio]", plan.pd_ratio, None),
        ("prefill TP [GPUs per instance]", plan.prefill_tp, None),
        ("prefill instances", plan.prefill_instances, None),
        ("decode TP [GPUs per instance]", plan.decode_tp, None),
        ("decode instances", plan.decode_instances, None),
        ("mean requests per decode instance", plan.decode_batch, None),
        ("colocated TP [GPUs per instance]", None, plan.colocated_tp),
        ("colocated instances", None, plan.colocated_instances),
        ("prefill chunk [tokens]", None, plan.colocated_chunk_tokens),
        ("requests per colocated instance", None, plan.colocated_batch),
        ("GPUs saved by disaggregation [GPUs]", plan.disaggregation_saves_gpus, None),
        (f"TTFT at {p} [ms]", _si(plan.ttft_s, 1e3), _si(plan.colocated_ttft_s, 1e3)),
        ("TPOT [ms]", _si(plan.tpot_s, 1e3), _si(plan.colocated_tpot_s, 1e3)),
        ("link utilisation [%]", _si(plan.link_utilization, 100), None),
        ("KV bytes sent [GB/s]", _si(plan.demanded_bytes_per_s, 1e-9), None),
        (
            "link bandwidth per NIC [GB/s per direction]",
            _si(plan.link_bandwidth_bytes_per_s, 1e-9),
            None,
        ),
        (
            f"NIC bandwidth the {p} TTFT needs [GB/s per direction]",
            _si(plan.nic_bandwidth_needed_bytes_per_s, 1e-9),
            None,
        ),
        ("meets the SLO", _yes_no(plan.meets_slo), _yes_no(plan.colocated_meets_slo)),
        (
            "feasible (meets both targets)",
            _yes_no(plan.disaggregated_feasible),
            _yes_no(plan.colocated_feasible),
        ),
        ("prefill pool limited by", plan.limits.get("prefill", ""), ""),
        ("decode pool limited by", plan.limits.get("decode", ""), ""),
        ("colocated limited by", "", plan.limits.get("colocated", "")),
        *_nearest_rows(plan),
    ]
    rows += _price_rows(plan, price, price_decode)
    return pd.DataFrame(
        {
            "quantity": [r[0] for r in rows],
            "disaggregated": pd.Series([r[1] for r in rows], dtype=object),
            "colocated": pd.Series([r[2] for r in rows], dtype=object),
        }
    )


def sweep_frame(sweep: pd.DataFrame, *, ttft_percentile: float) -> pd.DataFrame:
    """``rate_sweep``'s frame with units in the headers, one row per request rate."""
    p = pct_label(ttft_percentile)
    out = spec_columns(
        sweep,
        (
            ("rps", "request rate [requests/s]", 1),
            ("disaggregated_gpus", "disaggregated GPUs [GPUs]", 1),
            ("prefill_gpus", "prefill GPUs [GPUs]", 1),
            ("decode_gpus", "decode GPUs [GPUs]", 1),
            ("colocated_gpus", "colocated GPUs [GPUs]", 1),
            ("disaggregation_saves_gpus", "GPUs saved by disaggregation [GPUs]", 1),
            ("prefill_instances", "prefill instances", None),
            ("decode_instances", "decode instances", None),
            ("colocated_instances", "colocated instances", None),
            ("prefill_limit", "prefill limited by", None),
            ("decode_limit", "decode limited by", None),
            ("colocated_limit", "colocated limited by", None),
            ("link_utilization", "link utilisation [%]", 100),
            ("ttft_s", f"disaggregated TTFT at {p} [ms]", 1e3),
            ("meets_slo", "disaggregated meets the SLO", None),
            ("colocated_ttft_s", f"colocated TTFT at {p} [ms]", 1e3),
            ("colocated_meets_slo", "colocated meets the SLO", None),
            ("tpot_s", "disaggregated TPOT [ms]", 1e3),
            ("colocated_tpot_s", "colocated TPOT [ms]", 1e3),
            ("prefill_tp", "prefill TP [GPUs]", None),
            ("decode_tp", "decode TP [GPUs]", None),
            ("colocated_tp", "colocated TP [GPUs]", None),
            ("cost_per_hour", "disaggregated cost [$ per hour]", None),
            ("colocated_cost_per_hour", "colocated cost [$ per hour]", None),
        ),
    )
    costs = ["disaggregated cost [$ per hour]", "colocated cost [$ per hour]"]
    if costs[0] in out and out[costs[0]].isna().all():  # no price given: no cost columns
        out = out.drop(columns=costs)
    for col in ("disaggregated meets the SLO", "colocated meets the SLO"):
        if col in out.columns:
            out[col] = [_yes_no(bool(v)) for v in out[col]]
    _whole_or_blank(out, SAVES)
    return out


def network_frame(networks: pd.DataFrame, *, ttft_percentile: float) -> pd.DataFrame:
    """``capacity.network_plans``' frame with units in the headers, one row per interconnect
    (the page shows it as it is and exports it)."""
    p = pct_label(ttft_percentile)
    out = spec_columns(
        networks,
        (
            ("link_name", "interconnect", None),
            ("bandwidth_bytes_per_s", "per NIC and direction [GB/s]", 1e-9),
            ("nics_per_transfer", "NICs per transfer", None),
            ("disaggregated_gpus", "disaggregated GPUs [GPUs]", 1),
            ("prefill_gpus", "prefill GPUs [GPUs]", 1),
            ("decode_gpus", "decode GPUs [GPUs]", 1),
            ("colocated_gpus", "colocated GPUs [GPUs]", 1),
            ("disaggregation_saves_gpus", "GPUs saved by disaggregation [GPUs]", 1),
            ("ttft_s", f"TTFT at {p} [ms]", 1e3),
            ("tpot_s", "TPOT [ms]", 1e3),
            ("link_utilization", "link utilisation [%]", 100),
            ("nic_bandwidth_needed_bytes_per_s", f"per-NIC bandwidth the {p} needs [GB/s]", 1e-9),
            ("meets_slo", "meets the targets", None),
            ("cost_per_hour", "cost [$ per hour]", None),
            ("domain_gpus", "GPUs one scale-up domain joins [GPUs]", None),
        ),
    )
    if out["cost [$ per hour]"].isna().all():  # no price given
        out = out.drop(columns=["cost [$ per hour]"])
    out["meets the targets"] = [_yes_no(bool(v)) for v in out["meets the targets"]]
    _whole_or_blank(out, SAVES)
    domain = "GPUs one scale-up domain joins [GPUs]"
    out[domain] = pd.array([int(v) if v else None for v in out[domain]], dtype="Int64")
    return out


def decode_gpu_frame(plans: pd.DataFrame, *, ttft_percentile: float) -> pd.DataFrame:
    """``capacity.pairs.decode_gpu_plans`` as a table: units in the headers."""
    p = pct_label(ttft_percentile)
    return pd.DataFrame(
        {
            "decode GPU": plans["decode_gpu_name"],
            "prefill GPUs [GPUs]": plans["prefill_gpus"],
            "decode GPUs [GPUs]": plans["decode_gpus"],
            "GPUs [GPUs]": plans["disaggregated_gpus"],
            f"TTFT {p} [ms]": plans["ttft_s"] * 1e3,
            "TPOT [ms]": plans["tpot_s"] * 1e3,
            "meets the targets": [_yes_no(v) for v in plans["meets_slo"]],
            "cost [$ per hour]": plans["cost_per_hour"],
            "cost [$ per million output tokens]": plans["cost_per_million_output_tokens"],
            "note": plans["note"],
        }
    )
