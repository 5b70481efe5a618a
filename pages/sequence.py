"""Sequence length: transfer vs prompt length per link and per attention layout.

The body lives in ui/views/sequence.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import sequence

router.page(sequence.render)
