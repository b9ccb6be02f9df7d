"""S_kv(l): bytes of KVCache and recurrent state produced by prefilling l uncached tokens.

Per layer, from the layer's attention kind (``accounting/mixers``; element bytes from the
model's dtypes, bf16 KV = 2 B, fp32 state = 4 B):
- gqa:    kv_heads x (qk_head_dim + v_head_dim) per token                       [grows with l]
- mla:    kv_lora_rank + qk_rope_head_dim per token (the cached latent)          [grows with l]
- sparse: MLA latent + the indexer's key (index_head_dim) per token              [grows with l]
- swa:    as GQA, but for min(l, window_tokens) tokens                           [bounded]
- linear: heads x key_head_dim x value_head_dim state + conv_channels x
          (conv_kernel - 1) conv state, once per request                        [fixed]
S_kv(l) = growing_bytes_per_token * l + sum_swa(bytes_per_token * min(l, w)) + fixed_bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..profiles._base import derived
from ..profiles.model import Layer, ModelProfile, expand_layers
from .kinds import LayerKv, mixer_of


def layer_kv(layer: Layer, model: ModelProfile) -> LayerKv:
    """KV footprint of one resolved layer of ``model``."""
    return mixer_of(layer.mixer, model.dtypes).kv()


@dataclass(frozen=True)
class KvBreakdown:
    """S_kv at one length, split into its growing, window-bounded and fixed parts (bytes)."""

    length_tokens: int
    growing_bytes: float
    window_bytes: float
    fixed_bytes: float

    @property
    def total_bytes(self) -> float:
        return self.growing_bytes + self.window_bytes + self.fixed_bytes


@dataclass(frozen=True)
class KvModel:
    """S_kv(l) for a whole model: aggregated per-layer footprints."""

    growing_bytes_per_token: float
    windows: tuple[tuple[int, float], ...]  # (window_tokens, bytes per token) per SWA group
    fixed_bytes: float

    @classmethod
    def of(cls, model: ModelProfile) -> KvModel:
        """Aggregated once per profile (``profiles._base.derived``)."""
        return derived(model, "kv_model", cls._aggregate)

    @classmethod
    def _aggregate(cls, model: ModelProfile) -> KvModel:
        growing = 0.0
        fixed = 0.0
        windows: dict[int, float] = {}
        for layer in expand_layers(model):
            kv = layer_kv(layer, model)
            growing += kv.growing_bytes_per_token
            fixed += kv.fixed_bytes
            if kv.window_tokens:
                windows[kv.window_tokens] = windows.get(kv.window_tokens, 0.0) + kv.window_bytes_per_token
        return cls(growing, tuple(sorted(windows.items())), fixed)

    def breakdown(self, length_tokens: int) -> KvBreakdown:
        window = sum(b * min(length_tokens, w) for w, b in self.windows)
        return KvBreakdown(length_tokens, self.growing_bytes_per_token * length_tokens, window, self.fixed_bytes)

    def bytes_at(self, lengths_tokens) -> np.ndarray:
        """Vectorised S_kv(l) in bytes for an array of lengths."""
        lengths = np.asarray(lengths_tokens, dtype=float)
        total = self.growing_bytes_per_token * lengths + self.fixed_bytes
        for window, per_token in self.windows:
            total = total + per_token * np.minimum(lengths, window)
        return total

    @property
    def window_cap_bytes(self) -> float:
        """Largest size the window-bounded part reaches (bytes)."""
        return sum(b * w for w, b in self.windows)
