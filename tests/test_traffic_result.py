"""What a traffic read returns (kvmodel.traffic.result)."""

import numpy as np
import pytest

from kvmodel.traffic import Requests


def test_requests_checks_lengths():
    r = Requests(np.array([1, 2]), np.array([3.0, 1.0]), None, None, None, "histogram")
    assert r.n_requests == 4
    with pytest.raises(ValueError, match="weights has 1 entries; expected 2"):
        Requests(np.array([1, 2]), np.array([3.0]), None, None, None, "histogram")
