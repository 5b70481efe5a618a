"""The recipes are tested code: the gap exporter's scrape reads back, the shell scripts run."""

import importlib.util
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from streamlit.testing.v1 import AppTest

from kvmodel.measure import detect_measurement, parse_prometheus_metrics
from kvmodel.verdicts import share_verdict

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
DATA = ROOT / "data" / "measurements"


def load_recipe():
    """A fresh import of recipes/kv_gap_metrics.py (its module state is new every time)."""
    spec = importlib.util.spec_from_file_location("kv_gap_recipe", RECIPES / "kv_gap_metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class FakeClock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def simulate(metrics, clock, gaps, prefill=0.12, step=0.025):
    ttfts = []
    for i, gap in enumerate(gaps):
        rid = f"cmpl-{i}"
        arrived = clock.t
        clock.t += prefill
        metrics.on_prefill_done(rid, arrived_at=arrived)
        clock.t += gap
        assert metrics.on_first_decode_step(rid) == pytest.approx(gap)
        clock.t += step
        ttfts.append(metrics.on_first_token(rid))
    return ttfts


def test_importing_the_recipe_registers_nothing():
    from prometheus_client import REGISTRY

    before = set(REGISTRY._names_to_collectors)
    load_recipe()
    load_recipe()  # twice: no "Duplicated timeseries" error
    assert set(REGISTRY._names_to_collectors) == before


def test_histogram_scrape_reads_back_with_the_simulated_mean():
    recipe = load_recipe()
    registry, clock = CollectorRegistry(), FakeClock()
    metrics = recipe.KvGapMetrics(registry, clock=clock)
    gaps = [0.0031, 0.0042, 0.0057, 0.0049, 0.012, 0.0008, 0.021, 0.0036]
    ttfts = simulate(metrics, clock, gaps)
    text = generate_latest(registry).decode()

    assert detect_measurement(text) == "prometheus"
    m = parse_prometheus_metrics(text, "recipe")
    assert m.gap_source == "llm_kv_transfer_gap_seconds"
    gap = m.summaries["llm_kv_transfer_gap_seconds"]
    assert gap.kind == "histogram"  # not a per-request gauge
    assert m.gap_count == len(gaps)
    assert m.gap_mean_s == pytest.approx(np.mean(gaps), rel=1e-12)
    # buckets suited to KV transfer: 0.5 ms … 2.5 s, then +Inf
    bounds = [le for le, _ in gap.buckets]
    assert bounds[0] == 0.0005 and bounds[-2] == 2.5 and np.isinf(bounds[-1])
    assert 0.0025 < m.gap_p50_s < 0.01 and m.gap_p99_s <= 0.025

    # TTFT: a histogram of arrival → first token
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    ttft = fams["llm_time_to_first_token_seconds"]
    assert ttft.type == "histogram"
    samples = {s.name: s.value for s in ttft.samples if not s.labels.get("le")}
    assert samples["llm_time_to_first_token_seconds_count"] == len(gaps)
    assert samples["llm_time_to_first_token_seconds_sum"] == pytest.approx(sum(ttfts))
    assert sum(ttfts) == pytest.approx(sum(gaps) + len(gaps) * (0.12 + 0.025))


def test_cardinality_is_bounded_whatever_the_request_ids():
    recipe = load_recipe()
    registry, clock = CollectorRegistry(), FakeClock()
    metrics = recipe.KvGapMetrics(registry, clock=clock)
    simulate(metrics, clock, [0.004] * 50)
    simulate(metrics, clock, [0.006] * 500)  # 10× the requests…
    names = [
        s.name for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
    ]  # fmt: skip
    assert all("request_id" not in n for n in names)
    series_50 = len(names)
    simulate(metrics, clock, [0.002] * 5000)
    names = [
        s for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
    ]  # fmt: skip
    assert len(names) == series_50  # …the same series


def test_pending_dict_never_grows_past_its_cap():
    recipe = load_recipe()
    registry, clock = CollectorRegistry(), FakeClock()
    metrics = recipe.KvGapMetrics(registry, max_pending=5, clock=clock)
    for i in range(100):  # prefill finishes, decode never comes (cancelled requests)
        clock.t += 0.001
        metrics.on_prefill_done(f"lost-{i}", arrived_at=clock.t)
        assert metrics.pending() <= 5
        assert len(metrics.arrived) <= 5
    assert metrics.pending() == 5
    assert registry.get_sample_value("llm_kv_transfer_gap_dropped_total") == 95
    # the five newest are still timed; an evicted one is ignored, not an error
    clock.t += 0.002
    assert metrics.on_first_decode_step("lost-99") == pytest.approx(0.002)
    assert metrics.on_first_decode_step("lost-0") is None
    assert metrics.on_first_decode_step("never-seen") is None
    assert registry.get_sample_value("llm_kv_transfer_gap_seconds_count") == 1
    with pytest.raises(ValueError, match="cap"):
        recipe.KvGapMetrics(CollectorRegistry(), max_pending=0)


def test_module_level_functions_use_one_lazily_made_default():
    recipe = load_recipe()
    import prometheus_client

    registry = CollectorRegistry()
    real = recipe.KvGapMetrics

    def in_fresh_registry(*args, **kwargs):  # keep the global REGISTRY untouched
        return real(registry, **kwargs)

    recipe.KvGapMetrics = in_fresh_registry
    try:
        recipe.on_prefill_done("a")
        assert recipe.on_first_decode_step("a") >= 0
        assert recipe.default_metrics() is recipe.default_metrics()
    finally:
        recipe.KvGapMetrics = real
    assert registry.get_sample_value("llm_kv_transfer_gap_seconds_count") == 1
    assert prometheus_client.REGISTRY.get_sample_value("llm_kv_transfer_gap_seconds_count") is None


def test_server_starts_only_as_a_script():
    text = (RECIPES / "kv_gap_metrics.py").read_text()
    main = text.index('if __name__ == "__main__":')
    assert text.index("start_http_server(") > main
    assert "Gauge(" not in text  # no per-request gauge anywhere in the recipe


# --------------------------------------------------------------------------- shell scripts


@pytest.mark.parametrize("script", ["perftest.sh", "nsys.sh"])
def test_shell_scripts_parse(script):
    subprocess.run(["bash", "-n", str(RECIPES / script)], check=True)


def _fake_tool(bin_dir: Path, name: str, body: str) -> None:
    path = bin_dir / name
    path.write_text("#!/usr/bin/env bash\n" + body)
    path.chmod(0o755)


def test_perftest_script_runs_matching_server_and_client(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    _fake_tool(
        bin_dir,
        "ib_write_bw",
        f'echo "$*" >> {log}\ncat {DATA / "ib_write_bw.txt"}\n',
    )
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "WAIT": "0", "DEV": "mlx5_3"}
    script = str(RECIPES / "perftest.sh")
    subprocess.run(["bash", script, "server"], cwd=tmp_path, env=env, check=True)
    server = log.read_text().splitlines()
    log.unlink()
    out = subprocess.run(
        ["bash", script, "client", "decode-0"], cwd=tmp_path, env=env, check=True, text=True,
        capture_output=True,
    )  # fmt: skip
    client = log.read_text().splitlines()
    assert len(server) == len(client) == 3
    for s, c in zip(server, client, strict=True):
        assert c == f"{s} decode-0"  # the same options on both sides, the host last
        assert "-d mlx5_3" in s and " -a" in s
    assert "--report_gbits" in server[1] and "--out_json" in server[2]
    assert (tmp_path / "ib_write_bw.txt").read_text() == (DATA / "ib_write_bw.txt").read_text()
    assert detect_measurement((tmp_path / "ib_write_bw.txt").read_text()) == "perftest"
    assert "upload one on the Measured page" in out.stdout
    bad = subprocess.run(["bash", script, "client"], env=env, capture_output=True, text=True)
    assert bad.returncode == 2 and "usage" in bad.stderr


def test_nsys_script_profiles_then_exports_the_three_reports(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    _fake_tool(bin_dir, "nsys", f'echo "$*" >> {log}\n')
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    script = str(RECIPES / "nsys.sh")
    subprocess.run(["bash", script, "python", "serve.py"], cwd=tmp_path, env=env, check=True)
    calls = [c for c in log.read_text().splitlines() if c != "profile --help"]
    assert calls[0].startswith("profile --trace=cuda,nvtx ")
    assert "--output=kv_transfer_profile" in calls[0] and calls[0].endswith("python serve.py")
    assert calls[1].startswith("stats --report cuda_gpu_kern_sum,cuda_gpu_trace,nvtx_sum")
    assert "--format csv --output kv_transfer_profile" in calls[1]
    assert calls[1].endswith("kv_transfer_profile.nsys-rep")
    # a newer nsys that can trace NCCL gets it
    _fake_tool(
        bin_dir,
        "nsys",
        f'echo "$*" >> {log}\n[[ $1 == profile && $2 == --help ]] && echo "--nccl-trace"\nexit 0\n',
    )
    log.unlink()
    subprocess.run(["bash", script, "python", "serve.py"], cwd=tmp_path, env=env, check=True)
    assert "--trace=cuda,nvtx,nccl" in log.read_text()


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck is not installed")
@pytest.mark.parametrize("script", ["perftest.sh", "nsys.sh"])
def test_shellcheck(script):
    subprocess.run(["shellcheck", str(RECIPES / script)], check=True)


# --------------------------------------------------------------------------- the page


def test_recipes_page_shows_the_tested_files():
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/recipes.py").run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "Recipes"
    bodies = [c.value for c in at.code]
    for name in ("kv_gap_metrics.py", "perftest.sh", "nsys.sh", *SQL_RECIPES):
        assert (RECIPES / name).read_text().rstrip("\n") in bodies, name
    assert any("Gauge(" in b and "request_id" in b for b in bodies)  # the "don't" example
    example = next(b for b in bodies if b.startswith("# HELP"))
    assert parse_prometheus_metrics(example).gap_count == 400


def test_recipe_scrape_gives_the_share_of_ttft():
    """The recipe's own TTFT histogram is read, so its scrape alone gives the share."""
    recipe = load_recipe()
    registry, clock = CollectorRegistry(), FakeClock()
    metrics = recipe.KvGapMetrics(registry, clock=clock)
    gaps = [0.004, 0.006, 0.008, 0.010]
    ttfts = simulate(metrics, clock, gaps)
    m = parse_prometheus_metrics(generate_latest(registry).decode(), "recipe")
    assert m.ttft_source == "llm_time_to_first_token_seconds"
    assert m.ttft_mean_s == pytest.approx(np.mean(ttfts), rel=1e-9)
    assert m.transfer_share_of_ttft == pytest.approx(np.mean(gaps) / np.mean(ttfts), rel=1e-9)
    assert share_verdict(m.transfer_share_of_ttft, share_target=0.2).measured == "under"  # 7/152 ms


# --------------------------------------------------------------------------- SQL recipes
# Each recipe runs on DuckDB (the embedded engine, a dev requirement) against a generated
# request log, its result is exported to CSV with DuckDB's COPY and read back by the app's
# traffic reader; the numbers must equal the same histogram computed from the raw rows in numpy.

SQL_RECIPES = (
    "traffic_histogram.sql",
    "traffic_lengths.sql",
    "traffic_histogram_cached.sql",
    "traffic_histogram_hourly.sql",
    "traffic_rate_hourly.sql",
    "traffic_histogram_shares.sql",
)
WIDTH = 256  # the recipes' bucket width in tokens


@pytest.fixture(scope="module")
def request_log():
    """40,000 requests over 30 hours, with the awkward rows a real log has: lengths on a
    bucket edge and 0, missing and negative lengths, missing hits and hits above the prompt."""
    import pyarrow as pa

    rng = np.random.default_rng(11)
    n = 40_000
    prompt = np.clip(rng.lognormal(7.0, 1.3, n), 0, 200_000).astype(np.int64)
    prompt[:200] = np.arange(200) * WIDTH  # exact bucket edges, 0 included
    cached = (prompt * rng.uniform(0, 1.2, n)).astype(np.int64)  # some above the prompt
    start = np.datetime64("2026-11-29T00:00:00", "us")
    ts = start + np.sort(rng.integers(0, 30 * 3_600_000_000, n)).astype("timedelta64[us]")
    prompt_null = np.zeros(n, bool)
    prompt_null[rng.choice(n, 50, replace=False)] = True
    prompt[rng.choice(n, 30, replace=False)] *= -1  # bad rows the app skips too
    cached_null = rng.random(n) < 0.1
    table = pa.table(
        {
            "request_id": [f"req-{i}" for i in range(n)],
            "timestamp": pa.array(ts, pa.timestamp("us")),
            "prompt_tokens": pa.array(prompt, mask=prompt_null),
            "output_tokens": rng.integers(1, 800, n),
            "cached_tokens": pa.array(cached, mask=cached_null),
        }
    )
    keep = ~prompt_null & (prompt >= 0)
    raw = {
        "prompt": prompt[keep],
        "cached": np.where(cached_null, 0, cached)[keep],
        "hour": ts[keep].astype("datetime64[h]"),
    }
    return table, raw


def run_recipe(name: str, table, tmp_path) -> Path:
    """The recipe, unchanged, on DuckDB over ``request_log``; its result as a CSV file."""
    duckdb = pytest.importorskip("duckdb", reason="duckdb is in requirements-dev.txt")
    con = duckdb.connect()
    con.register("request_log", table)
    out = tmp_path / name.replace(".sql", ".csv")
    con.execute(f"COPY ({(RECIPES / name).read_text()}) TO '{out}' (FORMAT CSV, HEADER)")
    con.close()
    return out


def upper_bound(tokens: np.ndarray) -> np.ndarray:
    """The bucket a length falls in, by its upper bound: ceil(tokens / 256) × 256."""
    return -(-tokens // WIDTH) * WIDTH


def counts(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return np.unique(values, return_counts=True)


def assert_reads_as(req, values: np.ndarray):
    """The app read the recipe's CSV as the histogram of ``values`` (one per request), and
    the share of requests that gain is the one computed from those values directly."""
    from kvmodel.build import build_scenario
    from kvmodel.traffic import Mix, mix_from_requests, regions

    want, n = counts(values)
    assert req.fmt == "histogram" and req.skipped_rows == 0
    np.testing.assert_array_equal(req.prompt_tokens, want)
    np.testing.assert_array_equal(req.weights, n)
    sc = build_scenario(model="llama-3.1-70b", link="100gbe")
    got = regions(sc, mix_from_requests(req))
    direct = regions(sc, Mix(tokens=want, weights=n.astype(float)))
    assert got.fraction_gain == direct.fraction_gain
    assert 0 < got.fraction_gain < 1  # a share that can be wrong


def test_sql_histogram_reads_back_as_the_raw_rows_bucketed(request_log, tmp_path):
    from kvmodel.traffic import load_traffic

    table, raw = request_log
    req = load_traffic(run_recipe("traffic_histogram.sql", table, tmp_path))
    assert req.columns["prompt_tokens"] == "le" and req.columns["weights"] == "requests"
    assert_reads_as(req, upper_bound(raw["prompt"]))
    assert req.n_requests == 40_000 - 50 - 30  # the missing and the negative lengths left out


def test_sql_exact_lengths_read_back_as_the_raw_rows(request_log, tmp_path):
    from kvmodel.traffic import load_traffic

    table, raw = request_log
    req = load_traffic(run_recipe("traffic_lengths.sql", table, tmp_path))
    assert_reads_as(req, raw["prompt"])


def test_sql_cached_histogram_moves_only_the_uncached_tokens(request_log, tmp_path):
    from kvmodel.traffic import load_traffic

    table, raw = request_log
    req = load_traffic(run_recipe("traffic_histogram_cached.sql", table, tmp_path))
    moved = np.maximum(raw["prompt"] - raw["cached"], 0)  # a missing hit counts as none
    assert_reads_as(req, upper_bound(moved))


def test_sql_hourly_histogram_is_each_hour_and_adds_up(request_log, tmp_path):
    import pandas as pd

    from kvmodel.traffic import load_traffic

    table, raw = request_log
    path = run_recipe("traffic_histogram_hourly.sql", table, tmp_path)
    assert_reads_as(load_traffic(path), upper_bound(raw["prompt"]))  # all hours together
    df = pd.read_csv(path)
    assert df["log_hour"].between(0, 23).all() and df["log_date"].nunique() == 2
    busiest = raw["hour"][np.argmax(np.unique(raw["hour"], return_counts=True)[1])]
    day, hour = str(busiest)[:10], int(str(busiest)[11:13])
    one = df[(df["log_date"] == day) & (df["log_hour"] == hour)].drop(columns=["log_date"])
    req = load_traffic(one.to_csv(index=False).encode(), name="hour.csv")
    assert_reads_as(req, upper_bound(raw["prompt"][raw["hour"] == busiest]))


def test_sql_hourly_rate_counts_each_hour(request_log, tmp_path):
    import pandas as pd

    table, raw = request_log
    df = pd.read_csv(run_recipe("traffic_rate_hourly.sql", table, tmp_path))
    hours, n = counts(raw["hour"])
    assert len(df) == 30 and df["requests"].is_monotonic_decreasing
    got = {
        (d, h): r for d, h, r in zip(df["log_date"], df["log_hour"], df["requests"], strict=True)
    }
    want = {(str(t)[:10], int(str(t)[11:13])): k for t, k in zip(hours, n, strict=True)}
    assert got == want
    np.testing.assert_allclose(df["rps"], df["requests"] / 3600, rtol=1e-15)
    first = raw["hour"] == hours[np.argmax(n)]  # the busiest hour is the first row
    assert df["mean_prompt_tokens"].iloc[0] == pytest.approx(raw["prompt"][first].mean(), 1e-12)


def test_sql_shares_read_back_as_the_raw_rows_shares(request_log, tmp_path):
    from kvmodel.traffic import load_traffic

    table, raw = request_log
    req = load_traffic(run_recipe("traffic_histogram_shares.sql", table, tmp_path))
    le, n = counts(upper_bound(raw["prompt"]))
    assert req.fmt == "histogram-probability" and not req.count_known
    np.testing.assert_array_equal(req.prompt_tokens, le)
    np.testing.assert_allclose(req.weights, n / n.sum(), rtol=1e-12)  # shares, summing to 1


# Constructs that do not run unchanged on all of DuckDB, Spark SQL, Trino and BigQuery.
NOT_PORTABLE = {
    r"::": "'::' casts (DuckDB/Postgres only)",
    r"\bFILTER\s*\(": "FILTER (WHERE ...) on aggregates (not Spark before 3.2, not BigQuery)",
    r"\bQUALIFY\b": "QUALIFY (not Spark, not Trino)",
    r"%": "the % operator (not BigQuery; use MOD)",
    r"//": "integer division '//' (DuckDB only)",
    r"\bDATE_TRUNC\b|\bTIMESTAMP_TRUNC\b": "DATE_TRUNC (arguments differ on BigQuery)",
    r"\b(IF|IFF|IIF|NVL|IFNULL|ISNULL|NULLIF|DECODE)\s*\(": "IF/NVL-style functions (use CASE)",
    r"\b(GREATEST|LEAST)\s*\(": "GREATEST/LEAST (NULLs differ between engines; use CASE)",
    r"\b(LN|LOG|LOG2|LOG10|POWER|POW|EXP)\s*\(": "logs and powers for buckets (rounding at "
    "exact powers differs; buckets are integer MOD arithmetic)",
    r"\b(TRY_CAST|SAFE_CAST|SAFE_DIVIDE|DIV)\b": "engine-specific casts or division",
    r"\bAS\s+(DOUBLE|FLOAT64|INT64|STRING|TEXT|VARCHAR|REAL)\b": "types not named alike",
    r"`": "backtick identifiers (not Trino)",
    r'"': "double quotes (a string on BigQuery, an identifier elsewhere)",
    r"\bLIMIT\b|\bTOP\b": "row limits (BigQuery and Trino spell some forms differently)",
    r";\s*$": "a trailing semicolon (Trino's clients refuse it)",
    r"\b\d+\s*/\s*\d+\b|\bCOUNT\(\*\)\s*/\s*COUNT": "integer / integer (Trino truncates)",
    r"\bGROUP\s+BY\s+\d": "GROUP BY ordinals (write the column)",
}


def non_portable(sql: str) -> list[str]:
    """The constructs of NOT_PORTABLE in ``sql``, comments left out."""
    code = "\n".join(line.split("--", 1)[0] for line in sql.splitlines())
    return [why for pattern, why in NOT_PORTABLE.items() if re.search(pattern, code, re.I | re.M)]


@pytest.mark.parametrize("name", SQL_RECIPES)
def test_sql_recipes_use_only_the_portable_subset(name):
    sql = (RECIPES / name).read_text()
    assert non_portable(sql) == []
    assert "Portable: runs unchanged on DuckDB, Spark SQL, Trino and BigQuery" in sql
    assert "request_log" in sql


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT prompt_tokens::BIGINT FROM t",
        "SELECT COUNT(*) FILTER (WHERE x > 0) FROM t",
        "SELECT le FROM t QUALIFY ROW_NUMBER() OVER () = 1",
        "SELECT prompt_tokens % 256 FROM t",
        "SELECT POWER(2, CEIL(LN(prompt_tokens) / LN(2))) FROM t",
        "SELECT CAST(x AS DOUBLE) FROM t",
        "SELECT 1 FROM t;",
        "SELECT COUNT(*) / COUNT(x) FROM t",
    ],
)
def test_the_portability_check_catches_dialect_constructs(sql):
    assert non_portable(sql) != []
    assert non_portable(f"-- {sql}\nSELECT 1 AS x FROM t") == []  # comments are not code
