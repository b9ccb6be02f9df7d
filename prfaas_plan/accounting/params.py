"""Parameter counts from the architecture, and the weight bytes an instance must hold.

Each block kind counts its own matrices (``accounting/mixers``, ``accounting/ffns``);
embeddings are vocab x hidden (twice unless tied). Norms, biases and small gate vectors are
ignored (< 0.1% of any profiled model). A declared ``total_params_b`` that differs from the
architecture's count by more than 5% is reported (``declared_params_mismatch``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..profiles._base import derived
from ..profiles.model import Layer, ModelProfile, expand_layers
from ..units import dtype_bytes
from .ffns.moe import expected_distinct_experts  # noqa: F401 - re-exported
from .kinds import FfnParams, ffn_of, mixer_of

DECLARED_PARAMS_TOLERANCE = 0.05


def layer_params(layer: Layer, model: ModelProfile) -> tuple[int, FfnParams]:
    """(mixer parameters, FFN parameters) of one resolved layer."""
    h = model.hidden_size
    return mixer_of(layer.mixer, model.dtypes).params(h), ffn_of(layer.ffn, model.dtypes).params(h)


@dataclass(frozen=True)
class ParamCounts:
    """Architecture parameter counts (computed)."""

    embedding: int
    layers_total: int
    layers_active: int
    routed_expert_total: int

    @property
    def total(self) -> int:
        return self.embedding + self.layers_total

    @property
    def active(self) -> int:
        return self.embedding + self.layers_active


def count_params(model: ModelProfile) -> ParamCounts:
    """Counted once per profile object (``profiles._base.derived``)."""
    return derived(model, "param_counts", _count)


def _count(model: ModelProfile) -> ParamCounts:
    embedding = model.vocab_size * model.hidden_size * (1 if model.tie_word_embeddings else 2)
    total = active = routed = 0
    for layer in expand_layers(model):
        m, f = layer_params(layer, model)
        total += m + f.total
        active += m + f.active
        routed += f.per_expert * f.num_experts
    return ParamCounts(embedding, total, active, routed)


def declared_params_mismatch(model: ModelProfile) -> str | None:
    """A warning when a declared parameter count disagrees with the layer stack by more than 5%:
    the total (which sizes the weights), and the active count, which publications give with both
    embedding matrices, with the output head only, or with neither (any one may match)."""
    counts = count_params(model)
    problems = []
    if model.total_params_b is not None:
        counted = counts.total / 1e9
        if abs(model.total_params_b / counted - 1) > DECLARED_PARAMS_TOLERANCE:
            problems.append(
                f"total_params_b {model.total_params_b:g} differs by "
                f"{100 * (model.total_params_b / counted - 1):+.0f}% from the {counted:,.1f}B its layer stack "
                "counts (weight bytes use the declared figure)"
            )
    if model.active_params_b is not None:
        head = counts.embedding // (1 if model.tie_word_embeddings else 2)
        conventions = [(counts.active - k) / 1e9 for k in (0, counts.embedding - head, counts.embedding)]
        if all(abs(model.active_params_b / c - 1) > DECLARED_PARAMS_TOLERANCE for c in conventions):
            problems.append(
                f"active_params_b {model.active_params_b:g} matches none of the {conventions[-1]:,.1f}B "
                f"to {conventions[0]:,.1f}B its layer stack counts"
            )
    return f"model '{model.name}': " + "; ".join(problems) if problems else None


def weight_bytes(model: ModelProfile) -> float:
    """Bytes of weights an instance holds: routed experts at ``dtypes.experts`` (if set),
    everything else at ``dtypes.weights``. Uses the declared total parameter count when
    given (it includes MTP modules, norms and biases the architecture count omits)."""
    counts = count_params(model)
    total = model.total_params_b * 1e9 if model.total_params_b else float(counts.total)
    w_b = dtype_bytes(model.dtypes.weights)
    if model.dtypes.experts is None:
        return total * w_b
    e_b = dtype_bytes(model.dtypes.experts)
    routed = counts.routed_expert_total
    # the declared total's extras (MTP, norms) are charged at the dense dtype; never fewer
    # dense parameters than the architecture has
    dense = max(total - routed, counts.total - routed)
    return routed * e_b + dense * w_b
