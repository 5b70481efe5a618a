"""perftest (``ib_send_bw`` / ``ib_write_bw`` / ``ib_read_bw``): bandwidth per message size, from
the result table or from ``--out_json`` (:class:`BandwidthPoints`).

**perftest's "MB/sec" is MiB/s.**  perftest divides by ``0x100000`` (2^20) for its MB/sec report
and by ``125000000`` (10^9 / 8) for Gb/sec; newer versions print the same number under the
honest label ``MiB/sec``.  So ``MB/sec`` and ``MiB/sec`` are both read as 2^20 B/s by default
(``mb_bytes=1e6`` reads MB/sec as decimal instead), ``Gb/sec`` as 1.25e8 B/s.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..textio import check_nesting, numbered_lines
from .base import MeasureError, check_text, key, number

PERFTEST_UNITS = {  # bytes per second per unit; "mb" is perftest's MB/sec = 2^20 B/s
    "mb/sec": "mb",
    "mb/s": "mb",
    "mbps": "mb",
    "mib/sec": 2.0**20,
    "mib/s": 2.0**20,
    "gb/sec": 1.25e8,  # perftest --report_gbits: Gbit/s, 125,000,000 B per Gb
    "gb/s": 1.25e8,
    "gbit/sec": 1.25e8,
    "gbit/s": 1.25e8,
    "gbps": 1.25e8,
}
PERFTEST_MB_BYTES = 2.0**20


@dataclass(frozen=True)
class BandwidthPoints:
    """Bandwidth per message size, file order (one point per result row)."""

    sizes_bytes: tuple[float, ...]
    bandwidths_bytes_per_s: tuple[float, ...]  # perftest's BW average, in B/s
    unit: str | None = None  # the bandwidth unit as the file prints it (the first one)

    @property
    def points(self) -> tuple[tuple[float, float], ...]:
        """``((message bytes, bytes/s), ...)``."""
        return tuple(zip(self.sizes_bytes, self.bandwidths_bytes_per_s, strict=True))


_PERFTEST_HEADER = re.compile(r"#bytes\b", re.I)
_PERFTEST_COLUMN = re.compile(r"#\w+|[A-Za-z][\w ]*?\[[^\]]*\]|\S+")
_AVG_COLUMN = re.compile(r"^bw\s*average\s*\[([^\]]*)\]$", re.I)


def _perftest_scale(unit: str, mb_bytes: float) -> float | None:
    scale = PERFTEST_UNITS.get(unit.strip().lower().replace(" ", ""))
    return mb_bytes if scale == "mb" else scale


def _parse_perftest_table(text: str, name: str, mb_bytes: float) -> BandwidthPoints:
    points: list[tuple[float, float]] = []
    unit = scale = size_col = avg_col = first_unit = None
    unit_line = 0
    for n, raw in numbered_lines(text):
        line = raw.strip()
        if _PERFTEST_HEADER.match(line):
            cols = [c.strip() for c in _PERFTEST_COLUMN.findall(line)]
            avg = [(i, m.group(1)) for i, c in enumerate(cols) if (m := _AVG_COLUMN.match(c))]
            if not avg:
                if re.search(r"t_(min|avg|typical)", line):
                    raise MeasureError(
                        f"{name}: line {n} is a perftest latency table (ib_*_lat); expected the "
                        "bandwidth table of ib_send_bw/ib_write_bw/ib_read_bw"
                    )
                raise MeasureError(
                    f"{name}: line {n}: the perftest header has no 'BW average[unit]' column; "
                    "expected '#bytes #iterations BW peak[MB/sec] BW average[MB/sec] "
                    "MsgRate[Mpps]' (or MiB/sec, Gb/sec)"
                )
            col, this_unit = avg[0]
            this_scale = _perftest_scale(this_unit, mb_bytes)
            if this_scale is None:
                raise MeasureError(
                    f"{name}: line {n}: unknown bandwidth unit {this_unit!r}; expected MB/sec, "
                    "MiB/sec or Gb/sec"
                )
            if unit is not None and this_scale != scale:
                raise MeasureError(
                    f"{name}: line {n}: bandwidth in {this_unit} after {unit} on line "
                    f"{unit_line}; expected one unit per file (run perftest once per unit)"
                )
            unit, scale, unit_line, avg_col, size_col = this_unit, this_scale, n, col, 0
            first_unit = first_unit or unit
            continue
        if not line or not line[0].isdigit():
            continue  # preamble, separators, warnings
        fields = line.split()
        if unit is None:
            raise MeasureError(
                f"{name}: line {n} is a result row before any '#bytes ... BW average[unit]' "
                "header, so its unit is unknown; expected the perftest header above the rows"
            )
        if not fields[0].isdigit():
            continue  # e.g. a date or address line starting with a digit
        if len(fields) <= avg_col:
            raise MeasureError(
                f"{name}: line {n} has {len(fields)} fields ({line[:60]!r}), the row is cut "
                f"short; expected #bytes, #iterations, BW peak, BW average, MsgRate"
            )
        size, bw = number(fields[size_col]), number(fields[avg_col])
        if size is None or bw is None:
            raise MeasureError(
                f"{name}: line {n}: {line[:60]!r} is not numbers; expected "
                "'<bytes> <iterations> <BW peak> <BW average> <MsgRate>'"
            )
        if size <= 0 or bw <= 0:
            raise MeasureError(
                f"{name}: line {n}: size {size:g} B at {bw:g} {unit}; expected both > 0"
            )
        points.append((size, bw * scale))
    if not points:
        raise MeasureError(
            f"{name}: no perftest result rows; expected the table under '#bytes #iterations "
            "BW peak[MB/sec] BW average[MB/sec] MsgRate[Mpps]' (run ib_write_bw -a for all sizes)"
        )
    return _points(points, first_unit)


def _points(points: list[tuple[float, float]], unit: str | None) -> BandwidthPoints:
    sizes, bandwidths = zip(*points, strict=True)
    return BandwidthPoints(tuple(sizes), tuple(bandwidths), unit)


_UNIT_KEYS = {"unit", "units", "bwunit", "bwunits", "reportunit", "reportfmt", "bandwidthunit"}


def _json_unit(obj: dict) -> str | None:
    for k, v in obj.items():
        if key(k) in _UNIT_KEYS and isinstance(v, str):
            return v
    return None


def _parse_perftest_json(
    text: str, name: str, mb_bytes: float, unit: str | None
) -> BandwidthPoints:
    check_nesting(text, name, error=MeasureError)  # before json.loads (RecursionError)
    try:
        docs = [(1, json.loads(text))]
    except json.JSONDecodeError as whole:
        docs = []
        for n, line in numbered_lines(text):  # JSON Lines: one run per line
            if not line.strip():
                continue
            try:
                docs.append((n, json.loads(line)))
            except json.JSONDecodeError as exc:
                n_err, msg = (whole.lineno, whole.msg) if not docs else (n, exc.msg)
                raise MeasureError(
                    f"{name}: line {n_err}: not valid JSON ({msg}); expected perftest "
                    '--out_json output like {"test_info": {...}, "results": {"MsgSize": 65536, '
                    '"BW_average": 46557.0, ...}}'
                ) from None
    points: list[tuple[float, float]] = []
    units_seen: dict[float, str] = {}
    for line, doc in docs:
        top = doc if isinstance(doc, dict) else {}
        info = top.get("test_info") if isinstance(top.get("test_info"), dict) else {}
        results = top.get("results", doc) if isinstance(doc, dict) else doc
        container_unit = _json_unit(top) or _json_unit(info)
        if isinstance(results, dict):
            container_unit = container_unit or _json_unit(results)
            results = [results]
        if not isinstance(results, list):
            raise MeasureError(
                f"{name}: line {line}: 'results' is a {type(results).__name__}; expected an "
                "object or a list of objects with MsgSize and BW_average"
            )
        for i, r in enumerate(results):
            where = f"line {line}, result {i + 1}"
            if not isinstance(r, dict):
                raise MeasureError(
                    f"{name}: {where} is not an object; expected MsgSize, BW_average"
                )
            keys = {key(k): v for k, v in r.items()}
            size = keys.get("msgsize", keys.get("bytes", keys.get("size")))
            avg_key = next((k for k in r if key(k).startswith("bwaverage")), None)
            if size is None or avg_key is None:
                raise MeasureError(
                    f"{name}: {where} has fields {', '.join(map(str, r))}; expected MsgSize and "
                    "BW_average"
                )
            bracket = re.search(r"\[([^\]]+)\]", avg_key)
            this_unit = (bracket.group(1) if bracket else None) or _json_unit(r)
            this_unit = this_unit or container_unit or unit
            if this_unit is None:
                raise MeasureError(
                    f'{name}: {where}: no bandwidth unit; expected a "unit" field ("MB/sec", '
                    '"MiB/sec" or "Gb/sec") in the result, results or test_info, or pass unit='
                )
            scale = _perftest_scale(this_unit, mb_bytes)
            if scale is None:
                raise MeasureError(
                    f"{name}: {where}: unknown bandwidth unit {this_unit!r}; expected MB/sec, "
                    "MiB/sec or Gb/sec"
                )
            units_seen.setdefault(scale, this_unit)
            if len(units_seen) > 1:
                raise MeasureError(
                    f"{name}: {where}: bandwidth in {this_unit} mixed with "
                    f"{next(iter(units_seen.values()))}; expected one unit per file"
                )
            s, bw = number(str(size)), number(str(r[avg_key]))
            if s is None or bw is None or s <= 0 or bw <= 0:
                raise MeasureError(
                    f"{name}: {where}: MsgSize={size!r}, {avg_key}={r[avg_key]!r}; expected "
                    "numbers > 0"
                )
            points.append((s, bw * scale))
    if not points:
        raise MeasureError(f"{name}: no perftest results; expected MsgSize and BW_average fields")
    return _points(points, next(iter(units_seen.values())))


def parse_perftest(
    text: str,
    name: str = "perftest",
    *,
    unit: str | None = None,
    mb_bytes: float = PERFTEST_MB_BYTES,
) -> BandwidthPoints:
    """(message bytes, bandwidth bytes/s) points from perftest bandwidth output, file order.

    Text: the table under ``#bytes #iterations BW peak[MB/sec] BW average[MB/sec]
    MsgRate[Mpps]`` (also ``MiB/sec``, ``--report_gbits``'s ``Gb/sec``, the per-port and QoS
    variants); the **BW average** column is used.  Lines not starting with a digit (the
    preamble, ``---`` rules, "RDMA_Write BW Test", "Dual-port", CPU-frequency warnings) are
    ignored.  A row before any header, a cut-short row, or a second header in another unit is
    an error naming the line.

    JSON (``--out_json``): one document, or one per line (JSON Lines, e.g. one run per size).
    ``results`` is an object or a list of objects with ``MsgSize`` and ``BW_average``
    (``BW_peak``, ``MsgRate``, ``n_iterations`` are ignored); a top-level list of such objects is
    read too.  The unit comes from a bracket in the key (``"BW_average[Gb/sec]"``), else from a
    ``unit``/``BW_unit``/``units``/``report_unit`` field in the result, in ``results``, in
    ``test_info`` or at the top, else from ``unit=``; none of these is an error.

    ``MB/sec`` is perftest's 2^20 B/s (see the module notes); ``mb_bytes=1e6`` overrides.
    ``unit`` of the result is the first bandwidth unit the file names.
    """
    text = check_text(text, name)
    if text.lstrip()[:1] in ("{", "["):
        return _parse_perftest_json(text, name, mb_bytes, unit)
    return _parse_perftest_table(text, name, mb_bytes)
