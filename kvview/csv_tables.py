"""The tables people download as CSV, made to be read away from the app.  No streamlit here.

Every CSV says which scenario it came from (its share link on a first ``# scenario:`` line;
``pd.read_csv(..., comment="#")`` skips it), starts with a label column naming each row, carries
its units in the column headers (or, for the Compare table whose rows are quantities, in the row
labels) and holds numbers as numbers, ``SIG_DIGITS`` significant digits, never "107.38 ms".
The ``*_frame`` functions turn the pages' SI tables into those frames; ``csv_handout`` writes one.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from kvview.export import csv_bytes
from kvview.fmt import setting_labels

SIG_DIGITS = 4  # 107.38 ms → 107.4; 0.012345 ms → 0.01235: the model is no closer than that
NONE_TEXT = "none"  # a critical length that no prompt up to max context reaches


def round_sig(value, digits: int = SIG_DIGITS):
    """A float to ``digits`` significant digits; ints, text, bools and NaN unchanged."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (float, np.floating)):
        return value
    if not math.isfinite(value) or value == 0:
        return float(value)
    return round(float(value), digits - 1 - math.floor(math.log10(abs(value))))


def _rounded(df: pd.DataFrame, digits: int) -> pd.DataFrame:
    out = df.copy()
    for col in out.columns:
        if out[col].dtype.kind in "fO":
            out[col] = out[col].map(lambda v: round_sig(v, digits)).astype(out[col].dtype)
    return out


SCENARIO_COLUMN = "scenario link"  # the last column of a handout: the page's share link


def csv_handout(
    df: pd.DataFrame, *, scenario_link: str | None = None, digits: int = SIG_DIGITS
) -> bytes:
    """CSV bytes of ``df`` with floats at ``digits`` significant digits, formula injection
    neutralised (``export.csv_bytes``), and the scenario's link in a last column
    ``SCENARIO_COLUMN`` (the same on every row).

    The link was a ``# scenario:`` first line until issue 24: ``pandas.read_csv`` with its
    defaults read that as a one-column header.  As a column, every reader with defaults
    gets the table's own columns (names and units unchanged) plus the link."""
    if not isinstance(df, pd.DataFrame):
        raise ValueError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    out = _rounded(df, digits)
    if scenario_link:
        link = " ".join(str(scenario_link).split())  # one line, whatever it held
        out = out.assign(**{SCENARIO_COLUMN: link})
    return csv_bytes(out)


def spec_columns(df: pd.DataFrame, spec) -> pd.DataFrame:
    """``spec``: (column, header, scale) rows; scale multiplies numbers, None keeps values."""
    out = {}
    for col, header, scale in spec:
        if col not in df.columns:
            continue
        values = df[col]
        out[header] = values if scale is None else pd.to_numeric(values) * scale
    return pd.DataFrame(out)


def _critical(values) -> list:
    return [NONE_TEXT if v is None or v != v else int(v) for v in values]


def comparison_frame(evs) -> pd.DataFrame:
    """Compare page: one row per quantity (unit in its label), one column per scenario.

    ``evs`` is a list of (label, Evaluation), the first the reference.
    """
    from kvmodel.sweeps import compare_table

    table = compare_table(evs)
    rows = {
        "Model": table["model"],
        "Interconnect": table["link"],
        "Transfer stack": table["stack"],
        "Prompt [tokens]": table["seq_len"],
        "Batch [requests]": table["batch"],
        "KV dtype": table["kv_dtype"],
        "Compression": table["compression"],
        "Layer-wise": table["layerwise"].map({True: "on", False: "off"}),
        "TP prefill [GPUs]": table["tp_prefill"],
        "TP decode [GPUs]": table["tp_decode"],
        "EP prefill [GPUs]": table["ep_prefill"],
        "EP decode [GPUs]": table["ep_decode"],
        # a Compare variant may change any scenario input: the rest of them
        "GPU": table["gpu"],
        "Attention parallelism": table["attention_parallel"],
        "Sliding layers on the wire": table["window_transfer"],
        "Link efficiency [%]": table["efficiency"].astype(float) * 100,
        "Parallel links [links]": table["streams"],
        "Quantize/dequantize throughput [GB/s]": table["codec_bytes_per_s"].astype(float) / 1e9,
        "Prefill [ms]": table["prefill_s"].astype(float) * 1e3,
        "Decode step [ms]": table["decode_step_s"].astype(float) * 1e3,
        "Critical at k × step [decode steps]": table["k"].astype(float),
        "KV cache [GB]": table["kv_bytes"].astype(float) / 1e9,
        "On the wire [GB]": table["wire_bytes"].astype(float) / 1e9,
        "Exposed transfer [ms]": table["exposed_transfer_s"].astype(float) * 1e3,
        "Transfer ÷ decode step [ratio]": table["transfer_over_decode"].astype(float),
        "Transfer vs decode step": table["step_verdict"],
        "TTFT [ms]": table["ttft_s"].astype(float) * 1e3,
        "Transfer share of TTFT [%]": table["transfer_share_of_ttft"].astype(float) * 100,
        "Share target [%]": table["share_target"].astype(float) * 100,
        "Critical sequence length [tokens]": pd.Series(
            _critical(table["critical_seq_len"]), index=table.index
        ),
    }
    out = pd.DataFrame(
        {label: [round_sig(rows[q][label]) for q in rows] for label in table.index},
        dtype=object,
    )
    out.insert(0, "quantity", list(rows))
    return out


