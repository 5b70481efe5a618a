"""Performance tricks, each named with the bench number that justifies it (bench/README.md).

- ``cached`` / ``cached_with_spinner``: one process-wide memo with cheap keys ("What made the
  difference", item 3: Streamlit's hasher walked the frozen Scenario on every cached call,
  5-10 ms per page).
- ``settle_gc``: ``gc.freeze()`` after the first full run (item 5: a full collection took
  134 ms on a random rerun, the p95 spikes).

Lazy widgets stay with the widgets they draw, each with its comment: the sidebar's closed
expanders in ``ui.sidebar`` (item 8, ~6 ms per rerun), the share box in ``ui.share``, the chart
Export menus in ``ui.exports_ui`` and Plan's "Options tried" (item 9, 2-4 ms per page).
"""

from __future__ import annotations

import gc

import streamlit as st

from ui.memo import Memo

# process-wide, like st.cache_resource: pure results, read-only.  Bench: bench/README.md, "What
# made the difference" item 3 (cheap cache keys: 5-10 ms per page saved).
_MEMO = Memo(max_entries=512)
# Every other memo of the app lives here too, so one ``clear_cache`` forgets them all.
UPLOADS = Memo(max_entries=4)  # parsed trace uploads (ui.traffic_ui), shared by sessions
PLANS = Memo(max_entries=64)  # Capacity's sizings, plans and sweeps (ui.views.capacity)
# Measured page: uploads detected and parsed, keyed by their content's digest (ui.measure_ui).
MEASUREMENTS = Memo(max_entries=32)
# the shipped traces, read once per process (ui.traffic_ui, ui.views.capacity_replay): a few
# as counts per length, two with every request (a replay's timestamps)
SAMPLES = Memo(max_entries=8)
# the traffic mixes made from those traces and uploads (ui.traffic_ui.mix), one per trace and
# prefix-cache hit ratio: their own memo, so the churn of _MEMO never drops one (a new mix
# object would miss every analysis memoised on the old one's identity)
MIXES = Memo(max_entries=16)


def digest(data: bytes) -> bytes:
    """A key for file content: its BLAKE2 digest (the entry keeps 32 bytes, not the file)."""
    import hashlib

    return hashlib.blake2b(data, digest_size=32).digest()


def cached(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` computed once per distinct inputs and shared, not copied.

    For pure sweeps and figure builders: a rerun whose inputs did not change (or changed only
    in what this piece does not use) costs a dictionary lookup instead of a rebuild.  Results
    are read-only.  Keys are cheap (see ``ui.memo``): Streamlit's own cache hashing of a
    scenario cost more than most computations it saved.
    """
    return _MEMO(fn, *args, **kwargs)


def cached_by(key, fn, *args, **kwargs):
    """``cached`` with ``key`` (hashable) standing for the arguments, for arguments that cannot
    key themselves (dicts of values): ``key`` must say everything the result depends on."""
    return _MEMO.call(fn, args, kwargs, key=key)


def cached_with_spinner(text: str, fn, *args, **kwargs):
    """``cached`` that shows ``text`` in a spinner while a miss computes (long analyses)."""
    return _MEMO.call(fn, args, kwargs, around_miss=lambda: st.spinner(text))


def clear_cache() -> None:
    """Forget every memoised result (tests; a changed catalog file)."""
    for memo in (_MEMO, UPLOADS, PLANS, MEASUREMENTS, SAMPLES, MIXES):
        memo.clear()


_GC_SETTLED: list[bool] = []  # process-wide: becomes [True] after the first full run


def settle_gc() -> None:
    """Once per process, at the end of the first full run: freeze what is alive now.

    After the first run the process holds ~150,000 long-lived objects (modules, catalogs,
    plotly's validators, Streamlit's registries).  Every full (generation 2) collection walks
    them all: about 130 ms, landing on a random rerun every few dozen.  ``gc.freeze`` moves
    them to a permanent generation the collector skips; garbage made later is collected as
    before (bench/README.md, "What made the difference" item 5: 134 ms per full collection).
    """
    if _GC_SETTLED:
        return
    _GC_SETTLED.append(True)
    # the young generations only: a full collection here found no garbage (0 objects among
    # ~129,000, after collect(1) found 9) and cost ~60 ms of the cold start (bench/README.md,
    # Session 8); whatever the old generation holds now is what freeze keeps
    gc.collect(1)
    gc.freeze()
