"""Which decode GPU: the same plan with the decode pool on each GPU of a list (the prefill GPU
kept), at the same targets, cheapest first when a price is given (else fewest GPUs)."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from kvmodel.capacity.plan import plan
from kvmodel.catalog import get_gpu

PAIR_COLUMNS = ("prefill_gpu", "decode_gpu", "decode_gpu_name", "prefill_gpus", "decode_gpus",
                "disaggregated_gpus", "ttft_s", "tpot_s", "meets_slo", "cost_per_hour",
                "cost_per_million_output_tokens", "note")  # fmt: skip


def decode_gpu_plans(sc, workload, slo, gpu_ids, *, prefill_tp=None, decode_tp=None,
                     gpu_price_per_hour=None,
                     gpu_price_decode_per_hour=None) -> pd.DataFrame:  # fmt: skip
    """One row per decode GPU of ``gpu_ids`` (catalog ids; the scenario's own first, once)
    with ``sc``'s prefill GPU (``PAIR_COLUMNS``, SI units).  A GPU that cannot hold the
    decode pool (the weights do not fit) is a row with its reason in ``note``.  Sorted:
    meeting the targets first, then the cost per hour (with a price) or the GPUs."""
    ids = list(dict.fromkeys([sc.decode_gpu.id, *gpu_ids]))
    rows = []
    for gid in ids:
        gpu = get_gpu(gid)
        other = replace(sc, gpu_decode=None if gpu == sc.gpu else gpu)
        row = {"prefill_gpu": sc.gpu.id, "decode_gpu": gid, "decode_gpu_name": gpu.name}
        try:
            p = plan(other, workload, slo, prefill_tp=prefill_tp, decode_tp=decode_tp,
                     gpu_price_per_hour=gpu_price_per_hour,
                     gpu_price_decode_per_hour=gpu_price_decode_per_hour)  # fmt: skip
        except ValueError as exc:
            row.update(meets_slo=False, note=str(exc))
        else:
            row.update({k: getattr(p, k) for k in PAIR_COLUMNS if hasattr(p, k) and k not in row})
            row["note"] = ""
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(PAIR_COLUMNS))
    by = "cost_per_hour" if df["cost_per_hour"].notna().any() else "disaggregated_gpus"
    df["_miss"] = ~df["meets_slo"].astype(bool)
    df = df.sort_values(["_miss", by], kind="stable", na_position="last")
    return df.drop(columns="_miss").reset_index(drop=True)
