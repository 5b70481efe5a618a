"""Text and its lines as an editor numbers them (first line = 1): decoding UTF-8 with the
line of the first byte that is not text, and numbered lines for the readers' messages."""

from __future__ import annotations

from collections.abc import Iterator


class TextError(ValueError):
    """An input cannot be read; the message names the input, the line where it has one, and
    what was expected.  The readers raise their own subclasses (``TrafficError``,
    ``MeasureError``)."""


def line_at(data: bytes | str, offset: int) -> int:
    """The line (1-based) that holds ``data[offset]``."""
    return data[:offset].count(b"\n" if isinstance(data, bytes | bytearray) else "\n") + 1


def numbered_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for every line of ``text``, blank ones included."""
    return enumerate(text.splitlines(), start=1)


def find_binary(data: bytes, *, cut: bool = False) -> int | None:
    """The offset of the first byte that is not UTF-8 text (a NUL byte, or a byte no UTF-8
    character allows there); None when ``data`` is all text.  ``cut``: ``data`` is the start of
    a longer input, so a character cut short at its very end is not counted against it."""
    bad = data.find(b"\x00")
    if bad >= 0:
        return bad
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if not (cut and exc.start >= len(data) - 3 and exc.end == len(data)):
            return exc.start
    return None


def not_text(name: str, data: bytes, bad: int, expected: str, error=TextError) -> TextError:
    """The error for a byte that is not text at offset ``bad`` of ``data``."""
    return error(
        f"{name}: line {line_at(data, bad)} holds binary data (byte 0x{data[bad]:02x} at offset "
        f"{bad}), not UTF-8 text; expected {expected}"
    )


def decode(data: bytes, name: str, *, expected: str, error=TextError) -> str:
    """``data`` as text; an ``error`` naming the line of the first byte that is not text."""
    bad = data.find(b"\x00")
    if bad < 0:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = exc.start
    raise not_text(name, data, bad, expected, error)
