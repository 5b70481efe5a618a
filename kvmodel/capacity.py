"""Capacity plan: how many prefill and decode GPUs a workload needs at its latency targets, what
network, and how many GPUs the same traffic needs colocated.

:func:`plan` sizes one rate; :func:`rate_sweep` many (everything that does not depend on the
rate is computed once).  The pieces:

- :mod:`.capacity_workload`: the traffic (:class:`Workload`) and the targets (:class:`Slo`);
- :mod:`.capacity_pools`: the disaggregated prefill and decode pools (and the link's queues);
- :mod:`.capacity_colocated`: the colocated baseline with chunked prefill;
- :mod:`.capacity_queue`: Erlang C, M/G/c waits and their percentiles (fixed draws).

Whole instances: GPUs = instances × TP.  A TP given as None is searched (``tp_candidates``):
the plan keeps the TPs that need fewest GPUs among those that meet the targets.
"""

from __future__ import annotations

import math

import pandas as pd

from . import capacity_colocated as colo
from .capacity_pools import (
    Decode,
    Pools,
    Prefill,
    decode_side,
    pair_scenario,
    prefill_side,
    prefill_work_s,
    relinked,
    size_pools,
    ttft_function,
)
from .capacity_result import CapacityPlan
from .capacity_workload import Shape, Slo, Workload, shape
from .memory import USABLE_FRACTION, weights_bytes_per_gpu
from .scenario import Scenario
from .size import shard_heads
from .topology import domain_gpus, is_scale_up
from .wire import Volume, prefill_time_s

__all__ = [
    "CapacityPlan",
    "Slo",
    "Workload",
    "disaggregated_ttft_s",
    "plan",
    "rate_sweep",
    "tp_candidates",
]

TP_CHOICES = (1, 2, 4, 8, 16, 32, 64)
AUTO_TPS = 4  # the smallest TPs that hold the weights are searched


def tp_candidates(sc: Scenario) -> tuple[int, ...]:
    """TPs searched when a TP is ``auto``: the :data:`AUTO_TPS` smallest of :data:`TP_CHOICES`
    that split every KV-head group and leave memory beside the weights, within one node
    (``gpus_per_node``) when any fits there: tensor parallelism across nodes is the last
    resort of a model too large for one."""
    out = []
    for tp in TP_CHOICES:
        try:
            for g in sc.model.groups:
                shard_heads(g.kv_heads, tp)
        except ValueError:
            continue
        if out and tp > sc.gpu.gpus_per_node:
            break
        if weights_bytes_per_gpu(sc.model, tp) < sc.gpu.memory_bytes * USABLE_FRACTION:
            out.append(tp)
        if len(out) == AUTO_TPS:
            break
    if not out:
        raise ValueError(
            f"the weights of {sc.model.name} do not fit on {sc.gpu.name} at any TP up to "
            f"{TP_CHOICES[-1]}"
        )
    return tuple(out)


