"""Tables the pages draw: link × batch, transfer vs S, mitigation options, the layer timeline.

Each returns a pandas DataFrame in SI units (seconds, bytes) with the unit in the column name
(``*_s``; ``link_batch_table``'s ``batch N`` columns are seconds too), computed only from the
model.  ``kvview.fmt.in_ms`` turns them into the millisecond tables the pages show and export.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from . import catalog
from .inputs import DEFAULT_BAND_MS
from .size import bytes_per_token_full, valid_tp
from .topology import scale_up_feasible
from .transfer import Scenario, Volume, chunk_times_s, critical_seq_len, evaluate, transfer


def decode_band_verdict(transfer_ms: float, band_ms=DEFAULT_BAND_MS) -> str:
    """'below' a decode step, 'within' the band, or 'above' it (both in ms, as the band's
    slider)."""
    lo, hi = band_ms
    return "below" if transfer_ms < lo else ("within" if transfer_ms <= hi else "above")


def link_batch_table(sc: Scenario, link_ids, batches=(1, 8, 32)) -> pd.DataFrame:
    """Exposed transfer [s] for each link (rows) and batch (columns ``batch N``); the same for
    ``batch_free(sc)``."""
    rows = []
    b = np.asarray(list(batches))
    for lid in link_ids:
        link = catalog.get_link(lid)
        t = np.atleast_1d(transfer(sc.with_link(link), batch=b).exposed_s)
        row = {
            "link": lid,
            "name": link.name,
            "GB/s per direction": link.bandwidth_bytes_per_s / 1e9,
        }
        row.update({f"batch {int(n)}": float(v) for n, v in zip(b, t, strict=True)})
        rows.append(row)
    return pd.DataFrame(rows)


def batch_free(sc: Scenario) -> Scenario:
    """The scenario that stands for ``sc`` at every batch (``sc`` at batch 1) in the tables
    over batches, ``link_batch_table`` and ``batch_sweep``: each of their points sets its own
    batch (the streams of data-parallel attention included, ``wire._streams``), so they are
    the same for ``sc`` and ``batch_free(sc)`` (tests/test_sweeps.py), and a memo keyed by it
    keeps them over a batch change (bench/README.md, Session 11)."""
    return sc if sc.batch == 1 else replace(sc, batch=1)


def batch_sweep(sc: Scenario, link_ids, batches) -> pd.DataFrame:
    """Long table: link, name, batch, transfer_s (the same for ``batch_free(sc)``)."""
    b = np.asarray(list(batches))
    frames = []
    for lid in link_ids:
        link = catalog.get_link(lid)
        t = np.atleast_1d(transfer(sc.with_link(link), batch=b).exposed_s)
        frames.append({"link": lid, "name": link.name, "batch": b, "transfer_s": t})
    return stacked(frames)


def stacked(blocks: list[dict]) -> pd.DataFrame:
    """``pd.concat([pd.DataFrame(b) for b in blocks], ignore_index=True)``, made as one frame:
    each block maps the same column names to arrays of one length, or to a scalar that fills
    its column.  A frame per block and their concat were ~45 % of a sweep's time on pandas 3
    (string columns built per block; bench/README.md, Session 11).  Same columns, dtypes and
    values (tests/test_sweeps.py)."""
    if not blocks:
        return pd.concat([], ignore_index=True)  # the same error as before: nothing to stack
    names = list(blocks[0])
    lengths = [_block_length(b) for b in blocks]
    return pd.DataFrame({n: _stacked_column([b[n] for b in blocks], lengths) for n in names})


def _block_length(block: dict) -> int:
    sizes = {np.shape(v)[0] for v in block.values() if np.ndim(v) > 0}
    if len(sizes) != 1:
        raise ValueError(f"a block's columns must have one length, got {sorted(sizes)}")
    return sizes.pop()


def _stacked_column(parts: list, lengths: list[int]) -> np.ndarray:
    if all(np.ndim(p) == 0 for p in parts):  # one scalar per block
        strings = all(isinstance(p, str) for p in parts)
        return np.repeat(np.array(parts, dtype=object if strings else None), lengths)
    return np.concatenate(
        [np.broadcast_to(np.asarray(p, dtype=object if isinstance(p, str) else None), (n,))
         for p, n in zip(parts, lengths, strict=True)]  # fmt: skip
    )


def seq_grid(max_tokens: int, *, start: int = 128, points: int = 200) -> np.ndarray:
    """Log-spaced whole token counts from ``start`` to ``max_tokens`` inclusive."""
    hi = max(int(max_tokens), start)
    return np.unique(np.geomspace(start, hi, points).round().astype(np.int64))


def seq_sweep(sc: Scenario, link_ids, seqs=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Transfer vs S per link, and each link's critical S.

    Returns (curves: link, seq_len, transfer_s; critical: link, critical_seq_len).
    """
    s = seq_grid(sc.model.max_context_tokens) if seqs is None else np.asarray(seqs)
    curves, crit = [], []
    volume = Volume(sc, seq_len=s)  # bytes and prefill over the grid: the same on every link
    for lid in link_ids:
        link_sc = sc.with_link(catalog.get_link(lid))
        t = transfer(link_sc, volume=volume).exposed_s
        curves.append({"link": lid, "seq_len": s, "transfer_s": t})
        crit.append({"link": lid, "critical_seq_len": critical_seq_len(link_sc)})
    return stacked(curves), pd.DataFrame(crit)


