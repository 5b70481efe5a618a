"""ui.memo: the pages' result cache (keys, identity, eviction, threads)."""

import threading

import numpy as np
import pandas as pd
import pytest

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from ui.memo import Memo, approx_bytes


def counting():
    calls = []

    def f(*args, **kwargs):
        calls.append((args, kwargs))
        return len(calls)

    return f, calls


def test_evaluate_is_memoised_per_scenario():
    # tables, timelines and solvers that meet one scenario share its evaluation (session 23
    # moved the decorator onto a helper by mistake, and every page paid for it)
    sc = build_scenario(model="llama-3-70b", seq_len=1024)
    evaluate.cache_clear()
    assert evaluate(sc) is evaluate(sc)
    assert evaluate.cache_info().hits == 1


def test_same_inputs_computed_once_and_shared():
    memo, (f, calls) = Memo(), counting()
    assert memo(f, 1, [2, 3], k="a") == 1
    assert memo(f, 1, [2, 3], k="a") == 1
    assert len(calls) == 1 and memo.hits == 1 and memo.misses == 1


@pytest.mark.parametrize(
    "a, b",
    [
        ((1,), (2,)),
        ((1,), (1.0,)),  # equal in Python, different types: separate entries
        ((1,), (True,)),
        (([1, 2],), ((1, 2),)),  # a list is not a tuple
        (([1, 2],), ([2, 1],)),
        ((None,), (0,)),
    ],
)
def test_different_inputs_are_different_entries(a, b):
    memo, (f, calls) = Memo(), counting()
    assert memo(f, *a) != memo(f, *b)
    assert len(calls) == 2


def test_keyword_order_does_not_matter_but_values_do():
    memo, (f, _calls) = Memo(), counting()
    assert memo(f, x=1, y=2) == memo(f, y=2, x=1) == 1
    assert memo(f, x=1, y=3) == 2


def test_functions_with_the_same_name_do_not_share_entries():
    memo = Memo()

    def make(value):
        def g():
            return value

        return g

    assert memo(make("one")) == "one"
    assert memo(make("two")) == "two"


def test_scenarios_key_by_value():
    memo = Memo()
    a = build_scenario(model="llama-3-70b", link="100gbe", batch=4)
    b = build_scenario(model="llama-3-70b", link="100gbe", batch=4)
    c = build_scenario(model="llama-3-70b", link="100gbe", batch=5)
    assert a is not b
    assert memo(evaluate, a) is memo(evaluate, b)
    assert memo(evaluate, c).kv_total_bytes == pytest.approx(
        5 * 327_680 * 1024  # Llama-3-70B: 327,680 B per token in FP16 (2 × 80 × 8 × 128 × 2)
    )
    assert memo.misses == 2


def test_unhashable_arguments_key_by_identity_and_stay_alive():
    memo, (f, _calls) = Memo(), counting()
    df = pd.DataFrame({"x": [1, 2]})
    same_content = df.copy()
    assert memo(f, df) == memo(f, df) == 1
    assert memo(f, same_content) == 2  # another object: another entry (never a wrong hit)
    entry_args = [e[1] for e in memo._entries.values()]
    assert any(args[0] is df for args in entry_args)  # the entry holds it: the id stays unique


def test_least_recently_used_entry_is_evicted():
    memo, (f, calls) = Memo(max_entries=2), counting()
    memo(f, 1)
    memo(f, 2)
    memo(f, 1)  # 1 is now the most recent
    memo(f, 3)  # evicts 2
    assert len(memo) == 2
    memo(f, 1)
    assert len(calls) == 3
    memo(f, 2)
    assert len(calls) == 4


def test_clear_and_bad_size():
    memo, (f, calls) = Memo(), counting()
    memo(f, 1)
    memo.clear()
    memo(f, 1)
    assert len(calls) == 2
    with pytest.raises(ValueError, match="max_entries"):
        Memo(max_entries=0)


def test_threads_get_the_right_results():
    memo = Memo(max_entries=8)
    errors = []

    def square(x):
        return x * x

    def work(offset):
        for i in range(200):
            x = (i + offset) % 20
            if memo(square, x) != x * x:
                errors.append(x)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(memo) <= 8


def test_around_miss_wraps_only_computations():
    import contextlib

    memo, (f, calls) = Memo(), counting()
    entered = []

    @contextlib.contextmanager
    def spinner():
        entered.append(len(calls))
        yield

    assert memo.call(f, (1,), {}, around_miss=spinner) == 1
    assert memo.call(f, (1,), {}, around_miss=spinner) == 1  # a hit: no spinner
    assert entered == [0] and len(calls) == 1


