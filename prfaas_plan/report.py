"""Presentation-neutral reports: a title, metadata, typed columns, rows and notes.

Library results are turned into a :class:`Report`; ``render`` writes it as a rich table,
JSON or CSV. The three formats carry the same row values (the table only formats them).

A table wider than the width it is given is never cropped: its columns are split into parts
that fit, one below the other, each repeating the columns marked ``keep`` (the row's name);
a text column that alone does not fit wraps at spaces. Numbers are always whole.
"""

from __future__ import annotations

import csv
import io
import json
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

FORMATS = ("table", "json", "csv")
CONTINUED = "(continued)"  # the title of a table's further parts


def color_disabled() -> bool:
    """Whether NO_COLOR is set and not empty (https://no-color.org): then no output carries an
    ANSI code at all, neither colour nor bold nor italic."""
    return bool(os.environ.get("NO_COLOR"))


Justify = Literal["left", "right"]


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Callable[[Any], str] = str
    justify: Justify | None = None  # 'left' or 'right'; default: left for plain text, right for numbers
    min_width: int | None = None  # keep labels readable in narrow terminals
    keep: bool = False  # repeated in every part of a table split to fit the width (the row's name)


@dataclass
class Report:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)  # top-level JSON fields, shown above the table
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # further JSON-only detail
    json_doc: dict[str, Any] | None = None  # replaces the default JSON layout when set
    sections: list[Report] = field(default_factory=list)  # further tables (table format only)
    csv_columns: list[Column] | None = None  # CSV columns when they differ from the table's


def fixed(value: float, digits: int) -> str:
    """``value`` to ``digits`` decimals with thousands separators; one that rounds to zero is
    '0.00', never '-0.00'."""
    text = f"{value:,.{digits}f}"
    return text[1:] if text.startswith("-") and not text.strip("-0.,") else text


def fmt_float(digits: int) -> Callable[[Any], str]:
    return lambda v: fixed(v, digits)


def fmt_opt(digits: int) -> Callable[[Any], str]:
    """A number to ``digits`` decimals, or '-' for None (not available)."""
    return lambda v: "-" if v is None else fixed(v, digits)


def signed(value: float, digits: int) -> str:
    """``value`` with its sign and ``digits`` decimals: '+1.2', '-0.5'; one that rounds to zero has
    none, '0.0' (never '-0.0' or '+0.0': a change too small to show is no change either way)."""
    text = f"{value:+.{digits}f}"
    return text[1:] if not text.strip("+-0.") else text


def unsigned_zero(value: float) -> float:
    """``value``, with -0.0 as 0.0 (a rounded figure a CSV or JSON would otherwise print as -0.0)."""
    return value + 0.0


def fmt_int(v: Any) -> str:
    return f"{round(v):,}"


def to_json(report: Report) -> str:
    if report.json_doc is not None:
        return json.dumps(report.json_doc, indent=2) + "\n"
    doc = dict(report.meta)
    doc["rows"] = report.rows
    doc.update(report.extra)
    if report.notes:
        doc["notes"] = report.notes
    return json.dumps(doc, indent=2) + "\n"


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    columns = report.csv_columns or report.columns
    writer.writerow([c.key for c in columns])
    for row in report.rows:
        writer.writerow([_csv_value(row[c.key]) for c in columns])
    return buf.getvalue()


def _csv_value(value: Any) -> Any:
    """A cell: blank for None; a float as Python's shortest round-trip text (a numpy float too,
    whose repr would be ``np.float64(...)``)."""
    if value is None:
        return ""
    return repr(float(value)) if isinstance(value, float) else value


def _widths(report: Report, columns: list[Column]) -> list[int]:
    """Each column's natural width: its header, its minimum, its widest cell."""
    return [max([len(col.header), col.min_width or 0, *(len(col.fmt(row[col.key])) for row in report.rows)]) for col in columns]


def table_width(widths: list[int]) -> int:
    """Characters of a SIMPLE_HEAD table line with these column widths (one space of padding each
    side of a cell, one between columns, an edge each side)."""
    return sum(w + 2 for w in widths) + len(widths) + 1