def model_seq_sweep(sc: Scenario, model_ids, seqs) -> pd.DataFrame:
    """Transfer vs S for several models on the scenario's link (S clipped to each model's max).

    Each model runs at the scenario's TP where its KV heads allow it, else the largest TP below
    that they do (column ``tp``), with its usual attention parallelism (dp for MLA)."""
    s = np.asarray(seqs)
    frames = []
    for mid in model_ids:
        m = catalog.get_model(mid)
        ok = s[s <= m.max_context_tokens]
        tp_p = max(valid_tp(m, sc.tp_prefill))
        tp_d = max(valid_tp(m, sc.tp_decode))
        msc = replace(
            sc,
            model=m,
            seq_len=min(sc.seq_len, m.max_context_tokens),
            tp_prefill=tp_p,
            tp_decode=tp_d,
            kv_dtype=sc.kv_dtype,
            attention_parallel="dp" if m.attention == "mla" else "tp",
            decode_step_estimated=False,  # the chart draws the scenario's one threshold
        )
        t = transfer(msc, seq_len=ok).exposed_s
        frames.append(
            {"model": mid, "attention": m.attention, "seq_len": ok, "transfer_s": t, "tp": tp_d}
        )  # fmt: skip
    return stacked(frames)


def models_table(kv_dtype: str = "fp16", seq_len: int = 8192, extra=()) -> pd.DataFrame:
    """Every catalog model (plus ``extra`` specs): bytes per token at short context and averaged
    over a ``seq_len``-token prompt (clipped to each model's max context)."""
    from .size import kv_bytes

    rows = []
    for m in [catalog.get_model(mid) for mid in catalog.model_ids()] + list(extra):
        s = min(seq_len, m.max_context_tokens)
        kvb = kv_bytes(m, s, 1, kv_dtype=kv_dtype)
        rows.append(
            {
                "model": m.id,
                "name": m.name,
                "attention": m.attention,
                "layers": m.layers,
                "kv_heads": m.min_kv_heads,
                "state_bytes": m.state_layers * m.state_bytes_per_layer,
                "bytes_per_token_short": bytes_per_token_full(m, kv_dtype=kv_dtype),
                "seq_len": s,
                "kv_bytes_at_seq": float(kvb.total),
                "bytes_per_token_at_seq": float(kvb.per_token),
                "max_context_tokens": m.max_context_tokens,
            }
        )
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class Option:
    label: str
    scenario: Scenario
    buildable: bool = True  # False: a scale-up link between instances that share no domain


def mitigation_options(sc: Scenario, *, nvlink_id: str | None = None) -> list[Option]:
    """Baseline, each mitigation alone, and the useful combinations, as full scenarios."""
    base = replace(sc, compression="none", layerwise=False)
    nv = catalog.get_link(nvlink_id or sc.gpu.nvlink)
    opts = [Option("Baseline", base)]
    for comp in ("fp8", "int8", "int4"):
        opts.append(Option(f"{comp.upper()} transfer", replace(base, compression=comp)))
    opts.append(Option("Layer-wise", replace(base, layerwise=True)))
    opts.append(Option("INT8 + layer-wise", replace(base, compression="int8", layerwise=True)))
    ok = scale_up_feasible(sc.gpu, sc.gpus_prefill, sc.gpus_decode, nv)
    why = "" if ok else " (not buildable)"  # P + D exceed one NVLink domain
    opts.append(Option(f"{nv.name}{why}", replace(base, link=nv), ok))
    opts.append(Option(f"{nv.name} + layer-wise{why}", replace(base, link=nv, layerwise=True), ok))
    return opts


def mitigation_table(sc: Scenario, options: list[Option], *, critical: bool = True) -> pd.DataFrame:
    """Per option: wire bytes, the framework's request cost, prefill, exposed transfer, first
    decode step (they add up to TTFT), share, saving vs the first option [s], and (``critical``)
    the critical sequence length [tokens], a search per option that a chart of the options
    does not need."""
    return pd.DataFrame(mitigation_rows(sc, options, critical=critical))