def test_an_explicit_key_ignores_the_arguments_and_does_not_keep_them():
    import gc
    import weakref

    class Payload:  # stands for an upload's bytes and its progress callback
        pass

    memo, seen = Memo(), []

    def parse(payload):
        seen.append(1)
        return len(seen)

    payload = Payload()
    alive = weakref.ref(payload)
    assert memo.call(parse, (payload,), {}, key=("file-1", "a.csv")) == 1
    del payload
    gc.collect()
    assert alive() is None  # the entry kept the result, not the arguments
    assert memo.call(parse, (Payload(),), {}, key=("file-1", "a.csv")) == 1  # same key: a hit
    assert memo.call(parse, (Payload(),), {}, key=("file-2", "a.csv")) == 2
    assert seen == [1, 1]


def test_entries_are_bounded_in_bytes():
    # issue 14: distinct share links whose results were large kept ~105 MB each
    import numpy as np

    memo = Memo(max_entries=100, max_bytes=10_000_000)
    calls = []

    def big(n):
        calls.append(n)
        return np.zeros(500_000)  # 4 MB

    for n in range(3):
        memo(big, n)
    assert len(memo) == 2 and 8_000_000 <= memo.bytes <= 8_001_000  # the oldest went
    memo(big, 2)
    assert calls == [0, 1, 2]  # still kept
    memo(big, 0)
    assert calls == [0, 1, 2, 0]  # evicted, computed again
    huge = memo(lambda: np.zeros(2_000_000))  # 16 MB: returned, never kept
    assert huge.nbytes == 16_000_000 and len(memo) == 2 and memo.bytes <= 10_000_000
    memo.clear()
    assert memo.bytes == 0


def test_approx_bytes():
    import numpy as np
    import plotly.graph_objects as go

    from ui.memo import approx_bytes

    arr = np.zeros(1_000_000)  # 8 MB
    assert 8e6 <= approx_bytes(arr) < 8.01e6
    assert 8e6 <= approx_bytes(pd.DataFrame({"a": arr})) < 8.1e6
    assert 16e6 <= approx_bytes({"x": [arr, arr + 1]}) < 16.1e6
    assert 8e6 <= approx_bytes(go.Figure(go.Scatter(x=arr, y=arr))) < 16.1e6
    # a template is counted as a constant 50 kB, not walked (plotly_white walks to ~48 kB)
    small = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]), layout_template="plotly_white")
    assert 50_000 < approx_bytes(small) < 60_000
    # a long list is sampled: 100,000 strings of 1,000 characters ≈ 105 MB
    assert 95e6 < approx_bytes([str(i).ljust(1000) for i in range(100_000)]) < 115e6
    assert approx_bytes(evaluate(build_scenario())) < 1e6


def test_number_arrays_key_by_content():
    """A grid made afresh on every run (np.geomspace) must hit: keyed by identity it missed on
    every rerun (Interconnects' batch sweep, bench/README.md Session 8)."""
    memo, (f, calls) = Memo(), counting()
    grid = np.unique(np.geomspace(1, 256, 30).round().astype(int))
    assert memo(f, grid) == memo(f, grid.copy()) == 1
    assert memo(f, grid.astype(float)) == 2  # another dtype: another entry
    assert memo(f, grid[:-1]) == 3  # other content
    assert memo(f, grid.reshape(1, -1)) == 4  # another shape
    big = np.zeros(200_000)  # over the content limit: by identity
    assert memo(f, big) == memo(f, big) == 5
    assert memo(f, big.copy()) == 6
    assert len(calls) == 6


def test_catalog_specs_are_counted_flat_not_walked():
    """A model, GPU, link or stack spec is shared with the catalog: a flat size, the same for a
    large model as for a small one (walking them was nine tenths of a Scenario's estimate)."""
    from kvmodel import catalog
    from kvmodel.build import scenario_from_inputs

    big, small = catalog.get_model("deepseek-v3"), catalog.get_model("llama-3.1-8b")
    assert approx_bytes(big) == approx_bytes(small) == approx_bytes(catalog.get_gpu("h100-sxm"))
    a = scenario_from_inputs({"model": "deepseek-v3"})
    b = scenario_from_inputs({"model": "llama-3.1-8b"})
    assert approx_bytes(a) == approx_bytes(b) < 20_000


def test_a_list_of_records_is_sampled_within_a_quarter_of_its_walk():
    """Rows of dicts (Compare's changes against A) are sized from every few of them: the
    estimate stays within 25 % of walking them all, and a list 10 times as long is ~10 times
    the size."""
    import sys

    def walked(rows):
        return sys.getsizeof(rows) + sum(
            sys.getsizeof(r) + sum(sys.getsizeof(k) + sys.getsizeof(v) for k, v in r.items())
            for r in rows
        )

    rows = [{"label": f"B{i}", "key": f"k{i % 15}", "value": i * 0.5, "verdict": "better",
             "relative": -0.1 * i, "better": "lower"} for i in range(60)]  # fmt: skip
    assert 0.75 < approx_bytes(rows) / walked(rows) < 1.25
    long = rows * 10
    assert 8 < approx_bytes(long) / approx_bytes(rows) < 12
