"""Capacity: how many prefill and decode GPUs the traffic needs, disaggregated vs colocated.

The body lives in ui/views/capacity.py (compiled once, importable, tested through AppTest).
"""

from ui import router
from ui.views import capacity

router.page(capacity.render)