class _Prepared:
    """Everything of a plan that does not depend on the rate, built as it is asked for: a
    (prefill TP, decode TP) pair's transfer times only when its lower bound on GPUs can still
    beat the best pair found (``_best_pools``)."""

    def __init__(self, sc: Scenario, shp: Shape, slo: Slo, ptps, dtps, ctps):
        self.sc, self.shp, self.slo = sc, shp, slo
        self.decodes = {tp: decode_side(sc, shp, slo.tpot_s, tp) for tp in dtps}
        self.prefill_mean_s = {  # the work each request brings, for the lower bounds
            tp: float((shp.weights * prefill_work_s(
                sc.model, shp.moved, prefill_time_s(pair_scenario(sc, tp, tp), shp.moved))).sum())
            for tp in ptps
        }  # fmt: skip
        self.options = tuple(o for tp in ctps for o in colo.options(sc, shp, slo.tpot_s, tp))
        self._pairs: dict[tuple[int, int], Prefill] = {}
        # the last result of each pair and colocated shape, (rate, result): counts only grow
        # with the rate, so a sweep in rising order starts from them and prunes with them
        self.last: dict = {}

    def pair(self, tp: int, tp_decode: int) -> tuple[Prefill, Decode]:
        key = (tp, tp_decode)
        if key not in self._pairs:
            self._pairs[key] = prefill_side(self.sc, self.shp, tp, tp_decode)
        return self._pairs[key], self.decodes[tp_decode]

    def earlier(self, key, rps: float):
        """The result for ``key`` at the highest rate ≤ ``rps`` sized so far (None: none)."""
        hit = self.last.get(key)
        return hit[1] if hit is not None and hit[0] <= rps else None

    def bounds(self, rps: float) -> list[tuple[int, int, int]]:
        """(lower bound on GPUs, prefill TP, decode TP) of every pair, fewest first."""
        out = []
        for tp, mean_s in self.prefill_mean_s.items():
            for tpd, dec in self.decodes.items():
                slots = math.ceil(rps * self.shp.mean_output * dec.step_s / dec.batch - 1e-9)
                bound = math.ceil(rps * mean_s - 1e-9) * tp + max(slots, 1) * tpd
                before = self.earlier((tp, tpd), rps)
                out.append((max(bound, before.gpus if before else 0), tp, tpd))
        return sorted(out)


def _tps(sc: Scenario, tp: int | None) -> tuple[int, ...]:
    if tp is None:
        return tp_candidates(sc)
    if isinstance(tp, bool) or not isinstance(tp, int) or tp < 1:
        raise ValueError(f"TP must be a whole number >= 1 or auto, got {tp!r}")
    for g in sc.model.groups:
        shard_heads(g.kv_heads, tp)  # raises with the reason
    return (tp,)


def _prepare(sc: Scenario, workload: Workload, slo: Slo, prefill_tp, decode_tp, colocated_tp):
    shp = shape(workload, sc.model.max_context_tokens)
    if colocated_tp is None and decode_tp is not None:
        colocated_tp = decode_tp  # compare like with like when the TP is set
    return _Prepared(sc, shp, slo, _tps(sc, prefill_tp), _tps(sc, decode_tp),
                     _tps(sc, colocated_tp))  # fmt: skip


def _better(new, best) -> bool:
    """Meeting the targets first, then fewer GPUs, then a shorter TTFT."""
    return best is None or (not new.meets_slo, new.gpus, new.ttft_s) < (
        not best.meets_slo, best.gpus, best.ttft_s)  # fmt: skip


def _best_pools(prep: _Prepared, rps: float) -> Pools:
    slo = prep.slo
    best = None
    for bound, tp, tpd in prep.bounds(rps):
        if best is not None and best.meets_slo and bound > best.gpus:
            break  # the rest need more GPUs than the best already found
        pf, dec = prep.pair(tp, tpd)
        before = prep.earlier((tp, tpd), rps)
        start = before.prefill_instances if before else 1
        p = size_pools(pf, dec, prep.shp, rps, slo.ttft_s, slo.ttft_percentile, start=start)
        prep.last[(tp, tpd)] = (rps, p)
        if _better(p, best):
            best = p
    return best


def _best_colocated(prep: _Prepared, rps: float) -> colo.Colocated | None:
    best = None
    for i, opt in enumerate(prep.options):
        before = prep.earlier(("colocated", i), rps)
        bound = max(colo.bound(opt, prep.shp, rps), before.gpus if before else 0)
        if best is not None and best.meets_slo and bound > best.gpus:
            continue
        start = before.prefill_instances if before else 1
        c = colo.size(opt, prep.shp, rps, prep.slo.ttft_s, prep.slo.ttft_percentile, start=start)
        prep.last[("colocated", i)] = (rps, c)
        if _better(c, best):
            best = c
    return best


