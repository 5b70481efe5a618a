"""Transfer time and layer-wise overlap of one scenario, and the link-independent ``Volume``.

Transfer (whole cache after prefill)::

    t = latency + wire_bytes ÷ (bandwidth × efficiency × streams)
        + descriptors × descriptor_cost ÷ streams + quantize + dequantize

Layer-wise sending splits the same work into one chunk per cache-carrying layer; chunk j can
leave once prefill has computed layer j (at (j+1)/n of the prefill).  The decode node then waits

    exposed = max_j [ ready_j + Σ_{i ≥ j} x_i ] − prefill

after prefill ends, where x_i is chunk i's own time (including its latency).  With n equal
chunks this is ``max(T/n, T − prefill × (n−1)/n)``: a single chunk when the link keeps up with
compute, otherwise what is left once compute stops.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields, replace
from functools import cached_property

import numpy as np

from .dtypes import compressed_bytes_per_value, kv_dtype_bytes
from .kept import Kept
from .scenario import Scenario
from .size import as_tokens, chunk_kind_bytes, chunk_rows, chunk_runs, kv_bytes, window_held
from .timing import estimate_prefill_s


@dataclass(frozen=True)
class Transfer:
    """Components of one transfer [s, bytes]; arrays broadcast over the seq_len × batch asked."""

    raw_wire_bytes: np.ndarray  # before compression
    wire_bytes: np.ndarray  # after compression
    serialization_s: np.ndarray
    latency_s: float
    descriptor_s: np.ndarray
    codec_s: np.ndarray  # quantize + dequantize
    transfer_s: np.ndarray  # the whole transfer after prefill, no overlap
    exposed_s: np.ndarray  # what the decode node waits after prefill ends
    volume: Volume = field(repr=False, compare=False)

    @cached_property
    def prefill_s(self) -> np.ndarray:
        """The prefill before it [s] (the volume's, computed when first asked: a sweep of the
        exposed transfer alone never needs it unless sent layer by layer)."""
        return np.asarray(self.volume.prefill, dtype=float)


def wire_ratio(sc: Scenario) -> float:
    storage = kv_dtype_bytes(sc.kv_dtype, scale_group=sc.kv_scale_group)
    comp = compressed_bytes_per_value(sc.compression, storage_bytes=storage, group=sc.comp_group)
    return comp / storage


def prefill_time_s(sc: Scenario, seq_len=None, batch=None, prefix=None) -> np.ndarray:
    """The scenario's prefill [s] (its typed one, or the estimate) at ``seq_len`` computed
    tokens after ``prefix`` cached ones (None: none; ``timing.prefill_flops``)."""
    s = sc.seq_len if seq_len is None else seq_len
    b = sc.batch if batch is None else batch
    if sc.prefill_s is not None:
        return np.broadcast_to(
            np.asarray(sc.prefill_s, dtype=float), np.broadcast(np.asarray(s), np.asarray(b)).shape
        )
    return estimate_prefill_s(sc.model, s, b, gpu=sc.gpu, tp=sc.tp_prefill, mfu=sc.mfu,
                              ep=sc.ep_prefill, prefix=prefix, framework=sc.framework)  # fmt: skip


# Scenario fields a transfer's link-independent parts do not depend on (see ``Volume``).
PER_LINK_FIELDS = ("link", "efficiency", "parallel_links", "compression", "comp_group",
                   "codec_bytes_per_s", "layerwise", "descriptor_s", "decode_step_s", "k",
                   "share_target", "stack")  # fmt: skip


_VOLUME_FIELDS = tuple(f.name for f in fields(Scenario) if f.name not in PER_LINK_FIELDS)


class Volume:
    """What moves, for given S and B: everything of a transfer the link does not change.

    Wire bytes before compression, per-layer chunk bytes, descriptor counts and the prefill
    time depend on the model, dtype, TP, block size, GPU and prefill, never on the link,
    compression or layer-wise sending.  ``transfer(sc, volume=...)`` reuses them, so trying many
    links and mitigations on one scenario (``solve.try_mitigations``) computes them once.
    """

    def __init__(self, sc: Scenario, seq_len=None, batch=None, prefix=None):
        self.scenario = sc
        self.s = as_tokens(sc.seq_len if seq_len is None else seq_len, "seq_len")
        self.b = as_tokens(sc.batch if batch is None else batch, "batch")
        self.raw = kv_bytes(
            sc.wire_model,
            self.s,
            self.b,
            kv_dtype=sc.kv_dtype,
            kv_scale_group=sc.kv_scale_group,
            tp_prefill=sc.tp_prefill,
            tp_decode=sc.kv_tp_decode,
        ).wire
        self.prefix = prefix
        self.frozen = False  # a kept volume's arrays are read-only (``_kept_volume``)
        self._messages: dict[str, tuple] = {}  # by the stack's message kind (``messages``)

    @cached_property
    def prefill(self) -> np.ndarray:
        """The prefill [s] at these S and B (``prefill_time_s``), computed when first asked: a
        sweep of the exposed transfer needs it only when sent layer by layer (about 40 % of a
        scalar ``transfer`` call otherwise, bench/README.md session 16)."""
        out = prefill_time_s(self.scenario, self.s, self.b, self.prefix)
        if self.frozen and isinstance(out, np.ndarray):
            out.flags.writeable = False
        return out

    def messages(self, message: str) -> tuple[np.ndarray, np.ndarray]:
        """(per layer of each kind, in the whole cache) the messages of a stack that posts one
        per ``message`` ("block" or "layer"; ``_kind_messages``): they depend on the volume and
        the kind only, so the links and mitigations tried on one scenario count them once
        (~a quarter of a scalar ``transfer`` call; session 20)."""
        made = self._messages.get(message)
        if made is None:
            rows = _kind_messages(self.scenario, self, message)
            per_layer = Counter(chunk_rows(self.scenario.model))
            lead = (len(rows),) + (1,) * (rows.ndim - 1)
            n = np.array([per_layer[k] for k in range(len(rows))], dtype=float).reshape(lead)
            made = (rows, (rows * n).sum(axis=0))
            if self.frozen:
                for arr in made:
                    if isinstance(arr, np.ndarray):
                        arr.flags.writeable = False
            self._messages[message] = made
        return made

    def fits(self, sc: Scenario) -> bool:
        """True when ``sc`` differs from this volume's scenario only in per-link fields."""
        base = self.scenario
        return sc is base or all(
            getattr(sc, name) == getattr(base, name) for name in _VOLUME_FIELDS
        )

    @cached_property
    def kind_raw(self) -> np.ndarray:
        """Wire bytes of one layer of each kind (``chunk_kind_bytes``), before compression."""
        sc = self.scenario
        return chunk_kind_bytes(
            sc.wire_model,
            self.s,
            self.b,
            kv_dtype=sc.kv_dtype,
            kv_scale_group=sc.kv_scale_group,
            tp_decode=sc.kv_tp_decode,
        )

    @cached_property
    def descriptor_counts(self) -> list[np.ndarray]:
        """Descriptors per chunk type: (blocks × tensors) per layer per decode rank."""
        sc = self.scenario
        return [
            np.ceil(window_held(g, self.s) / sc.block_tokens) * g.tensors * self.b * sc.kv_tp_decode
            for g in sc.wire_model.groups
        ]


