"""Reading user files safely, and writing outputs atomically.

Input (every reader of a user file goes through ``read_input_bytes``):
- only regular files are read (a named pipe, a device or a folder is refused, so nothing
  blocks), and each kind of file has a size limit (``ranges``);
- YAML is parsed by ``parse_yaml``: first the event stream is scanned without building
  anything, which refuses nesting deeper than ``MAX_DEPTH`` and more than ``MAX_NODES``
  values once aliases are expanded (an alias bomb is refused before it is expanded);
  then it is loaded with a strict safe loader (libyaml's C parser where available):
  YAML 1.2 core scalars (``true``/``false`` only; ints in decimal, 0o octal or 0x hex; no
  base-60 ``12:30:00``, no ``yes``/``no``, no timestamps), duplicate keys are an error,
  and integers have at most ``MAX_INT_DIGITS`` digits;
- JSON likewise: depth, size and integer-length limits (NaN and Infinity, which Hugging Face
  configs contain, are read as floats; the fields that are used are range-checked).

Output: ``OutputFiles`` writes every output of a command to temporary files in the
destination folders and renames them over the targets only when all are complete, so a
failure never leaves a truncated file, and never replaces one output but not another. An
output must name a file (not empty, not ending in '/', not a folder) in a folder that
exists, and never a file the command reads: inside ``track_inputs()`` (the CLI runs every
command in one) each input read is recorded by device and inode, so a symlink, a hard link,
``./s.yaml`` or an absolute path to an input is refused as well.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from .errors import PlanInputError, shorten
from .ranges import MAX_DEPTH, MAX_INT_DIGITS, MAX_NODES, MAX_PROFILE_BYTES


def file_status(path: str | Path) -> os.stat_result | None:
    """``os.stat`` of ``path``, or None if it does not exist or cannot be a file name
    (too long, a NUL byte, a missing folder)."""
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def is_regular_file(path: str | Path) -> bool:
    st = file_status(path)
    return st is not None and stat.S_ISREG(st.st_mode)


_inputs_read: dict[tuple[int, int], str] | None = None  # (st_dev, st_ino) -> the path as given; None: not tracking


@contextlib.contextmanager
def track_inputs() -> Iterator[None]:
    """Record every input file read inside the block (``note_input``), so that ``OutputFiles``
    refuses to write over one of them."""
    global _inputs_read
    previous, _inputs_read = _inputs_read, {}
    try:
        yield
    finally:
        _inputs_read = previous


def note_input(path: str | Path, st: os.stat_result | None = None) -> None:
    """Record ``path`` as an input of the running command (a no-op outside ``track_inputs``);
    readers that serve a file from a cache call this too."""
    if _inputs_read is None:
        return
    st = st if st is not None else file_status(path)
    if st is not None and stat.S_ISREG(st.st_mode):
        _inputs_read.setdefault((st.st_dev, st.st_ino), str(path))


def read_input_bytes(path: str | Path, max_bytes: int, *, source: str | None = None, limit_read: int | None = None) -> bytes:
    """The bytes of a user's input file: a regular file of at most ``max_bytes`` (only the first
    ``limit_read`` bytes are read when given: a check before a streaming reader)."""
    source = source or str(path)
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise PlanInputError("file not found", source=source) from None
    except (OSError, ValueError) as exc:
        raise PlanInputError(f"cannot read file ({_reason(exc)})", source=source) from None
    if stat.S_ISDIR(st.st_mode):
        raise PlanInputError("is a folder, not a file", source=source)
    if not stat.S_ISREG(st.st_mode):
        raise PlanInputError("not a regular file (a pipe, socket or device is not read)", source=source)
    if st.st_size > max_bytes:
        raise PlanInputError(f"file is {st.st_size:,} bytes, over the limit of {max_bytes:,}", source=source)
    note_input(path, st)
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1 if limit_read is None else limit_read)
    except OSError as exc:
        raise PlanInputError(f"cannot read file ({_reason(exc)})", source=source) from None
    if limit_read is None and len(data) > max_bytes:
        raise PlanInputError(f"file is over the limit of {max_bytes:,} bytes", source=source)
    return data


def read_input_text(path: str | Path, max_bytes: int, *, source: str | None = None) -> str:
    """A user's input file as UTF-8 text (a byte-order mark is dropped)."""
    data = read_input_bytes(path, max_bytes, source=source)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise PlanInputError(f"not UTF-8 text (byte {exc.start} cannot be decoded)", source=source or str(path)) from None


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or exc.__class__.__name__


