"""KV Transfer Planner: the entrypoint (``streamlit run app.py``).

The router (the pages, the shared scenario controls rendered before every page) is
:mod:`ui.router`, importable and tested; a page file opened on its own routes through it too.
"""

from ui import router

router.run()
