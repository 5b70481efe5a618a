"""Storage dtypes of the KV cache and transfer-only compression formats.

A quantized format may carry one scale per group of ``group`` values; the scale costs
``SCALE_BYTES`` (an FP16 number), so the bytes per value are ``bits / 8 + SCALE_BYTES / group``.
"""

from __future__ import annotations

KV_DTYPE_BITS = {"fp32": 32, "bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4}
COMPRESSION_BITS = {"none": None, "int8": 8, "fp8": 8, "int4": 4}
SCALE_BYTES = 2  # one FP16 scale per group
# Formats that need a scale to be usable; fp8 (e4m3) and the float formats do not by default.
_SCALED = {"int8", "int4"}
DEFAULT_COMPRESSION_GROUP = 128  # values per scale for int8/int4 transfer compression


def _check_group(group: int, name: str) -> None:
    if isinstance(group, bool) or not isinstance(group, int) or group < 0:
        raise ValueError(f"{name} must be a whole number >= 0 (0 = no scales), got {group!r}")


def kv_dtype_bytes(dtype: str, *, scale_group: int = 0) -> float:
    """Bytes per cached value in storage dtype ``dtype`` [bytes].

    ``scale_group`` > 0 adds one FP16 scale per that many values (e.g. int4 with group 64 costs
    0.5 + 2/64 = 0.53125 bytes per value).  0 means no scale overhead.
    """
    if dtype not in KV_DTYPE_BITS:
        raise ValueError(f"kv_dtype must be one of {sorted(KV_DTYPE_BITS)}, got {dtype!r}")
    _check_group(scale_group, "kv_scale_group")
    extra = SCALE_BYTES / scale_group if scale_group else 0.0
    return KV_DTYPE_BITS[dtype] / 8 + extra


def compressed_bytes_per_value(
    compression: str, *, storage_bytes: float, group: int = DEFAULT_COMPRESSION_GROUP
) -> float:
    """Bytes per value on the wire after transfer-only compression [bytes].

    Never more than the storage bytes: an FP8-stored cache gains nothing from FP8 (or INT8)
    transfer compression, and then no quantize/dequantize happens either.
    """
    if compression not in COMPRESSION_BITS:
        raise ValueError(
            f"compression must be one of {list(COMPRESSION_BITS)}, got {compression!r}"
        )
    _check_group(group, "comp_group")
    bits = COMPRESSION_BITS[compression]
    if bits is None:
        return storage_bytes
    scale = SCALE_BYTES / group if (group and compression in _SCALED) else 0.0
    return min(storage_bytes, bits / 8 + scale)


def compression_ratio(
    compression: str, *, kv_dtype: str = "fp16", group: int = DEFAULT_COMPRESSION_GROUP
) -> float:
    """Wire bytes ÷ stored bytes for a compression applied to a ``kv_dtype`` cache."""
    storage = kv_dtype_bytes(kv_dtype)
    return compressed_bytes_per_value(compression, storage_bytes=storage, group=group) / storage
