"""What a benchmark would publish for one instance: TTFT, TPOT, prefill and decode tokens/s,
end-to-end output tokens/s, and where the time of a prefill pass and a decode step goes.

For I input and O output tokens per request and C running requests (default: as many as
memory holds with each request's KV reserved for its whole length I + O, so that none is ever
evicted; steps read the KV at the mean decode context I + O / 2):

    TTFT            one prompt of I tokens on an idle instance (``RooflinePrefill.prefill_s``), on
                    the given layout or else the one that serves a lone prompt fastest; its chunks
                    of at most P tokens flow through the pp stages one behind the other, so
                    TTFT = sum of the chunks' stage times + (pp - 1) x the longest + overheads
                    (~ (chunks + pp - 1) x stage time for equal chunks)
    batch TTFT      C prompts started together on that layout (``RooflinePrefill.batch``): the
                    passes that carry them (floor(P / I) whole prompts a pass and attention group,
                    or each prompt in chunks when I > P) flow through the stages likewise; the
                    mean over the C prompts of the time to their first token, and the time
                    until the last one's (the batch's whole prefill)
    prefill tok/s   I / capacity_s(I), capacity_s the instance-seconds of one prompt in
                    saturated passes (``RooflinePrefill.capacity_s``), input tokens/s
    TPOT            one decode step at C requests, context I + O / 2, over the tokens a step
                    accepts (``timing.decode``)
    decode tok/s    C x mtp / step, output tokens/s; per user: mtp / step
    e2e tok/s       offline, prefill and decode on the same chips: each request costs
                    capacity_s(I) of prefill (which yields its first token) plus (O - 1) x step / (C x mtp)
                    of decode, so output tokens/s = O / (capacity_s(I) + (O - 1) x step / (C x mtp))
                    in the steady state, C at most what the token budget per pass leaves room
                    for (``_mixed_batch``);
                    with a number of requests N, N x O over the run of those N requests
                    (``timing.offline``: its ramp-up and drain included)
    at load         C requests in flight, a new one admitted as one ends (a closed loop: ``vllm bench
                    serve --max-concurrency C``; or an open loop with C in flight by Little's law):
                    the steady state of chunked-prefill scheduling (``timing.serving``), each step
                    the running decodes plus the newcomers' prompt chunks within the token budget:
                    TPOT at load = the mean step a request decodes in / mtp, TTFT at load = its
                    wait plus its chunks at the budget left beside the decodes (``LoadFigures``)
    e2e latency     of C requests started together (vLLM's ``benchmark_latency --batch-size C``):
                    the batch's whole prefill, then its decode,
                    batch prefill(C) + (O - 1) x TPOT(C)
                    (the prefill yields each request's first token; C = 1: TTFT + (O - 1) x TPOT)

A request holds at most I + O - 1 tokens of KV (its last token is returned, never attended
to), so I + O may exceed the model's context by one: a row at the model's full context (a
decode step at context = max context, I = context and O = 1) is accepted; memory is reserved
for min(I + O, max context) tokens.

Each figure has a range (``range_of``): the empirical band of its figure group on the instance's
engine (``timing.uncertainty``: leave-one-out residuals of published rows, not a guarantee),
``ESTIMATE_FIGURES`` naming the group and whether the figure is a rate or a time.

The prefill and decode layouts are the instance's when given, else each job's best layout
(``RooflinePrefill.layout``, ``decode.decode_layout``); the end-to-end throughput runs both on
the decode layout (one set of chips does both jobs), and so does a static batch (the e2e latency).
Per GPU figures divide by the chips.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..choices import CurveSource, EngineName, PrefillCapacity
from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from ..ranges import DECODE_BATCH, OFFLINE_REQUESTS, TOKENS
from .cost import PARTS, PassCost
from .decode import DecodeCapacity, decode_capacity, step_cost
from .instance import Instance
from .layout import Layout
from .offline import OfflineRun, offline_run
from .prefill import RooflinePrefill, measured_for, prefill_curve
from .serving import LoadFigures, load_figures
from .uncertainty import GROUPS, Band, band

# each figure of an Estimate: its figure group (``timing.uncertainty``) and 'rate' or 'time'
ESTIMATE_FIGURES = {
    "ttft_s": ("prefill", "time"),
    "prefill_tokens_per_s": ("prefill", "rate"),
    "tpot_s": ("decode", "time"),
    "decode_tokens_per_s": ("decode", "rate"),
    "per_user_tokens_per_s": ("decode", "rate"),
    "e2e_output_tokens_per_s": ("e2e", "rate"),
    "e2e_steady_output_tokens_per_s": ("e2e", "rate"),
    "e2e_latency_s": ("e2e", "time"),
    "ttft_at_load_s": ("prefill", "time"),
    "tpot_at_load_s": ("decode", "time"),
    "batch_prefill_s": ("prefill", "time"),
    "batch_ttft_s": ("prefill", "time"),
}


@dataclass(frozen=True)
class Budget:
    """Seconds of one pass split into parts, its binding part and the bytes a chip exchanges."""

    job: str  # 'first token', 'prefill pass' or 'decode step'
    layout: Layout
    tokens: float  # tokens the pass carries through the instance
    seconds: float
    compute_s: float
    memory_s: float
    communication_s: float
    overhead_s: float
    scale_up_bytes: float  # per chip, over NVLink or the scale-up fabric
    nic_bytes: float  # per chip, over the scale-out NIC

    @property
    def binding(self) -> str:
        """The part with the most time (``cost.PARTS`` order breaks ties, as ``PassCost.binding``)."""
        return max(PARTS, key=lambda part: getattr(self, f"{part}_s"))

    @classmethod
    def of(cls, job: str, layout: Layout, tokens: float, cost: PassCost) -> Budget:
        get = lambda a: float(np.asarray(a).reshape(-1)[0])  # noqa: E731
        return cls(
            job,
            layout,
            tokens,
            get(cost.total_s),
            get(cost.compute_s),
            get(cost.memory_s),
            get(cost.communication_s),
            get(cost.overhead_s),
            get(cost.scale_up_bytes),
            get(cost.nic_bytes),
        )


@dataclass(frozen=True)
class Estimate:
    model: str
    instance: str
    gpus: int
    input_tokens: int
    output_tokens: int
    concurrency: int  # running requests in decode
    concurrency_source: str  # 'given', 'memory' (the memory-limited batch) or 'tpot' / 'max_batch'
    ttft_s: float
    prefill_tokens_per_s: float  # input tokens/s of the instance, saturated
    tpot_s: float
    decode_tokens_per_s: float  # output tokens/s of the instance at the concurrency
    per_user_tokens_per_s: float
    e2e_output_tokens_per_s: float  # offline: prefill and decode on the same chips (the run of N when given)
    e2e_steady_output_tokens_per_s: float  # the same in the steady state (N unbounded)
    e2e_latency_s: float  # of `concurrency` requests started together: their whole prefill, then decode
    batch_prefill_s: float  # the prefill of `concurrency` prompts started together, until the last first token
    batch_ttft_s: float  # the mean time to first token of `concurrency` prompts started together
    first_token: Budget  # one prompt alone on the idle instance (the TTFT), on its own best layout
    prefill: Budget
    decode: Budget
    decode_capacity: DecodeCapacity
    offline: OfflineRun | None = None  # the run of a given number of requests
    engine: str = EngineName.generic  # the engine profile the instance is timed with, whose residuals give the bands
    kv_dtype: str = ""  # the KV cache dtype served (a precision override, the engine's choice, or the model's)
    bands: dict[str, Band] = field(default_factory=dict)  # figure group -> band (``timing.uncertainty``)
    load: LoadFigures = field(kw_only=True)  # `concurrency` requests in flight, one admitted as one ends (``timing.serving``)
    # the model profile's measured prefill of one prompt on this instance (the curve kv and plan use), where it has one
    measured_prefill_s: float | None = field(default=None, kw_only=True)
    # the chunks of one prompt: (initial chunk tokens, dynamic chunking's smooth factor given or None,
    # whether it applies: SGLang runs it only on a pipeline, pp > 1)
    chunking: tuple[int, float | None, bool] = field(default=(0, None, False), kw_only=True)

    @property
    def ttft_at_load_s(self) -> float:
        """TTFT of a request admitted into a load of `concurrency` in flight (``timing.serving``)."""
        return self.load.ttft_s

    @property
    def tpot_at_load_s(self) -> float:
        """Mean TPOT in a load of `concurrency` in flight, prompt chunks mixed into the steps."""
        return self.load.tpot_s

    def per_gpu(self, value: float) -> float:
        return value / self.gpus

    def range_of(self, figure: str) -> tuple[float, float]:
        """(low, high) of one of ``ESTIMATE_FIGURES``: a rate x the band's factors, a time / them."""
        group, orientation = ESTIMATE_FIGURES[figure]
        b, value = self.bands[group], getattr(self, figure)
        return b.rate(value) if orientation == "rate" else b.time(value)


