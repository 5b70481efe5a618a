"""Issue 14, "no input can hurt the server": hostile links, configs, uploads, patterns and CLI
numbers give a clear message (ValueError and its subclasses) in bounded time, never a traceback,
a crash or a silently wrong model.  The hostile inputs are generated here."""

from __future__ import annotations

import base64
import json
import re
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refdata import model_config

from kvmodel import catalog
from kvmodel.cli import main
from kvmodel.hfconfig import load_hf_config
from kvmodel.measure import MeasureError, load_measurement
from kvmodel.measure.nsys import check_pattern
from kvmodel.modelcodec import decode_model, encode_model
from kvmodel.specs import MODEL_LIMITS, ModelSpec
from kvmodel.textio import MAX_JSON_DEPTH, max_depth
from kvmodel.traffic import TrafficError, load_traffic
from kvview.mdtext import md_escape
from kvview.params import parse_query

ROOT = Path(__file__).resolve().parents[1]


def _link_cfg(**changes) -> str:
    """A share link's ``cfg`` for Llama-3.1-70B with some fields replaced."""
    raw = base64.urlsafe_b64decode(encode_model(catalog.get_model("llama-3.1-70b")) + "==")
    data = {**json.loads(raw), **changes}
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


# 1. links that grow the server


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"L": 30_000_000, "g": [[30_000_000, 8, 128, 128, None, None]]}, "layers must be <="),
        ({"c": 10**16}, "max_context_tokens must be <="),
        ({"g": [[80, 10**9, 128, 128, None, None]]}, "kv_heads must be <="),
        ({"g": [[80, 8, 10**9, 128, None, None]]}, "k_head_dim must be <="),
        ({"g": [[40, 8, 128, 128, None, None]] * 40}, "at most 16 attention groups"),
        ({"g": [[80, 8, 128, 128, 10**12, "sliding"]]}, "window_tokens must be <="),
        ({"sl": 1, "sb": 10**18, "L": 81}, "state_bytes_per_layer must be <="),
        ({"pt": 1e300, "pa": 1e300}, "params_total must be <="),
        ({"pt": 10**400}, "pt is too large"),
        ({"pt": "nan"}, "pt is not a number"),
    ],
)
def test_link_model_limits(changes, message):
    started = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(message)):
        decode_model(_link_cfg(**changes))
    assert time.perf_counter() - started < 0.5


def test_link_model_that_grows_is_a_warning_not_a_model():
    values, warnings, imported = parse_query({"cfg": _link_cfg(c=10**16), "model": "x"})
    assert imported == {}
    assert any("unreadable" in w and "max_context_tokens" in w for w in warnings)


def test_link_model_nested_deeply_is_refused():
    deep = base64.urlsafe_b64encode(b"[" * 1400 + b"]" * 1400).decode()  # json.loads recurses
    with pytest.raises(ValueError, match="not valid"):
        decode_model(deep)


def test_link_model_with_a_catalog_id_is_renamed_with_a_warning():
    cfg = _link_cfg(g=[[80, 64, 128, 128, None, None]])  # MHA: 8x the catalog's KV bytes
    values, warnings, imported = parse_query({"cfg": cfg, "model": "llama-3.1-70b"})
    assert values["model"] == "llama-3.1-70b"  # the catalog model, as the catalog has it
    assert list(imported) == ["cfg-llama-3.1-70b"]
    assert imported["cfg-llama-3.1-70b"].groups[0].kv_heads == 64
    assert any("cfg-llama-3.1-70b" in w and "catalog" in w for w in warnings)


def test_link_model_with_a_markdown_id_is_renamed():
    values, warnings, imported = parse_query(
        {"cfg": _link_cfg(id="![x](http://a/x.png)"), "model": "![x](http://a/x.png)"}
    )
    (mid,) = imported
    assert re.fullmatch(r"cfg-[a-z0-9._-]+", mid) and values["model"] == mid
    assert not any("![" in w or "](" in w for w in warnings)


def test_catalog_models_are_within_the_limits():
    for spec in catalog.models().values():
        assert spec.max_context_tokens <= MODEL_LIMITS["max_context_tokens"]
        assert isinstance(spec, ModelSpec)


# 2. config.json imports

