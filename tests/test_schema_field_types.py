"""The field types of the profile schemas (``profiles._base``): ``Annotated[float, Within(R)]``,
``Annotated[int, Within(R)]`` and ``Annotated[list[T], Items()]`` validate as the ranges say, with
the messages of ``Range.check``, and are plain ``Annotated`` types that mypy reads."""

from __future__ import annotations

from typing import Annotated, get_args, get_type_hints

import pytest
from pydantic import Strict

from prfaas_plan.errors import PlanInputError
from prfaas_plan.profiles._base import Items, Name, StrictModel, Tokens, Within, validate_or_raise
from prfaas_plan.profiles.scenario import LinkSpec
from prfaas_plan.ranges import INSTANCES, LIST_ITEMS, RATE_RPS, TOKENS


class Probe(StrictModel):
    rate_rps: Annotated[float, Within(RATE_RPS)] = 1.0
    instances: Annotated[int, Within(INSTANCES)] = 0
    limit_rps: Annotated[float, Within(RATE_RPS)] | None = None
    names: Annotated[list[Name], Items(min_length=1)] = ["a"]
    tokens: Tokens = 1


def refusal(data: dict) -> PlanInputError:
    with pytest.raises(PlanInputError) as err:
        validate_or_raise(Probe, data, "probe.yaml")
    return err.value


@pytest.mark.parametrize("value", [0.0, 1e9, -1.0, 1e300])
def test_a_number_out_of_its_range_has_the_message_of_range_check(value):
    err = refusal({"rate_rps": value})
    assert (err.source, err.field, err.reason) == ("probe.yaml", "rate_rps", RATE_RPS.problem(value))


def test_an_optional_number_is_checked_the_same_way():
    err = refusal({"limit_rps": 1e9})
    assert (err.field, err.reason) == ("limit_rps", RATE_RPS.problem(1e9))
    assert validate_or_raise(Probe, {"limit_rps": None}, None).limit_rps is None


def test_numbers_are_strict():
    assert validate_or_raise(Probe, {"rate_rps": 2}, None).rate_rps == 2.0  # an int is a number
    assert refusal({"rate_rps": True}).reason == "must be a number, not true"
    assert refusal({"rate_rps": "2"}).reason == "must be a number (got '2')"
    assert refusal({"instances": 2.0}).reason == "must be an integer (got 2.0)"  # a float is not an integer
    assert refusal({"instances": 10_001}).reason == INSTANCES.problem(10_001)


def test_lists_have_their_bounds():
    assert refusal({"names": []}).reason == "must have at least 1 item(s)"
    many = int(LIST_ITEMS.hi) + 1
    assert refusal({"names": ["a"] * many}).reason == f"must have at most {int(LIST_ITEMS.hi)} items (got {many})"
    assert refusal({"names": ["a", ""]}).field == "names[1]"


def test_token_counts_take_suffixes_and_their_range():
    assert validate_or_raise(Probe, {"tokens": "32K"}, None).tokens == 32 * 1024
    assert refusal({"tokens": 0}).reason == TOKENS.problem(0)


def test_the_field_types_are_annotated_types():
    """What mypy sees: ``float`` and ``int`` (the metadata is Strict and the range's validator)."""
    hints = get_type_hints(LinkSpec, include_extras=True)
    base, within = get_args(hints["bandwidth_gbps"])
    assert base is float and isinstance(within, Within)
    assert [type(m) for m in within][0] is Strict
