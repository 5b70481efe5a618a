"""kvmodel.critical: the linear case's points go to ``transfer`` as arrays; the answer must be
the one of the scalar search it replaced, and each array value the scalar call's."""

import math
from dataclasses import replace

import numpy as np
import pytest

from kvmodel import catalog
from kvmodel.build import scenario_from_inputs
from kvmodel.critical import critical_seq_len
from kvmodel.wire import exposed_transfer_s


def linear(sc) -> bool:
    """The case the closed form serves (full attention, no descriptor cost, sent whole)."""
    full = all(g.window_tokens is None for g in sc.model.groups)
    return full and not sc.descriptor_s and not sc.layerwise


def scalar_critical(sc):
    """The linear search as it was (one scalar ``transfer`` per point)."""
    target, max_s = sc.k * sc.decode_step_s, sc.model.max_context_tokens

    def f(s):
        return float(exposed_transfer_s(sc, int(s)))

    if f(max_s) < target:
        return None
    c = f(0)
    guess = max(1, math.ceil((target - c) / (f(1) - c)))
    while guess > 1 and f(guess - 1) >= target:
        guess -= 1
    while f(guess) < target:
        guess += 1
    return guess if guess <= max_s else None


CASES = [
    {},
    {"stack": "ideal", "step": "30", "tp": "1"},
    {"model": "llama-3.1-8b", "link": "ib-ndr", "batch": "8"},
    {"model": "deepseek-v3", "link": "100gbe"},
    {"link": "25gbe", "step": "5"},
    {"link": "nvlink4", "tp": "8", "k": "4"},
    {"comp": "int8", "link": "200gbe"},
    {"model": "mistral-7b", "kvd": "fp8", "link": "400gbe", "step": "12"},
]


@pytest.mark.parametrize("query", CASES)
def test_linear_critical_length_is_the_scalar_searchs(query):
    sc = scenario_from_inputs(query)
    if not linear(sc):
        sc = replace(sc, descriptor_s=0.0, layerwise=False)
    assert linear(sc) or any(g.window_tokens for g in sc.model.groups)
    for link in ("100gbe", "ib-ndr", "pcie5", sc.link.id):
        s = sc.with_link(catalog.get_link(link))
        if not linear(s):
            continue
        assert critical_seq_len(s) == scalar_critical(s)
        for k in (0.2, 1.0, 3.0):
            s2 = replace(s, k=k)
            assert critical_seq_len(s2) == scalar_critical(s2)


@pytest.mark.parametrize("query", CASES)
def test_transfer_over_an_array_is_the_scalar_call_elementwise(query):
    sc = scenario_from_inputs(query)
    pts = [0, 1, 2, 17, 1145, 4096, sc.model.max_context_tokens - 1, sc.model.max_context_tokens]
    vals = np.asarray(exposed_transfer_s(sc, np.array(pts, dtype=np.int64)), dtype=float)
    assert vals.tolist() == [float(exposed_transfer_s(sc, p)) for p in pts]


def test_a_target_on_the_line_at_a_whole_length_is_checked_by_the_values(monkeypatch):
    """The line through S = 0, 1 and max S decides only when the target lies clearly between
    two whole lengths; a target equal to the transfer at S = 1,000 is left to the values (the
    answer is the scalar search's either way), and most targets are decided by the line."""
    from kvmodel import critical

    sc = scenario_from_inputs({"link": "100gbe", "stack": "ideal", "step": "30", "tp": "1"})
    assert linear(sc)
    at_1000 = float(exposed_transfer_s(sc, 1000))
    on = replace(sc, k=at_1000 / sc.decode_step_s)
    decided, real = [], critical.line_decides

    def spy(*args):
        decided.append(real(*args))
        return decided[-1]

    monkeypatch.setattr(critical, "line_decides", spy)
    assert critical_seq_len(on) == scalar_critical(on)
    assert decided == [False]
    assert critical_seq_len(replace(sc, k=0.77)) == scalar_critical(replace(sc, k=0.77))
    assert decided == [False, True]
