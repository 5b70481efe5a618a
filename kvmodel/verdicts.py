"""Verdicts on the numbers: transfer ÷ decode step and the transfer share of TTFT.

The sentences built from them (the takeaways above the charts) are in ``ui/words.py``."""

from __future__ import annotations

from dataclasses import dataclass

FINE_BELOW = 0.5  # transfer under half a decode step
BOUND_ABOVE = 1.5  # transfer over one and a half decode steps


def step_verdict(ratio: float) -> str:
    """'comfortable', 'borderline' or 'transfer-bound' for transfer ÷ decode step."""
    if ratio < FINE_BELOW:
        return "comfortable"
    return "borderline" if ratio <= BOUND_ABOVE else "transfer-bound"


# Measured and modelled shares agree when they are on the same side of the target AND within
# this factor of each other: the model's own held-out errors (docs/model.md, Fidelity) are up
# to ~35 % per time figure, so a factor of 1.5 is what a matching scenario can be expected to reach.
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