def _bandwidth_needed(prep: _Prepared, pools: Pools, rps: float) -> float | None:
    """Smallest per-NIC bandwidth [bytes/s] whose TTFT percentile still meets the target at
    these pools: a search on a 1 % grid from 1 MB/s (None: no bandwidth is enough)."""
    sc, slo, shp = prep.sc, prep.slo, prep.shp
    pf, dec = prep.pair(pools.prefill_tp, pools.decode_tp)
    s1 = pair_scenario(sc, pf.tp, pf.tp_decode)
    volume = Volume(s1, seq_len=shp.moved)

    def ok(bw: float) -> bool:
        other = relinked(pf, s1, shp, bw, volume)
        f = ttft_function(other, dec, shp, rps, slo.ttft_percentile)
        return f(pools.prefill_instances) <= slo.ttft_s

    lo, hi = 1e6, 1e15
    if not ok(hi):
        return None
    if ok(lo):
        return lo
    bad, good = 0, math.ceil(math.log(hi / lo) / math.log(1.01))  # lo·1.01^k, k = 0 … good
    while good - bad > 1:  # bisection: ~11 transfers
        mid = (bad + good) // 2
        bad, good = (bad, mid) if ok(lo * 1.01**mid) else (mid, good)
    return lo * 1.01**good


def _plan_at(prep: _Prepared, rps: float, price: float | None, *, network: bool) -> CapacityPlan:
    sc, slo, shp = prep.sc, prep.slo, prep.shp
    pools = _best_pools(prep, rps)
    c = _best_colocated(prep, rps)
    notes = list(pools.notes)
    if sc.prefill_s is not None or not sc.decode_step_estimated:
        notes.append("the plan estimates prefill and decode steps for every length and batch; "
                     "a fixed prefill or decode-step time is not used")  # fmt: skip
    if c is None:
        notes.append("no colocated instance holds a decode batch beside a prefilling request")
    if shp.clipped:
        notes.append(f"{shp.clipped:.1%} of requests are longer than the model's context; "
                     "counted at its length")  # fmt: skip
    if c is not None and not c.meets_slo:
        notes.append(
            "colocated: no chunk size meets both targets "
            + ("(TPOT)" if c.limit == "tpot" else "(TTFT)")
        )
    pf, _ = prep.pair(pools.prefill_tp, pools.decode_tp)
    pgpus = pools.prefill_instances * pools.prefill_tp
    dgpus = pools.decode_instances * pools.decode_tp
    if is_scale_up(sc.link) and pgpus + dgpus > domain_gpus(sc.gpu, sc.link):
        notes.append(f"{sc.link.name} joins at most {domain_gpus(sc.gpu, sc.link)} GPUs; the "
                     f"{pgpus + dgpus} disaggregated GPUs span several domains, and a transfer "
                     "between domains takes the scale-out network")  # fmt: skip
    cg = c.gpus if c else 0
    return CapacityPlan(
        rps=rps,
        prefill_gpus=pgpus,
        decode_gpus=dgpus,
        disaggregated_gpus=pgpus + dgpus,
        pd_ratio=pgpus / dgpus,
        colocated_gpus=cg,
        disaggregation_saves_gpus=cg - (pgpus + dgpus) if c else 0,  # nothing to compare
        ttft_s=pools.ttft_s,
        ttft_percentile=slo.ttft_percentile,
        tpot_s=pools.tpot_s,
        link_utilization=pools.link_utilization,
        meets_slo=pools.meets_slo,
        limits={
            "prefill": pools.prefill_limit,
            "decode": pools.decode_limit,
            "colocated": c.limit if c else "memory",
        },  # fmt: skip
        prefill_tp=pools.prefill_tp,
        decode_tp=pools.decode_tp,
        prefill_instances=pools.prefill_instances,
        decode_instances=pools.decode_instances,
        decode_batch=pools.decode_batch,
        colocated_tp=c.tp if c else 0,
        colocated_instances=c.instances if c else 0,
        colocated_chunk_tokens=c.chunk if c else 0,
        colocated_batch=c.batch if c else 0,
        colocated_ttft_s=c.ttft_s if c else math.inf,
        colocated_tpot_s=c.tpot_s if c else math.inf,
        colocated_meets_slo=bool(c and c.meets_slo),
        nic_bandwidth_needed_bytes_per_s=_bandwidth_needed(prep, pools, rps) if network else None,
        link_bandwidth_bytes_per_s=sc.link.bandwidth_bytes_per_s,
        nics_per_transfer=pf.streams,
        demanded_bytes_per_s=rps * pf.mean_wire_bytes,
        cost_per_hour=None if price is None else (pgpus + dgpus) * price,
        colocated_cost_per_hour=None if price is None else cg * price,
        notes=tuple(notes),
    )


