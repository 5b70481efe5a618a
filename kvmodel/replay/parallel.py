"""The decode pool's instances on the machine's cores.

Once the KV arrivals are known, a decode instance's steps touch only its own row of the
(instances, rows) tables (``kvmodel.replay.decode``): its admission, its batch, its
requests' times.  The rows are therefore cut into a fixed number of blocks (:func:`blocks`:
:data:`PARTS` on a large pool, one on a small one, whatever the machine), and each block's
compiled kernel runs on a thread of its own: the kernels release the GIL
(``kernels._compiled``), so two blocks run on two cores at once.  A reduction over the whole
pool (the latest departure, the instances that waited) adds the blocks' parts in block order,
so a replay's numbers depend on the blocks, never on how many threads ran them
(``KV_REPLAY_THREADS=1`` runs them one after another: the same timeline, bit for bit; tests
pin it).

Why threads and not numba's ``parallel=True``: one thread per block runs a whole kernel on its
rows, where numba's OpenMP layer parallelised one loop at a time (~15 % faster wall on 2
cores for twice the CPU, bench/README.md Session 13).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

PARTS = 2  # blocks of a large pool
MIN_CELLS = 100_000  # a pool with fewer (instances × rows) cells is one block
MAX_THREADS = 2  # a replay takes at most this many cores (other sessions keep theirs)
ENV = "KV_REPLAY_THREADS"  # at most this many threads (1: the blocks one after another)

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def blocks(instances: int, rows: int) -> list[slice]:
    """The blocks of a pool of ``instances`` rows of ``rows`` cells each: :data:`PARTS`
    slices of nearly equal size (one when the pool is small or has one instance)."""
    parts = PARTS if instances * rows >= MIN_CELLS else 1
    parts = max(1, min(parts, instances))
    cuts = [instances * i // parts for i in range(parts + 1)]
    return [slice(cuts[i], cuts[i + 1]) for i in range(parts)]


def threads() -> int:
    """Threads a replay may use: the cores, at most :data:`MAX_THREADS`, and at most
    ``KV_REPLAY_THREADS`` when set (a whole number ≥ 1; anything else is ignored)."""
    n = min(os.cpu_count() or 1, MAX_THREADS)
    raw = os.environ.get(ENV, "").strip()
    if raw.isdigit() and int(raw) >= 1:
        n = min(n, int(raw))
    return max(1, n)


def run(tasks: list) -> list:
    """Each of ``tasks`` (callables without arguments) run, their results in order: on the
    pool's threads when there are several tasks and threads, else one after another."""
    if len(tasks) < 2 or threads() < 2:
        return [task() for task in tasks]
    futures = [_executor().submit(task) for task in tasks]
    return [f.result() for f in futures]


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(MAX_THREADS, thread_name_prefix="kv-replay")
        return _pool
