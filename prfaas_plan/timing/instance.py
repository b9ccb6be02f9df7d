"""An instance: ``gpus`` chips of one hardware profile serving one model, laid out as ``layout``
(``timing.layout``; None: the best layout for each job is searched), run by an ``engine``
(``timing.cost.Engine``: overlap, expert imbalance, prefill pass budget, batch cap, MTP)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..profiles.hardware import HardwareProfile
from ..ranges import CHIPS_PER_INSTANCE
from .cost import MATMUL_DTYPE, Engine  # noqa: F401 - MATMUL_DTYPE re-exported
from .layout import Layout


@dataclass(frozen=True)
class Instance:
    hardware: HardwareProfile
    gpus: int = 8
    layout: Layout | None = None
    engine: Engine = field(default_factory=Engine)

    def __post_init__(self):
        CHIPS_PER_INSTANCE.check(self.gpus, "gpus")

    @property
    def memory_bytes(self) -> float:
        return self.gpus * self.hardware.memory_bytes

    @property
    def label(self) -> str:
        return f"{self.gpus}x{self.hardware.name}"

    def with_layout(self, layout: Layout) -> Instance:
        from dataclasses import replace

        return replace(self, layout=layout)
