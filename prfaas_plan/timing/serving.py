"""A serving benchmark under load: C requests in flight, each new one admitted when one ends (a
closed loop: ``vllm bench serve --max-concurrency C``, ``genai-perf --concurrency``,
``trtllm-bench --concurrency``, SGLang ``bench_serving``), or an open loop whose requests in
flight, counted by Little's law, are C (MLPerf Server). The steady state of an iteration-level
scheduler with chunked prefill (Sarathi-Serve, Agrawal et al., OSDI 2024; vLLM V1's scheduler:
running requests first, then waiting prompts in arrival order, within one token budget a step):
each step carries the running decodes and, in what the token budget P leaves beside them, the
chunks of the prompts that wait.

Per scheduler (an attention group: C / (replicas x dp_attention) of the requests, its own budget
P, ``Engine.prefill_tokens_per_pass``), with I prompt and O output tokens a request, m tokens
accepted a decode step (MTP; q = ceil(m) query tokens a request a step), w = ceil((O - 1) / m)
decode steps a request (its first token comes with its prompt's last chunk):

    d        running decodes a step; lambda = d / w requests end, and as many are admitted, a step
    r        = P - d q, the budget left for prompts a step
    n        steps a prompt's prefill takes: ceil(I / r) chunks of r (chunked prefill), or 1 whole
             prompt (without chunked prefill the prompt is never split)
    d        = min(c w / (w + n), d_mem, d_full): Little's law on a cycle of n prefill and w decode
             steps (c = d + lambda n), at most what memory and the engine hold (d_mem), and at most
             d_full = P / (q + I / w), where the prompts' tokens a step, lambda I, fill what the
             budget leaves (prefill-bound: prompts queue)
    k        prompts a step carries: with whole prompts min(max(lambda, 1), floor(r / I)), with
             chunks 1
    seen by one request (the others are c - 1, of which d (c - 1) / c decode): while it decodes,
             d_dec = d + 1 - d / c decodes a step (itself and the others), and the others'
             newcomers, lambda (c - 1) / c a step, make f = min(1, lambda (c - 1) / c x n / k) of
             its steps "mixed"; while its own prompt runs, d_pre = d (c - 1) / c decodes ride
             along, which leave r = P - d_pre q for its chunks
    t_mix,j  a step of d_dec decodes plus k prompts' chunk j (at its place j r in the prompt:
             its attention reads the chunks before it), weights read once (``mixed_step_cost``)
    t_dec    a step of d_dec decodes alone (``decode.step_cost``)
    step     = f x mean_j t_mix,j + (1 - f) x t_dec, the mean step a request decodes in (seconds)
    TPOT     = step / m: a request's decode steps are a sample of the steps, mixed ones included
             (vLLM's mean TPOT, MLPerf's mean time per output token)
    ITL p50  = (t_dec when fewer than half its steps are mixed, f < 1/2, else mean_j t_mix,j) / m:
             the median gap between tokens (vLLM's median ITL)
    TTFT     = (waiting steps) x step + sum_j t_pre,j + prefill_overhead_s, t_pre,j a step of
             d_pre decodes and the newcomer's chunk j: it waits (c - d) w / d - n steps before its
             first chunk (Little's law: c - d requests are not decoding, lambda arrive a step),
             0 when the scheduler keeps up (d = c w / (w + n))
    a step that carries prompts pays max(decode_step_overhead_s, prefill_pass_overhead_s) (the
    scheduler's iteration does both jobs) plus the engine's step_overhead_s, a decode step alone
    decode_step_overhead_s plus the engine's

C = 1: d_dec = 1, d_pre = 0, f = 0: TPOT is the decode step at batch 1 (``decode.step_cost``, the
idle instance's TPOT) and TTFT the lone prompt's chunks one step each.

A static batch (``e2e_latency``, vLLM ``benchmark_latency``, SGLang ``bench_one_batch``) is not
this: its B prompts start together, all are prefilled first (``prefill.RooflinePrefill.batch``),
then B decode at once without prompts mixed in (``estimate``: batch TTFT, TPOT at B).

An open loop (Poisson arrivals at the rate of the run) is given the same mean figures: the
steady state of the mean step depends on the requests in flight, not on how arrivals spread;
the queueing that bursts of arrivals add to TTFT is not modelled. A pipeline of pp stages runs
the step as pp micro-batches of d / pp decodes and 1 / pp of the step's prompt tokens each.
Mixed steps time the prompts' attention core at the decode kernels' engine multipliers (one
attention kernel serves both in vLLM V1 and SGLang).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..accounting.work import Work, prefill_work
from ..profiles.model import ModelProfile
from .cost import PassCost, stage_cost
from .decode import _step_work, step_cost
from .instance import Instance
from .layout import Layout

ADDITIVE = ("tokens", "mixer_flops", "attention_flops", "kv_bytes", "dense_flops", "expert_flops", "activation_bytes")


@dataclass(frozen=True)
class LoadFigures:
    """The steady state of a serving load at ``concurrency`` (module doc), per instance."""

    concurrency: int  # requests in flight, the instance's
    decodes: float  # d x schedulers: running decodes a step, the instance's
    prompt_tokens_per_step: float  # lambda I per scheduler x schedulers, the mean over steps
    prefill_steps: int  # n: steps a newcomer's prompt takes
    mixed_fraction: float  # f: share of steps that carry prompts
    prefill_bound: bool  # prompts queue for the budget (d = d_full) or for memory (d = d_mem)
    decode_step_s: float  # t_dec
    mixed_step_s: float  # mean_j t_mix,j
    step_s: float  # the mean step
    tpot_s: float  # step / m
    itl_median_s: float
    ttft_s: float


def _merge(a: Work, b: Work, scale: float) -> Work:
    """One layer's work of ``a`` plus ``scale`` x ``b`` in one pass: the additive terms add, the
    weights (read once) and the kernels are ``a``'s; the sequential steps of a chunked
    linear-attention prefill are the prompt's (``b``): its chunks still run one after another."""
    return replace(
        a,
        **{f: getattr(a, f) + scale * getattr(b, f) for f in ADDITIVE},
        sequential_steps=np.maximum(a.sequential_steps, b.sequential_steps),
    )


