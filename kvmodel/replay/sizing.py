"""The replay of a capacity plan: run it (:func:`replay_plan`), grow its pools until the replay
meets the targets (:func:`size_by_replay`), and say why the replay and the formulas disagree
(:func:`disagreement`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from kvmodel.replay.result import BURST_WINDOW_S, ReplayResult, summarise
from kvmodel.replay.sim import Deployment, replay
from kvmodel.replay.stream import Stream

MAX_ROUNDS = 40  # growth rounds of ``size_by_replay``
GROWTH = 0.10  # a pool grows by this share of itself (at least one instance) per round
AGREE = 0.25  # replay and formulas agree when their TTFTs are within this share
BURST = 2.0  # a busiest window this many times the mean rate is a burst (Poisson at
# 10 requests/s over an hour peaks near 1.5×)
SIZE_BY = ("analytic", "replay")


@dataclass(frozen=True)
class Replayed:
    """A replayed deployment: the pools, the result, and how they were found."""

    deployment: Deployment
    result: ReplayResult
    rounds: int  # growth rounds (0: the plan's pools as sized by the formulas)
    grown: bool  # the pools grew beyond the plan's
    reasons: tuple[str, ...]  # why the replay and the formulas disagree (empty: they agree)

    @property
    def gpus(self) -> int:
        return self.deployment.gpus


def deployment_of(sc, plan) -> Deployment:
    """The pools of a :class:`kvmodel.capacity.CapacityPlan` on ``sc``."""
    return Deployment(sc, plan.prefill_tp, plan.decode_tp, plan.prefill_instances,
                      plan.decode_instances, getattr(plan, "prefill_ep", 1) or 1,
                      getattr(plan, "decode_ep", 1) or 1)  # fmt: skip


def run(dep: Deployment, stream: Stream, slo, progress=None):
    tl = replay(dep, stream, progress=progress)
    return summarise(tl, ttft_slo_s=slo.ttft_s, tpot_slo_s=slo.tpot_s, q=slo.ttft_percentile,
                     poisson=stream.poisson)  # fmt: skip


def _grow(dep: Deployment, r: ReplayResult, slo) -> Deployment:
    """The pools one round larger: decode when TPOT misses or KV memory makes requests wait
    most, prefill when its queue (or its NICs') does."""

    def more(n: int) -> int:
        return n + max(1, math.ceil(GROWTH * n))

    prefill = r.prefill_wait_p90_s + r.send_wait_p90_s
    decode = r.memory_wait_p90_s + r.receive_wait_p90_s
    grow_d = r.tpot_p90_s > slo.tpot_s or (r.ttft_at_slo_s > slo.ttft_s and decode > prefill)
    grow_p = r.ttft_at_slo_s > slo.ttft_s and prefill >= decode
    return replace(
        dep,
        prefill_instances=more(dep.prefill_instances) if grow_p else dep.prefill_instances,
        decode_instances=more(dep.decode_instances) if grow_d else dep.decode_instances,
    )


def size_by_replay(dep: Deployment, stream: Stream, slo, *, progress=None):
    """(deployment, result, rounds): ``dep`` grown round by round (:func:`_grow`) until the
    replay meets the targets or :data:`MAX_ROUNDS` rounds pass; ``progress(i, total, "grow")``
    is called after each round."""
    r = run(dep, stream, slo)
    rounds = 0
    while not r.meets_slo and rounds < MAX_ROUNDS:
        nxt = _grow(dep, r, slo)
        if nxt == dep:
            break
        dep, rounds = nxt, rounds + 1
        r = run(dep, stream, slo)
        if progress is not None:
            progress(rounds, MAX_ROUNDS, "grow")
    return dep, r, rounds


def disagreement(plan, r: ReplayResult, slo) -> tuple[str, ...]:
    """Why the replay's TTFT or verdict differs from the formulas' (empty: they agree)."""
    q = f"p{slo.ttft_percentile:g}"
    ratio = r.ttft_at_slo_s / plan.ttft_s if plan.ttft_s > 0 else math.inf
    if abs(ratio - 1) <= AGREE and r.meets_slo == plan.meets_slo:
        return ()
    out = [f"the replay's TTFT {q} is {r.ttft_at_slo_s * 1e3:,.0f} ms, the formulas' "
           f"{plan.ttft_s * 1e3:,.0f} ms"]  # fmt: skip
    burst = r.peak_rate_rps / r.mean_rate_rps
    if not r.poisson and burst >= BURST:
        out.append(f"bursts: the busiest {BURST_WINDOW_S:g} s bring {burst:,.1f}× the mean rate "
                   f"({r.peak_rate_rps:,.1f} against {r.mean_rate_rps:,.1f} requests/s), and "
                   "the formulas assume Poisson arrivals at the mean")  # fmt: skip
    if r.memory_waited_share > 0.01:
        out.append(f"memory waits: {r.memory_waited_share:.0%} of requests waited for decode "
                   f"KV memory (p90 {r.memory_wait_p90_s * 1e3:,.0f} ms), which the formulas "
                   "leave out")  # fmt: skip
    if r.link_wait_p90_s > 0.1 * r.ttft_at_slo_s:
        out.append(f"NIC queueing: p90 of {r.link_wait_p90_s * 1e3:,.0f} ms waiting for busy "
                   f"NICs (busiest minute {r.peak_link_utilization:.0%} busy); the formulas "
                   "count the prefill side's queue only")  # fmt: skip
    if r.tpot_p90_s > slo.tpot_s >= plan.tpot_s:
        out.append(f"TPOT: running batches grow past the design batch (p90 step "
                   f"{r.tpot_p90_s * 1e3:,.1f} ms)")  # fmt: skip
    if len(out) == 1:
        out.append("prefill queueing: the formulas approximate the prefill queue from the "
                   "prompts' mean and spread (M/G/c), the replay serves each prompt")  # fmt: skip
    return tuple(out)


def replay_plan(sc, plan, stream: Stream, slo, *, size_by: str = "analytic",
                progress=None) -> Replayed:  # fmt: skip
    """Replay ``plan``'s pools on ``stream``; ``size_by="replay"``: grow them until the
    replay meets the targets.  ``progress(i, total, what)``, when given, is called as the work
    goes: ``what`` is ``"replay"`` for the steps of the one replay (``sim.STEPS``), ``"grow"``
    for the growth rounds (:data:`MAX_ROUNDS` at most)."""
    if size_by not in SIZE_BY:
        raise ValueError(f"size_by must be one of {SIZE_BY}, got {size_by!r}")
    dep = deployment_of(sc, plan)
    if size_by == "replay":
        grown, r, rounds = size_by_replay(dep, stream, slo, progress=progress)
    else:
        steps = None if progress is None else lambda i, total: progress(i, total, "replay")
        grown, r, rounds = dep, run(dep, stream, slo, progress=steps), 0
    first = r if rounds == 0 else run(dep, stream, slo)
    return Replayed(grown, r, rounds, grown != dep, disagreement(plan, first, slo))
