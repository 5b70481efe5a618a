"""What a plan costs: per hour, colocated, and per million output tokens, with the decode pool
at its own price when it runs on another GPU."""

from __future__ import annotations


def costs(prefill_gpus: int, decode_gpus: int, colocated_gpus: int, tokens_per_s: float,
          price: float | None, price_decode: float | None, *, same_gpu: bool = True):  # fmt: skip
    """(cost per hour, colocated cost per hour, cost per million output tokens) [$]; all None
    without a price.  ``price`` [$/GPU-hour] for prefill and colocated GPUs, ``price_decode``
    for decode GPUs (None: ``price``); a lone decode price prices every GPU when both pools run
    on one GPU type (``same_gpu``), and none when they differ: the prefill GPU's price is
    unknown, and pricing it at the decode GPU's would be a wrong cost;
    ``tokens_per_s``: output tokens generated per second."""
    if price is None and (price_decode is None or not same_gpu):
        return None, None, None
    p = price if price is not None else price_decode
    d = price_decode if price_decode is not None else p
    hour = prefill_gpus * p + decode_gpus * d
    per_million = hour / (tokens_per_s * 3600.0) * 1e6 if tokens_per_s > 0 else None
    return hour, colocated_gpus * p, per_million
