"""Plan: what it takes to meet the target, and which input moves TTFT most.

The body lives in ui/views/plan.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import plan

router.page(plan.render)
