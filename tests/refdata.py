"""Where the tests find their reference files: ``tests/data/`` inside the repo, nothing outside it.

The Hugging Face configs under ``tests/data/model-configs`` are vendored copies (sources and
licences in ``tests/data/README.md``).  A missing file is an error, never a skip: a test that
needs a reference file and cannot find it must fail where everybody sees it.
"""

from __future__ import annotations

from pathlib import Path

DATA = Path(__file__).resolve().parent / "data"
MODEL_CONFIGS = DATA / "model-configs"
QUANT_SUFFIX = ".hf_quant_config.json"


def model_config(stem: str) -> Path:
    """The vendored ``config.json`` of one model, by file stem (``<org>--<model>``)."""
    path = MODEL_CONFIGS / f"{stem}.json"
    if not path.is_file():
        raise FileNotFoundError(f"reference config {path} is missing (see tests/data/README.md)")
    return path


def quant_config(stem: str) -> Path | None:
    """The model's ``hf_quant_config.json`` beside its config, or None when it has none."""
    path = MODEL_CONFIGS / f"{stem}{QUANT_SUFFIX}"
    return path if path.is_file() else None


def model_configs() -> list[Path]:
    """Every vendored model config (quantisation files left out); an empty folder is an error."""
    paths = sorted(p for p in MODEL_CONFIGS.glob("*.json") if not p.name.endswith(QUANT_SUFFIX))
    if not paths:
        raise FileNotFoundError(
            f"no reference configs in {MODEL_CONFIGS} (see tests/data/README.md)"
        )
    return paths
