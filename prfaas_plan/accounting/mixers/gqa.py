"""Grouped-query attention (MHA: kv heads = query heads; MQA: one kv head).

KV per token:      nkv (d_qk + d_v) elements, growing with l.
Parameters:        q h nq d_qk + k h nkv d_qk + v h nkv d_v + o nq d_v h (+ gate h nq d_v).
Prefill FLOPs:     2 nq (d_qk + d_v) sum_i keys(i): QK^T and PV over the causal keys.
Decode step:       2 nq (d_qk + d_v) x keys FLOPs and nkv (d_qk + d_v) x keys elements read
                   per request, keys = the context (``swa`` bounds it by the window).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...choices import MixerType
from ..kinds import Gemms, LayerKv, MixerKind, causal_keys, mixer_kind


@mixer_kind(MixerType.gqa)
class Gqa(MixerKind):
    kernels: ClassVar[int] = 5  # norm, QKV projection, RoPE and KV write, attention, output projection

    @property
    def window_tokens(self) -> int | None:
        """Keys a query sees at most (None: all earlier tokens)."""
        return None

    @property
    def kv_bytes_per_token(self) -> float:
        s = self.spec
        return s.num_kv_heads * (s.qk_head_dim + s.v_dim) * self.kv_bytes

    def kv(self) -> LayerKv:
        return LayerKv(growing_bytes_per_token=self.kv_bytes_per_token)

    @property
    def kv_ways(self) -> int:
        return self.spec.num_kv_heads  # more tensor-parallel chips than KV heads replicate them

    def params(self, hidden: int) -> int:
        s, h = self.spec, hidden
        nq, nkv, dqk, dv = s.num_query_heads, s.num_kv_heads, s.qk_head_dim, s.v_dim
        params = h * nq * dqk + h * nkv * dqk + h * nkv * dv + nq * dv * h
        return params + (h * nq * dv if s.output_gate else 0)

    def gemms(self, hidden: int) -> Gemms:
        s, h = self.spec, hidden
        nq, dv = s.num_query_heads, s.v_dim
        out = nq * dv * h
        return ((self.params(hidden) - out, h), (out, nq * dv))

    def _flops_per_key(self) -> float:
        return 2 * self.spec.num_query_heads * (self.spec.qk_head_dim + self.spec.v_dim)

    def prefill_flops(self, lengths: np.ndarray) -> np.ndarray:
        return self._flops_per_key() * causal_keys(lengths, self.window_tokens)

    def decode_step(self, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
        keys = context_tokens if self.window_tokens is None else min(context_tokens, self.window_tokens)
        return self._flops_per_key() * keys * batch, batch * self.kv_bytes_per_token * keys
