"""One-sentence takeaways computed from the numbers (pages show them above the charts)."""

from __future__ import annotations

from .transfer import Evaluation
from .units import fmt_ms, fmt_tokens

FINE_BELOW = 0.5  # transfer under half a decode step
BOUND_ABOVE = 1.5  # transfer over one and a half decode steps


def step_verdict(ratio: float) -> str:
    """'comfortable', 'borderline' or 'transfer-bound' for transfer ÷ decode step."""
    if ratio < FINE_BELOW:
        return "comfortable"
    return "borderline" if ratio <= BOUND_ABOVE else "transfer-bound"


def overview_takeaway(ev: Evaluation) -> str:
    sc = ev.scenario
    ratio = ev.transfer_over_decode
    share = ev.transfer_share_of_ttft
    crit = ev.critical_seq_len
    where = (
        f"requests past {fmt_tokens(crit)} wait longer than {sc.k:g} decode step(s)"
        if crit is not None
        else "no request up to the model's max context waits a full threshold"
    )
    return (
        f"On {sc.link.name} the KV transfer takes {ratio:.2f} decode steps "
        f"({fmt_ms(ev.exposed_s)}): {step_verdict(ratio)}; it is {share:.0%} of TTFT "
        f"({'over' if ev.over_share_target else 'under'} the {sc.share_target:.0%} line), "
        f"and {where}."
    )
