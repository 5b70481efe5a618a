"""Interconnects: transfer time per link and batch against the decode-step band.

The body lives in ui/views/interconnects.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import interconnects

router.page(interconnects.render)