# ---------------------------------------------------------------------------------------
# YAML


def _strict_classes():
    """A resolver with YAML 1.2 core scalars, and a constructor that refuses duplicate keys
    and over-long integers; C (libyaml) and pure-Python loaders built from them."""
    import yaml
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.resolver import Resolver

    class StrictResolver(Resolver):
        yaml_implicit_resolvers: dict = {}

    for tag, pattern, first in (
        ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
        ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
        (
            "tag:yaml.org,2002:float",
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
            list("-+.0123456789"),
        ),
        ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
        ("tag:yaml.org,2002:merge", r"^(?:<<)$", ["<"]),
    ):
        StrictResolver.add_implicit_resolver(tag, re.compile(pattern), first)

    class StrictConstructor(SafeConstructor):
        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: set = set()
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue
                    key = self.construct_object(key_node, deep=True)
                    try:
                        duplicate = key in seen
                        seen.add(key)
                    except TypeError:
                        raise ConstructorError(None, None, "a mapping key must be a plain value", key_node.start_mark) from None
                    if duplicate:
                        raise ConstructorError(None, None, f"duplicate key {str(key)[:40]!r}", key_node.start_mark)
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node):
            text = self.construct_scalar(node)
            digits = text.lstrip("+-")
            if len(digits) > MAX_INT_DIGITS:
                raise ConstructorError(None, None, f"integer of {len(digits)} digits (at most {MAX_INT_DIGITS})", node.start_mark)
            if digits.startswith(("0o", "0x")):
                return int(text, 0)
            return int(text, 10)

    StrictConstructor.add_constructor("tag:yaml.org,2002:int", StrictConstructor.construct_yaml_int)
    StrictConstructor.add_constructor("tag:yaml.org,2002:map", StrictConstructor.construct_yaml_map)

    try:
        from yaml.cyaml import CParser as parser  # libyaml
    except ImportError:  # pragma: no cover - PyYAML built without libyaml
        parser = None
    if parser is not None:

        class Loader(parser, StrictConstructor, StrictResolver):
            def __init__(self, stream):
                parser.__init__(self, stream)
                StrictConstructor.__init__(self)
                StrictResolver.__init__(self)
    else:  # pragma: no cover - PyYAML built without libyaml
        from yaml.composer import Composer
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        class Loader(Reader, Scanner, Parser, Composer, StrictConstructor, StrictResolver):
            def __init__(self, stream):
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)
                Composer.__init__(self)
                StrictConstructor.__init__(self)
                StrictResolver.__init__(self)

    return Loader


_LOADER = None


def _loader():
    global _LOADER
    if _LOADER is None:
        _LOADER = _strict_classes()
    return _LOADER


def _check_structure(loader, source: str | None) -> None:
    """Scan the event stream: refuse nesting deeper than MAX_DEPTH, more than MAX_NODES values
    after alias expansion, and an alias to a collection that contains it (or to nothing).

    Each value counts 1 and an alias counts the expanded size of its anchor's value, so the
    running total is the size of the document as ``safe_load`` would build it."""
    import yaml

    sizes: dict[str, int] = {}  # anchor -> expanded size of its value
    stack: list[list] = []  # open collections: [anchor, expanded size so far]
    total = 0

    def count(n: int, event) -> None:
        nonlocal total
        total += n
        if total > MAX_NODES:
            raise PlanInputError(
                f"more than {MAX_NODES:,} values once aliases are expanded (an alias bomb?)",
                source=source,
                field=_where(event.start_mark),
            )
        if stack:
            stack[-1][1] += n

    while loader.check_event():
        event = loader.get_event()
        if isinstance(event, yaml.AliasEvent):
            assert event.anchor is not None  # an alias event names its anchor (the parser's *name)
            if event.anchor not in sizes:
                raise PlanInputError(
                    f"alias *{event.anchor[:40]} refers to a collection that contains it or to no anchor",
                    source=source,
                    field=_where(event.start_mark),
                )
            count(sizes[event.anchor], event)
        elif isinstance(event, yaml.ScalarEvent):
            count(1, event)
            if event.anchor:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            count(1, event)
            stack.append([event.anchor, 1])
            if len(stack) > MAX_DEPTH:
                raise PlanInputError(f"nested more than {MAX_DEPTH} levels deep", source=source, field=_where(event.start_mark))
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, size = stack.pop()
            if anchor:
                sizes[anchor] = size
            if stack:
                stack[-1][1] += size - 1  # the collection's start was already counted into its parent


