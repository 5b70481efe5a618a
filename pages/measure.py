"""Measured vs model: scrapes, perftest, nsys and timing files set beside the sidebar's scenario.

The body lives in ui/views/measure.py (compiled once, importable, tested through AppTest).
"""

from ui.views import measure

measure.render()
