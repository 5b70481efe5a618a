"""The replay's rows in words (kvview.replay_words): what a browser review found repeated or
odd (session 23)."""

from types import SimpleNamespace

from kvview.replay_words import replay_rows


def _done(max_queue: int):
    r = SimpleNamespace(requests=1000, poisson=True, ttft_p50_s=0.198, ttft_p90_s=0.607,
                        ttft_p99_s=1.75, ttft_at_slo_s=0.607, tpot_p90_s=0.02,
                        transfer_p90_s=0.004, peak_link_utilization=0.3,
                        max_decode_queue=max_queue, memory_waited_share=0.012, meets_slo=True)
    dep = SimpleNamespace(prefill_instances=2, prefill_tp=8, decode_instances=3, decode_tp=8)
    return SimpleNamespace(result=r, deployment=dep, gpus=40, grown=False, rounds=0)


def _row(rows, name):
    return dict(rows)[name]


def test_the_ttft_row_names_the_targets_percentile_once():
    slo = SimpleNamespace(ttft_percentile=90.0, ttft_s=2.0, tpot_s=0.05)
    ttft = _row(replay_rows(_done(0), slo=slo), "TTFT")
    assert ttft.count("p90") == 2 and ttft.endswith("(target: p90 ≤ 2.00 s)")
    assert ttft.startswith("p50 198 ms, p90 607 ms, p99 1.75 s")
    slo95 = SimpleNamespace(ttft_percentile=95.0, ttft_s=2.0, tpot_s=0.05)
    assert "; p95 607 ms (target: p95 ≤ 2.00 s)" in _row(replay_rows(_done(0), slo=slo95), "TTFT")


def test_no_memory_queue_is_said_in_words():
    slo = SimpleNamespace(ttft_percentile=90.0, ttft_s=2.0, tpot_s=0.05)
    assert _row(replay_rows(_done(0), slo=slo), "Decode memory queue") == (
        "no request waited for KV memory")
    assert _row(replay_rows(_done(7), slo=slo), "Decode memory queue").startswith(
        "at most 7 requests waiting for KV memory (1.2% of requests waited)")
