"""Prometheus text exposition (a ``/metrics`` scrape), the one parser both readers use.

The format is line-oriented, so it is parsed line by line with
``prometheus_client.parser.text_string_to_metric_families``: every sample keeps its line, and
a line the parser refuses is named.  Each line stands alone, so a ``# TYPE`` line changes no
sample's name (a counter sample ``foo`` stays ``foo``, not ``foo_total``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .lines import TextError, numbered_lines


@dataclass(frozen=True)
class PromSample:
    """One sample line: ``name{labels} value``."""

    line: int  # as an editor numbers it (first line = 1)
    name: str  # with its suffix (``_bucket``, ``_sum``, ``_count``, ``_total``)
    labels: dict[str, str]
    value: float


def parse_exposition(
    text: str, name: str, *, expected: str, error: type[TextError] = TextError
) -> list[PromSample]:
    """Every sample of ``text``, file order; an ``error`` naming the first line that is not
    Prometheus text (``expected`` says what was expected there)."""
    from prometheus_client.parser import text_string_to_metric_families

    out = []
    for n, line in numbered_lines(text):
        if not line.strip():
            continue
        try:
            families = list(text_string_to_metric_families(line + "\n"))
        except Exception:  # the parser raises several types on malformed text
            raise error(
                f"{name}: line {n} is not Prometheus text ({line.strip()[:80]!r}); {expected}"
            ) from None
        for fam in families:
            out.extend(PromSample(n, s.name, s.labels, float(s.value)) for s in fam.samples)
    return out


def labels_text(labels: dict) -> str:
    """``{a="1",b="2"}``: the labels as the exposition writes them, sorted by name."""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
