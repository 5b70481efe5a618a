"""The capacity plan as a package, one concept a module.

- :mod:`.workload`: the traffic (:class:`Workload`) and the targets (:class:`Slo`);
- :mod:`.pools`: the disaggregated prefill and decode pools (and the link's queues);
- :mod:`.colocated`: the colocated baseline with chunked prefill;
- :mod:`.queue`: Erlang C, M/G/c waits and their percentiles (fixed draws);
- :mod:`.prep`: the parallelisms searched, and what plans share before any rate is sized;
- :mod:`.result`: the typed result (:class:`CapacityPlan`);
- :mod:`.plan`: :func:`plan`, :func:`rate_sweep`, :class:`Sizing`, :func:`network_plans`.

``from kvmodel import capacity`` gives the public names of :mod:`.plan`.
"""

from kvmodel.capacity.plan import *  # noqa: F403 (the package's public face is plan's __all__)
from kvmodel.capacity.plan import __all__  # noqa: F401
