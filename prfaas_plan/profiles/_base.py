"""Shared pydantic configuration and error formatting for profile schemas."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from ..errors import PlanInputError


class StrictModel(BaseModel):
    """Base for every profile schema: unknown fields and NaN/inf are errors."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, populate_by_name=True)


def format_loc(loc: tuple[Any, ...]) -> str:
    """('layers', 'overrides', 0, 'ffn') -> 'layers.overrides[0].ffn'."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text


# Union members pydantic names in error locations (``instances: int | CountRange``).
_UNION_TAGS = {"int", "float", "str", "CountRange"}
_TYPE_MISMATCH = {"int_type", "int_parsing", "float_type", "float_parsing", "string_type", "model_type", "dict_type"}


def _most_relevant(errors: list[dict]) -> dict:
    """The first error, skipping a union branch whose kind does not match the input (the
    integer branch when a mapping was given, the mapping branch when a scalar was)."""
    for err in errors:
        in_union = any(part in _UNION_TAGS for part in err.get("loc", ()))
        given_mapping = isinstance(err.get("input"), dict)
        scalar_branch = err.get("type") in _TYPE_MISMATCH - {"model_type", "dict_type"}
        mapping_branch = err.get("type") in ("model_type", "dict_type")
        if in_union and ((scalar_branch and given_mapping) or (mapping_branch and not given_mapping)):
            continue
        return err
    return errors[0]


_TAGGED_MAPS = {"mixers", "ffns"}  # dict fields whose values are discriminated unions


def _clean_loc(loc: tuple) -> tuple:
    """Drop what pydantic adds to a location (union member names, validator wrappers such as
    'function-after[...]', the discriminator tag after a mixer or FFN name) so that the path
    is the one the user wrote."""
    out = []
    for i, part in enumerate(loc):
        wrapper = part in _UNION_TAGS or (isinstance(part, str) and "[" in part)
        tag = i >= 2 and loc[i - 2] in _TAGGED_MAPS  # mixers.<name>.<tag>.field
        if not (wrapper or tag):
            out.append(part)
    return tuple(out)


def first_error(exc: ValidationError, source: str | None) -> PlanInputError:
    """Turn the most relevant pydantic error into a one-line PlanInputError naming field and reason."""
    errors = exc.errors(include_url=False)
    err = _most_relevant(errors)
    loc = _clean_loc(tuple(err.get("loc", ())))
    reason = err.get("msg", "invalid value").removeprefix("Value error, ")
    if err.get("type") == "missing":
        reason = "required field is missing"
    elif err.get("type") == "extra_forbidden":
        reason = "unknown field (check the spelling)"
    elif "input" in err and err.get("type") not in ("model_type", "dict_type") and not isinstance(err["input"], (dict, list)):
        reason = f"{reason} (got {err['input']!r})"
    more = len({_clean_loc(tuple(e.get("loc", ()))) for e in errors}) - 1
    if more > 0:
        reason += f" (and {more} more error{'s' if more > 1 else ''})"
    return PlanInputError(reason, source=source, field=format_loc(loc) or None)


def validate_or_raise(schema: type[BaseModel], data: Any, source: str | None) -> Any:
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise PlanInputError(f"expected a mapping of fields at the top level, got {kind}", source=source)
    try:
        return schema.model_validate(data)
    except ValidationError as exc:
        raise first_error(exc, source) from None
