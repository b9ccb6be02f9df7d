"""A full plan: the PrfaaS-PD operating point, the baselines, marginal values and the
Jensen gap between the ``exact`` and ``paper`` modes.

Baselines on the same workload (PRFAAS.md section 4):
- homogeneous PD: local hardware only, the same number of instances as the PrfaaS-PD
  plan (and, where prices are known, as many as the same $/hour buys), the best
  N_p / N_d split, no offload;
- naive heterogeneous: every prefill on the PrfaaS instances (t = 0), every PD instance
  decodes.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..choices import Bound, DeploymentName, ObjectiveKind, PlanMode
from ..ranges import INSTANCES, MIN_CAPACITY_RPS
from ..units import bytes_per_s_to_gbps
from .decode_model import decode_model
from .deployment import deployments_of
from .inputs import Limits, PlanInputs
from .latency import LatencyModel, LatencyResult, SupportArrays
from .optimizer import Solution, optimise, usd_per_hour
from .slo import slo_optimise
from .throughput import BOUNDS, StageThroughputs, ThresholdTable, bounds, stage_throughputs, threshold_table

SECONDS_PER_HOUR = 3600.0


@dataclass(frozen=True)
class OperatingPoint:
    threshold_tokens: float
    p: float
    l_long_tokens: float | None
    l_short_tokens: float | None
    n_prfaas: int
    n_p: int
    n_d: int
    stages: StageThroughputs
    gpus: dict[str, int]
    link_utilisation: float  # egress at Lambda_max / usable link bandwidth (Link.utilisation)
    usd_per_hour: float | None
    usd_per_million_output_tokens: float | None
    tight: list[str]  # bounds within 1% of lambda_max, plus saturated limits and budgets

    @property
    def lambda_max(self) -> float:
        return self.stages.lambda_max


@dataclass(frozen=True)
class Baseline:
    name: DeploymentName
    n_prfaas: int
    n_p: int
    n_d: int
    lambda_max: float
    binding: Bound
    usd_per_hour: float | None
    egress_gbps: float = 0.0  # KV egress at its Lambda_max (naive: everything crosses the link)


@dataclass
class PlanResult:
    mode: PlanMode
    inputs: PlanInputs
    point: OperatingPoint
    baselines: dict[str, Baseline]
    marginal: dict[str, float]  # d Lambda_max for +1 Gbps, +1 PrfaaS instance, +1 PD instance
    max_throughput_lambda: float  # Lambda_max of the max-throughput plan in this mode
    other_mode_lambda: float  # the same, optimised in the other mode
    exact_lambda_at_paper_point: float | None  # exact-mode Lambda at the paper-mode operating point
    notes: list[str] = field(default_factory=list)
    operating_rate_rps: float = 0.0  # SLO goodput, or operating_load x Lambda_max
    operating_latency: LatencyResult | None = None
    goodput_rps: float | None = None  # with an SLO
    common_rate_rps: float = 0.0  # one rate for comparing the deployments' latency
    common_latency: dict[str, LatencyResult] = field(default_factory=dict)

    def ratio(self, name: str) -> float | None:
        """Lambda_max of a deployment over the homogeneous baseline's (None when the baseline
        has effectively no capacity, so that no ratio is shown)."""
        from ..ranges import MIN_CAPACITY_RPS

        base = self.baselines[DeploymentName.homogeneous].lambda_max
        value = self.point.lambda_max if name == DeploymentName.prfaas_pd else self.baselines[name].lambda_max
        return value / base if base >= MIN_CAPACITY_RPS else None

    def lambda_by_mode(self, mode: str) -> float:
        """Lambda_max of the max-throughput plan in ``mode`` ('exact' or 'paper')."""
        return self.max_throughput_lambda if mode == self.mode else self.other_mode_lambda

    @property
    def jensen_gap(self) -> float:
        """1 - Lambda_exact / Lambda_paper, each at its own optimum."""
        exact, paper = self.lambda_by_mode(PlanMode.exact), self.lambda_by_mode(PlanMode.paper)
        return 1.0 - exact / paper if paper > 0 else 0.0


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def operating_point(inputs: PlanInputs, table: ThresholdTable, sol: Solution, limits: Limits) -> OperatingPoint:
    idx = sol.threshold_index
    stages = stage_throughputs(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    b = bounds(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    lam = stages.lambda_max
    tight: list[str] = [name for name in BOUNDS if float(getattr(b, name)) <= lam * 1.01]
    if sol.n_prfaas == limits.prfaas_max and limits.prfaas_max > limits.prfaas_min:
        tight.append("prfaas_instances_max")
    if sol.n_p + sol.n_d == limits.pd_max and limits.pd_max > limits.pd_min:
        tight.append("pd_instances_max")
    gpus: dict[str, int] = {}
    for pool, count in ((inputs.prfaas, sol.n_prfaas), (inputs.pd, sol.n_p + sol.n_d)):
        if count:
            gpus[pool.hardware_name] = gpus.get(pool.hardware_name, 0) + count * pool.gpus_per_instance
    # A budget is tight when it leaves no room for one more instance of a pool it covers.
    growable = [pool for pool, room in ((inputs.prfaas, sol.n_prfaas < limits.prfaas_max),
                                        (inputs.pd, sol.n_p + sol.n_d < limits.pd_max)) if room]
    for name, budget in limits.gpu_budget.items():
        sizes = [pool.gpus_per_instance for pool in growable if pool.hardware_name == name]
        if gpus.get(name, 0) + min(sizes, default=0) > budget or (not sizes and gpus.get(name, 0) >= budget):
            tight.append(f"gpu_budget_{name}")
    cost = usd_per_hour(inputs, sol.n_prfaas, sol.n_p + sol.n_d)
    if limits.usd_per_hour is not None and cost is not None:
        prices = [pool.usd_per_hour_per_instance or 0.0 for pool in growable]
        if cost + min(prices, default=0.0) > limits.usd_per_hour * (1 + 1e-9) or cost >= limits.usd_per_hour * (1 - 1e-9):
            tight.append("usd_per_hour_budget")
    per_m = cost / (lam * inputs.output_mean_tokens * SECONDS_PER_HOUR) * 1e6 if cost is not None and lam > 0 else None
    egress_bytes_per_s = lam * float(table.link_work_bytes[idx])
    return OperatingPoint(
        threshold_tokens=sol.threshold_tokens,
        p=float(table.p[idx]),
        l_long_tokens=_finite(table.l_long_tokens[idx]),
        l_short_tokens=_finite(table.l_short_tokens[idx]),
        n_prfaas=sol.n_prfaas,
        n_p=sol.n_p,
        n_d=sol.n_d,
        stages=stages,
        gpus=gpus,
        link_utilisation=inputs.link.utilisation(egress_bytes_per_s),
        usd_per_hour=cost,
        usd_per_million_output_tokens=per_m,
        tight=tight,
    )


def _homogeneous(inputs: PlanInputs, table: ThresholdTable, total: int, name: DeploymentName) -> Baseline:
    """Best N_p / N_d split of ``total`` local instances, no offload (t at the largest length)."""
    last = len(table) - 1
    n_p = np.arange(0, total + 1)
    lam = bounds(table, last, 0, n_p, total - n_p, inputs).lambda_max
    k = int(np.argmax(lam))
    b = bounds(table, last, 0, int(n_p[k]), int(total - n_p[k]), inputs)
    return Baseline(name, 0, int(n_p[k]), int(total - n_p[k]), float(lam[k]), b.binding(),
                    usd_per_hour(inputs, 0, total))


def _naive(inputs: PlanInputs, table: ThresholdTable, n_prfaas: int, n_pd: int) -> Baseline:
    b = bounds(table, 0, n_prfaas, 0, n_pd, inputs)
    lam = float(b.lambda_max)
    return Baseline(DeploymentName.naive_heterogeneous, n_prfaas, 0, n_pd, lam, b.binding(),
                    usd_per_hour(inputs, n_prfaas, n_pd), bytes_per_s_to_gbps(lam * float(table.link_work_bytes[0])))


def baselines(inputs: PlanInputs, table: ThresholdTable, sol: Solution, notes: list[str]) -> dict[str, Baseline]:
    """The homogeneous (same instance count, and same $/hour where priced) and naive baselines;
    an equal-cost baseline that would need more than ``ranges.INSTANCES`` local instances is
    left out with a note."""
    total = sol.n_prfaas + sol.n_p + sol.n_d
    out = {DeploymentName.homogeneous: _homogeneous(inputs, table, total, DeploymentName.homogeneous)}
    cost = usd_per_hour(inputs, sol.n_prfaas, sol.n_p + sol.n_d)
    per_pd = inputs.pd.usd_per_hour_per_instance
    if cost is not None and per_pd:
        equal = int(cost / per_pd + 1e-9)
        if equal <= INSTANCES.hi:
            out[DeploymentName.homogeneous_equal_cost] = _homogeneous(inputs, table, equal,
                                                                      DeploymentName.homogeneous_equal_cost)
        else:
            notes.append(f"the equal-cost homogeneous baseline would need {equal:,} PD instances (more than "
                         f"{int(INSTANCES.hi):,}); it is left out")
    n_naive_prfaas = sol.n_prfaas or inputs.limits.prfaas_max
    if n_naive_prfaas:
        out[DeploymentName.naive_heterogeneous] = _naive(inputs, table, n_naive_prfaas, sol.n_p + sol.n_d)
    else:
        notes.append("no PrfaaS instance is allowed, so the naive baseline (all prefill on PrfaaS) is left out")
    return out


def _bumped(limits: Limits, which: str) -> Limits:
    if which == "prfaas":
        fixed = limits.prfaas_min == limits.prfaas_max
        return replace(limits, prfaas_max=limits.prfaas_max + 1, prfaas_min=limits.prfaas_min + int(fixed))
    fixed = limits.pd_min == limits.pd_max
    return replace(limits, pd_max=limits.pd_max + 1, pd_min=limits.pd_min + int(fixed))


def marginal_values(inputs: PlanInputs, table: ThresholdTable, sol: Solution, mode: PlanMode,
                    limits: Limits) -> dict[str, float]:
    """Finite differences of the max-throughput Lambda_max (``sol``): re-optimised with +1 Gbps of
    usable link, +1 PrfaaS instance, +1 PD instance."""
    base = sol.lambda_max
    more_link = inputs.with_usable_link_gbps(inputs.link.usable_gbps + 1.0)
    what_if = dict(objective=ObjectiveKind.max_throughput)  # the scenario's optimiser method, as the plan
    return {
        "per_gbps": optimise(more_link, threshold_table(more_link, mode), limits=limits, **what_if).lambda_max - base,
        "per_prfaas_instance": optimise(inputs, table, limits=_bumped(limits, "prfaas"), **what_if).lambda_max - base,
        "per_pd_instance": optimise(inputs, table, limits=_bumped(limits, "pd"), **what_if).lambda_max - base,
    }


def plan(inputs: PlanInputs, mode: str = PlanMode.exact, with_marginals: bool = True) -> PlanResult:
    """Optimise the PrfaaS-PD deployment and compare it with the baselines."""
    mode = PlanMode(mode)
    limits = inputs.limits
    table = threshold_table(inputs, mode)
    decode = decode_model(inputs)
    good = None
    objective = inputs.objective
    # The max-throughput plan: the answer without an SLO or cost objective, and always the
    # reference for marginal values and the Jensen gap.
    throughput_sol = optimise(inputs, table, objective=ObjectiveKind.max_throughput, limits=limits)
    if inputs.slo is not None:
        chosen = slo_optimise(inputs, table, decode, inputs.slo, objective=objective.kind,
                              target_rps=objective.target_rate_rps, limits=limits)
        dep = chosen.deployment
        sol = Solution(chosen.threshold_index, dep.threshold_tokens, dep.n_prfaas, dep.n_p, dep.n_d,
                       chosen.lambda_max, chosen.usd_per_hour)
        good = chosen.goodput_rps
    elif objective.kind == ObjectiveKind.min_cost:
        sol = optimise(inputs, table, limits=limits)
    else:
        sol = throughput_sol
    point = operating_point(inputs, table, sol, limits)
    other = PlanMode.paper if mode == PlanMode.exact else PlanMode.exact
    other_table = threshold_table(inputs, other)
    other_sol = optimise(inputs, other_table, objective=ObjectiveKind.max_throughput, limits=limits)
    other_lambda = other_sol.lambda_max
    paper_sol, exact_table = (other_sol, table) if mode == PlanMode.exact else (throughput_sol, other_table)
    exact_at_paper = float(bounds(exact_table, paper_sol.threshold_index, paper_sol.n_prfaas, paper_sol.n_p,
                                  paper_sol.n_d, inputs).lambda_max)
    notes = list(inputs.notes)
    if point.p == 0.0:
        notes.append("no request is offloaded: the link or the PrfaaS cluster cannot carry any offload "
                     "profitably, so this is a local-only plan")
    marginal = marginal_values(inputs, table, throughput_sol, mode, limits) if with_marginals else {}
    result = PlanResult(mode, inputs, point, baselines(inputs, table, sol, notes), marginal,
                        throughput_sol.lambda_max, other_lambda, exact_at_paper, notes)
    _add_latency(result, decode, good)
    return result


def _add_latency(result: PlanResult, decode, good: float | None) -> None:
    """Latency at the operating rate, and of every deployment at one common rate."""
    inputs = result.inputs
    settings = inputs.latency
    support = SupportArrays.of(inputs)
    deps = deployments_of(result)
    models = {name: LatencyModel(inputs, dep, decode, support) for name, dep in deps.items()}
    result.goodput_rps = good
    result.operating_rate_rps = good if good is not None else settings.operating_load * result.point.lambda_max
    result.operating_latency = models[DeploymentName.prfaas_pd].at(result.operating_rate_rps, settings.arrival_scv)
    # one common rate that every compared deployment with real capacity can carry
    lams = {DeploymentName.prfaas_pd: result.point.lambda_max,
            **{n: b.lambda_max for n, b in result.baselines.items() if n != DeploymentName.homogeneous_equal_cost}}
    served = {n: lam for n, lam in lams.items() if lam >= MIN_CAPACITY_RPS}
    for name in lams.keys() - served.keys():
        result.notes.append(f"{name} has effectively no capacity ({lams[name]:.3g} req/s): left out of the latency "
                            "comparison")
    result.common_rate_rps = settings.operating_load * min(served.values())
    result.common_latency = {name: models[name].at(result.common_rate_rps, settings.arrival_scv) for name in deps
                             if name in served or name == DeploymentName.homogeneous_equal_cost}
