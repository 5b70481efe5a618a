"""Compile the replay's kernels ahead of the first replay: ``python -m kvmodel.replay.warm``.

numba compiles :mod:`kvmodel.replay.kernels` on first use and caches the machine code beside
the source (bench/README.md: 8–17 s on the 2-core machines here, once per machine and
version of the file; a later process loads it in ~0.4 s).  ``make run`` and ``make test``
call this after installing, and again whenever ``kernels.py`` changes, so that a user's
first "Replay the trace" (or ``capacity --replay``) does not pay the compilation in the middle
of a demo.  It replays a few thousand Poisson requests through a deployment whose decode
instance is memory-bound, so that every kernel runs (admission included), and summarises it.
"""

from __future__ import annotations

import sys
import time


def warm(requests: int = 3000) -> float:
    """Run one small replay and its summary; return the seconds it took (compilation or
    cached load included)."""
    from kvmodel import capacity as cap
    from kvmodel import replay as rp
    from kvmodel.build import build_scenario

    t0 = time.perf_counter()
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    stream = rp.poisson_stream(cap.Workload.fixed(50.0, 8192, 1024), sc.model.max_context_tokens,
                               requests)  # fmt: skip
    for prefill_instances in (4, 1):  # the heap, and one instance's recursion
        tl = rp.replay(rp.Deployment(sc, 4, 8, prefill_instances, 1), stream)
        rp.summarise(tl, ttft_slo_s=2.0, tpot_slo_s=0.05, q=90.0, poisson=True)
    return time.perf_counter() - t0


def main() -> int:
    print(f"replay kernels ready ({warm():.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
