"""Compare's charts (kvview.figures.compare): the transfer on its own axis with its share of TTFT,
and each variant's change against A coloured and labelled by verdict."""

from numpy.testing import assert_allclose

from kvmodel.build import build_scenario
from kvmodel.compare import changes, compare_frame
from kvmodel.transfer import evaluate
from kvview.figures import compare as F


def _table():
    evs = [
        ("A (sidebar)", evaluate(build_scenario())),
        ("B", evaluate(build_scenario(compression="int8"))),
        ("C", evaluate(build_scenario(batch=4))),
    ]
    return compare_frame(evs), evs


def test_transfer_chart_shows_each_scenarios_transfer_and_share():
    table, evs = _table()
    fig = F.figure_compare_transfer(table)
    bar = fig.data[0]
    assert list(bar.y) == ["A (sidebar)", "B", "C"]
    assert_allclose(list(bar.x), [ev.exposed_s * 1e3 for _, ev in evs])
    a = evs[0][1]
    assert bar.text[0] == f"{a.exposed_s * 1e3:,.2f} ms · {a.transfer_share_of_ttft:.1%} of TTFT"
    assert fig.layout.xaxis.title.text == "exposed transfer [ms]"
    assert "share of TTFT" in fig.layout.title.text and "% of TTFT" in bar.hovertemplate


def test_change_chart_colours_and_labels_by_verdict():
    table, evs = _table()
    fig = F.figure_compare_change(changes(table))
    ttft, transfer = fig.data
    assert list(ttft.y) == ["B", "C"]  # A is the reference: no bar of its own
    a, b, c = (ev for _, ev in evs)
    assert_allclose(list(ttft.x), [(b.ttft_s - a.ttft_s) * 1e3, (c.ttft_s - a.ttft_s) * 1e3])
    assert_allclose(list(transfer.x), [(b.exposed_s - a.exposed_s) * 1e3,
                                       (c.exposed_s - a.exposed_s) * 1e3])  # fmt: skip
    # INT8 halves the bytes (better, blue); four prompts take longer (worse, orange)
    assert list(ttft.marker.color) == [F.VERDICT_COLORS["better"], F.VERDICT_COLORS["worse"]]
    assert ttft.text[0].startswith("−") and ttft.text[0].endswith("better")
    assert ttft.text[1].startswith("+") and ttft.text[1].endswith("worse")
    assert fig.layout.xaxis.title.text == "Change in TTFT vs A [ms]"
    assert fig.layout.xaxis2.title.text == "Change in exposed transfer vs A [ms]"
