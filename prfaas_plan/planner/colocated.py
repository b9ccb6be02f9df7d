"""The co-located baseline: prefill and decode on the same instances, with chunked prefill.

Every instance both prefills and decodes: an iteration-level scheduler (Sarathi-Serve, Agrawal
et al., OSDI 2024: stall-free batching; vLLM V1, SGLang) runs b decodes a step and fits the
prompts of the requests that replace the finished ones into the same steps as chunks. Its
instances are the homogeneous baseline's (``plan.baselines``): the plan's instance count on the
local PD hardware (the PrfaaS instances become local ones; fewer where a GPU or $/hour budget
stops them), priced by the same cost model, so that the two differ only in how the phases
share the chips. With a decode-only pool it is left out (that pool cannot prefill).

Per instance, with w_p = E[T_pd(L)] the prefill instance-seconds of a request (the PD curve's
``capacity_s``, chunked by the engine's token budget as the curve is, in the plan's mode and
cache regime: the homogeneous baseline's PD work), O the mean output tokens, s(b) the decode
step at batch b (``study.model.DecodeModel``) and m = R_B s(B) / B the tokens a step gives a
request (R_B: the instance's decode tokens/s at its full batch B, as the PD-D bound counts it):

    per step, b m tokens come out, so b m / O requests end and as many prompts start;
    their prefill, (b m / O) w_p seconds, is spread over the steps as chunks:
    tau(b)     = s(b) + b m w_p / O                  the mean step, decode plus its chunks
    TPOT(b)    = tau(b) / m                          every step of a request carries chunks
    lambda_1(b) = b m / (O tau(b)) = 1 / (w_p + O s(b) / (b m))      requests/s of an instance
    Lambda     = N lambda_1(b*),  b* the largest b <= B with TPOT(b) within the TPOT limit

the limit being the scenario's ``decode.tpot_ms`` (it caps the PD-D batch too) and the SLO's
``tpot_ms``, the lower; without one b* = B and Lambda = N / (w_p + 1 / r_d), r_d = R_B / O the
PD-D instance's request rate: the best fractional split of the same instances into prefill and
decode, so that without a TPOT limit co-location is never below homogeneous PD (which splits
in whole instances) and never above either phase alone (N / w_p, N r_d). A TPOT limit is where
they part: the chunks slow every decode step, so the co-located batch is smaller (DistServe,
Zhong et al., OSDI 2024). AIConfigurator's ``agg`` mode (NVIDIA) counts the same cycle: b
requests' prompts, isl x b tokens, in the first ceil(isl b / ctx_tokens) of osl steps.

Approximations, both against co-location: the chunk's time is added to the step's (the
roofline of the combined step, ``timing.serving.mixed_step_cost``, reads the weights once for
both, so it is at most the sum), and each chunk pays the prefill pass overhead the curve
counts. Not counted: the token budget of a step (``prompt_tokens_per_step`` says what a step
carries beside its b decodes: compare it with the engine's ``max_num_batched_tokens``), and the
KV of the prompt being chunked beside the batch's (about one request's of b). TTFT is not
modelled, so there is no goodput under an SLO.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..study.model import DecodeModel, PlanInputs
from .cost import gpus_by_hardware, usd_per_hour
from .throughput import ThresholdTable

COLOCATED = "colocated"  # the row's name in the plan's reports, beside the DeploymentName baselines


@dataclass(frozen=True)
class Colocated:
    """The co-located baseline's operating point (module doc); rates in req/s, times in seconds."""

    instances: int  # N: each prefills and decodes
    batch: int  # b*: running decodes a step
    batch_max: int  # B: the PD-D batch (memory, the engine, the scenario's TPOT limit)
    decode_step_s: float  # s(b*)
    step_s: float  # tau(b*) = s(b*) + b* m w_p / O
    tokens_per_step: float  # m: tokens a step gives one request
    tpot_limit_ms: float | None  # the lower of decode.tpot_ms and slo.tpot_ms
    prefill_work_s: float  # w_p: prefill instance-seconds per request
    output_tokens: float  # O
    prompt_tokens_per_step: float  # b* m E[L] / O: uncached prompt tokens a step carries as chunks
    lambda_max_rps: float  # N lambda_1(b*)
    prefill_only_rps: float  # N / w_p: every instance prefilling only (inf without prefill work)
    decode_only_rps: float  # N r_d: every instance decoding only, at the full batch
    limited_by: str  # "tpot_limit" (b* < B) or "decode_batch"
    usd_per_hour: float | None  # provisioned, the N PD instances (no link: nothing crosses it)
    gpus: dict[str, int]

    @property
    def tpot_ms(self) -> float:
        return self.step_s / self.tokens_per_step * 1e3

    @property
    def prefill_share(self) -> float:
        """The share of each instance's time spent on prefill chunks, b m w_p / (O tau)."""
        return self.lambda_max_rps / self.instances * self.prefill_work_s if self.instances else 0.0