BASE = json.loads(model_config("deepseek-ai--DeepSeek-V3").read_text())


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("num_hidden_layers", 10**9, "num_hidden_layers is 1000000000; expected a whole number"),
        ("text_config", "llama", "text_config is a JSON string"),
        ("text_config", [1, 2], "text_config is a JSON array"),
        ("intermediate_size", "18432", "intermediate_size is '18432'"),
        ("intermediate_size", True, "intermediate_size is True"),
        ("q_lora_rank", "1536", "q_lora_rank is '1536'"),
        ("n_routed_experts", "256", "n_routed_experts is '256'"),
        ("first_k_dense_replace", "3", "first_k_dense_replace is '3'"),
        ("quantization_config", ["fp8"], "quantization_config is a JSON array"),
        ("vocab_size", 10**400, "vocab_size is a 401-digit number"),
        ("moe_intermediate_size", 10**30, "moe_intermediate_size is a 31-digit number"),
        ("model_type", ["deepseek_v3"], "model_type is ['deepseek_v3']; expected a name"),
        ("max_position_embeddings", 10**16, "max_position_embeddings is a 17-digit number"),
    ],
)
def test_config_wrong_types_and_ranges(key, value, message):
    started = time.perf_counter()
    with pytest.raises(ValueError, match=re.escape(message)) as err:
        load_hf_config({**BASE, key: value})
    assert str(err.value).startswith("config.json: ")
    assert time.perf_counter() - started < 0.5


def test_config_json_text_deeply_nested_or_huge_integer():
    with pytest.raises(ValueError, match="nests 5,000 levels"):
        load_hf_config('{"a": ' * 5000 + "1" + "}" * 5000)
    with pytest.raises(ValueError, match="unreadable JSON"):
        load_hf_config('{"vocab_size": 1' + "0" * 5000 + "}")


def test_config_estimated_parameters_beyond_the_limit_are_refused():
    with pytest.raises(ValueError, match="config.json: params_total must be <="):
        load_hf_config({**BASE, "n_routed_experts": 65_536, "moe_intermediate_size": 1 << 20})


KEYS = (
    "num_hidden_layers num_attention_heads hidden_size num_key_value_heads head_dim "
    "max_position_embeddings text_config intermediate_size q_lora_rank kv_lora_rank "
    "qk_rope_head_dim qk_nope_head_dim v_head_dim num_experts n_routed_experts "
    "num_experts_per_tok first_k_dense_replace moe_intermediate_size n_shared_experts "
    "moe_layer_freq quantization_config vocab_size sliding_window layer_types model_type "
    "mlp_only_layers tie_word_embeddings kv_cache_dtype torch_dtype _name_or_path"
).split()
JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**20), max_value=10**20)
    | st.sampled_from([0, 1, 2, 7, 64, 128, 4096, 2**53, 10**400])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=8,
)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    base=st.sampled_from(
        [
            "deepseek-ai--DeepSeek-V3",
            "meta-llama--Meta-Llama-3.1-8B",
            "mistralai--Mixtral-8x7B-v0.1",
        ]
    ),  # fmt: skip
    changes=st.dictionaries(st.sampled_from(KEYS), JSONISH, min_size=1, max_size=4),
)
def test_config_random_fields_give_a_model_or_a_clear_error(base, changes):
    cfg = {**json.loads(model_config(base).read_text()), **changes}
    started = time.perf_counter()
    try:
        spec = load_hf_config(cfg)
    except ValueError as exc:
        assert str(exc).startswith(("config.json", "hf_quant_config.json")), str(exc)
    else:
        assert isinstance(spec, ModelSpec)
        assert spec.layers <= MODEL_LIMITS["layers"]
        assert spec.params_total <= MODEL_LIMITS["params"]
    assert time.perf_counter() - started < 1.0


# 3. deeply nested JSON uploads


def test_deeply_nested_json_lines_is_refused_before_pyarrow():
    deep = b'{"prompt_tokens": 5, "x": ' + b"[" * 175_000 + b"]" * 175_000 + b"}\n"
    data = b'{"prompt_tokens": 3}\n' + deep  # 350 kB: pyarrow's reader would overflow the C stack
    started = time.perf_counter()
    with pytest.raises(TrafficError, match=r"deep.jsonl: line 2: the JSON nests 175,001 levels"):
        load_traffic(data, name="deep.jsonl")
    assert time.perf_counter() - started < 5


def test_deeply_nested_json_array_and_perftest_json():
    with pytest.raises(TrafficError, match="nests"):
        load_traffic(b"[" * 3000 + b"]" * 3000, name="deep.json")
    text = '{"results": {"MsgSize": 65536, "BW_average": 1, "x": ' + "[" * 3000 + "]" * 3000
    with pytest.raises(MeasureError, match="nests"):
        load_measurement(text.encode() + b"}}", "perf.json", kind="perftest-json")