def _mixed_batch(
    model: ModelProfile, instance: Instance, dec: DecodeCapacity, input_tokens: int, output_tokens: int, context: int
) -> tuple[float, float]:
    """(running requests, step seconds) of the offline steady state: the decode batch, at most what
    the token budget of a pass leaves room for when each of the g attention groups, per iteration,
    decodes q = ceil(mtp) tokens for each of its b requests and prefills the b / w prompts that
    replace the ones finishing (w = ceil((O - 1) / mtp) decode steps a request):
    b <= P / (q + I / w)."""
    mtp = dec.mtp_tokens_per_step
    window = math.ceil((output_tokens - 1) / mtp - 1e-9)
    if not window:
        return float(dec.batch_size), dec.step_s
    layout = dec.layout
    budget = instance.engine.prefill_tokens_per_pass
    room = layout.dp_attention * layout.replicas * budget / (math.ceil(mtp - 1e-9) + input_tokens / window)
    if room >= dec.batch_size:
        return float(dec.batch_size), dec.step_s
    seconds, _ = step_cost(model, instance.with_layout(layout), layout, [room], context)
    return room, float(seconds[0])


def estimate(
    model: ModelProfile,
    instance: Instance,
    input_tokens: int,
    output_tokens: int,
    concurrency: int | None = None,
    tpot_ms: float | None = None,
    max_batch: int | None = None,
    requests: int | None = None,
    load_concurrency: int | None = None,
) -> Estimate:
    """The figures of the module doc for one instance (``requests``: the end-to-end figure of an
    offline run of that many requests, else the steady state; ``load_concurrency``: the requests in
    flight of the serving load, when more than memory holds: the decodes are the ``concurrency``
    batch, the rest wait for a place, ``timing.serving``)."""
    TOKENS.check(input_tokens, "input")
    TOKENS.check(output_tokens, "output")
    if requests is not None:
        OFFLINE_REQUESTS.check(requests, "requests")
    context = input_tokens + output_tokens // 2
    held = input_tokens + output_tokens - 1  # the last token is never held
    if held > model.max_context_tokens:
        raise PlanInputError(
            f"{input_tokens:,} + {output_tokens:,} tokens hold {held:,} tokens of KV (the last output token is never "
            f"attended to), which exceeds {model.name}'s context of {model.max_context_tokens:,} tokens",
            field="input + output",
        )
    dec = decode_capacity(
        model,
        instance,
        context,
        tpot_ms=tpot_ms,
        max_batch=max_batch,
        batch=concurrency,
        reserve_tokens=min(input_tokens + output_tokens, model.max_context_tokens),
    )
    roof = RooflinePrefill(model, instance, capacity=PrefillCapacity.saturated, fit_tokens=input_tokens)
    at = np.array([float(input_tokens)])
    # TTFT: one prompt alone, on the instance's layout or else the layout that serves it fastest
    lone = (
        roof
        if instance.layout is not None
        else RooflinePrefill(model, instance, capacity=PrefillCapacity.per_request, fit_tokens=input_tokens)
    )
    ttft, single = lone.single_prompt(at)
    capacity_s = float(roof.capacity_s(at)[0])
    per_group, _, pass_cost = roof.saturated_pass(at)
    prompts = float(per_group[0]) * roof.layout.dp_attention
    # offline: both jobs on the decode layout
    mixed = RooflinePrefill(model, instance.with_layout(dec.layout), capacity=PrefillCapacity.saturated, fit_tokens=input_tokens)
    mixed_capacity_s = float(mixed.capacity_s(at)[0])
    burst = mixed.batch(input_tokens, dec.batch_size)  # a static batch: its prefill on the chips that decode it
    step = dec.step_s
    mixed_batch, mixed_step = _mixed_batch(model, instance, dec, input_tokens, output_tokens, context)
    e2e = output_tokens / (mixed_capacity_s + (output_tokens - 1) * mixed_step / (mixed_batch * dec.mtp_tokens_per_step))
    tpot = step / dec.mtp_tokens_per_step
    if not (np.isfinite(e2e) and e2e > 0 and capacity_s > 0):
        raise PlanInputError(f"{model.name} on {instance.label} has no capacity at these lengths", field="gpus")
    run = (
        None
        if requests is None
        else offline_run(
            model,
            instance.with_layout(dec.layout),
            dec.layout,
            input_tokens,
            output_tokens,
            requests,
            dec.batch_size,
            mixed_capacity_s,
            context,
        )
    )
    engine = str(instance.engine.name)
    limit = instance.engine.max_batch and instance.engine.max_batch * dec.layout.dp_attention * dec.layout.replicas
    cap = min(x for x in (dec.bs_max_memory, limit, max_batch, int(DECODE_BATCH.hi)) if x)
    load = load_figures(
        model,
        instance.with_layout(dec.layout),
        dec.layout,
        input_tokens,
        output_tokens,
        max(load_concurrency or 0, dec.batch_size),
        max(cap, dec.batch_size),
        context,
    )
    return Estimate(
        model=model.name,
        instance=instance.label,
        gpus=instance.gpus,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        concurrency=dec.batch_size,
        concurrency_source="given" if concurrency is not None else str(dec.limited_by),
        ttft_s=float(ttft[0]),
        prefill_tokens_per_s=input_tokens / capacity_s,
        tpot_s=tpot,
        decode_tokens_per_s=dec.tokens_per_s,
        per_user_tokens_per_s=1.0 / tpot,
        e2e_output_tokens_per_s=e2e if run is None else run.output_tokens_per_s,
        e2e_steady_output_tokens_per_s=e2e,
        e2e_latency_s=burst.seconds + (output_tokens - 1) * tpot,
        batch_prefill_s=burst.seconds,
        batch_ttft_s=burst.mean_first_token_s,
        first_token=Budget.of("first token", lone.layout, float(input_tokens), single),
        prefill=Budget.of("prefill pass", roof.layout, prompts * input_tokens * roof.layout.replicas, pass_cost),
        decode=Budget.of("decode step", dec.layout, float(dec.batch_size), dec.cost),
        decode_capacity=dec,
        offline=run,
        engine=engine,
        kv_dtype=str(model.dtypes.kv),
        bands={group: band(group, engine) for group in GROUPS},
        load=load,
        measured_prefill_s=_measured_prefill_s(model, instance, input_tokens),
        chunking=(
            instance.engine.prefill_tokens_per_pass,
            instance.engine.dynamic_chunking if instance.engine.chunked_prefill else None,
            lone.layout.pp > 1,
        ),
    )


def _measured_prefill_s(model: ModelProfile, instance: Instance, input_tokens: int) -> float | None:
    """One prompt's prefill on the model profile's measured points for this instance (PCHIP, as
    ``kv`` and ``plan`` time it), or None without them: estimate's own figures are the roofline's."""
    measured = measured_for(model, instance)
    if measured is None or not measured.prefill:
        return None
    curve = prefill_curve(model, instance, CurveSource.measured, PrefillCapacity.per_request)
    return float(curve.prefill_s([float(input_tokens)])[0])
