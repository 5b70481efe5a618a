"""Capacity plan: how many prefill and decode GPUs a workload needs at its latency targets, what
network, and how many GPUs the same traffic needs colocated.

:func:`plan` sizes one rate; :func:`rate_sweep` many (everything that does not depend on the
rate is computed once); a :class:`Sizing` keeps each rate's plan for a dashboard that moves the
rate (:func:`sweep_rates` draws rates on a fixed grid).  The pieces:

- :mod:`.workload`: the traffic (:class:`Workload`) and the targets (:class:`Slo`);
- :mod:`.pools`: the disaggregated prefill and decode pools (and the link's queues);
- :mod:`.colocated`: the colocated baseline with chunked prefill;
- :mod:`.queue`: Erlang C, M/G/c waits and their percentiles (fixed draws);
- :mod:`.prep`: the TPs searched, and what plans share before any rate is sized.

Whole instances: GPUs = instances × TP.  A TP given as None is searched (``tp_candidates``):
the plan keeps the TPs that need fewest GPUs among those that meet the targets (then fewer
decode GPUs); when none does, the TPs across nodes (``prepare_beyond``: the last resort), and
when none of those does either, the nearest miss.
"""

from __future__ import annotations

import math
import numbers
import threading
from dataclasses import replace

import pandas as pd

from kvmodel.capacity.costs import costs
from kvmodel.capacity.pools import (
    Pools,
    decode_receivers,
    lanes,
    ttft_function,
    ttft_parts,
)
from kvmodel.capacity.prep import (
    Prepared,
    gpus_of,
    prepare,
    prepare_beyond,
    prepare_wide,
    tp_candidates,
)
from kvmodel.capacity.result import CapacityPlan, NearestColocated, NearestPools
from kvmodel.capacity.search import (
    best_colocated,
    best_pools,
    nearest_colocated,
    nearest_pools,
)
from kvmodel.capacity.workload import Slo, Workload
from kvmodel.catalog import get_link
from kvmodel.scenario import Scenario
from kvmodel.topology import domain_gpus, gpu_has_link, is_scale_up

__all__ = [
    "NETWORK_COLUMNS",
    "SWEEP_COLUMNS",
    "CapacityPlan",
    "Sizing",
    "Slo",
    "Workload",
    "disaggregated_ttft_s",
    "foreign_links",
    "network_plans",
    "plan",
    "rate_sweep",
    "sweep_rates",
    "tp_candidates",
]


def _bandwidth_needed(prep: Prepared, pools: Pools, rps: float) -> float | None:
    """Smallest per-NIC bandwidth [bytes/s] at which these pools still work, at both ends of
    the link: the sending prefill NICs keep the TTFT percentile within its target, and the
    receiving decode NICs stay at most ``RECEIVER_UTILIZATION`` busy (so the plan on a link
    of this speed has the same decode instances, not more).  A search on a 1 % grid from
    1 MB/s (None: no bandwidth is enough)."""
    slo, shp = prep.slo, prep.shp
    par, dpar = (pools.prefill_tp, pools.prefill_ep), (pools.decode_tp, pools.decode_ep)
    dec = prep.pair(par, dpar)[1]

    def ok(bw: float) -> bool:
        other = prep.relinked(par, dpar, bw)  # kept: the first tries are those of every search
        if decode_receivers(rps * other.mean_x, lanes(other, dec.gpus)) > pools.decode_instances:
            return False
        # sending end, and TTFT; its values do not depend on the TTFT target (Prepared.curve)
        f = ttft_function(other, dec, shp, rps, slo.ttft_percentile,
                          prep.curve(("bandwidth", par, dpar, bw), rps))  # fmt: skip
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


