"""The decode pool's blocks on threads (kvmodel.replay.parallel): the blocks depend on the
pool's size only, and a replay run by one thread or two is the same, bit for bit."""

import numpy as np
import pytest

from kvmodel import capacity as cap
from kvmodel import replay as rp
from kvmodel.build import build_scenario
from kvmodel.replay import parallel


def test_blocks_cover_every_row_once():
    assert parallel.blocks(1, 10**6) == [slice(0, 1)]  # one instance: one block
    assert parallel.blocks(21, 10) == [slice(0, 21)]  # a small pool: one block
    assert parallel.blocks(21, 50_000) == [slice(0, 10), slice(10, 21)]


def test_threads_honours_the_environment(monkeypatch):
    monkeypatch.setenv(parallel.ENV, "1")
    assert parallel.threads() == 1
    monkeypatch.setenv(parallel.ENV, "lots")  # not a whole number: ignored
    assert 1 <= parallel.threads() <= parallel.MAX_THREADS


@pytest.mark.parametrize("instances", [7, 40])
def test_one_thread_and_two_give_the_same_timeline(monkeypatch, instances):
    """A memory-bound pool of 200,000 requests (two blocks): every field equal."""
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    stream = rp.poisson_stream(cap.Workload.fixed(30.0, 4096, 1024), sc.model.max_context_tokens,
                               200_000)  # fmt: skip
    dep = rp.Deployment(sc, 4, 8, 40, instances)
    assert len(parallel.blocks(instances, -(-stream.n // instances))) == 2
    monkeypatch.setenv(parallel.ENV, "1")
    one = rp.replay(dep, stream)
    r1 = rp.summarise(one, ttft_slo_s=2.0, tpot_slo_s=0.05, q=90.0, poisson=True)
    monkeypatch.delenv(parallel.ENV)
    two = rp.replay(dep, stream)
    r2 = rp.summarise(two, ttft_slo_s=2.0, tpot_slo_s=0.05, q=90.0, poisson=True)
    for name in ("decode_start_s", "first_token_s", "tpot_s", "depart_s", "kv_arrival_s",
                 "reserved_tokens", "waiting"):  # fmt: skip
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    assert r1.to_json() == r2.to_json()


def test_blocks_give_the_timeline_of_one_block(monkeypatch):
    """Cut into two blocks or not, the pool's requests get the same times (the rows' kernels
    do the same arithmetic on each row)."""
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    stream = rp.poisson_stream(cap.Workload.fixed(30.0, 4096, 1024), sc.model.max_context_tokens,
                               200_000)  # fmt: skip
    dep = rp.Deployment(sc, 4, 8, 40, 7)
    two = rp.replay(dep, stream)
    monkeypatch.setattr(parallel, "MIN_CELLS", 10**12)  # every pool one block
    one = rp.replay(dep, stream)
    for name in ("decode_start_s", "first_token_s", "tpot_s", "depart_s", "reserved_tokens"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
