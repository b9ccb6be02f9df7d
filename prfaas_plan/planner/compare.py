"""A procurement question in one run: plan every option of a scenario set
(``study.resolve.options``: variants of one scenario by hardware, model and link), each the
scenario resolved once with the option's typed what-ifs (``study.resolve.OneSite.with_option``,
``sites_option``).

Every option is planned as ``prfaas-plan plan`` plans that scenario (the same objective, SLO
and budgets), without marginal values, on one basis for all (``study.basis``: ``model``, every
pool on the instance model, calibrated where its hardware has measured points; or ``as-given``,
the scenario's measured curves as ``plan`` uses them). The ranking: most req/s (the SLO
goodput, else Lambda_max) for ``max_throughput``, least provisioned $/hour for ``min_cost``;
ties by the other, then by TTFT P90. The Pareto front (``front_criteria``) is over what the buyer
asked for and every feasible option has: for ``max_throughput``, $/hour (less is better), req/s
(more) and TTFT P90 at the operating rate (less); for ``min_cost``, $/hour and TTFT P90 at the
target rate (every feasible option serves the target; Lambda_max above it is not asked for).
$/hour is left out of the front when a feasible option has no price (a front that only priced
options could enter would rank an unknown as a loss); the report names the unpriced options.
An unbounded TTFT (a queue that grows) counts as the worst. Each option is set against the best
(``planner.uncertainty.versus_best``): whether the instance model's band can tell them apart.
An option that cannot be planned says why:
it does not fit, is over budget, misses the SLO, cannot reach the target rate, has no price
(for a cost objective or budget), or is too large to plan.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..choices import Basis, ObjectiveKind, PlanMode
from ..errors import PlanInputError
from ..ranges import MIN_CAPACITY_RPS
from ..study.model import Study
from ..study.resolve import OneSite, resolved_base
from ..study.resolve.options import CompareOption, ScenarioSet
from .cost import Tco
from .uncertainty import Verdict, error_key, versus_best


@dataclass(frozen=True)
class OptionResult:
    """One option's plan, reduced to what a comparison shows (picklable, for worker processes)."""

    option: CompareOption
    identity: dict | None = None
    failure: str | None = None  # does not fit, over budget, misses the SLO, cannot reach the target rate, invalid
    reason: str | None = None
    lambda_max_rps: float | None = None
    goodput_rps: float | None = None
    threshold_tokens: float | None = None
    p: float | None = None
    n_prfaas: int | None = None
    n_p: int | None = None
    n_d: int | None = None
    gpus: dict = field(default_factory=dict)
    usd_per_hour: float | None = None  # provisioned
    binding: str | None = None
    tight: tuple[str, ...] = ()
    operating_rate_rps: float | None = None
    operating_basis: str = ""
    ttft_p90_s: float | None = None
    tpot_ms: float | None = None
    link_utilisation_at_capacity: float | None = None  # KV egress at Lambda_max / usable link bandwidth
    link_utilisation_at_operating_rate: float | None = None  # the same at the operating rate
    tco: Tco | None = None
    ratio_vs_homogeneous: float | None = None
    colocated_lambda_rps: float | None = None  # the co-located baseline's Lambda_max (``planner.colocated``)
    notes: tuple[str, ...] = ()
    sources: dict = field(default_factory=dict)  # the basis and each pool's source (``study.basis.sources``)
    # the plan at the low and high ends of the instance model's band (``planner.uncertainty``)
    lambda_low_rps: float | None = None
    lambda_high_rps: float | None = None
    usd_per_mtok_output_low: float | None = None  # at the high end of the rates
    usd_per_mtok_output_high: float | None = None  # at the low end
    error_key: tuple = ()  # ``planner.uncertainty.error_key``: options with the same key share their error

    @property
    def feasible(self) -> bool:
        return self.failure is None

    @property
    def capacity_range_rps(self) -> tuple[float, float] | None:
        """(low, high) of ``capacity_rps``: Lambda_max's range, a goodput moved with it."""
        if self.capacity_rps is None or self.lambda_low_rps is None or self.lambda_high_rps is None or not self.lambda_max_rps:
            return None
        scale = self.capacity_rps / self.lambda_max_rps
        return self.lambda_low_rps * scale, self.lambda_high_rps * scale

    @property
    def ratio_vs_colocated(self) -> float | None:
        """Lambda_max over the co-located baseline's (on the homogeneous baseline's instances), None
        without it or when it serves effectively nothing."""
        colo = self.colocated_lambda_rps
        return None if colo is None or self.lambda_max_rps is None or colo < MIN_CAPACITY_RPS else self.lambda_max_rps / colo

    @property
    def capacity_rps(self) -> float | None:
        """What the option serves: its SLO goodput, else its Lambda_max."""
        return self.goodput_rps if self.goodput_rps is not None else self.lambda_max_rps


