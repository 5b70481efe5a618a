"""Transfer time, layer-wise overlap, TTFT and the critical sequence length of one scenario.

The model in four modules, re-exported here so that ``from kvmodel.transfer import ...`` keeps
working: the ``Scenario`` and its validation in ``kvmodel.scenario``; ``transfer``, ``Volume``,
the layer-wise overlap and the stack costs in ``kvmodel.wire`` (the formulas are in its
docstring); ``critical_seq_len`` in ``kvmodel.critical``; ``Evaluation`` and ``evaluate`` in
``kvmodel.evaluation``.
"""

from __future__ import annotations

from .critical import critical_seq_len, first_crossing
from .evaluation import Evaluation, evaluate
from .inputs import DEFAULT_CODEC_BYTES_PER_S, DEFAULT_DECODE_STEP_S, DEFAULT_SHARE_TARGET
from .scenario import Scenario, unwindowed
from .wire import (
    PER_LINK_FIELDS,
    Transfer,
    Volume,
    chunk_times_s,
    exposed_transfer_s,
    prefill_time_s,
    transfer,
    wire_bytes_per_token,
)

__all__ = [
    "DEFAULT_CODEC_BYTES_PER_S",
    "DEFAULT_DECODE_STEP_S",
    "DEFAULT_SHARE_TARGET",
    "PER_LINK_FIELDS",
    "Evaluation",
    "Scenario",
    "Transfer",
    "Volume",
    "chunk_times_s",
    "critical_seq_len",
    "evaluate",
    "exposed_transfer_s",
    "first_crossing",
    "prefill_time_s",
    "transfer",
    "unwindowed",
    "wire_bytes_per_token",
]
