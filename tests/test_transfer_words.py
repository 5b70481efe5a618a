"""kvview.words: the transfer as the sum of its terms, counts with their nouns."""

import pytest


def test_the_transfer_sum_adds_up_to_the_transfer_the_page_shows():
    """Overview's "How these numbers are computed" lists the transfer's terms: the stack's
    per-request cost was missing, so 0.004 + 4.53 ms were said to make 4.93 ms (session 22's
    review).  Mooncake on 8 × 100 GbE, the 70B at 1,024 tokens: 0.004 + 0.395 + 4.53 = 4.93."""
    from kvmodel.build import build_scenario
    from kvmodel.transfer import evaluate
    from kvview.words import each_link, plural, transfer_sum_text

    ev = evaluate(build_scenario(stack="mooncake", tp=8))
    assert sum(ev.transfer_terms.values()) == pytest.approx(ev.transfer_s, rel=1e-12)
    text = transfer_sum_text(ev)
    assert "stack per request 0.395 ms" in text and text.endswith("= 4.93 ms.")
    assert "descriptors" not in text  # zero terms are left out
    lw = evaluate(build_scenario(stack="mooncake", tp=8, layerwise=True))
    assert "sent layer by layer" in transfer_sum_text(lw)
    assert f"{lw.exposed_s * 1e3:.2f} ms is exposed" in transfer_sum_text(lw)
    assert plural(1, "parallel link") == "1 parallel link"
    assert plural(8, "parallel link") == "8 parallel links"
    assert each_link(1) == "its one link" and each_link(8) == "each of the 8 parallel links"
