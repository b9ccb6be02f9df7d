"""Whether a plan's inputs are the paper's case study, the one scenario whose published figures
(PRFAAS.md section 4) a report may quote beside its own.

A scenario is the case study when everything that chooses the plan, sizes the compared
deployments and sets their latency matches the shipped ``paper-case-study``: the model, each
pool's hardware, chips, prefill curve and instance range, the budgets, the objective (kind and
target rate), the SLO, the link (raw and usable Gbps, RTT), the input and output length
distributions themselves (support and probabilities, compared exactly: a lognormal of another
sigma with the same mean is another workload), the decode rate and the latency settings. Its
name does not count (a copy under another name is still the case study; a copy with a 15 Gbps
link, a TTFT SLO or a budget is not).
"""

from __future__ import annotations

from functools import lru_cache

from ..study.basis import prefill_source
from ..study.model import PlanInputs

CASE_STUDY = "paper-case-study"  # the shipped scenario of the paper's section 4
# PrfaaS-PD over homogeneous PD, TTFT mean and P90, at a load the paper does not state (section 4)
PAPER_TTFT_REDUCTION = {"mean": 0.50, "p90": 0.64}


def _distribution(dist) -> tuple:
    """A length distribution's support (tokens) and probabilities, exactly."""
    return tuple(dist.lengths_tokens.tolist()), tuple(dist.probs.tolist())


def _fingerprint(inputs: PlanInputs) -> tuple:
    identity = {k: v for k, v in inputs.identity().items() if k != "scenario"}
    link, workload = inputs.link, inputs.workload
    return (
        tuple(sorted(identity.items())),
        inputs.limits,  # instance ranges and budgets
        inputs.objective,
        inputs.slo,
        tuple(tuple(sorted(prefill_source(pool).items())) for pool in (inputs.prfaas, inputs.pd)),
        round(link.usable_gbps, 9),
        round(link.rtt_s, 9),
        link.transport,  # a TCP transport model changes the link
        *(_distribution(d) for d in (workload.input_dist, workload.full_input_dist, workload.output_dist)),
        round(inputs.decode.tokens_per_s_per_instance, 6),
        inputs.latency,
    )


@lru_cache(maxsize=1)
def _case_study() -> tuple:
    from .chips import load_inputs

    return _fingerprint(load_inputs(CASE_STUDY))


def is_case_study(inputs: PlanInputs) -> bool:
    """Whether ``inputs`` are the paper's case study (see the module docstring)."""
    return _fingerprint(inputs) == _case_study()
