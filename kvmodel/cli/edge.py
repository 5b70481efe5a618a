"""The command line's one door into ``kvview``: number formatting and the HTML report.

This is the only module under ``kvmodel/`` that imports ``kvview`` (tests/test_layers.py checks
it), and it does so inside each function, so ``import kvmodel.cli`` loads neither ``kvview`` nor
plotly.
The CLI shows the same "335.5 MB" and "26.8 ms" as the app because both format through here.
"""

from __future__ import annotations


def fmt_bytes(n):
    from kvview.fmt import fmt_bytes

    return fmt_bytes(n)


def fmt_ms(seconds, digits: int = 1):
    from kvview.fmt import fmt_ms

    return fmt_ms(seconds, digits)


def fmt_tokens(n):
    from kvview.fmt import fmt_tokens

    return fmt_tokens(n)


def ttft_parts_text(parts) -> str:
    from kvview.capacity_words import ttft_parts_text

    return ttft_parts_text(parts)


def decode_method() -> str:
    """How the replay's decode pool runs, in the words the Capacity page uses."""
    from kvview.replay_words import DECODE_METHOD

    return DECODE_METHOD


def report(sc, *, base_url: str | None, title: str) -> tuple[str, str | None, list[str]]:
    """The one-scenario HTML report, its share link (None when the link cannot carry the
    scenario) and what the link cannot carry."""
    from kvview.report import DEFAULT_BASE_URL, report_html, share_link, share_query

    url = share_link(sc, base_url or DEFAULT_BASE_URL)
    label = f"{sc.model.name} on {sc.link.name}"
    html = report_html([(label, sc)], share_url=url, title=title)
    gaps = [] if url else share_query(sc)[1]
    return html, url, gaps
