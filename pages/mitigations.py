"""Mitigations: transfer compression, layer-wise sending, NVLink, and their combinations.

The body lives in ui/views/mitigations.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import mitigations

router.page(mitigations.render)
