"""Sliding-window attention: GQA over the last ``window_tokens`` tokens only.

KV per request: nkv (d_qk + d_v) elements x min(l, w) (bounded); prefill FLOPs over
sum_i min(i, w) keys; a decode step reads min(context, w) keys per request.
"""

from __future__ import annotations

from ...choices import MixerType
from ..kinds import LayerKv, mixer_kind
from .gqa import Gqa


@mixer_kind(MixerType.swa)
class Swa(Gqa):
    @property
    def window_tokens(self) -> int:
        return self.spec.window_tokens

    def kv(self) -> LayerKv:
        return LayerKv(window_bytes_per_token=self.kv_bytes_per_token, window_tokens=self.window_tokens)