def _where(mark) -> str | None:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None


def parse_yaml(text: str, source: str | None = None) -> Any:
    """Parse one YAML document with the limits and strict rules of the module docstring."""
    import yaml

    Loader = _loader()
    try:
        scanner = Loader(text)
        try:
            _check_structure(scanner, source)
        finally:
            scanner.dispose()
        loader = Loader(text)
        try:
            return loader.get_single_data()
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. `!!int abc`, an explicit tag it cannot honour
            raise PlanInputError(
                f"malformed YAML: a value cannot be read as its tag says ({shorten(str(exc), 60)})", source=source
            ) from None
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise PlanInputError(f"malformed YAML: {problem}", source=source, field=_where(mark)) from None
    except RecursionError:  # pragma: no cover - refused by the depth check first
        raise PlanInputError(f"nested more than {MAX_DEPTH} levels deep", source=source) from None


def load_yaml_file(path: str | Path, max_bytes: int = MAX_PROFILE_BYTES) -> Any:
    """Read a YAML (or JSON, a YAML subset) file; errors name the file."""
    return parse_yaml(read_input_text(path, max_bytes), str(path))


# ---------------------------------------------------------------------------------------
# JSON


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(text.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
    return int(text)


def parse_json(text: str, source: str | None = None) -> Any:
    """Parse JSON with the depth, size and integer limits of the module docstring."""
    try:
        data = json.loads(text, parse_int=_json_int)
    except json.JSONDecodeError as exc:
        raise PlanInputError(
            f"malformed JSON: {exc.msg}", source=source, field=f"line {exc.lineno}, column {exc.colno}"
        ) from None
    except ValueError as exc:
        raise PlanInputError(f"malformed JSON: {exc}", source=source, field=_long_integer_at(text)) from None
    except RecursionError:
        raise PlanInputError(f"nested more than {MAX_DEPTH} levels deep", source=source) from None
    _check_json_shape(data, source)
    return data


def _long_integer_at(text: str) -> str | None:
    """'line L, column C' of the first integer literal longer than MAX_INT_DIGITS digits."""
    match = re.search(rf"(?<![\w.\"])-?\d{{{MAX_INT_DIGITS + 1},}}", text)
    if match is None:
        return None
    line = text.count("\n", 0, match.start()) + 1
    return f"line {line}, column {match.start() - (text.rfind(chr(10), 0, match.start()) + 1) + 1}"


def _check_json_shape(data: Any, source: str | None) -> None:
    """Depth and value count of parsed JSON, walked without recursion."""
    stack = [(data, 1)]
    count = 0
    while stack:
        value, depth = stack.pop()
        count += 1
        if count > MAX_NODES:
            raise PlanInputError(f"more than {MAX_NODES:,} values", source=source)
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise PlanInputError(f"nested more than {MAX_DEPTH} levels deep", source=source)
            items = value.values() if isinstance(value, dict) else value
            stack.extend((item, depth + 1) for item in items)


def load_json_file(path: str | Path, max_bytes: int = MAX_PROFILE_BYTES) -> Any:
    return parse_json(read_input_text(path, max_bytes), str(path))


def dump_yaml(data: Any) -> str:
    import yaml

    return yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100, allow_unicode=True)


# ---------------------------------------------------------------------------------------
# Output