def mixed_step_cost(
    model: ModelProfile,
    instance: Instance,
    layout: Layout,
    decodes: float,
    context_tokens: float,
    chunk_tokens,
    prefix_tokens,
    prompts: float = 1.0,
) -> tuple[np.ndarray, PassCost]:
    """(seconds, split) of one step of ``decodes`` running requests (the instance's, at the context)
    plus, in each attention group, ``prompts`` prompts' chunk of ``chunk_tokens`` after
    ``prefix_tokens`` (arrays: one step per chunk); decodes spread as in ``decode.step_cost``,
    and each of the pp micro-batches carries 1 / pp of the prompt tokens. No prompt: the decode step."""
    chunk = np.atleast_1d(np.asarray(chunk_tokens, dtype=float))
    prefix = np.broadcast_to(np.asarray(prefix_tokens, dtype=float), chunk.shape)
    per_replica = decodes / layout.replicas
    micro = max(max(per_replica / layout.pp, min(per_replica, 1.0)), 1e-9)
    engine = instance.engine
    dec = _step_work(model, np.full(chunk.shape, micro), context_tokens, engine.mtp_tokens_per_step)
    pre = prefill_work(model, chunk, prefix)
    # the prompts of every attention group of the replica, split over its pp micro-batches
    scale = prompts * layout.dp_attention / layout.pp
    groups = [(count, _merge(w, p, scale)) for (count, w), (_, p) in zip(dec, pre)]
    parts = stage_cost(model, instance.hardware, layout, engine, groups).scaled(layout.pp)
    eff = instance.hardware.efficiency
    overhead = max(eff.decode_step_overhead_s, eff.prefill_pass_overhead_s) + engine.step_overhead_s
    parts = parts.add(PassCost(*(np.zeros_like(chunk),) * 3, np.full(chunk.shape, overhead), *(np.zeros_like(chunk),) * 2))
    return parts.total_s, parts


