"""Dense FFN: (3 if gated (SwiGLU) else 2) x hidden x intermediate parameters, all used by
every token; a pass reads every weight once."""

from __future__ import annotations

from typing import ClassVar

from ...choices import FfnType
from ..kinds import FfnKind, FfnParams, Gemms, ffn_kind


@ffn_kind(FfnType.dense)
class Dense(FfnKind):
    kernels: ClassVar[int] = 4  # norm, gate and up projection, activation, down projection

    def params(self, hidden: int) -> FfnParams:
        return FfnParams((3 if self.spec.gated else 2) * hidden * self.spec.intermediate_size)

    def gemms(self, hidden: int) -> tuple[Gemms, Gemms]:
        i = self.spec.intermediate_size
        return ((((2 if self.spec.gated else 1) * hidden * i, hidden), (i * hidden, i)), ())
