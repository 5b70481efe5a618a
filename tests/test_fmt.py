"""Number formats (kvview.fmt): units always printed, no scientific notation, huge values fit."""

from kvview.fmt import fmt_bytes, fmt_ms, fmt_time, fmt_tokens


def test_units():
    assert fmt_bytes(335_544_320) == "335.5 MB" and fmt_bytes(10.7e9) == "10.7 GB"
    assert fmt_bytes(512) == "512 B"
    assert fmt_ms(0.0268435) == "26.8 ms"
    assert (
        fmt_time(2.5e-6) == "2.5 µs" and fmt_time(0.5) == "500 ms" and fmt_time(83.5) == "83.50 s"
    )
    assert fmt_tokens(None) == "none up to max context" and fmt_tokens(1145) == "1,145 tokens"


def test_number_formats_read_without_scientific_notation():
    from kvview.fmt import fmt_bandwidth, fmt_sig, fmt_tokens

    assert fmt_bandwidth(2.933e14) == "293,300 GB/s"  # was "2.933e+05 GB/s"
    assert fmt_bandwidth(12.5e9) == "12.5 GB/s" and fmt_bandwidth(450e9) == "450 GB/s"
    assert fmt_bandwidth(48.0213e9) == "48.02 GB/s" and fmt_bandwidth(1e9) == "1 GB/s"
    assert fmt_sig(0.000123456) == "0.0001235" and fmt_sig(-1234.5) == "-1,234"
    assert fmt_tokens(1) == "1 token" and fmt_tokens(1145) == "1,145 tokens"


def test_huge_times_and_ratios_fit_their_tiles():
    from kvview.fmt import fmt_ms_or_s, fmt_ratio

    assert fmt_ms_or_s(0.02685) == "26.85 ms" and fmt_ms_or_s(9.5) == "9,500.00 ms"
    assert fmt_ms_or_s(14_073.74884) == "14,073.75 s"  # not "14,073,748.84 ms"
    assert fmt_ratio(0.895) == "0.90×" and fmt_ratio(469_124.96) == "469,125×"


def test_fmt_tokens_none_and_nan_read_the_same():
    # compare_table keeps numbers: a critical length of None becomes NaN in its DataFrame
    assert fmt_tokens(None) == fmt_tokens(float("nan")) == "none up to max context"


def test_a_busy_link_never_reads_zero_percent():
    from kvview.fmt import fmt_busy

    assert fmt_busy(0.0) == "0%"
    assert fmt_busy(0.004) == "<1%"  # a link that carries traffic is never "0%" busy
    assert fmt_busy(0.005) == "<1%"  # Python rounds 0.5 % half to even: "0%" before
    assert fmt_busy(0.06) == "6%" and fmt_busy(1.0) == "100%"