def _nearest(prep: Prepared, wide_prep, pools: Pools, c, rps: float):
    """(nearest pools, nearest colocated) for the sides that miss the targets (search.py);
    ``wide_prep()``: the Prepared over every TP, made only when a side misses."""
    if pools.meets_slo and c is not None and c.meets_slo:
        return None, None
    wide = wide_prep()
    if wide is None:
        return None, None
    np_, nc = None, None
    if not pools.meets_slo:
        p = nearest_pools(wide, prep, rps)
        if p is not None:
            np_ = NearestPools(prefill_tp=p.prefill_tp, decode_tp=p.decode_tp,
                               prefill_ep=p.prefill_ep, decode_ep=p.decode_ep,
                               prefill_instances=p.prefill_instances,
                               decode_instances=p.decode_instances, ttft_s=p.ttft_s,
                               tpot_s=p.tpot_s)  # fmt: skip
    if c is None or not c.meets_slo:
        n = nearest_colocated(wide, prep, rps)
        if n is not None:
            nc = NearestColocated(tp=n.tp, ep=n.ep, instances=n.instances, chunk_tokens=n.chunk,
                                  ttft_s=n.ttft_s, tpot_s=n.tpot_s)  # fmt: skip
    return np_, nc


def _plan_notes(sc, shp, pools, c) -> list[str]:
    """What the plan says beside its numbers: fixed times not used, no colocated shape,
    clipped requests, a colocated miss, GPUs beyond one scale-up domain."""
    notes = list(pools.notes)
    if sc.prefill_s is not None or not sc.decode_step_estimated:
        notes.append("the plan estimates prefill and decode steps for every length and batch; "
                     "a fixed prefill or decode-step time is not used")  # fmt: skip
    if c is None:
        notes.append("no colocated instance holds a decode batch beside a prefilling request")
    if shp.clipped:
        notes.append(f"{shp.clipped:.1%} of requests have a prompt or an output longer than "
                     "the model's context; counted at its length")  # fmt: skip
    if c is not None and not c.meets_slo:
        notes.append(
            "colocated: no chunk size meets both targets "
            + ("(TPOT)" if c.limit == "tpot" else "(TTFT)")
        )
    pgpus, dgpus = pools.prefill_gpus, pools.decode_gpus
    if is_scale_up(sc.link) and pgpus + dgpus > domain_gpus(sc.gpu, sc.link):
        notes.append(f"{sc.link.name} joins at most {domain_gpus(sc.gpu, sc.link)} GPUs; the "
                     f"{pgpus + dgpus} disaggregated GPUs span several domains, and a transfer "
                     "between domains takes the scale-out network")  # fmt: skip
    if sc.decode_gpu != sc.gpu and is_scale_up(sc.link):
        notes.append(f"prefill on {sc.gpu.name} and decode on {sc.decode_gpu.name} share no "
                     f"{sc.link.name} domain: a transfer between them takes the scale-out "
                     "network")  # fmt: skip
    return notes


def _colocated_fields(c) -> dict:
    """The plan's colocated fields from the best colocated shape (None: no shape fits)."""
    return dict(
        colocated_tp=c.tp if c else 0,
        colocated_ep=c.ep if c else 1,
        colocated_instances=c.instances if c else 0,
        colocated_chunk_tokens=c.chunk if c else 0,
        colocated_batch=c.batch if c else 0,
        colocated_ttft_s=c.ttft_s if c else math.inf,
        colocated_tpot_s=c.tpot_s if c else math.inf,
        colocated_meets_slo=bool(c and c.meets_slo),
    )


def _costs(sc, notes: list, pgpus, dgpus, cg, tokens_per_s, price, price_decode):
    """``costs`` of the plan's pools; a note when a lone decode price cannot price the prefill
    GPU of another type."""
    same = sc.decode_gpu == sc.gpu
    if price is None and price_decode is not None and not same:
        notes.append(f"a decode GPU price but no price for the {sc.gpu.name} prefill and "
                     "colocated GPUs: no cost is counted (set --gpu-price, URL price)")  # fmt: skip
    return costs(pgpus, dgpus, cg, tokens_per_s, price, price_decode, same_gpu=same)


