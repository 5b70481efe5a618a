"""kvmodel.compare: which way each compared number is better, changes against A, and the
default variants made from A (each differs from it)."""

import math

import pandas as pd
import pytest
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.compare import (
    DIRECTIONS,
    Direction,
    changes,
    compare_frame,
    default_variants,
    judge,
    next_faster_link,
)
from kvmodel.sweeps import compare_table
from kvmodel.transfer import evaluate


def test_every_direction_names_a_compared_number():
    table = compare_table([("A", evaluate(build_scenario()))])
    for key, d in DIRECTIONS.items():
        assert key == d.key and d.why
        assert key in table.columns or key == "fraction_gain"
    assert DIRECTIONS["ttft_s"].words == "lower is better"
    assert DIRECTIONS["critical_seq_len"].words == "higher is better"
    assert DIRECTIONS["fraction_gain"].better == "higher"
    with pytest.raises(ValueError, match="better must be"):
        Direction("x", "smaller", "")


@pytest.mark.parametrize(
    ("key", "value", "ref", "verdict"),
    [
        ("ttft_s", 0.10, 0.12, "better"),  # lower TTFT is better
        ("ttft_s", 0.12, 0.10, "worse"),
        ("wire_bytes", 2e9, 1e9, "worse"),
        ("transfer_share_of_ttft", 0.05, 0.05 * (1 + 1e-12), "same"),  # rounding, not a change
        ("critical_seq_len", 2000, 1000, "better"),  # a longer critical length is better
        ("critical_seq_len", None, 1000, "better"),  # never reached: the best there is
        ("critical_seq_len", 1000, None, "worse"),
        ("critical_seq_len", None, None, "same"),
        ("fraction_gain", 0.4, 0.5, "worse"),  # less traffic gaining is worse
    ],
)
def test_judge(key, value, ref, verdict):
    assert judge(key, value, ref) == verdict


def test_changes_against_the_first_row():
    # hand numbers: B halves A's 20 ms transfer, C adds half; B's critical length is never
    # reached (None), C's halves A's 1,000 tokens
    table = pd.DataFrame(
        {"exposed_transfer_s": [0.020, 0.010, 0.030], "critical_seq_len": [1000, None, 500]},
        index=["A", "B", "C"],
        dtype=object,
    )
    ch = changes(table).set_index(["label", "key"])
    assert list(ch.index.get_level_values("key").unique()) == [
        "exposed_transfer_s", "critical_seq_len"
    ]  # fmt: skip
    b, c = ch.loc[("B", "exposed_transfer_s")], ch.loc[("C", "exposed_transfer_s")]
    assert_allclose([b["change"], b["relative"], c["change"], c["relative"]],
                    [-0.010, -0.5, 0.010, 0.5])  # fmt: skip
    assert (b["verdict"], c["verdict"]) == ("better", "worse")
    assert ch.loc[("A", "exposed_transfer_s"), "verdict"] == "same"
    nb = ch.loc[("B", "critical_seq_len")]
    assert nb["verdict"] == "better" and math.isnan(nb["change"]) and math.isinf(nb["value"])
    assert ch.loc[("C", "critical_seq_len"), "verdict"] == "worse"
    assert ch.loc[("C", "critical_seq_len"), "better"] == "higher"


def test_compare_frame_adds_the_traffic_share_that_gains():
    a, b = build_scenario(), build_scenario(batch=8)
    table = compare_frame([("A", evaluate(a)), ("B", evaluate(b))], fraction_gain=(0.4, 0.2))
    assert list(table["fraction_gain"]) == [0.4, 0.2]
    assert table.loc["B", "batch"] == 8 and table.loc["A", "gpu"] == a.gpu.name
    ch = changes(table).set_index(["label", "key"])
    assert ch.loc[("B", "fraction_gain"), "verdict"] == "worse"
    assert ch.loc[("B", "ttft_s"), "verdict"] == "worse"  # 8 prompts prefill longer


@pytest.mark.parametrize(
    ("link", "faster"),
    [
        ("ib-ndr", "ib-xdr"),  # 50 → 100 GB/s per direction, same kind
        ("100gbe", "200gbe"),  # 12.5 → 25 GB/s
        ("nvlink4", "nvlink5"),  # 450 → 900 GB/s, scale-up stays scale-up
        ("ib-xdr", None),  # the fastest scale-out link (800 GbE is as fast, not faster)
        ("custom", None),
    ],
)
def test_next_faster_link(link, faster):
    assert next_faster_link(link) == faster


def test_next_faster_link_is_always_faster():
    links = {lk.id: lk for lk in catalog.links().values()}
    for lid, lk in links.items():
        nxt = next_faster_link(lid)
        if nxt is not None:
            assert links[nxt].bandwidth_bytes_per_s > lk.bandwidth_bytes_per_s


A = {"comp": "none", "link": "100gbe", "lw": 0, "stack": "mooncake", "batch": 1}


@pytest.mark.parametrize(
    ("a", "variants"),
    [
        (A, [{"comp": "int8"}, {"link": "200gbe"}, {"lw": "1"}]),
        # A on IB NDR: the old default's 'link:ib-ndr' was A itself; now the next faster link
        ({**A, "link": "ib-ndr"}, [{"comp": "int8"}, {"link": "ib-xdr"}, {"lw": "1"}]),
        ({**A, "comp": "int8", "link": "ib-xdr"},
         [{"comp": "int4"}, {"lw": "1"}, {"stack": "ideal"}]),
        # nothing else left to change: A at twice its batch fills in
        ({**A, "comp": "int8", "link": "ib-xdr", "lw": 1, "stack": "ideal", "batch": 4},
         [{"comp": "int4"}, {"batch": "8"}]),
    ],
)  # fmt: skip
def test_default_variants_differ_from_a(a, variants):
    got = default_variants(a)
    assert got == variants
    for v in got:
        ((key, value),) = v.items()
        assert str(a[key]) != value
