"""Filling a table's columns piece by piece (kvmodel.traffic.collect): rows beyond the first
piece's estimate are kept aside and joined in order."""

import pytest
from traffic_helpers import load_text, shrink_pieces


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


def test_short_rows_after_a_long_first_piece_overflow_the_estimate(small_pieces):
    long = [f"{i},{'9' * 60}" for i in range(100)]  # the first piece: few long rows
    short = [f"{i},{i % 50}" for i in range(100, 20_000)]  # then many short ones
    r = load_text("prompt_tokens,note\n" + "\n".join(long + short) + "\n", "t.csv")
    assert r.prompt_tokens.tolist() == list(range(20_000)) and r.skipped_rows == 0