def _across_nodes(what: str, par: tuple[int, int], gpu) -> str:
    """The note of a searched side that only a TP across nodes lets meet the targets."""
    nodes = -(-gpus_of(par) // gpu.gpus_per_node)
    return (f"no {what} parallelism within one node of {gpu.gpus_per_node} {gpu.name} GPUs "
            f"meets the targets: the plan's TP {par[0]} spans {nodes} nodes (tensor "
            "parallelism across nodes, the search's last resort)")  # fmt: skip


def _last_resort(prep: Prepared, beyond, rps: float, pools: Pools, c):
    """(pools, colocated size, the Prepared of the pools, notes): a side that misses the
    targets at ``prep``'s own parallelisms takes the best of ``beyond()`` (the TPs across
    nodes added to the sides searched: ``prep.prepare_beyond``; None: none) when that meets
    them, with a note; else all as it was."""
    if beyond is None or (pools.meets_slo and c is not None and c.meets_slo):
        return pools, c, prep, ()
    wider = beyond()
    if wider is None:
        return pools, c, prep, ()
    pprep, notes = prep, []
    if not pools.meets_slo and wider.tps[:2] != prep.tps[:2]:
        p = best_pools(wider, rps)
        if p is not None and p.meets_slo:
            pools, pprep = p, wider
            sides = (("prefill", (p.prefill_tp, p.prefill_ep), prep.sc.gpu, prep.tps[0]),
                     ("decode", (p.decode_tp, p.decode_ep), prep.sc.decode_gpu, prep.tps[1]))
            notes += [_across_nodes(what, par, gpu) for what, par, gpu, own in sides
                      if par not in own and gpus_of(par) > gpu.gpus_per_node]
    if (c is None or not c.meets_slo) and wider.tps[2] != prep.tps[2]:
        w = best_colocated(wider, rps)
        if w is not None and w.meets_slo:
            c = w
            notes.append(_across_nodes("colocated", (w.tp, w.ep), prep.sc.gpu))
    return pools, c, pprep, tuple(notes)


def _plan_at(prep: Prepared, rps: float, price: float | None, *, network: bool,
             wide=None, nearest: bool = False, price_decode: float | None = None,
             beyond=None) -> CapacityPlan:  # fmt: skip
    """The plan at ``rps``; ``beyond()``: a Prepared that adds TPs across nodes to the sides
    searched, where the plan looks when its own parallelisms miss the targets; ``nearest``:
    search ``wide()`` (a Prepared over every TP) for the nearest parallelism at which a side
    that still misses them meets them."""
    own = prep
    pools, c, prep, extra = _last_resort(prep, beyond, rps, best_pools(prep, rps),
                                         best_colocated(prep, rps))  # fmt: skip
    if not network and not nearest:
        # a sweep's row: the plan of the same pools and colocated size at this rate, whatever
        # the TTFT target (which the plan does not hold), is kept by the basis (a new target
        # that leaves a rate's sizes as they were gives the same plan object: bench/README.md,
        # Session 15, page controls)
        dpar = (pools.decode_tp, pools.decode_ep)  # its decode side: the plan's TTFT parts
        return prep.kept(("plan", rps, price, price_decode, pools, c, prep.decode_number(dpar)),
                         lambda: _plan_of(prep, rps, pools, c, price, price_decode,
                                          extra=extra))  # fmt: skip
    near = _nearest(own, wide, pools, c, rps) if nearest and wide else (None, None)
    return _plan_of(prep, rps, pools, c, price, price_decode, network=network, near=near,
                    nearest=nearest, extra=extra)  # fmt: skip


def _plan_of(prep: Prepared, rps: float, pools, c, price, price_decode, *, network=False,
             near=(None, None), nearest=False, extra=()) -> CapacityPlan:  # fmt: skip
    """The plan of the best ``pools`` and colocated size ``c`` at ``rps`` (``_plan_at``);
    ``near``: the nearest parallelisms found, ``network``: with the NIC-bandwidth search;
    ``extra``: notes of the search (``_last_resort``)."""
    sc, slo, shp = prep.sc, prep.slo, prep.shp
    near_p, near_c = near
    notes = _plan_notes(sc, shp, pools, c) + list(extra)
    pf, dec = prep.pair((pools.prefill_tp, pools.prefill_ep), (pools.decode_tp, pools.decode_ep))
    pgpus, dgpus = pools.prefill_gpus, pools.decode_gpus
    cg = c.gpus if c else 0
    hour, colo_hour, per_million = _costs(sc, notes, pgpus, dgpus, cg, rps * shp.mean_output,
                                          price, price_decode)  # fmt: skip
    both = pools.meets_slo and c is not None and c.meets_slo
    return CapacityPlan(
        rps=rps,
        prefill_gpus=pgpus,
        decode_gpus=dgpus,
        disaggregated_gpus=pgpus + dgpus,
        pd_ratio=pgpus / dgpus,
        colocated_gpus=cg,
        # no saving against a side that misses a target (issues 21 and 24)
        disaggregation_saves_gpus=cg - (pgpus + dgpus) if both else None,
        ttft_s=pools.ttft_s,
        ttft_parts=ttft_parts(pf, dec, shp, slo.ttft_percentile, pools.ttft_s, rps),
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
        **_colocated_fields(c),
        prefill_ep=pools.prefill_ep,
        decode_ep=pools.decode_ep,
        nic_bandwidth_needed_bytes_per_s=_bandwidth_needed(prep, pools, rps) if network else None,
        link_bandwidth_bytes_per_s=sc.link.bandwidth_bytes_per_s,
        nics_per_transfer=pf.streams,
        demanded_bytes_per_s=rps * pf.mean_wire_bytes,
        cost_per_hour=hour,
        colocated_cost_per_hour=colo_hour,
        notes=tuple(notes),
        prefill_gpu=sc.gpu.id,
        decode_gpu=sc.decode_gpu.id,
        cost_per_million_output_tokens=per_million,
        disaggregated_nearest=near_p,
        colocated_nearest=near_c,
        nearest_searched=nearest,
    )


MAX_PRICE = 1_000_000.0  # $/GPU-hour: above it a price is an input error, not a plan


def _price(gpu_price_per_hour) -> float | None:
    if gpu_price_per_hour is None or gpu_price_per_hour == 0:
        return None
    p = gpu_price_per_hour
    if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 < p <= MAX_PRICE:
        raise ValueError(
            f"the GPU price must be > 0 and at most {MAX_PRICE:,.0f} $/GPU-hour (0: none), "
            f"got {p!r}"
        )
    return float(p)


def _rate(r) -> float:
    """A request rate [requests/s] as a float, or ValueError."""
    if isinstance(r, bool) or not isinstance(r, numbers.Real) or not 0 < float(r) < math.inf:
        raise ValueError(f"every rate must be > 0 requests/s, got {r!r}")
    return float(r)


class Sizing:
    """Capacity plans of one workload's lengths on one scenario, at targets and TPs held fixed,
    at any request rate (the workload's own rate is not used).

    What does not depend on the rate (the workload's shape, each TP's decode side, the
    colocated options) is computed once; each rate's plan once, then looked up
    (:data:`MAX_RATES` rates are kept, then forgotten).  A dashboard that moves the rate or
    draws rates on a fixed grid (:func:`sweep_rates`) re-sizes only the rates it has not seen.
    Safe to share between threads (one plan is computed at a time).
    """

    MAX_RATES = 256

    def __init__(self, sc: Scenario, workload: Workload, slo: Slo, *,
                 prefill_tp: int | None = None, decode_tp: int | None = None,
                 colocated_tp: int | None = None,
                 gpu_price_per_hour: float | None = None,
                 gpu_price_decode_per_hour: float | None = None, prefill_ep: int | None = None,
                 decode_ep: int | None = None, colocated_ep: int | None = None):  # fmt: skip
        self.price = _price(gpu_price_per_hour)
        self.price_decode = _price(gpu_price_decode_per_hour)
        self.workload = workload  # kept: callers may key on its identity
        self._prep = prepare(sc, workload, slo, prefill_tp, decode_tp, colocated_tp,
                             prefill_ep, decode_ep, colocated_ep)  # fmt: skip
        self._wide = None  # every TP (prep.wide_tps), made when a side first misses
        self._beyond = None  # the TPs across nodes of the sides searched, made likewise
        self._searched = (prefill_tp is None and prefill_ep is None,
                          decode_tp is None and decode_ep is None,
                          colocated_tp is None and colocated_ep is None
                          and decode_tp is None and decode_ep is None)  # fmt: skip
        self._plans: dict[tuple[float, bool, bool], CapacityPlan] = {}
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        """An upper bound on the memory it holds when full [bytes] (ui.memo reads it): the
        draws, and per rate one plan per TP pair and colocated shape (~2 KB each), of the TPs
        searched and, once a side has missed, of every TP (the nearest search)."""
        per_rate = 2_000
        for prep in (self._prep, self._wide or None, self._beyond or None):  # theirs too
            if prep is not None:
                per_rate += 2_000 * (len(prep.prefill_mean_s) * len(prep.decodes)
                                     + len(prep.options))  # fmt: skip
        return int(self._prep.shp.draws.u.nbytes * 3 + self.MAX_RATES * per_rate)

    def _wide_prep(self):
        if self._wide is None:
            prep = self._prep
            self._wide = prepare_wide(prep.sc, self.workload, prep.slo) or False
        return self._wide or None

    def _beyond_prep(self):
        if self._beyond is None:
            self._beyond = prepare_beyond(self._prep, self._searched) or False
        return self._beyond or None

    def plan(self, rps: float, *, network: bool = True, nearest: bool | None = None
             ) -> CapacityPlan:  # fmt: skip
        """The plan at ``rps`` [requests/s]; ``network`` False skips the NIC-bandwidth search
        (``nic_bandwidth_needed_bytes_per_s`` None); ``nearest`` (default: as ``network``)
        False skips the search for the nearest parallelism at which a side that misses the
        targets meets them (``*_nearest`` None, ``nearest_searched`` False)."""
        nearest = network if nearest is None else bool(nearest)
        key = (_rate(rps), network, nearest)
        with self._lock:
            hit = self._plans.get(key)
            if hit is None:
                if len(self._plans) >= self.MAX_RATES:
                    self._plans.clear()
                    self._prep.forget()
                    for other in (self._wide, self._beyond):
                        if other:
                            other.forget()
                hit = _plan_at(
                    self._prep,
                    key[0],
                    self.price,
                    network=network,
                    wide=self._wide_prep,
                    nearest=nearest,
                    price_decode=self.price_decode,
                    beyond=self._beyond_prep,
                )
                self._plans[key] = hit  # fmt: skip
        return hit

    def sweep(self, rates) -> pd.DataFrame:
        """One row per rate (``SWEEP_COLUMNS``, the caller's order), without the NIC search;
        sized in rising order (each search starts where the rate below ended)."""
        rates = [_rate(r) for r in rates]
        plans = {r: self.plan(r, network=False) for r in sorted(set(rates))}
        chosen = tuple(plans[r] for r in rates)
        # the same plans (kept across TTFT targets: _plan_at) make the same frame, the same
        # object: what a page draws from it is looked up, not drawn again
        key = ("sweep", tuple(rates), self.price, self.price_decode, *map(id, chosen))
        return self._prep.kept(key, lambda: (chosen, _sweep_frame(chosen)))[1]


def _sweep_frame(plans) -> pd.DataFrame:
    """One row per plan (``SWEEP_COLUMNS``: the plan's fields, limits by pool)."""
    rows = []
    for p in plans:
        row = {k: getattr(p, k) for k in SWEEP_COLUMNS if hasattr(p, k)}
        row.update({f"{pool}_limit": limit for pool, limit in p.limits.items()})
        rows.append(row)
    return pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))