def mitigation_rows(sc: Scenario, options: list[Option], *, critical: bool = True) -> list[dict]:
    """``mitigation_table``'s rows as dicts, for a reader that needs no frame (Compare's
    sentence: ~1 ms of its rerun went to the frame and its copy in ms)."""
    rows = []
    base_ttft = None
    for opt in options:
        ev = evaluate(opt.scenario)
        base_ttft = ev.ttft_s if base_ttft is None else base_ttft
        row = {
            "option": opt.label,
            "wire_bytes": ev.wire_bytes,
            "framework_request_s": ev.framework_request_s,
            "prefill_s": ev.prefill_s,
            "exposed_transfer_s": ev.exposed_s,
            "codec_s": ev.codec_s,
            "decode_step_s": ev.decode_step_s,
            "ttft_s": ev.ttft_s,
            "transfer_share": ev.transfer_share_of_ttft,
            "ttft_saving_s": base_ttft - ev.ttft_s,
        }
        if critical:
            row["critical_seq_len"] = ev.critical_seq_len
        row["buildable"] = opt.buildable
        # values quantized for the trip
        row["lossy"] = opt.scenario.compression != "none" and ev.compression_ratio < 1
        rows.append(row)
    return rows


def timeline(sc: Scenario) -> pd.DataFrame:
    """Gantt rows: the framework's request cost, prefill compute, each layer's transfer chunk,
    the first decode step, in seconds since the request arrived (the last row ends at TTFT).

    Columns: lane, label, start_s, end_s.  Chunk j starts at max(ready_j, end of chunk j−1);
    sent whole, one chunk starts when prefill ends.
    """
    ev = evaluate(sc)
    p = ev.prefill_s
    rows = [{"lane": "Prefill compute", "label": "prefill", "start_s": 0.0, "end_s": p}]
    if sc.layerwise:
        x = chunk_times_s(sc)
        n = x.shape[0]
        end = 0.0
        for j in range(n):
            start = max((j + 1) / n * p, end)
            end = start + float(x[j])
            rows.append(
                {
                    "lane": "KV transfer",
                    "label": f"layer chunk {j + 1}/{n}",
                    "start_s": start,
                    "end_s": end,
                }
            )
        done = end
    else:
        done = p + ev.transfer_s
        rows.append(
            {
                "lane": "KV transfer",
                "label": "whole cache",
                "start_s": p,
                "end_s": done,
            }
        )
    rows.append(
        {
            "lane": "Decode",
            "label": "first decode step",
            "start_s": done,
            "end_s": done + ev.decode_step_s,
        }
    )
    r = ev.framework_request_s  # before the prefill: every row starts that much later
    if r > 0:
        for row in rows:
            row["start_s"], row["end_s"] = r + row["start_s"], r + row["end_s"]
        rows.insert(0, {"lane": "Framework/request", "label": "scheduling, proxy, tokenizer",
                        "start_s": 0.0, "end_s": r})  # fmt: skip
    return pd.DataFrame(rows)


def compare_table(labelled) -> pd.DataFrame:
    """Key numbers of several scenarios side by side (SI units; ``kvview.compare_cells`` shows
    them, ``kvmodel.compare.DIRECTIONS`` says which way each number is better).

    ``labelled`` is a list of (label, Evaluation).  One row per scenario (index = label), in the
    given order; ``critical_seq_len`` is None where no length up to max context reaches it.
    """
    from .verdicts import step_verdict

    rows = {}
    for label, ev in labelled:
        sc = ev.scenario
        rows[label] = {
            "model": sc.model.name,
            "gpu": sc.gpu.name,
            "link": sc.link.name,
            "stack": sc.stack.name,
            "seq_len": sc.seq_len,
            "batch": sc.batch,
            "kv_dtype": sc.kv_dtype,
            "compression": sc.compression,
            "layerwise": sc.layerwise,
            "tp_prefill": sc.tp_prefill,
            "tp_decode": sc.tp_decode,
            "ep_prefill": sc.ep_prefill,
            "ep_decode": sc.ep_decode,
            "attention_parallel": sc.attention_parallel,
            "window_transfer": sc.window_transfer,
            "efficiency": sc.efficiency,
            "streams": ev.streams,
            "codec_bytes_per_s": sc.codec_bytes_per_s,
            "k": sc.k,
            "prefill_s": ev.prefill_s,
            "prefill_estimated": ev.prefill_estimated,
            "decode_step_s": ev.decode_step_s,
            "decode_step_estimated": sc.decode_step_estimated,
            "kv_bytes": ev.kv_total_bytes,
            "wire_bytes": ev.wire_bytes,
            "exposed_transfer_s": ev.exposed_s,
            "transfer_over_decode": ev.transfer_over_decode,
            "step_verdict": step_verdict(ev.transfer_over_decode),
            "ttft_s": ev.ttft_s,
            "transfer_share_of_ttft": ev.transfer_share_of_ttft,
            "over_share_target": ev.over_share_target,
            "share_target": sc.share_target,
            "critical_seq_len": ev.critical_seq_len,
        }
    return pd.DataFrame.from_dict(rows, orient="index", dtype=object)