@pytest.mark.parametrize(
    ("text", "lines", "depth"),
    [
        (b'{"a": [1, {"b": 2}]}', False, 3),
        (b'{"a": "[[[[[[[["}', False, 1),  # brackets in strings do not count
        (b'{"a": "\\"[[[[", "b": [1]}', False, 2),  # an escaped quote stays in the string
        (b'{"a": "\\\\", "b": [[1]]}', False, 3),  # an escaped backslash ends nothing
        (b'{"a": "broken\n[[[[', True, 4),  # a newline ends a broken string
        (b"[[[\n]]]\n[[\n", True, 3),
    ],
)
def test_max_depth(text, lines, depth):
    assert max_depth(text, lines=lines)[0] == depth


def test_real_samples_nest_shallowly():
    for path in (ROOT / "data" / "measurements").glob("*.json"):
        assert max_depth(path.read_bytes())[0] <= MAX_JSON_DEPTH


# 4. selection patterns


@pytest.mark.parametrize(
    "pattern", ["(a+)+$", "(a|aa)*$", "(?:x*)*y", "(ab{2,})+", ".*.*.*.*x", "k" * 201]
)
def test_exponential_patterns_are_refused_quickly(pattern):
    started = time.perf_counter()
    with pytest.raises(MeasureError, match="pattern"):
        check_pattern(pattern)
    assert time.perf_counter() - started < 0.1


@pytest.mark.parametrize(
    "pattern", ["kv|transfer|send|recv", r"nccl\w*?(sendrecv|send|recv)", "(ab)+", "[(a+)+]x"]
)
def test_ordinary_patterns_pass(pattern):
    check_pattern(pattern)


def test_nsys_with_a_hostile_pattern_is_a_message_in_bounded_time():
    csv = (ROOT / "data" / "measurements" / "nsys_nvtx_sum.csv").read_text()
    started = time.perf_counter()
    with pytest.raises(MeasureError, match="repeats a group"):
        load_measurement(csv.encode(), "nsys.csv", kind="nsys", pattern="(a+)+$")
    assert time.perf_counter() - started < 1


# 5. markdown injection


def _assert_inert(text: str) -> None:
    assert "![" not in text and "](" not in text and "<a" not in text.lower()
    assert not any(line.lstrip().startswith("#") for line in text.splitlines())


def test_hostile_link_warnings_are_plain_text():
    _, warnings, _ = parse_query(
        {
            "model": "![px](http://attacker/x.png)",
            "links": "ib-ndr,x\n# You won\n[claim](http://attacker/),<a href=x>y</a>",
            "gpu": "<img src=x onerror=alert(1)>",
            "seq": "$\\href{http://a}{x}$",
            "band": "![b](http://attacker/b.png)",
            "cmp": "link:![c](http://attacker/c.png)",
        }
    )
    assert len(warnings) >= 5
    for w in warnings:
        _assert_inert(w)
    assert any("attacker" in w for w in warnings)  # still shown, as text


@pytest.mark.parametrize(
    "text",
    ["![px](http://a/x.png)", "# heading", "a\n## b", "<a href='x'>y</a>", "[l](u)", "- x"],
)
def test_md_escape(text):
    out = md_escape(text)
    _assert_inert(out)
    assert "\n" not in out and not out.startswith(("-", "#"))


def test_md_escape_keeps_ordinary_text():
    for text in ("48.02 GB/s (closest: ib-ndr)", "kv_cache_usage", "llama-3.1-70b"):
        assert md_escape(text) == text


# 6. --json is always valid JSON


def test_imported_model_names_carry_no_markup():
    # an imported name is shown in titles, captions and warnings: nothing markdown or HTML reads
    from kvmodel.hfconfig_fields import display_name

    assert display_name("![px](http://attacker/x.png)") == "px(http://attacker/x.png)"
    assert display_name('<a href="x">Llama</a> *bold* `code` $x$') == "a hrefxLlama/a bold code x"
    assert display_name("Qwen3-8B (8.19B params)") == "Qwen3-8B (8.19B params)"
    spec = load_hf_config({"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 64,
                           "num_attention_heads": 4, "num_key_value_heads": 2,
                           "max_position_embeddings": 128, "vocab_size": 1000,
                           "intermediate_size": 128}, name="# [hi](x)")  # fmt: skip
    assert "[" not in spec.name and "#" not in spec.name


