"""Engine profile schema: what a serving engine (SGLang, TensorRT-LLM, vLLM) does by default and
how fast its kernels run relative to the chip's own efficiency fractions (``profiles.hardware``).

The shipped profiles are data (``timing/engines/<name>.yaml``); ``generic`` is the engine-neutral
model: today's serving defaults and every multiplier 1.

- ``defaults``: the serving settings of ``profiles.serving.EngineSpec`` the engine uses when a
  scenario or the command sets none, plus ``kv_dtype_fp8_checkpoint`` (the KV cache dtype the
  engine picks for an FP8 checkpoint when no KV dtype is given; null: the model profile's own)
  and ``max_batch`` (the engine's default limit on running requests per instance; null: none);
- ``kernels``: multipliers (1 = the chip's own fraction) on the rates of a kernel:
  ``attention.<kind>.prefill`` and ``.decode`` on the attention-core kernel of each attention
  kind (``choices.MixerType``) in a prefill pass and a decode step (prefill is compute-bound, so
  this is its FLOP rate; decode reads the KV, so its bandwidth), ``dense_gemm`` on the matmul
  rate of the projections, dense FFN, shared experts and output head, ``grouped_gemm`` on that of
  the routed experts, ``all_to_all`` on the MoE dispatch and combine rate, and
  ``step_overhead_s`` seconds added to every decode step (on top of the hardware's
  ``decode_step_overhead_s``), and ``linear_chunk_step_us``: the time of one chunk step of the
  engine's chunked linear-attention prefill kernels (a latency floor: a prompt's ceil(l / C)
  chunks follow one another, ``timing.cost``; 0: none);
- ``field_sources``: the source of each value that differs from ``generic`` (dotted path:
  ``defaults.chunked_prefill``, ``kernels.attention.mla.decode``), or ``assumption: ...``.
"""

from typing import Annotated

from pydantic import Field

from ..choices import Dtype, EngineName, MixerType
from ..ranges import (
    CHUNK_STEP_US,
    DECODE_BATCH,
    DECODE_STEP_OVERHEAD_S,
    EXPERT_IMBALANCE,
    KERNEL_MULTIPLIER,
    MTP_TOKENS,
    OVERLAP,
    PASS_TOKENS,
    SMOOTH_FACTOR,
)
from ._base import Items, StrictModel, Text, Within

_MULTIPLIER = Annotated[float, Within(KERNEL_MULTIPLIER)]


class EngineDefaults(StrictModel):
    """The engine's serving settings when none is given (``profiles.serving.EngineSpec``)."""

    overlap: Annotated[float, Within(OVERLAP)]
    expert_imbalance: Annotated[float, Within(EXPERT_IMBALANCE)]
    prefill_tokens_per_pass: Annotated[int, Within(PASS_TOKENS)]
    chunked_prefill: bool
    mtp_tokens_per_step: Annotated[float, Within(MTP_TOKENS)]
    kv_dtype_fp8_checkpoint: Dtype | None = None  # of a re-quantised (FP8/FP4) checkpoint; null: the model's own
    max_batch: Annotated[int, Within(DECODE_BATCH)] | None = None  # running requests per instance; null: memory decides
    dynamic_chunking: Annotated[float, Within(SMOOTH_FACTOR)] | None = None  # smooth factor; null: fixed chunks


class PhaseMultipliers(StrictModel):
    prefill: _MULTIPLIER = 1.0
    decode: _MULTIPLIER = 1.0


class AttentionMultipliers(StrictModel):
    """Per attention kind (``choices.MixerType`` values)."""

    gqa: PhaseMultipliers = Field(default_factory=PhaseMultipliers)
    mla: PhaseMultipliers = Field(default_factory=PhaseMultipliers)
    swa: PhaseMultipliers = Field(default_factory=PhaseMultipliers)
    linear: PhaseMultipliers = Field(default_factory=PhaseMultipliers)
    sparse: PhaseMultipliers = Field(default_factory=PhaseMultipliers)


assert set(AttentionMultipliers.model_fields) == {str(m) for m in MixerType}, "one entry per attention kind"


class EngineKernels(StrictModel):
    attention: AttentionMultipliers = Field(default_factory=AttentionMultipliers)
    dense_gemm: _MULTIPLIER = 1.0
    grouped_gemm: _MULTIPLIER = 1.0
    all_to_all: _MULTIPLIER = 1.0
    step_overhead_s: Annotated[float, Within(DECODE_STEP_OVERHEAD_S)] = 0.0
    linear_chunk_step_us: Annotated[float, Within(CHUNK_STEP_US)] = 0.0


class EngineProfile(StrictModel):
    name: EngineName
    description: Text = ""
    sources: Annotated[list[Text], Items()] = Field(default_factory=list)
    defaults: EngineDefaults
    kernels: EngineKernels = Field(default_factory=EngineKernels)
    field_sources: dict[Text, Text] = Field(default_factory=dict, max_length=64)


def flat_values(profile: EngineProfile) -> dict[str, object]:
    """Every value of ``defaults`` and ``kernels`` by dotted path (``kernels.attention.mla.decode``)."""

    def flat(data: dict, prefix: str = "") -> dict[str, object]:
        out: dict[str, object] = {}
        for key, value in data.items():
            out |= flat(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value}
        return out

    return flat(profile.model_dump(mode="json", include={"defaults", "kernels"}))
