"""Parameter counts from the architecture, and the weight bytes an instance must hold.

Matrix parameters per block (h = hidden size):
- GQA/SWA: q h*nq*dqk, k h*nkv*dqk, v h*nkv*dv, o nq*dv*h (+ gate h*nq*dv if gated);
- MLA:     q (h*q_lora + q_lora*nh*(nope+rope)) or h*nh*(nope+rope); kv_a h*(kv_lora+rope);
           kv_b kv_lora*nh*(nope+v); o nh*v*h; sparse adds the indexer
           (q_src*ih*id + h*id + h*ih, q_src = q_lora or h);
- linear:  q and k h*nk*dk each, v h*nv*dv, o nv*dv*h (+ gate h*nv*dv);
- FFN:     (3 if gated else 2) * h * intermediate per expert; router h*experts.
Norms, biases and small gate vectors are ignored (< 0.1% of any profiled model).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..profiles.model import (
    DenseFfn,
    GqaAttention,
    Layer,
    LinearAttention,
    MlaAttention,
    ModelProfile,
    MoeFfn,
    SparseAttention,
    expand_layers,
)
from ..units import dtype_bytes


def mixer_params(mixer, hidden: int) -> int:
    """Matrix parameters of one mixer block (all active for every token)."""
    if mixer is None:
        return 0
    h = hidden
    if isinstance(mixer, GqaAttention):  # includes SWA
        nq, nkv, dqk, dv = mixer.num_query_heads, mixer.num_kv_heads, mixer.qk_head_dim, mixer.v_dim
        params = h * nq * dqk + h * nkv * dqk + h * nkv * dv + nq * dv * h
        return params + (h * nq * dv if mixer.output_gate else 0)
    if isinstance(mixer, MlaAttention):  # includes sparse
        nh, qk = mixer.num_heads, mixer.qk_nope_head_dim + mixer.qk_rope_head_dim
        q = h * mixer.q_lora_rank + mixer.q_lora_rank * nh * qk if mixer.q_lora_rank else h * nh * qk
        kv_a = h * (mixer.kv_lora_rank + mixer.qk_rope_head_dim)
        kv_b = mixer.kv_lora_rank * nh * (mixer.qk_nope_head_dim + mixer.v_head_dim)
        o = nh * mixer.v_head_dim * h
        params = q + kv_a + kv_b + o
        if isinstance(mixer, SparseAttention):
            q_src = mixer.q_lora_rank or h
            params += q_src * mixer.index_num_heads * mixer.index_head_dim + h * mixer.index_head_dim
            params += h * mixer.index_num_heads
        return params
    if isinstance(mixer, LinearAttention):
        nk, nv, dk, dv = mixer.key_heads, mixer.num_heads, mixer.key_head_dim, mixer.value_head_dim
        params = 2 * h * nk * dk + h * nv * dv + nv * dv * h
        return params + (h * nv * dv if mixer.output_gate else 0)
    raise TypeError(f"unhandled mixer {type(mixer).__name__}")


@dataclass(frozen=True)
class FfnParams:
    """Parameters of one FFN block: always-active part, and routed experts."""

    dense: int  # dense FFN, or shared experts + router: used by every token
    per_expert: int = 0
    num_experts: int = 0
    top_k: int = 0

    @property
    def total(self) -> int:
        return self.dense + self.per_expert * self.num_experts

    @property
    def active(self) -> int:
        return self.dense + self.per_expert * self.top_k


def ffn_params(ffn, hidden: int) -> FfnParams:
    if ffn is None:
        return FfnParams(0)
    mats = 3 if ffn.gated else 2
    if isinstance(ffn, DenseFfn):
        return FfnParams(mats * hidden * ffn.intermediate_size)
    if isinstance(ffn, MoeFfn):
        shared_size = ffn.shared_intermediate_size or ffn.expert_intermediate_size
        shared = ffn.shared_experts * mats * hidden * shared_size
        router = hidden * ffn.num_experts
        return FfnParams(shared + router, mats * hidden * ffn.expert_intermediate_size, ffn.num_experts, ffn.top_k)
    raise TypeError(f"unhandled ffn {type(ffn).__name__}")


def expected_distinct_experts(num_experts: int, top_k: int, routed_tokens):
    """Expected number of distinct experts touched when ``routed_tokens`` tokens each pick
    ``top_k`` of ``num_experts`` uniformly: E * (1 - (1 - k/E)^n)."""
    import numpy as np

    n = np.asarray(routed_tokens, dtype=float)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** n)


@dataclass(frozen=True)
class ParamCounts:
    """Architecture parameter counts (computed) and the weight bytes to hold."""

    embedding: int
    layers_total: int
    layers_active: int
    routed_expert_total: int

    @property
    def total(self) -> int:
        return self.embedding + self.layers_total

    @property
    def active(self) -> int:
        return self.embedding + self.layers_active


def count_params(model: ModelProfile) -> ParamCounts:
    h = model.hidden_size
    embedding = model.vocab_size * h * (1 if model.tie_word_embeddings else 2)
    total = active = routed = 0
    for layer in expand_layers(model):
        m = mixer_params(layer.mixer, h)
        f = ffn_params(layer.ffn, h)
        total += m + f.total
        active += m + f.active
        routed += f.per_expert * f.num_experts
    return ParamCounts(embedding, total, active, routed)


def weight_bytes(model: ModelProfile) -> float:
    """Bytes of weights an instance holds: routed experts at ``dtypes.experts`` (if set),
    everything else at ``dtypes.weights``. Uses the declared total parameter count when
    given (it includes MTP modules, norms and biases the architecture count omits)."""
    counts = count_params(model)
    total = model.total_params_b * 1e9 if model.total_params_b else float(counts.total)
    w_b = dtype_bytes(model.dtypes.weights)
    if model.dtypes.experts is None:
        return total * w_b
    e_b = dtype_bytes(model.dtypes.experts)
    routed = counts.routed_expert_total
    # the declared total's extras (MTP, norms) are charged at the dense dtype; never fewer
    # dense parameters than the architecture has
    dense = max(total - routed, counts.total - routed)
    return routed * e_b + dense * w_b


def layer_params(layer: Layer, hidden: int) -> tuple[int, FfnParams]:
    return mixer_params(layer.mixer, hidden), ffn_params(layer.ffn, hidden)
