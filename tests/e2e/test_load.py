"""Twenty sessions at once against one server, each opened from a different shared link.

Issue 14, item 4: under load the sidebar's Batch box once showed 1 in 8 of 20 sessions for a
moment before it showed the link's batch; a click in that moment would have reset the scenario.
So every session records, from before the app's first byte, each value any sidebar widget
shows (a poll every 20 ms in the page, ``RECORDER``), and the test asserts that no widget ever
showed anything but its link's value, as well as the final widgets and numbers.  Then each
session raises its batch by one and must show the new number.

The links are written by the app's own link writer (``kvview.scenario_link.share_query``) from
scenarios built by ``kvmodel.build.scenario_from_inputs``; the numbers expected are
``kvmodel.transfer.evaluate`` of the same scenarios, formatted by ``kvview.fmt``.

On 2 shared cores the 20 first renders take up to a minute, so timeouts are generous.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from urllib.parse import urlencode

import pytest

from kvmodel import catalog
from kvmodel.build import scenario_from_inputs
from kvmodel.transfer import evaluate
from kvview.fmt import fmt_bytes, fmt_ms_or_s
from kvview.scenario_link import share_query

pytest.importorskip("playwright.sync_api", reason="browser tests need the playwright package")
from playwright.sync_api import expect  # noqa: E402

from tests.e2e.conftest import VIEWPORT  # noqa: E402

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

SESSIONS = 20
LOAD_TIMEOUT_MS = 120_000

# (model, seq, batch, link, tp, stack, comp, lw, eff): 20 different non-default scenarios that
# vary every control the sidebar shows (TP through the "Per prefill GPU (TP n)" tile).
SCENARIOS = [
    ("llama-3.1-8b", 4096, 8, "ib-ndr", 1, "nixl", "none", 0, 100),
    ("llama-3.1-70b", 8192, 16, "100gbe", 8, "mooncake", "fp8", 0, 90),
    ("llama-3.1-405b", 2048, 4, "ib-xdr", 8, "nccl", "none", 1, 100),
    ("qwen2.5-7b", 6144, 32, "pcie5", 4, "ideal", "int8", 0, 75),
    ("qwen2.5-72b", 16384, 2, "400gbe", 8, "nixl", "none", 1, 60),
    ("qwen3-8b", 3000, 7, "ib-hdr", 2, "mooncake-sglang", "int4", 0, 85),
    ("qwen3-32b", 12288, 12, "200gbe", 4, "nccl", "fp8", 1, 95),
    ("mistral-7b", 24576, 3, "25gbe", 1, "ideal", "none", 0, 50),
    ("mixtral-8x7b", 1536, 64, "nvlink4", 8, "nixl", "int8", 0, 100),
    ("mixtral-8x22b", 32768, 5, "800gbe", 8, "mooncake", "none", 1, 80),
    ("llama-2-7b", 4000, 48, "aws-efa-p5", 2, "nccl", "fp8", 0, 70),
    ("phi-3-mini", 2500, 24, "pcie4", 1, "ideal", "none", 1, 40),
    ("falcon-7b", 1800, 40, "ib-ndr", 1, "nixl", "int4", 0, 100),
    ("deepseek-v3", 65536, 2, "ib-ndr", 8, "mooncake", "none", 0, 90),
    ("gpt-oss-20b", 10000, 9, "100gbe", 2, "mooncake-sglang", "none", 1, 100),
    ("gemma-3-27b", 20000, 6, "400gbe", 4, "nccl", "int8", 0, 65),
    ("llama-4-scout", 50000, 3, "ib-xdr", 8, "nixl", "none", 0, 100),
    ("qwen3.5-27b", 30000, 4, "200gbe", 4, "ideal", "fp8", 1, 88),
    ("nemotron-h-56b", 8000, 10, "aws-efa-p4d", 8, "nixl", "none", 0, 77),
    ("gemma-4-26b-a4b", 40000, 11, "nvlink5", 2, "mooncake", "int4", 1, 99),
]

# Runs in every page before the app's own scripts: every 20 ms, note each value a sidebar
# widget shows (label -> {value: [first, last] ms after the page started}).
RECORDER = """
window.__seen = {};
setInterval(() => {
  const sb = document.querySelector('[data-testid="stSidebar"]');
  if (!sb) return;
  const t = Math.round(performance.now());
  for (const el of sb.querySelectorAll('input[aria-label]')) {
    const label = el.getAttribute('aria-label');
    const value = el.type === 'range' ? el.getAttribute('aria-valuetext')
      : el.type === 'checkbox' ? String(el.checked) : el.value;
    const seen = (window.__seen[label] = window.__seen[label] || {});
    seen[value] = [(seen[value] || [t])[0], t];
  }
}, 20);
"""


@dataclass
class Case:
    values: dict
    query: dict
    sidebar: dict[str, str]  # widget label -> the value it shows
    tiles: dict[str, str]  # metric label -> the value it shows
    raised: dict[str, str]  # the tiles after batch + 1


def _tiles(values: dict) -> dict[str, str]:
    sc = scenario_from_inputs(values)
    ev = evaluate(sc)
    return {
        "Whole cache": fmt_bytes(ev.kv_total_bytes),
        "Exposed transfer": fmt_ms_or_s(ev.exposed_s),
        f"Per prefill GPU (TP {sc.tp_prefill})": fmt_bytes(ev.kv_per_gpu_prefill_bytes),
    }


def make_case(row) -> Case:
    model, seq, batch, link, tp, stack, comp, lw, eff = row
    values = dict(model=model, seq=seq, batch=batch, link=link, tp=tp, stack=stack, comp=comp,
                  lw=lw, eff=float(eff))  # fmt: skip
    sc = scenario_from_inputs(values)
    query, gaps = share_query(sc)  # the app's own link writer
    assert query is not None, gaps
    spec = catalog.get_model(model)
    sidebar = {
        "Model": f"{spec.name} · {spec.attention}",
        "Sequence length [tokens]": f"{seq:,}",
        "Exact tokens": str(seq),
        "Batch [requests]": str(batch),
        "Interconnect": catalog.get_link(link).name,
        "Transfer stack": catalog.stacks()[stack].name,
        "Link efficiency [%]": f"{eff:.0f} %",
        "Transfer compression": comp,
        "Send layer by layer": "true" if lw else "false",
        "Presentation mode": "false",
    }
    if comp != "none":
        sidebar["Quantize/dequantize throughput [GB/s]"] = f"{sc.codec_bytes_per_s / 1e9:.2f}"
    case = Case(values, query, sidebar, _tiles(values), _tiles({**values, "batch": batch + 1}))
    assert case.raised["Whole cache"] != case.tiles["Whole cache"], row  # the change shows
    return case


def metric(page, label: str):
    tile = page.get_by_test_id("stMetric").filter(has=page.get_by_text(label, exact=True))
    return tile.get_by_test_id("stMetricValue")


def _expect_page(page, tiles: dict[str, str]) -> None:
    for label, value in tiles.items():
        expect(metric(page, label)).to_have_text(value, timeout=LOAD_TIMEOUT_MS)
    expect(page.get_by_test_id("stException")).to_have_count(0)
    expect(page.get_by_test_id("stAlertContentError")).to_have_count(0)
    expect(page.get_by_text("Some inputs were adjusted")).to_have_count(0)
    assert "Traceback" not in page.inner_text("body")


def _mismatches(page, expected: dict[str, str], allowed: dict[str, set[str]]) -> list[str]:
    """Sidebar widgets that show, or ever showed, a value other than the expected one."""
    out = []
    sidebar = page.get_by_test_id("stSidebar")
    for label in expected:  # a widget's code can still be loading after the numbers show
        widget = sidebar.locator(f'input[aria-label="{label}"]')
        expect(widget).to_be_attached(timeout=LOAD_TIMEOUT_MS)
    now, seen = page.evaluate(READ)
    for label, value in expected.items():
        if now.get(label) != value:
            out.append(f"{label}: shows {now.get(label)!r}, expected {value!r}")
        for shown, (first, last) in seen.get(label, {}).items():
            if shown not in allowed.get(label, {value}):
                out.append(f"{label}: showed {shown!r} from {first} to {last} ms (poll: 20 ms) "
                           f"instead of {value!r}")  # fmt: skip
    return out


# What each sidebar widget shows now, and what the recorder saw.
READ = """() => {
  const now = {};
  const sb = document.querySelector('[data-testid="stSidebar"]');
  for (const el of sb.querySelectorAll('input[aria-label]')) {
    now[el.getAttribute('aria-label')] = el.type === 'range' ? el.getAttribute('aria-valuetext')
      : el.type === 'checkbox' ? String(el.checked) : el.value;
  }
  return [now, window.__seen];
}"""


def test_twenty_sessions_from_twenty_links(browser, app_url):
    cases = [make_case(row) for row in SCENARIOS[:SESSIONS]]
    assert len({urlencode(c.query) for c in cases}) == SESSIONS  # twenty different links
    contexts, pages = [], []
    t0 = time.monotonic()
    for case in cases:  # all twenty ask at once: goto returns when the response starts
        ctx = browser.new_context(viewport=VIEWPORT)
        ctx.add_init_script(RECORDER)
        page = ctx.new_page()
        page.goto(f"{app_url}/?{urlencode(case.query)}", wait_until="commit")
        contexts.append(ctx), pages.append(page)
    try:
        mismatches, rendered = [], []
        for i, (case, page) in enumerate(zip(cases, pages, strict=True)):
            _expect_page(page, case.tiles)
            rendered.append(time.monotonic() - t0)
            mismatches += [f"session {i}: {m}" for m in _mismatches(page, case.sidebar, {})]
        t1 = time.monotonic()
        for case, page in zip(cases, pages, strict=True):  # every session changes its batch at once
            batch = page.get_by_test_id("stSidebar").get_by_label("Batch [requests]")
            batch.fill(str(case.values["batch"] + 1))
            batch.press("Enter")
        for i, (case, page) in enumerate(zip(cases, pages, strict=True)):
            _expect_page(page, case.raised)
            after = {**case.sidebar, "Batch [requests]": str(case.values["batch"] + 1)}
            allowed = {"Batch [requests]": {str(case.values["batch"]), after["Batch [requests]"]}}
            mismatches += [f"session {i} after batch+1: {m}"
                           for m in _mismatches(page, after, allowed)]  # fmt: skip
            assert f"batch={case.values['batch'] + 1}" in page.url
        t2 = time.monotonic()
        print(f"\n{SESSIONS} sessions: all rendered {rendered[-1]:.1f} s after the first request "
              f"(first {min(rendered):.1f} s); batch+1 in every session answered in "
              f"{t2 - t1:.1f} s; {len(mismatches)} mismatches")  # fmt: skip
        assert not mismatches, "\n".join(mismatches)
    finally:
        for ctx in contexts:
            ctx.close()
