"""Compare's table (kvview.compare_cells): changes against A in the row's unit, verdict classes,
escaping, and the stacked layout for phones."""

from html_tables import read_html_table

from kvmodel.build import build_scenario
from kvmodel.compare import compare_frame
from kvmodel.transfer import evaluate
from kvview import compare_cells as C


def test_change_texts_carry_sign_unit_and_relative_change():
    assert C.change_text("exposed_transfer_s", -0.00215, -0.44) == "−2.15 ms (−44%)"
    assert C.change_text("ttft_s", 2.25, 5.7) == "+2.25 s (+570%)"
    assert C.change_text("ttft_s", -0.0005, -0.004) == "−0.5 ms (−0.4%)"  # not "−0%"
    assert C.change_text("wire_bytes", -165.2e6, -0.49) == "−165.2 MB (−49%)"
    # shares change in percentage points; a small change keeps its first digit
    assert C.change_text("transfer_share_of_ttft", 0.018, 1.2) == "+1.8 pp"
    assert C.change_text("fraction_gain", 0.00004, 0.0001) == "+0.004 pp"
    assert C.change_text("critical_seq_len", float("nan"), float("nan")) == ""  # never reached


def _rows(*scenarios):
    evs = [(label, evaluate(sc)) for label, sc in scenarios]
    return C.compare_rows(compare_frame(evs)), [label for label, _ in evs]


def test_rows_hold_verdicts_and_only_the_inputs_that_matter():
    rows, labels = _rows(
        ("A", build_scenario()), ("B", build_scenario(gpu="h200")), ("C", build_scenario())
    )
    by = {r.label: r for r in rows}
    assert "GPU" in by and by["GPU"].classes == ("", "cmp-input", "")  # shown: B changes it
    assert "Attention parallelism" not in by  # nobody changes it
    assert by["TTFT"].direction == "lower is better"
    assert by["TTFT"].classes[2] == "cmp-same" and by["TTFT"].cells[2].endswith("= same as A")
    html = C.compare_html(rows, labels)
    cells, _ = read_html_table(html, index=True)
    assert list(cells.columns) == ["Better", "A", "B", "C"]
    assert cells.loc["Exposed transfer", "Better"] == "lower is better"


def test_html_escapes_and_stacks_on_phones():
    row = C.Row("<b>x</b>", "lower is better", ("1 ms", "2 ms\n▲ +1 ms · worse"), ("", "cmp-worse"))
    html = C.compare_html([row], ["A", "<i>B</i>"])
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html
    assert 'data-label="&lt;i&gt;B&lt;/i&gt;"' in html  # each cell names its scenario ...
    assert "@media (max-width: 640px)" in html and "attr(data-label)" in html  # ... when stacked
    assert '<td class="cmp-worse"' in html and C.VERDICT_CELL["worse"] in html
    # colour-blind safe pair (Okabe-Ito blue and vermillion), never red against green
    assert C.VERDICT_CELL["better"].startswith("rgba(0, 114, 178")
    assert C.VERDICT_CELL["worse"].startswith("rgba(213, 94, 0")


def test_the_html_report_judges_each_number_against_the_first():
    from kvview.report import report_html

    a, b = build_scenario(), build_scenario(batch=8)  # 8 prompts: every number worse
    html = report_html([("A", a), ("B", b)], share_url=None, title="t")
    table = html[html.index('<table class="judged">') :]
    table = table[: table.index("</table>")]
    ttft = next(r for r in table.split("<tr>") if r.startswith("<th>TTFT</th>"))
    assert "<td>lower is better</td>" in ttft and '<td class="cmp-worse">' in ttft
    assert "▲" in ttft and "worse" in ttft
    assert "td.cmp-worse { background:" in html  # styled in the report's own CSS


def test_the_ttft_cell_says_the_number_the_sentence_says():
    """Compare's sentence gives the lowest TTFT with one decimal ('122.5 ms'); the table's cell
    read '123 ms' (three significant digits) beside it (session 19's review)."""
    from kvmodel.sweeps import Option, mitigation_rows, mitigation_table
    from kvview.fmt import in_ms
    from kvview.words import compare_takeaway

    a = build_scenario(stack="mooncake")
    d = build_scenario(stack="mooncake", layerwise=True)
    rows, _ = _rows(("A", a), ("D", d))
    ttft = {r.label: r for r in rows}["TTFT"].cells
    ms = evaluate(d).ttft_s * 1e3
    assert ttft[1].startswith(f"{ms:,.1f} ms")
    table = in_ms(mitigation_table(a, [Option("A", a, True), Option("D", d, True)]))
    sentence = compare_takeaway(table, "A")
    assert f"D at {ms:,.1f} ms" in sentence
    # the page reads the rows in seconds (no frame): the same sentence, the same decimals
    rows_s = mitigation_rows(a, [Option("A", a, True), Option("D", d, True)], critical=False)
    assert compare_takeaway(rows_s, "A") == sentence
    unbuilt = [Option("A", a, True), Option("D", d, False)]
    said = compare_takeaway(mitigation_rows(a, unbuilt), "A")
    assert said == compare_takeaway(in_ms(mitigation_table(a, unbuilt)), "A")
    assert "Not buildable as set, so not ranked: D." in said
    assert C.change_text("ttft_s", -0.0045, -0.035) == "−4.5 ms (−4%)"


def test_no_ttft_to_rank_is_said_not_raised():
    import pandas as pd

    from kvview.words import compare_takeaway

    nan = float("nan")
    table = pd.DataFrame({"option": ["A", "B"], "ttft_ms": [nan, nan],
                          "transfer_share": [nan, nan], "ttft_saving_ms": [nan, nan],
                          "buildable": [True, True]})  # fmt: skip
    assert "No scenario here has a time to first token" in compare_takeaway(table, "A")


def test_a_critical_length_never_reached_reads_never():
    """As on Overview, Mitigations and Traffic (session 21: the cell read 'none up to max
    context')."""
    sc = build_scenario(link="nvlink4", layerwise=True)
    evs = [("A", evaluate(build_scenario())), ("B", evaluate(sc))]
    assert evs[1][1].critical_seq_len is None and evs[0][1].critical_seq_len == 1145
    rows = {r.label: r for r in C.compare_rows(compare_frame(evs, None))}
    cells = rows["Critical sequence length"].cells
    assert cells[0] == "1,145 tokens" and cells[1].startswith("never")
