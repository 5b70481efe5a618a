"""What the traffic reader's test files share: the shipped traces, a ``load_traffic`` that reads
every input both ways, and small builders of inputs and comparisons."""

from pathlib import Path

import numpy as np
import pytest

from kvmodel import traffic as tr
from kvmodel.traffic import MOONCAKE_BLOCK_TOKENS, Requests, TrafficError, summarise

TRACES = Path(__file__).resolve().parents[1] / "data" / "traces"
AZURE_CODE = TRACES / "azure2023" / "AzureLLMInferenceTrace_code.csv"
AZURE_CONV = TRACES / "azure2023" / "AzureLLMInferenceTrace_conv.csv"
MOONCAKE = TRACES / "mooncake" / "conversation_trace.jsonl"
SAMPLES = TRACES / "samples"


def load_traffic(src, **kw) -> Requests:
    """:func:`kvmodel.traffic.load_traffic` made twice: per request (what the tests check) and
    with ``per_request=False``, which must give the same requests counted per distinct length
    (or the same error): the app and the CLI read that way.  An explicit ``per_request`` reads
    once."""
    real = tr.load_traffic
    if "per_request" in kw:
        return real(src, **kw)
    try:
        full = real(src, **kw)
    except TrafficError as exc:
        if hasattr(src, "seek"):
            src.seek(0)
        with pytest.raises(TrafficError) as again:
            real(src, **{**kw, "progress": None}, per_request=False)
        assert str(again.value) == str(exc)
        raise
    if hasattr(src, "seek"):
        src.seek(0)
    same_counts(real(src, **{**kw, "progress": None}, per_request=False), full)
    return full


def same_counts(summary: Requests, full: Requests) -> None:
    """``summary`` holds ``full``'s requests as one weighted entry per distinct length (per
    (prompt, cached) pair), with the same span, skipped rows and notes."""
    want = summarise(full)
    assert summary.output_tokens is None and summary.arrival_s is None
    for f in ("prompt_tokens", "weights", "cached_tokens"):
        x, y = getattr(summary, f), getattr(want, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert summary.span_s == want.span_s
    assert (summary.fmt, summary.skipped_rows, summary.skipped_examples) == (
        full.fmt,
        full.skipped_rows,
        full.skipped_examples,
    )
    assert summary.columns == full.columns
    for hit in (None, 0.25):  # and the analyses see the same traffic
        a = tr.mix_from_requests(summary, hit_ratio=hit)
        b = tr.mix_from_requests(full, hit_ratio=hit)
        assert np.array_equal(a.tokens, b.tokens) and np.array_equal(a.weights, b.weights)
        assert a.span_s == b.span_s


def load_text(text: str | bytes, name: str | None = None, **kw) -> Requests:
    """Read ``text`` (both ways)."""
    data = text.encode() if isinstance(text, str) else text
    return load_traffic(data, name=name, **kw)


def error_of(text: str | bytes, name: str | None = None, **kw) -> str:
    """The message of the :class:`TrafficError` reading ``text`` raises (both ways)."""
    with pytest.raises(TrafficError) as info:
        load_text(text, name, **kw)
    return str(info.value)


def same_requests(a: Requests, b: Requests) -> None:
    for f in ("prompt_tokens", "weights", "output_tokens", "arrival_s", "cached_tokens"):
        x, y = getattr(a, f), getattr(b, f)
        assert (x is None) == (y is None), f
        if x is not None:
            assert x.dtype == y.dtype and np.array_equal(x, y), f
    assert (a.fmt, a.skipped_rows, a.skipped_examples) == (
        b.fmt,
        b.skipped_rows,
        b.skipped_examples,
    )
    assert a.columns == b.columns


def trace_csv(rows: int, bad: dict[int, str] | None = None) -> bytes:
    """timestamp,prompt_tokens,output_tokens with data row i on spreadsheet row i + 2."""
    body = [f"{i * 0.25:.2f},{100 + i % 977},{1 + i % 13}" for i in range(rows)]
    for i, line in (bad or {}).items():
        body[i] = line
    return ("timestamp,prompt_tokens,output_tokens\n" + "\n".join(body) + "\n").encode()


def shrink_pieces(monkeypatch) -> None:
    """Pieces of 4 kB (CSV), jobs of 1000 and batches of 300 rows (Parquet): many of each."""
    from kvmodel.textio import source
    from kvmodel.traffic import parquet

    monkeypatch.setattr(source, "_PIECE", 4096)
    monkeypatch.setattr(parquet, "_JOB_ROWS", 1000)
    monkeypatch.setattr(parquet, "_BATCH_ROWS", 300)


def reference_prefix_hits(lines) -> list[int]:
    """The Mooncake prefix rule written the plain way: one pass, one set of blocks seen so far."""
    seen, out = set(), []
    for rec in lines:
        lead = 0
        for block in rec["hash_ids"]:
            if block not in seen:
                break
            lead += 1
        out.append(min(MOONCAKE_BLOCK_TOKENS * lead, rec["input_length"]))
        seen.update(rec["hash_ids"])
    return out


def requests_like(prompt, weights=None, cached=None, arrival=None):
    """What the analyses read of a :class:`Requests`, built by hand."""
    from types import SimpleNamespace

    return SimpleNamespace(
        prompt_tokens=np.asarray(prompt), weights=weights, cached_tokens=cached, arrival_s=arrival
    )