def load_figures(
    model: ModelProfile,
    instance: Instance,
    layout: Layout,
    input_tokens: int,
    output_tokens: int,
    concurrency: int,
    decode_cap: int,
    context_tokens: float,
) -> LoadFigures:
    """The steady state at ``concurrency`` requests in flight on ``layout`` (module doc); at most
    ``decode_cap`` of them decode (the instance's: memory and the engine's batch limit)."""
    engine = instance.engine
    schedulers = layout.replicas * layout.dp_attention
    c = concurrency / schedulers
    cap = max(decode_cap / schedulers, 1.0 / schedulers)
    budget, mtp = float(engine.prefill_tokens_per_pass), engine.mtp_tokens_per_step
    q = math.ceil(mtp - 1e-9)
    w = max(math.ceil((output_tokens - 1) / mtp - 1e-9), 1)
    I = float(input_tokens)

    def chunks(d: float) -> tuple[int, float]:
        """(n, r): steps of a prompt and the budget a step leaves for prompts beside d decodes."""
        room = max(budget - d * q, 1.0)
        return (math.ceil(I / room) if engine.chunked_prefill else 1), room

    full = budget / (q + I / w)  # prompt tokens a step fill the budget beside the decodes
    d = min(c, cap, full)
    for _ in range(16):  # the fixed point of d = c w / (w + n(d)); n(d) grows with d, so it settles
        n, _ = chunks(d * (c - 1) / c)
        d_next = min(c * w / (w + n), cap, full)
        if abs(d_next - d) < 1e-9:
            break
        d = d_next
    d_pre = d * (c - 1) / c
    d_dec = min(1 + d_pre, max(cap, 1.0))
    n, room = chunks(d_pre)
    arrivals = d / w  # per scheduler and step
    if engine.chunked_prefill and I > room:
        k = 1.0
        sizes = np.minimum(room, I - np.arange(n) * room)
        prefixes = np.arange(n) * room
    else:  # whole prompts, as many as arrive a step (at least one, at most what the budget holds)
        k = min(max(arrivals, 1.0), max(math.floor(room / I), 1.0))
        sizes, prefixes = np.array([I]), np.array([0.0])
    mixed_fraction = min(1.0, arrivals * (c - 1) / c * n / k)
    t_mix, _ = mixed_step_cost(model, instance, layout, d_dec * schedulers, context_tokens, sizes, prefixes, k)
    t_pre, _ = mixed_step_cost(model, instance, layout, d_pre * schedulers, context_tokens, sizes, prefixes, k)
    t_dec = float(step_cost(model, instance, layout, [d_dec * schedulers], context_tokens)[0][0])
    mixed = float(np.mean(t_mix))
    step = mixed_fraction * mixed + (1 - mixed_fraction) * t_dec
    wait_steps = max((c - d) * w / d - n, 0.0)
    ttft = wait_steps * step + float(np.sum(t_pre)) + instance.hardware.efficiency.prefill_overhead_s
    return LoadFigures(
        concurrency=concurrency,
        decodes=d * schedulers,
        prompt_tokens_per_step=arrivals * I * schedulers,
        prefill_steps=n,
        mixed_fraction=mixed_fraction,
        prefill_bound=d < c * w / (w + n) - 1e-9,
        decode_step_s=t_dec,
        mixed_step_s=mixed,
        step_s=step,
        tpot_s=step / mtp,
        itl_median_s=(t_dec if mixed_fraction < 0.5 else mixed) / mtp,
        ttft_s=ttft,
    )
