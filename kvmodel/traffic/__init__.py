"""Real traffic: read a request-length distribution (a trace, a table, a histogram, a /metrics
scrape) and ask which part of it gains from disaggregation.

:func:`load_traffic` turns an uploaded file into :class:`Requests`: prompt lengths (and, where the
source has them, output lengths, arrival times and prefix-cache hits), one entry per request or
one weighted entry per histogram bucket.  Nothing here imports streamlit.

Formats, detected by content first and file name second (``.gz`` by its magic bytes too):

- **Tables**: CSV, TSV (also ``;``-separated), Parquet (magic ``PAR1``), JSON Lines (or one JSON
  array of objects).  Parsed with pyarrow, reading only the columns used.
- **Known layouts** (``Requests.fmt``): ``"azure2023"`` (``TIMESTAMP`` wall clock,
  ``ContextTokens``, ``GeneratedTokens``); ``"mooncake"`` (``timestamp`` in ms, ``input_length``,
  ``output_length``, ``hash_ids``); ``"burstgpt"`` (``Timestamp`` s, ``Request tokens``,
  ``Response tokens``; rows with 0 response tokens are failed requests: they are kept, they still
  prefilled, and ``columns["failed_requests"]`` counts them); anything else with a recognised
  column name (:data:`PROMPT_NAMES`, :data:`OUTPUT_NAMES`, :data:`TIME_NAMES`, compared
  case-insensitively ignoring spaces, ``_`` and ``-``) is ``"generic-table"``.
- **Histograms** (``"histogram"``): a bucket column (:data:`BUCKET_NAMES`) with a count column
  (:data:`COUNT_NAMES`), or a probability column (:data:`PROBABILITY_NAMES`; ``fmt`` is then
  ``"histogram-probability"``, the weights are scaled to sum to 1 and
  ``columns["total_requests"] == "unknown"``).  Counts are per bucket, not cumulative.  A prompt
  column with a count column is read the same way (a value-count table).
- **Prometheus text** (``"prometheus-vllm"``, ``"prometheus-sglang"``, ``"prometheus-tgi"``):
  the cumulative ``_bucket`` series of the prompt-length histogram, parsed with
  ``prometheus_client``, de-cumulated, summed over label sets (models, engines, ranks).

Decisions the analysis should know:

- **A bucket stands for its upper bound**: ``prompt_tokens`` of a histogram entry is the bucket's
  ``le`` rounded down to whole tokens, so lengths are over-estimated, never under-estimated (the
  conservative side for a KV transfer).  Empty buckets are left out.
- **The ``+Inf`` bucket is left out**: its requests have no upper bound.  They are counted in
  ``skipped_rows`` (one per ``+Inf`` bucket), explained in ``skipped_examples`` and totalled in
  ``columns["overflow_requests"]`` (``columns["overflow_above_tokens"]`` is the largest finite
  bound) so the caller can say how many long requests the histogram could not place.
- **Bad rows are skipped, never used**: an empty, NaN, negative, fractional or unparseable length
  (or arrival time, output length, count) drops the row; so does a CSV row with the wrong number
  of fields or a JSON line that does not parse.  ``skipped_rows`` counts them and
  ``skipped_examples`` names the first five: rows as a spreadsheet shows them (header = row 1),
  JSON Lines by line.  A file whose rows are all bad raises :class:`TrafficError`.
- **Times**: ``arrival_s`` is seconds since the earliest kept request, in file order.  Numbers are
  seconds unless the layout says ms (Mooncake), the column name ends in ``ms``, or they are
  epoch milliseconds / microseconds / nanoseconds by magnitude (> 1e11 / 1e14 / 1e17).  Text is
  read as ISO / wall-clock date-times.
- **Mooncake prefix hits**: ``cached_tokens[i] = min(512 × (leading hash_ids of request i that
  an earlier kept request already holds), input_length[i])``; only the leading run counts (a
  prefix cache cannot reuse a block after a miss).

``Requests.columns`` maps each filled field (``prompt_tokens``, ``output_tokens``,
``arrival_s``, ``cached_tokens``, ``weights``) to the source column, plus notes: ``container``
(``csv``, ``tsv``, ``parquet``, ``jsonl``, ``json``, ``prometheus``; ``+gzip`` when
compressed), ``time_unit``, ``weights_kind``, ``overflow_requests``, ``label_sets``.

How it reads (a 10-million-row trace in about the time ``pyarrow.csv.read_csv`` takes, in
under 1.5 × the memory of the columns it returns): a path is read in 4 MB pieces, bytes and an
upload's buffer are sliced without a copy, gzip is inflated piece by piece; each CSV piece or
Parquet batch is parsed and checked on a few threads and written straight into the returned
arrays.  With ``per_request=False`` (what the app and the CLI use) each piece is instead
counted per prompt length on its thread and let go: the columns are never held (0.8 × the
CSV parse alone, 0.4-0.5 × the columns' memory at peak; ``bench/traffic_parse.py``).

Modules, one job each: ``reader`` (:func:`load_traffic`), ``source`` (opening, the format; the
bytes come from :mod:`kvmodel.textio`), ``columns`` (which column holds what), ``csv``,
``jsonl``, ``parquet`` and ``prometheus`` (one per format), ``checks`` (values and bad rows),
``collect`` (threads, columns filled in place), ``assemble`` (the result), ``tally`` (counting
instead of keeping), ``result`` (:class:`Requests`, :class:`TrafficError`); then the analyses:
``analysis`` (regions, the disaggregation window), ``queue`` (link load and queueing),
``samples`` (the shipped traces).
"""

from ..textio import GZIP_EXPANSION
from .analysis import (
    CRITERIA,
    DEFAULT_MIN_SEQ_LEN,
    Mix,
    Regions,
    Window,
    classify,
    comparison,
    critical_for_traffic,
    mix_from_requests,
    per_request_scenario,
    recommended_window,
    regions,
)
from .columns import (
    BUCKET_NAMES,
    COUNT_NAMES,
    HASH_NAMES,
    MOONCAKE_BLOCK_TOKENS,
    OUTPUT_NAMES,
    PROBABILITY_NAMES,
    PROMPT_NAMES,
    TIME_NAMES,
    detect_columns,
)
from .prometheus import PROMETHEUS_PROMPT_METRICS
from .queue import SEED, SIM_REQUESTS, Load, arrival_rate, load
from .reader import load_traffic, table_columns
from .result import Requests, TrafficError
from .samples import DEFAULT_SAMPLE, SAMPLES, TRACES_DIR, sample_path
from .tally import summarise

__all__ = [
    "BUCKET_NAMES",
    "COUNT_NAMES",
    "CRITERIA",
    "DEFAULT_MIN_SEQ_LEN",
    "DEFAULT_SAMPLE",
    "GZIP_EXPANSION",
    "HASH_NAMES",
    "MOONCAKE_BLOCK_TOKENS",
    "OUTPUT_NAMES",
    "PROBABILITY_NAMES",
    "PROMETHEUS_PROMPT_METRICS",
    "PROMPT_NAMES",
    "SAMPLES",
    "SEED",
    "SIM_REQUESTS",
    "TIME_NAMES",
    "TRACES_DIR",
    "Load",
    "Mix",
    "Regions",
    "Requests",
    "TrafficError",
    "Window",
    "arrival_rate",
    "classify",
    "comparison",
    "critical_for_traffic",
    "detect_columns",
    "load",
    "load_traffic",
    "mix_from_requests",
    "per_request_scenario",
    "recommended_window",
    "regions",
    "sample_path",
    "summarise",
    "table_columns",
]
