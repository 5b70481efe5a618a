"""A bounded, thread-safe memo for pure functions whose arguments are cheap to key.

``st.cache_data`` / ``st.cache_resource`` hash every argument with Streamlit's own hasher, which
walks a frozen ``Scenario`` (model, link and GPU specs) field by field: about 5–10 ms per lookup
on the chart pages, more than most of the computations it guards.  Here the key is built from
the arguments themselves:

- ``None``, bool, int, float and str are keyed with their type; other hashable values (frozen
  dataclasses such as ``Scenario``) are the key themselves (Python's hash and ``==``);
- lists and tuples are keyed element by element, numpy arrays of numbers (up to
  ``_ARRAY_BY_CONTENT`` elements) by their dtype, shape and bytes;
- anything else (a pandas DataFrame from another memoised call) is keyed by identity.  The entry
  keeps a reference to its arguments, so an identity cannot be reused by another object while the
  entry lives.

Results are shared, not copied: callers treat them as read-only.  Entries are evicted least
recently used first, beyond ``max_entries`` or beyond ``max_bytes`` in all (each result's size
estimated by :func:`approx_bytes`; one larger than ``max_bytes`` is returned, not kept), so a
stream of distinct links whose results are large cannot grow the server without bound.  Use it
only for pure functions (the same inputs always give the same result), which is all the pages
cache.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from functools import cache

_SCALARS = (type(None), bool, int, float, str)


_ARRAY_BY_CONTENT = 100_000  # numbers: a numpy array up to this size is keyed by its content


def _part(value):
    if isinstance(value, _SCALARS):
        return (type(value).__name__, value)  # 1, 1.0 and True are equal keys otherwise
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_part(v) for v in value))
    if _is_number_array(value):  # a grid made afresh each run (np.geomspace, seq_grid)
        return ("ndarray", value.dtype.str, value.shape, value.tobytes())
    try:
        hash(value)
    except TypeError:
        return ("id", type(value).__name__, id(value))
    return value


def _is_number_array(value) -> bool:
    """A numpy array of numbers small enough to key by content.  Keyed by identity, a grid the
    page builds on every run missed the memo on every rerun, plain ones too: Interconnects'
    batch sweep and Sequence's layouts sweep (bench/README.md, Session 8)."""
    return (
        type(value).__module__ == "numpy"
        and getattr(value, "ndim", 0) >= 1
        and value.size <= _ARRAY_BY_CONTENT
        and value.dtype.kind in "biuf"
    )


_PLAIN = frozenset((str, bytes, int, float, bool, type(None)))
_WALK = 2_000  # objects looked at per estimate; the rest of a long list is extrapolated
_SAMPLE = 16  # items of a longer container walked (evenly spaced), the rest scaled from them
_TEMPLATE_BYTES = 50_000  # a plotly figure's layout template (plotly_white walks to ~48 KB)
# A model, GPU, link or stack spec is the catalog's (or an imported model's, kept by its own
# memo), shared by every scenario that names it, not held by one result: counted at a flat
# size, not walked (walking a Scenario took ~74 µs, nine tenths of it in its specs; session 20)
_SHARED_BYTES = 2_000


@cache
def _shared() -> frozenset:
    """The spec types (imported when a result is first sized: the router loads no model)."""
    from kvmodel.specs import GpuSpec, LinkSpec, ModelSpec, StackSpec

    return frozenset((ModelSpec, GpuSpec, LinkSpec, StackSpec))


def approx_bytes(obj) -> int:
    """About the memory ``obj`` holds: arrays and frames by their buffers, containers, plotly
    figures and dataclasses by walking them (at most :data:`_WALK` objects, shared objects
    once; a long list is sampled and scaled up)."""
    return _Walk().size(obj)


