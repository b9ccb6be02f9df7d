"""FLOPs and bytes of a prefill pass and of a decode step, per layer group, split by part so
that a parallel layout (``timing.layout``) can place each part on its chips.

For ``tokens`` tokens through one layer (arrays over lengths or batch sizes):
- mixer projections: ``mixer_flops`` = 2 x tokens x mixer params, ``mixer_weight_bytes`` at the
  weights dtype;
- attention core: ``attention_flops`` and ``kv_bytes`` from the mixer kind (causal prefill, or a
  decode step reading each request's KV; see accounting/mixers);
- dense part of the FFN (a dense FFN, or shared experts + router): ``dense_flops`` =
  2 x tokens x its params, ``dense_weight_bytes``;
- routed experts: ``expert_flops`` = 2 x tokens x top_k x params of one expert, each expert
  ``per_expert_bytes`` at the experts' dtype; how many distinct experts a chip reads depends on
  the layout (``ffns/moe.expected_distinct_experts``);
- ``activation_bytes``: 8 hidden-sized tensors of tokens x h read or written;
- ``tokens`` and ``hidden``: the payload of the collectives (tokens x h activations);
- ``mixer_gemms``, ``dense_gemms``, ``expert_gemms``: (parameters, reduction depth K) of each
  matrix, for the GEMM shape term of ``timing.cost``;
- ``kernels``: GPU kernels a pass launches through the layer (the mixer's and FFN's ``kernels``,
  from the kernel sequence of current implementations; each costs the hardware's
  ``kernel_overhead_us`` on top of its work, ``timing.cost``).
The properties ``matmul_flops``, ``weight_bytes``, ``other_bytes`` and ``allreduce_bytes`` are
the totals of one chip holding everything (the layout of one chip).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..profiles._base import derived
from ..profiles.model import Layer, ModelProfile, expand_layers
from ..units import dtype_bytes
from .ffns.moe import expected_distinct_experts
from .kinds import Gemms, ffn_of, mixer_of

ACTIVATION_TENSORS_PER_LAYER = 8
LM_HEAD_KERNELS = 3  # final norm, output projection, sampling


@dataclass
class Work:
    """FLOPs and bytes of one layer for ``tokens`` tokens (arrays over lengths or batch sizes)."""

    tokens: np.ndarray
    hidden: int
    act_bytes: float  # bytes per activation element
    mixer_flops: np.ndarray  # attention projections
    mixer_weight_bytes: float
    attention_flops: np.ndarray  # attention core (QK^T and PV, or the linear-attention state)
    kv_bytes: np.ndarray  # KV / state written (prefill) or read and written (decode)
    dense_flops: np.ndarray  # dense FFN, or shared experts + router
    dense_weight_bytes: float
    expert_flops: np.ndarray  # routed experts, at the experts' dtype
    per_expert_bytes: float
    num_experts: int
    top_k: int
    activation_bytes: np.ndarray
    has_mixer: bool
    has_ffn: bool
    kv_ways: int = 1  # ways tensor parallelism splits the KV (kinds.MixerKind.kv_ways)
    kernels: int = 0  # GPU kernels a pass through the layer launches (each kind's ``kernels``)
    mixer_gemms: Gemms = ()  # (parameters, reduction depth K) of each projection
    dense_gemms: Gemms = ()
    expert_gemms: Gemms = ()  # of one routed expert
    mixer_type: str = ""  # the layer's attention kind (choices.MixerType value; "" without a mixer), for
    #   kernel efficiencies per kind (timing.cost)
    sequential_steps: np.ndarray | float = 0.0  # steps of the attention core that run one after another, per
    #   request (a linear mixer's prefill chunks, ``kinds.MixerKind.prefill_sequential_steps``; decode: 0)

    @property
    def matmul_flops(self) -> np.ndarray:
        """Dense matrices (mixer projections, dense FFN or shared experts and router)."""
        return self.mixer_flops + self.dense_flops

    @property
    def touched_experts(self) -> np.ndarray:
        """Distinct routed experts the tokens touch on one chip that holds them all."""
        if not self.num_experts:
            return np.zeros_like(self.tokens, dtype=float)
        return expected_distinct_experts(self.num_experts, self.top_k, self.tokens)

    @property
    def weight_bytes(self) -> np.ndarray:
        """Weights read by one chip that holds the whole layer."""
        return self.mixer_weight_bytes + self.dense_weight_bytes + self.touched_experts * self.per_expert_bytes

    @property
    def other_bytes(self) -> np.ndarray:
        return self.kv_bytes + self.activation_bytes

    @property
    def allreduce_bytes(self) -> np.ndarray:
        """Tensor-parallel all-reduce payload: tokens x h after the mixer and after the FFN."""
        return (int(self.has_mixer) + int(self.has_ffn)) * self.tokens * self.hidden * self.act_bytes


def layer_groups(model: ModelProfile) -> list[tuple[int, Layer]]:
    """Identical layers grouped: [(count, representative layer)], once per profile object (shared,
    not to be modified: every pass of a plan asks for them)."""
    return derived(model, "layer_groups", _group_layers)


def _group_layers(model: ModelProfile) -> list[tuple[int, Layer]]:
    layers = expand_layers(model)
    counts = Counter((layer.mixer_name, layer.ffn_name) for layer in layers)
    first: dict[tuple[str, str], Layer] = {}
    for layer in layers:
        first.setdefault((layer.mixer_name, layer.ffn_name), layer)
    return [(counts[key], first[key]) for key in counts]


def _layer_work(
    model: ModelProfile,
    layer: Layer,
    tokens: np.ndarray,
    attention_flops: np.ndarray,
    kv_bytes: np.ndarray,
    sequential_steps: np.ndarray | float = 0.0,
) -> Work:
    """The terms common to prefill and decode, for ``tokens`` tokens through one layer."""
    h = model.hidden_size
    mixer, ffn = mixer_of(layer.mixer, model.dtypes), ffn_of(layer.ffn, model.dtypes)
    act_b = dtype_bytes(model.dtypes.activations)
    dense_flops, expert_flops = ffn.flops(tokens, h)
    p = ffn.params(h)
    return Work(
        tokens=tokens,
        hidden=h,
        act_bytes=act_b,
        mixer_flops=2 * tokens * mixer.params(h),
        mixer_weight_bytes=mixer.params(h) * dtype_bytes(model.dtypes.weights),
        attention_flops=attention_flops,
        kv_bytes=kv_bytes,
        dense_flops=dense_flops,
        dense_weight_bytes=p.dense * dtype_bytes(model.dtypes.weights),
        expert_flops=expert_flops,
        per_expert_bytes=p.per_expert * dtype_bytes(model.dtypes.experts or model.dtypes.weights),
        num_experts=p.num_experts,
        top_k=p.top_k,
        activation_bytes=ACTIVATION_TENSORS_PER_LAYER * tokens * h * act_b,
        has_mixer=layer.mixer is not None,
        has_ffn=layer.ffn is not None,
        kv_ways=mixer.kv_ways,
        kernels=mixer.kernels + ffn.kernels,
        mixer_gemms=mixer.gemms(h) if layer.mixer is not None else (),
        dense_gemms=ffn.gemms(h)[0],
        expert_gemms=ffn.gemms(h)[1],
        mixer_type=str(layer.mixer.type) if layer.mixer is not None else "",
        sequential_steps=sequential_steps,
    )


WORK_CACHE_ENTRIES = 256  # per model: the chunks a calibration or a plan asks for again and again
WORK_CACHE_MAX_LENGTHS = 4096  # arrays longer than this are not kept (memory)


def prefill_work(model: ModelProfile, lengths_tokens, prefix_tokens=0) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) for prefilling one request of each length, after
    ``prefix_tokens`` tokens already in its KV (a later chunk of a chunked prefill). The same
    arguments give the same (shared, not to be modified) objects, kept per model."""
    l = np.asarray(lengths_tokens, dtype=float)
    prefix = np.broadcast_to(np.asarray(prefix_tokens, dtype=float), l.shape)
    if l.size > WORK_CACHE_MAX_LENGTHS:  # a long trace: computed once by its caller, not kept
        return _prefill_work(model, l, prefix)
    cache: dict = derived(model, "prefill_work", lambda _m: {})
    key = (l.shape, l.tobytes(), prefix.tobytes())
    hit = cache.get(key)
    if hit is None:
        if len(cache) >= WORK_CACHE_ENTRIES:
            cache.pop(next(iter(cache)))
        hit = cache[key] = _prefill_work(model, l, prefix)
    return hit


