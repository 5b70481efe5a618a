"""A bounded, thread-safe memo for pure functions whose arguments are cheap to key.

``st.cache_data`` / ``st.cache_resource`` hash every argument with Streamlit's own hasher, which
walks a frozen ``Scenario`` (model, link and GPU specs) field by field: about 5–10 ms per lookup
on the chart pages, more than most of the computations it guards.  Here the key is built from
the arguments themselves:

- ``None``, bool, int, float and str are keyed with their type; other hashable values (frozen
  dataclasses such as ``Scenario``) are the key themselves (Python's hash and ``==``);
- lists and tuples are keyed element by element;
- anything else (a pandas DataFrame from another memoised call) is keyed by identity.  The entry
  keeps a reference to its arguments, so an identity cannot be reused by another object while the
  entry lives.

Results are shared, not copied: callers treat them as read-only.  Entries are evicted least
recently used first.  Use it only for pure functions (the same inputs always give the same
result), which is all the pages cache.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

_SCALARS = (type(None), bool, int, float, str)


def _part(value):
    if isinstance(value, _SCALARS):
        return (type(value).__name__, value)  # 1, 1.0 and True are equal keys otherwise
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_part(v) for v in value))
    try:
        hash(value)
    except TypeError:
        return ("id", type(value).__name__, id(value))
    return value


class Memo:
    """``memo(fn, *args, **kwargs)`` = ``fn(*args, **kwargs)`` computed once per distinct key."""

    def __init__(self, max_entries: int = 512):
        if max_entries < 1:
            raise ValueError(f"max_entries must be >= 1, got {max_entries!r}")
        self.max_entries = max_entries
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
        with self._lock:
            self.misses += 1
            # args keep keyed identities alive
            self._entries[key] = (result, args, kwargs) if keep_args else (result, None, None)
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return result

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)