def test_cli_json_overflow_is_a_clear_error(tmp_path, capsys):
    # gauge samples of 1.7e308 add up beyond a float: a message, never NaN or a silent null
    prom = (ROOT / "data" / "measurements" / "gap_gauge.prom").read_text()
    big = re.sub(r" [0-9.e+]+$", " 1.7e308", prom, flags=re.M)
    path = tmp_path / "big.prom"
    path.write_text(big)
    assert main(["metrics", str(path), "--json"]) == 2
    assert "beyond what a number holds" in capsys.readouterr().err


def test_json_text_is_strict():
    from kvmodel.cli.output import json_text

    text = json_text({"a": float("nan"), "b": [float("inf"), 1.5], "c": (2, -float("inf"))})
    assert json.loads(text) == {
        "a": None,
        "b": [None, 1.5],
        "c": [2, None],
        "non_finite": {"a": "NaN", "b[0]": "Infinity", "c[1]": "-Infinity"},  # the reason
    }
    assert "non_finite" not in json.loads(json_text({"a": 1.0, "b": [2]}))


# 7. Prometheus: linear, bounded, and no silent wrong answers


def _gap_histogram(n_sets: int, distinct: bool = True) -> str:
    """``n_sets`` label sets of a gap histogram, each with its own bucket bounds (distinct)."""
    out = ["# TYPE llm_kv_transfer_gap_seconds histogram"]
    for i in range(n_sets):
        lo, hi = (0.01 + i * 1e-6, 0.1 + i * 1e-6) if distinct else (0.01, 0.1)
        name = "llm_kv_transfer_gap_seconds"
        out += [
            f'{name}_bucket{{pod="p{i}",le="{lo}"}} 5',
            f'{name}_bucket{{pod="p{i}",le="{hi}"}} 10',
            f'{name}_bucket{{pod="p{i}",le="+Inf"}} 10',
            f'{name}_sum{{pod="p{i}"}} 0.3',
            f'{name}_count{{pod="p{i}"}} 10',
        ]
    return "\n".join(out) + "\n"


def test_label_sets_with_their_own_bounds_sum_by_le():
    from kvmodel.measure import parse_prometheus_metrics

    # 2 sets: A (le 1: 5, le 3: 10), B (le 2: 4, le 3: 6); sum by (le), where a set without a
    # bound counts up to its last bound below: le 1 → 5+0, le 2 → 5+4, le 3 → 10+6 (by hand)
    text = "\n".join(
        [
            'llm_kv_transfer_gap_seconds_bucket{p="a",le="1"} 5',
            'llm_kv_transfer_gap_seconds_bucket{p="a",le="3"} 10',
            'llm_kv_transfer_gap_seconds_bucket{p="a",le="+Inf"} 10',
            'llm_kv_transfer_gap_seconds_bucket{p="b",le="2"} 4',
            'llm_kv_transfer_gap_seconds_bucket{p="b",le="3"} 6',
            'llm_kv_transfer_gap_seconds_bucket{p="b",le="+Inf"} 6',
        ]
    )
    summary = parse_prometheus_metrics(text, "t").summaries["llm_kv_transfer_gap_seconds"]
    assert summary.buckets == ((1.0, 5.0), (2.0, 9.0), (3.0, 16.0), (float("inf"), 16.0))


def test_many_series_are_a_clear_message(monkeypatch):
    from kvmodel.measure import parse_prometheus_metrics
    from kvmodel.textio import prometheus

    monkeypatch.setattr(prometheus, "MAX_SERIES", 500)
    summary = parse_prometheus_metrics(_gap_histogram(500), "t").summaries
    assert summary["llm_kv_transfer_gap_seconds"].label_sets == 500
    with pytest.raises(MeasureError, match="over 500 series"):
        parse_prometheus_metrics(_gap_histogram(501), "t")
    hist = "".join(
        f'vllm:request_prompt_tokens_bucket{{pod="{i}",le="{le}"}} 1\n'
        for i in range(501)
        for le in (10, "+Inf")
    )
    with pytest.raises(TrafficError, match="over 500 series"):
        load_traffic(hist.encode(), name="m.prom")