def _price(gpu_price_per_hour) -> float | None:
    if gpu_price_per_hour is None or gpu_price_per_hour == 0:
        return None
    p = gpu_price_per_hour
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p < math.inf:
        raise ValueError(f"the GPU price must be > 0 $/GPU-hour (0: none), got {p!r}")
    return float(p)


def plan(sc: Scenario, workload: Workload, slo: Slo, *, prefill_tp: int | None = None,
         decode_tp: int | None = None, colocated_tp: int | None = None,
         gpu_price_per_hour: float | None = None) -> CapacityPlan:  # fmt: skip
    """The capacity plan of ``workload`` on ``sc``'s model, GPU, link and stack (module doc).

    A TP of None is searched.  ``colocated_tp`` None: the decode TP when it is given, else
    searched.  ``gpu_price_per_hour`` [$ per GPU-hour] adds the cost (None or 0: none).
    """
    price = _price(gpu_price_per_hour)
    prep = _prepare(sc, workload, slo, prefill_tp, decode_tp, colocated_tp)
    return _plan_at(prep, workload.rps, price, network=True)


def disaggregated_ttft_s(sc: Scenario, workload: Workload, slo: Slo, *, prefill_tp: int,
                         decode_tp: int, prefill_instances: int) -> float:  # fmt: skip
    """TTFT [s] at ``slo.ttft_percentile`` of ``prefill_instances`` prefill instances at
    ``prefill_tp`` sending to decode TP ``decode_tp``: the plan's TTFT at pools held fixed."""
    prep = _prepare(sc, workload, slo, prefill_tp, decode_tp, decode_tp)
    pf, dec = prep.pair(prefill_tp, decode_tp)
    return ttft_function(pf, dec, prep.shp, workload.rps, slo.ttft_percentile)(prefill_instances)


SWEEP_COLUMNS = ("rps", "prefill_gpus", "decode_gpus", "disaggregated_gpus", "colocated_gpus",
                 "prefill_limit", "decode_limit", "colocated_limit", "link_utilization",
                 "ttft_s", "meets_slo", "colocated_ttft_s", "colocated_meets_slo",
                 "prefill_tp", "decode_tp", "colocated_tp", "pd_ratio",
                 "disaggregation_saves_gpus", "tpot_s", "colocated_tpot_s",
                 "prefill_instances", "decode_instances", "colocated_instances",
                 "cost_per_hour", "colocated_cost_per_hour")  # fmt: skip


def rate_sweep(sc: Scenario, workload: Workload, slo: Slo, rates, *,
               prefill_tp: int | None = None, decode_tp: int | None = None,
               colocated_tp: int | None = None,
               gpu_price_per_hour: float | None = None) -> pd.DataFrame:  # fmt: skip
    """One row per rate [requests/s] (``SWEEP_COLUMNS``: the plan's fields, limits by pool);
    the workload's own rate is ignored.  No NIC-bandwidth search (``plan`` has it)."""
    price = _price(gpu_price_per_hour)
    prep = _prepare(sc, workload, slo, prefill_tp, decode_tp, colocated_tp)
    for r in rates:
        if isinstance(r, bool) or not 0 < float(r) < math.inf:
            raise ValueError(f"every rate must be > 0 requests/s, got {r!r}")
    plans = {r: _plan_at(prep, r, price, network=False) for r in sorted({float(r) for r in rates})}
    rows = []
    for r in rates:
        p = plans[float(r)]
        row = {k: getattr(p, k) for k in SWEEP_COLUMNS if hasattr(p, k)}
        row.update({f"{pool}_limit": limit for pool, limit in p.limits.items()})
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))
