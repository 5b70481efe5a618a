"""Overview: what the transfer costs for the sidebar's scenario.

The body lives in ui/views/overview.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import overview

router.page(overview.render)
