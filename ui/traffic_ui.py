"""Cached traffic loading for the Traffic page: a parse happens once per file, never per rerun.

Traces are read as counts per prompt length (``per_request=False``: a 10-million-request trace
is kept as a few thousand numbers, not its columns), kept in ``ui.perf.SAMPLES`` (no copy
per rerun) and bounded in number; the moved-token histogram is cached per
prefix-cache setting.  The analyses are memoised per scenario and ``mix`` object (``ui.memo``).
"""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from kvmodel.traffic import load_traffic, mix_from_requests, sample_path
from kvview.mdtext import md_escape, shown
from ui import perf
from ui.widgets import page_widget


def sample_requests(sample_id: str):
    """A shipped trace as counts per length, read once per process (``ui.perf.SAMPLES``)."""
    return perf.SAMPLES(_read_sample, sample_id)


def _read_sample(sample_id: str):
    return load_traffic(sample_path(sample_id), per_request=False)


def sample_select(label: str, **kwargs) -> str:
    """The shipped sample chosen (the ``trace`` input), as a select box labelled ``label``."""
    from kvmodel.traffic import SAMPLES

    return page_widget(st.selectbox, label, "trace", options=list(SAMPLES),
                       format_func=lambda k: SAMPLES[k][1], **kwargs)  # fmt: skip


def upload_requests(file_id: str, name: str, columns: tuple, data: bytes, progress=None):
    """An upload read once per (file, column choice); later reruns get the same object.

    Not ``st.cache_resource``: it records the progress bar's updates made inside the function
    and replays them on every later hit, into a bar of a finished run, which fails
    (``CacheReplayClosureError``) on the first control change after an upload.  The key is the
    upload's id, not its bytes, and the entry does not keep the bytes or the callback.
    """
    return perf.UPLOADS.call(
        _read_upload, (data, name, columns, progress), {}, key=(file_id, name, columns)
    )


KEPT = "traffic_kept"  # session key: the last upload read in this session
SOURCE = "traffic_source"  # session key of the page's source radio (widget: w_traffic_source)
UPLOAD = "Upload"
SOURCES = ["Sample trace", UPLOAD]


@dataclass(frozen=True)
class KeptUpload:
    """An upload's parsed requests (counts per length: small), kept for the session so that
    leaving the Traffic page, whose uploader then comes back empty, does not lose it; the
    Compare page uses it too."""

    req: object
    key: tuple
    label: str


def keep_upload(req, key: tuple, label: str) -> None:
    st.session_state[KEPT] = KeptUpload(req, key, label)


def kept_upload() -> KeptUpload | None:
    return st.session_state.get(KEPT)


def upload_chosen() -> bool:
    """The Traffic page is set to analyse an upload (whether or not one is loaded)."""
    return st.session_state.get(SOURCE) == UPLOAD


def columns_note(req, name: str) -> str:
    """Which columns of the file were read as what (so a wrong guess can be seen)."""
    c = req.columns
    what = {
        "prompt_tokens": "bucket bounds" if c.get("weights") else "prompt lengths",
        "weights": "counts" if c.get("weights_kind") == "count" else "shares",
        "output_tokens": "output lengths",
        "arrival_s": "arrival times",
        "cached_tokens": "prefix-cache hits",
    }
    unit = f" (read as {c['time_unit']})" if c.get("time_unit") else ""
    used = [
        f"{label} from {shown(c[f])}" + (unit if f == "arrival_s" else "")
        for f, label in what.items()
        if c.get(f)
    ]
    if c.get("label_sets"):
        used.append(f"summed over the series {md_escape(c['label_sets'])}")
    kind = {"generic-table": "a table"}.get(req.fmt, req.fmt)
    head = f"Read {md_escape(name)} ({c.get('container', '?')}, {kind}): "  # markdown: escaped
    return head + (", ".join(used) or "–") + "."


def _read_upload(data: bytes, name: str, columns: tuple, progress):
    prompt, output, time = columns
    return load_traffic(
        data,
        name=name,
        prompt_column=prompt or None,
        output_column=output or None,
        time_column=time or None,
        progress=progress,
        per_request=False,
    )


def mix(source_key: tuple, hit_ratio: float | None, req):
    """The traffic mix of ``req`` (``source_key`` names the trace: a sample's id or an upload's
    key), made once per (trace, prefix-cache hit ratio) and then the same object: the analyses
    are memoised on its identity.  Not ``st.cache_resource``: its lookup cost ~0.25 ms a call,
    a twentieth of Compare's rerun after a sidebar change (bench/README.md, Session 21)."""
    return perf.MIXES.call(
        mix_from_requests, (req,), {"hit_ratio": hit_ratio}, key=(source_key, hit_ratio)
    )


def _analyse(sc, minlen: int, crit: str, mix):
    from kvmodel import traffic as tr

    return {
        "regions": tr.regions(sc, mix, min_seq_len=minlen, criterion=crit),
        "region": tr.classify(sc, mix.tokens, min_seq_len=minlen, criterion=crit,
                              prefix=mix.prefix),
        "window": tr.recommended_window(sc, mix, min_seq_len=minlen, criterion=crit),
    }


def analyse(sc, minlen: int, crit: str, mix):
    """Regions and the window, computed once per input.

    ``mix`` comes from ``mix()`` (one object per trace and hit ratio), so it keys by identity.
    """
    return perf.cached_with_spinner("Analysing the traffic…", _analyse, sc, minlen, crit, mix)


def _compare(sc, minlen: int, crit: str, links: tuple, mix):
    from kvmodel import traffic as tr

    return tr.comparison(sc, mix, link_ids=list(links), compressions=("none", "int8", "int4"),
                         min_seq_len=minlen, criterion=crit)  # fmt: skip


def compare(sc, minlen: int, crit: str, links: tuple, mix):
    """The link × compression comparison, computed once per input: apart from ``analyse``, so
    the page's chart goes out before it is computed (~20 ms of a sidebar change with the
    default interconnects; bench/README.md, Session 26)."""
    return perf.cached_with_spinner(
        "Comparing the interconnects…", _compare, sc, minlen, crit, links, mix
    )


def load(sc, rps, mix):
    """Link load and queueing; independent of the region thresholds."""
    from kvmodel import traffic as tr

    return perf.cached_with_spinner("Simulating the link queue…", tr.load, sc, mix, rps=rps)
