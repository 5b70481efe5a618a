"""kvmodel.wire keeps the last Volumes made without one given: a transfer reads the same numbers
as with a fresh Volume, and a scenario that differs in a link-independent field gets its own."""

from dataclasses import fields, replace

import numpy as np
import pytest

from kvmodel import catalog
from kvmodel.build import scenario_from_inputs
from kvmodel.wire import Volume, clear_volumes, kept_volumes, transfer

QUERIES = [
    {},
    {"model": "llama-3.1-8b", "link": "ib-ndr", "batch": "8", "comp": "int8"},
    {"model": "deepseek-v3", "link": "100gbe", "lw": "1"},
    {"model": "mistral-7b", "stack": "ideal", "step": "30", "tp": "1"},
]


def _numbers(t) -> dict:
    names = [f.name for f in fields(t) if f.name != "volume"] + ["prefill_s"]  # prefill: lazy
    return {name: np.asarray(getattr(t, name)).tolist() for name in names}


@pytest.mark.parametrize("query", QUERIES)
def test_a_kept_volume_gives_the_fresh_volumes_transfer(query):
    sc = scenario_from_inputs(query)
    variants = [
        sc,
        sc.with_link(catalog.get_link("pcie5")),
        replace(sc, compression="fp8"),
        replace(sc, layerwise=not sc.layerwise),
        replace(sc, seq_len=sc.seq_len // 2),
    ]
    grid = np.array([1, 100, 4096])
    for s in variants:
        for kw in ({}, {"seq_len": grid}, {"batch": np.array([1, 2, 8])}, {"seq_len": 777}):
            clear_volumes()
            first = _numbers(transfer(s, **kw))  # makes and keeps the volume
            again = _numbers(transfer(s, **kw))  # from the kept one
            fresh = _numbers(transfer(s, volume=Volume(s, kw.get("seq_len"), kw.get("batch"))))
            assert first == again == fresh


def test_volumes_are_shared_only_between_link_variants_and_read_only():
    clear_volumes()
    sc = scenario_from_inputs({})
    transfer(sc)
    transfer(sc.with_link(catalog.get_link("pcie5")))  # a per-link field: the same volume
    assert len(kept_volumes()) == 1
    transfer(replace(sc, batch=sc.batch + 1))  # what moves differs: a volume of its own
    transfer(sc, seq_len=np.array([1, 2, 3]))
    assert len(kept_volumes()) == 3
    for vol in kept_volumes():
        assert not vol.raw.flags.writeable and not vol.s.flags.writeable
    # the prefill is computed when first asked (a sweep of the exposed transfer sent whole
    # never asks), and read-only then too
    vol = kept_volumes()[-1]
    assert "prefill" not in vars(vol)
    assert not vol.prefill.flags.writeable and "prefill" in vars(vol)
    with pytest.raises(ValueError):
        transfer(sc, seq_len=-1)  # a bad input still raises, and is not kept
    assert len(kept_volumes()) == 3


def test_a_volume_counts_each_stacks_messages_once_and_apart():
    """Volume.messages keeps the messages per kind of stack (session 20): a block-posting and
    a layer-posting stack tried on one scenario each get their own, equal to a fresh count."""
    sc = scenario_from_inputs({"model": "deepseek-v3", "batch": "4", "stack": "mooncake"})
    nccl = replace(sc, stack=catalog.get_stack("nccl"))
    clear_volumes()
    block, layer = transfer(sc), transfer(nccl)  # one kept volume serves both
    assert block.volume is layer.volume
    rows_b, total_b = block.volume.messages("block")
    rows_l, total_l = layer.volume.messages("layer")
    assert float(total_b) != float(total_l)
    assert block.volume.messages("block")[1] is total_b  # counted once
    fresh = Volume(sc)
    assert np.array_equal(fresh.messages("block")[0], rows_b)
    assert np.array_equal(fresh.messages("layer")[0], rows_l)
    for s in (sc, nccl):
        assert _numbers(transfer(s, volume=Volume(s))) == _numbers(transfer(s))
