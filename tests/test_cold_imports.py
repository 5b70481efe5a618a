"""What a cold start imports (bench/README.md, Session 8): the router loads the model, pandas and
the figures only after the first run's rerun, and the Overview does not load the trace readers.

Each check runs in a fresh interpreter, so modules imported by other tests do not hide an import.
"""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def loaded_after(statement: str, modules: tuple[str, ...]) -> dict[str, bool]:
    code = f"import sys\n{statement}\nprint(','.join(str(m in sys.modules) for m in {modules!r}))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         check=True)  # fmt: skip
    return dict(zip(modules, (v == "True" for v in out.stdout.strip().split(",")), strict=True))


def test_router_module_loads_neither_the_model_nor_pandas():
    """Streamlit walks the call stack once per process at the first element (the first run's
    st.rerun); with pandas and the model loaded that walk took ~60 ms longer."""
    found = loaded_after("import ui.router", ("pandas", "kvmodel", "kvview.params", "ui.urlstate"))
    assert found == dict.fromkeys(found, False)


@pytest.mark.parametrize("view", ["overview", "plan", "mitigations"])
def test_first_pages_do_not_load_the_trace_readers(view):
    found = loaded_after(f"import ui.views.{view}", ("kvmodel.traffic", "kvmodel.solve"))
    assert found["kvmodel.solve"]  # the check sees the imports it is about
    assert not found["kvmodel.traffic"]
