"""Safe YAML/JSON loading and atomic file output.

Inputs are always read with ``yaml.safe_load``. Outputs are written to a temporary file
in the destination folder and renamed over the target only when complete, so a failure
never leaves a truncated or half-written file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from .errors import PlanInputError


def load_yaml_file(path: str | Path) -> Any:
    """Read a YAML (or JSON, a YAML subset) file with ``safe_load``; errors name the file."""
    import yaml  # local import: keeps `--help` fast

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanInputError("file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanInputError(f"cannot read file ({exc.__class__.__name__}: {exc})", source=str(path)) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else None
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PlanInputError(f"malformed YAML: {problem}", source=str(path), field=where) from None


def load_json_file(path: str | Path) -> Any:
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanInputError("file not found", source=str(path)) from None
    except json.JSONDecodeError as exc:
        raise PlanInputError(
            f"malformed JSON: {exc.msg}", source=str(path), field=f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanInputError(f"cannot read file ({exc})", source=str(path)) from None


def dump_yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100, allow_unicode=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and an atomic rename."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if not directory.is_dir():
        raise PlanInputError("output folder does not exist", source=str(path))
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
        os.replace(tmp_name, path)
    except BaseException:
        try:
            os.unlink(tmp_name)
        except FileNotFoundError:
            pass
        raise
