"""The app link that opens a given Scenario (for the report and the CLI).  No streamlit here.

``share_query`` turns a ``Scenario`` back into the app's URL query (``kvview.params``), or says
what the link cannot carry; ``share_link`` puts it behind a base address.
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode, urlsplit

from kvmodel import catalog
from kvmodel.build import inputs_from_scenario
from kvmodel.modelcodec import MAX_ENCODED_CHARS, encode_model
from kvmodel.transfer import Scenario
from kvview import params as P

DEFAULT_BASE_URL = "http://localhost:8501/"


def share_query(sc: Scenario) -> tuple[dict[str, str] | None, list[str]]:
    """The app's URL query for ``sc`` (``kvview.params.to_link_query``), or None and what it cannot
    carry.

    The app's link has no field for MFU, KV block tokens, descriptor cost, KV scale group or
    compression group, and clamps values to its input ranges; a scenario that needs any of that
    gets no link rather than a link to a different scenario.
    """
    values, gaps = inputs_from_scenario(sc)  # every row of kvmodel.inputs, reversed
    if catalog.models().get(sc.model.id) != sc.model:
        mid = P.imported_id(sc.model.id)  # a cfg- slug, as parse_query keeps it
        cfg = encode_model(replace(sc.model, id=mid))
        if len(cfg) > MAX_ENCODED_CHARS:
            gaps.append("a model too large to carry in a link")
        values.update(model=mid, cfg=cfg)
    query = P.to_link_query(values)  # the short link: what differs from the defaults
    _, warnings, _ = P.parse_query(query)
    gaps += warnings
    return (None, gaps) if gaps else (query, [])


def check_url(url: str, name: str) -> None:
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{name} must be an http:// or https:// address, got {url!r}")


def share_link(sc: Scenario, base_url: str = DEFAULT_BASE_URL) -> str | None:
    """``base_url?<query>`` opening ``sc`` in the app, or None when the link cannot carry it."""
    check_url(base_url, "base_url")
    query, _ = share_query(sc)
    if query is None:
        return None
    text = urlencode(query)
    return f"{base_url.split('?')[0]}?{text}" if text else base_url.split("?")[0]
