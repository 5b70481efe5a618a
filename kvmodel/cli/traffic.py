"""``traffic``: which share of a traffic file gains from disaggregation, and the link's load.

The file may be a directory or a (quoted) glob of Parquet files: a warehouse export read as one
table, streamed in constant memory (:mod:`kvmodel.traffic.dataset`)."""

from __future__ import annotations

from .edge import fmt_tokens
from .options import scenario_from_args
from .output import emit


def cmd_traffic(args):
    from .. import traffic as tr
    from ..traffic import load_traffic

    req = load_traffic(
        args.file,
        prompt_column=args.prompt_column,
        time_column=args.time_column,
        per_request=False,
    )
    sc = scenario_from_args(args)  # checks every option, --hit-ratio included
    mix = tr.mix_from_requests(req, hit_ratio=args.hit_ratio)
    reg = tr.regions(sc, mix, min_seq_len=args.min_seq_len, criterion=args.criterion)
    ld = tr.load(sc, mix, rps=args.rps)
    win = tr.recommended_window(sc, mix, min_seq_len=args.min_seq_len, criterion=args.criterion)

    def ms(x):
        return None if ld is None or x != x or x == float("inf") else x * 1e3

    payload = {
        "file": str(args.file),
        "format": req.fmt,
        "model": sc.model.id,
        "link": sc.link.id,
        "criterion": args.criterion,
        "n_requests": None  # a histogram of shares does not say how many
        if not req.count_known
        else int(reg.n_requests)
        if reg.n_requests.is_integer()
        else reg.n_requests,
        "skipped_rows": req.skipped_rows,
        "files_read": req.columns.get("files_read", 1),
        "skipped_files": req.columns.get("skipped_files", []),
        "requests_over_max_context": round(reg.n_over_context)
        if req.count_known
        else reg.n_over_context,  # a share of 1 for a histogram of shares
        "fraction_requests_gain": reg.fraction_gain,
        "fraction_tokens_gain": reg.fraction_tokens_gain,
        "fraction_too_short": reg.fraction_too_short,
        "fraction_transfer_bound": reg.fraction_transfer_bound,
        "critical_seq_len": reg.critical_seq_len,
        "min_seq_len": reg.min_seq_len,
        "rps": None if ld is None else ld.rps,
        "link_utilization": None if ld is None else ld.utilization,
        "demanded_gbs": None if ld is None else ld.bytes_per_s / 1e9,
        "mean_queue_ms": ms(ld.mean_wait_s) if ld else None,
        "p50_transfer_ms": ms(ld.p50_s) if ld else None,
        "p90_transfer_ms": ms(ld.p90_s) if ld else None,
        "p99_transfer_ms": ms(ld.p99_s) if ld else None,
        "p99_share_of_ttft": None if ld is None else ld.p99_share_of_ttft,
        "bandwidth_for_share_target_gbs": None
        if ld is None or ld.bandwidth_for_target_bytes_per_s is None
        else ld.bandwidth_for_target_bytes_per_s / 1e9,
        "decode_idle_s_per_s": None if ld is None or not ld.stable else ld.decode_idle_s_per_s,
        "window": {"l_min": win.l_min, "l_max": win.l_max, "exists": win.exists},
    }

    def pct(x):
        return "–" if x is None else f"{x:.1%}"

    rows = [
        (
            "requests",
            f"{reg.n_requests:,.0f} ({req.fmt}; {req.skipped_rows:,} rows skipped)"
            if req.count_known
            else f"unknown: the histogram gives shares ({req.skipped_rows:,} rows skipped)",
        ),
        (
            "gain",
            f"{pct(reg.fraction_gain)} of requests, {pct(reg.fraction_tokens_gain)} of tokens",
        ),
        ("too short", f"{pct(reg.fraction_too_short)} (under {reg.min_seq_len:,} tokens)"),
        (
            "transfer-bound",
            f"{pct(reg.fraction_transfer_bound)} (from {fmt_tokens(reg.critical_seq_len)})",
        ),
        (
            "link utilisation",
            "no rate (no timestamps; use --rps)" if ld is None else pct(ld.utilization),
        ),
        (
            "p99 transfer incl. queue",
            "–" if payload["p99_transfer_ms"] is None else f"{payload['p99_transfer_ms']:,.2f} ms",
        ),
    ]
    if "files_read" in req.columns:  # a directory or glob
        skipped = req.columns["skipped_files"]
        rows.insert(0, ("files", f"{req.columns['files_read']:,} Parquet files read"))
        if skipped:
            rows.insert(1, ("skipped files", _skipped_files(skipped)))
    emit(args, payload, ("quantity", "value"), rows)


def _skipped_files(names: list[str], shown: int = 3) -> str:
    """The files of a directory that are not Parquet, as one table cell."""
    more = f" and {len(names) - shown:,} more" if len(names) > shown else ""
    return f"{len(names):,} not Parquet: {', '.join(names[:shown])}{more}"
