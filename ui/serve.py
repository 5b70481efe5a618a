"""The server's entry (``make run``): ``python -m ui.serve [options]`` is
``python -m streamlit run app.py [options]`` with the process warmed before it listens.

Streamlit imports a page's modules when the first visitor opens it, so on a freshly started
server that visitor waited for pandas, numpy, Plotly's encoder, the model and the figures
(~330 ms of a ~420 ms first page; bench/README.md, Session 27).  :func:`warm` does that work
once at start, before the health check answers, and reads the catalogs, so a malformed catalog
stops the server at start instead of failing the first page.  Every option is Streamlit's own
(``--server.port``, ``--server.baseUrlPath``, ...); ``streamlit run app.py`` still works, with
the slower first page.

``bench/cold_start.py`` times the first page with and without this warm-up;
``tests/test_serve.py`` checks that the first page imports nothing the warm-up left out.
"""

from __future__ import annotations

import importlib
import inspect
import sys

from ui.router import PAGES, ROOT

# what the pages import at their top, and the lazy imports of the first page's elements: the
# charts' export menu, Streamlit's favicon (Pillow) and material icons, the traces' CSV reader
_MODULES = (
    "ui.share",
    "ui.sidebar",
    "ui.urlstate",
    *(f"ui.views.{file}" for file, _title, _icon, _url in PAGES),
    "kvview.figures.kit",
    "kvview.figures.scale",
    "PIL.Image",
    "PIL.PngImagePlugin",
    "pyarrow.csv",
    "streamlit.material_icon_names",
)


def warm() -> None:
    """Import what the pages import, read the catalogs, and fill the module index Streamlit's
    first element walks (``inspect.stack``, once per process: ~60 ms with pandas loaded)."""
    for name in _MODULES:
        importlib.import_module(name)
    import pandas as pd
    import plotly.graph_objects as go
    import plotly.io as pio
    import pyarrow as pa

    from kvmodel import catalog

    for table in (catalog.models, catalog.gpus, catalog.links, catalog.stacks, catalog.frameworks):
        table()
    # Plotly loads its JSON encoder and each trace type's validators on first use, pyarrow its
    # pandas conversion (Streamlit's tables and data grids)
    pio.to_json(go.Figure([go.Scatter(x=[0], y=[0]), go.Bar(x=[0], y=[0])]))
    pa.Table.from_pandas(pd.DataFrame({"number": [1.0], "text": ["a"]}))
    inspect.getmodule(inspect.currentframe())  # indexes every loaded module by its file, once


def main(argv: list[str] | None = None) -> None:
    """Warm the process, then run Streamlit's ``run app.py`` with ``argv``'s options."""
    from kvmodel.catalog import CatalogError

    try:
        warm()
    except CatalogError as exc:  # names the file, the row and the field
        sys.exit(f"KV Transfer Planner not started: a catalog in data/ is malformed: {exc}")
    from streamlit.web import cli

    options = sys.argv[1:] if argv is None else argv
    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *options]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main()
