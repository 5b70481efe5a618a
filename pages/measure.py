"""Measured vs model: scrapes, perftest, nsys and timing files set beside the sidebar's scenario.

The body lives in ui/views/measure.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import measure

router.page(measure.render)
