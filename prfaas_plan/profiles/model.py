"""Model profile schema: architecture facts needed for KV, FLOP and byte accounting.

A profile names its mixer blocks (attention of one kind with its parameters) and FFN
blocks once, then lays out the layer stack compactly: a pattern of block names that
repeats to fill ``layers.count``, plus overrides for exceptional layers (0-indexed).
Pattern items are ``MIXER`` or ``MIXER:FFN``; ``none`` means the layer has no mixer
(an MLP-only layer) or no FFN (a mixer-only layer, as in Nemotron-H).
"""

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, Strict, model_validator

from ..choices import ComputeDtype, Dtype, FfnType, LinearKind, MixerType
from ..ranges import (
    CHIPS_PER_INSTANCE,
    DECODE_TOKENS_PER_S,
    EXPERTS,
    HEADS,
    LAYERS,
    PARAMS_B,
    PREFILL_SECONDS,
    WIDTH,
    Range,
)
from ._base import Items, Name, StrictModel, Text, Tokens, Within, derived, refuse, validate_or_raise

NONE_BLOCK = "none"
_HEADS = Annotated[int, Within(HEADS)]
_WIDTH = Annotated[int, Within(WIDTH)]
_EXPERTS = Annotated[int, Within(EXPERTS)]
_KV_BYTES = Range(1, 1e13, "bytes", "measured KV bytes of one request")


class GqaAttention(StrictModel):
    """Grouped-query attention (MHA: kv heads = query heads; MQA: 1 kv head)."""

    type: Literal[MixerType.gqa]
    num_query_heads: _HEADS
    num_kv_heads: _HEADS
    qk_head_dim: _WIDTH
    v_head_dim: _WIDTH | None = None  # defaults to qk_head_dim
    output_gate: bool = False  # a sigmoid gate projection h -> heads*v_dim (Qwen3.5)

    @property
    def v_dim(self) -> int:
        return self.v_head_dim or self.qk_head_dim

    _heads_divide = refuse(lambda s: s.num_query_heads % s.num_kv_heads, "num_query_heads must be a multiple of num_kv_heads")


class SwaAttention(GqaAttention):
    """Sliding-window attention: GQA over the last ``window_tokens`` tokens only."""

    type: Literal[MixerType.swa]  # type: ignore[assignment]
    window_tokens: Tokens


class MlaAttention(StrictModel):
    """Multi-head latent attention (DeepSeek-V2/V3, Kimi K2): cached latent + rope key."""

    type: Literal[MixerType.mla]
    num_heads: _HEADS
    kv_lora_rank: _WIDTH
    qk_rope_head_dim: _WIDTH
    qk_nope_head_dim: _WIDTH
    v_head_dim: _WIDTH
    q_lora_rank: _WIDTH | None = None  # None: direct query projection


class SparseAttention(MlaAttention):
    """DeepSeek-V3.2 sparse attention: MLA over the top-k keys chosen by an indexer."""

    type: Literal[MixerType.sparse]  # type: ignore[assignment]
    index_num_heads: _HEADS
    index_head_dim: _WIDTH
    index_topk_tokens: Tokens
    index_key_dtype: Dtype | None = None  # defaults to the model's KV dtype


class LinearAttention(StrictModel):
    """Linear attention / state-space mixer with a fixed recurrent state per request.

    State per request and layer: ``num_heads x key_head_dim x value_head_dim`` elements
    (Mamba2: heads x state_size x head_dim, with key_head_dim = state size and
    num_key_heads = groups), plus a short-convolution state of
    ``conv_channels x (conv_kernel - 1)`` elements.
    """

    type: Literal[MixerType.linear]
    kind: LinearKind
    num_heads: _HEADS  # value heads
    num_key_heads: _HEADS | None = None  # defaults to num_heads
    key_head_dim: _WIDTH
    value_head_dim: _WIDTH
    conv_channels: Annotated[int, Strict(), Field(ge=0, le=int(WIDTH.hi))] = 0
    conv_kernel: Annotated[int, Strict(), Field(ge=0, le=1024)] = 0
    output_gate: bool = False
    chunk_tokens: Annotated[int, Strict(), Field(ge=1, le=65_536)] = 64  # chunk of the chunked-parallel kernel
    state_dtype: Dtype | None = None  # defaults to the model's state dtype

    @property
    def key_heads(self) -> int:
        return self.num_key_heads or self.num_heads


