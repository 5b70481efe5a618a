"""Published deployments and peer planners' plans beside this planner's
(``data/fidelity/deployments.csv``, one row each with its source).

Each row names a workload (input and output tokens at a rate), the targets it was served at,
the model, GPU and parallelism, and the GPUs the deployment or the peer plan used for one side
(``disaggregated``, ``colocated``, or one pool, ``prefill`` / ``decode``).  :func:`compare`
plans the same workload and returns the GPUs this planner needs for that side and the ratio
planned ÷ published: above 1 the planner asks for more GPUs than were used (it is pessimistic,
and predicts less throughput per node by the same factor), below 1 fewer.  README's fidelity
section states the bands (1.5× dense, 2× MoE) and ``tests/test_capacity_deployments.py`` pins
each ratio.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from kvmodel import catalog

PATH = catalog.DATA_DIR / "fidelity" / "deployments.csv"
SIDES = ("disaggregated", "colocated", "prefill", "decode")


@dataclass(frozen=True)
class Deployment:
    """One row of ``deployments.csv`` (times in ms, lengths in tokens, rate in requests/s)."""

    id: str
    kind: str  # "deployment" (measured) or "peer_plan" (another planner's answer)
    model: str
    gpu: str
    link: str
    side: str
    prefill_tp: int | None  # None: searched
    decode_tp: int | None
    prefill_ep: int | None  # None: no expert parallelism given
    decode_ep: int | None
    input_tokens: int
    output_tokens: int
    ttft_slo_ms: float
    ttft_percentile: float
    tpot_slo_ms: float
    rps: float
    published_gpus: int
    published_tokens_per_s_per_node: float | None  # prefill: input, decode: output tokens
    source: str
    source_ref: str
    cached_tokens: int = 0  # of input_tokens, held by a prefix cache (neither computed nor sent)


def _opt_int(text: str) -> int | None:
    text = text.strip()
    return None if text in ("", "auto") else int(text)


def load_deployments(path: Path = PATH) -> tuple[Deployment, ...]:
    """The rows of ``path``; a bad side or number raises ValueError naming the row."""
    out = []
    with open(path, newline="", encoding="utf-8") as f:
        for n, r in enumerate(csv.DictReader(f), start=2):
            try:
                if r["side"] not in SIDES:
                    raise ValueError(f"side must be one of {', '.join(SIDES)}, got {r['side']!r}")
                out.append(Deployment(
                    id=r["id"], kind=r["kind"], model=r["model"], gpu=r["gpu"], link=r["link"],
                    side=r["side"], prefill_tp=_opt_int(r["prefill_tp"]),
                    decode_tp=_opt_int(r["decode_tp"]), prefill_ep=_opt_int(r["prefill_ep"]),
                    decode_ep=_opt_int(r["decode_ep"]), input_tokens=int(r["input_tokens"]),
                    output_tokens=int(r["output_tokens"]), ttft_slo_ms=float(r["ttft_slo_ms"]),
                    ttft_percentile=float(r["ttft_percentile"]),
                    tpot_slo_ms=float(r["tpot_slo_ms"]), rps=float(r["rps"]),
                    published_gpus=int(r["published_gpus"]),
                    published_tokens_per_s_per_node=float(r["published_tokens_per_s_per_node"])
                    if r["published_tokens_per_s_per_node"].strip() else None,
                    source=r["source"],
                    source_ref=r["source_ref"],
                    cached_tokens=_opt_int(r.get("cached_tokens") or "") or 0,
                ))  # fmt: skip
            except (KeyError, ValueError) as exc:
                raise ValueError(f"{path.name} line {n}: {exc}") from None
    return tuple(out)


def _setup(d: Deployment):
    from kvmodel.build import scenario_from_inputs
    from kvmodel.capacity.workload import Slo

    sc = scenario_from_inputs({"model": d.model, "gpu": d.gpu, "link": d.link,
                               "seq": min(d.input_tokens, 1_000_000)})  # fmt: skip
    slo = Slo(d.ttft_slo_ms / 1e3, d.tpot_slo_ms / 1e3, ttft_percentile=d.ttft_percentile)
    return sc, _workload(d), slo


def _workload(d: Deployment):
    """``d``'s requests: every one ``input_tokens`` long, ``cached_tokens`` of them cached."""
    import numpy as np

    from kvmodel.capacity.workload import Workload

    if not d.cached_tokens:
        return Workload.fixed(d.rps, d.input_tokens, d.output_tokens)
    return Workload(np.array([d.input_tokens]), np.array([d.output_tokens]), np.array([1.0]),
                    d.rps, np.array([d.cached_tokens]),
                    source=f"{d.input_tokens:,} prompt ({d.cached_tokens:,} cached) + "
                           f"{d.output_tokens:,} output tokens")  # fmt: skip


