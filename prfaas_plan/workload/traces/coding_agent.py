"""The GitHub Copilot coding-agent traces 2026 (Azure/AzurePublicDataset,
``GitHubCopilotCodingAgentDataset2026.md`` and ``analysis/GitHubCopilotCodingAgents/schema.json``,
CC-BY): one JSON session a line, ``{"session_id", "date", "turns": [{"llm_calls": [{"timestamp":
ISO 8601, "tokens": {"prompt", "completion", "cached", ...}, ...}], ...}]}``. Each LLM call is a
request: input ``prompt``, output ``completion``, cached prefix ``cached`` (of the prompt). The
sessions interleave in time, so the calls are sorted by arrival. (The release is gzipped;
decompress a shard first.) Sessions are parsed with ``json.loads`` a line: a shard of ~40,000
sessions is read in seconds."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from ...choices import TraceFormat
from ...errors import PlanInputError, shorten
from .blocks import blocks, checked_file, numbered
from .json_value import load_json
from .record import Trace, check_tokens, finish

TOKEN_FIELDS = ("prompt", "completion", "cached")


def read(path: str | Path) -> Trace:
    """Arrival ``timestamp`` (s since the first call), input ``prompt``, output ``completion``,
    cached ``cached`` of every LLM call of every session."""
    source = checked_file(path)
    times: list[float] = []
    tokens: list[tuple[float, float, float]] = []
    lines: list[str] = []  # where each call is, for errors found after reading
    for start, block in blocks(path, source):
        for number, raw in numbered(start, block):
            _session(raw, f"line {number}", source, times, tokens, lines)
    if not times:
        raise PlanInputError("no LLM calls in the sessions", source=source)
    table = np.array(tokens, dtype=np.float64)

    def where(row: int) -> tuple[str, str]:
        return source, lines[row]

    check_tokens({"prompt": (table[:, 0], 1), "completion": (table[:, 1], 0), "cached": (table[:, 2], 0)}, where)
    over = table[:, 2] > table[:, 0]
    if over.any():
        row = int(np.argmax(over))
        raise PlanInputError(
            f"cached {table[row, 2]:g} exceeds the prompt's {table[row, 0]:g} tokens", source=source, field=lines[row]
        )
    return finish(source, TraceFormat.coding_agent, np.array(times), table[:, 0], table[:, 1], table[:, 2])


def _session(raw: bytes, where: str, source: str, times: list, tokens: list, lines: list) -> None:
    """Append the session's calls (arrival s since the epoch, (prompt, completion, cached))."""
    session = load_json(raw, source, where, "a JSON object")
    turns = session.get("turns") if isinstance(session, dict) else None
    if not isinstance(turns, list):
        raise PlanInputError("not a session (no 'turns' list)", source=source, field=where)
    for t, turn in enumerate(turns):
        calls = turn.get("llm_calls") if isinstance(turn, dict) else None
        if not isinstance(calls, list):
            raise PlanInputError(f"turns[{t}]: no 'llm_calls' list", source=source, field=where)
        for c, call in enumerate(calls):
            path = f"turns[{t}].llm_calls[{c}]"
            if not isinstance(call, dict) or not isinstance(call.get("tokens"), dict):
                raise PlanInputError(f"{path}: no 'tokens' object", source=source, field=where)
            counts = []
            for name in TOKEN_FIELDS:
                value = call["tokens"].get(name)
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise PlanInputError(
                        f"{path}.tokens.{name}: {shorten(repr(value), 40)} is not a number", source=source, field=where
                    )
                counts.append(_float(value, f"{path}.tokens.{name}", source, where))
            stamp = call.get("timestamp")
            try:
                moment = datetime.fromisoformat(stamp) if isinstance(stamp, str) else None
            except ValueError:
                moment = None
            if moment is None:
                raise PlanInputError(
                    f"{path}.timestamp: {shorten(repr(stamp), 40)} is not an ISO 8601 time", source=source, field=where
                )
            if moment.tzinfo is None:  # the release's times are UTC
                moment = moment.replace(tzinfo=UTC)
            times.append(moment.timestamp())
            tokens.append(tuple(counts))
            lines.append(f"{where}: {path}")


def _float(value: float, name: str, source: str, where: str) -> float:
    """``value`` as a float; an integer too long for one (over ~1e308) is refused."""
    try:
        return float(value)
    except OverflowError:
        raise PlanInputError(
            f"{name}: an integer of {len(str(abs(int(value))))} digits is too large", source=source, field=where
        ) from None
