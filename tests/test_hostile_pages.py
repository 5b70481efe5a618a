"""Issue 23: every page opened from a hostile link shows messages, never an exception.

A link's values go through one clamp-and-warn path typed by their ``kvmodel.inputs`` row
(``kvview.params``), and the page widgets type their value, bounds and step by the same row
(``ui.widgets.page_widget``), so no link reaches a widget with an int among floats.  Each of
the 11 pages is opened straight from each link (where a shared link lands), through AppTest.

The two links of the issue are pinned to their message; the row-made links (every URL input
at once set to one kind of bad value) open every page in the fast suite; the corpus's links
(``tests/data/hostile/links.json``) open every page in the slow one.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from app_helpers import APP
from streamlit.testing.v1 import AppTest

from kvmodel import inputs as I

ROOT = Path(__file__).resolve().parents[1]
PAGES = [f"pages/{name}.py" for name in ("overview", "interconnects", "sequence", "mitigations",
         "plan", "compare", "traffic", "capacity", "measure", "recipes", "models")]  # fmt: skip
NUMBERS = ("int", "float", "flag")
BAD_NUMBERS = {
    "negative": "-3",  # below every range; an int 0 once reached Traffic's float rate box
    "fraction": "0.5",  # not whole, for the whole-number inputs
    "huge": "1e308",
    "digits": "9" * 400,
    "nan": "nan",
    "minus-inf": "-inf",
    "subnormal": "5e-324",
}
MARKDOWN = "![x](http://attacker.example/x.png)"


def row_links() -> dict[str, dict[str, str]]:
    """One link per kind of bad number, every numeric URL input set to it; one with every
    other input set to markdown."""
    links = {
        kind: {"stack": "ideal", **{r.name: value for r in I.URL_INPUTS if r.kind in NUMBERS}}
        for kind, value in BAD_NUMBERS.items()
    }
    links["markdown"] = {r.name: MARKDOWN for r in I.URL_INPUTS if r.kind not in NUMBERS}
    return links


def corpus_links() -> list[dict[str, str]]:
    return json.loads((ROOT / "tests" / "data" / "hostile" / "links.json").read_text())


def open_at(page: str, query: dict) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params.update(query)
    at.switch_page(page)
    at.run()
    return at


def no_exception(at: AppTest, query) -> None:
    assert not at.exception, (query, [e.value[:300] for e in at.exception])
    for box in (*at.error, *at.warning):  # user text never renders as markdown
        assert "](http" not in box.value, box.value


def test_capacity_sweep_past_the_instance_limit_is_an_error_box():
    # issue 23's link: 1,000,000 requests/s can be planned, but the sweep up to ten times that
    # needs 11,915,384 instances in a pool, over kvmodel.capacity.queue.MAX_SERVERS
    at = open_at("pages/capacity.py", {"wl": "fixed", "rps": "1000000", "stack": "mooncake"})
    no_exception(at, "capacity")
    (box,) = [e.value for e in at.error]
    assert box.startswith("No sweep from 100,000 to 10,000,000 requests/s: a pool would need ")
    assert "more than the 10,000,000 this model sizes" in box
    assert any(m.label == "Disaggregated GPUs" for m in at.metric)  # the plan itself is shown


def test_traffic_negative_values_are_adjusted_with_a_warning():
    # issue 23's link: rps=-3 was clamped to the int 0 and Traffic's float box raised
    # StreamlitMixedNumericTypesError; now it is 0.0 with the usual warning
    at = open_at("pages/traffic.py", {"minlen": "-1", "hit": "-50", "rps": "-3", "crit": "share"})
    no_exception(at, "traffic")
    text = at.warning[0].value
    assert text.startswith("Some inputs were adjusted")
    for part in ("minlen=-1 is outside", "hit=-50 is outside", "rps=-3 is outside"):
        assert part in text
    at.session_state["traffic_load_open"] = True  # the rate's box: drawn while open
    at.run()
    no_exception(at, "traffic")
    assert at.number_input(key="w_rps").value == 0.0
    assert at.number_input(key="w_minlen").value == 0
    assert at.session_state["crit"] == "share"


@pytest.mark.parametrize("kind", list(row_links()))
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).stem)
def test_every_page_takes_a_row_made_hostile_link(page, kind):
    query = row_links()[kind]
    at = open_at(page, query)
    no_exception(at, query)
    if kind != "markdown":  # the bad numbers are named in the warning
        assert at.warning and at.warning[0].value.startswith("Some inputs were adjusted")


@pytest.mark.slow
@pytest.mark.parametrize("query", corpus_links(), ids=lambda q: ",".join(q)[:30])
@pytest.mark.parametrize("page", PAGES, ids=lambda p: Path(p).stem)
def test_every_page_takes_the_corpus_links(page, query):
    no_exception(open_at(page, query), query)
