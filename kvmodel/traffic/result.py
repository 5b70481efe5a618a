"""What a traffic read returns (:class:`Requests`) and raises (:class:`TrafficError`), and the
list of skipped rows every reader keeps."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..textio import TextError

MAX_EXAMPLES = 5  # skipped rows named in Requests.skipped_examples


class TrafficError(TextError):
    """A traffic file cannot be read; the message names the problem, where, and what is expected."""


@dataclass(frozen=True)
class Requests:
    """Request lengths read from one file.  All arrays have one entry per request, or one per
    histogram bucket or distinct length (then ``weights`` says how many requests it stands for).
    """

    prompt_tokens: np.ndarray  # int64 >= 0; per request, or a bucket's upper bound
    weights: np.ndarray | None  # float64 requests per entry (histograms); None = one each
    output_tokens: np.ndarray | None  # int64 >= 0
    arrival_s: np.ndarray | None  # float64 seconds since the earliest request, file order
    cached_tokens: np.ndarray | None  # int64 prefix-cache hit tokens (Mooncake hash_ids)
    fmt: str
    columns: dict = field(default_factory=dict)
    skipped_rows: int = 0
    skipped_examples: tuple[str, ...] = ()
    span_s: float | None = None  # first to last kept arrival (None: no times, or all at once)
    # per entry of a per-request table read as counts per length (``output_tokens`` None):
    # the mean of the output tokens of the requests it stands for, and a mean square (the
    # mean squared plus the trace's spread within lengths): weighted over the entries, both
    # sum to the requests' own (the capacity plan reads those sums, kvmodel.capacity.workload)
    output_moments: np.ndarray | None = None  # float64, shape (entries, 2)

    def __post_init__(self):
        n = len(self.prompt_tokens)
        for name in ("weights", "output_tokens", "arrival_s", "cached_tokens", "output_moments"):
            arr = getattr(self, name)
            if arr is not None and len(arr) != n:
                raise ValueError(f"Requests.{name} has {len(arr)} entries; expected {n}")

    @property
    def has_output_lengths(self) -> bool:
        """Output lengths were read: per request, or their moments per distinct length."""
        return self.output_tokens is not None or self.output_moments is not None

    @property
    def n_requests(self) -> float:
        """Requests represented: the entry count, or the sum of the histogram weights."""
        return float(len(self.prompt_tokens) if self.weights is None else self.weights.sum())

    @property
    def count_known(self) -> bool:
        """False for a histogram of shares (probabilities): its weights sum to 1, not to a
        number of requests."""
        return self.columns.get("total_requests") != "unknown"


def examples(skipped: list[tuple[int, str]]) -> tuple[str, ...]:
    """The reasons of the first :data:`MAX_EXAMPLES` skipped rows, in file order, from
    ``(row or line number, reason)`` pairs."""
    return tuple(reason for _, reason in sorted(skipped, key=lambda s: s[0])[:MAX_EXAMPLES])


def arrow_message(exc: Exception) -> str:
    """The first line of an Arrow error, without Arrow's "CSV/JSON parse error: " prefix."""
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return msg.removeprefix("CSV parse error: ").removeprefix("JSON parse error: ")
