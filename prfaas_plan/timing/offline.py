"""An offline benchmark of a finite number of requests: N requests of I input and O output tokens
queued at once on one instance, run to the last token, as ``trtllm-bench throughput``,
``vllm bench throughput`` and MLPerf Offline run them. Their published throughput is the output
tokens over the whole run (first request admitted to last token), so it counts the ramp-up while
the running batch fills and the drain while the last requests finish; the steady-state figure
(``timing.estimate``: O / (capacity_s(I) + (O - 1) x step(C) / (C x mtp))) is its limit as N grows.

The engine runs iterations. In each, every attention group (g = dp_attention x replicas of them,
each holding N / g of the requests) decodes the b requests it runs and admits new prompts:

    admitted  = min(waiting, C / g - b, (P - q b) / I)          with chunked prefill
              = min(waiting, C / g - b, floor((P - q b) / I))   without (whole prompts only; P >= I)

with C the instance's concurrency limit (memory, or the engine's batch limit), P its token budget
per pass and group (``engine.prefill_tokens_per_pass``) and q = ceil(mtp) the query tokens a
running request decodes per step (they share the budget; mtp: the tokens a step accepts). An
admitted request produces its first token in that iteration (the prefill's) and decodes
ceil((O - 1) / mtp) more.
The run takes

    seconds = N x capacity_s(I) + sum over iterations of step_s(g x b)

(prefill charged at its saturated-pass cost, as in the steady state, and each iteration's decode
step at its batch, ``timing.decode.step_cost``, at the context the steady state uses), so the loss
against the steady state is the steps run below its batch. Iterations are counted one by one; a
run that needs more than ``MAX_ITERATIONS`` is refused before counting when a lower bound
(N / g x (decode steps + 1) / the most requests a group can run) already exceeds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from .decode import step_cost
from .instance import Instance
from .layout import Layout

MAX_ITERATIONS = 2_000_000  # about 4 s of counting here; a larger run is refused, not waited for


@dataclass(frozen=True)
class OfflineRun:
    requests: int
    seconds: float  # first admission to the last token
    iterations: int
    mean_batch_requests: float  # running requests per iteration, over the instance
    output_tokens_per_s: float  # N x O / seconds, per instance


def batch_per_iteration(
    requests_per_group: float,
    concurrency_per_group: float,
    input_tokens: int,
    output_tokens: int,
    budget_tokens: int,
    chunked: bool,
    mtp_tokens_per_step: float = 1.0,
) -> np.ndarray:
    """Requests decoding in each iteration in one attention group (the module doc's admission rule);
    a request decodes ceil((O - 1) / mtp) steps after its first token."""
    if not chunked and input_tokens > budget_tokens:
        raise PlanInputError(
            f"without chunked prefill a pass must hold a whole prompt: {input_tokens:,} tokens is more "
            f"than the budget of {budget_tokens:,}",
            field="prefill_tokens_per_pass",
        )
    waiting = float(requests_per_group)
    window = math.ceil((output_tokens - 1) / mtp_tokens_per_step - 1e-9)  # decode iterations after the first token
    query = math.ceil(mtp_tokens_per_step - 1e-9)  # tokens a running request takes of a pass's budget
    most_running = min(concurrency_per_group, budget_tokens / query) if window else concurrency_per_group
    if waiting * (window + 1) / max(most_running, 1e-9) > MAX_ITERATIONS:
        raise PlanInputError(
            f"an offline run of these requests takes more than {MAX_ITERATIONS:,} iterations; give fewer requests",
            field="requests",
        )
    admitted: list[float] = []
    batch: list[float] = []
    running = 0.0  # admitted in the last `window` iterations: decoding now
    while True:
        if window and len(admitted) > window:
            running -= admitted[-window - 1]  # admitted at k - O: its last decode was iteration k - 1
        if waiting <= 1e-9 and running <= 1e-9:
            break
        if len(batch) >= MAX_ITERATIONS:
            raise PlanInputError(
                f"an offline run of these requests takes more than {MAX_ITERATIONS:,} iterations; give fewer requests",
                field="requests",
            )
        room = max(budget_tokens - query * running, 0.0) / input_tokens
        if not chunked:
            room = math.floor(room + 1e-9)
        a = max(min(waiting, concurrency_per_group - running, room), 0.0)
        waiting -= a
        batch.append(running)
        admitted.append(a)
        if window:
            running += a
        if a <= 0 and running <= 1e-9 and waiting > 1e-9:
            raise PlanInputError("the concurrency limit or the token budget admits no request", field="concurrency")
    return np.asarray(batch)


def offline_run(
    model: ModelProfile,
    instance: Instance,
    layout: Layout,
    input_tokens: int,
    output_tokens: int,
    requests: int,
    concurrency: int,
    capacity_s: float,
    context_tokens: float,
) -> OfflineRun:
    """The run of the module doc on ``layout`` with at most ``concurrency`` running requests;
    ``capacity_s`` is the instance-seconds of prefill one request costs (saturated passes) and
    decode steps read the KV at ``context_tokens``."""
    groups = layout.dp_attention * layout.replicas
    engine = instance.engine
    batch = batch_per_iteration(
        requests / groups,
        concurrency / groups,
        input_tokens,
        output_tokens,
        engine.prefill_tokens_per_pass,
        engine.chunked_prefill,
        engine.mtp_tokens_per_step,
    )
    sizes, where = np.unique(np.round(batch * groups, 6), return_inverse=True)
    seconds_at, _ = step_cost(model, instance, layout, np.maximum(sizes, 1e-9), context_tokens)
    seconds_at = np.where(sizes > 0, seconds_at, 0.0)
    total = requests * capacity_s + float(seconds_at[where].sum())
    return OfflineRun(
        requests=requests,
        seconds=total,
        iterations=int(batch.size),
        mean_batch_requests=float(batch.mean() * groups),
        output_tokens_per_s=requests * output_tokens / total,
    )
