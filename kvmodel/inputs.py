"""Every input of the tool, defined once.

One :class:`Input` row per input: its URL key, CLI flag, unit, SI scale, range, default, help
text and how it is validated.  The app's URL parser and sidebar widgets (``kvview.params``,
``ui.sidebar``), the CLI options (``kvmodel.cli``), the report's link back, the parameter table
of docs/links.md (``python -m kvmodel inputs --markdown``, checked by a test) and ``Scenario``'s
validation all read these rows.  To add an input: add a row here, use it in the model, and
regenerate that table (docs/architecture.md, "Adding an input").

Values are in *display units* here (ms, GB/s, %); ``scale`` turns one into SI (seconds, bytes/s,
a fraction), the unit ``Scenario`` holds.  A row also carries the behaviour that used to be
re-encoded by name elsewhere (``to_si``/``from_si``, ``est``, ``max_from``, ``only_with``,
``default_from``, ``follows``, ``auto_at``, and the widget's label, help, step and format); one
function applies each (``kvmodel.build.to_scenario``, ``kvview.params``, ``ui.widgets``).
A row has two ranges:

- ``lo``/``hi``: what the app offers. A link's value outside it is clamped with a warning; the
  widgets stop there.
- ``limit``: what the model accepts (``Scenario`` and the CLI); the app's range when not given.
  Outside it the CLI exits with a message naming the flag and the range.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cache
from numbers import Real
from pathlib import Path

from .dtypes import COMPRESSION_BITS, DEFAULT_COMPRESSION_GROUP, KV_DTYPE_BITS
from .inputs_table import markdown_table as _table
from .inputs_table import number_text

# Thresholds, defined once (the source article's numbers).
DEFAULT_SHARE_TARGET = 0.20  # a transfer above 20 % of TTFT gives back disaggregation's gains
DEFAULT_K = 1.0  # critical length: the transfer takes k decode steps
DEFAULT_DECODE_STEP_MS = 30.0  # 20-50 ms for Llama-3-70B at TP 8 on A100
DEFAULT_DECODE_STEP_S = DEFAULT_DECODE_STEP_MS / 1e3  # the same 30 ms in SI (the step's to_si)
DEFAULT_BAND_MS = (20.0, 50.0)  # the same article's decode-step band
DEFAULT_MIN_SEQ_LEN = 128  # chatbot prompts of ~128 tokens gain nothing
DEFAULT_MFU = 0.5  # prefill model-FLOP utilisation; long prompts on H100 reach 0.4-0.6
MIN_MFU = 0.001  # below 0.1 % a prefill estimate means nothing (and 1e-300 overflowed, issue 23)
DEFAULT_BLOCK_TOKENS = 16  # vLLM's default KV block size
DEFAULT_CODEC_BYTES_PER_S = 1.0e12  # quantize or dequantize, bytes of uncompressed KV per s

DEFAULT_TP = 8  # Llama-3.1-70B in BF16 fits one HGX H100 node at TP 8 (not on one GPU)
MAX_BATCH = 4096  # the app's batch range (the model itself takes any batch)
MAX_TP = 64
# Expert parallelism: the app offers up to 320 GPUs per expert-parallel group (DeepSeek's
# decode runs on 144-320 GPUs); the model takes up to MAX_EP_LIMIT.
MAX_EP = 320
MAX_EP_LIMIT = 65_536
# data/frameworks.csv: the serving engine's own costs; "none": the source article's arithmetic
FRAMEWORKS = ("vllm", "sglang", "trtllm", "none")
DEFAULT_FRAMEWORK = "vllm"
CUSTOM_LINK = "custom"
IMPORTED_PREFIX = "cfg-"  # ids of imported models, carried in a link by their fields

KINDS = ("int", "float", "choice", "id", "flag", "text", "ids", "path")


@dataclass(frozen=True)
class Input:
    """One input.  Numbers in display units (``unit``); ``value × scale`` is SI."""

    name: str  # URL key and session-state key; for CLI-only inputs the CLI's dest
    label: str  # what a person reads: widget label, docs table, messages
    kind: str  # one of KINDS
    default: object
    unit: str = ""
    scale: float = 1.0
    lo: float | None = None
    hi: float | None = None
    limit: tuple[float | None, float | None] | None = None
    lo_open: bool = False  # the limit's lower end is excluded (e.g. > 0)
    hi_open: bool = False  # the limit's upper end is excluded (e.g. < 100 %)
    field: str | None = None  # the Scenario attribute this sets (SI)
    url: bool = True  # carried in the app's link
    cli: str | None = None  # the CLI flag
    cli_scale: float = 1.0  # CLI value × cli_scale = display value (e.g. a 0-1 CLI fraction → %)
    cli_default: object = "same"  # "same": the default; None: absent = the model decides
    choices: tuple | Callable[[], tuple] | None = None
    help: str = ""
    page: str = ""  # "" for the scenario (sidebar); else the page that reads it
    accepted: str = ""  # the docs table's "accepted" column when the range does not say it
    # --- behaviour, applied by one function each (never an ``if name == ...`` elsewhere) ---
    divide_by: float | None = None  # SI = value ÷ divide_by (sets ``scale``); else value × scale
    est: bool = False  # also takes `est`: the model estimates it (None in the Scenario)
    est_flag: str | None = None  # with est: the Scenario field stays, this flag says "estimate"
    given: float | None = None  # with est: the value a "Given" box starts from
    max_from: str | None = None  # a ModelSpec attribute that caps ``hi`` (seq: the context)
    only_with: tuple[str, str] | None = None  # (input, fnmatch pattern): in the app, only then
    default_from: Callable | None = None  # model → default (None: the row's own default)
    default_doc: str = ""  # the docs table's default when it comes from the model or another input
    follows: str | None = None  # absent from the link: the value of that input (tpd: tp)
    auto_at: int | None = None  # this display value means None ("the model decides")
    wlabel: str = ""  # the widget's label when it is not ``label_unit``
    whelp: str | None = None  # the widget's help (None: ``help`` without backticks; "": none)
    wstep: float | None = None  # the widget's step
    wfmt: str | None = None  # the widget's number format
    wrange: tuple[float, float] | None = None  # the widget's range when not ``lo``–``hi``
    catalog: str | None = None  # an id of this catalog (``catalog.get_<it>``); the field its spec

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.divide_by is not None:
            object.__setattr__(self, "scale", 1 / self.divide_by)

    # --- units ---
    def to_si(self, value: float) -> float:
        """A display-unit number in SI (``divide_by`` where the model always divided, so every
        number stays bit-identical with the code it replaced)."""
        v = float(value)
        return v / self.divide_by if self.divide_by is not None else v * self.scale

    def from_si(self, si: float) -> float:
        return float(si / self.scale)

    # --- what the row depends on ---
    def hi_for(self, model) -> float | None:
        """The app's upper end for ``model`` (``max_from`` caps it, e.g. the model's context)."""
        return getattr(model, self.max_from) if self.max_from else self.hi

    def capped(self, value, model):
        """``value`` within ``lo`` and the model's cap (the sidebar's clamp)."""
        return min(max(int(value), int(self.lo)), int(self.hi_for(model)))

    def check_model(self, value, model) -> None:
        """Raise ValueError when ``value`` exceeds the model's cap (``Scenario`` validation)."""
        if self.max_from and value > getattr(model, self.max_from):
            cap = getattr(model, self.max_from)
            raise ValueError(
                f"{self.field} must be <= {MODEL_CAPS[self.max_from]} of {cap:,} {self.unit}, "
                f"got {value:,}"
            )

    def applies(self, values: dict) -> bool:
        """In the app, whether this input counts with ``values`` (``only_with``)."""
        if self.only_with is None:
            return True
        key, pattern = self.only_with
        return fnmatchcase(str(values.get(key, "")), pattern)

    def default_for(self, model, values: dict | None = None):
        """The default with ``model`` (``default_from``) and the other values (``follows``)."""
        if self.follows is not None and values is not None and self.follows in values:
            return values[self.follows]
        got = self.default_from(model) if self.default_from and model is not None else None
        return self.default if got is None else got

    def missing(self):
        """What a value absent from a Python or CLI caller's values means: the default, or
        None ("the model decides") for rows whose CLI flag has no default."""
        return None if self.cli_default is None else self.default

    @property
    def widget_label(self) -> str:
        return self.wlabel or self.label_unit

    @property
    def widget_help(self) -> str | None:
        if self.whelp is None:
            return self.help.replace("`", "")
        return self.whelp or None

    @property
    def bounds(self) -> tuple[float | None, float | None]:
        """The model's limit in display units (the app's range when none is given)."""
        return self.limit if self.limit is not None else (self.lo, self.hi)

    def allowed(self) -> tuple:
        """The accepted values of a choice or id input."""
        c = self.choices() if callable(self.choices) else self.choices
        return tuple(c or ())

    @property
    def label_unit(self) -> str:
        return f"{self.label} [{self.unit}]" if self.unit else self.label

    def range_text(self, *, model: bool = False, scale: float = 1.0) -> str:
        """'1 – 4,096' (the app's range) or the model's limit, in display units ÷ ``scale``."""
        lo, hi = self.bounds if model else (self.lo, self.hi)
        lo_txt = "" if lo is None else number_text(lo / scale)
        lo_open, hi_open = (self.lo_open, self.hi_open) if model else (False, False)
        if hi is None:
            return f"> {lo_txt}" if lo_open else f"≥ {lo_txt}"
        hi_txt = f"{'<' if hi_open else '≤'} {number_text(hi / scale)}"
        if lo is None:
            return hi_txt
        if lo_open or hi_open:
            return f"{'>' if lo_open else '≥'} {lo_txt} and {hi_txt}"
        return f"{lo_txt} – {number_text(hi / scale)}"

    def typed(self, value):
        """``value`` as the row's type: ``int`` for whole-number and flag rows, else ``float``
        (a widget refuses a mix of the two: Streamlit's MixedNumericTypesError)."""
        return int(value) if self.kind in ("int", "flag") else float(value)

    def check(self, value: float, *, what: str | None = None, scale: float = 1.0) -> None:
        """Raise ValueError unless ``value`` (display units ÷ ``scale``) is within the limit;
        a 400-digit integer or a subnormal gets a message too, never an OverflowError."""
        name, (lo, hi) = what or self.name, self.bounds

        def fail(why: str = ""):
            got = shown_number(value)
            raise ValueError(f"{name} must be {self._range(scale)}, got {got}{why}")

        if isinstance(value, bool) or not isinstance(value, Real):
            raise ValueError(f"{name} must be a finite number, got {shown_number(value)}")
        try:
            v = float(value) * scale
        except OverflowError:  # an integer beyond a float: far outside every range
            v = math.inf if value > 0 else -math.inf
        if not math.isfinite(v) and not isinstance(value, int):
            raise ValueError(f"{name} must be a finite number, got {shown_number(value)}")
        if (v == math.inf and hi is None) or (v == -math.inf and lo is None):
            fail(", too large to compute with")
        tiny = sys.float_info.min  # below it a float is subnormal: 1/v overflows
        if v != 0 and (abs(v) < tiny or (isinstance(value, float) and abs(value) < tiny)):
            fail(", a number too close to 0 to compute with")
        if self.kind == "int" and math.isfinite(v) and v != int(v):
            raise ValueError(f"{name} must be a whole number, got {shown_number(value)}")
        low = lo is not None and (v <= lo if self.lo_open else v < lo)
        if low or (hi is not None and (v >= hi if self.hi_open else v > hi)):
            fail()

    def _range(self, scale: float) -> str:
        unit = f" {self.unit}" if self.unit and scale == 1 else ""
        return self.range_text(model=True, scale=scale) + unit

    def check_si(self, value_si: float) -> None:
        """``Scenario`` validation: the SI value against the limit, named by its field."""
        self.check(value_si, what=self.field, scale=1 / self.scale)


