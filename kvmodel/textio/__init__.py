"""The text layer both readers (:mod:`kvmodel.traffic`, :mod:`kvmodel.measure`) stand on.

- :func:`open_source` → :class:`Source`: the bytes of a path, bytes or an upload, within a size
  limit; gzip inflated as it is read (at most :data:`GZIP_EXPANSION` × the limit), a UTF-16
  export re-encoded as UTF-8, a byte-order mark dropped; whole or in newline-aligned pieces.
- :func:`decode`, :func:`find_binary`, :func:`not_text`: UTF-8 text, or an error naming the
  line of the first byte that is not text.
- :func:`numbered_lines`, :func:`line_at`: lines as an editor numbers them (first line = 1).
- :func:`check_nesting`: refuse JSON nested deeper than :data:`MAX_JSON_DEPTH` before a parser
  (pyarrow's overflows the C stack, Python's raises RecursionError) sees it; :func:`json_kind`
  names a parsed value in JSON's words for a message ("a JSON array", "null").
- :func:`parse_exposition` → :class:`PromSample`: Prometheus text, every sample with its line.

Every error is a :class:`TextError` (a ``ValueError``), or the subclass the caller passes as
``error=``, and starts with the input's name.  Nothing here imports streamlit.
"""

from .lines import TextError, decode, find_binary, line_at, not_text, numbered_lines
from .nesting import MAX_JSON_DEPTH, check_nesting, json_kind, max_depth
from .prometheus import PromSample, labels_text, parse_exposition
from .source import GZIP_EXPANSION, SNIFF, Source, open_source

__all__ = [
    "GZIP_EXPANSION",
    "MAX_JSON_DEPTH",
    "SNIFF",
    "PromSample",
    "Source",
    "TextError",
    "check_nesting",
    "decode",
    "find_binary",
    "json_kind",
    "labels_text",
    "line_at",
    "max_depth",
    "not_text",
    "numbered_lines",
    "open_source",
    "parse_exposition",
]
