"""Does a model fit an instance? Weights plus KV against usable memory."""

from __future__ import annotations

import math

from ..accounting.kv import KvModel
from ..accounting.params import weight_bytes
from ..errors import PlanInputError
from ..profiles.model import ModelProfile
from .instance import Instance


def usable_memory_bytes(instance: Instance) -> float:
    """N x capacity x memory_usable_fraction (bytes)."""
    return instance.memory_bytes * instance.hardware.efficiency.memory_usable_fraction


def chips_needed(model: ModelProfile, instance: Instance, context_tokens: int) -> int:
    """Fewest chips whose usable memory holds the weights and one request's KV at the context."""
    per_chip = instance.hardware.memory_bytes * instance.hardware.efficiency.memory_usable_fraction
    need = weight_bytes(model) + float(KvModel.of(model).bytes_at(context_tokens))
    return math.ceil(need / per_chip)


def require_fit(model: ModelProfile, instance: Instance, context_tokens: int) -> None:
    """Raise a PlanInputError naming the chips needed if weights + one request's KV do not fit."""
    w_bytes = weight_bytes(model)
    kv_req = float(KvModel.of(model).bytes_at(context_tokens))
    usable = usable_memory_bytes(instance)
    if w_bytes + kv_req > usable:
        need = chips_needed(model, instance, context_tokens)
        raise PlanInputError(
            f"{model.name} does not fit on {instance.label}: weights {w_bytes / 1e9:.1f} GB + one request's KV "
            f"{kv_req / 1e9:.2f} GB exceed usable memory {usable / 1e9:.1f} GB; it needs at least {need} "
            f"{instance.hardware.name} chips",
            field="gpus",
        )
