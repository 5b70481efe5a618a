"""The model codec (kvmodel.modelcodec): a link's cfg round-trips every number; garbage is
refused."""

import pytest
from numpy.testing import assert_allclose

from kvmodel import catalog
from kvmodel.build import build_scenario
from kvmodel.modelcodec import decode_model, encode_model
from kvmodel.transfer import evaluate


@pytest.mark.parametrize(
    "mid",
    [
        "llama-3.1-70b",
        "deepseek-v3",
        "gemma-4-26b-a4b",
        "qwen3.5-27b",
        "nemotron-h-56b",
        "mistral-7b",
        "llama-3.1-70b-fp8",
    ],
)
def test_codec_round_trip_keeps_every_number(mid):
    spec = catalog.get_model(mid)
    back = decode_model(encode_model(spec))
    for s in (1, 1000, 100_000):
        s = min(s, spec.max_context_tokens)
        assert_allclose(
            evaluate(build_scenario(model=back, seq_len=s)).transfer_s,
            evaluate(build_scenario(model=spec, seq_len=s)).transfer_s,
        )
    assert back.kv_dtype_native == spec.kv_dtype_native


@pytest.mark.parametrize(
    "text", ["", "abc", "e30", "x" * 5000, encode_model(catalog.get_model("llama-3.1-8b"))[:-12]]
)
def test_codec_rejects_garbage(text):
    with pytest.raises(ValueError):
        decode_model(text)
