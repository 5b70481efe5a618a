"""Issue 14's property tests: random configs, links, traces, measurements and Prometheus lines
give a result or the reader's own clear error, never another exception (about 8,000 examples
in all; see also tests/test_hostile.py's 3,000 random config fields)."""

from __future__ import annotations

import json
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from refdata import model_config

from kvmodel import inputs
from kvmodel.hfconfig import load_hf_config
from kvmodel.measure import MeasureError, load_measurement
from kvmodel.specs import ModelSpec
from kvmodel.textio import TextError
from kvmodel.textio.prometheus import parse_exposition, parse_line_reference
from kvmodel.traffic import TrafficError, load_traffic
from kvview.params import parse_query

SETTINGS = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**6), max_value=10**6)
    | st.sampled_from([0, 1, 8, 128, 4096, 2**31, 10**30, 10**400])
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8)
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
CONFIG_KEYS = (
    "num_hidden_layers num_attention_heads num_key_value_heads hidden_size head_dim "
    "intermediate_size vocab_size max_position_embeddings sliding_window layer_types "
    "kv_lora_rank qk_rope_head_dim v_head_dim q_lora_rank num_experts num_local_experts "
    "first_k_dense_replace moe_intermediate_size quantization_config torch_dtype model_type "
    "architectures rope_scaling num_experts_per_tok hybrid_override_pattern"
).split()


@settings(max_examples=1500, **SETTINGS)
@given(
    base=st.sampled_from(["google--gemma-4-26B-A4B", "Qwen--Qwen3.5-27B", "Qwen--Qwen3-8B"]),
    text_config=st.one_of(
        JSONISH, st.dictionaries(st.sampled_from(CONFIG_KEYS), JSONISH, max_size=5)
    ),
    top=st.dictionaries(st.sampled_from(CONFIG_KEYS), JSONISH, max_size=3),
)
def test_config_with_a_random_text_config(base, text_config, top):
    cfg = {**json.loads(model_config(base).read_text()), **top, "text_config": text_config}
    try:
        spec = load_hf_config(cfg)
    except ValueError as exc:  # the importer's clear messages are ValueErrors naming the file
        assert str(exc).startswith("config.json"), repr(exc)
    else:
        assert isinstance(spec, ModelSpec) and spec.layers >= 1


LINK_KEYS = [row.name for row in inputs.INPUTS if row.url] + ["cfg", "links", "models", "cmp"]
LINK_VALUES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(["nan", "inf", "-1", "1e400", "0", "", "llama-3.1-70b", "ib-ndr,nvlink4"]),
    st.integers(min_value=-(10**20), max_value=10**20).map(str),
    st.floats().map(str),
)


@settings(max_examples=1500, **SETTINGS)
@given(st.dictionaries(st.sampled_from(LINK_KEYS), LINK_VALUES, max_size=8))
def test_link_parser_never_raises(query):
    values, warnings, imported = parse_query(query)
    assert isinstance(values, dict) and isinstance(imported, dict)
    assert all(isinstance(w, str) for w in warnings)


CELLS = st.one_of(
    st.integers(min_value=-(10**12), max_value=10**12).map(str),
    st.sampled_from(["", "nan", "inf", "-inf", "1e30", "1e308", "0x10", '"', '""', "1.5", "NULL"]),
    st.floats().map(repr),
    st.text(alphabet='0123456789,.;"\t\n -e', max_size=8),
)
HEADERS = st.sampled_from(
    [
        "prompt_tokens",
        "prompt_tokens,output_tokens",
        "timestamp,prompt_tokens,output_tokens",
        "input_length,count",
        "prompt_tokens,probability",
        "ContextTokens,GeneratedTokens,TIMESTAMP",
    ]
)


@settings(max_examples=1200, **SETTINGS)
@given(header=HEADERS, rows=st.lists(st.lists(CELLS, min_size=1, max_size=4), max_size=12))
def test_trace_reader_random_rows(header, rows):
    text = header + "\n" + "\n".join(",".join(r) for r in rows) + "\n"
    for per_request in (True, False):
        try:
            req = load_traffic(text.encode(), name="t.csv", per_request=per_request)
        except TrafficError as exc:
            assert str(exc).startswith("t.csv: "), str(exc)
        else:
            assert req.prompt_tokens.size >= 1
            weights = req.weights if req.weights is not None else req.prompt_tokens
            assert all(math.isfinite(float(x)) for x in weights)


@settings(max_examples=800, **SETTINGS)
@given(
    data=st.binary(max_size=200)
    | st.text(max_size=200).map(str.encode)
    | st.sampled_from([b"\x1f\x8b", b"PAR1", b"\xff\xfe", b"\xef\xbb\xbf", b"{", b"["]).flatmap(
        lambda head: st.binary(max_size=100).map(lambda rest: head + rest)
    ),
    name=st.sampled_from(["t.csv", "t.tsv", "t.jsonl", "t.json", "t.prom", "t.parquet", "t.gz"]),
)
def test_trace_reader_random_bytes(data, name):
    try:
        load_traffic(data, name=name)
    except TrafficError as exc:
        assert str(exc).startswith(name), str(exc)


@settings(max_examples=800, **SETTINGS)
@given(
    data=st.binary(max_size=200) | st.text(max_size=200).map(str.encode),
    name=st.sampled_from(["m.prom", "m.txt", "m.csv", "m.json", "metrics"]),
)
def test_measurement_reader_random_bytes(data, name):
    try:
        load_measurement(data, name)
    except MeasureError:
        pass


METRIC = st.sampled_from(
    ["llm_kv_transfer_gap_seconds", "vllm:time_to_first_token_seconds", "a", "a:b_c"]
)
SUFFIX = st.sampled_from(["", "_bucket", "_sum", "_count", "_total"])
LABEL_VALUE = st.text(alphabet='abc01."\\n=,{} ', max_size=6)
NUMBER = st.sampled_from(["1", "0.5", "-3", "1e308", "NaN", "+Inf", "-Inf", "1_0", ".5", "x"])


@st.composite
def prom_line(draw):
    if draw(st.integers(0, 9)) == 0:  # comments, and arbitrary text
        return draw(st.sampled_from(["# TYPE a counter", "# HELP a x", "#", "# x", "# TYPE"]))
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=20))
    labels = draw(st.lists(st.tuples(st.sampled_from(["le", "pod", "b"]), LABEL_VALUE), max_size=3))
    body = ",".join(f'{k}="{v}"' for k, v in labels) + draw(st.sampled_from(["", ","]))
    braces = "{" + body + "}" if labels or draw(st.booleans()) else ""
    sep = draw(st.sampled_from([" ", "\t", "  "]))
    stamp = draw(st.sampled_from(["", " 1700000000", " 1.5"]))
    return draw(METRIC) + draw(SUFFIX) + braces + sep + draw(NUMBER) + stamp


@settings(max_examples=2500, **SETTINGS)
@given(prom_line())
def test_prometheus_fast_path_reads_lines_as_prometheus_client_does(line):
    # the regular-expression reader must agree with prometheus_client, which it replaced for
    # speed: the same samples, or both refuse the line
    try:
        slow = parse_line_reference(line.strip())
    except ValueError:
        slow = "refused"
    try:
        fast = [(s.name, s.labels, s.value) for s in parse_exposition(line, "t", expected="")]
    except TextError:
        fast = "refused"
    if slow != "refused" and any(math.isnan(v) for _, _, v in slow):
        slow = [(n, lab, "nan" if math.isnan(v) else v) for n, lab, v in slow]
        fast = [(n, lab, "nan" if math.isnan(v) else v) for n, lab, v in fast]
    assert fast == slow