def plan(sc: Scenario, workload: Workload, slo: Slo, *, prefill_tp: int | None = None,
         decode_tp: int | None = None, colocated_tp: int | None = None,
         gpu_price_per_hour: float | None = None,
         gpu_price_decode_per_hour: float | None = None, prefill_ep: int | None = None,
         decode_ep: int | None = None,
         colocated_ep: int | None = None) -> CapacityPlan:  # fmt: skip
    """The capacity plan of ``workload`` on ``sc``'s model, GPU, link and stack (module doc).

    A TP of None is searched.  ``colocated_tp`` None: the decode TP when it is given, else
    searched.  ``gpu_price_per_hour`` [$ per GPU-hour] adds the cost (None or 0: none);
    ``gpu_price_decode_per_hour``: the decode GPUs' price when it differs (None: the same).
    The decode pool runs on ``sc.decode_gpu`` (``Scenario.gpu_decode``).
    ``*_ep``: expert parallelism of a MoE model's side (None: searched with the TP when the
    TP is None too, else none; an EP runs attention data-parallel at the TP given, or 1).
    """
    sizing = Sizing(sc, workload, slo, prefill_tp=prefill_tp, decode_tp=decode_tp,
                    colocated_tp=colocated_tp, gpu_price_per_hour=gpu_price_per_hour,
                    gpu_price_decode_per_hour=gpu_price_decode_per_hour,
                    prefill_ep=prefill_ep, decode_ep=decode_ep,
                    colocated_ep=colocated_ep)  # fmt: skip
    return sizing.plan(workload.rps)


