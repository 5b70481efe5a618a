"""Importing a config.json on the Models page (ui.config_import) through AppTest."""

import pytest
from app_helpers import app, metric
from refdata import model_config

from kvmodel.build import build_scenario
from kvmodel.transfer import evaluate
from kvview.fmt import fmt_bytes


def test_models_page_imports_a_config_and_carries_it_in_the_link():
    cfg = model_config("deepseek-ai--DeepSeek-V3")
    at = app(page="pages/models.py")
    at.text_area(key="cfg_paste").set_value(cfg.read_text())
    at.button(key="cfg_import").click().run()
    assert not at.exception
    assert "Imported" in at.success[0].value
    mid = at.selectbox(key="model").value
    assert mid.startswith("cfg-")
    query = {k: (v[0] if isinstance(v, list) else v) for k, v in at.query_params.items()}
    assert query["model"] == mid and query["cfg"]
    # a fresh session opened from that link gets the same model and numbers
    again = app(query)
    assert again.selectbox(key="model").value == mid
    ev = evaluate(build_scenario(model="deepseek-v3", link="100gbe"))
    assert metric(again, "Whole cache") == fmt_bytes(ev.kv_total_bytes)


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("", "Nothing to import"),
        ('{"num_hidden_layers": 2', "malformed JSON"),
        ('{"num_attention_heads": 8, "hidden_size": 64}', "num_hidden_layers"),
        ("not json {", "malformed JSON at line 1 column 1"),  # once read as a file path
    ],
)
def test_models_page_bad_config_shows_error(text, fragment):
    at = app(page="pages/models.py")
    at.text_area(key="cfg_paste").set_value(text)
    at.button(key="cfg_import").click().run()
    assert not at.exception
    assert fragment in at.error[0].value
    assert metric_free_ok(at)


def test_two_pasted_configs_of_one_model_type_stay_two_models():
    small, big = model_config("Qwen--Qwen3-8B"), model_config("Qwen--Qwen3-32B")
    at = app(page="pages/models.py")
    ids = []
    for cfg in (small, big):
        at.text_area(key="cfg_paste").set_value(cfg.read_text())
        at.button(key="cfg_import").click().run()
        assert not at.exception
        ids.append(at.selectbox(key="model").value)
    assert ids[0] != ids[1] and ids[1] == ids[0] + "-2"  # the second did not replace the first
    labels = [at.selectbox(key="model").format_func(i) for i in ids]
    assert all(label.startswith("qwen3 (") and "B params)" in label for label in labels)
    assert labels[0] != labels[1]


def metric_free_ok(at) -> bool:
    """The page still renders its takeaway after an error."""
    return bool(at.info) and "kB per token" in at.info[0].value
