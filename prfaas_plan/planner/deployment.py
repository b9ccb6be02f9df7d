"""A concrete deployment to evaluate: a threshold and instance counts."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..choices import DeploymentName


@dataclass(frozen=True)
class Deployment:
    """Requests with uncached input L > threshold_tokens go to PrfaaS (inf: all stay local,
    0: all go remote); N_p instances prefill locally, N_d decode."""

    name: str
    threshold_tokens: float
    n_prfaas: int
    n_p: int
    n_d: int


def deployments_of(result) -> dict[str, Deployment]:
    """PrfaaS-PD and its baselines from a :class:`planner.plan.PlanResult`."""
    pt = result.point
    out: dict[str, Deployment] = {
        DeploymentName.prfaas_pd: Deployment(DeploymentName.prfaas_pd, pt.threshold_tokens, pt.n_prfaas, pt.n_p, pt.n_d)
    }
    for name, b in result.baselines.items():
        threshold = 0.0 if name == DeploymentName.naive_heterogeneous else math.inf
        out[name] = Deployment(name, threshold, b.n_prfaas, b.n_p, b.n_d)
    return out