class OutputFiles:
    """Every output file of one command, committed together.

    ``check(path, option)`` validates a destination before any work is done (an existing
    folder, not itself a folder); ``write(path, fn, option)`` writes through ``fn(temporary
    path)`` into a temporary file beside the target; ``commit()`` renames every temporary
    file over its target. Leaving the ``with`` block without ``commit()`` (an error) removes
    the temporary files and changes nothing.
    """

    def __init__(self) -> None:
        self._pending: list[tuple[str, Path, str]] = []

    def __enter__(self) -> OutputFiles:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        for tmp, _, _ in self._pending:
            Path(tmp).unlink(missing_ok=True)
        self._pending.clear()
        return False

    @staticmethod
    def check(path: str | Path, field: str = "path", inputs: Iterable[tuple[str | None, str]] = ()) -> None:
        """Refuse a destination that is not a usable file name: empty, ending in '/', a folder,
        not a regular file, in a folder that does not exist, or the same file (device and
        inode) as one of ``inputs`` ((path, what it is)) or as any input read so far inside
        ``track_inputs``."""
        raw = os.fspath(path)
        if not raw.strip():
            raise PlanInputError("an empty file name: give the file to write", field=field)
        if raw.endswith(("/", os.sep) + ((os.altsep,) if os.altsep else ())):
            raise PlanInputError("ends in '/', which names a folder: give a file name", source=raw, field=field)
        path = Path(raw)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            st = None
        except (OSError, ValueError) as exc:
            raise PlanInputError(f"cannot write here ({_reason(exc)})", source=str(path), field=field) from None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise PlanInputError("is a folder, not a file", source=str(path), field=field)
        directory = path.parent if str(path.parent) else Path(".")
        dst = file_status(directory)
        if dst is None or not stat.S_ISDIR(dst.st_mode):
            raise PlanInputError("output folder does not exist", source=str(path), field=field)
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise PlanInputError("exists and is not a regular file", source=str(path), field=field)
        if st is not None:
            _refuse_input(st, str(path), field, inputs)

    def write(self, path: str | Path, write: Callable[[str], object], field: str = "path") -> None:
        self.check(path, field)
        path = Path(path)
        try:
            fd, tmp = tempfile.mkstemp(
                prefix=f".{path.name[:64]}.", suffix=path.suffix[:16] or ".tmp", dir=path.parent if str(path.parent) else "."
            )
            os.close(fd)
        except OSError as exc:
            raise PlanInputError(f"cannot write here ({_reason(exc)})", source=str(path), field=field) from None
        self._pending.append((tmp, path, field))
        try:
            write(tmp)
            os.chmod(tmp, _mode_for(path))
        except OSError as exc:
            raise PlanInputError(f"cannot write ({_reason(exc)})", source=str(path), field=field) from None

    def write_text(self, path: str | Path, text: str, field: str = "path") -> None:
        self.write(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8", newline=""), field)

    def commit(self) -> None:
        for tmp, path, field in self._pending:
            try:
                os.replace(tmp, path)
            except OSError as exc:
                raise PlanInputError(f"cannot write ({_reason(exc)})", source=str(path), field=field) from None
        self._pending.clear()


def _refuse_input(st: os.stat_result, path: str, field: str, inputs: Iterable[tuple[str | None, str]]) -> None:
    """A PlanInputError if the existing output ``path`` (its ``st``) is one of the command's inputs."""
    key = (st.st_dev, st.st_ino)
    for given, what in inputs:
        other = file_status(given) if given else None
        if other is not None and (other.st_dev, other.st_ino) == key:
            raise PlanInputError(
                f"is {what} this command reads ({shorten(str(given), 60)}): write the output to another file",
                source=path,
                field=field,
            )
    if _inputs_read and key in _inputs_read:
        raise PlanInputError(
            f"is a file this command reads ({shorten(_inputs_read[key], 60)}): write the output to another file",
            source=path,
            field=field,
        )


def write_text_atomic(path: str | Path, text: str, field: str = "path") -> None:
    """Write ``text`` to ``path`` via a temporary file and an atomic rename."""
    write_atomic(path, lambda tmp: Path(tmp).write_text(text, encoding="utf-8", newline=""), field)


def write_atomic(path: str | Path, write: Callable[[str], object], field: str = "path") -> None:
    """Call ``write(temporary_path)``, then rename the result over ``path``; an unwritable
    destination is a PlanInputError and leaves any existing file untouched. The new file gets
    the usual permissions (those of the file it replaces, else 0666 less the umask)."""
    with OutputFiles() as out:
        out.write(path, write, field)
        out.commit()


def _mode_for(path: Path) -> int:
    st = file_status(path)
    if st is not None:
        return st.st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
