"""T_prefill(l), S_kv(l) and Phi_kv(l) of one instance.

Two sources:
- ``RooflinePrefill``: the per-pass cost model (``timing.cost``) on the instance's layout (given,
  or the layout with the lowest time per token at the pass size among those that fit):
  * ``prefill_s(l)``, the TTFT of one prompt on an idle instance: its chunks of at most
    ``prefill_tokens_per_pass`` tokens (each attending to the chunks before it) one after
    another through the pipeline, plus ``prefill_pass_overhead_s`` per chunk and
    ``prefill_overhead_s`` per request (queueing in the engine, the first token's return);
  * ``capacity_s(l)``, the instance-seconds a request costs when the pool is saturated: a pass
    carries max(1, budget // l) prompts per attention group, at most as many as its chips hold the
    KV of (all groups busy, weights read once per pass, the pipeline full), so capacity_s = pass
    time / prompts per pass / replicas; with
    ``capacity: per_request`` (the paper's N / T_prefill) it is ``prefill_s``;
  * S_kv(l) exact from ``accounting.kv`` (in the model's KV dtype).
- ``MeasuredPrefill``: a profile's measured points (length -> latency, and optionally KV
  bytes) interpolated with a monotone cubic (PCHIP, which keeps monotone data monotone)
  in log-log space (prefill curves are close to power laws l^a between points) and,
  outside the measured range, extrapolated with the roofline's shape:
  T(l) = T(l_edge) * T_roof(l) / T_roof(l_edge) (likewise for S_kv). A measured latency is a
  per-request figure, so its capacity is per request too unless the scenario asks for
  ``saturated`` (then scaled by the roofline's saturated / single-prompt ratio).
Phi_kv(l) = S_kv(l) / T_prefill(l)  (paper eq. 1), reported in decimal Gbps.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Protocol

import numpy as np

from ..accounting.kv import KvModel
from ..accounting.work import prefill_work
from ..choices import CurveSource, PrefillCapacity
from ..errors import PlanInputError, warn
from ..pchip import pchip
from ..profiles._base import profile_json
from ..profiles.model import MeasuredProfile, ModelProfile
from ..profiles.registry import shipped_twin
from ..ranges import TOKENS
from ..units import bytes_per_s_to_gbps
from . import shipped
from .cost import PassCost, kv_per_chip, stage_cost, weights_per_chip
from .instance import Instance
from .layout import Layout
from .memory import fitting_layouts, usable_per_chip


class PrefillCurve(Protocol):
    @property
    def source(self) -> str: ...  # read-only: the curves are frozen dataclasses

    def prefill_s(self, lengths_tokens) -> np.ndarray: ...

    def capacity_s(self, lengths_tokens) -> np.ndarray: ...

    def kv_bytes(self, lengths_tokens) -> np.ndarray: ...


@dataclass(frozen=True)
class RooflinePrefill:
    model: ModelProfile
    instance: Instance
    source: str = "roofline"
    capacity: PrefillCapacity = PrefillCapacity.saturated
    fit_tokens: int | None = None  # the prompt whose KV a layout must hold (see ``layout``)

    @cached_property
    def layout(self) -> Layout:
        """The instance's layout, or the fitting layout with the lowest capacity time per token at
        the pass size (saturated: a full pass; per request: one prompt's TTFT). A layout fits when
        a chip holds its weights and the KV of a prompt of ``fit_tokens`` (default: one pass,
        within the model's context). Searched once per process for the same model, hardware,
        instance and capacity (``_LAYOUTS``): resolving a scenario again (the case-study check of a
        plan report, the options of a comparison) finds the same layout; a shipped model on a shipped
        instance reads it from ``timing.shipped``."""
        key = _layout_key(self)
        found = _LAYOUTS.get(key)
        if found is None:
            if len(_LAYOUTS) >= LAYOUTS_KEPT:
                _LAYOUTS.pop(next(iter(_LAYOUTS)))
            content = shipped.key_of(_content_key(self)) if self.instance.layout is None else None  # a search among layouts
            known = None if content is None else shipped.lookup("prefill_layouts", content)
            found = _LAYOUTS[key] = Layout(**known) if known is not None else self._search_layout()
            if content is not None:
                shipped.record("prefill_layouts", content, asdict(found))
        return found

    def _search_layout(self) -> Layout:
        budget = self.instance.engine.prefill_tokens_per_pass
        fit = self.fit_tokens or min(budget, self.model.max_context_tokens)
        layouts = fitting_layouts(self.model, self.instance, fit)
        if len(layouts) == 1:
            return layouts[0]
        at = np.array([float(budget)])
        if self.capacity == PrefillCapacity.per_request:
            per_token = [float(self.single_prompt(at, layout)[0][0]) for layout in layouts]
        else:
            per_token = [float(self._saturated(at, layout)[0]) for layout in layouts]
        return layouts[int(np.argmin(per_token))]

    def prefill_s(self, lengths_tokens) -> np.ndarray:
        """TTFT of one prompt alone on the instance (seconds)."""
        return _memo(self, "prefill", lengths_tokens, lambda l: self.single_prompt(l)[0])

    def capacity_s(self, lengths_tokens) -> np.ndarray:
        """Instance-seconds per request in a saturated pool (or ``prefill_s`` when per request)."""
        if self.capacity == PrefillCapacity.per_request:
            return self.prefill_s(lengths_tokens)
        return _memo(self, "capacity", lengths_tokens, lambda l: self._saturated(l, self.layout))

    def kv_bytes(self, lengths_tokens) -> np.ndarray:
        return KvModel.of(self.model).bytes_at(lengths_tokens)

    @property
    def kv_source(self) -> str:
        """Where ``kv_bytes`` comes from: the model's architecture (``accounting.kv.KvModel``)."""
        return "architecture"

    def single_prompt(self, lengths_tokens, layout: Layout | None = None) -> tuple[np.ndarray, PassCost]:
        """(TTFT in seconds, its pass time split into compute, memory, communication, overhead)
        of one prompt of each length alone on the instance."""
        layout = layout or self.layout
        eff, engine = self.instance.hardware.efficiency, self.instance.engine
        l = np.atleast_1d(np.asarray(lengths_tokens, dtype=float))
        budget = engine.chunk_tokens(l)

        def cost_of(chunk, prefix, which=None):
            work = prefill_work(self.model, chunk, prefix)
            return stage_cost(self.model, self.instance.hardware, layout, engine, work, busy_groups=1, prefill=True)

        if engine.dynamic_chunking is not None and engine.chunked_prefill and layout.pp > 1:  # SGLang: pipelines only
            starts = dynamic_chunk_starts(budget, float(l.max()), engine.dynamic_chunking, lambda x: cost_of(x, 0.0 * x).total_s)
        else:
            starts = fixed_chunk_starts(budget, float(l.max()))
        chunks = np.searchsorted(starts, l, side="left")
        parts, longest = _chunked(l, starts, cost_of)
        # chunks pipeline through the stages: their sum, plus pp - 1 more stages of the longest
        # chunk (the pipeline fill: the same compute, memory and communication, on the later stages)
        parts = parts.add(longest.scaled(layout.pp - 1))
        fixed = chunks * eff.prefill_pass_overhead_s + eff.prefill_overhead_s
        parts = parts.add(PassCost(0 * l, 0 * l, 0 * l, fixed, 0 * l, 0 * l))
        total = parts.total_s
        return total.reshape(np.shape(lengths_tokens)) if np.ndim(lengths_tokens) else total, parts

    def batch(self, input_tokens: int, batch: int, layout: Layout | None = None) -> BatchPrefill:
        """B prompts of I tokens started together on the idle instance (``batch_passes``): pass j
        leaves the last of pp stages at

            done_j = sum_{i<=j} t_i + (pp - 1) max_{i<=j} t_i + j x prefill_pass_overhead_s + prefill_overhead_s

        (t_i one stage's time of pass i: the passes flow through the stages like the chunks of one
        prompt, ``single_prompt``); ``seconds`` is the last pass's done, ``mean_first_token_s`` the
        mean over the B prompts of the done of the pass that ends each."""
        layout = layout or self.layout
        eff = self.instance.hardware.efficiency
        passes = batch_passes(
            self.model, self.instance, layout, input_tokens, batch, int(self._held(layout, np.array([float(input_tokens)]))[0])
        )
        t = passes.stage_s
        count = np.arange(1, t.size + 1)
        done = (
            np.cumsum(t)
            + (layout.pp - 1) * np.maximum.accumulate(t)
            + count * eff.prefill_pass_overhead_s
            + eff.prefill_overhead_s
        )
        fixed = float(t.size * eff.prefill_pass_overhead_s + eff.prefill_overhead_s)
        total = passes.total.add(passes.longest.scaled(layout.pp - 1))
        zero = 0.0 * total.total_s
        total = total.add(PassCost(zero, zero, zero, zero + fixed, zero, zero))
        return BatchPrefill(
            batch=batch,
            layout=layout,
            passes=int(t.size),
            prompts_per_pass=passes.prompts_per_pass,
            seconds=float(done[-1]),
            mean_first_token_s=float(np.sum(done * passes.ended) / batch),
            cost=total,
        )

    def saturated_pass(self, lengths_tokens, layout: Layout | None = None) -> tuple[np.ndarray, np.ndarray, PassCost]:
        """(prompts per pass per attention group, seconds per pass, its split) in a saturated pool."""
        layout = layout or self.layout
        engine = self.instance.engine
        l = np.atleast_1d(np.asarray(lengths_tokens, dtype=float))
        budget, chunk = engine.prefill_tokens_per_pass, engine.chunk_tokens(l)
        per_group = np.where(l <= budget, np.maximum(1.0, np.floor(budget / l)), 1.0)
        per_group = np.minimum(per_group, self._held(layout, l))  # the prompts' KV must fit beside the weights
        requests = per_group * layout.dp_attention
        pass_overhead = self.instance.hardware.efficiency.prefill_pass_overhead_s

        def cost_of(chunk, prefix, which):
            cost = stage_cost(
                self.model,
                self.instance.hardware,
                layout,
                engine,
                prefill_work(self.model, chunk, prefix),
                requests=requests[which],
                prefill=True,
            )
            zero = np.zeros_like(chunk)
            return cost.add(PassCost(zero, zero, zero, zero + pass_overhead, zero, zero))

        parts, _ = _chunked(l, fixed_chunk_starts(chunk, float(l.max())), cost_of)
        return per_group, parts.total_s, parts

    def _held(self, layout: Layout, lengths: np.ndarray) -> np.ndarray:
        """Prompts of each length whose KV one attention group's chips hold beside the weights (>= 1)."""
        groups = prefill_work(self.model, lengths)
        free = usable_per_chip(self.instance) - weights_per_chip(self.model, layout, groups)
        return np.maximum(1.0, np.floor(free / np.maximum(kv_per_chip(layout, groups, self.model), 1.0)))

    def _saturated(self, lengths_tokens, layout: Layout) -> np.ndarray:
        per_group, seconds, _ = self.saturated_pass(lengths_tokens, layout)
        out = seconds / (per_group * layout.dp_attention * layout.replicas)
        return out.reshape(np.shape(lengths_tokens)) if np.ndim(lengths_tokens) else out


@dataclass(frozen=True)
class BatchPrefill:
    """The prefill of B prompts of one length started together (``RooflinePrefill.batch``)."""

    batch: int
    layout: Layout
    passes: int  # passes through the busiest attention group
    prompts_per_pass: int  # whole prompts a pass carries (1: each prompt in chunks of its own)
    seconds: float  # until the last prompt's first token
    mean_first_token_s: float  # mean over the B prompts of their time to first token
    cost: PassCost  # ``seconds`` split into compute, memory, communication and overhead


@dataclass(frozen=True)
class BatchPasses:
    """The passes of a batch's prefill through its busiest attention group, in order."""

    prompts_per_pass: int  # whole prompts per pass and group (1: each prompt in chunks of its own)
    stage_s: np.ndarray  # one stage's seconds of each pass
    ended: np.ndarray  # prompts (of the whole instance) whose prefill each pass ends; they add up to B
    total: PassCost  # the sum of the passes' stage costs
    longest: PassCost  # the stage cost of the longest pass


def batch_passes(
    model: ModelProfile, instance: Instance, layout: Layout, input_tokens: int, batch: int, held: int = 10**9
) -> BatchPasses:
    """The passes of B prompts of I tokens started together on ``layout``, P the pass budget.

    The B prompts spread over the R replicas and, in each, over g = min(dp_attention, ceil(B / R))
    busy attention groups; the busiest group has b = ceil(ceil(B / R) / g) of them. With I <= P a
    pass carries k = min(floor(P / I), ``held``, b) whole prompts per group (``held``: the prompts
    whose KV the chips hold), so ceil(b / k) passes, the last one of the remainder; with I > P
    (chunked) each prompt runs alone in ceil(I / P) chunks, each attending to the chunks before it,
    the b prompts one after another. The busiest group's passes stand for all: a group with a
    prompt fewer ends its prompts a pass earlier (``ended`` is cut to add up to B). One prompt
    (B = 1) gives the passes of ``RooflinePrefill.single_prompt``."""
    engine = instance.engine
    budget = engine.chunk_tokens(np.array([float(input_tokens)]))
    per_replica = math.ceil(batch / layout.replicas)
    busy = min(layout.dp_attention, per_replica)
    per_group = math.ceil(per_replica / busy)
    width = busy * layout.replicas  # prompts a pass ends per prompt of the busiest group

    def cost(tokens, prefix, prompts: int) -> PassCost:
        return stage_cost(
            model,
            instance.hardware,
            layout,
            engine,
            prefill_work(model, tokens, prefix),
            requests=float(prompts * busy),
            busy_groups=busy,
            prefill=True,
        )

    if input_tokens <= budget:
        k = max(1, min(budget // input_tokens, held, per_group))
        full, rest = divmod(per_group, k)
        one = np.array([float(input_tokens)])
        kinds = [(cost(one, 0.0, k), full, k)] + ([(cost(one, 0.0, rest), 1, rest)] if rest else [])
        stage = np.concatenate([np.full(n, float(c.total_s[0])) for c, n, _ in kinds])
        ended = np.concatenate([np.full(n, float(m * width)) for _, n, m in kinds])
        total = kinds[0][0].scaled(full)
        for c, n, _ in kinds[1:]:
            total = total.add(c.scaled(n))
        longest = max((c for c, _, _ in kinds), key=lambda c: float(c.total_s[0]))
    else:
        k, n = 1, math.ceil(input_tokens / budget)
        chunks = np.minimum(float(budget), input_tokens - np.arange(n) * float(budget))
        parts = cost(chunks, np.arange(n) * float(budget), 1)
        fields = list(parts.__dataclass_fields__)
        parts = PassCost(*(np.broadcast_to(getattr(parts, f), (n,)) for f in fields))
        stage = np.tile(parts.total_s, per_group)
        ended = np.tile(np.where(np.arange(n) == n - 1, float(width), 0.0), per_group)
        total = PassCost(*(np.atleast_1d(getattr(parts, f).sum()) * per_group for f in fields))
        pick = int(np.argmax(parts.total_s))
        longest = PassCost(*(np.atleast_1d(getattr(parts, f)[pick]) for f in fields))
    ended = np.minimum(ended, np.maximum(batch - (np.cumsum(ended) - ended), 0.0))
    return BatchPasses(k, stage, ended, total, longest)


LAYOUTS_KEPT = 256  # layouts searched (``RooflinePrefill.layout``), kept per process
_LAYOUTS: dict[tuple, Layout] = {}


def _layout_key(curve: RooflinePrefill) -> tuple:
    """Everything a prefill layout search reads: the model and hardware (by value), the instance's
    chips, fixed layout and engine, the capacity and the prompt a layout must hold."""
    instance = curve.instance
    return (
        profile_json(curve.model),
        profile_json(instance.hardware),
        instance.gpus,
        repr(instance.layout),
        repr(instance.engine),
        str(curve.capacity),
        curve.fit_tokens,
    )


def _content_key(curve: RooflinePrefill) -> list:
    """``_layout_key`` as ``shipped.key_of`` reads it (the profiles parsed, their floats rounded)."""
    return [shipped.profile_key(curve.model), shipped.profile_key(curve.instance.hardware), *_layout_key(curve)[2:]]


MEMO_ENTRIES = 3  # per curve and quantity: the length arrays a plan asks about again and again


def _memo(curve, key: str, lengths_tokens, compute) -> np.ndarray:
    """``compute(lengths)`` kept on the (frozen) curve for the last few length arrays: a plan
    evaluates its workload's distinct lengths for the throughput table, the latency model and
    each marginal value. Returns a copy the caller may change."""
    lengths = np.asarray(lengths_tokens, dtype=float)
    if lengths.size < 64:  # small queries (layout searches, calibration): not worth keeping
        return compute(lengths_tokens)
    cache = curve.__dict__.setdefault("_memo", {})
    token = (key, lengths.shape, hash(lengths.tobytes()))
    hit = cache.get(token)
    if hit is not None and np.array_equal(hit[0], lengths):
        return hit[1].copy()
    value = np.array(compute(lengths_tokens))
    if len(cache) >= MEMO_ENTRIES:
        cache.pop(next(iter(cache)))
    cache[token] = (lengths.copy(), value)
    return value.copy()


def fixed_chunk_starts(budget: int, longest_tokens: float) -> np.ndarray:
    """Where the chunks of a prompt of up to ``longest_tokens`` start (tokens), every chunk ``budget`` long."""
    return np.arange(0.0, max(longest_tokens, 1.0), float(budget))


# SGLang's dynamic chunking (sgl-project/sglang python/sglang/srt/managers/scheduler_pp_mixin.py,
# ChunkSizePredictor and profile_and_init_predictor; lm-sys blog 2026-01-15-chunked-pipeline): the
# engine profiles 128 prefills from 1.25x the initial chunk down, chunks align down to 64 tokens and
# never fall below a quarter of the initial chunk.
DYNAMIC_CHUNK_ALIGN_TOKENS = 64
DYNAMIC_CHUNK_FLOOR = 4  # a chunk is at least initial // 4
PROFILE_PASSES = 128  # profiled prefill lengths: 1.25 C - i (1.25 C // 128), i = 0..127 (the first dropped)
PROFILE_REACH = 1.25  # of the initial chunk C


def profile_lengths(budget: int) -> np.ndarray:
    """The prompt lengths (tokens) SGLang profiles at start-up to fit its quadratic: 1.25 C - i x
    (1.25 C // 128) for i = 0..127 (positive ones), the first left out of the fit (a cold run)."""
    step = (PROFILE_REACH * budget) // PROFILE_PASSES
    lengths = [int(PROFILE_REACH * budget - i * step) for i in range(PROFILE_PASSES)]
    return np.array([x for x in lengths if x > 0][1:], dtype=float)


def dynamic_chunk_starts(budget: int, longest_tokens: float, smooth: float, pass_s) -> np.ndarray:
    """Where the chunks of a prompt start (tokens) under SGLang's dynamic chunking (``--enable-dynamic-chunking``,
    smooth factor ``smooth`` = SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR, initial chunk ``budget`` =
    --chunked-prefill-size). The engine fits f(L) = a L^2 + b L + c by least squares to the time of
    one prefill of L tokens at the lengths it profiles (``profile_lengths``; here ``pass_s``, the
    instance model's time) and sizes the chunk after a prefix of L tokens so that
    f(L + x) - f(L) = f(initial) - f(0) = a initial^2 + b initial:
    x = (-(2aL + b) + sqrt((2aL + b)^2 + 4 a (f(initial) - f(0)))) / (2a); then smooths it, x' =
    initial + smooth (x - initial), floors it at initial // 4 and aligns it down to 64 tokens (x is
    at most the initial chunk for a, b >= 0, the first chunk exactly it). A fit with a <= 0 disables
    dynamic chunking in SGLang (fixed chunks); a negative b is taken as 0. Later chunks shrink as the
    prefix grows, so each takes about the first one's time, and a pipeline of pp stages idles less
    than with equal chunks (``_chunked``). SGLang runs it only with pp > 1 (the caller checks)."""
    base = float(budget)
    if longest_tokens <= base or smooth <= 0:
        return fixed_chunk_starts(budget, longest_tokens)
    lengths = profile_lengths(budget)
    a, b, _c = np.polyfit(lengths, np.asarray(pass_s(lengths), dtype=float), 2)
    if a <= 0:
        return fixed_chunk_starts(budget, longest_tokens)
    a, b = float(a), max(float(b), 0.0)
    target = a * base * base + b * base
    floor = max(budget // DYNAMIC_CHUNK_FLOOR, 1)
    starts, prefix = [0.0], base
    while prefix < longest_tokens:
        starts.append(prefix)
        slope = 2 * a * prefix + b
        x = (-slope + math.sqrt(slope * slope + 4 * a * target)) / (2 * a)
        size = max(int(base + smooth * (x - base)), floor)
        size = max((size // DYNAMIC_CHUNK_ALIGN_TOKENS) * DYNAMIC_CHUNK_ALIGN_TOKENS, DYNAMIC_CHUNK_ALIGN_TOKENS)
        prefix += min(size, budget)
    return np.array(starts)


def _chunked(l: np.ndarray, starts: np.ndarray, cost_of) -> tuple[PassCost, PassCost]:
    """(the sum over its chunks, its longest chunk) per length of a chunked prefill.

    ``starts``: where the chunks start (tokens, ascending from 0, up to the longest length:
    ``fixed_chunk_starts`` or ``dynamic_chunk_starts``); a prompt of l tokens has the n chunks that
    start below l. ``cost_of(chunk tokens, tokens before the chunk, which)`` costs flat arrays of
    chunks, ``which`` naming the length each belongs to (for per-length settings). Its n - 1 full
    chunks, at positions 0 .. n - 2, are the same for every length, and its last chunk its own: the
    full chunks are costed once per position (cumulative sums and running maxima), the last chunks
    once per length, so a trace of a million lengths costs two calls, not one per chunk.
    """
    n = np.maximum(np.searchsorted(starts, l, side="left"), 1)
    index = np.arange(l.size)
    first = starts[n - 1]
    last = cost_of(l - first, first, index)
    last = PassCost(*(np.broadcast_to(getattr(last, f), l.shape) for f in last.__dataclass_fields__))
    if n.max() <= 1:
        return last, last
    positions = int(n.max()) - 1
    multi = int(np.argmax(n > 1))  # full chunks are costed as this length's (they are all alike)
    full = cost_of(np.diff(starts[: positions + 1]), starts[:positions], np.full(positions, multi))
    fields = list(last.__dataclass_fields__)
    full_parts = {f: np.broadcast_to(getattr(full, f), (positions,)) for f in fields}
    before = n - 1  # full chunks ahead of the last one
    total = PassCost(*(getattr(last, f) + np.concatenate([[0.0], np.cumsum(full_parts[f])])[before] for f in fields))
    # the longest full chunk among the first k, for every k
    times = full.total_s * np.ones(positions)
    earlier = np.concatenate([[-np.inf], np.maximum.accumulate(times)[:-1]])
    best = np.maximum.accumulate(np.where(times > earlier, np.arange(positions), 0))  # first longest
    pick = best[np.maximum(before, 1) - 1]
    use_full = (before > 0) & (times[pick] > last.total_s)
    longest = PassCost(*(np.where(use_full, full_parts[f][pick], getattr(last, f)) for f in fields))
    return total, longest


@dataclass(frozen=True)
class MeasuredPrefill:
    measured: MeasuredProfile
    roofline: RooflinePrefill
    source: str = "measured"
    capacity: PrefillCapacity = PrefillCapacity.per_request

    def capacity_s(self, lengths_tokens) -> np.ndarray:
        """Per request (the measured latency), or scaled to a saturated pool by the roofline."""
        measured = self.prefill_s(lengths_tokens)
        if self.capacity == PrefillCapacity.per_request:
            return measured
        roof = self.roofline
        return measured * roof.capacity_s(lengths_tokens) / roof.prefill_s(lengths_tokens)

    def _points(self):
        pts = sorted(self.measured.prefill, key=lambda p: p.length_tokens)
        return np.array([p.length_tokens for p in pts], float), pts

    def _interp(self, lengths, xs: np.ndarray, ys: np.ndarray, shape, key: str) -> np.ndarray:
        """Measured values ys at xs, carried to ``lengths`` along the roofline's shape.

        value(l) = shape(l) * r(l), where r = ys / shape(xs) is interpolated by a monotone
        cubic (PCHIP) in log l and held constant outside the points; should that product
        ever fall between two points (noisy data), the values themselves are interpolated
        by PCHIP in log-log space instead, which keeps them monotone. Which of the two
        applies is decided once per curve and quantity (``key``).
        """
        l = np.atleast_1d(np.asarray(lengths, dtype=float))
        ratio, along_shape = self._mode(key, xs, ys, shape)
        if len(xs) == 1:
            out = shape(l) * ratio[0]
        elif along_shape:
            out = shape(l) * pchip(np.log(xs), ratio, np.log(l))
        else:
            inside = np.clip(l, xs[0], xs[-1])
            out = np.exp(pchip(np.log(xs), np.log(ys), np.log(inside))) * shape(l) / shape(inside)
        return out.reshape(np.shape(lengths)) if np.ndim(lengths) else out

    def _mode(self, key: str, xs: np.ndarray, ys: np.ndarray, shape) -> tuple[np.ndarray, bool]:
        cache = self.__dict__.setdefault("_modes", {})
        if key not in cache:
            ratio = ys / shape(xs)
            along_shape = True
            if len(xs) > 1:
                log_x = np.log(xs)
                grid = np.exp(np.linspace(log_x[0], log_x[-1], 512))
                along_shape = bool(np.all(np.diff(shape(grid) * pchip(log_x, ratio, np.log(grid))) >= 0))
            cache[key] = (ratio, along_shape)
        return cache[key]

    def prefill_s(self, lengths_tokens) -> np.ndarray:
        xs, pts = self._points()
        ys = np.array([p.prefill_s for p in pts])
        return _memo(self, "prefill", lengths_tokens, lambda l: self._interp(l, xs, ys, self.roofline.prefill_s, "prefill"))

    @property
    def kv_source(self) -> str:
        """Where ``kv_bytes`` comes from: the measured points when they give KV sizes (PCHIP along
        the architecture's shape), else the model's architecture."""
        return "measured" if self._points()[1][0].kv is not None else "architecture"

    def kv_bytes(self, lengths_tokens) -> np.ndarray:
        xs, pts = self._points()
        if pts[0].kv is None:
            return self.roofline.kv_bytes(lengths_tokens)
        ys = np.array([p.kv for p in pts])
        return self._interp(lengths_tokens, xs, ys, self.roofline.kv_bytes, "kv")


def measured_for(model: ModelProfile, instance: Instance) -> MeasuredProfile | None:
    """The model's measurements on this instance: the same chip count, on the shipped hardware
    whose speed figures the instance's profile has (``shipped_twin``: its own name first; a copy
    that changes only its name, price, power or words keeps them). A user's profile that reuses
    a shipped name with other figures gets the roofline, with a warning; a calibrated copy the
    roofline of its calibration, silently: it was asked for."""
    hardware, gpus = instance.hardware, instance.gpus
    if hardware.calibration is not None:
        return None
    names = [hardware.name, *(m.hardware for m in model.measured if m.gpus == gpus and m.hardware != hardware.name)]
    twin = shipped_twin(hardware, names)
    if twin is not None:
        return model.measured_for(twin, gpus)
    if model.measured_for(hardware.name, gpus) is not None:
        warn(
            f"hardware '{hardware.name}' differs in its speed figures from the shipped profile of that name, so "
            f"{model.name}'s measured points for {instance.label} are not used (roofline instead)"
        )
    return None


def prefill_curve(
    model: ModelProfile, instance: Instance, source: str = CurveSource.auto, capacity: str | None = None
) -> PrefillCurve:
    """The prefill curve for a model on an instance.

    ``auto`` uses the model's measured points for this hardware and GPU count when it has
    them (``measured_for``), else the roofline; ``measured`` insists on measured points.
    ``capacity``: ``saturated`` or ``per_request`` (default: saturated for the roofline,
    per request for measured latencies).
    """
    source = CurveSource(source)
    roofline = RooflinePrefill(model, instance, capacity=PrefillCapacity(capacity or PrefillCapacity.saturated))
    if source == CurveSource.roofline:
        return roofline
    measured = measured_for(model, instance)
    if measured is not None and measured.prefill:
        return MeasuredPrefill(measured, roofline, capacity=PrefillCapacity(capacity or PrefillCapacity.per_request))
    if source == CurveSource.measured:
        have = ", ".join(f"{m.gpus}x{m.hardware}" for m in model.measured if m.prefill) or "none"
        raise PlanInputError(
            f"model '{model.name}' has no measured prefill points for {instance.label} (has: {have})",
            field="source",
        )
    return roofline


@dataclass(frozen=True)
class KvRow:
    length_tokens: int
    kv_bytes: int
    prefill_s: float
    phi_kv_gbps: float


def check_lengths(model: ModelProfile, lengths_tokens: list[int], field: str = "lengths") -> None:
    """Every length is a token count in [1, 16M] and within the model's context."""
    for length in lengths_tokens:
        TOKENS.check(length, field)
        if length > model.max_context_tokens:
            raise PlanInputError(
                f"{length:,} tokens exceeds {model.name}'s context of {model.max_context_tokens:,} tokens", field=field
            )


@dataclass(frozen=True)
class KvReport:
    """S_kv, T_prefill and Phi_kv of a model on an instance at several lengths."""

    model: ModelProfile
    instance: Instance
    source: str  # 'roofline' or 'measured'
    kv_model: KvModel
    rows: list[KvRow]
    layout: Layout | None = None  # of the one-prompt T_prefill (the roofline's, or its shape's)
    kv_source: str = "architecture"  # of the rows' S_kv: 'architecture' (kv_model) or 'measured' (the points)


def kv_table(curve: PrefillCurve, model: ModelProfile, lengths_tokens: list[int]) -> list[KvRow]:
    """S_kv, T_prefill and Phi_kv = S_kv / T_prefill (Gbps) at each length."""
    check_lengths(model, lengths_tokens)
    lengths = np.asarray(lengths_tokens, dtype=float)
    kv = curve.kv_bytes(lengths)
    t = curve.prefill_s(lengths)
    return [KvRow(int(l), int(round(k)), float(s), float(bytes_per_s_to_gbps(k / s))) for l, k, s in zip(lengths_tokens, kv, t)]
