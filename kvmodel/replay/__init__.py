"""Replay a capacity plan over the traffic's own arrivals (issue 22).

The analytic plan (``kvmodel.capacity``) sizes the pools with queueing formulas at the mean
rate, arrivals Poisson.  A replay runs the planned deployment over the trace's timestamps
(or seeded Poisson arrivals when it has none, :mod:`.stream`): prefill instances with their
batching, each instance's NICs with the stack's transfer costs and their queue, decode
instances with continuous batching bounded by KV memory (:mod:`.sim`, :mod:`.decode`); numpy,
vectorised where it can be (:mod:`.fifo`), and the sequential loops (the prefill heap, the NIC
queues, memory admission, the decode grids) compiled by numba (:mod:`.kernels`, imported when a
replay runs).
:mod:`.result` summarises it; :mod:`.sizing` grows the pools until the replay meets the
targets and says why the replay and the formulas disagree.
"""

from kvmodel.replay.result import ReplayResult, Series, summarise
from kvmodel.replay.sim import Deployment, Timeline, replay
from kvmodel.replay.sizing import (
    SIZE_BY,
    Replayed,
    deployment_of,
    disagreement,
    replay_plan,
    size_by_replay,
)
from kvmodel.replay.stream import (
    DEFAULT_POISSON_REQUESTS,
    MAX_REQUESTS,
    MAX_SPAN_S,
    Stream,
    poisson_stream,
    stream_for,
    trace_stream,
)

__all__ = [
    "DEFAULT_POISSON_REQUESTS",
    "MAX_REQUESTS",
    "MAX_SPAN_S",
    "SIZE_BY",
    "Deployment",
    "ReplayResult",
    "Replayed",
    "Series",
    "Stream",
    "Timeline",
    "deployment_of",
    "disagreement",
    "poisson_stream",
    "replay",
    "replay_plan",
    "size_by_replay",
    "stream_for",
    "summarise",
    "trace_stream",
]
