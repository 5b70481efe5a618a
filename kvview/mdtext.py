"""User-provided text made safe for Streamlit markdown (``st.warning``, ``st.error``, ...).

A file name, a CSV header, a model name or a query-string value is shown as the characters it
is: ``![x](http://host/x.png)`` draws no image (the browser fetches nothing), ``[a](b)`` no
link, ``http://host/x``, ``www.host`` or ``a@b.com`` no autolink, ``# Title`` no heading,
``<a href=…>`` no tag, ``$x$`` no formula, ``*a*`` no emphasis, and line breaks cannot start
new blocks.  Only what markdown would read is escaped, so ordinary
text (``48.02 GB/s``, ``kv_cache_usage``, ``(closest: …)``) reads unchanged in the source.
Pure Python, tested directly.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f\u2028\u2029]+")  # line breaks would start new blocks
_INLINE = re.compile(
    r"[\\`*\[\]~$]"  # code, emphasis, links and images, strikethrough, formulas
    r"|(?<=\])\("  # "](" even after escaping: no link destination
    r"|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])"  # emphasis by underscores (not inside a word)
    r"|:(?=[a-z/]+\[|material/)"  # Streamlit's :red[...] and :material/icon:
    r"|(?<=[A-Za-z]):(?=//)"  # bare http://host: GFM makes it a link
    r"|(?i:(?<=www)(?<![A-Za-z0-9]www)\.)"  # and www.host
    r"|@"  # and user@host.com
)
_ENTITY = {"<": "&lt;", ">": "&gt;", "&": "&amp;"}  # HTML: an entity, never a tag
# a heading, list, rule or ordered list at the start
_BLOCK = re.compile(r"^(\s*)([#+\-=|]|\d{1,9}(?=[.)](?:\s|$)))")


def md_escape(text, *, inline: bool = False) -> str:
    """``text`` (any value, as ``str``) on one line, with what markdown would read escaped.
    ``inline``: the text goes mid-line (after other text), so a leading ``-`` or ``#`` stays."""
    s = _CONTROL.sub(" ", str(text))
    s = _INLINE.sub(lambda m: "\\" + m.group(0), s)
    s = re.sub(r"[<>&]", lambda m: _ENTITY[m.group(0)], s)
    if inline:
        return s
    return _BLOCK.sub(lambda m: m.group(1) + ("\\" + m.group(2) if not m.group(2).isdigit()
                                              else m.group(2) + "\\"), s)  # fmt: skip


def shown(value, limit: int = 80) -> str:
    """A user's value quoted for a message: at most ``limit`` characters, escaped."""
    s = str(value)
    if len(s) > limit:
        s = s[: limit - 1] + "…"
    return f"'{md_escape(s, inline=True)}'"