def parts(report: Report, width: int | None) -> list[list[Column]]:
    """The columns of each part of a table at ``width`` (one part when it fits or no width is
    given): the ``keep`` columns first (the row's name, so that every part says which row is
    which), then as many of the others, in order, as fit beside them. A
    table with no ``keep`` column (a list of items and values) stays whole while its numbers fit:
    its text wraps instead."""
    columns = report.columns
    if not width or table_width(_widths(report, columns)) <= width:
        return [columns]
    if not any(c.keep for c in columns):  # no row name to repeat: wrap the text if the numbers fit
        wrapped = [
            w if _justify(c) == "right" else max(len(c.header), c.min_width or 0, 10)
            for c, w in zip(columns, _widths(report, columns))
        ]
        if table_width(wrapped) <= width:
            return [columns]
    kept = [c for c in columns if c.keep]
    out: list[list[Column]] = []
    current: list[Column] = []
    for col in (c for c in columns if not c.keep):
        if current and table_width(_widths(report, kept + current + [col])) > width:
            out.append(current)
            current = []
        current.append(col)
    out.append(current)
    return [kept + part for part in out]


def to_table(report: Report, width: int | None = None, color: bool = False) -> str:
    """The report as a table: rich (in colour) for a terminal; plain text otherwise (files and
    pipes, where rich's import is not needed). A table wider than ``width`` is split into parts
    that fit (``parts``); without a width it is one table, whatever its width."""
    if not color:
        return _plain(report, width)
    from rich import box
    from rich.console import Console
    from rich.table import Table

    buf = io.StringIO()
    console = Console(
        file=buf, width=width or 120, force_terminal=color, color_system="auto" if color and not color_disabled() else None
    )  # None: no ANSI codes
    if report.meta:
        console.print("  ".join(f"[bold]{k}[/bold]: {v}" for k, v in report.meta.items()), highlight=False)
    for k, columns in enumerate(parts(report, width)):
        table = Table(title=report.title if k == 0 else CONTINUED, title_justify="left", box=box.SIMPLE_HEAD)
        for col in columns:
            table.add_column(
                col.header, justify=_justify(col), min_width=col.min_width, overflow="fold", no_wrap=_justify(col) != "left"
            )
        for row in report.rows:
            table.add_row(*[col.fmt(row[col.key]) for col in columns])
        console.print(table)
    for note in report.notes:
        console.print(f"- {note}", highlight=False, soft_wrap=False)
    text = buf.getvalue()
    for section in report.sections:
        text += "\n" + to_table(section, width=width, color=color)
    return text


def _justify(col: Column) -> Justify:
    return col.justify or ("right" if col.fmt is not str else "left")


def _plain(report: Report, width: int | None = None) -> str:
    """The same layout as rich's SIMPLE_HEAD box, as plain text: the title, the header, a rule,
    one line per row (cells padded by one space, columns one space apart), then the notes; split
    into parts at ``width`` (``parts``), the widest text column of a part that still does not fit
    wrapped at spaces, and the title and notes wrapped too."""

    def fill(text: str, indent: str = "") -> list[str]:
        return (
            textwrap.wrap(text, width, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False) or [""]
            if width
            else [text]
        )

    lines = fill("  ".join(f"{k}: {v}" for k, v in report.meta.items())) if report.meta else []
    for k, columns in enumerate(parts(report, width)):
        lines += [*fill(report.title if k == 0 else CONTINUED), ""]
        lines += _plain_part(report, columns, width) + [""]
    for note in report.notes:
        lines += fill(f"- {note}", "  ")
    text = "\n".join(ln.rstrip() for ln in lines) + "\n"
    for section in report.sections:
        text += "\n" + _plain(section, width)
    return text


def _plain_part(report: Report, columns: list[Column], width: int | None) -> list[str]:
    headers = [col.header for col in columns]
    cells = [[col.fmt(row[col.key]) for col in columns] for row in report.rows]
    widths = _widths(report, columns)
    right = [_justify(col) == "right" for col in columns]
    texts = [i for i, r in enumerate(right) if not r]
    if width and texts and table_width(widths) > width:  # wrap the widest text column
        i = max(texts, key=lambda j: widths[j])
        widths[i] = max(len(headers[i]), widths[i] - (table_width(widths) - width), 10)

    def line(values: list[str]) -> str:
        return " " + " ".join(f" {v.rjust(w) if r else v.ljust(w)} " for v, w, r in zip(values, widths, right))

    def physical(values: list[str]) -> list[str]:
        wrapped = [
            textwrap.wrap(v, w, break_long_words=False, break_on_hyphens=False) or [""] if len(v) > w else [v]
            for v, w in zip(values, widths)
        ]
        return [line([cell[k] if k < len(cell) else "" for cell in wrapped]) for k in range(max(len(cell) for cell in wrapped))]

    rule_width = len(line(headers)) - 2
    return [line(headers), " " + "─" * rule_width, *(ln for r in cells for ln in physical(r))]


def render(report: Report, fmt: str, width: int | None = None, color: bool = False) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(report)
    return to_table(report, width=width, color=color)
