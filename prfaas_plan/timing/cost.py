"""What one pass (a prefill chunk or a decode step) costs on one pipeline stage of a replica,
split into compute, memory, communication and fixed overhead.

Per layer, on one chip of a stage (S = tp x dp_attention chips, ``timing.layout``), with T the
tokens of the pass in the replica spread over ``busy`` attention groups (all of them when the
pool is saturated; one for a lone request):

- each kernel is a roofline of its own, max(FLOPs / (peak x eff) x shape, bytes / (bandwidth x
  eff)), and kernels run one after another (``_shape``: GEMMs with a shallow reduction or few rows
  run below the matmul fraction, measured on the largest shapes):
    attention projections   FLOPs / (busy x tp), weights / tp
    attention core          FLOPs / (busy x tp) at the attention dtype's peak,
                            KV bytes / (busy x min(tp, kv_ways)) (MLA's latent is not split)
    dense FFN               FLOPs and weights / S (tensor parallel over the stage)
    shared experts + router FLOPs / (busy x tp), weights / tp (where the tokens are), with EP
    routed experts          FLOPs x imbalance (with EP) / S at the experts' dtype and its grouped-GEMM
                            fraction (``grouped_matmul_rate``); weights of the distinct
                            experts the pass touches on one rank, ceil(E/ep) (1 - (1 - k/E)^T), / (S/ep)
    activations             8 x tokens x h bytes / (busy x tp)
- communication (``timing.collectives``): the attention all-reduce over tp; the FFN all-reduce
  over S, or with DP attention an all-gather and a reduce-scatter over S, or with EP the
  dispatch (FP8 when the experts are FP8) and combine all-to-all of T x top_k x h over the
  ep ranks; only ``1 - overlap`` of the smaller of communication and kernels is exposed;
- the engine's kernel multipliers (``Engine``; generic: all 1): the attention core's rates x its
  kind's prefill or decode multiplier, the dense and the routed experts' matmul rates x
  ``dense_gemm`` and ``grouped_gemm``, the dispatch and combine all-to-all time / ``all_to_all``;
  in a prefill pass the attention core's rates also x the chip's calibrated factor for its kind
  (``Efficiency.attention_kind``; none: 1); a linear mixer's attention core in prefill takes at
  least ceil(l / C) x ``linear_chunk_step_s`` (its chunks' state updates follow one another;
  generic: 0);
- ``kernel_overhead_us`` per kernel of the layer (``accounting.work``), and a pipeline hop per
  stage when pp > 1.
The cost is that of the mean stage: 1/pp of every layer group and of the output projection
(which sits on the last stage), so that pp stages add up to the model once. The part that
takes the most time is what binds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..accounting.work import Work
from ..choices import ComputeDtype, Dtype, EngineName
from ..errors import PlanInputError
from ..profiles._base import derived
from ..profiles.hardware import HardwareProfile
from ..profiles.model import ModelProfile, expand_layers
from ..profiles.serving import EngineSpec
from ..units import dtype_bytes
from . import collectives as coll
from .engines import engine_profile
from .layout import Layout

# Weight dtype -> tensor-core input dtype used for the matmuls (weight-only int4 runs in bf16).
MATMUL_DTYPE: dict[Dtype, ComputeDtype] = {
    Dtype.fp32: ComputeDtype.bf16,
    Dtype.bf16: ComputeDtype.bf16,
    Dtype.fp16: ComputeDtype.bf16,
    Dtype.fp8: ComputeDtype.fp8,
    Dtype.int8: ComputeDtype.fp8,
    Dtype.fp4: ComputeDtype.fp4,
    Dtype.int4: ComputeDtype.bf16,
}
PARTS = ("compute", "memory", "communication", "overhead")


_GENERIC = engine_profile(EngineName.generic).defaults  # the defaults of Engine() (one place: generic.yaml)
SETTINGS = (
    "overlap",
    "expert_imbalance",
    "prefill_tokens_per_pass",
    "chunked_prefill",
    "mtp_tokens_per_step",
    "dynamic_chunking",
)


@dataclass(frozen=True)
class Engine:
    """What the serving engine does beyond the hardware: its settings (``profiles.serving.EngineSpec``,
    each left out there taken from the engine's profile, ``timing/engines/<name>.yaml``) and its
    kernels' rates over the chip's own fractions (``profiles.engine.EngineKernels``; 1: the chip's)."""

    overlap: float = _GENERIC.overlap  # share of min(communication, kernels) hidden
    expert_imbalance: float = _GENERIC.expert_imbalance  # busiest expert rank / mean (EP)
    prefill_tokens_per_pass: int = _GENERIC.prefill_tokens_per_pass  # per attention group
    chunked_prefill: bool = _GENERIC.chunked_prefill  # False: whole prompts per pass
    mtp_tokens_per_step: float = _GENERIC.mtp_tokens_per_step  # accepted per decode step
    # SGLang's dynamic chunking of one prompt (its smooth factor; None: fixed chunks; timing.prefill.dynamic_chunk_starts)
    dynamic_chunking: float | None = _GENERIC.dynamic_chunking
    name: EngineName = EngineName.generic
    max_batch: int | None = _GENERIC.max_batch  # the engine's default cap on running requests per instance
    # (attention kind, prefill multiplier, decode multiplier); a kind not listed runs at the chip's fraction
    attention: tuple[tuple[str, float, float], ...] = ()
    dense_gemm: float = 1.0  # on the matmul rate of projections, dense FFN, shared experts, output head
    grouped_gemm: float = 1.0  # on the matmul rate of the routed experts
    all_to_all: float = 1.0  # on the rate of the MoE dispatch and combine
    step_overhead_s: float = 0.0  # added to each decode step (beside the hardware's decode_step_overhead_s)
    linear_chunk_step_s: float = 0.0  # one chunk step of the chunked linear-attention prefill kernels (a floor)

    @classmethod
    def of(cls, spec: EngineSpec | None) -> Engine:
        """The settings ``spec`` gives, the rest and the kernels from its engine's profile."""
        spec = spec or EngineSpec()
        profile = engine_profile(spec.name)
        given = spec.model_dump(exclude_none=True, exclude={"name"})
        settings = {f: given.get(f, getattr(profile.defaults, f)) for f in SETTINGS}
        k = profile.kernels
        attention = tuple(
            (kind, m["prefill"], m["decode"])
            for kind, m in k.attention.model_dump().items()
            if (m["prefill"], m["decode"]) != (1.0, 1.0)
        )  # the kinds at the chip's fraction left out
        return cls(
            **settings,
            name=spec.name,
            max_batch=profile.defaults.max_batch,
            attention=attention,
            dense_gemm=k.dense_gemm,
            grouped_gemm=k.grouped_gemm,
            all_to_all=k.all_to_all,
            step_overhead_s=k.step_overhead_s,
            linear_chunk_step_s=k.linear_chunk_step_us * 1e-6,
        )

    def attention_rate(self, mixer_type: str, prefill: bool) -> float:
        """The multiplier on the attention-core kernel of ``mixer_type`` in a prefill pass or a decode step."""
        for kind, in_prefill, in_decode in self.attention:
            if kind == mixer_type:
                return in_prefill if prefill else in_decode
        return 1.0

    def chunk_tokens(self, lengths_tokens: np.ndarray) -> int:
        """The most tokens of one prompt a pass carries: the budget. Without chunked prefill a prompt
        is never split, so the budget must hold the longest prompt (engines refuse a longer one:
        vLLM's max_num_batched_tokens, TensorRT-LLM's max_num_tokens); a PlanInputError if not."""
        longest = int(np.max(lengths_tokens, initial=1))
        if not self.chunked_prefill and longest > self.prefill_tokens_per_pass:
            raise PlanInputError(
                f"without chunked prefill a pass must hold a whole prompt: {longest:,} tokens is "
                f"more than the budget of {self.prefill_tokens_per_pass:,}; raise "
                "`prefill_tokens_per_pass` or turn `chunked_prefill` on",
                field="prefill_tokens_per_pass",
            )
        return self.prefill_tokens_per_pass


@dataclass(frozen=True)
class PassCost:
    """Seconds of one pass through one stage, per part (arrays), and bytes a chip exchanges."""

    compute_s: np.ndarray
    memory_s: np.ndarray
    communication_s: np.ndarray
    overhead_s: np.ndarray
    scale_up_bytes: np.ndarray
    nic_bytes: np.ndarray

    @property
    def total_s(self) -> np.ndarray:
        return self.compute_s + self.memory_s + self.communication_s + self.overhead_s

    def binding(self, index: int = 0) -> str:
        """The part with the most time (at one point of the arrays, the first by default)."""
        values = [float(np.ravel(getattr(self, f"{p}_s"))[index]) for p in PARTS]
        return PARTS[int(np.argmax(values))]

    def add(self, other: PassCost) -> PassCost:
        return PassCost(*(getattr(self, f) + getattr(other, f) for f in self.__dataclass_fields__))

    def scaled(self, factor) -> PassCost:
        return PassCost(*(getattr(self, f) * factor for f in self.__dataclass_fields__))


def peaks(model: ModelProfile, hw: HardwareProfile) -> tuple[float, float, float]:
    """Achievable FLOP/s of one chip for (dense matmuls, routed experts, attention cores)."""
    return (
        matmul_rate(hw, MATMUL_DTYPE[model.dtypes.weights]),
        grouped_matmul_rate(hw, MATMUL_DTYPE[model.dtypes.experts or model.dtypes.weights]),
        attention_rate(hw, model.dtypes.attention),
    )


def grouped_matmul_rate(hw: HardwareProfile, dtype: ComputeDtype) -> float:
    """Achievable FLOP/s of the routed experts' grouped GEMMs at a dtype: the peak it runs at x
    ``Efficiency.grouped_matmul_fraction`` (fp4: ``grouped_matmul_fp4``, a fused MoE kernel's
    measured rate; else the dense fraction), before the shape term ``_shape``."""
    running = hw.running_dtype(dtype)
    return hw.peak_flops(running) * hw.efficiency.grouped_matmul_fraction(running)


def matmul_rate(hw: HardwareProfile, dtype: ComputeDtype) -> float:
    """Achievable matmul FLOP/s at a dtype: the peak it runs at (``HardwareProfile.running_dtype``) x its fraction
    (``Efficiency.matmul_fraction``: ``matmul``, ``matmul_fp8``, ``matmul_fp4``, each falling back
    to the next wider one's)."""
    running = hw.running_dtype(dtype)
    return hw.peak_flops(running) * hw.efficiency.matmul_fraction(running)


def attention_rate(hw: HardwareProfile, dtype: ComputeDtype) -> float:
    """Achievable attention-core FLOP/s at the attention dtype: the peak it runs at x
    ``attention_fp8`` (fp8) or ``attention`` (bf16) (``Efficiency.attention_fraction``)."""
    running = hw.running_dtype(dtype)
    return hw.peak_flops(running) * hw.efficiency.attention_fraction(running)


def stage_cost(
    model: ModelProfile,
    hw: HardwareProfile,
    layout: Layout,
    engine: Engine,
    groups: list[tuple[int, Work]],
    requests=1.0,
    busy_groups: int | None = None,
    prefill: bool = False,
) -> PassCost:
    """One pass through one stage: ``groups`` (``accounting.work``) hold the work of one request
    (prefill) or of the whole micro-batch (decode, ``requests`` = 1); ``requests`` scales the
    per-request terms (weights are read once per pass). ``prefill``: expert-parallel dispatch
    deduplicated per domain (``collectives.all_to_all_s``)."""
    busy = layout.dp_attention if busy_groups is None else busy_groups
    r = np.asarray(requests, dtype=float)
    rates = peaks(model, hw), hw.peak_flops(model.dtypes.attention)  # the same for every layer group
    total = None
    for count, work in groups:
        # 1/pp of every layer group and of the output projection (on the last stage): the mean stage,
        # so that pp stages add up to the whole model once
        cost = _layer(model, hw, layout, engine, work, r, busy, prefill, rates).scaled(count / layout.pp)
        total = cost if total is None else total.add(cost)
    assert total is not None  # groups end with the output projection (accounting.work.prefill_work, decode_work)
    if layout.pp > 1:
        work = groups[0][1]
        hop = coll.hop_s(hw, layout.replica_chips > hw.scale_up_domain_chips, work.tokens * r * work.hidden * work.act_bytes)
        zero = np.zeros_like(hop)
        total = total.add(PassCost(zero, zero, hop, zero, zero, zero))
    return total


def _shape(hw: HardwareProfile, gemms, rows) -> np.ndarray:
    """How much longer than at the matmul fraction a part's GEMMs take for their shapes:
    sum_i p_i (1 + k0 / K_i) / sum_i p_i, times (M + m0) / M for M >= m0 rows per matrix (k0, m0:
    ``efficiency.matmul_k0`` and ``matmul_m0``; DeepGEMM's FP8 GEMMs on H800 fall from 1,358 TFLOPS
    at K = 16,384 to 990 at K = 1,536 and 590 at K = 512, and its grouped GEMMs from 1,233 at
    1,024 rows per expert to 932 at 256)."""
    eff = hw.efficiency
    total = sum(p for p, _ in gemms)
    depth = sum(p * (1 + eff.matmul_k0 / k) for p, k in gemms) / total if total else 1.0
    # fitted on 256 to 1,024 rows; below m0 rows the factor stays at the 2x it reaches there:
    # small-batch kernels swap the operands and pad the tokens to 8-16 rows, not to a full tile,
    # so a GEMM of a few rows is bound by reading its weights, not by padded tensor-core work
    m = np.maximum(np.asarray(rows, dtype=float), eff.matmul_m0)
    return depth * (m + eff.matmul_m0) / np.maximum(m, 1e-9)


def _roofline(flops, flop_rate, nbytes, byte_rate) -> tuple[np.ndarray, np.ndarray]:
    """(compute-bound seconds, memory-bound seconds) of one kernel: its time goes to whichever binds."""
    c = np.asarray(flops, dtype=float) / flop_rate
    m = np.asarray(nbytes, dtype=float) / byte_rate
    compute_bound = c >= m
    return np.where(compute_bound, c, 0.0), np.where(compute_bound, 0.0, m)


def _floor(kernel: tuple[np.ndarray, np.ndarray], floor_s) -> tuple[np.ndarray, np.ndarray]:
    """A kernel that cannot take less than ``floor_s`` (steps that run one after another, each request's in
    parallel): where the roofline is shorter, the floor is its time, counted as compute."""
    c, m = kernel
    short = c + m < floor_s
    return np.where(short, floor_s, c), np.where(short, 0.0, m)


def _layer(
    model: ModelProfile,
    hw: HardwareProfile,
    layout: Layout,
    engine: Engine,
    w: Work,
    r: np.ndarray,
    busy: int,
    prefill: bool,
    rates: tuple[tuple[float, float, float], float],
) -> PassCost:
    """One layer group's pass (see the module docstring); ``rates``: (``peaks``, the attention
    dtype's peak FLOP/s), computed once per ``stage_cost``."""
    eff = hw.efficiency
    tp, stage = layout.tp, layout.stage_chips
    (mm, expert_rate, attn_rate), attn_peak = rates
    bw = hw.memory_bytes_per_s * eff.memory
    # the engine's kernels over the chip's fractions (generic: 1): the attention core per kind and phase (both
    # rates of that kernel), the dense and the grouped GEMMs' matmul rates
    # and the chip's calibrated per-kind factor (``Efficiency.attention_kind``, prefill only; none: 1)
    attn = engine.attention_rate(w.mixer_type, prefill) * eff.attention_kind_rate(w.mixer_type, prefill)
    mm, expert_rate = mm * engine.dense_gemm, expert_rate * engine.grouped_gemm
    # multipliers never take a kernel past the chip's peak FLOP/s or bandwidth
    attn_flops = min(attn_rate * attn, attn_peak)
    attn_bw = min(bw * attn, hw.memory_bytes_per_s)
    tokens = w.tokens * r
    chips_with_tokens = busy * tp
    ep_on = w.num_experts > 0 and layout.ep > 1
    group_tokens = tokens / max(busy, 1)  # rows of an attention group's matrices
    kernels = [
        _roofline(
            w.mixer_flops * r / chips_with_tokens * _shape(hw, w.mixer_gemms, group_tokens), mm, w.mixer_weight_bytes / tp, bw
        ),
        _floor(
            _roofline(
                w.attention_flops * r / chips_with_tokens, attn_flops, w.kv_bytes * r / (busy * min(tp, w.kv_ways)), attn_bw
            ),
            w.sequential_steps * engine.linear_chunk_step_s,
        ),
        _roofline(
            w.dense_flops
            * r
            / (chips_with_tokens if ep_on else stage)
            * _shape(hw, w.dense_gemms, group_tokens if ep_on else tokens),
            mm,
            w.dense_weight_bytes / (tp if ep_on else stage),
            bw,
        ),
        (np.zeros_like(tokens), w.activation_bytes * r / chips_with_tokens / bw),
    ]
    if w.num_experts:
        e, k = w.num_experts, w.top_k
        touched = math.ceil(e / layout.ep) * (1.0 - (1.0 - k / e) ** tokens)
        imbalance = engine.expert_imbalance if layout.ep > 1 else 1.0  # tensor-parallel experts split evenly
        rows = tokens * k / np.maximum(e * (1.0 - (1.0 - k / e) ** tokens), 1e-9)  # per expert the tokens touch
        kernels.append(
            _roofline(
                w.expert_flops * r * imbalance / stage * _shape(hw, w.expert_gemms, rows),
                expert_rate,
                touched * w.per_expert_bytes / layout.moe_tp,
                bw,
            )
        )
    compute = sum(c for c, _ in kernels)
    memory = sum(m for _, m in kernels)
    comm, up_bytes, nic_bytes = _communication(model, hw, layout, engine, w, tokens, busy, prefill)
    exposed = comm - engine.overlap * np.minimum(comm, compute + memory)
    overhead = np.full_like(tokens, w.kernels * eff.kernel_overhead_us * 1e-6)
    return PassCost(compute, memory, exposed, overhead, up_bytes, nic_bytes)


def _communication(
    model: ModelProfile,
    hw: HardwareProfile,
    layout: Layout,
    engine: Engine,
    w: Work,
    tokens: np.ndarray,
    busy: int,
    prefill: bool,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds, scale-up bytes, NIC bytes) of one layer's collectives, per chip."""
    h, act = w.hidden, w.act_bytes
    tp, stage = layout.tp, layout.stage_chips
    zero = np.zeros_like(tokens)
    time, up, nic = zero.copy(), zero.copy(), zero.copy()

    def ring(chips: int, payload, fn=coll.all_reduce_s, factor=2.0):
        nonlocal time, up, nic
        if chips <= 1:
            return
        time = time + fn(hw, chips, payload)
        moved = factor * (chips - 1) / chips * payload
        if chips <= hw.scale_up_domain_chips:
            up = up + moved
        else:
            nic = nic + moved

    per_group = tokens / max(busy, 1)
    if w.has_mixer and tp > 1:
        ring(tp, per_group * h * act)
    if not w.has_ffn:
        return time, up, nic
    if w.num_experts and layout.ep > 1:
        dispatch_b = 1.0 if (model.dtypes.experts or model.dtypes.weights) in (Dtype.fp8, Dtype.fp4) else act
        # the busier side per chip: each chip that holds tokens sends its share (busy groups x tp of them: a
        # lone prompt's group sends all of its routed tokens), and the busiest expert rank receives its share
        # x the imbalance
        share = max(1 / (max(busy, 1) * tp), engine.expert_imbalance / stage)
        sent = tokens * share * w.top_k * h * (1 - 1 / layout.ep)
        for nbytes in (sent * dispatch_b, sent * act):  # dispatch, then combine
            t, intra, inter = coll.all_to_all_s(hw, layout.ep, nbytes, w.top_k, dedupe=prefill)
            time, up, nic = time + t / engine.all_to_all, up + intra, nic + inter  # the engine's dispatch kernels
        if layout.moe_tp > 1:
            ring(layout.moe_tp, tokens * w.top_k / layout.ep * h * act)
    elif layout.dp_attention > 1:
        ring(stage, tokens * h * act, coll.all_gather_s, 1.0)  # gather the groups' tokens
        ring(stage, tokens * h * act, coll.all_gather_s, 1.0)  # and scatter the sums back
    else:
        ring(stage, tokens * h * act)
    return time, up, nic


def weights_per_chip(model: ModelProfile, layout: Layout, groups: list[tuple[int, Work]]) -> float:
    """Bytes of weights the fullest chip holds: attention and (with EP) shared experts / tp, dense
    FFN / S, ceil(E / ep) routed experts / (S / ep), 1/pp of the layers, and the embeddings / tp
    (with pp > 1 an end stage holds one vocab x h matrix: the input embedding on the first, the
    output head on the last); scaled to the declared parameter count when the profile gives one."""
    from ..accounting.params import count_params, weight_bytes

    tp, stage = layout.tp, layout.stage_chips
    per_group = []
    for _, w in groups[:-1]:
        ep_on = w.num_experts > 0 and layout.ep > 1
        per = w.mixer_weight_bytes / tp + w.dense_weight_bytes / (tp if ep_on else stage)
        per += math.ceil(w.num_experts / layout.ep) * w.per_expert_bytes / layout.moe_tp if w.num_experts else 0.0
        per_group.append(per)
    counts = count_params(model)
    embeddings = counts.embedding * dtype_bytes(model.dtypes.weights)
    one_matrix = model.vocab_size * model.hidden_size * dtype_bytes(model.dtypes.weights)
    if layout.pp == 1:
        total = heaviest_stage(model, 1, per_group) + embeddings / tp
    else:  # the input embedding on the first stage, the output head on the last
        total = heaviest_stage(model, layout.pp, per_group, ends=one_matrix / tp)
    architecture = _architecture_bytes(model, groups) + embeddings
    return float(total * weight_bytes(model) / architecture if architecture > 0 else total)


def _architecture_bytes(model: ModelProfile, groups: list[tuple[int, Work]]) -> float:
    return sum(
        count * (w.mixer_weight_bytes + w.dense_weight_bytes + w.num_experts * w.per_expert_bytes) for count, w in groups[:-1]
    )


def kv_per_chip(layout: Layout, groups: list[tuple[int, Work]], model: ModelProfile | None = None) -> np.ndarray:
    """KV bytes one chip holds per request (from prefill work of the request's context): each layer's
    KV over min(tp, kv_ways) chips of its attention group, on the stage that holds the most (with
    ``model``; without, 1/pp of the layers)."""
    per_group = [w.kv_bytes / min(layout.tp, w.kv_ways) for _, w in groups[:-1]]
    if model is None or layout.pp == 1:
        return np.asarray(sum(count / layout.pp * kv for (count, _), kv in zip(groups[:-1], per_group)))  # a model has layers
    return heaviest_stage(model, layout.pp, per_group)


def _group_of_layers(model: ModelProfile) -> list[int]:
    """Each layer's index in ``accounting.work.layer_groups``, in layer order (once per profile object)."""
    from ..accounting.work import layer_groups

    def index(m: ModelProfile) -> list[int]:
        keys = {(layer.mixer_name, layer.ffn_name): k for k, (_, layer) in enumerate(layer_groups(m))}
        return [keys[(layer.mixer_name, layer.ffn_name)] for layer in expand_layers(m)]

    return derived(model, "group_of_layers", index)


def heaviest_stage(model: ModelProfile, pp: int, per_group: list, ends: float = 0.0):
    """The largest sum over one pipeline stage of a per-layer quantity given per layer group (in
    ``accounting.work.layer_groups`` order), ``ends`` added to the first and the last stage: the
    layers split into pp contiguous stages, the first L mod pp of them one layer longer."""
    layers = [per_group[k] for k in _group_of_layers(model)]
    if pp == 1:
        return sum(layers) + ends
    sizes = [len(layers) // pp + (1 if i < len(layers) % pp else 0) for i in range(pp)]
    best, start = None, 0
    for i, size in enumerate(sizes):
        part = sum(layers[start : start + size]) + (ends if i in (0, pp - 1) else 0.0)
        start += size
        best = part if best is None else np.maximum(best, part)
    return best
