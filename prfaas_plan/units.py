"""Units and conversions.

Conventions (used everywhere in prfaas-plan):
- token counts: ``K`` = 1024 tokens (``32K`` = 32,768), as in LLM context lengths;
- bytes: ``MiB`` = 2**20 B, ``GiB`` = 2**30 B (binary); ``GB`` = 1e9 B (datasheets);
- link rates: ``Gbps`` = 1e9 bit/s (decimal gigabits per second);
- FLOP rates: ``TFLOPS`` = 1e12 FLOP/s; memory bandwidth ``TB/s`` = 1e12 B/s.
"""

from __future__ import annotations

import math
import re

from .choices import Dtype
from .errors import PlanInputError, show

TOKENS_PER_K = 1024
TOKENS_PER_M = 1024 * 1024
BYTES_PER_MIB = 2**20
BYTES_PER_GIB = 2**30
BYTES_PER_GB = 10**9
BITS_PER_BYTE = 8
BITS_PER_GBIT = 10**9
FLOPS_PER_TFLOPS = 10**12
BYTES_PER_TB = 10**12

# Bytes per element of the storage dtypes a profile may name.
DTYPE_BYTES: dict[Dtype, float] = {
    Dtype.fp32: 4.0,
    Dtype.bf16: 2.0,
    Dtype.fp16: 2.0,
    Dtype.fp8: 1.0,
    Dtype.int8: 1.0,
    Dtype.fp4: 0.5,
    Dtype.int4: 0.5,
}

MAX_TOKENS = 16 * TOKENS_PER_M  # the largest token count accepted anywhere (ranges.TOKENS)
_LENGTH_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmM]?)\s*$")


def parse_tokens(text: str | int, *, field: str = "length") -> int:
    """Parse a token count such as ``32K``, ``32k``, ``19.4K``, ``1M`` or ``32768``.

    K = 1024 tokens, M = 1024**2 tokens; a fraction of K or M is rounded to the nearest token,
    a plain count must be whole (``1.5`` is refused). The result is in [1, 16M] tokens
    (``ranges.TOKENS``).
    """
    if isinstance(text, bool):
        raise PlanInputError(f"{show(text)} is not a token count", field=field)
    if isinstance(text, int):
        value = text
    else:
        match = _LENGTH_RE.match(str(text)) if len(str(text)) <= 32 else None
        if match is None and len(str(text)) > 32:
            raise PlanInputError(f"{show(text)} is too long to be a token count (at most 16M)", field=field)
        if not match:
            raise PlanInputError(f"{show(text)} is not a token count (use e.g. 32K, 32k or 32768)", field=field)
        number, suffix = float(match.group(1)), match.group(2).upper()
        if not suffix and math.isfinite(number) and number != math.floor(number):
            raise PlanInputError(f"{show(text)} is not a whole number of tokens", field=field)
        scale = {"": 1, "K": TOKENS_PER_K, "M": TOKENS_PER_M}[suffix]
        scaled = number * scale
        value = int(round(scaled)) if math.isfinite(scaled) and scaled <= 2 * MAX_TOKENS else MAX_TOKENS + 1
    if value < 1:
        raise PlanInputError(f"{show(text)} is below 1 token", field=field)
    if value > MAX_TOKENS:
        raise PlanInputError(f"{show(text)} is above the limit of {MAX_TOKENS:,} tokens (16M)", field=field)
    return value


def parse_token_list(text: str, *, field: str = "lengths") -> list[int]:
    """Parse a comma-separated list of token counts (``1K,8K,32K``)."""
    if len(text) > 10_000:
        raise PlanInputError("list is too long (at most 10,000 characters)", field=field)
    items = text.split(",")
    if not text.strip():
        raise PlanInputError("no lengths given", field=field)
    if any(not item.strip() for item in items):
        raise PlanInputError(f"empty item in '{text}' (use e.g. 1K,8K,32K)", field=field)
    return [parse_tokens(item, field=field) for item in items]


def format_tokens(tokens: float) -> str:
    """Render a token count compactly: 32768 -> '32K', 19866 -> '19.4K', 1000 -> '1000'."""
    if tokens >= TOKENS_PER_K and tokens % TOKENS_PER_K == 0:
        return f"{int(tokens // TOKENS_PER_K)}K"
    if tokens >= 10 * TOKENS_PER_K:
        return f"{tokens / TOKENS_PER_K:.1f}K"
    return f"{tokens:.0f}"


def bytes_to_gbit(num_bytes: float) -> float:
    """Bytes -> decimal gigabits."""
    return num_bytes * BITS_PER_BYTE / BITS_PER_GBIT


def gbps_to_bytes_per_s(gbps: float) -> float:
    """Decimal Gbps -> bytes per second."""
    return gbps * BITS_PER_GBIT / BITS_PER_BYTE


def bytes_per_s_to_gbps(bytes_per_s: float) -> float:
    """Bytes per second -> decimal Gbps."""
    return bytes_per_s * BITS_PER_BYTE / BITS_PER_GBIT


def bytes_to_mib(num_bytes: float) -> float:
    return num_bytes / BYTES_PER_MIB


def bytes_to_gib(num_bytes: float) -> float:
    return num_bytes / BYTES_PER_GIB


def mib_to_bytes(mib: float) -> float:
    return mib * BYTES_PER_MIB


def dtype_bytes(dtype: str) -> float:
    """Bytes per element of a storage dtype (``bf16`` -> 2.0)."""
    try:
        return DTYPE_BYTES[Dtype(dtype)]
    except ValueError:
        raise PlanInputError(f"unknown dtype {show(dtype)} (known: {', '.join(DTYPE_BYTES)})") from None