def sweep_rates(rps: float, span: float = 10.0, per_decade: int = 12) -> tuple[float, ...]:
    """Request rates from ``rps``/``span`` to ``rps``·``span`` [requests/s] on a fixed grid,
    10^(k/``per_decade``) for whole k (one more point each side when ``rps`` is off the grid):
    the rates drawn around a nearby ``rps`` are mostly the same, so a :class:`Sizing` looks
    them up instead of sizing them again."""
    rps = _rate(rps)
    if not span > 1 or per_decade < 1:
        raise ValueError(f"span must be > 1 and per_decade >= 1, got {span!r}, {per_decade!r}")
    lo = math.floor(round(per_decade * math.log10(rps / span), 9))
    hi = math.ceil(round(per_decade * math.log10(rps * span), 9))
    return tuple(10.0 ** (k / per_decade) for k in range(lo, hi + 1))


def disaggregated_ttft_s(sc: Scenario, workload: Workload, slo: Slo, *, prefill_tp: int,
                         decode_tp: int, prefill_instances: int) -> float:  # fmt: skip
    """TTFT [s] at ``slo.ttft_percentile`` of ``prefill_instances`` prefill instances at
    ``prefill_tp`` sending to decode TP ``decode_tp``: the plan's TTFT at pools held fixed."""
    prep = prepare(sc, workload, slo, prefill_tp, decode_tp, decode_tp)
    pf, dec = prep.pair((prefill_tp, 1), (decode_tp, 1))
    return ttft_function(pf, dec, prep.shp, workload.rps, slo.ttft_percentile)(prefill_instances)


