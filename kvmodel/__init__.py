"""KV Transfer Planner's cost model: pure Python + numpy, never imports streamlit.

Start with :func:`kvmodel.build.build_scenario` and :func:`kvmodel.transfer.evaluate`.
"""

from .build import build_scenario
from .transfer import Evaluation, Scenario, critical_seq_len, evaluate, transfer

__all__ = ["Evaluation", "Scenario", "build_scenario", "critical_seq_len", "evaluate", "transfer"]
