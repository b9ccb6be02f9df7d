"""FLOPs and bytes of a prefill pass and of a decode step, per layer group.

Prefill of one request of l tokens (vectorised over an array of l):
- matmul FLOPs = 2 * l * (mixer params + the FFN's always-active params); routed-expert
  FLOPs 2 * l * top_k * per-expert params are kept apart (they run at the experts' dtype);
- attention-core FLOPs: the mixer kind's ``prefill_flops`` (causal; see accounting/mixers);
- weight bytes: every dense matrix once, routed experts by the expected distinct experts
  the l tokens touch (``ffns/moe.py``);
- other bytes: the KV/state written (S_kv of the layer) + 8 hidden-sized activation
  tensors of l x h read or written per layer;
- all-reduce payload: l x h activations after the mixer and after the FFN (tensor
  parallel inside the instance).
A decode step of a batch of BS requests at context C has the same terms with one token per
request, and the mixer kind's ``decode_step`` for the attention FLOPs and KV/state bytes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..profiles.model import Layer, ModelProfile, expand_layers
from ..units import dtype_bytes
from .kinds import ffn_of, mixer_of

ACTIVATION_TENSORS_PER_LAYER = 8


@dataclass
class Work:
    """FLOPs and bytes of one layer (arrays over lengths or batch sizes)."""

    matmul_flops: np.ndarray  # dense matrices (mixer projections, dense FFN, shared experts, router)
    expert_flops: np.ndarray  # routed experts (their weights may use another dtype)
    attention_flops: np.ndarray
    weight_bytes: np.ndarray
    other_bytes: np.ndarray
    allreduce_bytes: np.ndarray


def layer_groups(model: ModelProfile) -> list[tuple[int, Layer]]:
    """Identical layers grouped: [(count, representative layer)]."""
    layers = expand_layers(model)
    counts = Counter((layer.mixer_name, layer.ffn_name) for layer in layers)
    first: dict[tuple[str, str], Layer] = {}
    for layer in layers:
        first.setdefault((layer.mixer_name, layer.ffn_name), layer)
    return [(counts[key], first[key]) for key in counts]


def _allreduces(layer: Layer) -> int:
    return int(layer.mixer is not None) + int(layer.ffn is not None)


def _layer_work(model: ModelProfile, layer: Layer, tokens: np.ndarray, attention_flops: np.ndarray,
                kv_bytes: np.ndarray) -> Work:
    """The terms common to prefill and decode, for ``tokens`` tokens through one layer."""
    h = model.hidden_size
    mixer, ffn = mixer_of(layer.mixer, model.dtypes), ffn_of(layer.ffn, model.dtypes)
    act_b = dtype_bytes(model.dtypes.activations)
    dense_flops, expert_flops = ffn.flops(tokens, h)
    mixer_weights = mixer.params(h) * dtype_bytes(model.dtypes.weights)
    return Work(
        matmul_flops=2 * tokens * mixer.params(h) + dense_flops,
        expert_flops=expert_flops,
        attention_flops=attention_flops,
        weight_bytes=mixer_weights + ffn.weight_bytes(tokens, h),
        other_bytes=kv_bytes + ACTIVATION_TENSORS_PER_LAYER * tokens * h * act_b,
        allreduce_bytes=_allreduces(layer) * tokens * h * act_b,
    )


def prefill_work(model: ModelProfile, lengths_tokens) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) for prefilling one request of each length."""
    l = np.asarray(lengths_tokens, dtype=float)
    out = []
    for count, layer in layer_groups(model):
        mixer = mixer_of(layer.mixer, model.dtypes)
        out.append((count, _layer_work(model, layer, l, mixer.prefill_flops(l), mixer.kv().at(l))))
    out.append((1, _lm_head_work(model, np.ones_like(l))))  # logits of the last token only
    return out


def decode_work(model: ModelProfile, batch_sizes, context_tokens: float) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) of one decode step for each batch size at a context."""
    bs = np.asarray(batch_sizes, dtype=float)
    out = []
    for count, layer in layer_groups(model):
        attention_flops, kv_bytes = mixer_of(layer.mixer, model.dtypes).decode_step(bs, float(context_tokens))
        out.append((count, _layer_work(model, layer, bs, attention_flops, kv_bytes)))
    out.append((1, _lm_head_work(model, bs)))
    return out


def _lm_head_work(model: ModelProfile, tokens: np.ndarray) -> Work:
    h, v = model.hidden_size, model.vocab_size
    zeros = np.zeros_like(tokens)
    return Work(
        matmul_flops=2 * tokens * h * v,
        expert_flops=zeros,
        attention_flops=zeros,
        weight_bytes=np.full_like(tokens, h * v * dtype_bytes(model.dtypes.weights)),
        other_bytes=tokens * v * 4.0,  # fp32 logits
        allreduce_bytes=zeros,
    )
