"""One metric over its label sets (kvmodel.measure.metric): histogram_quantile by hand."""

import math
from pathlib import Path

import pytest

from kvmodel.measure import histogram_quantile

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data" / "measurements"
MIB = 2**20


def test_histogram_quantile_hand_computed():
    b = [(0.1, 10), (0.5, 30), (1.0, 40), (math.inf, 40)]
    assert histogram_quantile(0.5, b) == pytest.approx(0.1 + 0.4 * 10 / 20)  # 0.3
    assert histogram_quantile(0.9, b) == pytest.approx(0.5 + 0.5 * 6 / 10)  # 0.8
    assert histogram_quantile(0.99, b) == pytest.approx(0.5 + 0.5 * 9.6 / 10)  # 0.98
    assert histogram_quantile(0.1, b) == pytest.approx(0.1 * 4 / 10)  # first bucket from 0
    # a rank in +Inf returns the largest finite bound
    assert histogram_quantile(0.9, [(0.1, 10), (math.inf, 20)]) == pytest.approx(0.1)
    assert histogram_quantile(0.5, [(0.1, 0), (math.inf, 0)]) is None  # no observations
    assert histogram_quantile(0.5, [(0.1, 3), (1.0, 5)]) is None  # no +Inf bucket
    with pytest.raises(ValueError):
        histogram_quantile(1.5, b)