def _prefill_work(model: ModelProfile, l: np.ndarray, prefix: np.ndarray) -> list[tuple[int, Work]]:
    out = []
    for count, layer in layer_groups(model):
        mixer = mixer_of(layer.mixer, model.dtypes)
        kv = mixer.kv()
        flops = mixer.prefill_flops(prefix + l) - mixer.prefill_flops(prefix)
        written = kv.at(prefix + l) - kv.at(prefix) + kv.fixed_bytes  # the recurrent state is rewritten
        steps = mixer.prefill_sequential_steps(l)  # of this chunk's tokens
        out.append((count, _layer_work(model, layer, l, flops, written, steps)))
    out.append((1, lm_head_work(model, np.ones_like(l))))  # logits of the last token only
    return out


def decode_work(model: ModelProfile, batch_sizes, context_tokens: float) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) of one decode step for each batch size at a context."""
    bs = np.asarray(batch_sizes, dtype=float)
    out = []
    for count, layer in layer_groups(model):
        attention_flops, kv_bytes = mixer_of(layer.mixer, model.dtypes).decode_step(bs, float(context_tokens))
        out.append((count, _layer_work(model, layer, bs, attention_flops, kv_bytes)))
    out.append((1, lm_head_work(model, bs)))
    return out


def lm_head_work(model: ModelProfile, tokens: np.ndarray) -> Work:
    """The output projection (vocab x h) for ``tokens`` tokens and their fp32 logits."""
    h, v = model.hidden_size, model.vocab_size
    tokens = np.asarray(tokens, dtype=float)
    zeros = np.zeros_like(tokens)
    return Work(
        tokens=tokens,
        hidden=h,
        act_bytes=dtype_bytes(model.dtypes.activations),
        mixer_flops=zeros,
        mixer_weight_bytes=0.0,
        attention_flops=zeros,
        kv_bytes=zeros,
        dense_flops=2 * tokens * h * v,
        dense_weight_bytes=h * v * dtype_bytes(model.dtypes.weights),
        expert_flops=zeros,
        per_expert_bytes=0.0,
        num_experts=0,
        top_k=0,
        activation_bytes=tokens * v * 4.0,  # fp32 logits
        has_mixer=False,
        has_ffn=False,
        kernels=LM_HEAD_KERNELS,
        dense_gemms=((h * v, h),),
    )