def shown_number(value) -> str:
    """A number as a message quotes it: a huge integer by its digit count, not its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**15:
        return f"a {'negative ' if value < 0 else ''}{len(str(abs(value)))}-digit number"
    return repr(value)


MODEL_CAPS = {"max_context_tokens": "the model's max context"}  # max_from, in words


def attention_default(model) -> str:
    """How the model is usually served: MLA models (DeepSeek) with data-parallel attention."""
    return "dp" if model.attention == "mla" else "tp"


def _native_kv_dtype(model) -> str | None:
    return model.kv_dtype_native


def _model_ids() -> tuple:
    from . import catalog

    return tuple(catalog.model_ids())


def _link_ids() -> tuple:
    from . import catalog

    return tuple(dict.fromkeys(lk.id for lk in catalog.links().values()))


def _gpu_ids() -> tuple:
    from . import catalog

    return tuple(catalog.gpus())


def _stack_ids() -> tuple:
    from . import catalog

    return tuple(catalog.stacks())


def _samples() -> tuple:
    from .samples import SAMPLES  # the table alone: kvmodel.traffic imports this module

    return tuple(SAMPLES)


_MEASUREMENTS_DIR = Path(__file__).resolve().parents[1] / "data" / "measurements"
_MEASUREMENTS_SEEN: dict = {}  # the folder's mtime -> its names (a file added or removed moves it)


def _measurements() -> tuple:  # the shipped sample measurements (data/measurements)
    """Their names, listed again only when the folder changed: a link's parse asks for them
    (~0.2 ms a listing, up to 5 parses a rerun; bench/README.md, Session 11)."""
    try:
        stamp = _MEASUREMENTS_DIR.stat().st_mtime_ns
    except OSError:
        stamp = None
    names = _MEASUREMENTS_SEEN.get(stamp) if stamp is not None else None
    if names is None:
        names = tuple(sorted(p.name for p in _MEASUREMENTS_DIR.glob("*")
                             if p.suffix in MEASUREMENT_SUFFIXES))  # fmt: skip
        if stamp is not None:
            _MEASUREMENTS_SEEN.clear()
            _MEASUREMENTS_SEEN[stamp] = names
    return names


MEASUREMENT_SUFFIXES = (".prom", ".txt", ".json", ".csv")
READ_MEASUREMENT_AS = ("auto", "prometheus", "perftest", "nsys", "pairs")
ATTENTION_PARALLEL = ("tp", "dp")
WINDOW_TRANSFER = ("window", "full")
DEFAULT_STACK = "mooncake"  # the best-supported measured stack (docs/model.md, Fidelity)
# What a link made before transfer stacks existed (scenario keys, no ``stack``) meant by the
# parameters it left out: version 1's defaults.
V1_DEFAULTS = {"stack": "ideal", "attn": "tp", "step": DEFAULT_DECODE_STEP_MS, "tp": 1,
               "tpd": 1, "fw": "none",
               "cmp": "comp:int8;link:ib-ndr;link:nvlink4"}  # fmt: skip
# Scenario keys no version-1 link had: a link holding one is never read as version 1.
AFTER_V1_KEYS = ("fw", "ep", "epd")
CRITERIA = ("step", "share")  # transfer-bound: transfer ≥ k × step, or TTFT share > target

INPUTS: tuple[Input, ...] = (
    # --- the scenario (sidebar on every page; CLI scenario options) ---
    Input("model", "Model", "id", "llama-3.1-70b", choices=_model_ids, cli="--model",
          accepted="ids of `python -m kvmodel models`; aliases resolve to the id",
          help="catalog id or alias (`python -m kvmodel models`), or an imported `cfg-…` id",
          whelp=""),
    Input("seq", "Sequence length", "int", 1024, unit="tokens", lo=1, hi=None, field="seq_len",
          cli="--seq-len", help="prompt tokens per request; at most the model's max context",
          max_from="max_context_tokens", accepted="1 – the model's max context, whole",
          whelp="Prompt tokens per request (log-spaced steps; type an exact value below)."),
    Input("batch", "Batch", "int", 1, unit="requests", lo=1, hi=MAX_BATCH, limit=(1, None),
          field="batch", cli="--batch", help="requests prefilled and sent together", wstep=1,
          whelp=""),
    Input("link", "Interconnect", "id", "100gbe", choices=lambda: (*_link_ids(), CUSTOM_LINK),
          cli="--link", accepted="ids of `python -m kvmodel links`, or `custom`",
          help="interconnect id (`python -m kvmodel links`), or `custom`", whelp=""),
    Input("bw", "Custom bandwidth", "float", 12.5, unit="GB/s per direction", scale=1e9,
          lo=0.001, hi=100_000, limit=(1e-6, 1_000_000), cli="--bandwidth-gbs",
          cli_default=None,
          help="overrides the link's bandwidth (the app: only with `link=custom`)",
          only_with=("link", CUSTOM_LINK), wlabel="Bandwidth [GB/s per direction]", whelp=""),
    Input("lat", "Custom latency", "float", 5.0, unit="µs", scale=1e-6, lo=0, hi=1_000_000,
          cli="--latency-us", cli_default=None,
          help="per-transfer latency (default: the link's; the app: only with `link=custom`)",
          only_with=("link", CUSTOM_LINK), wlabel="Latency [µs]", whelp=""),
    Input("eff", "Link efficiency", "float", 100.0, unit="%", scale=0.01, lo=1, hi=100,
          limit=(0.01, 100), field="efficiency", cli="--efficiency", cli_scale=100,
          help="achieved ÷ nominal bandwidth (the CLI takes a fraction, 0–1)", wstep=1.0,
          wfmt="%.0f %%", whelp="Achieved ÷ nominal bandwidth. 100 % reproduces datasheet "
          "arithmetic."),
    Input("par", "Parallel links", "int", 0, unit="links", lo=0, hi=1024, limit=(0, None),
          field="parallel_links", cli="--links-parallel", cli_default=None,
          help="links used at once; 0 = the NICs (or per-GPU scale-up links) both instances have",
          auto_at=0, wlabel="Parallel links (0 = the NICs both instances have)", wstep=1),
    Input("kvd", "KV cache dtype", "choice", "fp16", choices=tuple(sorted(KV_DTYPE_BITS)),
          field="kv_dtype", cli="--kv-dtype", cli_default=None,
          help="KV storage dtype (default: the checkpoint's, e.g. `fp8`, else `fp16`)",
          default_from=_native_kv_dtype, whelp=""),
    Input("comp", "Transfer compression", "choice", "none", choices=tuple(COMPRESSION_BITS),
          field="compression", cli="--compression",
          help="quantize the KV for the trip only (scales included, codec time counted)",
          whelp="Quantize the KV only for the trip (scales included, quantize + dequantize time "
          "counted)."),
    Input("lw", "Send layer by layer", "flag", 0, unit="0/1", lo=0, hi=1, field="layerwise",
          cli="--layerwise", help="each layer's KV leaves as soon as prefill has computed it",
          wlabel="Send layer by layer",
          whelp="Each layer's KV leaves as soon as prefill has computed it."),
    Input("codec", "Quantize/dequantize throughput", "float", DEFAULT_CODEC_BYTES_PER_S / 1e9,
          unit="GB/s", scale=1e9, lo=1, hi=100_000, limit=(0, None), lo_open=True,
          field="codec_bytes_per_s", cli="--codec-gbs",
          help="uncompressed KV bytes one GPU quantizes (or dequantizes) per second", wstep=100.0,
          whelp="Uncompressed KV bytes one GPU quantizes (or dequantizes) per second."),
    Input("tp", "Prefill TP", "int", DEFAULT_TP, unit="GPUs", lo=1, hi=MAX_TP, limit=(1, None),
          field="tp_prefill", cli="--tp",
          help="prefill tensor parallelism: a divisor or multiple of every KV-head count",
          wlabel="Prefill TP", whelp=""),
    Input("tpd", "Decode TP", "int", DEFAULT_TP, unit="GPUs", lo=1, hi=MAX_TP, limit=(1, None),
          field="tp_decode", cli="--tp-decode", cli_default=None,
          help="decode tensor parallelism (default: the prefill TP)", follows="tp",
          default_doc="`tp`", wlabel="Decode TP", whelp=""),
    Input("step", "Decode step", "float", "est", unit="ms", divide_by=1e3, est=True,
          est_flag="decode_step_estimated", given=DEFAULT_DECODE_STEP_MS, wlabel="Decode step",
          wstep=1.0,
          lo=0.1, hi=10_000, limit=(0, 3_600_000), lo_open=True, hi_open=True,
          field="decode_step_s", cli="--decode-step-ms",
          help="time of one decode step, or `est` to estimate it for the model, GPU, decode "
          "TP, batch and prompt length (the article assumed 30 ms)"),
    Input("prefill", "Prefill", "float", "est", unit="ms", divide_by=1e3, est=True, given=200.0,
          wlabel="Prefill time", whelp="", wstep=10.0, lo=0, hi=3_600_000,
          limit=(0, 86_400_000), hi_open=True, field="prefill_s", cli="--prefill-ms",
          cli_default=None,
          help="prefill time, or `est` to estimate it from the GPU"),
    Input("gpu", "GPU", "id", "h100-sxm", choices=_gpu_ids, cli="--gpu", field="gpu", catalog="gpu",
          accepted="ids of `python -m kvmodel gpus`",
          help="GPU for the prefill estimate and the decode roofline", wlabel="GPU (for estimates)",
          whelp=""),
    Input("k", "Critical at k × step", "float", DEFAULT_K, lo=0.05, hi=1000,
          limit=(0, 1_000_000), lo_open=True, hi_open=True, field="k", cli="--k",
          help="critical length: the transfer takes k decode steps", wstep=0.5, whelp=""),
    Input("share", "TTFT share target", "float", DEFAULT_SHARE_TARGET * 100, unit="%", scale=0.01,
          lo=1, hi=99, limit=(0, 100), lo_open=True, hi_open=True, field="share_target",
          cli="--share-target",
          cli_scale=100, help="the transfer's share of TTFT drawn as the line to stay under "
          "(the CLI takes a fraction, 0–1)", wstep=1.0, whelp=""),
    Input("cfg", "Imported model", "text", "", unit="base64url JSON",
          help="an imported model's fields (when the model is not in the catalog); "
          "≤ 4,000 characters, validated", accepted="≤ 4,000 characters",
          only_with=("model", IMPORTED_PREFIX + "*")),
    Input("stack", "Transfer stack", "id", DEFAULT_STACK, choices=_stack_ids, cli="--stack",
          field="stack", catalog="stack",
          accepted="ids of `python -m kvmodel stacks`",
          help="the connector's measured costs: per request, per chunk, and bandwidth by "
          "message size; `ideal` is wire speed (the source article)"),
    Input("attn", "Attention parallelism", "choice", None, choices=ATTENTION_PARALLEL,
          field="attention_parallel", cli="--attention-parallel",
          help="`tp`: every decode rank holds its share of each request's KV (replicated when "
          "TP exceeds the KV heads); `dp`: each request's KV lives on one decode rank. Default: "
          "`dp` for MLA models (as DeepSeek is served), else `tp`",
          default_from=attention_default, default_doc="`dp` for MLA, else `tp`"),
    Input("fw", "Serving framework", "choice", DEFAULT_FRAMEWORK, choices=FRAMEWORKS,
          field="framework", cli="--framework",
          help="the engine's own costs beyond the GPU work (data/frameworks.csv): per request "
          "(scheduling, proxy, tokenizer), per decode step, CUDA-graph batch padding, and "
          "which prefills replay CUDA graphs (vLLM: a pass of at most 512 tokens); `none`: "
          "no such cost (the source article)"),
    Input("ep", "Prefill EP", "int", 1, unit="GPUs", lo=1, hi=MAX_EP, limit=(1, MAX_EP_LIMIT),
          field="ep_prefill", cli="--ep",
          help="prefill expert parallelism (MoE models; 1 = off): the experts are sharded over "
          "this many GPUs, attention runs data-parallel on EP ÷ TP groups of TP GPUs"),
    Input("epd", "Decode EP", "int", 1, unit="GPUs", lo=1, hi=MAX_EP, limit=(1, MAX_EP_LIMIT),
          field="ep_decode", cli="--ep-decode",
          help="decode expert parallelism (MoE models; 1 = off), as `ep` for the decode "
          "instance; its batch is spread over EP ÷ decode-TP attention groups"),
    Input("win", "Sliding layers on the wire", "choice", "window", choices=WINDOW_TRANSFER,
          field="window_transfer", cli="--window-transfer",
          help="`window`: sliding-window layers send their window; `full`: they send every "
          "token (connectors without hybrid-allocator support)"),
    Input("gpud", "Decode GPU", "id", "", choices=lambda: ("", *_gpu_ids()), cli="--gpu-decode",
          cli_default=None, accepted="ids of `python -m kvmodel gpus`, or empty: the GPU",
          help="the decode instances' GPU when it is not the prefill GPU (`gpu`): its decode "
          "step, memory and NICs; the transfer runs between the two GPUs' NICs",
          field="gpu_decode", catalog="gpu"),
    # --- CLI-only model inputs (the app's link has no field for them) ---
    Input("kv_scale_group", "KV scale group", "int", 0, unit="values", lo=0, hi=None,
          field="kv_scale_group", url=False, cli="--kv-scale-group",
          help="values per FP16 scale of a quantized KV cache (0: none)"),
    Input("comp_group", "Compression group", "int", DEFAULT_COMPRESSION_GROUP, unit="values",
          lo=0, hi=None, field="comp_group", url=False, cli="--comp-group",
          help="values per scale, int8/int4 transfer compression (0: no scales)"),
    Input("mfu", "Prefill MFU", "float", DEFAULT_MFU, lo=MIN_MFU, hi=1, field="mfu", url=False,
          cli="--mfu", help="model-FLOP utilisation of the prefill estimate"),
    Input("block_tokens", "KV block", "int", DEFAULT_BLOCK_TOKENS, unit="tokens", lo=1, hi=None,
          field="block_tokens", url=False, cli="--block-tokens",
          help="tokens per KV block (the unit of the transfer descriptors)"),
    Input("descriptor_us", "Descriptor cost", "float", 0.0, unit="µs", scale=1e-6, lo=0,
          hi=1_000_000, hi_open=True, field="descriptor_s", url=False, cli="--descriptor-us",
          help="cost per transfer descriptor (0: off)"),
    # --- page inputs (in the link too) ---
    Input("links", "Interconnects compared", "ids", "nvlink4,ib-ndr,ib-hdr,100gbe",
          choices=_link_ids, cli="--links",
          page="Interconnects, Sequence length, Traffic, Capacity",
          accepted="link ids",
          help="link ids, comma-separated (CLI: `table`)"),
    Input("batches", "Batches compared", "ids", "1,8,32", unit="requests", lo=1, hi=MAX_BATCH,
          cli="--batches", page="Interconnects", accepted="whole numbers 1 – 4,096",
          help="whole numbers, comma-separated (CLI: `table`)"),
    Input("band", "Decode-step band", "text", "20-50", unit="ms", page="Interconnects",
          wrange=(1.0, 200.0), wstep=1.0, wfmt="%.0f ms",
          whelp="A decode step of Llama-3-70B on 8×A100 takes roughly 20–50 ms.",
          accepted="`LOW-HIGH`, 0 < LOW < HIGH ≤ 100,000",
          help="the band of typical decode steps drawn behind the bars"),
    Input("tl", "Timeline option", "int", 4, lo=0, hi=7, page="Mitigations",
          help="row of the option drawn on the timeline (4: layer-wise)"),
    Input("trace", "Traffic sample", "choice", "azure-conv", choices=_samples, page="Traffic",
          help="the shipped traffic sample shown"),
    Input("minlen", "Too short below", "int", DEFAULT_MIN_SEQ_LEN, unit="tokens", lo=0,
          hi=10_000_000, cli="--min-seq-len", page="Traffic",
          help="prompts shorter than this gain nothing from disaggregation", wstep=32,
          whelp="Prompts this short prefill fast enough locally."),
    Input("crit", "Transfer-bound criterion", "choice", "step", choices=CRITERIA,
          cli="--criterion", page="Traffic",
          help="`step`: transfer ≥ k × decode step; `share`: transfer share of TTFT > `share`"),
    Input("hit", "Prefix-cache hit ratio", "float", 0.0, unit="%", scale=0.01, lo=0, hi=95,
          limit=(0, 100), hi_open=True, cli="--hit-ratio", cli_scale=100, cli_default=None,
          page="Traffic",
          help="0 = the trace's own cached tokens where it has them (the CLI takes a fraction)",
          wstep=5.0, wfmt="%.0f %%", whelp="Share of every prompt already on the decode side. "
          "0 % uses the trace's own cached tokens where it has them (Mooncake)."),
    Input("rps", "Arrival rate", "float", 0.0, unit="requests/s", lo=0, hi=1_000_000,
          cli="--rps", cli_default=None, page="Traffic, Capacity",
          help="0 = from the trace's timestamps", wlabel="Request rate [requests/s]", wstep=1.0),
    Input("cmp", "Compared scenarios", "text", "auto",
          page="Compare", help="each `key:value~key:value` over the scenario keys, scenarios "
          "split by `;`, at most 3; `auto`: made from the sidebar's scenario, each differing "
          "from it (INT8 compression, the next faster link, layer-wise, the `ideal` stack)",
          accepted="keys {keys}; `auto`, or pairs validated like the keys themselves"),
    Input("present", "Presentation mode", "flag", 0, unit="0/1", lo=0, hi=1, page="every page",
          help="large type, no sidebar"),
    Input("models", "Models compared", "ids",
          "llama-2-7b,llama-3.1-70b,deepseek-v3,mistral-7b,gemma-3-27b,qwen3.5-27b",
          choices=_model_ids, page="Sequence length", accepted="catalog model ids",
          help="catalog model ids, comma-separated"),
    Input("meas", "Sample measurement", "choice", "vllm_pd_metrics.prom", choices=_measurements,
          page="Measured", accepted="file names in `data/measurements/`",
          help="the shipped sample shown (uploads stay in the session)"),
    Input("mread", "Read the measurement as", "choice", "auto", choices=READ_MEASUREMENT_AS,
          page="Measured", help="`auto` detects the format from the content"),
    Input("out", "Output length", "int", 256, unit="tokens", lo=1, hi=1_000_000, limit=(1, None),
          cli="--output-len", page="Capacity", help="per request, when the traffic has none",
          wlabel="Output tokens per request", wstep=64),
    Input("ttft_slo", "TTFT target", "float", 2000.0, unit="ms", scale=1e-3, lo=10, hi=600_000,
          limit=(0, None), lo_open=True, cli="--ttft-slo-ms", page="Capacity",
          help="time to first token at the percentile below, queueing included", wstep=100.0,
          wfmt="%g",
          whelp=""),
    Input("ttft_pct", "TTFT percentile", "float", 90.0, unit="percentile", lo=50, hi=99.9,
          limit=(0, 100), lo_open=True, hi_open=True, cli="--ttft-percentile", page="Capacity",
          help="the share of requests that must meet the TTFT target", wlabel="TTFT percentile",
          wstep=1.0, wfmt="%g", whelp="The share of requests that must meet the TTFT target"),
    Input("tpot_slo", "TPOT target", "float", 50.0, unit="ms", scale=1e-3, lo=1, hi=10_000,
          limit=(0, None), lo_open=True, cli="--tpot-slo-ms", page="Capacity",
          help="time per output token, one decode step (50 ms: 20 tokens/s)", wstep=5.0,
          wfmt="%g",
          whelp="Time per output token, one decode step"),
    Input("price", "GPU price", "float", 0.0, unit="$/GPU-hour", lo=0, hi=1_000, cli="--gpu-price",
          page="Capacity", help="0 = no cost shown", wlabel="Price [$/GPU-hour]", wstep=0.5),
    Input("replay", "Replay the trace", "flag", 0, unit="0/1", lo=0, hi=1, url=False,
          cli="--replay", page="Capacity",
          help="run the planned deployment over the trace's own arrivals (Poisson arrivals "
          "from a fixed seed when it has no timestamps) and report what it measures"),
    Input("size", "Size the pools by", "choice", "analytic", choices=("analytic", "replay"),
          cli="--size-by", page="Capacity",
          help="`analytic`: the queueing formulas; `replay`: grow the pools until the replay "
          "meets the targets (implies `--replay`)"),
    Input("rn", "Replayed requests", "int", 20_000, unit="requests", lo=100, hi=1_000_000,
          limit=(1, 10_000_000), cli="--replay-requests", page="Capacity",
          help="requests drawn (Poisson, fixed seed) when the traffic has no timestamps; a "
          "trace replays all of its own", wlabel="Requests (no timestamps)", wstep=1000),
    Input("priced", "Decode GPU price", "float", 0.0, unit="$/GPU-hour", lo=0, hi=1_000,
          cli="--gpu-price-decode", page="Capacity",
          help="the decode GPUs' price when it differs from `price` (0 = the same)",
          wlabel="Decode GPU price [$/GPU-hour]", wstep=0.5),
    Input("trace_file", "Traffic file", "path", "", url=False, cli="--trace", cli_default=None,
          page="Capacity", help="trace file, directory or glob, or a sample id (else `--rps`)"),
    Input("wl", "Capacity traffic", "choice", "trace", choices=("trace", "fixed"),
          page="Capacity", help="`trace`: the Traffic page's sample or upload; `fixed`: every "
          "request `seq` prompt and `out` output tokens at `rps` (CLI: `--trace` or `--rps`)"),
    Input("ctp", "Capacity TP", "choice", "auto", choices=("auto", "sidebar"), page="Capacity",
          help="`auto`: search the TPs that hold the weights; `sidebar`: `tp` and `tpd` "
          "(CLI: `--tp auto` or a number)"),
)  # fmt: skip

BY_NAME = {i.name: i for i in INPUTS}
URL_INPUTS = tuple(i for i in INPUTS if i.url)
SCENARIO_KEYS = tuple(i.name for i in INPUTS if i.url and not i.page and i.name != "cfg")
BY_FIELD = {i.field: i for i in INPUTS if i.field}


def si_default(name: str):
    """``Scenario``'s default for a row's field: version 1's value (``V1_DEFAULTS``) where it
    has one, else the row's default, in SI (``Scenario()`` keeps version 1's meaning)."""
    row = BY_NAME[name]
    d = V1_DEFAULTS.get(name, row.default)
    if row.kind == "flag":
        return bool(d)
    return row.to_si(d) if row.kind == "float" else d


def get(name: str) -> Input:
    return BY_NAME[name]


def default(name: str):
    return BY_NAME[name].default


_ACCEPTED: set = set()  # (field, type, value) that passed check_scenario_field: a plan's
_ACCEPTED_MAX = 4096  # ~170 Scenarios repeat the same few values (the limits never change)


def check_scenario_field(field: str, value) -> None:
    """Validate one SI ``Scenario`` field against its input's limit (no-op for other fields)."""
    row = BY_FIELD.get(field)
    if row is None or row.kind not in ("int", "float") or value is None:
        return
    key = (field, type(value), value)
    try:
        if key in _ACCEPTED:
            return
    except TypeError:  # an unhashable value: checked every time
        key = None
    if row.kind == "int" and (isinstance(value, bool) or not float(value).is_integer()):
        raise ValueError(f"{field} must be a whole number, got {value!r}")
    if row.auto_at is not None and value == row.auto_at:  # par: None, not 0, means automatic
        raise ValueError(f"{field} must be a whole number >= 1 or None, got {value!r}")
    row.check_si(value)
    if key is not None and value == value:  # NaN never equals itself: not kept
        if len(_ACCEPTED) >= _ACCEPTED_MAX:
            _ACCEPTED.clear()
        _ACCEPTED.add(key)


@cache
def markdown_table() -> str:
    """docs/links.md's table of the app's link parameters, made from the rows (``inputs_table``)."""
    return _table(INPUTS, SCENARIO_KEYS)


def applicable(values: dict) -> dict:
    """``values`` without the inputs that do not count in the app (``only_with``: a custom
    link's bandwidth and latency with a catalog link)."""
    return {k: v for k, v in values.items() if k not in BY_NAME or BY_NAME[k].applies(values)}


EST_WORDS = ("", "est", "estimate", "estimated")  # what a link may say for an estimate
