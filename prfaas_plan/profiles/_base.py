"""Shared pydantic configuration, field types with sane ranges, and error formatting.

Numbers are strict: a bool is not a number, a string is not a number (except a token count,
which may be written ``32K``), and a float is not an integer; every number has the range of
``prfaas_plan.ranges`` for what it means. Errors name the field path the user wrote.

The schema modules do without ``from __future__ import annotations``: pydantic would compile
each string annotation as the class is created (importing the schemas took 100 ms of CPU with it,
84 without); a forward reference is quoted (``list["LengthSpec"]``).
"""

from __future__ import annotations

import difflib
import re
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from annotated_types import GroupedMetadata
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, Strict, ValidationError, model_validator
from pydantic_core import ErrorDetails

from ..choices import WorkloadType
from ..errors import PlanInputError, show
from ..ranges import CHIPS_PER_INSTANCE, LIST_ITEMS, MAX_NAME_CHARS, TOKENS, Range
from ..units import parse_tokens


class StrictModel(BaseModel):
    """Base for every profile schema: unknown fields and NaN/inf are errors. A schema's validator
    is built when the schema is first used (``defer_build``), not at import: a command pays only
    for the schemas it validates (``benchmarks/startup.py``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, frozen=True, populate_by_name=True, defer_build=True)


_DERIVED: dict[tuple[int, str], tuple[weakref.ref[Any], Any]] = {}
P = TypeVar("P")
T = TypeVar("T")


def derived(profile: P, key: str, compute: Callable[[P], T]) -> T:
    """``compute(profile)``, once per profile object (profiles are frozen). Kept beside the
    object, not in it, so that ``model_copy(update=...)`` never carries a stale value; dropped
    when the profile is garbage-collected."""
    slot = (id(profile), key)
    entry = _DERIVED.get(slot)
    if entry is not None and entry[0]() is profile:
        return entry[1]
    value = compute(profile)

    def forget(_ref: weakref.ref[Any]) -> None:
        _DERIVED.pop(slot, None)

    _DERIVED[slot] = (weakref.ref(profile, forget), value)
    return value


def profile_json(profile: Any) -> str:
    """A frozen profile's JSON, once per object: a key by value for caches of derived results."""
    return derived(profile, "json", lambda p: p.model_dump_json())


def refuse(condition: Callable[[Any], bool], reason: str | Callable[[Any], str], *more: tuple[Callable, Any]) -> Any:
    """One after-validator refusing a model for which ``condition(model)`` holds, with ``reason``
    (a text, or a function of the model giving it), then each further (condition, reason) pair of
    ``more`` in turn: ``_ordered = refuse(lambda s: s.min > s.max, ...)``."""

    def check(model: Any) -> Any:
        for test, why in ((condition, reason), *more):
            if test(model):
                raise ValueError(why(model) if callable(why) else why)
        return model

    return model_validator(mode="after")(check)


@dataclass(frozen=True)
class Within(GroupedMetadata):
    """A strict number inside the range ``r``: ``Annotated[float, Within(RATE_RPS)]`` (an int is
    accepted, a bool or a string is not), ``Annotated[int, Within(INSTANCES)]`` (a float is not
    accepted either). The message is the one of ``Range.check`` (files, options and the API agree)."""

    r: Range

    def __iter__(self) -> Iterator[object]:
        yield Strict()
        yield AfterValidator(self._check)

    def _check(self, value: Any) -> Any:
        reason = self.r.problem(value)
        if reason is not None:
            raise ValueError(reason)
        return value


def Items(min_length: int = 0) -> Any:  # noqa: N802 - metadata, used like Within
    """A list of at least ``min_length`` and at most LIST_ITEMS.hi items: ``Annotated[list[Text], Items()]``."""
    return Field(min_length=min_length, max_length=int(LIST_ITEMS.hi))


