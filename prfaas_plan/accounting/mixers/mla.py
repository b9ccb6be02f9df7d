"""Multi-head latent attention (DeepSeek-V2/V3, Kimi K2).

KV per token:   kv_lora_rank r + qk_rope_head_dim elements (the cached latent), growing.
Parameters:     q (h q_lora + q_lora nh (nope + rope)) or h nh (nope + rope); kv_a h (r + rope);
                kv_b r nh (nope + v); o nh v h.
Prefill FLOPs:  uncompressed form, 2 nh (nope + rope + v) per causal key.
Decode step:    absorbed form, 2 nh (2 r + rope) FLOPs and r + rope elements read per cached
                key and request.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...choices import MixerType
from ..kinds import Gemms, LayerKv, MixerKind, causal_keys, mixer_kind


@mixer_kind(MixerType.mla)
class Mla(MixerKind):
    # norm, q down/up projections and norm, kv down projection and norm, RoPE and KV write, absorbed
    # attention, value up-projection, output projection
    kernels: ClassVar[int] = 10

    @property
    def latent(self) -> int:
        return self.spec.kv_lora_rank + self.spec.qk_rope_head_dim

    def kv(self) -> LayerKv:
        return LayerKv(growing_bytes_per_token=self.latent * self.kv_bytes)

    def params(self, hidden: int) -> int:
        s, h = self.spec, hidden
        nh, qk = s.num_heads, s.qk_nope_head_dim + s.qk_rope_head_dim
        q = h * s.q_lora_rank + s.q_lora_rank * nh * qk if s.q_lora_rank else h * nh * qk
        kv_a = h * (s.kv_lora_rank + s.qk_rope_head_dim)
        kv_b = s.kv_lora_rank * nh * (s.qk_nope_head_dim + s.v_head_dim)
        return q + kv_a + kv_b + nh * s.v_head_dim * h

    def gemms(self, hidden: int) -> Gemms:
        s, h = self.spec, hidden
        nh, qk = s.num_heads, s.qk_nope_head_dim + s.qk_rope_head_dim
        q = ((h * s.q_lora_rank, h), (s.q_lora_rank * nh * qk, s.q_lora_rank)) if s.q_lora_rank else ((h * nh * qk, h),)
        return q + (
            (h * (s.kv_lora_rank + s.qk_rope_head_dim), h),
            (s.kv_lora_rank * nh * (s.qk_nope_head_dim + s.v_head_dim), s.kv_lora_rank),
            (nh * s.v_head_dim * h, nh * s.v_head_dim),
        )

    def _prefill_flops_per_key(self) -> float:
        s = self.spec
        return 2 * s.num_heads * (s.qk_nope_head_dim + s.qk_rope_head_dim + s.v_head_dim)

    def _decode_flops_per_key(self) -> float:
        return 2 * self.spec.num_heads * (2 * self.spec.kv_lora_rank + self.spec.qk_rope_head_dim)

    def prefill_flops(self, lengths: np.ndarray) -> np.ndarray:
        return self._prefill_flops_per_key() * causal_keys(lengths)

    def decode_step(self, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
        return (self._decode_flops_per_key() * context_tokens * batch, batch * self.latent * self.kv_bytes * context_tokens)
