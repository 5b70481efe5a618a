"""A few results kept by key for reuse: the last ``size``, least recently used dropped first.

The model keeps some costly, input-determined results between calls (the transfers' volumes,
a capacity plan's basis, the link queue's seeded draws): Streamlit sessions call it from
several threads, so every access holds a lock.  Values are shared: callers make arrays in them
read-only.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

_MISSING = object()


class Kept:
    """The last ``size`` values put, by key (thread-safe; a read counts as a use)."""

    def __init__(self, size: int):
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key, default=None):
        with self._lock:
            value = self._items.get(key, _MISSING)
            if value is _MISSING:
                return default
            self._items.move_to_end(key)
            return value

    def put(self, key, value) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def values(self) -> tuple:
        """The values kept, least recently used first."""
        with self._lock:
            return tuple(self._items.values())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)
