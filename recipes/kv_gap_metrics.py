"""Export the KV-transfer gap of a disaggregated (prefill → decode) server to Prometheus.

The gap is the time from the end of a request's prefill to the start of its first decode step:
the part of time-to-first-token (TTFT) that moving the KV cache adds.  It is exported as a
**Histogram**, not as a Gauge labelled by request id:

- a Gauge with a ``request_id`` label creates a new time series for every request, forever: the
  exporter's memory, every scrape and Prometheus' index grow without bound, and a scrape only
  holds the last value each request happened to have;
- a Histogram is a fixed set of series (one per bucket, plus ``_sum`` and ``_count``) whatever
  the traffic.  ``rate(..._sum[5m]) / rate(..._count[5m])`` is the mean gap and
  ``histogram_quantile(0.99, sum by (le) (rate(..._bucket[5m])))`` its p99, over all replicas.

Use: call ``on_prefill_done(request_id)`` when a request's prefill has finished (its KV is about
to leave), ``on_first_decode_step(request_id)`` right before its first decode forward pass and,
for TTFT, ``on_first_token(request_id)`` when its first token is sent.  The calls must share one
clock: make them in one process (the decode worker, or the router that sees every event), or
pass ``clock=time.time`` with NTP/PTP-synchronised hosts and ``at=`` timestamps sent along with
the request.

Start times wait in bounded dicts: a request that never reaches decode (cancelled, failed) is
evicted oldest-first once ``max_pending`` are waiting and counted in
``llm_kv_transfer_gap_dropped_total``, so memory stays bounded too.

Only ``prometheus_client`` is needed (``pip install prometheus_client``).
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, start_http_server

# 0.5 ms (a few MB over NVLink) … 2.5 s (a long prompt over a slow NIC); beyond is +Inf.
GAP_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
TTFT_BUCKETS = (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 20.0, 40.0, 80.0)
MAX_PENDING = 10_000  # requests between prefill end and first decode step, at most


class _BoundedTimes:
    """request id → timestamp, at most ``cap`` entries; the oldest is evicted first."""

    def __init__(self, cap: int, on_evict) -> None:
        if cap < 1:
            raise ValueError(f"cap must be at least 1, got {cap}")
        self.cap = cap
        self._items: OrderedDict[str, float] = OrderedDict()
        self._on_evict = on_evict

    def put(self, key: str, value: float) -> None:
        self._items.pop(key, None)
        while len(self._items) >= self.cap:
            self._items.popitem(last=False)
            self._on_evict()
        self._items[key] = value

    def pop(self, key: str) -> float | None:
        return self._items.pop(key, None)

    def __len__(self) -> int:
        return len(self._items)


class KvGapMetrics:
    """The gap and TTFT histograms, registered in ``registry`` (inject a fresh
    ``CollectorRegistry()`` in tests)."""

    def __init__(
        self,
        registry: CollectorRegistry = REGISTRY,
        *,
        max_pending: int = MAX_PENDING,
        clock=time.monotonic,
    ) -> None:
        self.clock = clock
        self.gap = Histogram(
            "llm_kv_transfer_gap_seconds",
            "Time from the end of prefill to the start of the first decode step.",
            buckets=GAP_BUCKETS,
            registry=registry,
        )
        self.ttft = Histogram(
            "llm_time_to_first_token_seconds",
            "Time from request arrival to its first token.",
            buckets=TTFT_BUCKETS,
            registry=registry,
        )
        self.dropped = Counter(
            "llm_kv_transfer_gap_dropped",  # exported as ..._dropped_total
            "Requests forgotten before their first decode step (cancelled, failed, evicted).",
            registry=registry,
        )
        self._lock = threading.Lock()
        self.prefill_done = _BoundedTimes(max_pending, self.dropped.inc)
        self.arrived = _BoundedTimes(max_pending, lambda: None)

    def on_prefill_done(self, request_id: str, *, arrived_at=None, at=None) -> None:
        """Prefill of ``request_id`` finished (``at``, default now); ``arrived_at`` (same clock)
        is when the request arrived, for TTFT."""
        now = self.clock() if at is None else at
        with self._lock:
            self.prefill_done.put(request_id, now)
            if arrived_at is not None:
                self.arrived.put(request_id, arrived_at)

    def on_first_decode_step(self, request_id: str, *, at=None) -> float | None:
        """The first decode step of ``request_id`` is about to run: observe and return the gap
        (None for a request whose prefill end is unknown)."""
        now = self.clock() if at is None else at
        with self._lock:
            start = self.prefill_done.pop(request_id)
        if start is None:
            return None
        gap = max(now - start, 0.0)
        self.gap.observe(gap)
        return gap

    def on_first_token(self, request_id: str, *, at=None) -> float | None:
        """The first token of ``request_id`` is sent: observe and return its TTFT (None when its
        arrival time was not given)."""
        now = self.clock() if at is None else at
        with self._lock:
            arrived = self.arrived.pop(request_id)
        if arrived is None:
            return None
        ttft = max(now - arrived, 0.0)
        self.ttft.observe(ttft)
        return ttft

    def pending(self) -> int:
        """Requests waiting for their first decode step."""
        return len(self.prefill_done)


_default: KvGapMetrics | None = None
_default_lock = threading.Lock()


def default_metrics() -> KvGapMetrics:
    """The process-wide instance in the default registry, made on first use (so importing this
    module registers nothing)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = KvGapMetrics()
        return _default


def on_prefill_done(request_id: str, **kwargs) -> None:
    default_metrics().on_prefill_done(request_id, **kwargs)


def on_first_decode_step(request_id: str, **kwargs) -> float | None:
    return default_metrics().on_first_decode_step(request_id, **kwargs)


def on_first_token(request_id: str, **kwargs) -> float | None:
    return default_metrics().on_first_token(request_id, **kwargs)


if __name__ == "__main__":
    # Demo: serve /metrics on :9400 and feed it synthetic requests (curl localhost:9400/metrics).
    import random
    import uuid

    start_http_server(9400)
    while True:
        rid = uuid.uuid4().hex
        arrived = time.monotonic()
        time.sleep(random.uniform(0.02, 0.08))  # prefill
        on_prefill_done(rid, arrived_at=arrived)
        time.sleep(random.uniform(0.001, 0.01))  # KV transfer
        on_first_decode_step(rid)
        time.sleep(0.025)  # first decode step
        on_first_token(rid)
