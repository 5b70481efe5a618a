"""From collected columns to Requests (kvmodel.traffic.assemble): histograms (bounds, overflow,
shares), a table with no usable row."""

import numpy as np
import pytest
from traffic_helpers import SAMPLES, error_of, load_text, load_traffic, shrink_pieces


@pytest.fixture
def small_pieces(monkeypatch):
    shrink_pieces(monkeypatch)


def test_histogram_sample():
    r = load_traffic(SAMPLES / "histogram_sample.csv")
    assert r.fmt == "histogram" and r.columns["weights_kind"] == "count"
    assert r.prompt_tokens.tolist() == [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert r.weights.tolist() == [812, 1450, 2210, 2630, 1985, 1240, 610, 215, 48]
    assert r.n_requests == 11200 and r.weights.dtype == np.float64


def test_histogram_overflow_row_and_duplicate_bounds():
    r = load_text("le,count\n100,5\n1000,3\n100,1\n+Inf,2\n1.5,4\n", "h.csv")
    assert r.prompt_tokens.tolist() == [1, 100, 1000]  # 1.5 -> 1 whole token; 100 summed
    assert r.weights.tolist() == [4, 6, 3]
    assert r.skipped_rows == 1 and r.columns["overflow_requests"] == 2
    assert r.skipped_examples == (
        "row 5: le is +Inf: 2 requests above 1000 tokens have no upper bound; left out",
    )


def test_histogram_probability_scaled_to_one():
    r = load_text("upper_bound,probability\n512,0.2\n2048,0.6\n8192,0.2\n", "p.csv")
    assert r.fmt == "histogram-probability"
    assert r.weights == pytest.approx([0.2, 0.6, 0.2]) and r.n_requests == pytest.approx(1)
    assert r.columns["total_requests"] == "unknown"
    assert r.columns["weights_kind"] == "probability" and r.columns["weights"] == "probability"
    r = load_text("tokens,pct\n100,30\n200,50\n", "p.csv")
    assert r.weights == pytest.approx([0.375, 0.625])


def test_histogram_bad_rows_and_empty():
    r = load_text("bucket,requests\n100,3\n200,-1\n300,x\n400,2\n", "h.csv")
    assert r.weights.tolist() == [3, 2] and r.skipped_rows == 2
    assert r.skipped_examples[0] == "row 3: requests is -1 (expected a number >= 0)"
    assert r.skipped_examples[1] == "row 4: requests is 'x' (expected a number >= 0)"
    assert "holds no requests" in error_of("le,count\n100,0\n200,0\n", "h.csv")


def test_short_rows_after_a_long_first_piece_overflow_the_estimate(small_pieces):
    long = [f"{i},{'9' * 60}" for i in range(100)]  # the first piece: few long rows
    short = [f"{i},{i % 50}" for i in range(100, 20_000)]  # then many short ones
    r = load_text("prompt_tokens,note\n" + "\n".join(long + short) + "\n", "t.csv")
    assert r.prompt_tokens.tolist() == list(range(20_000)) and r.skipped_rows == 0


def test_all_rows_bad_across_pieces_names_the_first(small_pieces):
    text = "prompt_tokens\n" + "x\n" * 3000
    msg = error_of(text, "t.csv")
    assert "none of the 3000 data rows is usable" in msg and "row 2: prompt_tokens is 'x'" in msg


def test_all_invalid_names_first_row():
    msg = error_of("prompt_tokens\n-1\nx\n", "t.csv")
    assert "row 2: prompt_tokens is -1" in msg and "row 3: prompt_tokens is 'x'" in msg
