"""The PD-D stage: N_d decode instances of ``batch_size`` slots each, fed by one FIFO queue.

Model. A request waits (FIFO) until some instance has a free slot, then joins the
least-loaded instance (fewest running requests). If that instance then runs b requests
(itself included), the request's time per output token is TPOT = T_step(b)
(``DecodeModel.step_s``) and it holds its slot for output_tokens * T_step(b) seconds.
The batch is frozen at the request's start: later arrivals and departures on the same
instance do not change its TPOT (a simplification; the instance's mean throughput still
follows T_step at its typical occupancy).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import simpy

from ..planner.decode_model import DecodeModel


class DecodePool:
    def __init__(self, env: simpy.Environment, instances: int, decode: DecodeModel):
        self._env = env
        self._slots = simpy.Resource(env, capacity=instances * decode.batch_size)
        self._running = [0] * instances  # requests per instance
        self._step_s = [float(s) for s in decode.step_s_by_batch]  # T_step(b) at index b - 1

    @property
    def queue_length(self) -> int:
        """Requests waiting for a slot."""
        return len(self._slots.queue)

    def serve(self, output_tokens: float) -> Generator[simpy.Event, Any, float]:
        """SimPy sub-process (``yield from``): wait for a slot, decode, free it; returns TPOT in seconds."""
        request = self._slots.request()
        yield request
        running = self._running
        instance = min(range(len(running)), key=running.__getitem__)
        running[instance] += 1
        tpot_s = self._step_s[running[instance] - 1]
        yield self._env.timeout(output_tokens * tpot_s)
        running[instance] -= 1
        self._slots.release(request)
        return tpot_s
