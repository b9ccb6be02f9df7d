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


def first_error(exc: ValidationError, source: str | None) -> PlanInputError:
    """Turn the first pydantic error into a one-line PlanInputError naming field and reason."""
    err = exc.errors(include_url=False)[0]
    loc = tuple(err.get("loc", ()))
    reason = err.get("msg", "invalid value").removeprefix("Value error, ")
    if err.get("type") == "missing":
        reason = "required field is missing"
    elif err.get("type") == "extra_forbidden":
        reason = "unknown field (check the spelling)"
    elif "input" in err and err.get("type") not in ("model_type", "dict_type") and not isinstance(err["input"], (dict, list)):
        reason = f"{reason} (got {err['input']!r})"
    more = len(exc.errors()) - 1
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