VOLUMES = 64  # the last Volumes made without one given are kept (a page's ~70 transfers
KEYED_POINTS = 4096  # make ~13 distinct ones); arrays up to this many values keyed by content
_VOLUMES = Kept(VOLUMES)


def _points_key(x):
    """A key for a ``seq_len`` or ``batch`` argument (None: too large or not keyable)."""
    if x is None or (isinstance(x, (int, float, np.number)) and not isinstance(x, np.ndarray)):
        return (type(x), x)
    if isinstance(x, np.ndarray) and x.size <= KEYED_POINTS and x.dtype.kind in "iuf":
        return (x.dtype.str, x.shape, x.tobytes())
    return None


def _volume_key(sc: Scenario, seq_len, batch):
    s, b = _points_key(seq_len), _points_key(batch)
    if s is None or b is None:
        return None
    key = (tuple(getattr(sc, name) for name in _VOLUME_FIELDS), s, b)
    try:
        hash(key)
    except TypeError:  # a field that cannot be hashed: not kept
        return None
    return key


def _kept_volume(sc: Scenario, seq_len, batch) -> Volume:
    """``Volume(sc, seq_len, batch)``, one of the last :data:`VOLUMES` when one was made for
    the same link-independent fields and points (``Volume.fits``: what a given volume may
    serve); its arrays are read-only, as they are shared."""
    key = _volume_key(sc, seq_len, batch)
    if key is None:
        return Volume(sc, seq_len, batch)
    hit = _VOLUMES.get(key)
    if hit is not None:
        return hit
    made = Volume(sc, seq_len, batch)  # raises as before on a bad input
    made.frozen = True
    for arr in (made.s, made.b, made.raw):
        if isinstance(arr, np.ndarray):
            arr.flags.writeable = False
    _VOLUMES.put(key, made)
    return made


