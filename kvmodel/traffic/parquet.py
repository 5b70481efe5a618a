"""Parquet: row groups read on a few threads, each in batches, through its own file handle."""

from __future__ import annotations

from functools import partial

import pyarrow as pa

from ..textio import Source
from .checks import Part, check
from .collect import Collect, Hints
from .columns import flatten
from .result import TrafficError, arrow_message

_JOB_ROWS = 1 << 20  # Parquet rows per job (whole row groups)
_BATCH_ROWS = 1 << 18  # Parquet rows decoded at a time: less memory in flight than whole groups


def parquet_file(source: Source, name: str):
    import pyarrow.parquet as pq

    try:
        if source.path is not None:
            return pq.ParquetFile(source.path, pre_buffer=True)
        return pq.ParquetFile(pa.BufferReader(pa.py_buffer(source.whole())), pre_buffer=True)
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(f"{name}: not a readable Parquet file ({arrow_message(exc)})") from None


def parquet_names(source: Source, name: str) -> list[str]:
    return flatten(parquet_file(source, name).schema_arrow.empty_table()).column_names


def parquet_jobs(source: Source, needed, det, name, col: Collect):
    """One job per run of row groups of about :data:`_JOB_ROWS` rows; each reads its own handle
    (a ParquetFile is not shared between threads) in batches of :data:`_BATCH_ROWS` rows."""
    meta = parquet_file(source, name).metadata
    top = list(dict.fromkeys(c.split(".", 1)[0] for c in needed))

    def job(groups: list[int], start: int, hints: Hints) -> list[Part]:
        def batches():
            return parquet_file(source, name).iter_batches(
                batch_size=_BATCH_ROWS, row_groups=groups, columns=top, use_threads=False
            )

        return read_batches(batches, name, needed, det, col, start, hints)

    run, rows, start = [], 0, 0
    for g in range(meta.num_row_groups):
        run.append(g)
        rows += meta.row_group(g).num_rows
        if rows >= _JOB_ROWS:
            yield partial(job, run, start)
            run, rows, start = [], 0, start + rows
    if run:
        yield partial(job, run, start)


def read_batches(batches, name: str, needed, det, col: Collect, start: int, hints: Hints):
    """Check and collect the record batches ``batches()`` yields; ``name`` names the file."""
    parts: list[Part] = []
    try:
        for batch in batches():
            table = flatten(pa.Table.from_batches([batch])).select(needed)
            parts.append(check(table, det, _row_number, hints.time_kind))
            col.put(parts[-1], start)
            start += batch.num_rows
            hints.time_kind = hints.time_kind or parts[-1].time_kind
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(f"{name}: cannot read the Parquet data ({arrow_message(exc)})") from None
    return parts


def _row_number(i: int) -> int:
    return i + 1