@dataclass
class Comparison:
    name: str  # the scenario's
    objective: ObjectiveKind
    results: list[OptionResult]  # ranked, best first; infeasible options last
    pareto: set[int]  # indices into results on the Pareto front
    basis: Basis = Basis.model  # what every option is sized on (``study.basis``)
    front: tuple[str, ...] = ("usd_per_hour", "capacity_rps", "ttft_p90_s")  # the front's criteria
    versus_best: list[Verdict | None] = field(default_factory=list)  # per result (``planner.uncertainty``)
    notes: tuple[str, ...] = ()  # what building the options said (``ScenarioSet.notes``)

    @property
    def unpriced(self) -> list[OptionResult]:
        """Feasible options without a $/hour (which keep $/hour out of the front)."""
        return [r for r in self.feasible if r.usd_per_hour is None]

    @property
    def feasible(self) -> list[OptionResult]:
        return [r for r in self.results if r.feasible]


def _failure(exc: PlanInputError) -> str:
    """Why an option could not be planned, from its error's field and reason."""
    field_, reason = exc.field or "", exc.reason
    if "no price" in reason:
        return "no price"
    if "too many" in reason or "combinations" in reason:
        return "too large"
    if field_.endswith("gpus_per_instance") or "does not fit" in reason or "holds" in reason:
        return "does not fit"
    if field_ == "slo":
        return "misses the SLO"
    if field_ == "objective.target_rate_rps":
        return "cannot reach the target rate"
    if field_ == "budgets" or field_.startswith("budgets.") or "ranges and budgets" in reason:
        return "over budget"
    return "invalid"


def _failed(option: CompareOption, exc: PlanInputError, identity: dict, sources: dict, notes=()) -> OptionResult:
    """An option that could not be planned: its identity, why (``_failure``) and the error's reason."""
    reason = exc.reason if not exc.field else f"{exc.field}: {exc.reason}"
    return OptionResult(option, identity=identity, failure=_failure(exc), reason=reason, notes=tuple(notes), sources=sources)


