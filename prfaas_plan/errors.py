"""Errors that the CLI turns into a one-line message and exit code 2, and warnings it prints
as one line each.

A message never echoes unbounded input: the file name, the field path and the reason are
each shortened (``shorten``) so that the whole line stays readable.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

MAX_LINE_CHARS = 270  # the whole 'source: field: reason' line (ranges.MAX_ERROR_CHARS)
_MAX_SOURCE_CHARS = 120
_MAX_FIELD_CHARS = 60


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut in the middle with '...' if longer than ``limit`` characters.

    Each cut moves to the nearest space within a third of its side (at most 30 characters),
    so that a word, such as a name in a list, is dropped whole rather than cut in two."""
    text = " ".join(str(text).split())
    if len(text) <= limit:
        return text
    keep = max(limit - 3, 2)
    head = keep - keep // 3
    start, end = text[:head], text[len(text) - (keep - head) :]
    space = start.rfind(" ")
    if space > 0 and len(start) - space <= min(30, len(start) // 3):
        start = start[: space + 1]
    space = end.find(" ")
    if 0 <= space <= min(30, len(end) // 3):
        end = end[space:]
    return start + "..." + end


def show(value: object, limit: int = 40) -> str:
    """``repr(value)`` shortened for an error message."""
    return shorten(repr(value), limit)


class PlanInputError(Exception):
    """Bad user input: names the file (if any), the field (if any) and the reason.

    ``field`` is the library's own name for what was wrong, never a command-line option: a
    spec field's path in its file (``prfaas.calibration_fit``), or the name of the API
    function's parameter (``rate_rps``, ``requests``, ``jobs``) when ``source`` is None. A
    reason that refers to another parameter names it in backticks (``give `rate_rps` or
    `load`, not both``). ``argument``: the field is a parameter although ``source`` is set
    (a parameter that names a file, such as a profile ``api.compare`` is given, and the error
    is in that file). ``names_argument`` says which errors are about a parameter's value;
    the CLI names those by its option (``cli.OPTION_NAMES``). ``form``: the file is a scenario of
    the other form (``choices.ProfileKind``: ``sites`` or ``scenario``), which the CLI says which
    command plans."""

    def __init__(
        self,
        reason: str,
        *,
        source: str | None = None,
        field: str | None = None,
        argument: bool = False,
        form: str | None = None,
    ):
        self.reason = reason
        self.source = source
        self.field = field
        self.argument = argument
        self.form = form
        super().__init__(self.one_line())

    @property
    def names_argument(self) -> bool:
        """Whether ``field`` is a parameter of the call (not a field inside a file)."""
        return self.argument or self.source is None

    def one_line(self) -> str:
        parts = [
            shorten(self.source, _MAX_SOURCE_CHARS) if self.source else None,
            shorten(self.field, _MAX_FIELD_CHARS) if self.field else None,
        ]
        prefix = ": ".join(p for p in parts if p)
        room = MAX_LINE_CHARS - (len(prefix) + 2 if prefix else 0)
        reason = shorten(self.reason, room)
        return f"{prefix}: {reason}" if prefix else reason

    def with_source(self, source: str | None) -> PlanInputError:
        """Return a copy that names ``source`` unless one is named already."""
        return PlanInputError(self.reason, source=self.source or source, field=self.field, argument=self.argument, form=self.form)

    def with_field(self, prefix: str) -> PlanInputError:
        """Return a copy whose field is under ``prefix`` (``workload.input`` + ``sigma``)."""
        field = f"{prefix}.{self.field}" if self.field else prefix
        return PlanInputError(self.reason, source=self.source, field=field, form=self.form)

    def renamed(self, names: dict[str, str]) -> PlanInputError:
        """This error with its field, and the backticked parameters its reason names, renamed
        by ``names`` (library name -> caller's name) when it is about a parameter's value
        (``names_argument``); unchanged otherwise."""
        if not self.names_argument:
            return self
        reason = re.sub(r"`([^`]+)`", lambda m: names.get(m[1], m[0]), self.reason)
        field = _renamed_field(self.field, names) if self.field else self.field
        if (reason, field) == (self.reason, self.field):
            return self
        return PlanInputError(reason, source=self.source, field=field, argument=self.argument, form=self.form)


def _renamed_field(field: str, names: dict[str, str]) -> str:
    """``field`` by ``names``, or by its head where it is a part of a parameter
    (``bandwidth_trace[1]``, ``parallel.tp``)."""
    if field in names:
        return names[field]
    part = re.fullmatch(r"(\w+)([.\[].*)", field, re.S)
    return names[part[1]] + part[2] if part and part[1] in names else field


@contextmanager
def under(prefix: str, source: str | None = None) -> Iterator[None]:
    """Errors raised inside name their field under ``prefix`` (``workload.input`` + ``sigma``)
    and ``source`` unless they name a file already: the one way a caller that knows where a
    value sits in its file re-raises what the code below it found."""
    try:
        yield
    except PlanInputError as exc:
        raise exc.with_field(prefix).with_source(source) from None


class PlanWarning(UserWarning):
    """Input that is accepted but probably not what the user meant (printed as one line)."""


def warn(message: str) -> None:
    """Emit a :class:`PlanWarning` (the CLI prints each distinct one once on stderr)."""
    warnings.warn(shorten(message, MAX_LINE_CHARS), PlanWarning, stacklevel=2)