SWEEP_COLUMNS = ("rps", "prefill_gpus", "decode_gpus", "disaggregated_gpus", "colocated_gpus",
                 "prefill_limit", "decode_limit", "colocated_limit", "link_utilization",
                 "ttft_s", "meets_slo", "colocated_ttft_s", "colocated_meets_slo",
                 "prefill_tp", "decode_tp", "colocated_tp", "pd_ratio",
                 "prefill_ep", "decode_ep", "colocated_ep",
                 "disaggregation_saves_gpus", "tpot_s", "colocated_tpot_s",
                 "prefill_instances", "decode_instances", "colocated_instances",
                 "cost_per_hour", "colocated_cost_per_hour")  # fmt: skip


def rate_sweep(sc: Scenario, workload: Workload, slo: Slo, rates, *,
               prefill_tp: int | None = None, decode_tp: int | None = None,
               colocated_tp: int | None = None,
               gpu_price_per_hour: float | None = None,
               gpu_price_decode_per_hour: float | None = None, prefill_ep: int | None = None,
               decode_ep: int | None = None) -> pd.DataFrame:  # fmt: skip
    """One row per rate [requests/s] (``SWEEP_COLUMNS``: the plan's fields, limits by pool);
    the workload's own rate is ignored.  No NIC-bandwidth search (``plan`` has it)."""
    sizing = Sizing(sc, workload, slo, prefill_tp=prefill_tp, decode_tp=decode_tp,
                    colocated_tp=colocated_tp, gpu_price_per_hour=gpu_price_per_hour,
                    gpu_price_decode_per_hour=gpu_price_decode_per_hour,
                    prefill_ep=prefill_ep, decode_ep=decode_ep)  # fmt: skip
    return sizing.sweep(rates)


