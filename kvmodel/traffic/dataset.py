"""A directory or a glob of Parquet files (a warehouse export) read as one trace, streamed.

Request logs live in warehouses, and a warehouse exports a table as many Parquet files
(``part-00000.parquet``, ...).  :func:`load_dataset` reads them as the rows of one table, in
file order (sorted paths), through :mod:`pyarrow.dataset`: only the columns used, one run of
about a million rows (whole row groups of one file) per job, in batches, on the same few
threads and into the same :class:`~.collect.Collect` / :class:`~.tally.Tally` as a single
Parquet file.  With ``per_request=False`` each batch is counted and let go, so memory stays
flat whatever the number or size of the files (``bench/traffic_dataset.py``).

Decisions:

- **Which files.** A directory, or a directory a glob matches (``'logs/day=2026-11-*'``), is
  searched recursively; names starting with ``.`` or ``_`` are left out, as Spark, Hive and
  Hadoop mark their bookkeeping files that way (``_SUCCESS``, ``.part-0.crc``).  A file is read
  when it starts with Parquet's ``PAR1`` marker.  Other files (a README, a CSV beside the
  export) are skipped with a note (``columns["skipped_files"]``), and so are such files a glob
  matches; a file named ``*.parquet`` that is not Parquet is an error (it is damaged).  No
  Parquet file at all is an error naming the directory or glob.
- **Same columns.** The columns are detected from the first file.  Every file must hold the
  columns that are read, with the same type; otherwise the error names the file, the column
  and the first file's type.  Columns that are not read may differ (a schema that gained a
  column over time is fine).
- **Rows** are numbered per file: a skipped row reads ``part-00003.parquet row 17: ...``.
- **Size.** With ``per_request=False`` nothing limits the total size: the columns are never
  held.  With ``per_request=True`` every request is kept, and ``max_bytes`` caps the files'
  total size on disk.
"""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path

import pyarrow as pa

from ..textio.paths import Walk, has_glob, open_regular, pseudo_root
from .assemble import assemble
from .checks import Part, schema_time_kind
from .collect import Collect, Hints, run_jobs
from .columns import flatten, plan
from .parquet import read_batches
from .result import Requests, TrafficError, arrow_message
from .tally import Tally, summarise

_JOB_ROWS = 1 << 20  # rows per job (whole row groups of one file), as in .parquet
_BATCH_ROWS = 1 << 18  # rows decoded at a time
_READAHEAD = 2  # batches a job decodes ahead: bounds the memory in flight per thread
PARQUET_SUFFIXES = (".parquet", ".pq", ".parq")


def is_dataset(src) -> bool:
    """True for a directory, or a path with glob characters (``*``, ``?``, ``[``) that is not
    itself a file: what :func:`load_dataset` reads (a file goes to the one-file reader)."""
    if not isinstance(src, str | os.PathLike):
        return False
    path = Path(src)
    if path.is_dir():
        return True
    return has_glob(str(src)) and not path.exists()


def _matched(src, walk: Walk) -> tuple[list[Path], str]:
    """The files of the directory or glob ``src`` (within the walk's budget), and its words."""
    shown = str(src)
    root = Path(src)
    system = pseudo_root(root if root.is_dir() else next(iter(root.parents), root))
    if system is not None:
        raise TrafficError(
            f"{shown}: in {system}, a system directory whose files are not data; expected a "
            "directory or glob of Parquet files on disk"
        )
    if root.is_dir():
        return walk.files_under(root), f"{shown}: the directory"
    matches = walk.glob(shown)
    if not matches:
        raise TrafficError(
            f"{shown}: no file matches this pattern; expected a directory or a glob of "
            "Parquet files (quote the glob so that the shell passes it on: 'logs/*.parquet')"
        )
    found: set[Path] = set()
    for m in matches:
        if m.is_dir():
            found.update(walk.files_under(m))
        elif walk.keep(m) is not None:
            found.add(m)
    return sorted(found), f"{shown}: the pattern"


def dataset_files(src) -> tuple[list[Path], list[str]]:
    """The Parquet files of a directory or glob (sorted) and the other files, skipped.

    The walk is bounded (:class:`kvmodel.textio.paths.Walk`: entries looked at, files and
    their bytes), enters each directory once (symbolic-link loops end), and keeps only regular
    files: a device, pipe or socket under the folder is skipped, never opened."""
    walk = Walk(str(src), TrafficError)
    found, where = _matched(src, walk)
    files, skipped = [], list(walk.skipped)
    for path in found:
        with open_regular(path, TrafficError) as fh:
            magic = fh.read(4)
        if magic == b"PAR1":
            files.append(path)
        elif path.name.lower().endswith(PARQUET_SUFFIXES):
            raise TrafficError(
                f"{path}: not a Parquet file (it does not start with Parquet's 'PAR1' marker; "
                "the file may be damaged or still being written); expected every file of the "
                "dataset to be a Parquet file written by pandas, pyarrow, Spark or DuckDB"
            )
        else:
            skipped.append(str(path))
    if not files:
        seen = f" (it has {len(skipped)} other files)" if skipped else ""
        raise TrafficError(
            f"{where} holds no Parquet file{seen}; expected one or more Parquet files, e.g. a "
            "table exported by Spark, DuckDB, BigQuery or pandas"
        )
    return files, skipped


def _names(schema: pa.Schema) -> pa.Schema:
    return flatten(schema.empty_table()).schema


