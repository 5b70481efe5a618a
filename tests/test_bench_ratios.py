"""bench/run_all.py's ratio table (issue 20 item 6): each ratio beside its target, PASS/FAIL,
and every missed ratio listed.  Hand-made bench results, no timing."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

from common import TRIVIAL_LABEL, ratio_cell  # noqa: E402
from run_all import ratio_summary  # noqa: E402


def _row(page, mode, ratio_median):
    return {"page": page, "mode": mode, "ratio_median": ratio_median}


def test_ratio_cell_against_its_target():
    assert ratio_cell(3.999, 4.0) == ("4.00× ≤4× PASS", True)
    assert ratio_cell(4.004, 4.0) == ("4.00× ≤4× FAIL", False)  # 2 decimals; the verdict exact
    assert ratio_cell(None, 2.0) == ("– ≤2× FAIL", False)
    assert ratio_cell(float("nan"), 2.0)[1] is False


def test_ratio_summary_takes_the_worst_mode_and_lists_misses():
    rerun = {"results": [
        _row(TRIVIAL_LABEL, "change", 1.0), _row(TRIVIAL_LABEL, "plain", 1.0),
        _row("Compare", "change", 3.5), _row("Compare", "plain", 4.5),  # worst: 4.5 > 4
        _row("Capacity", "change", 2.0), _row("Capacity", "plain", 1.5),
        _row("Capacity", "page", 5.0),  # a page control: its own column
    ]}  # fmt: skip
    c2c = {"results": [{"page": "Compare", "ratio_median": 1.9},
                       {"page": "Capacity", "ratio_median": 2.5}], "no_chart": []}  # fmt: skip
    cold = {"ratio": 1.1, "app_ms": 330.0, "trivial_ms": 300.0}
    text, missed = ratio_summary(rerun, c2c, cold)
    lines = {ln.split()[0]: ln for ln in text.splitlines()[2:]}
    assert "4.50× ≤4× FAIL" in lines["Compare"] and "1.90× ≤2× PASS" in lines["Compare"]
    assert "2.00× ≤4× PASS" in lines["Capacity"] and "5.00× ≤4× FAIL" in lines["Capacity"]
    assert "1.10× ≤1.2× PASS" in lines["cold"]
    assert TRIVIAL_LABEL.split()[0] not in lines
    assert missed == ["Compare: rerun ratio", "Capacity: page control ratio",
                      "Capacity: control→chart ratio"]  # fmt: skip


def test_the_first_page_in_the_browser_is_printed_and_not_judged():
    # cold_start.py --browser: what a user feels, a row of its own with "(info)"; a 1.5x there
    # adds no miss, while the script's cold start over its target does
    rerun = {"results": [_row(TRIVIAL_LABEL, "change", 1.0), _row("Models", "change", 2.0)]}
    cold = {"ratio": 5.3, "app_ms": 445.0, "trivial_ms": 84.0,
            "browser": {"ratio": 1.5, "app_ms": 3300.0, "trivial_ms": 2200.0}}  # fmt: skip
    text, missed = ratio_summary(rerun, None, cold)
    row = next(ln for ln in text.splitlines() if ln.startswith("first page"))
    assert "(3300 vs 2200 ms)" in row and "1.50× (info)" in row and "FAIL" not in row
    assert missed == ["cold start ratio"]


def test_the_cold_start_without_the_warm_up_is_printed_and_not_judged():
    # cold_start.py times the planner as make run serves it (ui.serve's warm-up before the
    # clock) against the target; plain `streamlit run app.py` is a row of its own, "(info)"
    rerun = {"results": [_row(TRIVIAL_LABEL, "change", 1.0), _row("Models", "change", 2.0)]}
    cold = {"ratio": 1.08, "app_ms": 86.0, "trivial_ms": 80.0,
            "unwarmed": {"app_ms": 425.0, "ratio": 5.31}}  # fmt: skip
    text, missed = ratio_summary(rerun, None, cold)
    lines = text.splitlines()
    judged = next(ln for ln in lines if ln.startswith("cold start (86 vs 80 ms)"))
    plain = next(ln for ln in lines if ln.startswith("cold start without the warm-up"))
    assert "1.08× ≤1.2× PASS" in judged
    assert "(425 ms)" in plain and "5.31× (info)" in plain and "FAIL" not in plain
    assert missed == []
