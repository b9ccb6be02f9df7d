"""docs/yaml-reference.md's table of sane ranges is the one in ``prfaas_plan/ranges.py``, and the ranges
themselves check what they say."""

from __future__ import annotations

import math

import pytest
from conftest import REPO

from prfaas_plan.errors import PlanInputError
from prfaas_plan.ranges import INSTANCES, RATE_RPS, TOKENS, markdown_table


def test_docs_document_every_range():
    text = (REPO / "docs" / "yaml-reference.md").read_text()
    block = text.split("<!-- ranges:start -->\n", 1)[1].split("\n<!-- ranges:end -->", 1)[0]
    assert block == markdown_table()


@pytest.mark.parametrize("value", [-1, 10_001, 10**400, math.nan, math.inf, True, "3"])
def test_a_range_refuses_what_is_outside(value):
    with pytest.raises(PlanInputError) as info:
        INSTANCES.check(value, "pd.instances")
    assert info.value.field == "pd.instances" and len(info.value.one_line()) < 300


def test_bounds_are_inclusive_unless_open():
    assert INSTANCES.check(0, "x") == 0 and INSTANCES.check(10_000, "x") == 10_000
    assert TOKENS.check(16 * 1024 * 1024, "x") == 16 * 1024**2
    with pytest.raises(PlanInputError):
        RATE_RPS.check(0.0, "--rate")  # (0, 1e6]
    assert RATE_RPS.describe() == "(0, 1,000,000] requests/s"
