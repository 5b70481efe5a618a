"""The traces the app offers without an upload (``data/traces``), with their provenance."""

from __future__ import annotations

from .. import catalog
from ..samples import DEFAULT_SAMPLE, SAMPLES

TRACES_DIR = catalog.DATA_DIR / "traces"
__all__ = ["DEFAULT_SAMPLE", "SAMPLES", "TRACES_DIR", "sample_path"]


def sample_path(sample_id: str):
    if sample_id not in SAMPLES:
        raise catalog.UnknownIdError("trace", sample_id, SAMPLES)
    return TRACES_DIR / SAMPLES[sample_id][0]