def link_batch_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Interconnects page: ``in_ms(link_batch_table(...))`` → interconnect, bandwidth and the
    exposed transfer per batch as ``batch N [ms]``."""
    out = pd.DataFrame(
        {
            "interconnect": table["name"],
            "link id": table["link"],
            "bandwidth [GB/s per direction]": table["GB/s per direction"].astype(float),
        }
    )
    for col in table.columns:
        if col.startswith("batch ") and col[6:].isdigit():
            out[f"{col} [ms]"] = table[col].astype(float)
    return out


def mitigations_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Mitigations page (and Compare's TTFT table): ``in_ms(mitigation_table(...))``."""
    out = spec_columns(
        table,
        (
            ("option", "option", None),
            ("wire_bytes", "on the wire [GB]", 1e-9),
            ("framework_request_ms", "framework/request [ms]", 1),
            ("prefill_ms", "prefill [ms]", 1),
            ("exposed_transfer_ms", "exposed transfer [ms]", 1),
            ("codec_ms", "quantize + dequantize [ms]", 1),
            ("decode_step_ms", "first decode step [ms]", 1),
            ("ttft_ms", "TTFT [ms]", 1),
            ("ttft_saving_ms", "TTFT saved vs the first option [ms]", 1),
            ("transfer_share", "transfer share of TTFT [%]", 100),
            ("buildable", "buildable", None),
            ("lossy", "lossy", None),
        ),
    )
    out.insert(
        out.columns.get_loc("transfer share of TTFT [%]") + 1,
        "critical sequence length [tokens]",
        _critical(table["critical_seq_len"]),
    )
    return out