def test_unusual_prometheus_lines_are_bounded(monkeypatch):
    from kvmodel.textio import prometheus

    monkeypatch.setattr(prometheus, "MAX_SLOW_LINES", 10)
    exemplar = 'a_bucket{le="1"} 5 # {trace_id="x"} 0.5 1.0\n'  # only prometheus_client reads it
    assert len(prometheus.parse_exposition(exemplar * 10, "t", expected="")) == 10
    with pytest.raises(ValueError, match="over 10 lines in unusual forms"):
        prometheus.parse_exposition(exemplar * 11, "t", expected="")


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['le="NaN"} 8'], "le='NaN' is not a number"),
        (['le="100"} -3'], "is -3"),
        (['le="100"} NaN'], "is nan"),
    ],
)
def test_prompt_histogram_bad_buckets(lines, message):
    metric = "vllm:request_prompt_tokens_bucket{"
    text = "\n".join(
        [metric + 'le="50"} 4', *(metric + x for x in lines), metric + 'le="+Inf"} 12']
    )
    with pytest.raises(TrafficError, match=re.escape(message)):
        load_traffic(text.encode(), name="m.prom")


def test_prompt_histogram_counts_beyond_a_float():
    metric = "vllm:request_prompt_tokens_bucket"
    text = f'{metric}{{p="a",le="10"}} 1.7e308\n{metric}{{p="b",le="10"}} 1.7e308\n'
    with pytest.raises(TrafficError, match="more than a number holds"):
        load_traffic(text.encode(), name="m.prom")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('llm_kv_transfer_gap_seconds{request_id="1"} -0.5', "is -0.5; expected a duration"),
        ("llm_kv_transfer_gap_seconds_sum -50\nllm_kv_transfer_gap_seconds_count 10", "is -50"),
        ('llm_kv_transfer_gap_seconds_bucket{le="NaN"} 3', "le='NaN' is not a number"),
        ('llm_kv_transfer_gap_seconds_bucket{le="1"} -3', "expected a count ≥ 0"),
    ],
)
def test_metrics_negative_or_nan_are_clear_messages(text, message):
    # a negative gap once gave a share of -5,000 % with the verdict "under"
    from kvmodel.measure import parse_prometheus_metrics

    with pytest.raises(MeasureError, match=re.escape(message)):
        parse_prometheus_metrics(text + "\n", "t")


# 8. decompression bombs and implausible numbers in traces


