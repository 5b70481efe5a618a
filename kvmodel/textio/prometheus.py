"""Prometheus text exposition (a ``/metrics`` scrape), the one parser both readers use.

The format is line-oriented and every line stands alone, so a ``# TYPE`` line changes no
sample's name (a counter sample ``foo`` stays ``foo``, not ``foo_total``).  Ordinary lines
(``name{a="b",le="0.5"} 42``, ``# TYPE``/``# HELP``, blank) are read by one regular expression,
in time linear in the text; any other line goes to
``prometheus_client.parser.text_string_to_metric_families``, which accepts it (escaped label
values, exemplars) or not, and a line it refuses is named.

Limits: at most :data:`MAX_SERIES` series (metric name + label set, ``le`` aside) and
:data:`MAX_SAMPLES` samples are kept, so a scrape with very many series is a clear message in
bounded time and memory; ``keep(name)`` drops the samples a reader does not use before they
count or take memory.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .lines import TextError

MAX_SERIES = 100_000  # distinct (name, labels without le): a real scrape has a few thousand
MAX_SAMPLES = 500_000  # samples kept (those ``keep`` selects): ~200 MB at most
MAX_SLOW_LINES = 20_000  # lines only prometheus_client reads (~0.2 ms each)

_NAME = r"[A-Za-z_:][A-Za-z0-9_:]*"
_NUMBER = r"[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[Ii]nf(?:inity)?|NaN)"
_VALUE = r'(?:[^"\\\n]|\\.)*'  # a label value: \\, \" and \n escaped
_LINE = re.compile(  # one line: a sample (groups 1-3), a comment (4) or blank
    rf"^[ \t]*(?:({_NAME})(?:\{{((?:[A-Za-z_][A-Za-z0-9_]*=\"{_VALUE}\"(?:,(?!\}})|(?=\}})))*)\}})?"
    rf"[ \t]+({_NUMBER})(?:[ \t]+-?\d+)?|(#[^\n]*?)|)[ \t\r]*$\n?",
    re.M,
)
_LABEL = re.compile(rf'([A-Za-z_][A-Za-z0-9_]*)="({_VALUE})"')
_ESCAPE = re.compile(r'\\[\\n"]')  # the escapes prometheus_client undoes
_COMMENT = re.compile(  # TYPE/HELP with a valid name, or a comment the parser ignores
    rf"#(?:[ \t]+(?:TYPE[ \t]+{_NAME}[ \t]+\S.*|HELP[ \t]+{_NAME}(?:[ \t].*)?)"
    r"|(?![ \t]+(?:TYPE|HELP)(?:[ \t]|$)).*)"
)


@dataclass(frozen=True, slots=True)
class PromSample:
    """One sample line: ``name{labels} value``."""

    line: int  # as an editor numbers it (first line = 1)
    name: str  # with its suffix (``_bucket``, ``_sum``, ``_count``, ``_total``)
    labels: dict[str, str]
    value: float


_SUFFIX = re.compile(r"_(?:bucket|sum|count)$")


def _unescape(m: re.Match) -> str:
    return {"\\\\": "\\", "\\n": "\n", '\\"': '"'}[m[0]]


def _scan(text: str) -> Iterator[tuple[int, str | None, re.Match | None]]:
    """``(line number, None, match)`` for each line :data:`_LINE` reads, ``(line number,
    stripped line, None)`` for each other line; one pass of the expression over the text (a
    scrape may be 200 MB: no list of lines, no Python work per character)."""
    pos, n = 0, 0
    for m in _LINE.finditer(text):
        start = m.start()
        if start == len(text):
            break
        if start != pos:  # whole lines the expression does not read
            for raw in text[pos:start].split("\n")[:-1]:
                n += 1
                yield n, raw.strip(), None
        n += 1
        yield n, None, m
        pos = m.end()
    for raw in text[pos:].split("\n") if pos < len(text) else ():
        n += 1
        yield n, raw.strip(), None


def parse_line_reference(line: str) -> list[tuple[str, dict, float]]:
    """``line`` read by prometheus_client; ValueError when it refuses it."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        families = list(text_string_to_metric_families(line + "\n"))
    except Exception:  # the parser raises several types on malformed text
        raise ValueError(line) from None
    return [(s.name, s.labels, float(s.value)) for f in families for s in f.samples]


def parse_exposition(
    text: str,
    name: str,
    *,
    expected: str,
    error: type[TextError] = TextError,
    keep: Callable[[str], bool] | None = None,
) -> list[PromSample]:
    """The samples of ``text`` that ``keep`` selects (all by default), file order; an ``error``
    naming the first line that is not Prometheus text (``expected`` says what was expected
    there), or saying that the text holds over :data:`MAX_SERIES` series or
    :data:`MAX_SAMPLES` samples."""
    out: list[PromSample] = []
    series: set[tuple] = set()
    slow = 0
    wanted: dict[str, bool] = {}  # keep(name), asked once per name
    for n, line, m in _scan(text):
        if m is not None:  # an ordinary line, read by the expression
            sample_name = m[1]
            if sample_name is None:  # blank, or a comment
                if m[4] is None or _COMMENT.fullmatch(m[4].strip()):
                    continue
                line = m[0].strip()
            else:
                kept = wanted.get(sample_name)
                if kept is None:
                    kept = wanted[sample_name] = keep is None or keep(sample_name)
                if not kept:
                    continue
                pairs = _LABEL.findall(m[2]) if m[2] else []
                labels = {k: _ESCAPE.sub(_unescape, v) if "\\" in v else v for k, v in pairs}
                if len(labels) == len(pairs):  # else a label named twice: the parser's message
                    found = [(sample_name, labels, float(m[3]))]
                    line = None
                else:
                    line = m[0].strip()
        if line is not None:  # anything else: prometheus_client accepts it or not
            if not line:
                continue
            slow += 1
            if slow > MAX_SLOW_LINES:
                raise error(
                    f"{name}: line {n}: over {MAX_SLOW_LINES:,} lines in unusual forms (exemplars, "
                    "a space before '{', fractional timestamps); expected the plain exposition "
                    'format, name{label="value"} 42'
                )
            try:
                found = parse_line_reference(line)
            except ValueError:
                raise error(
                    f"{name}: line {n} is not Prometheus text ({line[:80]!r}); {expected}"
                ) from None
        for sample_name, labels, value in found:
            if keep is not None and not keep(sample_name):
                continue
            out.append(PromSample(n, sample_name, labels, value))
            base = _SUFFIX.sub("", sample_name)
            series.add((base, *sorted((k, v) for k, v in labels.items() if k != "le")))
            if len(series) > MAX_SERIES or len(out) > MAX_SAMPLES:
                what = (
                    f"{MAX_SERIES:,} series (label sets)"
                    if len(series) > MAX_SERIES
                    else f"{MAX_SAMPLES:,} samples"
                )
                raise error(
                    f"{name}: line {n}: the metrics read hold over {what}, the limit; expected "
                    "one scrape of a serving engine (a few thousand series); sum the label sets "
                    "first, e.g. sum by (le) in Prometheus"
                )
    return out


def labels_text(labels: dict) -> str:
    """``{a="1",b="2"}``: the labels as the exposition writes them, sorted by name."""
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"
