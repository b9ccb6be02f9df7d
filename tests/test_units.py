"""Unit conventions: K = 1024 tokens, Gbps decimal, MiB/GiB binary."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from prfaas_plan.errors import PlanInputError
from prfaas_plan.units import (
    bytes_per_s_to_gbps,
    bytes_to_gbit,
    bytes_to_gib,
    bytes_to_mib,
    dtype_bytes,
    format_tokens,
    gbps_to_bytes_per_s,
    mib_to_bytes,
    parse_token_list,
    parse_tokens,
)


@pytest.mark.parametrize(
    "text,tokens",
    [
        ("32K", 32768),
        ("32k", 32768),
        ("32768", 32768),
        ("128K", 131072),
        ("19.4K", 19866),
        ("1M", 1048576),
        (" 8K ", 8192),
        ("1", 1),
        ("2.0", 2),  # a whole count written with a point
        ("1.5K", 1536),
    ],
)
def test_parse_tokens(text, tokens):
    assert parse_tokens(text) == tokens


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1G", "", "1.2.3K", "nan", "1.5", "1024.25"])
def test_parse_tokens_rejects(text):
    with pytest.raises(PlanInputError):
        parse_tokens(text)


def test_a_fractional_plain_token_count_is_refused_not_rounded():
    """`kv -l 1.5` once ran at 2 tokens: a plain count must be whole (a fraction of K is rounded)."""
    with pytest.raises(PlanInputError) as err:
        parse_tokens("1.5")
    assert err.value.reason == "'1.5' is not a whole number of tokens"


def test_parse_token_list():
    assert parse_token_list("1K,8K,32K,128K") == [1024, 8192, 32768, 131072]


def test_gbps_is_decimal_and_mib_binary():
    # MiniMax-M2.5 at 32K: 253,952 B/token x 32,768 tokens = 66.6 Gbit (PRFAAS.md section 1)
    kv = 253_952 * 32_768
    assert bytes_to_gbit(kv) == pytest.approx(66.57, abs=0.01)
    assert gbps_to_bytes_per_s(100) == 12.5e9  # a 100 Gbps link moves 12.5 GB/s
    assert bytes_per_s_to_gbps(12.5e9) == 100
    assert bytes_to_mib(2**20) == 1 and mib_to_bytes(190.8) == pytest.approx(200_068_300.8)
    assert bytes_to_gib(2**30) == 1
    # Table 5, 1K row: 190.8 MiB in 0.44 s is 3.64 Gbps (the paper rounds to 3.61)
    assert bytes_per_s_to_gbps(mib_to_bytes(190.8) / 0.44) == pytest.approx(3.638, abs=1e-3)


def test_dtype_bytes():
    assert dtype_bytes("bf16") == 2 and dtype_bytes("fp32") == 4 and dtype_bytes("fp8") == 1
    assert dtype_bytes("fp4") == 0.5 and dtype_bytes("int4") == 0.5
    with pytest.raises(PlanInputError):
        dtype_bytes("fp6")


def test_format_tokens():
    assert format_tokens(32768) == "32K" and format_tokens(19866) == "19.4K" and format_tokens(1000) == "1000"


@given(st.floats(min_value=0, max_value=1e15, allow_nan=False))
def test_gbps_round_trip(rate):
    assert math.isclose(bytes_per_s_to_gbps(gbps_to_bytes_per_s(rate)), rate, rel_tol=1e-12, abs_tol=1e-12)


def test_chip_memory_is_binary_gib():
    """A profile's memory_gib is 2^30 B: the "80 GB" H100 holds 80 GiB = 85.9e9 B (CUDA reports
    81,559 MiB of it), and the old decimal field is refused with advice."""
    from prfaas_plan import api
    from prfaas_plan.errors import PlanInputError
    from prfaas_plan.profiles.hardware import HardwareProfile

    h100 = api.hardware_of("h100")
    assert h100.memory_gib == 80 and h100.memory_bytes == 80 * 2**30 == 85_899_345_920
    assert abs(81_559 * 2**20 / h100.memory_bytes - 1) < 0.005
    assert api.hardware_of("groq-lpu").memory_bytes == pytest.approx(220 * 2**20, rel=1e-3)  # 220 MiB of SRAM
    data = h100.model_dump(exclude={"calibration"})
    data["memory_gb"] = data.pop("memory_gib")
    with pytest.raises((PlanInputError, ValueError), match="memory_gib"):
        HardwareProfile.model_validate(data)
