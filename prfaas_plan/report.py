"""Presentation-neutral reports: a title, metadata, typed columns, rows and notes.

Library results are turned into a :class:`Report`; ``render`` writes it as a rich table,
JSON or CSV. The three formats carry the same row values (the table only formats them).
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

FORMATS = ("table", "json", "csv")


@dataclass(frozen=True)
class Column:
    key: str
    header: str
    fmt: Callable[[Any], str] = str
    justify: str | None = None  # 'left' or 'right'; default: left for plain text, right for numbers
    min_width: int | None = None  # keep labels readable in narrow terminals


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


def fmt_float(digits: int) -> Callable[[Any], str]:
    return lambda v: f"{v:,.{digits}f}"


def fmt_opt(digits: int) -> Callable[[Any], str]:
    """A number to ``digits`` decimals, or '-' for None (not available)."""
    return lambda v: "-" if v is None else f"{v:,.{digits}f}"


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


def to_table(report: Report, width: int | None = None, color: bool = False) -> str:
    """The report as a table: rich (wrapped to ``width``, in colour) for a terminal; plain text at
    full width otherwise (files and pipes, where rich's import and layout are not needed)."""
    if not color:
        return _plain(report)
    from rich import box
    from rich.console import Console
    from rich.table import Table

    table = Table(title=report.title, title_justify="left", box=box.SIMPLE_HEAD)
    for col in report.columns:
        table.add_column(col.header, justify=_justify(col), min_width=col.min_width)
    for row in report.rows:
        table.add_row(*[col.fmt(row[col.key]) for col in report.columns])
    buf = io.StringIO()
    console = Console(file=buf, width=width or 120, force_terminal=color, color_system="auto" if color else None)
    if report.meta:
        console.print("  ".join(f"[bold]{k}[/bold]: {v}" for k, v in report.meta.items()), highlight=False)
    console.print(table)
    for note in report.notes:
        console.print(f"- {note}", highlight=False, soft_wrap=False)
    text = buf.getvalue()
    for section in report.sections:
        text += "\n" + to_table(section, width=width, color=color)
    return text


def _justify(col: Column) -> str:
    return col.justify or ("right" if col.fmt is not str else "left")


def _plain(report: Report) -> str:
    """The same layout as rich's SIMPLE_HEAD box, as plain text: the title, the header, a rule,
    one line per row (cells padded by one space, columns one space apart), then the notes."""
    headers = [col.header for col in report.columns]
    cells = [[col.fmt(row[col.key]) for col in report.columns] for row in report.rows]
    widths = [max([len(h), col.min_width or 0, *(len(r[i]) for r in cells)]) for i, (h, col) in
              enumerate(zip(headers, report.columns))]
    right = [_justify(col) == "right" for col in report.columns]

    def line(values: list[str]) -> str:
        return " " + " ".join(f" {v.rjust(w) if r else v.ljust(w)} " for v, w, r in zip(values, widths, right))

    rule_width = len(line(headers)) - 2
    lines = ["  ".join(f"{k}: {v}" for k, v in report.meta.items())] if report.meta else []
    lines += [report.title, "", line(headers), " " + "─" * rule_width, *(line(r) for r in cells), ""]
    lines += [f"- {note}" for note in report.notes]
    text = "\n".join(ln.rstrip() for ln in lines) + "\n"
    for section in report.sections:
        text += "\n" + _plain(section)
    return text


def render(report: Report, fmt: str, width: int | None = None, color: bool = False) -> str:
    if fmt == "json":
        return to_json(report)
    if fmt == "csv":
        return to_csv(report)
    return to_table(report, width=width, color=color)
