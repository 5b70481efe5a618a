"""What a traffic read returns (kvmodel.traffic.result)."""

import numpy as np
import pytest

from kvmodel.traffic import Requests
from kvmodel.traffic.result import arrow_message, examples


def test_requests_checks_lengths():
    r = Requests(np.array([1, 2]), np.array([3.0, 1.0]), None, None, None, "histogram")
    assert r.n_requests == 4
    with pytest.raises(ValueError, match="weights has 1 entries; expected 2"):
        Requests(np.array([1, 2]), np.array([3.0]), None, None, None, "histogram")


def test_examples_are_the_first_five_in_file_order():
    skipped = [(9, "row 9: x"), (2, "row 2: y"), (30, "line 30"), (4, "a"), (7, "b"), (5, "c")]
    assert examples(skipped) == ("row 2: y", "a", "c", "b", "row 9: x")
    assert examples([]) == ()


def test_arrow_message_is_its_first_line_without_the_parser_prefix():
    exc = ValueError("CSV parse error: Expected 2 columns, got 3: 1,2,3\nmore detail")
    assert arrow_message(exc) == "Expected 2 columns, got 3: 1,2,3"
    assert arrow_message(KeyError()) == "KeyError"
