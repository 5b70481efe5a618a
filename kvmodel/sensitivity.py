"""Which input moves TTFT most: a one-at-a-time (tornado) sensitivity table.

Numeric inputs are moved to value × (1 − rel) and value × (1 + rel), one at a time, everything
else kept; whole counts are rounded (half up) and clamped to their valid range (S to the model's
max context, efficiency and MFU to ≤ 100 %).  Categorical inputs (interconnect, compression,
layer-wise) take every value; their row shows the best (``low``) and worst (``high``) outcome.
TTFT = the framework's request cost + prefill + exposed transfer + first decode step
(``Scenario.ttft_s``), as every page shows it.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd

from . import catalog
from .topology import unbuildable_links
from .transfer import Scenario, transfer

COLUMNS = (
    "input",
    "low",
    "high",
    "unit",
    "ttft_low_s",
    "ttft_high_s",
    "share_low",
    "share_high",
    "delta_ttft_s",
)
COMPRESSIONS = ("none", "fp8", "int8", "int4")


def outcome(sc: Scenario) -> tuple[float, float]:
    """(TTFT [s], exposed-transfer share of TTFT) of ``sc``."""
    t = transfer(sc)
    exposed = float(t.exposed_s)
    ttft = sc.ttft_s(float(t.prefill_s), exposed)
    return ttft, exposed / ttft


def _half_up(x: float) -> int:
    return int(math.floor(x + 0.5))


def _numeric_rows(sc: Scenario, rel: float):
    """(input, unit, (low scenario, value), (high scenario, value)) for each numeric input; the
    value is the setting in SI units (``unit``: token, request, bytes/s, s, fraction, mfu)."""
    lo_f, hi_f = 1 - rel, 1 + rel
    link = sc.link
    rows = []
    s_lo = max(1, _half_up(sc.seq_len * lo_f))
    s_hi = min(sc.model.max_context_tokens, _half_up(sc.seq_len * hi_f))
    rows.append(
        (
            "sequence length",
            "token",
            (replace(sc, seq_len=s_lo), s_lo),
            (replace(sc, seq_len=s_hi), s_hi),
        )
    )
    b_lo, b_hi = max(1, _half_up(sc.batch * lo_f)), _half_up(sc.batch * hi_f)
    rows.append(
        (
            "batch",
            "request",
            (replace(sc, batch=b_lo), b_lo),
            (replace(sc, batch=b_hi), b_hi),
        )
    )
    bw = link.bandwidth_bytes_per_s
    rows.append(
        (
            "link bandwidth (per direction)",
            "bytes/s",
            *(
                (sc.with_link(replace(link, bandwidth_bytes_per_s=bw * f)), bw * f)
                for f in (lo_f, hi_f)
            ),
        )
    )
    lat = link.latency_s
    rows.append(
        (
            "link latency",
            "s",
            *((sc.with_link(replace(link, latency_s=lat * f)), lat * f) for f in (lo_f, hi_f)),
        )
    )
    e_lo, e_hi = sc.efficiency * lo_f, min(1.0, sc.efficiency * hi_f)
    rows.append(
        (
            "link efficiency",
            "fraction",
            (sc.with_transfer(efficiency=e_lo), e_lo),
            (sc.with_transfer(efficiency=e_hi), e_hi),
        )
    )
    step = sc.decode_step_s
    rows.append(
        (
            "decode step",
            "s",
            *(
                (replace(sc, decode_step_s=step * f, decode_step_estimated=False), step * f)
                for f in (lo_f, hi_f)
            ),
        )
    )
    if sc.prefill_s is not None:
        p = sc.prefill_s
        rows.append(
            (
                "prefill time",
                "s",
                *((replace(sc, prefill_s=p * f), p * f) for f in (lo_f, hi_f)),
            )
        )
    else:
        m_lo, m_hi = sc.mfu * lo_f, min(1.0, sc.mfu * hi_f)
        rows.append(
            (
                "prefill MFU (estimated prefill)",
                "mfu",
                (replace(sc, mfu=m_lo), m_lo),
                (replace(sc, mfu=m_hi), m_hi),
            )
        )
    if sc.compression != "none":
        c = sc.codec_bytes_per_s
        rows.append(
            (
                "quantize/dequantize throughput",
                "bytes/s",
                *((sc.with_transfer(codec_bytes_per_s=c * f), c * f) for f in (lo_f, hi_f)),
            )
        )
    return rows


def _categorical_rows(sc: Scenario):
    """(input, [(scenario, name), ...]) for each categorical input (names, not quantities)."""
    every = list(dict.fromkeys(catalog.links().values()))
    blocked = set(unbuildable_links(sc.gpu, sc.gpus_prefill, sc.gpus_decode, every))
    # the links this deployment can be built on (and its own): an option it cannot use is no
    # setting of this input (an H100 pair was told NVLink 5 was its best interconnect)
    links = [lk for lk in every if lk.id not in blocked or lk == sc.link]
    return [
        ("interconnect", [(sc.with_link(lk), lk.name) for lk in links]),
        (
            "transfer compression",
            [
                (sc.with_transfer(compression=c), "no compression" if c == "none" else c.upper())
                for c in COMPRESSIONS
            ],
        ),
        (
            "layer-wise sending",
            [
                (sc.with_transfer(layerwise=False), "layer-wise off"),
                (sc.with_transfer(layerwise=True), "layer-wise on"),
            ],
        ),
    ]


def tornado(sc: Scenario, *, rel: float = 0.5) -> pd.DataFrame:
    """One row per input: its low/high setting (``low``/``high`` in SI units of kind ``unit``, or
    an option's name when ``unit`` is "name"; ``kvview.fmt.fmt_setting`` shows them), TTFT [s] and
    transfer share at each, and the absolute TTFT spread ``delta_ttft_s`` =
    |TTFT(high) − TTFT(low)|, largest spread first.

    ``df.attrs`` holds the base ``ttft_s`` and ``share`` and ``rel``.  ``rel`` in (0, 1).
    """
    if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not 0 < rel < 1:
        raise ValueError(f"rel must be a number in (0, 1), got {rel!r}")
    base_ttft, base_share = outcome(sc)
    records = []
    for name, unit, (lo_sc, lo), (hi_sc, hi) in _numeric_rows(sc, rel):
        (t_lo, s_lo), (t_hi, s_hi) = outcome(lo_sc), outcome(hi_sc)
        records.append((name, lo, hi, unit, t_lo, t_hi, s_lo, s_hi))
    for name, options in _categorical_rows(sc):
        results = [(*outcome(o_sc), label) for o_sc, label in options]
        best = min(results, key=lambda r: r[0])
        worst = max(results, key=lambda r: r[0])
        records.append((name, best[2], worst[2], "name", best[0], worst[0], best[1], worst[1]))
    df = pd.DataFrame(records, columns=list(COLUMNS[:-1]))
    df["delta_ttft_s"] = (df["ttft_high_s"] - df["ttft_low_s"]).abs()
    df = df.sort_values("delta_ttft_s", ascending=False, kind="stable").reset_index(drop=True)
    df.attrs.update(ttft_s=base_ttft, share=base_share, rel=float(rel))
    return df