def plan_option(
    scenarios: ScenarioSet, option: CompareOption, mode: str = PlanMode.exact, base: OneSite | Study | None = None
) -> OptionResult:
    """Plan one option (as ``plan`` would, without marginal values): ``base``, the set's scenario
    resolved once (``study.resolve.resolved_base``; default: here), with the option's what-ifs."""
    from ..study.basis import sources
    from .chips import choose_among
    from .plan import plan

    base = base or resolved_base(scenarios)
    if scenarios.multi_site:
        assert not isinstance(base, OneSite)  # resolved_base gives a multi-site file's Study
        return _plan_sites_option(scenarios, option, base)
    assert isinstance(base, OneSite)
    inputs, variant = None, None
    try:
        variant = base.with_option(option)
        inputs = choose_among(variant.variants(), variant.source)
        result = plan(inputs, mode, with_marginals=False, with_other_mode=False)
    except PlanInputError as exc:
        # resolved (e.g. no price): the chips and sources the option would use; else the scenario as written
        identity = inputs.identity() if inputs else (variant or base).identity(None if variant else option)
        said = variant.said if variant else ()
        return _failed(
            option, exc, identity, sources(inputs, scenarios.basis) if inputs else {"basis": str(scenarios.basis)}, said
        )
    pt, lat, u = result.point, result.operating_latency, result.uncertainty
    assert lat is not None and u is not None  # plan() sets both (_add_latency, plan_range)
    finite = lambda x: None if x is None or not math.isfinite(x) else float(x)  # noqa: E731
    return OptionResult(
        option,
        identity=result.inputs.identity(),
        lambda_max_rps=pt.lambda_max,
        goodput_rps=result.goodput_rps,
        threshold_tokens=pt.threshold_tokens,
        p=pt.p,
        n_prfaas=pt.n_prfaas,
        n_p=pt.n_p,
        n_d=pt.n_d,
        gpus=dict(pt.gpus),
        usd_per_hour=pt.usd_per_hour,
        binding=str(pt.stages.binding),
        tight=tuple(str(t) for t in pt.tight),
        operating_rate_rps=result.operating_rate_rps,
        operating_basis=result.operating_basis,
        ttft_p90_s=finite(lat.overall_p90_s),
        tpot_ms=finite(lat.tpot_ms),
        link_utilisation_at_capacity=finite(pt.link_utilisation),
        link_utilisation_at_operating_rate=finite(lat.link_utilisation),
        tco=result.tco,
        ratio_vs_homogeneous=result.ratio("prfaas_pd"),
        colocated_lambda_rps=None if result.colocated is None else result.colocated.lambda_max_rps,
        notes=(*variant.said, *result.notes),
        sources=sources(result.inputs, scenarios.basis),
        lambda_low_rps=u.low.lambda_max_rps,
        lambda_high_rps=u.high.lambda_max_rps,
        usd_per_mtok_output_low=u.high.usd_per_mtok_output,
        usd_per_mtok_output_high=u.low.usd_per_mtok_output,
        error_key=error_key(result.inputs, u.bands),
    )


def _plan_sites_option(scenarios: ScenarioSet, option: CompareOption, base: Study | None = None) -> OptionResult:
    """One option of a multi-site file (``study.resolve.sites_option``), planned as ``prfaas-plan
    sites`` plans it (as given); its req/s are every site's demand in the busiest window x the
    plan's demand scale, summed."""
    from ..study.basis import sources
    from ..study.resolve import sites_as_written, sites_option
    from .sites import plan_sites

    try:
        study, notes = sites_option(scenarios, option, base)
        result = plan_sites(study)
    except PlanInputError as exc:
        return _failed(option, exc, sites_as_written(scenarios, option), {"basis": str(Basis.as_given)})
    prfaas_pools = [(study.prfaas_site(f).pool, n) for f, n in result.n_prfaas.items()]
    gpus: dict = {}
    for pool, n in prfaas_pools + [(study.site(name).pool, n) for name, n in result.n_pd.items()]:
        gpus[pool.hardware_name] = gpus.get(pool.hardware_name, 0) + n * pool.gpus_per_instance
    busiest = max(result.windows, key=lambda w: sum(site.demand_rps for site in w.pd))
    demand = sum(site.demand_rps for site in busiest.pd)
    counts = ", ".join(f"{k} {v}" for k, v in {**result.n_prfaas, **result.n_pd}.items())
    said = [
        f"demand scale {result.scale:.4g} (req/s: every site's demand in the busiest window, {busiest.name}, x it)",
        f"instances: {counts}",
    ]
    if study.cases:
        said.append("the file's robust: cases are not compared: each option is planned as sites plans the file")
    return OptionResult(
        option,
        identity=study.identity(),
        lambda_max_rps=result.scale * demand,
        n_prfaas=sum(result.n_prfaas.values()),
        gpus=gpus,
        usd_per_hour=result.usd_per_hour,
        notes=(*notes, *said, *study.notes),
        # the first sites' pools (each option moves every site)
        sources=sources(study.pair(study.pd_sites[0].name, study.prfaas_sites[0].name), Basis.as_given),
    )


def rank_key(objective: ObjectiveKind):
    """Sort key of results: feasible first, then by the objective (see the module docstring)."""

    def key(r: OptionResult):
        if not r.feasible:
            return (1, 0.0, 0.0, 0.0)
        cost = math.inf if r.usd_per_hour is None else r.usd_per_hour
        ttft = math.inf if r.ttft_p90_s is None else r.ttft_p90_s
        capacity = r.capacity_rps
        assert capacity is not None  # a feasible option has its Lambda_max (plan_option, _plan_sites_option)
        if objective == ObjectiveKind.min_cost:
            return (0, cost, -capacity, ttft)
        return (0, -capacity, cost, ttft)

    return key