MixerBlock = GqaAttention | SwaAttention | MlaAttention | SparseAttention | LinearAttention  # one per MixerType
Mixer = Annotated[MixerBlock, Field(discriminator="type")]


class DenseFfn(StrictModel):
    type: Literal[FfnType.dense]
    intermediate_size: _WIDTH
    gated: bool = True  # SwiGLU: 3 matrices; False: 2 (e.g. relu^2 in Nemotron-H)


class MoeFfn(StrictModel):
    type: Literal[FfnType.moe]
    num_experts: _EXPERTS
    top_k: _EXPERTS
    expert_intermediate_size: _WIDTH
    shared_experts: Annotated[int, Strict(), Field(ge=0, le=int(EXPERTS.hi))] = 0
    shared_intermediate_size: _WIDTH | None = None  # defaults to expert size
    gated: bool = True

    _topk = refuse(lambda s: s.top_k > s.num_experts, "top_k cannot exceed num_experts")


FfnBlock = DenseFfn | MoeFfn  # one per FfnType
Ffn = Annotated[FfnBlock, Field(discriminator="type")]


class Dtypes(StrictModel):
    weights: Dtype = Dtype.bf16
    experts: Dtype | None = None  # routed-expert weights, if stored differently (gpt-oss: fp4)
    kv: Dtype = Dtype.bf16
    state: Dtype = Dtype.fp32
    activations: Dtype = Dtype.bf16
    attention: ComputeDtype = ComputeDtype.bf16  # the dtype attention cores compute in (fp8: FP8 attention kernels)


_LayerIndex = Annotated[int, Strict(), Field(ge=-int(LAYERS.hi), le=int(LAYERS.hi))]


class LayerOverride(StrictModel):
    layers: Annotated[list[_LayerIndex], Items()] | Text  # 0-indexed list, or ranges "0-2,5"
    mixer: Name | None = None
    ffn: Name | None = None


class LayerStack(StrictModel):
    count: Annotated[int, Within(LAYERS)]
    pattern: Annotated[list[Name], Items(min_length=1)]
    ffn: Name = NONE_BLOCK
    overrides: Annotated[list[LayerOverride], Items()] = Field(default_factory=list)


class PrefillPoint(StrictModel):
    """A prefill's latency, seconds, at one request length: measured, or implied by a measurement
    (a scenario's ``calibration_points``)."""

    length_tokens: Tokens
    prefill_s: Annotated[float, Within(PREFILL_SECONDS)]


class MeasuredPrefillPoint(PrefillPoint):
    """A measured prefill point, with the KV bytes of its request if measured."""

    kv_bytes: Annotated[int, Within(_KV_BYTES)] | None = None
    kv_mib: Annotated[float, Within(Range(0, 1e7, "MiB", "", lo_open=True))] | None = None

    @property
    def kv(self) -> float | None:
        if self.kv_bytes is not None:
            return float(self.kv_bytes)
        if self.kv_mib is not None:
            return self.kv_mib * 2**20
        return None


class MeasuredProfile(StrictModel):
    """Measurements of this model on one instance (hardware name x gpus)."""

    hardware: Name
    gpus: Annotated[int, Within(CHIPS_PER_INSTANCE)]
    source: Text
    prefill: Annotated[list[MeasuredPrefillPoint], Items()] = Field(default_factory=list)
    decode_tokens_per_s: Annotated[float, Within(DECODE_TOKENS_PER_S)] | None = None
    decode_context_tokens: Tokens | None = None

    @model_validator(mode="after")
    def _points(self):
        lengths = [p.length_tokens for p in self.prefill]
        if len(set(lengths)) != len(lengths):
            raise ValueError("prefill points repeat a length")
        pts = sorted(self.prefill, key=lambda p: p.length_tokens)
        if any(b.prefill_s < a.prefill_s for a, b in zip(pts, pts[1:])):
            raise ValueError("prefill_s must not fall as length grows")
        if len({p.kv is None for p in pts}) > 1:
            raise ValueError("give kv_bytes (or kv_mib) for every prefill point or for none")
        return self


