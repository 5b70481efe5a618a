"""The Recipes page's files: the tested recipe texts, and a scrape the gap recipe produces."""

from __future__ import annotations

from pathlib import Path

from ui import perf

RECIPES_DIR = Path(__file__).resolve().parents[1] / "recipes"

# The SQL recipes (request log -> the Traffic page's histogram): file, tab label, what it gives.
SQL_RECIPES = (
    (
        "traffic_histogram.sql",
        "Histogram",
        "Requests per 256-token bucket (`le`, `requests`): the file to upload.",
    ),
    (
        "traffic_lengths.sql",
        "Exact lengths",
        "Requests per exact prompt length (`prompt_tokens`, `requests`): no rounding.",
    ),
    (
        "traffic_histogram_cached.sql",
        "With prefix-cache hits",
        "The histogram of the uncached tokens, the ones whose KV moves; leave the hit ratio at 0.",
    ),
    (
        "traffic_histogram_shares.sql",
        "Shares only",
        "The share of requests per bucket (`le`, `share`), without the volume: a histogram to "
        "pass outside the team.",
    ),
    (
        "traffic_histogram_hourly.sql",
        "Per hour",
        "One histogram per hour (`log_date`, `log_hour`, `le`, `requests`); the app adds the "
        "hours up, or keep one hour's rows.",
    ),
    (
        "traffic_rate_hourly.sql",
        "Rate per hour",
        "Requests per second in each hour, busiest first: the rate for the Traffic page or "
        "`--rps`.",
    ),
)


def recipe_text(name: str) -> str:
    """The text of ``recipes/<name>`` (the Recipes page shows exactly the tested files), read
    once per process (``ui.perf``: 9 reads took ~2 ms of every rerun of the page)."""
    return perf.cached(_read_recipe, name)


def _read_recipe(name: str) -> str:
    return (RECIPES_DIR / name).read_text(encoding="utf-8")


def load_gap_recipe():
    """``recipes/kv_gap_metrics.py`` as a fresh module (importing it registers nothing)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "kv_gap_metrics_recipe", RECIPES_DIR / "kv_gap_metrics.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def example_scrape(n: int = 400, seed: int = 7) -> str:
    """The exposition the recipe produces for ``n`` simulated requests (fresh registry);
    made once per process and arguments (``ui.perf``)."""
    return perf.cached(_example_scrape, n, seed)


def _example_scrape(n: int, seed: int) -> str:
    import numpy as np
    from prometheus_client import CollectorRegistry, generate_latest

    recipe = load_gap_recipe()
    registry = CollectorRegistry()
    metrics = recipe.KvGapMetrics(registry)
    rng = np.random.default_rng(seed)
    t = 0.0
    for i in range(n):
        rid = f"req-{i}"
        arrived = t
        t += float(rng.uniform(0.04, 0.3))  # prefill
        metrics.on_prefill_done(rid, arrived_at=arrived, at=t)
        t += float(rng.lognormal(np.log(0.004), 0.5))  # KV transfer and scheduling
        metrics.on_first_decode_step(rid, at=t)
        t += 0.025  # first decode step
        metrics.on_first_token(rid, at=t)
    return generate_latest(registry).decode("utf-8")
