"""FLOPs and bytes of a prefill pass and of a decode step, per layer group.

Prefill of one request of l tokens (vectorised over an array of l):
- matmul FLOPs = 2 * l * (mixer params + active FFN params)   (MoE: top-k experts only,
  kept apart so that they run at the peak of the experts' dtype);
- attention-core FLOPs (causal):
    GQA/MLA full:  2 * heads * (d_qk + d_v) * l(l+1)/2        (MLA in uncompressed form)
    SWA:           2 * heads * (d_qk + d_v) * sum_i min(i, w)
    sparse:        indexer 2*ih*id*l(l+1)/2 + MLA over sum_i min(i, top_k)
    linear:        l * heads * (4 d_k d_v + C (d_k + d_v)) + 2 l * conv_channels * kernel
                   (chunked form with chunk C: inter-chunk state read and update,
                   intra-chunk causal attention);
- weight bytes: every dense matrix once, routed experts by the expected distinct experts
  the l tokens touch;
- other bytes: the KV/state written (S_kv of the layer) + 8 hidden-sized activation
  tensors of l x h read or written per layer;
- all-reduce payload: l x h activations after the mixer and after the FFN (tensor
  parallel inside the instance).
A decode step of a batch of BS requests at context C has the same terms with one token
per request: attention reads each request's KV (MLA in absorbed form, 2*nh*(2 r + rope)
FLOPs per cached token; sparse reads only top-k latents plus all indexer keys; linear
layers read and write their state).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..profiles.model import (
    GqaAttention,
    Layer,
    LinearAttention,
    MlaAttention,
    ModelProfile,
    SparseAttention,
    SwaAttention,
    expand_layers,
)
from ..units import dtype_bytes
from .kv import layer_kv
from .params import expected_distinct_experts, layer_params

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


def causal_keys(length, window=None) -> np.ndarray:
    """Sum over query positions i = 1..l of the keys attended, min(i, window)."""
    l = np.asarray(length, dtype=float)
    full = l * (l + 1) / 2
    if window is None:
        return full
    w = float(window)
    return np.where(l <= w, full, w * (w + 1) / 2 + (l - w) * w)


def layer_groups(model: ModelProfile) -> list[tuple[int, Layer]]:
    """Identical layers grouped: [(count, representative layer)]."""
    layers = expand_layers(model)
    counts = Counter((layer.mixer_name, layer.ffn_name) for layer in layers)
    first: dict[tuple[str, str], Layer] = {}
    for layer in layers:
        first.setdefault((layer.mixer_name, layer.ffn_name), layer)
    return [(counts[key], first[key]) for key in counts]


def _attention_prefill_flops(mixer, l: np.ndarray) -> np.ndarray:
    if mixer is None:
        return np.zeros_like(l)
    if isinstance(mixer, SwaAttention):
        return 2 * mixer.num_query_heads * (mixer.qk_head_dim + mixer.v_dim) * causal_keys(l, mixer.window_tokens)
    if isinstance(mixer, GqaAttention):
        return 2 * mixer.num_query_heads * (mixer.qk_head_dim + mixer.v_dim) * causal_keys(l)
    if isinstance(mixer, MlaAttention):
        per_key = 2 * mixer.num_heads * (mixer.qk_nope_head_dim + mixer.qk_rope_head_dim + mixer.v_head_dim)
        if isinstance(mixer, SparseAttention):
            indexer = 2 * mixer.index_num_heads * mixer.index_head_dim * causal_keys(l)
            return indexer + per_key * causal_keys(l, mixer.index_topk_tokens)
        return per_key * causal_keys(l)
    if isinstance(mixer, LinearAttention):
        dk, dv = mixer.key_head_dim, mixer.value_head_dim
        core = l * mixer.num_heads * (4 * dk * dv + mixer.chunk_tokens * (dk + dv))
        return core + 2 * l * mixer.conv_channels * mixer.conv_kernel
    raise TypeError(type(mixer).__name__)


def _attention_decode(mixer, model: ModelProfile, batch: np.ndarray, context: float):
    """(FLOPs, KV/state bytes read or written) of one decode step for a batch."""
    zeros = np.zeros_like(batch)
    if mixer is None:
        return zeros, zeros
    kv_b = dtype_bytes(model.dtypes.kv)
    if isinstance(mixer, GqaAttention):  # includes SWA
        keys = min(context, mixer.window_tokens) if isinstance(mixer, SwaAttention) else context
        flops = 2 * mixer.num_query_heads * (mixer.qk_head_dim + mixer.v_dim) * keys * batch
        return flops, batch * mixer.num_kv_heads * (mixer.qk_head_dim + mixer.v_dim) * kv_b * keys
    if isinstance(mixer, MlaAttention):
        latent = mixer.kv_lora_rank + mixer.qk_rope_head_dim
        per_key = 2 * mixer.num_heads * (2 * mixer.kv_lora_rank + mixer.qk_rope_head_dim)  # absorbed form
        if isinstance(mixer, SparseAttention):
            keys = min(context, mixer.index_topk_tokens)
            index_b = dtype_bytes(mixer.index_key_dtype or model.dtypes.kv)
            flops = batch * (per_key * keys + 2 * mixer.index_num_heads * mixer.index_head_dim * context)
            return flops, batch * (latent * kv_b * keys + mixer.index_head_dim * index_b * context)
        return per_key * context * batch, batch * latent * kv_b * context
    if isinstance(mixer, LinearAttention):
        flops = batch * (4 * mixer.num_heads * mixer.key_head_dim * mixer.value_head_dim
                         + 2 * mixer.conv_channels * mixer.conv_kernel)
        state = layer_kv(Layer(0, "", mixer, "", None), model).fixed_bytes
        return flops, batch * 2 * state  # read and write the state
    raise TypeError(type(mixer).__name__)


def _weight_bytes(model: ModelProfile, layer: Layer, routed_tokens: np.ndarray) -> np.ndarray:
    mixer_p, ffn_p = layer_params(layer, model.hidden_size)
    w_b = dtype_bytes(model.dtypes.weights)
    e_b = dtype_bytes(model.dtypes.experts or model.dtypes.weights)
    dense = (mixer_p + ffn_p.dense) * w_b
    if not ffn_p.num_experts:
        return np.full_like(routed_tokens, dense)
    touched = expected_distinct_experts(ffn_p.num_experts, ffn_p.top_k, routed_tokens)
    return dense + touched * ffn_p.per_expert * e_b


def _allreduces(layer: Layer) -> int:
    return int(layer.mixer is not None) + int(layer.ffn is not None)


def prefill_work(model: ModelProfile, lengths_tokens) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) for prefilling one request of each length."""
    l = np.asarray(lengths_tokens, dtype=float)
    h = model.hidden_size
    act_b = dtype_bytes(model.dtypes.activations)
    out = []
    for count, layer in layer_groups(model):
        mixer_p, ffn_p = layer_params(layer, h)
        kv = layer_kv(layer, model)
        kv_written = kv.growing_bytes_per_token * l + kv.window_bytes_per_token * np.minimum(l, kv.window_tokens)
        kv_written = kv_written + kv.fixed_bytes
        out.append((count, Work(
            matmul_flops=2 * l * (mixer_p + ffn_p.dense),
            expert_flops=2 * l * ffn_p.per_expert * ffn_p.top_k,
            attention_flops=_attention_prefill_flops(layer.mixer, l),
            weight_bytes=_weight_bytes(model, layer, l),
            other_bytes=kv_written + ACTIVATION_TENSORS_PER_LAYER * l * h * act_b,
            allreduce_bytes=_allreduces(layer) * l * h * act_b,
        )))
    out.append((1, _lm_head_work(model, np.ones_like(l))))  # logits of the last token only
    return out


def decode_work(model: ModelProfile, batch_sizes, context_tokens: float) -> list[tuple[int, Work]]:
    """Per layer group: (count, Work) of one decode step for each batch size at a context."""
    bs = np.asarray(batch_sizes, dtype=float)
    h = model.hidden_size
    act_b = dtype_bytes(model.dtypes.activations)
    out = []
    for count, layer in layer_groups(model):
        mixer_p, ffn_p = layer_params(layer, h)
        attn_flops, kv_bytes = _attention_decode(layer.mixer, model, bs, float(context_tokens))
        out.append((count, Work(
            matmul_flops=2 * bs * (mixer_p + ffn_p.dense),
            expert_flops=2 * bs * ffn_p.per_expert * ffn_p.top_k,
            attention_flops=attn_flops,
            weight_bytes=_weight_bytes(model, layer, bs),
            other_bytes=kv_bytes + ACTIVATION_TENSORS_PER_LAYER * bs * h * act_b,
            allreduce_bytes=_allreduces(layer) * bs * h * act_b,
        )))
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