class _Walk:
    """One estimate of :func:`approx_bytes`: the objects seen and the walk's budget left."""

    def __init__(self):
        self.seen: set[int] = set()
        self.budget = _WALK
        self.shared = _shared()

    def size(self, o) -> int:
        if id(o) in self.seen or self.budget <= 0:
            return 0
        self.seen.add(id(o))
        self.budget -= 1
        kind = type(o)
        if kind in _PLAIN:  # first: most of what a walk meets (a numpy scalar is not plain)
            return sys.getsizeof(o)
        if kind in self.shared:
            return _SHARED_BYTES
        if hasattr(kind, "columns") and hasattr(kind, "dtypes") and hasattr(o, "index"):
            # a DataFrame: 8 bytes per cell, as memory_usage(deep=False) counts 64-bit columns
            # (that call costs ~0.6 ms a frame, .dtypes ~0.2 ms: asked of the class, not the
            # frame).  Before nbytes: a fresh frame asked for an attribute it lacks looks for
            # it among its columns (~40 µs)
            return len(o) * len(o.columns) * 8 + int(o.index.nbytes) + 112
        nbytes = getattr(o, "nbytes", None)  # numpy arrays (views count their window)
        if isinstance(nbytes, int):
            return nbytes + 112
        usage = getattr(o, "memory_usage", None)  # pandas (a Series)
        if callable(usage) and hasattr(o, "index"):
            try:
                used = usage(index=True, deep=False)
                return int(used.sum() if hasattr(used, "sum") else used)
            except (TypeError, ValueError):
                pass
        if isinstance(o, (str, bytes, bytearray, int, float, bool, type(None))):
            return sys.getsizeof(o)
        if isinstance(o, dict):
            items = list(o.items())
            pair = lambda kv: self.leaf(kv[0]) + self.leaf(kv[1])  # noqa: E731
            return sys.getsizeof(o) + self.sampled(items, pair)
        if isinstance(o, (list, tuple, set, frozenset)):
            return sys.getsizeof(o) + self.sampled(list(o), self.leaf)
        if hasattr(o, "_data") and hasattr(o, "_layout"):  # a plotly figure
            layout = o._layout
            if isinstance(layout, dict) and "template" in layout:  # not walked: ~1 ms a figure
                layout = {k: v for k, v in layout.items() if k != "template"}
                return self.size(o._data) + self.size(layout) + _TEMPLATE_BYTES
            return self.size(o._data) + self.size(layout)
        fields = getattr(o, "__dict__", None)
        if fields is None and hasattr(type(o), "__slots__"):
            fields = {k: getattr(o, k, None) for k in type(o).__slots__}
        return sys.getsizeof(o) + (self.size(fields) if isinstance(fields, dict) else 0)

    def leaf(self, o) -> int:
        """A plain item counted where it sits (not once per object: a shared string counts
        each time), without a call of ``size`` each: Compare's results are dicts and rows of
        strings (~760 calls a rerun, ~0.5 ms; session 22)."""
        return sys.getsizeof(o) if type(o) in _PLAIN else self.size(o)

    @staticmethod
    def sampled(items: list, one) -> int:
        """All of a short container's items, else every step-th of them scaled up (16 or
        more: Compare's 60 changes against A, a dict each, cost ~0.7 ms a rerun walked
        whole; the results that hold memory are arrays and frames, sized from buffers)."""
        if len(items) <= _SAMPLE:
            return sum(one(x) for x in items)
        step = max(1, len(items) // _SAMPLE)  # every step-th item, scaled up
        sample = items[::step]
        return int(sum(one(x) for x in sample) * len(items) / len(sample))


class Memo:
    """``memo(fn, *args, **kwargs)`` = ``fn(*args, **kwargs)`` computed once per distinct key."""

    def __init__(self, max_entries: int = 512, max_bytes: int = 256_000_000):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
        self.max_entries, self.max_bytes = max_entries, max_bytes
        self.bytes = 0  # the estimated size of the results kept
        self._entries: OrderedDict = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def key(self, fn, args: tuple, kwargs: dict):
        return (
            fn,  # by identity; the key holds it, so a new function never reuses the entry
            _part(args),
            tuple(sorted((k, _part(v)) for k, v in kwargs.items())),
        )

    def __call__(self, fn, *args, **kwargs):
        return self.call(fn, args, kwargs)

    def call(self, fn, args: tuple, kwargs: dict, around_miss=None, key=None):
        """``fn(*args, **kwargs)`` memoised; ``around_miss()`` (a context manager, e.g. a
        spinner) wraps the computation when it has to run.

        ``key`` (hashable) replaces the key built from the arguments, for arguments that are
        costly to key or must not be kept alive (an upload's bytes, a progress callback): the
        entry then keeps only the result, and ``key`` must say everything the result depends on.
        """
        keep_args = key is None
        key = self.key(fn, args, kwargs) if keep_args else (fn, key)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry[0]
        if around_miss is None:  # outside the lock: another session may compute alike
            result = fn(*args, **kwargs)
        else:
            with around_miss():
                result = fn(*args, **kwargs)
        nbytes = approx_bytes(result)
        with self._lock:
            self.misses += 1
            if nbytes > self.max_bytes:
                return result  # kept by nobody once the caller is done with it
            old = self._entries.pop(key, None)
            if old is not None:  # another session computed it meanwhile
                self.bytes -= old[3]
            # args keep keyed identities alive
            entry = (result, args, kwargs) if keep_args else (result, None, None)
            self._entries[key] = (*entry, nbytes)
            self.bytes += nbytes
            while len(self._entries) > self.max_entries or self.bytes > self.max_bytes:
                self.bytes -= self._entries.popitem(last=False)[1][3]
        return result

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)
