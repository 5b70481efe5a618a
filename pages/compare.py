"""Compare: the sidebar's scenario (A) against up to three variants, all in one link.

The body lives in ui/views/compare.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import compare

router.page(compare.render)