def tokens_per_s_per_node(d: Deployment) -> float | None:
    """The planner's throughput of one node at ``d``'s parallelism for its side [tokens/s]:
    prefill, computed input tokens (the uncached ones) ÷ the work each request occupies an
    instance for; decode, the batch
    within the TPOT target ÷ its step (output tokens); × GPUs per node ÷ GPUs per instance.
    None for a disaggregated or colocated row."""
    from kvmodel.capacity.prep import basis

    if d.side not in ("prefill", "decode"):
        return None
    sc, work, slo = _setup(d)
    b = basis(sc, work)
    tp, ep = (d.prefill_tp or 1, d.prefill_ep or 1) if d.side == "prefill" else (
        d.decode_tp or 1, d.decode_ep or 1)  # fmt: skip
    per_node = sc.gpu.gpus_per_node / max(tp, ep)
    if d.side == "prefill":
        return (d.input_tokens - d.cached_tokens) / b.prefill_mean_s((tp, ep)) * per_node
    dec = b.at_tpot(slo.tpot_s, (tp, ep))[0]
    return dec.batch / dec.step_s * per_node


def plan_of(d: Deployment):
    """This planner's :class:`~kvmodel.capacity.result.CapacityPlan` of ``d``'s workload."""
    from kvmodel.capacity.plan import plan

    sc, work, slo = _setup(d)
    return plan(
        sc,
        work,
        slo,
        prefill_tp=d.prefill_tp,
        decode_tp=d.decode_tp,
        prefill_ep=d.prefill_ep,
        decode_ep=d.decode_ep,
    )


def planned_gpus(d: Deployment, p) -> int:
    """The GPUs of ``p`` for ``d``'s side."""
    return {
        "disaggregated": p.disaggregated_gpus,
        "colocated": p.colocated_gpus,
        "prefill": p.prefill_gpus,
        "decode": p.decode_gpus,
    }[d.side]


def compare(d: Deployment) -> dict:
    """``d`` beside this planner: GPUs published and planned, and planned ÷ published."""
    p = plan_of(d)
    got = planned_gpus(d, p)
    feasible = p.colocated_feasible if d.side == "colocated" else p.disaggregated_feasible
    tput = tokens_per_s_per_node(d)
    pub = d.published_tokens_per_s_per_node
    return {"id": d.id, "kind": d.kind, "model": d.model, "gpu": d.gpu, "side": d.side,
            "published_gpus": d.published_gpus, "planned_gpus": got,
            "ratio": got / d.published_gpus, "feasible": feasible,
            "tokens_per_s_per_node": tput, "published_tokens_per_s_per_node": pub,
            "throughput_ratio": None if tput is None or not pub else tput / pub,
            "source": d.source}  # fmt: skip


def compared(path: Path = PATH) -> list[dict]:
    """:func:`compare` of every row of ``path``, in file order (``python -m kvmodel
    fidelity``'s ``deployments``, the Models page)."""
    return [compare(d) for d in load_deployments(path)]
