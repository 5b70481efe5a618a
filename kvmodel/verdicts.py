"""Verdicts on the numbers, and one-sentence takeaways computed from them (pages show them above
the charts)."""

from __future__ import annotations

from dataclasses import dataclass

from .transfer import Evaluation
from .units import fmt_ms, fmt_time, fmt_tokens

FINE_BELOW = 0.5  # transfer under half a decode step
BOUND_ABOVE = 1.5  # transfer over one and a half decode steps


def step_verdict(ratio: float) -> str:
    """'comfortable', 'borderline' or 'transfer-bound' for transfer ÷ decode step."""
    if ratio < FINE_BELOW:
        return "comfortable"
    return "borderline" if ratio <= BOUND_ABOVE else "transfer-bound"


# Measured and modelled shares agree when they are on the same side of the target AND within
# this factor of each other: the model's own held-out errors (README, Fidelity) are up to ~35 %
# per time figure, so a factor of 1.5 is what a matching scenario can be expected to reach.
AGREEMENT_FACTOR = 1.5


@dataclass(frozen=True)
class ShareVerdict:
    """Is the transfer's share of TTFT over the target: as measured, as modelled, and do they
    agree.  ``"over"`` / ``"under"``; None where that side has no share."""

    share_target: float
    measured: str | None
    model: str | None = None
    measured_share: float | None = None
    model_share: float | None = None

    @property
    def factor(self) -> float | None:
        """How many times larger the larger share is (≥ 1; None when either is missing)."""
        a, b = self.measured_share, self.model_share
        if a is None or b is None:
            return None
        if a <= 0 or b <= 0:
            return float("inf") if a != b else 1.0
        return max(a / b, b / a)

    @property
    def agree(self) -> bool | None:
        """Same verdict and within ``AGREEMENT_FACTOR`` of each other (None when either side
        is missing).  Without both shares, only the verdicts are compared."""
        if self.measured is None or self.model is None:
            return None
        if self.factor is None:
            return self.measured == self.model
        return self.measured == self.model and self.factor <= AGREEMENT_FACTOR


def share_verdict(
    measured_share: float | None, *, share_target: float, model_share: float | None = None
) -> ShareVerdict:
    """The over/under verdict of a transfer share of TTFT (the one place it is computed).

    A share is ``"over"`` when share > ``share_target`` (strictly: a share exactly at the target
    is ``"under"``) — a gap above 20 % of TTFT gives back much of the disaggregation gain —
    and ``"under"`` otherwise; a missing share (None) gets no verdict.
    """
    if not 0 < share_target < 1:
        raise ValueError(f"share_target must be in (0, 1), got {share_target!r}")

    def side(share: float | None) -> str | None:
        return None if share is None else ("over" if share > share_target else "under")

    return ShareVerdict(
        share_target, side(measured_share), side(model_share), measured_share, model_share
    )


def overview_takeaway(ev: Evaluation) -> str:
    sc = ev.scenario
    ratio = ev.transfer_over_decode
    share = ev.transfer_share_of_ttft
    crit = ev.critical_seq_len
    where = (
        f"prompts of {fmt_tokens(crit)} or more wait at least {sc.k:g} decode "
        f"step{'' if sc.k == 1 else 's'}"
        if crit is not None
        else "no request up to the model's max context waits a full threshold"
    )
    return (
        f"On {sc.link.name} the KV transfer takes {ratio:,.2f} decode steps "
        f"({fmt_time(ev.exposed_s)}): {step_verdict(ratio)}; it is {share:.0%} of TTFT "
        f"({'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line), "
        f"and {where}."
    )


def interconnect_takeaway(
    table, batch: int, band_ms: tuple[float, float], scenario_link: str
) -> str:
    """Sentence for the link × batch table at one batch size (column ``batch N``)."""
    col = f"batch {batch}"
    lo, hi = band_ms
    below = table[table[col] < lo]
    above = table[table[col] > hi]
    row = table[table["link"] == scenario_link]
    own = ""
    if len(row):
        ms = float(row[col].iloc[0])
        own = f" {row['name'].iloc[0]} takes {fmt_ms(ms / 1e3)}."
    return (
        f"At batch {batch}, {len(below)} of {len(table)} interconnects finish under a "
        f"{lo:g} ms decode step and {len(above)} take longer than {hi:g} ms.{own}"
    )


