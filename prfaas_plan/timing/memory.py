"""Does a model fit an instance? Weights plus KV against usable memory, per chip of a layout.

Usable memory per chip = capacity x ``memory_usable_fraction``. A layout fits when, on every
chip, its share of the weights plus the KV of one request at the context fits
(``timing.cost.weights_per_chip`` and ``kv_per_chip``: attention weights are copied to every
attention group, MLA's latent KV to every chip of a tensor-parallel group).
"""

from __future__ import annotations

import math

from ..accounting.kv import KvModel
from ..accounting.params import weight_bytes
from ..accounting.work import prefill_work
from ..errors import PlanInputError
from ..profiles._base import derived
from ..profiles.model import ModelProfile, expand_layers
from .cost import kv_per_chip, weights_per_chip
from .instance import Instance
from .layout import Layout, candidate_layouts, check_layout, heads_of, layout_mismatch

CHIP_BYTES_ENTRIES = 4096  # per model: (layout, context) pairs of a layout search or a calibration


def usable_per_chip(instance: Instance) -> float:
    return instance.hardware.memory_bytes * instance.hardware.efficiency.memory_usable_fraction


def chips_needed(model: ModelProfile, instance: Instance, context_tokens: int) -> tuple[int, Layout | None]:
    """Fewest chips of this hardware that hold the model and one request's KV at the context in
    some layout (tensor parallel over a divisor of the heads, with or without expert parallelism,
    times a pipeline of up to one stage per layer), and that layout; (0, None) if none does."""
    usable = usable_per_chip(instance)
    best: tuple[int, Layout | None] = (0, None)
    layers = len(expand_layers(model))
    total = weight_bytes(model) + float(KvModel.of(model).bytes_at(context_tokens))
    floor_chips = max(1, math.ceil(total / usable))
    moe = any(getattr(layer.ffn, "num_experts", 0) for layer in expand_layers(model))
    for tp in _tp_choices(model):
        for ep in {1, tp} if moe else {1}:
            first = max(1, math.ceil(floor_chips / tp))
            for pp in range(first, layers + 1):
                layout = Layout(tp=tp, ep=ep, pp=pp)
                if best[0] and layout.chips >= best[0]:
                    break
                if not reachable(instance.hardware, layout):
                    break
                if layout_mismatch(model, layout) is None and sum(chip_bytes(model, layout, context_tokens)) <= usable:
                    best = (layout.chips, layout)
                    break
    return best


def reachable(hw, layout: Layout) -> bool:
    """A replica can communicate: it fits one scale-up domain, or the chips have a NIC."""
    return hw.nic_gbps is not None or layout.replica_chips <= hw.scale_up_domain_chips


def _tp_choices(model: ModelProfile) -> list[int]:
    heads = [h for h in (heads_of(layer.mixer) for layer in expand_layers(model)) if h]
    g = math.gcd(*heads) if heads else 1
    return [d for d in range(1, g + 1) if g % d == 0]


def chip_bytes(model: ModelProfile, layout: Layout, context_tokens: int) -> tuple[float, float]:
    """(weights, KV of one request at the context) on one chip of the layout, bytes (kept per
    model: a layout search and a calibration ask for the same ones again and again)."""
    cache: dict = derived(model, "chip_bytes", lambda _m: {})
    key = (layout, int(context_tokens))
    if key not in cache:
        if len(cache) >= CHIP_BYTES_ENTRIES:
            cache.pop(next(iter(cache)))
        groups = prefill_work(model, [float(context_tokens)])
        cache[key] = (weights_per_chip(model, layout, groups), float(kv_per_chip(layout, groups, model)[0]))
    return cache[key]


def fitting_layouts(model: ModelProfile, instance: Instance, context_tokens: int, field: str = "parallel") -> list[Layout]:
    """The instance's layout if it fits, else every candidate layout that fits (errors if none)."""
    usable = usable_per_chip(instance)
    if instance.layout is not None:
        check_layout(model, instance.layout, instance.gpus, field)
        weights, kv = chip_bytes(model, instance.layout, context_tokens)
        if weights + kv > usable:
            raise PlanInputError(
                f"{model.name} does not fit {instance.label} as {instance.layout.label}: "
                f"{(weights + kv) / 1e9:.1f} GB per chip (weights {weights / 1e9:.1f} GB) against "
                f"{usable / 1e9:.1f} GB usable",
                field=field,
            )
        return [instance.layout]
    candidates = candidate_layouts(model, instance.gpus)
    hw = instance.hardware
    fits = [layout for layout in candidates if reachable(hw, layout) and sum(chip_bytes(model, layout, context_tokens)) <= usable]
    if not fits and any(sum(chip_bytes(model, layout, context_tokens)) <= usable for layout in candidates):
        raise PlanInputError(
            f"{model.name} fits {instance.label} only in layouts that span more than one scale-up "
            f"domain of {hw.scale_up_domain_chips} chips, and '{hw.name}' has no nic_gbps: add "
            "nic_gbps to the profile",
            field="nic_gbps",
        )
    if not fits:
        need, layout = chips_needed(model, instance, context_tokens)
        w_bytes = weight_bytes(model)
        kv_req = float(KvModel.of(model).bytes_at(context_tokens))
        where = (
            f"; it needs at least {need} {instance.hardware.name} chips (as {layout.label})"
            if layout is not None
            else f"; no layout of {instance.hardware.name} chips holds it"
        )
        raise PlanInputError(
            f"{model.name} does not fit on {instance.label}: weights {w_bytes / 1e9:.1f} GB + one request's KV "
            f"{kv_req / 1e9:.2f} GB at {context_tokens:,} tokens, against {usable / 1e9:.3g} GB usable per chip" + where,
            field="gpus",
        )
    return fits


def require_fit(model: ModelProfile, instance: Instance, context_tokens: int) -> None:
    """Raise a PlanInputError naming the chips needed if no layout of the instance holds the
    weights and one request's KV at the context."""
    fitting_layouts(model, instance, context_tokens, field="gpus")