def kept_volumes() -> tuple[Volume, ...]:
    """The volumes kept now, least recently used first (at most :data:`VOLUMES`)."""
    return _VOLUMES.values()


def clear_volumes() -> None:
    """Forget the kept volumes (tests; benchmarks of a cold transfer)."""
    _VOLUMES.clear()


def _volume(sc: Scenario, seq_len, batch, volume: Volume | None) -> Volume:
    if volume is None:
        return _kept_volume(sc, seq_len, batch)
    if seq_len is not None or batch is not None or not volume.fits(sc):
        raise ValueError("volume was computed for another scenario, sequence length or batch")
    return volume


def _streams(sc: Scenario, vol: Volume):
    """Links used at once, per batch entry (``Scenario.streams`` at each batch: a batch smaller
    than the ranks holding whole requests uses fewer links); as given when given."""
    if sc.parallel_links or sc.request_holders == 1:  # one holder: the same links at any batch
        return sc.streams
    return sc.streams_at(vol.b)


def _kind_messages(sc: Scenario, vol: Volume, message: str) -> np.ndarray:
    """The messages in one layer of each kind (rows of ``Volume.kind_raw``) of a stack that
    posts one per ``message``: KV blocks × tensors × decode ranks ("block"), or tensors ×
    decode ranks per request ("layer"); a state layer is one message per request and rank."""
    shape = np.shape(vol.kind_raw)[1:]
    rows = []
    for g, blocks in zip(sc.wire_model.groups, vol.descriptor_counts, strict=True):
        n = blocks if message == "block" else g.tensors * vol.b * sc.kv_tp_decode
        rows.append(np.broadcast_to(n, shape))
    if sc.model.state_layers:
        rows.append(np.broadcast_to(vol.b * sc.kv_tp_decode, shape))
    return np.stack(rows).astype(float)


def _posters(sc: Scenario, vol: Volume):
    """Decode ranks posting messages in parallel (each rank's agent posts its own): all of them
    with tensor-parallel attention, one per request (up to TP) with data-parallel attention."""
    return np.minimum(sc.tp_decode, vol.b) if sc.data_parallel_attention else sc.tp_decode


def _stack_s(sc: Scenario, vol: Volume, wire, messages, bandwidth):
    """Time of ``wire`` bytes in ``messages`` messages through the stack: the bytes at the
    stack's efficiency of ``bandwidth``, the messages' posting spread over the decode ranks,
    overlapped (RDMA engines) or one after the other (NCCL kernels)."""
    data = wire / (bandwidth * sc.stack.efficiency_max)
    post = messages * sc.stack.message_s / _posters(sc, vol)
    return np.maximum(data, post) if sc.stack.overlap else data + post


def _kind_times_s(sc: Scenario, vol: Volume) -> np.ndarray:
    """Own send time of one layer of each kind (rows of ``chunk_kind_bytes``), shape (k, ...)."""
    raw = vol.kind_raw
    ratio = wire_ratio(sc)
    streams = _streams(sc, vol)
    bandwidth = sc.link.bandwidth_bytes_per_s * sc.efficiency * streams
    if sc.stack.is_ideal:
        t = sc.link.latency_s + raw * ratio / bandwidth
    else:
        moved = _stack_s(sc, vol, raw * ratio, vol.messages(sc.stack.message)[0], bandwidth)
        t = sc.link.latency_s + sc.stack.chunk_s + moved
    if ratio < 1:
        t = t + 2 * raw / (sc.codec_bytes_per_s * streams)
    if sc.descriptor_s:
        # descriptor cost per layer differs only for windowed groups: every layer gets the mean,
        # which keeps the total exact
        t = t + _descriptor_total(sc, vol) * sc.descriptor_s / streams / len(chunk_rows(sc.model))
    return t


def _descriptor_total(sc: Scenario, vol: Volume) -> np.ndarray:
    """Descriptors of the whole cache: attention layers' blocks × tensors, one per state layer."""
    per_layer = Counter(chunk_rows(sc.model))  # layers of each kind (state: len(groups))
    return (
        sum(per_layer[gi] * c for gi, c in enumerate(vol.descriptor_counts))
        + sc.model.state_layers * vol.b * sc.kv_tp_decode
    )


