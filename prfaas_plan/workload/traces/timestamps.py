"""Date-time cells of a CSV trace (Azure's ``TIMESTAMP``) as UTC seconds, checked and vectorised.

A cell must read ``YYYY-MM-DD[T ]HH:MM:SS[.fraction][Z|±HH:MM|±HHMM]`` (ISO 8601 with a space
allowed between date and time, as the Azure releases write it); each row's own offset is
applied (a file may mix rows with and without one), an offset being at most 14:00 (UTC+14,
the furthest zone) with minutes < 60. The layout is checked on the cells' code points as a matrix
(NumPy, no Python loop per row); NumPy's ``datetime64`` parser then checks the calendar.
A bare epoch number (``1700000000``) or a date alone is refused, not read as a year.
"""

from __future__ import annotations

import numpy as np

MAX_OFFSET_MIN = 14 * 60  # UTC+14 (Line Islands) and UTC-12 are the furthest zones
_DIGITS = (0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18)  # of YYYY-MM-DD HH:MM:SS
_SEPARATORS = {4: b"-", 7: b"-", 13: b":", 16: b":"}
_STEM = 19  # characters of YYYY-MM-DD HH:MM:SS
_PAD = 8  # zero columns after the widest cell in a padded copy (``_codes``)
_BLANKS = (ord(" "), ord("\t"), ord("\r"))
FORMAT = "YYYY-MM-DD HH:MM:SS[.fraction][Z|+HH:MM]"


def utc_ns(cells: np.ndarray) -> np.ndarray:
    """Nanoseconds since 1970-01-01 UTC of each date-time string (int64, exact), each row's
    offset subtracted: local = UTC + offset. Raises ValueError (its reason) for the first bad cell."""
    text = np.ascontiguousarray(cells if cells.dtype.kind == "U" else cells.astype(str))
    n = text.size
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    m, length, last = _codes(text)
    rows = np.arange(n)
    ends = m[rows, np.maximum(length - 1, 0)]
    if np.isin(m[:, 0], _BLANKS).any() or np.isin(ends, _BLANKS).any():  # blanks around a cell: strip them first
        text = np.ascontiguousarray(np.char.strip(text))
        m, length, last = _codes(text)
    digit = (m >= ord("0")) & (m <= ord("9"))
    ok = length >= _STEM
    ok &= digit[:, _DIGITS].all(axis=1)
    for column, char in _SEPARATORS.items():
        ok &= m[:, column] == ord(char)
    ok &= (m[:, 10] == ord("T")) | (m[:, 10] == ord(" "))
    # a fraction: '.' then at least one digit; the suffix starts at the first non-digit after it
    dot = m[:, _STEM] == ord(".")
    first_other = _STEM + 1 + np.argmin(digit[:, _STEM + 1 :], axis=1)  # a zero pad column ends every row
    ok &= ~dot | (first_other > _STEM + 1)
    start = np.where(dot, first_other, _STEM)
    tail = length - start  # characters of the suffix: 0, 1 (Z), 5 (+HHMM) or 6 (+HH:MM)

    def at(k):  # each row's k-th character of its suffix (a zero pad byte past its end)
        return m[rows, np.minimum(start + k, last)]

    def is_digit(k):
        return digit[rows, np.minimum(start + k, last)]

    sign = (at(0) == ord("+")) | (at(0) == ord("-"))
    colon = tail == 6
    minute_at = np.where(colon, 4, 3)
    numeric = sign & is_digit(1) & is_digit(2) & ((tail == 5) | (colon & (at(3) == ord(":"))))
    numeric &= is_digit(minute_at) & is_digit(minute_at + 1)
    zulu = (tail == 1) & (at(0) == ord("Z"))
    ok &= (tail == 0) | zulu | (numeric & ((tail == 5) | colon))
    if not ok.all():
        raise ValueError(f"not {FORMAT}")

    def value(k):
        return at(k).astype(np.int64) - ord("0")

    hours = np.where(numeric, value(1) * 10 + value(2), 0)
    minutes = np.where(numeric, value(minute_at) * 10 + value(minute_at + 1), 0)
    bad = (minutes >= 60) | (hours * 60 + minutes > MAX_OFFSET_MIN)
    if bad.any():
        row = int(np.argmax(bad))
        shown = "".join(map(chr, m[row, start[row] : length[row]].tolist()))
        raise ValueError(f"offset {shown} is not a UTC offset of at most 14:00 with minutes below 60")
    offset_ns = np.where(at(0) == ord("-"), -1, 1) * (hours * 3600 + minutes * 60) * 10**9
    stem = text
    if (tail > 0).any():  # the stem and fraction only (NumPy's parser takes the space, not an offset)
        cut = np.where(np.arange(last + 1)[None, :] >= start[:, None], 0, m)
        stem = np.ascontiguousarray(cut).view(f"U{last + 1}").ravel()
    stamps = stem.astype("datetime64[ns]")  # raises ValueError for a day or time out of range
    if np.isnat(stamps).any():
        raise ValueError(f"not {FORMAT}")
    return stamps.astype(np.int64) - offset_ns


def _codes(text: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """(code points of each cell, one row each; lengths; the last column) of a contiguous
    ``str`` array: NumPy's UCS-4 ``U`` dtype viewed as uint32 (no copy), or a zero-padded copy
    where some cell fills the width (every row must end in a zero column)."""
    chars = text.dtype.itemsize // 4
    m = text.view(np.uint32).reshape(text.size, chars)
    length = np.char.str_len(text)
    if chars < _STEM + 2 or int(length.max()) >= chars:
        padded = np.zeros((text.size, max(chars, _STEM + 2) + _PAD), dtype=np.uint32)
        padded[:, :chars] = m
        m = padded
    return m, length, m.shape[1] - 1