NETWORK_COLUMNS = ("link", "link_name", "bandwidth_bytes_per_s", "nics_per_transfer",
                   "prefill_gpus", "decode_gpus", "disaggregated_gpus", "colocated_gpus",
                   "disaggregation_saves_gpus", "ttft_s", "tpot_s", "link_utilization",
                   "nic_bandwidth_needed_bytes_per_s", "meets_slo", "cost_per_hour",
                   "prefill_tp", "decode_tp", "domain_gpus", "prefill_ep", "decode_ep")  # fmt: skip


def foreign_links(sc: Scenario, link_ids) -> tuple[str, ...]:
    """The ids among ``link_ids`` that the scenario's prefill or decode GPU does not have (another
    GPU's NVLink or Infinity Fabric, ``topology.gpu_has_link``): ``network_plans`` leaves them
    out (session 20's review: an MI300X deployment was planned over NVLink 4)."""
    gpus = (sc.gpu, sc.decode_gpu)
    return tuple(i for i in link_ids if not all(gpu_has_link(g, get_link(i)) for g in gpus))


def network_plans(sc: Scenario, workload: Workload, slo: Slo, link_ids, *,
                  prefill_tp: int | None = None, decode_tp: int | None = None,
                  gpu_price_per_hour: float | None = None,
                  gpu_price_decode_per_hour: float | None = None, prefill_ep: int | None = None,
                  decode_ep: int | None = None) -> pd.DataFrame:  # fmt: skip
    """Which network: the plan of ``workload`` with ``sc``'s interconnect replaced by each of
    ``link_ids`` (catalog ids; the scenario's own first, once), everything else as given.  One
    row per link (``NETWORK_COLUMNS``, SI units; bandwidth per NIC and direction;
    ``domain_gpus``: the GPUs a scale-up link such as NVLink joins, 0 for a scale-out network:
    a deployment larger than it sends part of its transfers over the scale-out network).
    A GPU-to-GPU fabric that the prefill or decode GPU does not have is left out
    (``foreign_links`` names them): no plan can use it."""
    foreign = foreign_links(sc, link_ids)
    links = [sc.link] + [get_link(i) for i in link_ids if i != sc.link.id and i not in foreign]
    rows = []
    for link in links:
        p = Sizing(replace(sc, link=link), workload, slo, prefill_tp=prefill_tp,
                   decode_tp=decode_tp, gpu_price_per_hour=gpu_price_per_hour,
                   gpu_price_decode_per_hour=gpu_price_decode_per_hour,
                   prefill_ep=prefill_ep, decode_ep=decode_ep,
                   ).plan(workload.rps, nearest=False)  # fmt: skip
        row = {k: getattr(p, k) for k in NETWORK_COLUMNS if hasattr(p, k)}
        row.update(link=link.id, link_name=link.name,
                   bandwidth_bytes_per_s=link.bandwidth_bytes_per_s,
                   domain_gpus=domain_gpus(sc.gpu, link) if is_scale_up(link) else 0)  # fmt: skip
        rows.append(row)
    return pd.DataFrame(rows, columns=list(NETWORK_COLUMNS))