def colocated(inputs: PlanInputs, local_table: ThresholdTable, decode: DecodeModel, instances: int) -> Colocated:
    """``instances`` co-located PD instances serving the workload of ``inputs`` (module doc);
    ``local_table`` is the threshold table the homogeneous baseline uses (``plan.local_only``),
    whose last threshold keeps every request local."""
    w_p = float(local_table.pd_work_s[-1])
    out = float(inputs.output_mean_tokens)
    steps = np.asarray(decode.step_s_by_batch, dtype=float)
    full = decode.batch_size
    m = inputs.decode.tokens_per_s_per_instance * float(steps[-1]) / full
    limits = [x for x in (inputs.decode.tpot_ms, inputs.slo.tpot_ms if inputs.slo else None) if x is not None]
    limit_ms = min(limits) if limits else None
    b = np.arange(1, full + 1, dtype=float)
    tau = steps + b * m * w_p / out
    ok = np.ones(full, bool) if limit_ms is None else tau / m * 1e3 <= limit_ms * (1 + 1e-12)
    k = int(np.nonzero(ok)[0][-1]) if ok.any() else -1  # tau grows with b: the last that meets the limit
    batch = k + 1
    rate = instances * batch * m / (out * float(tau[k])) if batch else 0.0
    routed = inputs.workload.routed
    mean_prompt = float(np.sum(routed.probs * routed.pd_tokens)) if routed is not None else inputs.input_dist.mean_tokens()
    return Colocated(
        instances=instances,
        batch=batch,
        batch_max=full,
        decode_step_s=float(steps[k]) if batch else math.nan,
        step_s=float(tau[k]) if batch else math.nan,
        tokens_per_step=m,
        tpot_limit_ms=limit_ms,
        prefill_work_s=w_p,
        output_tokens=out,
        prompt_tokens_per_step=batch * m * mean_prompt / out,
        lambda_max_rps=rate,
        prefill_only_rps=instances / w_p if w_p > 0 else math.inf,
        decode_only_rps=instances * inputs.decode_rps_per_instance,
        limited_by="tpot_limit" if batch < full else "decode_batch",
        usd_per_hour=usd_per_hour(inputs, 0, instances, 0),
        gpus=gpus_by_hardware(inputs, 0, instances, 0),
    )


def colocated_baseline(
    inputs: PlanInputs, local_table: ThresholdTable, decode: DecodeModel, homogeneous, notes: list[str]
) -> Colocated | None:
    """The co-located baseline on the homogeneous baseline's instances (``plan.Baseline``; None:
    there is none), or None with a note where it cannot be built."""
    if inputs.pd_decode is not None:
        notes.append("the co-located baseline is left out: the decode-only pool cannot prefill")
        return None
    if homogeneous is None:
        return None
    found = colocated(inputs, local_table, decode, homogeneous.n_p + homogeneous.n_d)
    if found.batch == 0:
        one_ms = (float(decode.step_s_by_batch[0]) / found.tokens_per_step + found.prefill_work_s / found.output_tokens) * 1e3
        notes.append(
            f"the co-located baseline serves nothing: with prefill chunks in every step, even a batch of 1 takes "
            f"{one_ms:.1f} ms per token, over the TPOT limit of {found.tpot_limit_ms:g} ms"
        )
    return found
