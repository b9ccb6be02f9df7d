"""How an instance is served, as a scenario or the CLI states it: the parallel layout, the
serving engine's settings and precision overrides of the model. Shared by the scenario schema
(``prfaas.parallel``, ``pd.engine``, ``precision``), the CLI options and the library.

- ``parallel``: ``{tp, dp_attention, ep, pp, replicas}`` chips (``timing.layout``); omitted: the
  planner searches the layouts that fit.
- ``engine``: ``name`` (``choices.EngineName``: generic, sglang, trtllm, vllm; its profile,
  ``timing/engines/<name>.yaml``, gives every setting left out and the engine's kernel
  efficiencies; a bare name, ``engine: sglang``, means ``{name: sglang}``), ``overlap`` (share of
  communication hidden behind compute, e.g. two-batch overlap; 0 to 1), ``expert_imbalance``
  (tokens on the busiest expert rank over the mean, with expert parallelism; generic 1.18:
  SGLang's DeepSeek prefill on 4 x 8 H100 ran 18% slower with its default expert placement than
  with a simulated perfect balance, 50,302 against 59,337 tokens/s per node (lmsys.org blog,
  2025-05-05); 1 for a perfect load balancer),
  ``prefill_tokens_per_pass`` (the token budget of one pass and attention group: prompt chunks,
  and in an offline run the running requests' decode tokens too), ``chunked_prefill`` (true:
  prompts are split to fill a pass; false: a pass admits whole prompts only, as TensorRT-LLM
  does by default, and the budget must hold the longest prompt),
  ``mtp_tokens_per_step`` (tokens accepted per decode step with multi-token prediction or
  speculative decoding; 1 without). Each setting left out (None) is the engine profile's.
- ``precision``: the dtype of the weights, the routed experts, the KV cache and the attention
  compute (``kv: fp8`` halves S_kv and Phi_kv; ``attention: fp8`` runs attention cores at the
  chip's fp8 peak). A KV dtype left out, on an FP8 checkpoint (weights fp8), is the one the
  engine picks for it (``kv_fp8_checkpoint`` of ``applied``, the engine profile's
  ``kv_dtype_fp8_checkpoint``).
"""

from typing import Annotated

from pydantic import model_validator

from ..choices import ComputeDtype, Dtype, EngineName
from ..errors import warn
from ..ranges import EXPERT_IMBALANCE, MTP_TOKENS, OVERLAP, PASS_TOKENS, SMOOTH_FACTOR
from ._base import Chips, StrictModel, Within, refuse
from .model import ModelProfile


class LayoutSpec(StrictModel):
    tp: Chips = 1
    dp_attention: Chips = 1
    ep: Chips = 1
    pp: Chips = 1
    replicas: Chips = 1

    _ep_divides = refuse(
        lambda s: (s.tp * s.dp_attention) % s.ep, lambda s: f"ep ({s.ep}) must divide tp x dp_attention ({s.tp * s.dp_attention})"
    )


class EngineSpec(StrictModel):
    """The engine and the settings given for it (None: the engine profile's default)."""

    name: EngineName = EngineName.generic
    overlap: Annotated[float, Within(OVERLAP)] | None = None
    expert_imbalance: Annotated[float, Within(EXPERT_IMBALANCE)] | None = None
    prefill_tokens_per_pass: Annotated[int, Within(PASS_TOKENS)] | None = None
    chunked_prefill: bool | None = None
    mtp_tokens_per_step: Annotated[float, Within(MTP_TOKENS)] | None = None
    dynamic_chunking: Annotated[float, Within(SMOOTH_FACTOR)] | None = None  # SGLang's smooth factor (0: fixed chunks)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data):
        """``engine: sglang`` means ``{name: sglang}``."""
        return {"name": data} if isinstance(data, str) else data


QUANTISED = (Dtype.fp8, Dtype.fp4)  # dtypes a re-quantised checkpoint's weights are in


class PrecisionSpec(StrictModel):
    weights: Dtype | None = None
    experts: Dtype | None = None
    kv: Dtype | None = None
    attention: ComputeDtype | None = None

    def applied(self, model: ModelProfile, kv_fp8_checkpoint: Dtype | None = None) -> ModelProfile:
        """The model with these dtypes (a new profile; the shipped one is untouched). Measured
        points were taken at the profile's own dtypes, so a profile whose dtypes change loses them
        (the roofline then stands for it). ``kv_fp8_checkpoint``: the KV dtype when none is given
        here and these overrides quantise the weights or experts to fp8 or fp4 (a re-quantised
        checkpoint, e.g. NVIDIA ModelOpt's, which declares its KV quantisation in
        ``hf_quant_config.json``: the engine's choice for it, ``profiles.engine``; None: the
        model's own). A natively FP8 release (the profile's own fp8 weights, e.g. DeepSeek-V3)
        declares no KV quantisation and keeps its KV dtype."""
        update = self.model_dump(exclude_none=True)
        quantised = any(update.get(part) in QUANTISED for part in ("weights", "experts"))
        if kv_fp8_checkpoint is not None and "kv" not in update and quantised:
            update["kv"] = kv_fp8_checkpoint
        if not update:
            return model
        if "weights" in update and "experts" not in update and model.dtypes.experts == model.dtypes.weights:
            update["experts"] = update["weights"]
        dtypes = model.dtypes.model_copy(update=update)
        if dtypes == model.dtypes:
            return model
        if model.measured:
            warn(
                f"{model.name}'s measured points were taken at its own dtypes, so with these precision overrides "
                "the roofline stands for them (and sizes prefill pools by saturated passes unless a pool says "
                "prefill_capacity: per_request)"
            )
        return model.model_copy(update={"dtypes": dtypes, "measured": []})