def _same_columns(fragments, needed: list[str]) -> None:
    """Raise unless every file holds the columns read, with the first file's types."""
    first = _names(fragments[0].physical_schema)
    for frag in fragments[1:]:
        schema = _names(frag.physical_schema)
        for c in needed:
            want = first.field(c).type
            if c not in schema.names:
                raise TrafficError(
                    f"{frag.path}: has no column {c!r}, which {fragments[0].path} has; columns "
                    f"found: {', '.join(map(repr, schema.names)) or 'none'}; expected every file "
                    "of the dataset to hold the same columns"
                )
            if schema.field(c).type != want:
                raise TrafficError(
                    f"{frag.path}: column {c!r} is {schema.field(c).type}, but {want} in "
                    f"{fragments[0].path}; expected every file of the dataset to have the same "
                    "column types (write them from one table or cast them alike)"
                )


def _jobs(fragments, needed: list[str], det: dict, col: Collect):
    """One job per run of row groups of about :data:`_JOB_ROWS` rows of one file."""
    top = list(dict.fromkeys(c.split(".", 1)[0] for c in needed))

    def job(frag, groups: list[int], start: int, hints: Hints) -> list[Part]:
        def batches():
            return frag.subset(row_group_ids=groups).to_batches(
                columns=top, batch_size=_BATCH_ROWS, batch_readahead=_READAHEAD, use_threads=False
            )

        return read_batches(batches, frag.path, needed, det, col, start, hints)

    start = 0
    for frag in fragments:
        run, rows = [], 0
        for g in frag.row_groups:
            run.append(g.id)
            rows += g.num_rows
            if rows >= _JOB_ROWS:
                yield partial(job, frag, run, start)
                run, start, rows = [], start + rows, 0
        if run:
            yield partial(job, frag, run, start)
            start += rows


def load_dataset(
    src,
    columns: tuple = (None, None, None),
    *,
    max_bytes: int = 200_000_000,
    progress=None,
    per_request: bool = True,
) -> Requests:
    """Read the Parquet files of a directory or glob as one table (see the module docstring).

    ``columns`` are the prompt, output and time columns picked by hand (``None`` = detect,
    ``""`` = none); the rest as :func:`~kvmodel.traffic.load_traffic`, which calls this for a
    directory or a glob.  Raises :class:`TrafficError`.
    """
    import pyarrow.dataset as ds

    def step(fraction: float) -> None:
        if progress is not None:
            progress(fraction)

    name = str(src)
    step(0.0)
    files, skipped = dataset_files(src)
    if per_request:
        total = sum(p.stat().st_size for p in files)
        if total > max_bytes:
            raise TrafficError(
                f"{name}: the {len(files)} Parquet files hold {total / 1e6:,.0f} MB, over the "
                f"{max_bytes / 1e6:,.0f} MB limit for keeping every request; read them counted "
                "per length instead (per_request=False, what the CLI does)"
            )
    try:
        fragments = list(ds.dataset([str(p) for p in files], format="parquet").get_fragments())
    except (pa.ArrowException, OSError) as exc:
        raise TrafficError(
            f"{name}: cannot open the Parquet files ({arrow_message(exc)})"
        ) from None
    for frag in fragments:  # every footer once, so that a damaged one is named
        try:
            frag.ensure_complete_metadata()
        except (pa.ArrowException, OSError) as exc:
            raise TrafficError(
                f"{frag.path}: not a readable Parquet file ({arrow_message(exc)}); expected "
                "every file of the dataset to be a complete Parquet file"
            ) from None
    first = _names(fragments[0].physical_schema)
    labels = _labels(files)
    where = labels[0]  # the columns are the first file's
    det, needed = plan(first.names, name, where, *columns)
    _same_columns(fragments, needed)
    rows = sum(f.metadata.num_rows for f in fragments)
    hints = Hints(types={})
    if det["arrival_s"]:
        hints.time_kind = schema_time_kind(first.empty_table(), det)
    hashed = det["fmt"] == "mooncake" and det["cached_tokens"]
    col = (Collect if per_request or det["weights"] or hashed else Tally)("row", 0, rows)
    col.prepare(det, hints.time_kind)
    step(0.1)
    bounds = _file_bounds(fragments, labels)
    for part in run_jobs(_jobs(fragments, needed, det, col), hints, bool(det["arrival_s"])):
        before = len(col.skipped)
        col.add(part)
        _name_rows(col, before, bounds)
        step(0.1 + 0.8 * col.n / max(rows, 1))
    if isinstance(col, Tally):
        result = col.assemble(det, "parquet", name, where)
    else:
        result = assemble(col, det, "parquet", name, where)
    result.columns.update(files_read=len(files), skipped_files=skipped)
    step(1.0)
    return result if per_request else summarise(result)


def _labels(files: list[Path]) -> list[str]:
    """Each file's path below the folder all of them are in (``day=1/part-0.parquet``)."""
    if len(files) == 1:
        return [files[0].name]
    root = os.path.commonpath([str(p) for p in files])
    return [os.path.relpath(p, root) for p in files]


def _file_bounds(fragments, labels: list[str]) -> list[tuple[int, str]]:
    """(first row, file label) of each file, in reading order."""
    out, start = [], 0
    for frag, label in zip(fragments, labels, strict=True):
        out.append((start, label))
        start += frag.metadata.num_rows
    return out


def _name_rows(col: Collect, before: int, bounds: list[tuple[int, str]]) -> None:
    """Name the rows skipped in the last part by file and row within it (``part-3.parquet row
    17``) instead of by row of the whole dataset; their order stays the dataset's."""
    for k in range(before, len(col.skipped)):
        num, reason = col.skipped[k]
        first, fname = next(b for b in reversed(bounds) if b[0] < num)
        reason = reason.split(": ", 1)[1]
        col.skipped[k] = (num, f"{fname} row {num - first}: {reason}")