def gzip_bomb(path: Path, line: bytes, megabytes: int) -> Path:
    """A gzip file that inflates to ``megabytes`` MB of ``line`` repeated: one compressed 1 MB
    member written again and again (gzip readers read concatenated members), so it is quick."""
    import gzip

    member = gzip.compress(line * (1_000_000 // len(line)), compresslevel=9)
    with open(path, "wb") as fh:
        for _ in range(megabytes):
            fh.write(member)
    return path


def test_gzip_read_whole_is_held_to_the_plain_limit(tmp_path):
    bomb = gzip_bomb(tmp_path / "t.jsonl.gz", b'{"prompt_tokens": 1234}\n', 3)
    with pytest.raises(TrafficError, match=r"decompressed, the file is over 2 MB \(the limit"):
        load_traffic(bomb, max_bytes=2_000_000)
    small = gzip_bomb(tmp_path / "s.jsonl.gz", b'{"prompt_tokens": 1234}\n', 1)
    assert load_traffic(small, max_bytes=2_000_000).prompt_tokens.size == 1_000_000 // 24
    prom = gzip_bomb(tmp_path / "m.prom.gz", b'vllm:request_prompt_tokens_bucket{le="9"} 5\n', 3)
    with pytest.raises(TrafficError, match="decompressed, the file is over 2 MB"):
        load_traffic(prom, max_bytes=2_000_000)
    with pytest.raises(MeasureError, match="decompressed, the file is over 2 MB"):
        load_measurement(prom, max_bytes=2_000_000)


@pytest.mark.parametrize("per_request", [True, False])
def test_implausible_timestamps_are_a_clear_message(per_request):
    text = b"timestamp,prompt_tokens\n0,100\n1e30,200\n2e30,300\n"
    with pytest.raises(TrafficError, match="the arrival times span .* years"):
        load_traffic(text, name="t.csv", per_request=per_request)
    ok = b"timestamp,prompt_tokens\n1700000000,100\n1700000060,200\n"  # one minute apart
    assert load_traffic(ok, name="t.csv", per_request=per_request).span_s == 60.0


@pytest.mark.parametrize(
    "text",
    [
        b'prompt_tokens,output_tokens\n100,10\n"200,20\n300,30\n',  # 2 of 3 rows swallowed
        b'prompt_tokens,model\n100,a\n200,"b\n300,c\n400,d\n',  # an unused column: "0 skipped"
    ],
)
def test_a_quote_that_never_closes_is_named(text):
    with pytest.raises(TrafficError, match=r"row 3: a quote \(\"\) opens here and never closes"):
        load_traffic(text, name="t.csv")
    quoted = b'prompt_tokens,model\n100,"a ""big"" one"\n200,"two\nlines"\n300,c\n'
    assert load_traffic(quoted, name="t.csv").prompt_tokens.tolist() == [100, 200, 300]
    inches = b'prompt_tokens,screen\n100,27"\n200,"32"""\n300,15"\n'  # quotes inside fields
    assert load_traffic(inches, name="t.csv").prompt_tokens.tolist() == [100, 200, 300]
    first = b'"prompt_tokens"\n"100\n200\n'  # the piece's first field left open
    with pytest.raises(TrafficError, match=r"row 2: a quote .* never closes, so the 2 lines"):
        load_traffic(first, name="t.csv")


def test_a_million_columns_is_a_clear_message(tmp_path):
    wide = tmp_path / "wide.csv"
    wide.write_text(",".join(f"c{i}" for i in range(1_000_000)) + "\n" + "1," * 999_999 + "1\n")
    with pytest.raises(TrafficError, match="wide.csv: row 1 .* has 1,000,000 columns, over the"):
        load_traffic(wide)


@pytest.mark.parametrize(
    "counts", [("1e308", "1e308"), ("1e15", "1")]
)  # sum beyond a float; beyond the request limit
def test_histogram_counts_beyond_the_limit(counts):
    text = f"prompt_tokens,count\n100,{counts[0]}\n200,{counts[1]}\n".encode()
    with pytest.raises(TrafficError, match="count: the counts add up to .* over the limit"):
        load_traffic(text, name="h.csv")


def test_fit_of_numbers_near_the_float_limit_is_a_clear_message(tmp_path, capfd):
    from kvmodel.calibrate import fit_latency_bandwidth

    # sizes near 1e308 overflow x / t: LAPACK printed "DLASCL had an illegal value" and the fit
    # said "SVD did not converge"
    with pytest.raises(MeasureError, match="cannot fit a latency and a bandwidth .* one benchmark"):
        fit_latency_bandwidth([1e308, 1.5e308, 1.7e308], [1e-300, 1e300, 1e-300])
    assert capfd.readouterr().err == ""
    # scaled inside, the fit is the same for sizes in B and in 1e200 B: 2 us + size / 50 GB/s
    sizes = [1e3, 1e6, 1e9]
    fit = fit_latency_bandwidth(sizes, [2e-6 + s / 50e9 for s in sizes])
    assert fit.latency_s == pytest.approx(2e-6) and fit.bandwidth_bytes_per_s == pytest.approx(50e9)
    fit = fit_latency_bandwidth([s * 1e200 for s in sizes], [2e-6 + s / 50e9 for s in sizes])
    assert fit.bandwidth_bytes_per_s == pytest.approx(50e209)


@pytest.mark.parametrize(
    ("text", "escaped"),
    [
        ("see http://attacker/x.png", "http\\://"),
        ("HTTPS://a.example", "HTTPS\\://"),
        ("www.attacker.example", "www\\."),
        ("mail admin@attacker.example", "admin\\@"),
    ],
)
def test_md_escape_leaves_no_autolink(text, escaped):
    # GitHub-flavoured markdown (Streamlit's) turns bare URLs, www. hosts and e-mail addresses
    # into links; an escaped ':', '.' or '@' reads the same and links nothing
    assert escaped in md_escape(text)


def test_histogram_bounds_over_2_62_tokens_are_refused():
    # found by tests/test_hostile_properties.py: a bound of 1e30 was cast to int64 (garbage)
    req = load_traffic(b"prompt_tokens,count\n100,3\n1e30,5\n", name="h.csv")
    assert req.prompt_tokens.tolist() == [100] and req.weights.tolist() == [3.0]
    assert "prompt_tokens is 1e+30" in req.skipped_examples[0]
    metric = "vllm:request_prompt_tokens_bucket"
    text = f'{metric}{{le="1e30"}} 5\n{metric}{{le="+Inf"}} 5\n'.encode()
    with pytest.raises(TrafficError, match="le='1e30' is over 2\\^62 tokens"):
        load_traffic(text, name="m.prom")