def _token_count(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError(f"must be a number of tokens, not {str(value).lower()}")
    if isinstance(value, str):
        try:
            return parse_tokens(value)
        except PlanInputError as exc:
            raise ValueError(exc.reason) from None
    return value


Tokens = Annotated[int, BeforeValidator(_token_count), Within(TOKENS)]
"""A token count: an integer, or a string such as ``32K`` (K = 1,024 tokens)."""

Name = Annotated[str, Field(min_length=1, max_length=MAX_NAME_CHARS)]
Text = Annotated[str, Field(max_length=4096)]
PathText = Annotated[str, Field(min_length=1, max_length=4096)]
"""A file path (relative ones: to the scenario file) or, where a profile is meant, a shipped name."""
Fraction = Annotated[float, Within(Range(0, 1, "", "a fraction", lo_open=True))]
Weight = Annotated[float, Within(Range(0, 1e15, "", "a relative weight or count"))]
"""A mixture component's weight, a histogram bin's count, a prefix-cache hit fraction's probability:
relative, each divided by their sum."""
Chips = Annotated[int, Within(CHIPS_PER_INSTANCE)]


def format_loc(loc: tuple[Any, ...]) -> str:
    """('layers', 'overrides', 0, 'ffn') -> 'layers.overrides[0].ffn'."""
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).removeprefix(".")


# Union members pydantic names in error locations (``instances: int | CountRange``).
_UNION_TAGS = {"int", "float", "str", "bool", "constrained-int", "constrained-float", "constrained-str", "CountRange"}
_SCALAR_MISMATCH = {"int_type", "int_parsing", "float_type", "float_parsing", "string_type"}
_MAPPING_MISMATCH = {"model_type", "dict_type"}


def _is_wrapper(part: Any) -> bool:
    """A location part pydantic adds: a union member's name or a validator wrapper ('function-after[...]')."""
    return part in _UNION_TAGS or (isinstance(part, str) and "[" in part)


def _most_relevant(errors: list[ErrorDetails]) -> ErrorDetails:
    """The first error, skipping a union branch whose kind does not match the input (the
    integer branch when a mapping or a list was given, the mapping branch when a scalar was,
    the list branch and a literal's when a scalar or a list was: ``gpus_per_instance: [8, 0]``
    is a list whose item [1] is wrong, not a bad integer)."""
    for err in errors:
        in_union = any(map(_is_wrapper, err.get("loc", ())))
        kind, given = err.get("type"), err.get("input")
        given_mapping, given_list = isinstance(given, dict), isinstance(given, list)
        if not in_union or not (
            (kind in _SCALAR_MISMATCH and (given_mapping or given_list))
            or (kind in _MAPPING_MISMATCH and not given_mapping)
            or (kind == "list_type" and not given_list)
            or (kind == "literal_error" and given_list)
        ):
            return err
    return errors[0]


_TAGGED = {"mixers", "ffns"}  # dict fields whose values are discriminated unions
_TAG_VALUES = {str(t) for t in WorkloadType}  # the length specs' discriminator values, which pydantic puts into locations


def _clean_loc(loc: tuple) -> tuple:
    """Drop what pydantic adds to a location (union member names, validator wrappers such as
    'function-after[...]', the discriminator tag of a tagged union) so that the path is the
    one the user wrote."""
    out = []
    for i, part in enumerate(loc):
        tag = i >= 2 and loc[i - 2] in _TAGGED  # mixers.<name>.<tag>.field
        tag = tag or (isinstance(part, str) and part in _TAG_VALUES and (i == 0 or loc[i - 1] not in _TAGGED))
        if not (_is_wrapper(part) or tag):
            out.append(part)
    return tuple(out)


def _where(err: ErrorDetails) -> tuple:
    """The location of ``err`` as the user wrote it (``_clean_loc``)."""
    return _clean_loc(tuple(err.get("loc", ())))


_PHRASES = (
    (r"^Input should be greater than or equal to (.+)$", r"must be >= \1"),
    (r"^Input should be greater than (.+)$", r"must be > \1"),
    (r"^Input should be less than or equal to (.+)$", r"must be <= \1"),
    (r"^Input should be less than (.+)$", r"must be < \1"),
    (r"^Input should be a valid integer.*$", "must be an integer"),
    (r"^Input should be a valid number.*$", "must be a number"),
    (r"^Input should be a finite number$", "must be a finite number"),
    (r"^Input should be a valid boolean.*$", "must be true or false"),
    (r"^Input should be a valid string$", "must be text"),
    (r"^Input should be a valid list$", "must be a list"),
    (r"^Input should be a valid dictionary.*$", "must be a mapping"),
    (r"^List should have at least (\d+) items? after validation, not \d+$", r"must have at least \1 item(s)"),
    (r"^List should have at most (\d+) items? after validation, not (\d+)$", r"must have at most \1 items (got \2)"),
    (r"^Dictionary should have at most (\d+) items? after validation, not (\d+)$", r"must have at most \1 entries (got \2)"),
    (r"^String should have at most (\d+) characters?$", r"must be at most \1 characters"),
    (r"^String should have at least (\d+) characters?$", r"must be at least \1 character(s)"),
    (r"^Input should be (.+)$", r"must be \1"),
)


