"""One JSON value of a trace file (a line of a JSONL trace, or a whole JSON file) parsed with
``json.loads``, every way it can fail as one line naming the file and where: a syntax error
(its line within the text), text that is not UTF-8, nesting deeper than the parser's
recursion limit (``[`` x 100,000), or an integer of more digits than Python converts (4,300).
"""

from __future__ import annotations

import json
from typing import Any

from ...errors import PlanInputError


def load_json(raw: bytes, source: str, where: str | None, what: str) -> Any:
    """``json.loads(raw)``; raises PlanInputError "not {what} (reason)" at ``where`` (a line of
    a JSONL file) or, with ``where`` None, at the syntax error's own line."""
    try:
        return json.loads(raw)
    except json.JSONDecodeError as exc:
        field = where if where is not None else f"line {exc.lineno}"
        raise PlanInputError(f"not {what} ({exc.msg})", source=source, field=field) from None
    except UnicodeDecodeError:
        raise PlanInputError(f"not {what} (not UTF-8)", source=source, field=where) from None
    except RecursionError:
        raise PlanInputError(f"not {what} (nested too deeply to read)", source=source, field=where) from None
    except ValueError as exc:  # e.g. an integer of more than 4,300 digits
        raise PlanInputError(f"not {what} ({str(exc).splitlines()[0][:80]})", source=source, field=where) from None
