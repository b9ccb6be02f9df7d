"""Errors that the CLI turns into a one-line message and exit code 2."""

from __future__ import annotations


class PlanInputError(Exception):
    """Bad user input: names the file (if any), the field path (if any) and the reason."""

    def __init__(self, reason: str, *, source: str | None = None, field: str | None = None):
        self.reason = reason
        self.source = source
        self.field = field
        super().__init__(self.one_line())

    def one_line(self) -> str:
        parts = [p for p in (self.source, self.field) if p]
        prefix = ": ".join(parts)
        text = f"{prefix}: {self.reason}" if prefix else self.reason
        return " ".join(text.split())  # always one line

    def with_source(self, source: str) -> "PlanInputError":
        """Return a copy that names ``source`` unless one is named already."""
        return PlanInputError(self.reason, source=self.source or source, field=self.field)