def _plain(msg: str) -> str:
    """pydantic's message in the project's words ('Input should be greater than 0' -> 'must be > 0')."""
    for pattern, replacement in _PHRASES:
        new, n = re.subn(pattern, replacement, msg)
        if n:
            return new
    return msg


def first_error(exc: ValidationError, source: str | None, prefix: str = "") -> PlanInputError:
    """Turn the most relevant pydantic error into a one-line PlanInputError naming field and reason."""
    errors = exc.errors(include_url=False)
    err = _most_relevant(errors)
    loc = _where(err)
    kind = err.get("type")
    reason = _plain(err.get("msg", "invalid value").removeprefix("Value error, "))
    misspelt = _misspelt(loc, errors) if kind == "missing" else None
    if misspelt is not None:  # a required field written with a typo: the typo is the error
        errors = [e for e in errors if _where(e) != loc]
        loc, kind, reason = misspelt, "extra_forbidden", f"unknown field (did you mean {loc[-1]}?)"
    elif kind == "missing":
        reason = "required field is missing"
    elif kind == "extra_forbidden":
        reason = "unknown field (check the spelling)"
    elif kind == "union_tag_invalid":
        ctx = err.get("ctx", {})
        tags = ", ".join(t.split("'")[1] if "'" in t else t for t in str(ctx.get("expected_tags", "")).split(">, "))
        name = ctx.get("discriminator", "type").strip("'")
        reason = f"unknown {name} {show(ctx.get('tag'))} (use one of {tags.rstrip('>')})"
    elif kind == "union_tag_not_found":
        reason = f"needs a {err.get('ctx', {}).get('discriminator', 'type').strip(chr(39))} field"
    elif kind in ("int_type", "float_type", "int_from_float") and isinstance(err.get("input"), bool):
        reason = f"must be a number, not {str(err['input']).lower()}"
    elif "input" in err and kind not in ("model_type", "dict_type", "value_error") and not isinstance(err["input"], (dict, list)):
        reason = f"{reason} (got {show(err['input'])})"
    others = {_where(e) for e in errors}
    more = sum(1 for other in others if other[: len(loc)] != loc and loc[: len(other)] != other)
    if more > 0:
        reason += f" (and {more} more error{'s' if more > 1 else ''})"
    path = format_loc(loc + (("type",) if kind in ("union_tag_invalid", "union_tag_not_found") else ()))
    field = ".".join(p for p in (prefix, path) if p) or None
    return PlanInputError(reason, source=source, field=field)


def _misspelt(missing: tuple, errors: list[ErrorDetails]) -> tuple | None:
    """The unknown field beside the required field ``missing`` (a location) that is its closest
    spelling (``bandwith_gbps`` for ``bandwidth_gbps``), if any."""
    beside = [(e.get("type"), where) for e in errors if (where := _where(e))[:-1] == missing[:-1]]
    unknown = {str(where[-1]): where for kind, where in beside if kind == "extra_forbidden"}
    close = difflib.get_close_matches(str(missing[-1]), list(unknown), n=1, cutoff=0.75)
    if not close:
        return None
    required = {str(where[-1]) for kind, where in beside if kind == "missing"}
    back = difflib.get_close_matches(close[0], sorted(required), n=1, cutoff=0.75)
    return unknown[close[0]] if back == [str(missing[-1])] else None  # a mutual best match only


def require_mapping(data: object, source: str | None = None) -> dict:
    """``data``, a file's top level, if it is a mapping of fields (else a PlanInputError saying what it is)."""
    if not isinstance(data, dict):
        kind = "empty" if data is None else type(data).__name__
        raise PlanInputError(f"expected a mapping of fields at the top level, got {kind}", source=source)
    return data


def validate_or_raise(schema: type[BaseModel], data: Any, source: str | None) -> Any:
    try:
        return schema.model_validate(require_mapping(data, source))
    except ValidationError as exc:
        raise first_error(exc, source) from None