class ModelProfile(StrictModel):
    name: Name
    description: Text = ""
    sources: Annotated[list[Text], Items()] = Field(default_factory=list)
    assumptions: Annotated[list[Text], Items()] = Field(default_factory=list)
    total_params_b: Annotated[float, Within(PARAMS_B)] | None = None  # declared, billions (incl. embeddings, MTP)
    active_params_b: Annotated[float, Within(PARAMS_B)] | None = None
    hidden_size: _WIDTH
    vocab_size: _WIDTH
    tie_word_embeddings: bool = False
    max_context_tokens: Tokens
    dtypes: Dtypes = Field(default_factory=Dtypes)
    mixers: Annotated[dict[Name, Mixer], Field(max_length=256)]
    ffns: Annotated[dict[Name, Ffn], Field(max_length=256)] = Field(default_factory=dict)
    layers: LayerStack
    measured: Annotated[list[MeasuredProfile], Items()] = Field(default_factory=list)

    @model_validator(mode="after")
    def _references(self):
        # Resolving the stack checks every name and index; errors carry the field path.
        expand_layers(self)
        return self

    def measured_for(self, hardware: str, gpus: int) -> MeasuredProfile | None:
        return next((entry for entry in self.measured if entry.hardware == hardware and entry.gpus == gpus), None)


@dataclass(frozen=True)
class Layer:
    """One resolved layer of the stack."""

    index: int
    mixer_name: str
    mixer: MixerBlock | None
    ffn_name: str
    ffn: FfnBlock | None


def parse_layer_indices(spec: list[int] | str, count: int) -> list[int]:
    """'0-2,5' or [0, 1, 2, 5] -> [0, 1, 2, 5]; negative ints count from the end."""

    def resolved(idx: int) -> int:
        if not -count <= idx < count:
            raise ValueError(f"layer index {idx} is outside 0..{count - 1}")
        return idx % count

    if not isinstance(spec, str):
        return [resolved(idx) for idx in spec]
    out: list[int] = []
    for part in filter(None, map(str.strip, spec.split(","))):
        if "-" in part[1:]:
            lo, hi = part.split("-", 1) if not part.startswith("-") else (part, part)
            try:
                first, last = int(lo), int(hi)
            except ValueError:
                raise ValueError(f"'{part}' is not a layer index or range") from None
            if first > last:
                raise ValueError(f"range '{part}' runs backwards")
            out.extend(range(resolved(first), resolved(last) + 1))  # ends checked before expanding
        else:
            try:
                out.append(int(part))
            except ValueError:
                raise ValueError(f"'{part}' is not a layer index") from None
    return [resolved(idx) for idx in out]


def expand_layers(model: ModelProfile) -> list[Layer]:
    """Resolve ``model.layers`` into one :class:`Layer` per layer (raises ValueError); computed
    once per profile."""
    return derived(model, "layers", _expand)


def _expand(model: ModelProfile) -> list[Layer]:
    stack = model.layers

    def block(kind: str, blocks: dict, name: str, layer: int):
        if name == NONE_BLOCK:
            return None
        if name not in blocks:
            raise ValueError(f"layers (layer {layer}): unknown {kind} '{name}' (defined: {', '.join(blocks) or 'none'})")
        return blocks[name]

    items = [(mixer.strip(), ffn.strip() or stack.ffn) for mixer, _, ffn in (item.partition(":") for item in stack.pattern)]
    names = [list(items[i % len(items)]) for i in range(stack.count)]
    for k, override in enumerate(stack.overrides):
        try:
            indices = parse_layer_indices(override.layers, stack.count)
        except ValueError as exc:
            raise ValueError(f"layers.overrides[{k}].layers: {exc}") from None
        for idx in indices:
            if override.mixer is not None:
                names[idx][0] = override.mixer
            if override.ffn is not None:
                names[idx][1] = override.ffn
    return [
        Layer(i, mix, block("mixer", model.mixers, mix, i), ffn, block("ffn", model.ffns, ffn, i))
        for i, (mix, ffn) in enumerate(names)
    ]


def load_model_profile(data: object, source: str | None = None) -> ModelProfile:
    """Validate a parsed YAML mapping into a :class:`ModelProfile` (PlanInputError on failure)."""
    return validate_or_raise(ModelProfile, data, source)
