"""Linear attention and state-space mixers (KDA, Gated DeltaNet, Lightning, Mamba2).

State per request: heads x d_k x d_v elements (state dtype) + conv_channels x (kernel - 1)
elements of the short convolution (activation dtype): fixed, whatever the length.
Parameters:     q and k h nk d_k each, v h nv d_v, o nv d_v h (+ gate h nv d_v).
Prefill FLOPs:  chunked form with chunk C: l heads (4 d_k d_v + C (d_k + d_v)) for the
                inter-chunk state read and update and the intra-chunk causal attention,
                plus 2 l conv_channels kernel for the convolution.
Sequential:     ceil(l / C) chunk steps in prefill: each chunk's state update needs the previous
                chunk's state (the inter-chunk recurrence of the chunked kernels, e.g. FLA's
                chunk_gated_delta_rule_fwd_h), so they run one after another (``timing.cost``).
Decode step:    4 heads d_k d_v + 2 conv_channels kernel FLOPs per request; the state is
                read and written (2 x the state bytes).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...choices import MixerType
from ...units import dtype_bytes
from ..kinds import Gemms, LayerKv, MixerKind, mixer_kind


@mixer_kind(MixerType.linear)
class Linear(MixerKind):
    kernels: ClassVar[int] = 8  # norm, projections, short convolutions, gates, the recurrence, gated norm, output projection

    @property
    def label(self) -> str:
        return str(self.spec.kind)

    @property
    def state_bytes(self) -> float:
        s = self.spec
        state = s.num_heads * s.key_head_dim * s.value_head_dim * dtype_bytes(s.state_dtype or self.dtypes.state)
        conv = s.conv_channels * max(s.conv_kernel - 1, 0) * dtype_bytes(self.dtypes.activations)
        return state + conv

    def kv(self) -> LayerKv:
        return LayerKv(fixed_bytes=self.state_bytes)

    @property
    def kv_ways(self) -> int:
        return self.spec.num_heads  # the state is per value head

    def params(self, hidden: int) -> int:
        s, h = self.spec, hidden
        nk, nv, dk, dv = s.key_heads, s.num_heads, s.key_head_dim, s.value_head_dim
        return 2 * h * nk * dk + h * nv * dv + nv * dv * h + (h * nv * dv if s.output_gate else 0)

    def gemms(self, hidden: int) -> Gemms:
        out = self.spec.num_heads * self.spec.value_head_dim * hidden
        return ((self.params(hidden) - out, hidden), (out, self.spec.num_heads * self.spec.value_head_dim))

    def prefill_flops(self, lengths: np.ndarray) -> np.ndarray:
        s = self.spec
        dk, dv = s.key_head_dim, s.value_head_dim
        core = lengths * s.num_heads * (4 * dk * dv + s.chunk_tokens * (dk + dv))
        return core + 2 * lengths * s.conv_channels * s.conv_kernel

    def prefill_sequential_steps(self, lengths: np.ndarray) -> np.ndarray:
        return np.ceil(np.asarray(lengths, dtype=float) / self.spec.chunk_tokens)

    def decode_step(self, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
        s = self.spec
        flops = batch * (4 * s.num_heads * s.key_head_dim * s.value_head_dim + 2 * s.conv_channels * s.conv_kernel)
        return flops, batch * 2 * self.state_bytes  # read and write the state
