"""ui.serve, the server's entry (make run): the warm-up leaves the first page nothing to import,
its options reach Streamlit's ``run app.py`` unchanged, and a malformed catalog stops it at
start with a message instead of a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kvmodel import catalog
from ui import serve

ROOT = Path(__file__).resolve().parents[1]

# In a fresh process: the warm-up, then the first page (AppTest, as bench/cold_start.py times
# it); print the modules of these packages that the page still imported.
FIRST_PAGE = """
import sys
from streamlit.testing.v1 import AppTest
from ui import serve
serve.warm()
before = set(sys.modules)
at = AppTest.from_file(sys.argv[1], default_timeout=120)
at.run()
assert not at.exception, [e.value for e in at.exception]
assert at.get("plotly_chart"), "the first page drew no chart"
roots = {"kvmodel", "kvview", "ui", "pandas", "numpy", "plotly", "PIL", "pyarrow"}
print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in roots))
"""


def test_the_first_page_after_the_warm_up_imports_nothing_of_its_own():
    # what the planner's first page imported before the warm-up: pandas, numpy, Plotly's
    # encoder, Pillow (the favicon), pyarrow's pandas conversion, the model and the figures
    out = subprocess.run([sys.executable, "-c", FIRST_PAGE, str(ROOT / "app.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=180)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_options_reach_streamlit_run_app_py(monkeypatch):
    seen = {}
    monkeypatch.setattr(serve, "warm", lambda: seen.setdefault("warm", True))
    import streamlit.web.cli

    def run(prog_name):
        seen["argv"], seen["prog"] = list(sys.argv), prog_name

    monkeypatch.setattr(streamlit.web.cli, "main", run)
    monkeypatch.setattr(sys, "argv", ["ui/serve.py"])
    serve.main(["--server.port", "8599", "--server.baseUrlPath", "kvplanner"])
    assert seen == {
        "warm": True,
        "prog": "streamlit",
        "argv": ["streamlit", "run", str(ROOT / "app.py"), "--server.port", "8599",
                 "--server.baseUrlPath", "kvplanner"],
    }  # fmt: skip


def test_a_malformed_catalog_stops_the_server_with_a_message(monkeypatch, capsys):
    def broken():
        raise catalog.CatalogError("gpus.csv row 7, field hbm_gb: is empty")

    monkeypatch.setattr(catalog, "gpus", broken)
    with pytest.raises(SystemExit) as stop:
        serve.main(["--server.port", "8599"])
    assert str(stop.value) == (
        "KV Transfer Planner not started: a catalog in data/ is malformed: "
        "gpus.csv row 7, field hbm_gb: is empty"
    )


def test_make_run_serves_warmed_and_names_its_address():
    # make run starts ui.serve (the warm-up) and names the address it prints: without
    # --browser.serverAddress (or --server.address) a headless Streamlit asks an outside host
    # for the machine's public IP at start (streamlit/web/bootstrap.py, _print_urls)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\nrun:", 1)[1].split("\n\n", 1)[0].replace("\\\n", " ")
    assert "-m ui.serve " in recipe and "--browser.serverAddress localhost" in recipe
    assert "--server.port $(PORT)" in recipe and "--server.headless true" in recipe
