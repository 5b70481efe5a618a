"""Traffic: what fraction of a real request-length distribution gains from disaggregation.

The body lives in ui/views/traffic.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import traffic

router.page(traffic.render)