def chunk_times_s(sc: Scenario, seq_len=None, batch=None, *, volume: Volume | None = None):
    """Each layer's own send time x_i (latency, bytes, descriptors, codec), shape (n, ...)."""
    vol = _volume(sc, seq_len, batch, volume)
    return _kind_times_s(sc, vol)[np.asarray(chunk_rows(sc.model))]


def _layerwise(sc: Scenario, vol: Volume, prefill) -> tuple[np.ndarray, np.ndarray]:
    """(whole, exposed) of layer-wise sending: exposed = max_j [ready_j + Σ_{i≥j} x_i] − P.

    Within a run of layers of one kind the bracket is linear in j, so its maximum is at one of
    the run's two ends: only 2 × runs candidates are evaluated, not every layer.
    """
    x = _kind_times_s(sc, vol)
    kinds, starts, ends = chunk_runs(sc.model)
    n = len(chunk_rows(sc.model))
    lead = (len(kinds),) + (1,) * (x.ndim - 1)
    own = x[kinds]  # one layer of each run's kind
    run_total = own * (ends - starts + 1).reshape(lead)
    after = np.cumsum(run_total[::-1], axis=0)[::-1] - run_total  # Σ over later runs
    at_start = ((starts + 1) / n).reshape(lead) * prefill + after + run_total
    at_end = ((ends + 1) / n).reshape(lead) * prefill + after + own
    exposed = np.maximum(at_start.max(axis=0), at_end.max(axis=0)) - prefill
    return after[0] + run_total[0], exposed


def transfer(sc: Scenario, seq_len=None, batch=None, *, volume: Volume | None = None,
             prefix=None) -> Transfer:  # fmt: skip
    """Transfer time of ``sc``; pass arrays for ``seq_len``/``batch`` to sweep them.

    ``volume``: a ``Volume`` of a scenario that differs from ``sc`` only in per-link fields
    (then leave ``seq_len`` and ``batch`` out); its link-independent parts are reused.
    ``prefix``: cached prompt tokens before the ``seq_len`` sent ones (a prefix cache: they
    lengthen the prefill's attention, not the transfer; ``timing.prefill_flops``).
    """
    if prefix is not None and volume is None:
        volume = Volume(sc, seq_len, batch, prefix)
        seq_len = batch = None
    vol = _volume(sc, seq_len, batch, volume)
    ratio = wire_ratio(sc)
    raw = vol.raw
    wire = raw * ratio
    streams = _streams(sc, vol)
    bandwidth = sc.link.bandwidth_bytes_per_s * sc.efficiency * streams
    stack = sc.stack
    if stack.is_ideal:
        ser = wire / bandwidth
        fixed = 0.0
    else:  # every layer's messages and bytes, posted and moved as one chunk
        messages = vol.messages(sc.stack.message)[1]
        ser = np.broadcast_to(_stack_s(sc, vol, wire, messages, bandwidth), raw.shape)
        fixed = stack.request_s
    codec = 2 * raw / (sc.codec_bytes_per_s * streams) if ratio < 1 else np.zeros_like(raw)
    if sc.descriptor_s:
        count = _descriptor_total(sc, vol)
        desc = np.broadcast_to(count * sc.descriptor_s / streams, raw.shape)
    else:
        desc = np.zeros_like(raw)
    whole = sc.link.latency_s + stack.chunk_s + fixed + ser + desc + codec
    if sc.layerwise:  # the stack's per-request cost is paid once, its per-chunk cost per layer
        whole, exposed = _layerwise(sc, vol, vol.prefill)
        whole, exposed = whole + fixed, exposed + fixed
    else:
        exposed = whole
    return Transfer(
        raw_wire_bytes=raw,
        wire_bytes=wire,
        serialization_s=ser,
        latency_s=sc.link.latency_s,
        descriptor_s=desc,
        codec_s=codec,
        transfer_s=whole,
        exposed_s=exposed,
        volume=vol,
    )


def wire_bytes_per_token(sc: Scenario) -> float:
    """Wire bytes one prompt token of one request adds (before compression)."""
    return float(Volume(replace(sc, seq_len=1, batch=1)).raw)


def exposed_transfer_s(sc: Scenario, seq_len) -> np.ndarray:
    return transfer(sc, seq_len=seq_len).exposed_s
