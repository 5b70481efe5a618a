"""The text layer both readers (:mod:`kvmodel.traffic`, :mod:`kvmodel.measure`) stand on.

- :func:`open_source` → :class:`Source`: the bytes of a path, bytes or an upload, within a size
  limit; gzip inflated as it is read (at most :data:`GZIP_EXPANSION` × the limit), a UTF-16
  export re-encoded as UTF-8, a byte-order mark dropped; whole or in newline-aligned pieces.
- :func:`decode`, :func:`find_binary`, :func:`not_text`: UTF-8 text, or an error naming the
  line of the first byte that is not text.
- :func:`numbered_lines`, :func:`line_at`: lines as an editor numbers them (first line = 1).
- :func:`parse_exposition` → :class:`PromSample`: Prometheus text, every sample with its line.

Every error is a :class:`TextError` (a ``ValueError``), or the subclass the caller passes as
``error=``, and starts with the input's name.  Nothing here imports streamlit.
"""

from .lines import TextError, decode, find_binary, line_at, not_text, numbered_lines
from .prometheus import PromSample, labels_text, parse_exposition
from .source import GZIP_EXPANSION, SNIFF, Source, open_source

__all__ = [
    "GZIP_EXPANSION",
    "SNIFF",
    "PromSample",
    "Source",
    "TextError",
    "decode",
    "find_binary",
    "labels_text",
    "line_at",
    "not_text",
    "numbered_lines",
    "open_source",
    "parse_exposition",
]
