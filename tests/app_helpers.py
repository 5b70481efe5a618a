"""AppTest helpers shared by the page tests: open the app (with a link, on a page), read its
tables and metrics."""

from pathlib import Path

from html_tables import read_html_table
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
PAGES = [
    "pages/overview.py",
    "pages/interconnects.py",
    "pages/sequence.py",
    "pages/mitigations.py",
    "pages/models.py",
    "pages/capacity.py",
]


# The source article's arithmetic (wire speed, a 30 ms step, TP 1): the scenario the page tests
# compare with kvmodel.build.build_scenario's defaults.  The app's own defaults (a measured
# stack, an estimated step, TP 8) are tested with article=False.
ARTICLE = {"stack": "ideal", "step": "30", "tp": "1"}


def app(query=None, page=None, *, article=True) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    query = {**ARTICLE, **(query or {})} if article else query
    if query:
        at.query_params.update(query)
    at.run()
    if page:
        at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


TRAFFIC_BOXES = ("traffic_moves_open", "traffic_load_open")  # ui/views/traffic.py MOVES, LOAD


def opened(at, *keys: str) -> AppTest:
    """The page with its boxes drawn only while open (an expander's or tab's session key)
    opened, as a click on each does."""
    for key in keys:
        at.session_state[key] = True
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def editing(at) -> AppTest:
    """Compare with its variants' editor open (the "Edit B–D" toggle; off, the changes are
    words)."""
    at.toggle(key="cmp_edit").set_value(True).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def shown_table(at, index=False):
    """The first HTML table (kvview.tables) on the page, as texts."""
    for md in at.markdown:
        if "<table" in md.value:
            return read_html_table(md.value, index=index)[0]
    raise AssertionError("no table on the page")


def metric(at, label):
    for m in at.metric:
        if m.label == label:
            return m.value
    raise AssertionError(f"no metric {label!r} in {[m.label for m in at.metric]}")


LINK = {
    "model": "llama-3.1-8b",
    "seq": "4096",
    "batch": "8",
    "link": "ib-ndr",
    "comp": "int8",
    "step": "25",
    "tp": "2",
    "lw": "1",
    "prefill": "120",
}
