"""A trace file in blocks of whole lines, for the vectorised readers.

Each block is at most about ``BLOCK_BYTES`` of bytes ending at a line end, with the 1-based
number of its first line, so that a reader parses a block at once (NumPy, a regular
expression) and only a block that fails is read line by line to name the bad line. Memory
is one block, whatever the file's size. Only regular files of at most
``ranges.MAX_TRACE_BYTES`` are read; a UTF-8 byte-order mark is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ...errors import PlanInputError
from ...ranges import MAX_TRACE_BYTES
from ...yamlio import read_input_bytes

BLOCK_BYTES = 2 * 2**20
_BOM = b"\xef\xbb\xbf"


def checked_file(path: str | Path) -> str:
    """``path`` as a source name, once it is known to be a regular file within the limit."""
    source = str(path)
    read_input_bytes(path, MAX_TRACE_BYTES, source=source, limit_read=0)
    return source


def blocks(path: str | Path, source: str, block_bytes: int = BLOCK_BYTES) -> Iterator[tuple[int, bytes]]:
    """(number of the first line, bytes of whole lines) for the file's blocks, in order."""
    line = 1
    rest = b""
    try:
        with open(path, "rb") as handle:
            first = True
            while True:
                data = handle.read(block_bytes)
                if first:
                    data, first = data.removeprefix(_BOM), False
                if not data:
                    break
                data = rest + data
                cut = data.rfind(b"\n") + 1
                if cut == 0:  # no line end yet: keep reading
                    rest = data
                    continue
                block, rest = data[:cut], data[cut:]
                yield line, block
                line += block.count(b"\n")
    except OSError as exc:
        raise PlanInputError(f"cannot read file ({exc.strerror or exc.__class__.__name__})", source=source) from None
    if rest:
        yield line, rest + b"\n"


def count_lines(path: str | Path, source: str) -> int:
    """Lines of the file (a last line without a line end counts)."""
    return sum(block.count(b"\n") for _, block in blocks(path, source))


def first_line(path: str | Path, source: str) -> tuple[int, bytes]:
    """(1-based number, content without its line end) of the first non-blank line."""
    for start, block in blocks(path, source, 2**16):
        for offset, text in enumerate(block.split(b"\n")):
            if text.strip():
                return start + offset, text.strip()
    raise PlanInputError("empty trace (no rows)", source=source)


def numbered(start: int, block: bytes) -> Iterator[tuple[int, bytes]]:
    """(line number, content) of the block's non-blank lines (CR line ends dropped)."""
    for offset, text in enumerate(block.split(b"\n")[:-1]):
        text = text.rstrip(b"\r")
        if text.strip():
            yield start + offset, text