def models_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Models page: ``models_table(...)`` with units in the headers."""
    return spec_columns(
        table,
        (
            ("name", "model", None),
            ("model", "model id", None),
            ("attention", "attention", None),
            ("layers", "layers", None),
            ("kv_heads", "KV heads", None),
            ("bytes_per_token_short", "KV per token, short context [B]", None),
            ("seq_len", "prompt [tokens]", None),
            ("bytes_per_token_at_seq", "KV per token at the prompt [B]", None),
            ("kv_bytes_at_seq", "KV at the prompt [GB]", 1e-9),
            ("state_bytes", "state per request [B]", None),
            ("max_context_tokens", "max context [tokens]", None),
        ),
    )


def sensitivity_frame(table: pd.DataFrame) -> pd.DataFrame:
    """Plan page: ``kvmodel.sensitivity.tornado`` with settings as text and outcomes in ms/%."""
    low, high = setting_labels(table)
    out = pd.DataFrame({"input": table["input"], "low setting": low, "high setting": high})
    out["TTFT at low [ms]"] = table["ttft_low_s"].astype(float) * 1e3
    out["TTFT at high [ms]"] = table["ttft_high_s"].astype(float) * 1e3
    out["transfer share at low [%]"] = table["share_low"].astype(float) * 100
    out["transfer share at high [%]"] = table["share_high"].astype(float) * 100
    out["TTFT spread [ms]"] = table["delta_ttft_s"].astype(float) * 1e3
    base_ttft, base_share = table.attrs.get("ttft_s"), table.attrs.get("share")
    if base_ttft is not None and base_share is not None:
        out["TTFT of the scenario [ms]"] = float(base_ttft) * 1e3
        out["transfer share of the scenario [%]"] = float(base_share) * 100
    return out


def options_tried_frame(tried) -> pd.DataFrame:
    """Plan page: the mitigation ladder (``solve`` attempts), cheapest first."""
    return pd.DataFrame(
        {
            "option (cheapest first)": [a.label for a in tried],
            "exposed transfer [ms]": [a.exposed_s * 1e3 for a in tried],
            "transfer share of TTFT [%]": [a.transfer_share * 100 for a in tried],
            "meets the target": ["yes" if a.passed else "no" for a in tried],
        }
    )


def traffic_options_frame(rows) -> pd.DataFrame:
    """Traffic page: ``traffic.comparison`` rows, best first, shares in %."""
    df = pd.DataFrame(rows).sort_values("fraction_requests_gain", ascending=False)
    return pd.DataFrame(
        {
            "interconnect": df["link_name"].to_numpy(),
            "compression": df["compression"].to_numpy(),
            "layer-wise": df["layerwise"].map({True: "on", False: "off"}).to_numpy(),
            "requests that gain [%]": df["fraction_requests_gain"].to_numpy(dtype=float) * 100,
            "tokens that gain [%]": df["fraction_tokens_gain"].to_numpy(dtype=float) * 100,
            "transfer-bound [%]": df["fraction_transfer_bound"].to_numpy(dtype=float) * 100,
            "critical sequence length [tokens]": _critical(df["critical_seq_len"]),
        }
    )


MEASURED_ROWS = (  # Measured page, a scrape: ScrapeComparison field, label [unit], SI → unit
    ("exposed_transfer_s", "exposed KV transfer (model) vs transfer gap (measured) [ms]", 1e3),
    ("transfer_s", "whole KV transfer (model) vs NIXL transfer time (measured) [ms]", 1e3),
    ("prefill_s", "prefill [ms]", 1e3),
    ("ttft_s", "time to first token [ms]", 1e3),
    ("transfer_share_of_ttft", "transfer share of TTFT [%]", 100),
    ("bandwidth_per_stream_bytes_per_s", "bandwidth per stream [GB/s per direction]", 1e-9),
)


def _num(value, scale: float) -> float:
    """SI → the column's unit; a missing value is an empty cell (NaN), never a word."""
    return math.nan if value is None or not math.isfinite(value) else float(value) * scale


def model_vs_measured_frame(cmp) -> pd.DataFrame:
    """Measured page, a /metrics scrape: ``compare_to_model``'s quantities, one row each (the
    unit in the row's label, as the rows differ), model and measured as numbers; the share row's
    verdicts in ``note``."""
    v = cmp.verdict
    rows = []
    for key, label, scale in MEASURED_ROWS:
        r = getattr(cmp, key)
        note = "not in the scrape" if r.measured is None else ""
        if key == "transfer_share_of_ttft":
            agree = "" if v.agree is None else ("; they agree" if v.agree else "; they disagree")
            note = (
                f"against the {v.share_target:.0%} line: model {v.model}, measured "
                f"{v.measured or 'no TTFT in the scrape'}{agree}"
            )
        rows.append((label, _num(r.model, scale), _num(r.measured, scale), _num(r.ratio, 1), note))
    return pd.DataFrame(rows, columns=["quantity", "model", "measured", "measured ÷ model", "note"])


def nsys_vs_model_frame(cmp, nsys) -> pd.DataFrame:
    """Measured page, an nsys stats CSV: the model's per-layer transfer beside the profiled
    transfers, in ms."""
    rows = (
        ("mean per transfer", cmp.per_layer_s.model, nsys.mean_s),
        ("median per transfer", cmp.per_layer_median_s.model, nsys.median_s),
        ("shortest", cmp.model_min_s, nsys.min_s),
        ("longest", cmp.model_max_s, nsys.max_s),
    )
    return pd.DataFrame(
        {
            "quantity": [r[0] for r in rows],
            "model, one layer's KV [ms]": [_num(r[1], 1e3) for r in rows],
            "measured [ms]": [_num(r[2], 1e3) for r in rows],
            "measured ÷ model": [
                _num(r[2] / r[1], 1) if r[2] is not None and r[1] else math.nan for r in rows
            ],
        }
    )
