"""Dense FFN: (3 if gated (SwiGLU) else 2) x hidden x intermediate parameters, all used by
every token; a pass reads every weight once."""

from __future__ import annotations

from ...choices import FfnType
from ..kinds import FfnKind, FfnParams, ffn_kind


@ffn_kind(FfnType.dense)
class Dense(FfnKind):
    def params(self, hidden: int) -> FfnParams:
        return FfnParams((3 if self.spec.gated else 2) * hidden * self.spec.intermediate_size)
