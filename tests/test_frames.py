"""kvmodel.frames.column_lists reads a frame's columns as ``tolist`` does, value and type."""

import math

import numpy as np
import pandas as pd

from kvmodel.frames import column_lists


def _same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert len(g) == len(w)
        for a, b in zip(g, w, strict=True):
            assert type(a) is type(b), (a, b)
            if a is pd.NA or (isinstance(a, float) and math.isnan(a)):
                assert b is pd.NA or math.isnan(b)
            else:
                assert a == b


def test_numpy_dtypes_read_as_one_array_give_tolist_values():
    t = pd.DataFrame.from_dict(
        {"A": {"x": 1, "y": "gqa", "z": None}, "B": {"x": 2.5, "y": "mla", "z": 3}},
        orient="index", dtype=object,
    )  # fmt: skip
    t["f"] = [0.25, float("nan")]  # float64
    t["i"] = np.array([7, 8], dtype=np.int64)
    t["b"] = [True, False]
    names = ["f", "x", "b", "y", "i", "z"]
    got = column_lists(t, names)
    _same(got, [t[n].tolist() for n in names])
    assert got[0][0] == 0.25 and type(got[0][0]) is float  # a Python float, not np.float64
    assert got[4] == [7, 8] and type(got[4][0]) is int


def test_text_and_extension_dtypes_are_read_column_by_column():
    t = pd.DataFrame({"s": pd.array(["a", None], dtype="string"), "n": [1.0, 2.0],
                      "c": pd.Categorical(["p", "q"])})  # fmt: skip
    names = ["n", "s", "c"]
    _same(column_lists(t, names), [t[n].tolist() for n in names])


def test_duplicate_names_fall_back_to_pandas():
    t = pd.DataFrame([[1, 2]], columns=["a", "a"])
    assert column_lists(t, []) == []
