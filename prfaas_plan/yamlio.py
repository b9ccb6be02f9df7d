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
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8", newline=""))


def write_atomic(path: str | Path, write) -> None:
    """Call ``write(temporary_path)``, then rename the result over ``path``; an unwritable
    destination is a PlanInputError and leaves any existing file untouched. The new file gets
    the usual permissions (those of the file it replaces, else 0666 less the umask)."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise PlanInputError("is a folder, not a file", source=str(path), field="--output")
    if not directory.is_dir():
        raise PlanInputError("output folder does not exist", source=str(path), field="--output")
    try:
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=path.suffix or ".tmp", dir=directory)
        os.close(fd)
    except OSError as exc:
        raise PlanInputError(f"cannot write here ({exc.strerror})", source=str(path), field="--output") from None
    try:
        write(tmp_name)
        os.chmod(tmp_name, _mode_for(path))
        os.replace(tmp_name, path)
    except OSError as exc:
        Path(tmp_name).unlink(missing_ok=True)
        raise PlanInputError(f"cannot write ({exc.strerror or exc})", source=str(path), field="--output") from None
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask
