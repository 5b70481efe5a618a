"""The decode pool of a replay: continuous batching bounded by KV memory, step by step.

Request k of the stream decodes on instance k mod c (round robin, as the router pairs a
prefill and a decode instance when the request arrives); it reaches it when its KV has
arrived.  Each instance runs as a serving engine does:

- **Steps.** The instance runs one decode step after another; a step serves every running
  request one token and takes ``timing.estimate_decode_step_s`` at the running batch and the
  batch's mean context (prompts plus the tokens made so far), read from the step table
  (``sim.StepTable``).  A request whose KV arrives during a step joins at the next one; an
  idle instance starts a step as soon as a KV arrives.  A request's first token is the end of
  the first step it runs in; it leaves after its last output token's step.
- **Memory.** A request is admitted when the KV tokens it reserves (``need``: prompt + half
  its output for frameworks that page KV on demand, prompt + output for those that reserve
  it, ``capacity.pools.memory_context``) fit beside the running requests'; otherwise it waits,
  first come first served (no overtaking), and starts at the step boundary where a departure
  makes room.

TTFT = its decode start + its first step (``first``, the rest of a step in flight
included) − arrival; its TPOT is the mean of its other steps.  Nothing is iterated: the
batch at every step is the one the steps so far have made, as in the engine (until session 14
the replay solved the batch ↔ step coupling by fixed-point rounds on a time grid, 5 rounds on
the bench trace; bench/README.md, Session 15).  While an instance's batch stays the same its
mean context grows by a token a step and the table's step is linear in it within a column, so
the kernel (``kernels.decode_steps_into``) sums the steps between events in closed form: its
work grows with the requests, not with the tokens.

The arrays are (instances, rows), an instance's requests in a row in KV-arrival order; the
rows' blocks run on threads of their own (:mod:`kvmodel.replay.parallel`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np

from kvmodel.replay import parallel

MIN_BIN_S = 0.05  # the reserved-memory grid's narrowest bin
MAX_CELLS = 4_000_000  # the grid's cells (instances × bins) at most


@dataclass(frozen=True, eq=False)
class DecodeRun:
    """Per request (the caller's order): admission, first step, mean step, departure [s]."""

    start_s: np.ndarray
    first_step_s: np.ndarray
    tpot_s: np.ndarray
    depart_s: np.ndarray
    bin_s: float  # the grid's bin width
    reserved_tokens: np.ndarray  # pool-wide reserved KV tokens per bin
    waiting: np.ndarray  # requests waiting for memory, pool-wide, at each admission or arrival
    memory_bound: int  # instances on which memory ever made a request wait


def _grid(top: float, instances: int) -> tuple[int, float]:
    """(bins, width [s]) of the reserved-memory grid past the latest departure ``top`` [s] of
    a pool of ``instances``: at most MAX_CELLS cells."""
    horizon = float(top) + MIN_BIN_S
    w = max(MIN_BIN_S, horizon * instances / MAX_CELLS)
    return int(horizon / w) + 2, w


def _steps_block(step, capacity: float, r, nd, pr, out, valid, start, first, tpot, dur):
    """One block of rows through ``kernels.decode_steps_into``."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    return kernels.decode_steps_into(r, nd, pr, out, valid, float(capacity), *step.kernel_args(),
                                     start, first, tpot, dur)  # fmt: skip


def _reserved_block(start, dur, valid, need, nb, w, grid):
    """One block's reserved tokens per instance and bin (into ``grid``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    kernels.column_grid(start, dur, valid, need, nb, w, out=grid)


def run_decode(ready, need, prompt, output, *, instances: int, capacity_tokens: float, step,
               rows=None) -> DecodeRun:  # fmt: skip
    """The pool (module doc), requests in stream order.  ``ready``: KV arrival [s];
    ``need``: tokens reserved; ``prompt``: prompt tokens (the context at the first step);
    ``output``: tokens generated (≥ 1); ``step``: a ``sim.StepTable`` (its ``kernel_args()``);
    ``rows``: (KV arrivals as the instances' rows, each row's order by them), when the
    caller has them (``kernels.receive_in_turn``)."""
    from kvmodel.replay import kernels  # numba: imported when a replay runs, not before

    n = len(ready)
    ready = np.asarray(ready, dtype=float)
    if rows is None:
        order = kernels.instance_order(ready, instances, -(-n // instances), float(ready.max()))
        by_row = kernels.rows_of(ready, instances, 0.0)
    else:
        by_row, order = rows
    need, prompt, output = (np.asarray(x, dtype=float) for x in (need, prompt, output))
    r, nd, pr, out, valid = kernels.instance_rows(order, float(ready.max()), by_row, need,
                                                  prompt, output, float(capacity_tokens))
    parts = parallel.blocks(*r.shape)
    start, first, tpot, dur = (np.empty(r.shape) for _ in range(4))
    got = parallel.run([
        partial(_steps_block, step, capacity_tokens, r[b], nd[b], pr[b], out[b], valid[b],
                start[b], first[b], tpot[b], dur[b])
        for b in parts
    ])  # fmt: skip
    nb, w = _grid(max(g[1] for g in got), r.shape[0])
    grid = np.empty((r.shape[0], nb + 1))
    parallel.run([partial(_reserved_block, start[b], dur[b], valid[b], nd[b], nb, w, grid[b])
                  for b in parts])  # fmt: skip
    s, f, t, d = kernels.request_order(order, n, start, first, tpot, dur)
    return DecodeRun(
        start_s=s, first_step_s=f, tpot_s=t, depart_s=d,
        bin_s=w, reserved_tokens=grid[:, :nb].sum(axis=0), waiting=_queue(ready, s),
        memory_bound=int(sum(g[0] for g in got)),
    )  # fmt: skip


def _queue(ready: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Requests waiting for memory pool-wide after each arrival or admission event."""
    waited = start > ready
    if not waited.any():
        return np.zeros(1)
    t = np.concatenate([start[waited], ready[waited]])
    d = np.concatenate([-np.ones(waited.sum()), np.ones(waited.sum())])
    order = np.argsort(t, kind="stable")  # an admission at the same time as an arrival first
    return np.cumsum(d[order])