# the front's criteria: (OptionResult attribute, +1 when more is better, -1 when less is)
CRITERIA_SENSE = {"usd_per_hour": -1, "capacity_rps": +1, "ttft_p90_s": -1}


def front_criteria(results: list[OptionResult], objective: ObjectiveKind = ObjectiveKind.max_throughput) -> tuple[str, ...]:
    """The criteria of the Pareto front (see the module docstring): $/hour when every feasible
    option has one, req/s unless the objective is ``min_cost``, and TTFT P90."""
    feasible = [r for r in results if r.feasible]
    priced = all(r.usd_per_hour is not None for r in feasible)
    return (
        *(("usd_per_hour",) if priced else ()),
        *(("capacity_rps",) if objective != ObjectiveKind.min_cost else ()),
        "ttft_p90_s",
    )


FLOAT_REL_TOL = 1e-9  # criteria this close are equal but for float noise (two routes to one TTFT differ by 5e-14 s)
# A gain smaller than this in one criterion does not put an option on the front: the figures are
# printed to three digits and come from a model good to tens of percent (docs/validation.md), so a
# TTFT 1 ms shorter does not make an option 10x dearer a choice (epsilon-dominance).
FRONT_REL_TOL = 0.01


def pareto_front(results: list[OptionResult], objective: ObjectiveKind = ObjectiveKind.max_throughput) -> set[int]:
    """Indices of the feasible results on the front over ``front_criteria``: those no other feasible
    result dominates (at least as good on each, better on one: criteria within ``FLOAT_REL_TOL``
    equal), less those that a member no other member epsilon-dominates does epsilon-dominate
    (every criterion within ``FRONT_REL_TOL`` counted as equal: a gain of 1% or less does not
    count), repeated until none is dropped; an option is dropped only for one that stays."""
    criteria = front_criteria(results, objective)

    def loss(r: OptionResult, name: str) -> float:  # less is better
        value = getattr(r, name)
        return math.inf if value is None else -CRITERIA_SENSE[name] * value

    points = {i: tuple(loss(r, name) for name in criteria) for i, r in enumerate(results) if r.feasible}

    def dominates(b: tuple, a: tuple, tol: float) -> bool:
        same = [math.isclose(x, y, rel_tol=tol, abs_tol=1e-12) for x, y in zip(b, a)]
        return all(x <= y or s for x, y, s in zip(b, a, same)) and any(x < y and not s for x, y, s in zip(b, a, same))

    front = {i for i, a in points.items() if not any(dominates(b, a, FLOAT_REL_TOL) for b in points.values())}
    while True:
        beaten = {i: {j for j in front if j != i and dominates(points[j], points[i], FRONT_REL_TOL)} for i in front}
        unbeaten = {i for i in front if not beaten[i]}
        dropped = {i for i in front if beaten[i] & unbeaten}
        if not dropped:
            return front  # never empty: an epsilon cycle has no unbeaten member, so drops nothing
        front -= dropped


def compare(scenarios: ScenarioSet, mode: str = PlanMode.exact, jobs: int = 1, progress=None, executor=None) -> Comparison:
    """Plan every option on ``executor`` (``planner.executor``; default: ``jobs`` local
    processes), rank them and mark the front. The ranking does not depend on where the options
    were planned: the executor returns them in option order."""
    from .executor import executor_for

    executor = executor or executor_for(jobs)
    base = resolved_base(scenarios)  # once; each option is its what-ifs (the same object in every task)
    results = executor.map(plan_option, [(scenarios, option, mode, base) for option in scenarios.options], progress)
    objective = scenarios.objective
    results.sort(key=rank_key(objective))
    return Comparison(
        scenarios.name,
        objective,
        results,
        pareto_front(results, objective),
        scenarios.basis,
        front_criteria(results, objective),
        versus_best(results, objective),
        scenarios.notes,
    )
