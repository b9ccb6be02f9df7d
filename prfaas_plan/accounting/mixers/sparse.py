"""DeepSeek-V3.2 sparse attention: MLA over the top-k keys an indexer selects.

KV per token:   the MLA latent + the indexer key (index_head_dim, in index_key_dtype).
Parameters:     MLA + indexer q (q_src ih id, q_src = q_lora or h), k h id, weights h ih.
Prefill FLOPs:  indexer 2 ih id over every causal key + MLA over sum_i min(i, top_k) keys, in the
                absorbed (MQA) form, 2 nh (2 r + rope) per selected key: DSA is instantiated on
                MLA's MQA mode so that every query head shares the selected latent entries
                (DeepSeek-V3.2-Exp report, "Instantiate DSA under MLA"), and FlashMLA's sparse
                prefill kernel runs it so, q/k head dim 576 and v 512 (deepseek-ai/FlashMLA
                README, "Token-level sparse attention for the prefill stage"); dense MLA prefill
                keeps the uncompressed form (``mla.py``).
Decode step:    MLA over min(context, top_k) latents + the indexer over all context keys.
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...choices import MixerType
from ...units import dtype_bytes
from ..kinds import Gemms, LayerKv, causal_keys, mixer_kind
from .mla import Mla


@mixer_kind(MixerType.sparse)
class Sparse(Mla):
    kernels: ClassVar[int] = 13  # MLA's ten, plus the lightning indexer's projection, scores and top-k

    @property
    def index_bytes(self) -> float:
        return dtype_bytes(self.spec.index_key_dtype or self.dtypes.kv)

    def kv(self) -> LayerKv:
        s = self.spec
        return LayerKv(growing_bytes_per_token=self.latent * self.kv_bytes + s.index_head_dim * self.index_bytes)

    def params(self, hidden: int) -> int:
        s, h = self.spec, hidden
        q_src = s.q_lora_rank or h
        indexer = q_src * s.index_num_heads * s.index_head_dim + h * s.index_head_dim + h * s.index_num_heads
        return super().params(hidden) + indexer

    def gemms(self, hidden: int) -> Gemms:
        return super().gemms(hidden) + ((self.params(hidden) - super().params(hidden), hidden),)

    def _indexer_flops_per_key(self) -> float:
        return 2 * self.spec.index_num_heads * self.spec.index_head_dim

    def prefill_flops(self, lengths: np.ndarray) -> np.ndarray:
        topk = self.spec.index_topk_tokens
        return self._indexer_flops_per_key() * causal_keys(lengths) + self._decode_flops_per_key() * causal_keys(
            lengths, topk
        )  # absorbed form (module doc)

    def decode_step(self, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
        s = self.spec
        keys = min(context_tokens, s.index_topk_tokens)
        flops = batch * (self._decode_flops_per_key() * keys + self._indexer_flops_per_key() * context_tokens)
        read = batch * (self.latent * self.kv_bytes * keys + s.index_head_dim * self.index_bytes * context_tokens)
        return flops, read
