"""The app link that opens a given Scenario (kvview.scenario_link): round trips, custom links."""

from urllib.parse import parse_qsl, urlsplit

import pytest

from kvmodel.build import build_scenario
from kvview import params as P
from kvview.scenario_link import share_link, share_query


def test_share_link_round_trips():
    sc = build_scenario(
        model="llama-3-70b", link="ib-hdr", seq_len=4096, batch=4, compression="int8",
        layerwise=True, tp=2, prefill_ms=120.0, efficiency=0.8, share_target=0.25,
    )  # fmt: skip
    url = share_link(sc, "https://planner.example/app")
    assert url.startswith("https://planner.example/app?")
    values, warnings, imported = P.parse_query(dict(parse_qsl(urlsplit(url).query)))
    assert warnings == []
    assert P.scenario_from_values(values, imported) == sc
    custom = build_scenario(model="llama-3-70b", bandwidth_gbs=40.0, latency_us=3.0)
    q, _ = share_query(custom)
    assert (q["link"], q["bw"], q["lat"]) == ("custom", "40", "3")
    # inputs the app's link cannot carry: no link rather than a wrong one
    q, gaps = share_query(build_scenario(model="llama-3-70b", mfu=0.4))
    assert q is None and gaps == ["Prefill MFU 0.4"]
    assert share_link(build_scenario(model="llama-3-70b", batch=10_000)) is None  # clamped
    with pytest.raises(ValueError, match="base_url"):
        share_link(sc, "file:///tmp/x")