def sequence_takeaway(critical, names: dict, threshold_s: float) -> str:
    """Sentence from a (link, critical_seq_len) table."""
    reached, never = [], []
    for lid, s in zip(critical["link"], critical["critical_seq_len"], strict=True):
        name = names.get(lid, lid)
        if s is None or s != s:  # None or NaN: never reached
            never.append(name)
        else:
            reached.append(f"{name} from {fmt_tokens(s)}")
    limit = fmt_ms(threshold_s)
    if not reached:
        return (
            f"No interconnect here reaches the {limit} threshold up to the model's max context: "
            "the transfer never outlasts it."
        )
    text = f"Transfer exceeds the {limit} threshold on " + "; ".join(reached) + "."
    if never:
        text += f" It never does on {', '.join(never)}."
    return text + " Prompts past those lengths are transfer-bound."


def mitigation_takeaway(table) -> str:
    """Sentence from sweeps.mitigation_table (first row is the baseline)."""
    base = table.iloc[0]
    rest = table.iloc[1:]
    if "buildable" in rest:  # an NVLink option between instances in no common domain
        rest = rest[rest["buildable"]]
    lossless = rest[~rest["lossy"]] if "lossy" in rest else rest
    best = rest.loc[rest["ttft_ms"].idxmin()]
    no_link = lossless[~lossless["option"].str.contains("NVLink|Infinity|PCIe", regex=True)]
    pool = no_link if len(no_link) else lossless if len(lossless) else rest
    cheap = pool.loc[pool["ttft_ms"].idxmin()]
    risk = " (lossy: it changes the KV values)" if bool(best.get("lossy", False)) else ""
    return (
        f"Baseline TTFT is {fmt_ms(base['ttft_ms'] / 1e3)} with {base['transfer_share']:.0%} spent "
        f"on transfer. Lowest TTFT here: {best['option']}{risk} ({fmt_ms(best['ttft_ms'] / 1e3)}, "
        f"−{fmt_ms(best['ttft_saving_ms'] / 1e3)}); without changing the network or the values, "
        f"{cheap['option']} saves {fmt_ms(cheap['ttft_saving_ms'] / 1e3)}. Criterion: TTFT."
    )


def models_takeaway(table, current: str) -> str:
    """Sentence from sweeps.models_table: spread across the catalog and where ``current`` sits."""
    t = table.sort_values("bytes_per_token_at_seq")
    lo, hi = t.iloc[0], t.iloc[-1]
    row = t[t["model"] == current].iloc[0]
    rank = list(t["model"]).index(current) + 1
    spread = hi["bytes_per_token_at_seq"] / lo["bytes_per_token_at_seq"]
    return (
        f"{row['name']} moves {row['bytes_per_token_at_seq'] / 1e3:,.1f} kB per token at "
        f"{int(row['seq_len']):,} tokens ({rank} of {len(t)}, smallest first); across the "
        f"catalog it ranges from {lo['bytes_per_token_at_seq'] / 1e3:,.1f} kB ({lo['model']}, "
        f"{lo['attention']}) to {hi['bytes_per_token_at_seq'] / 1e3:,.1f} kB ({hi['model']}, "
        f"{hi['attention']}), a {spread:,.0f}× spread."
    )


def traffic_takeaway(reg, link_name: str, source: str, count_known: bool = True) -> str:
    """Sentence from traffic.Regions (``count_known`` False: a histogram of shares)."""
    count = f" {reg.n_requests:,.0f}" if count_known else ""
    crit = (
        f"at or past {fmt_tokens(reg.critical_seq_len)}"
        if reg.critical_seq_len is not None
        else "none is: no length reaches the threshold"
    )
    return (
        f"On {link_name}, {reg.fraction_gain:.0%} of the{count} requests in "
        f"{source} gain from disaggregation ({reg.fraction_tokens_gain:.0%} of their tokens); "
        f"{reg.fraction_too_short:.0%} are too short (under {reg.min_seq_len:,} tokens) and "
        f"{reg.fraction_transfer_bound:.0%} are transfer-bound ({crit})."
    )


def window_sentence(win) -> str:
    """Sentence from traffic.Window."""
    if not win.exists:
        return (
            f"No window: on this link requests are transfer-bound from "
            f"{fmt_tokens(win.l_max)}, before they are long enough ({win.l_min:,} tokens) to "
            "gain. Prefill locally, or change the link or mitigations."
        )
    upper = f"warn at {fmt_tokens(win.l_max)} and above" if win.l_max else "no upper limit"
    return (
        f"Prefill locally below {win.l_min:,} tokens ({win.fraction_local:.0%} of requests), "
        f"disaggregate from {win.l_min:,} tokens ({win.fraction_disaggregated:.0%}), {upper} "
        f"({win.fraction_warn:.0%})."
    )
