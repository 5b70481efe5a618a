"""A table's columns as Python lists, the way the pages and ``compare.changes`` read them."""

from __future__ import annotations

import numpy as np


def column_lists(table, names) -> list[list]:
    """Column ``name`` of ``table`` as ``table[name].tolist()`` gives it, for each of ``names``.

    A frame whose columns all have numpy dtypes (object, float, int, bool) and unique names
    is read as one object array: the same Python values (a float64 cell becomes a Python
    float either way), without a Series per column, which cost ~25 µs a column on a fresh
    frame (Compare's table of ~40 columns: ~0.4 ms a rerun; session 22).  Other frames (text
    or extension dtypes) are read column by column.
    """
    names = list(names)
    plain = table.columns.is_unique and all(
        isinstance(dt, np.dtype) and dt.kind in "Ofiub" for dt in table.dtypes
    )
    if not plain:
        return [table[n].tolist() for n in names]
    cells = table.to_numpy(dtype=object)
    where = {c: i for i, c in enumerate(table.columns)}
    return [cells[:, where[n]].tolist() for n in names]
