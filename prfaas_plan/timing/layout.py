"""The parallel layout of one instance, and the search for the best one.

An instance of N chips runs ``replicas`` independent copies of the model. Each replica is a
pipeline of ``pp`` stages; each stage has S = ``tp`` x ``dp_attention`` chips:
- attention runs in ``dp_attention`` data-parallel groups (each with its own requests and a
  full copy of the attention weights), each group tensor-parallel over ``tp`` chips
  (heads split; MLA's latent KV cannot be split by heads and is held whole on each chip);
- a dense FFN is tensor-parallel over all S chips of the stage;
- routed experts are spread over ``ep`` ranks (expert parallel; ceil(E / ep) experts on the
  busiest, as with redundant experts when ep does not divide E), each
  expert split over S / ep chips; the shared experts and the router run where the tokens are;
- the layers are split evenly over the ``pp`` stages.
So ``{tp: 8}`` is plain tensor parallelism, ``{ep: 32, dp_attention: 32}`` is SGLang's and
TensorRT-LLM's DP-attention + EP for DeepSeek and Qwen3 MoE, ``{tp: 4, pp: 4}`` a pipeline of
4-chip stages, and ``{replicas: 4, tp: 2}`` four 2-chip replicas in an 8-chip instance.

``candidate_layouts`` lists the layouts of N chips that the model can use (heads and experts
divide; every stage holds at least one layer); memory fit is checked by ``timing.memory``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..errors import PlanInputError, show
from ..profiles._base import derived
from ..profiles.model import ModelProfile, expand_layers
from ..ranges import CHIPS_PER_INSTANCE

FIELDS = ("tp", "dp_attention", "ep", "pp", "replicas")


@dataclass(frozen=True)
class Layout:
    tp: int = 1
    dp_attention: int = 1
    ep: int = 1
    pp: int = 1
    replicas: int = 1

    @property
    def stage_chips(self) -> int:
        """S: chips of one pipeline stage (tp x dp_attention)."""
        return self.tp * self.dp_attention

    @property
    def replica_chips(self) -> int:
        return self.stage_chips * self.pp

    @property
    def chips(self) -> int:
        return self.replica_chips * self.replicas

    @property
    def moe_tp(self) -> int:
        """Chips each routed expert is split over: S / ep."""
        return self.stage_chips // self.ep

    @property
    def label(self) -> str:
        parts = [f"{name}{getattr(self, name)}" for name in ("tp", "dp_attention", "ep", "pp") if getattr(self, name) > 1]
        inner = " ".join(parts) or "1 chip"
        inner = inner.replace("dp_attention", "dp-attn")
        return f"{self.replicas} x ({inner})" if self.replicas > 1 else inner

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def parse_layout(spec: str | dict | Layout, field: str = "parallel") -> Layout:
    """``tp=4,pp=4``, ``{ep: 32, dp_attention: 32}`` (text or mapping) or a Layout; a PlanInputError naming ``field``."""
    if isinstance(spec, Layout):
        return spec
    if hasattr(spec, "model_dump"):  # a profiles.serving.LayoutSpec, already checked
        return Layout(**spec.model_dump())
    if isinstance(spec, str):
        items: dict[str, object] = {}
        text = spec.replace(" ", "")
        if text.startswith("{") and text.endswith("}"):  # the YAML flow form {ep: 32, dp_attention: 32}
            text = text[1:-1].replace(":", "=")
        for part in text.split(","):
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise PlanInputError(f"{show(part)} is not name=value (e.g. tp=8 or ep=32,dp_attention=32)", field=field)
            if key in items:
                raise PlanInputError(f"{show(key)} is given twice", field=field)
            try:
                items[key] = int(value)
            except ValueError:
                raise PlanInputError(f"{show(value)} is not a whole number", field=f"{field} {key}") from None
        if not items:
            raise PlanInputError("is empty: give a layout such as tp=8 or ep=32,dp_attention=32", field=field)
        spec = items
    if not isinstance(spec, dict):
        raise PlanInputError("must be a mapping such as {tp: 8}", field=field)
    unknown = set(spec) - set(FIELDS)
    if unknown:
        raise PlanInputError(f"unknown {', '.join(sorted(map(str, unknown)))} (use {', '.join(FIELDS)})", field=field)
    for key, value in spec.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise PlanInputError(f"must be a whole number, got {show(value)}", field=f"{field}.{key}")
        CHIPS_PER_INSTANCE.check(value, f"{field}.{key}")
    layout = Layout(**spec)
    if layout.stage_chips % layout.ep:
        raise PlanInputError(f"ep ({layout.ep}) must divide tp x dp_attention ({layout.stage_chips})", field=field)
    return layout


def check_layout(model: ModelProfile, layout: Layout, chips: int, field: str = "parallel") -> None:
    """The layout uses exactly ``chips`` chips and the model's heads, experts and layers divide."""
    if layout.chips != chips:
        raise PlanInputError(f"{layout.label} uses {layout.chips} chips, the instance has {chips}", field=field)
    problem = layout_mismatch(model, layout)
    if problem:
        raise PlanInputError(f"{layout.label} does not suit {model.name}: {problem}", field=field)


def layout_mismatch(model: ModelProfile, layout: Layout) -> str | None:
    """Why a layout cannot run the model (None: it can): more stages than layers, tp not
    dividing every layer's heads, ep above a layer's experts, or EP on a dense model."""
    layers, heads, experts = _shape_of(model)
    if layout.pp > layers:
        return f"{layout.pp} pipeline stages for {layers} layers"
    for h in heads:
        if h % layout.tp:
            return f"tp {layout.tp} does not divide the {h} attention heads"
    if experts and layout.ep > min(experts):
        return f"ep {layout.ep} exceeds the {min(experts)} experts"
    if layout.ep > 1 and not experts:
        return "expert parallelism needs an MoE model"
    return None


def _shape_of(model: ModelProfile) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """(layers, the distinct head counts in layer order, the distinct expert counts), per model."""

    def compute(m: ModelProfile):
        layers = expand_layers(m)
        heads = tuple(dict.fromkeys(h for h in (heads_of(layer.mixer) for layer in layers) if h))
        experts = tuple(dict.fromkeys(e for e in (getattr(layer.ffn, "num_experts", 0) for layer in layers) if e))
        return len(layers), heads, experts

    return derived(model, "layout_shape", compute)


def heads_of(mixer) -> int:
    if mixer is None:
        return 0
    return getattr(mixer, "num_query_heads", 0) or getattr(mixer, "num_heads", 0)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, int(n**0.5) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def candidate_layouts(model: ModelProfile, chips: int, max_candidates: int = 4096) -> list[Layout]:
    """Every layout of ``chips`` chips that suits the model (see ``layout_mismatch``), plain layouts
    first. Expert parallelism spans a whole stage (ep = S, the common deployment) or is off."""
    moe = bool(_shape_of(model)[2])
    out = []
    for replicas in _divisors(chips):
        replica = chips // replicas
        for pp in _divisors(replica):
            stage = replica // pp
            for tp in _divisors(stage):
                dp = stage // tp
                for ep in {1, stage} if moe else {1}:
                    layout = Layout(tp=tp, dp_attention=dp, ep=ep, pp=pp, replicas=replicas)
                    if layout_mismatch(model, layout) is None:
                        out.append(layout)
                    if len(out) >= max_candidates:
                        return out
    return out
