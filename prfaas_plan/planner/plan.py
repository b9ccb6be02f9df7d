"""A full plan: the PrfaaS-PD operating point, the baselines, marginal values and the
Jensen gap between the ``exact`` and ``paper`` modes.

Baselines on the same workload (PRFAAS.md section 4), under the scenario's budgets:
- homogeneous PD: local hardware only, the same number of instances as the PrfaaS-PD
  plan (the paper's comparison; fewer if a GPU or $/hour budget stops them), the best
  N_p / N_d split, no offload; with a decode-only pool, the PrfaaS instances become PD-P
  instances and the decode pool keeps its count;
- homogeneous at equal cost: as many local instances as the plan's provisioned $/hour buys
  (``planner.cost``: the same cost model, the link's price spent on instances too), within
  the GPU budgets;
- naive heterogeneous: every prefill on the PrfaaS instances (t = 0), every PD instance
  decodes (with a decode-only pool: no PD-P instance); without PrfaaS instances in the plan,
  as many as the ranges and budgets allow;
- co-located (``PlanResult.colocated``, ``planner.colocated``): the homogeneous baseline's
  instances each prefilling and decoding, chunked prefill mixed into the decode steps.

Numbers at the user's operating point: the target rate (``min_cost``), else the SLO goodput,
else ``operating_load`` x Lambda_max. Latency, link utilisation and the cost of ownership
(``cost.Tco``: $/hour by component, $/Mtok, kW, J/token) are given at that rate; Lambda_max,
the rate and $/Mtok also at the low and high ends of the instance model's band
(``planner.uncertainty``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..choices import Bound, CacheRegime, DeploymentName, ObjectiveKind, PlanMode
from ..errors import PlanInputError
from ..ranges import INSTANCES, MIN_CAPACITY_RPS
from ..study.model import Limits, PlanInputs, decode_model
from ..units import bytes_per_s_to_gbps
from .colocated import Colocated, colocated_baseline
from .cost import Tco, chips_of, gpus_by_hardware, tco_at, unpriced_pools, usd_per_hour
from .deployment import deployments_of
from .latency import LatencyModel, LatencyResult, SupportArrays
from .optimizer import Solution, at_best_threshold, count_combinations, feasible_cost, optimise
from .slo import best_plan, bounds_queueing, goodput
from .throughput import BOUNDS, StageThroughputs, ThresholdTable, bounds, stage_throughputs, threshold_table
from .uncertainty import PlanRange, plan_range


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
    usd_per_hour: float | None  # provisioned (capital + full-load power + committed link): what budgets count
    tight: list[str]  # bounds within 1% of lambda_max, saturated instance ranges, and budgets that stop a gain

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
    link_utilisation: float = 0.0  # that egress / usable link bandwidth (Link.utilisation)


@dataclass(frozen=True)
class Marginal:
    """One more unit of a resource for the max-throughput plan, two ways, each re-optimised
    (threshold and the other counts) by the model:

    - ``lambda_rps``, the unit's own gain: one more unit required, the budgets held (0 with
      ``fits`` False where they do not allow it); valued at the plan's provisioned $/hour per req/s;
    - ``budget_lambda_rps``, what the budget relaxation buys: the budgets raised by the unit's price
      (and chips), the unit not required; ``budget_counts`` the counts it buys and
      ``budget_usd_per_hour`` their provisioned $/hour. None without budgets. The raised plan may
      cost more than ``plan_usd_per_hour`` + the unit's price: it then also spends
      ``unused_budget_usd_per_hour``, the $/hour budget the plan left unused (budget - plan cost).

    ``blocked_by`` names the budgets that the plan's counts plus the unit break."""

    what: str  # per_gbps, per_prfaas_instance, per_pd_instance, per_decode_instance
    lambda_rps: float
    price_usd_per_hour: float | None  # of the unit (None: unpriced)
    value_usd_per_hour: float | None  # lambda_rps x the plan's $/hour per req/s
    blocked_by: tuple[str, ...] = ()  # budgets that the plan plus the unit breaks
    fits: bool = True  # whether any plan with the unit is within the budgets held
    budget_lambda_rps: float | None = None  # Lambda gain of the budgets raised by the unit's price
    budget_counts: tuple[int, int, int] | None = None  # (N_prfaas, N_p, N_d) that the raised budgets buy
    budget_usd_per_hour: float | None = None  # provisioned $/hour of budget_counts
    plan_usd_per_hour: float | None = None  # provisioned $/hour of the plan the marginal is of
    unused_budget_usd_per_hour: float | None = None  # usd_per_hour budget - plan_usd_per_hour (None: no $ budget)


@dataclass
class PlanResult:
    mode: PlanMode
    inputs: PlanInputs
    point: OperatingPoint
    baselines: dict[str, Baseline]
    marginal: dict[str, float]  # d Lambda_max for +1 Gbps, +1 PrfaaS instance, +1 PD instance (+1 decode instance)
    max_throughput_lambda: float  # Lambda_max of the max-throughput plan in this mode
    exact_lambda_at_paper_point: float | None  # exact-mode Lambda at the paper-mode operating point
    notes: list[str] = field(default_factory=list)
    operating_rate_rps: float = 0.0  # SLO goodput, or operating_load x Lambda_max
    operating_latency: LatencyResult | None = None
    goodput_rps: float | None = None  # with an SLO
    # with an SLO: each deployment's goodput (``slo.goodput`` on its own latency model, as the plan's)
    goodputs: dict[str, float] = field(default_factory=dict)
    common_rate_rps: float = 0.0  # one rate for comparing the deployments' latency
    common_latency: dict[str, LatencyResult] = field(default_factory=dict)
    marginals: dict[str, Marginal] = field(default_factory=dict)
    cache: dict | None = None  # cache-aware routing: regime, Lambda_max without the caches, cache KV on the link
    operating_basis: str = ""  # target rate, SLO goodput, or operating_load x Lambda_max
    tco: Tco | None = None  # the cost of ownership at the operating rate
    # Lambda_max of the plan's counts in each mode, each at its best threshold (the Jensen gap of
    # the plan shown); NaN in the other mode when it was not computed
    lambda_of_counts: dict[str, float] = field(default_factory=dict)
    marginal_anchor: tuple[int, int, int] | None = None  # counts of the max-throughput plan the marginals are of
    uncertainty: PlanRange | None = None  # Lambda_max, rate and $/Mtok at the ends of the model's band
    colocated: Colocated | None = None  # prefill and decode on the homogeneous baseline's instances (``planner.colocated``)

    @property
    def ttft_p90_s(self) -> float | None:
        lat = self.operating_latency
        return None if lat is None or not np.isfinite(lat.overall_p90_s) else float(lat.overall_p90_s)

    def ratio(self, name: str) -> float | None:
        """What a deployment serves over what the homogeneous baseline serves: goodput under the
        SLO when there is one (what the plan maximises), else Lambda_max (None when the baseline
        serves effectively nothing, so that no ratio is shown)."""
        if self.goodputs:
            base = self.goodputs.get(DeploymentName.homogeneous, 0.0)
            value = self.goodputs[name]
        else:
            base = self.baselines[DeploymentName.homogeneous].lambda_max
            value = self.point.lambda_max if name == DeploymentName.prfaas_pd else self.baselines[name].lambda_max
        return value / base if base >= MIN_CAPACITY_RPS else None

    def lambda_by_mode(self, mode: str) -> float:
        """Lambda_max of the plan's counts in ``mode`` ('exact' or 'paper'), at that mode's best
        threshold (NaN for the other mode when it was not computed)."""
        return self.lambda_of_counts.get(mode, math.nan)

    @property
    def jensen_gap(self) -> float:
        """1 - Lambda_exact / Lambda_paper of the plan's counts, each mode at its best threshold."""
        exact, paper = self.lambda_by_mode(PlanMode.exact), self.lambda_by_mode(PlanMode.paper)
        if math.isnan(exact) or math.isnan(paper):
            return math.nan
        return 1.0 - exact / paper if paper > 0 else 0.0


def _finite(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def operating_point(inputs: PlanInputs, table: ThresholdTable, sol: Solution, limits: Limits) -> OperatingPoint:
    idx = sol.threshold_index
    stages = stage_throughputs(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    b = bounds(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    lam = stages.lambda_max
    tight: list[str] = [name for name in BOUNDS if float(getattr(b, name)) <= lam * 1.01]
    for which in _pools(limits):  # the instance ranges the plan saturates
        lo, hi, name = _COUNT[which]
        if _count(limits, sol, which) == getattr(limits, hi) and getattr(limits, hi) > getattr(limits, lo):
            tight.append(name)
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
        gpus=gpus_by_hardware(inputs, sol.n_prfaas, sol.n_p, sol.n_d),
        link_utilisation=inputs.link.utilisation(egress_bytes_per_s),
        usd_per_hour=usd_per_hour(inputs, sol.n_prfaas, sol.n_p, sol.n_d),
        tight=tight,
    )


def _baseline(inputs: PlanInputs, table: ThresholdTable, limits: Limits, name: DeploymentName) -> Baseline | None:
    """The best local-only deployment within ``limits`` (max throughput, nothing offloaded: the
    table's last threshold); None when no count within the limits fits the budgets."""
    k = len(table) - 1
    best = None
    for n_f, n_p, n_d, cost in count_combinations(inputs, limits):
        value = float(bounds(table, k, n_f, n_p, n_d, inputs).lambda_max)
        if best is None or value > best[0] * (1 + 1e-7):
            best = (value, n_f, n_p, n_d, cost)
    return None if best is None else _deployment(inputs, table, name, k, *best[1:])


def _deployment(
    inputs: PlanInputs, table: ThresholdTable, name: DeploymentName, k: int, n_f: int, n_p: int, n_d: int, cost: float | None
) -> Baseline:
    """Deployment ``name`` of the counts at threshold index ``k``: its Lambda_max, binding bound,
    provisioned $/hour ``cost`` and the KV egress at its Lambda_max."""
    b = bounds(table, k, n_f, n_p, n_d, inputs)
    lam = float(b.lambda_max)
    egress_bytes_per_s = lam * float(table.link_work_bytes[k]) if n_f else 0.0
    return Baseline(
        name,
        n_f,
        n_p,
        n_d,
        lam,
        b.binding(),
        cost,
        bytes_per_s_to_gbps(egress_bytes_per_s),
        inputs.link.utilisation(egress_bytes_per_s),
    )


def _most(upto: int, fits) -> int:
    """The largest count <= ``upto`` (at least 0) for which ``fits(count)`` holds (0 if none)."""
    for count in range(max(upto, 0), 0, -1):
        if fits(count):
            return count
    return 0


def local_inputs_of(inputs: PlanInputs) -> PlanInputs:
    """The inputs a deployment without PrfaaS sees: with cluster caches in the plentiful regime, the
    PD cache alone (the scarce rule: no PrfaaS cache to draw on, no cached KV on a link)."""
    routed = inputs.workload.routed
    if routed is None or routed.regime != CacheRegime.plentiful:
        return inputs
    return inputs.with_cache_regime(CacheRegime.scarce)


def local_only(inputs: PlanInputs, table: ThresholdTable) -> tuple[PlanInputs, ThresholdTable]:
    """``local_inputs_of`` and its threshold table (``table`` itself when nothing changes)."""
    local = local_inputs_of(inputs)
    return (inputs, table) if local is inputs else (local, threshold_table(local, table.mode))


def baselines(inputs: PlanInputs, table: ThresholdTable, sol: Solution, notes: list[str]) -> dict[str, Baseline]:
    """The homogeneous (same instance count), equal-cost and naive baselines under the
    scenario's budgets (see the module docstring); one that cannot be built is left out with a
    note."""
    limits = inputs.limits
    local_inputs, local_table = local_only(inputs, table)
    kept_d = sol.n_d if limits.separate_decode else 0  # a decode-only pool keeps its count
    free = replace(limits, prfaas_min=0, prfaas_max=0, pd_min=0, pd_max=int(INSTANCES.hi))
    if limits.separate_decode:
        free = replace(free, decode_min=sol.n_d, decode_max=sol.n_d)

    def local(within: Limits):
        """Whether n local PD instances (beside the decode pool's) fit ``within``."""
        return lambda n: feasible_cost(inputs, within, 0, n, kept_d) is not False

    out: dict[str, Baseline] = {}
    total = sol.n_prfaas + sol.n_p + (0 if limits.separate_decode else sol.n_d)
    count = _most(total, local(free))
    if count < total:
        notes.append(f"the homogeneous baseline has {count} local instances, not {total}: the budgets stop more")
    homog = _baseline(local_inputs, local_table, replace(free, pd_min=count, pd_max=count), DeploymentName.homogeneous)
    if homog is not None:
        out[DeploymentName.homogeneous] = homog
    cost = usd_per_hour(inputs, sol.n_prfaas, sol.n_p, sol.n_d)
    per_pd = inputs.pd.usd_per_hour_per_instance
    if cost is not None and per_pd:
        spare = cost - kept_d * (inputs.decode_pool.usd_per_hour_per_instance or 0.0)
        equal = int(spare / per_pd + 1e-9)
        if equal > INSTANCES.hi:
            notes.append(
                f"the equal-cost homogeneous baseline would need {equal:,} PD instances (more than "
                f"{int(INSTANCES.hi):,}); it is left out"
            )
        else:
            unbudgeted = replace(free, usd_per_hour=None)
            capped = _most(equal, local(unbudgeted))
            within = replace(unbudgeted, pd_min=capped, pd_max=capped)
            same = _baseline(local_inputs, local_table, within, DeploymentName.homogeneous_equal_cost)
            if same is not None and same.lambda_max >= MIN_CAPACITY_RPS:
                out[DeploymentName.homogeneous_equal_cost] = same
            else:
                beside = " beside the decode pool" if limits.separate_decode else ""
                notes.append(
                    f"the plan's ${cost:,.0f}/hour buys {capped} PD instances{beside}, which serve no "
                    "request: the equal-cost homogeneous baseline is left out"
                )
    naive_d = sol.n_d if limits.separate_decode else sol.n_p + sol.n_d
    naive_limits = replace(limits, prfaas_min=0, pd_min=0, pd_max=int(INSTANCES.hi))
    if limits.separate_decode:
        naive_limits = replace(naive_limits, decode_min=0, decode_max=int(INSTANCES.hi))
    n_naive = sol.n_prfaas or _most(limits.prfaas_max, lambda n: feasible_cost(inputs, naive_limits, n, 0, naive_d) is not False)
    if n_naive:
        cost = usd_per_hour(inputs, n_naive, 0, naive_d)
        out[DeploymentName.naive_heterogeneous] = _deployment(
            inputs, table, DeploymentName.naive_heterogeneous, 0, n_naive, 0, naive_d, cost
        )
    else:
        notes.append(
            "no PrfaaS instance is allowed (ranges or budgets), so the naive baseline (all prefill on PrfaaS) is left out"
        )
    return out


# per pool: the fields of its instance range in Limits, and its name in OperatingPoint.tight when saturated
_COUNT = {
    "prfaas": ("prfaas_min", "prfaas_max", "prfaas_instances_max"),
    "pd": ("pd_min", "pd_max", "pd_instances_max"),
    "decode": ("decode_min", "decode_max", "pd_decode_instances_max"),
}


def _pools(limits: Limits) -> tuple[str, ...]:
    """The pools of ``_COUNT`` that the limits range (a decode-only pool's where there is one)."""
    return tuple(_COUNT)[: 3 if limits.separate_decode else 2]


def _count(limits: Limits, sol: Solution, which: str) -> int:
    """``sol``'s count in a pool's range (the PD pool's: N_p + N_d when shared, N_p beside a decode-only pool)."""
    shared_d = 0 if limits.separate_decode else sol.n_d
    return {"prfaas": sol.n_prfaas, "pd": sol.n_p + shared_d, "decode": sol.n_d}[which]


def _one_more(limits: Limits, sol: Solution, which: str) -> tuple[bool, Limits, tuple[int, int, int]]:
    """Whether the range of a pool (``which``: one of ``_pools``) has room for one more instance
    than ``sol`` has, limits that require it (the other counts free within their ranges), and
    ``sol``'s counts with that instance added."""
    lo, hi, _ = _COUNT[which]
    now = _count(limits, sol, which)
    step = dict.fromkeys(_COUNT, 0) | {which: 1}
    grown = (sol.n_prfaas + step["prfaas"], sol.n_p + step["pd"], sol.n_d + step["decode"])
    return now < getattr(limits, hi), replace(limits, **{lo: now + 1, hi: max(getattr(limits, hi), now + 1)}), grown


def _raised(limits: Limits, hardware: str | None, chips: int, usd_per_hour: float | None) -> Limits:
    """The budgets raised by one unit's chips (of ``hardware``) and price (an unpriced unit: the
    $/hour budget as it is)."""
    gpus = {name: budget + (chips if name == hardware else 0) for name, budget in limits.gpu_budget.items()}
    usd = limits.usd_per_hour
    return replace(limits, gpu_budget=gpus, usd_per_hour=usd if usd is None or usd_per_hour is None else usd + usd_per_hour)


def _blocking(inputs: PlanInputs, limits: Limits, n_f: int, n_p: int, n_d: int) -> tuple[str, ...]:
    """The budgets of ``limits`` that the counts (N_prfaas, N_p, N_d) exceed."""
    out = [f"gpu_budget_{name}" for name, budget in limits.gpu_budget.items() if chips_of(inputs, name, n_f, n_p, n_d) > budget]
    cost = usd_per_hour(inputs, n_f, n_p, n_d)
    if limits.usd_per_hour is not None and cost is not None and cost > limits.usd_per_hour * (1 + 1e-9):
        out.append("usd_per_hour_budget")
    return tuple(out)


def marginal_values(inputs: PlanInputs, table: ThresholdTable, sol: Solution, limits: Limits) -> dict[str, Marginal]:
    """Finite differences of the max-throughput Lambda_max (``sol``) for +1 Gbps of usable link and
    one more instance of each pool (see ``Marginal``): the unit's own gain, re-optimised with the
    unit required and the budgets held; and, with budgets set, what the budgets raised by the
    unit's price (and chips) buy, re-optimised without requiring the unit. The first PrfaaS
    instance's price includes the committed link it brings."""
    base = sol.lambda_max
    what_if = ObjectiveKind.max_throughput  # the scenario's optimiser method, as the plan
    plan_cost = usd_per_hour(inputs, sol.n_prfaas, sol.n_p, sol.n_d)
    per_rps = plan_cost / base if plan_cost is not None and base > 0 else None
    budgeted = bool(limits.gpu_budget) or limits.usd_per_hour is not None
    unused = None if limits.usd_per_hour is None or plan_cost is None else limits.usd_per_hour - plan_cost
    out: dict[str, Marginal] = {}

    def add(what, unit_inputs, unit_table, required, blocked, price, hardware: str | None = None, chips: int = 0) -> None:
        """The unit ``what``: its inputs and table, the limits that require it, the budgets the plan
        plus the unit breaks, its price, and the hardware and chips it adds."""
        try:
            own = optimise(unit_inputs, unit_table, limits=required, objective=what_if).lambda_max - base
        except PlanInputError:  # no plan with the unit within the budgets held (none without budgets)
            if not budgeted:
                return
            own = None
        gain = 0.0 if own is None else own
        relaxed: tuple[float | None, tuple[int, int, int] | None, float | None] = (None, None, None)
        if budgeted:  # what the budgets raised by the unit's chips and price buy
            try:
                more = optimise(inputs, table, limits=_raised(limits, hardware, chips, price), objective=what_if)
            except PlanInputError:
                pass
            else:
                counts = (more.n_prfaas, more.n_p, more.n_d)
                relaxed = (more.lambda_max - base, counts, usd_per_hour(inputs, *counts))
        out[what] = Marginal(
            what,
            gain,
            price,
            None if per_rps is None else gain * per_rps,
            blocked,
            own is not None,
            *relaxed,
            plan_usd_per_hour=plan_cost,
            unused_budget_usd_per_hour=unused,
        )

    link = inputs.link
    more_link = inputs.with_usable_link_gbps(link.usable_gbps + 1.0)
    blocked = _blocking(more_link, limits, sol.n_prfaas, sol.n_p, sol.n_d) if sol.n_prfaas else ()
    link_price = more_link.link.fixed_usd_per_hour - link.fixed_usd_per_hour
    add("per_gbps", more_link, threshold_table(more_link, table.mode), limits, blocked, link_price)
    for which in _pools(limits):
        pool = {"prfaas": inputs.prfaas, "pd": inputs.pd, "decode": inputs.decode_pool}[which]
        _, forced, grown = _one_more(limits, sol, which)
        price = pool.usd_per_hour_per_instance
        if price is not None and which == "prfaas" and sol.n_prfaas == 0:
            price += link.fixed_usd_per_hour  # the first PrfaaS instance brings the committed link
        blocked = _blocking(inputs, limits, *grown)
        add(f"per_{which}_instance", inputs, table, forced, blocked, price, pool.hardware_name, pool.gpus_per_instance)
    return out


def plan(inputs: PlanInputs, mode: str = PlanMode.exact, with_marginals: bool = True, with_other_mode: bool = True) -> PlanResult:
    """Optimise the PrfaaS-PD deployment and compare it with the baselines (``with_other_mode``:
    also optimise in the other mode, for the Jensen gap; without it the gap is not known, NaN)."""
    mode = PlanMode(mode)
    limits = inputs.limits
    table = threshold_table(inputs, mode)
    decode = decode_model(inputs)
    # The max-throughput plan: the answer without an SLO or cost objective, and always the
    # reference for marginal values and the Jensen gap.
    throughput_sol = optimise(inputs, table, objective=ObjectiveKind.max_throughput, limits=limits)
    plain = inputs.slo is None and inputs.objective.kind == ObjectiveKind.max_throughput
    sol, good = (throughput_sol, None) if plain else best_plan(inputs, table, decode)
    point = operating_point(inputs, table, sol, limits)
    exact_at_paper = None
    counts = (sol.n_prfaas, sol.n_p, sol.n_d)
    lambda_of_counts: dict[str, float] = {mode: at_best_threshold(table, inputs, *counts, None).lambda_max}
    if with_other_mode:
        other = PlanMode.paper if mode == PlanMode.exact else PlanMode.exact
        other_table = threshold_table(inputs, other)
        lambda_of_counts[other] = at_best_threshold(other_table, inputs, *counts, None).lambda_max
        other_sol = optimise(inputs, other_table, objective=ObjectiveKind.max_throughput, limits=limits)
        paper_sol, exact_table = (other_sol, table) if mode == PlanMode.exact else (throughput_sol, other_table)
        exact_at_paper = float(
            bounds(exact_table, paper_sol.threshold_index, paper_sol.n_prfaas, paper_sol.n_p, paper_sol.n_d, inputs).lambda_max
        )
    notes = list(inputs.notes)
    if point.p == 0.0:
        why = (
            "no PrfaaS instance may be bought (the PrfaaS range is 0)"
            if limits.prfaas_max == 0
            else "the link or the PrfaaS cluster cannot carry any offload profitably"
        )
        notes.append(f"no request is offloaded: {why}, so this is a local-only plan")
    marginals = marginal_values(inputs, table, throughput_sol, limits) if with_marginals else {}
    point.tight.extend(_exhausted(inputs, sol, limits))
    result = PlanResult(
        mode,
        inputs,
        point,
        baselines(inputs, table, sol, notes),
        {k: m.lambda_rps for k, m in marginals.items()},
        throughput_sol.lambda_max,
        exact_at_paper,
        notes,
        marginals=marginals,
        lambda_of_counts=lambda_of_counts,
        marginal_anchor=(throughput_sol.n_prfaas, throughput_sol.n_p, throughput_sol.n_d),
    )
    _add_latency(result, decode, good)
    result.colocated = colocated_baseline(
        inputs, local_only(inputs, table)[1], decode, result.baselines.get(DeploymentName.homogeneous), result.notes
    )
    if plain:
        _local_serves_more(result)
    if inputs.workload.routed is not None:
        result.cache = cache_effect(inputs, table, sol)
    result.tco = tco_at(inputs, table, sol.threshold_index, sol.n_prfaas, sol.n_p, sol.n_d, result.operating_rate_rps)
    result.uncertainty = plan_range(result, table, sol.threshold_index)
    unpriced = unpriced_pools(inputs, sol.n_prfaas, sol.n_p, sol.n_d)
    if unpriced:
        result.notes.append(
            f"no price for {', '.join(unpriced)} (price_usd_per_gpu_hour in its profile, or the pool's "
            "cost): the plan's $/hour, $ per million tokens and marginal worth are not known"
        )
    unknown = sorted(result.tco.power_not_counted)
    if unknown:
        billed = result.tco.power_usd_not_counted
        result.notes.append(
            f"no tdp_w in the profile of {', '.join(unknown)}: its power is not known (the plan's kW "
            "is a lower bound without it and J/token is not given), "
            + (
                f"and the billed power of {', '.join(billed)} is counted as $0: the plan's $/hour and $/Mtok are lower bounds"
                if billed
                else "and its rental includes its power"
            )
        )
    return result


def _local_serves_more(result: PlanResult) -> None:
    """A note where a local-only alternative of no higher provisioned $/hour serves more than the
    plan's Lambda_max: the equal-cost homogeneous baseline (more local PD instances for the
    PrfaaS cluster's price) or the co-located one (the homogeneous baseline's instances), each
    only where its $/hour and the plan's are known. There PrfaaS does not pay at these prices."""
    lam, usd = result.point.lambda_max, result.point.usd_per_hour
    equal = result.baselines.get(DeploymentName.homogeneous_equal_cost)
    split = "splitting the PD instances into prefill and decode does not pay"
    # what a rival's lead says: the equal-$ one spends the PrfaaS cluster's price on local PD
    # instances; the co-located one runs the homogeneous instances unsplit
    prfaas = bool(result.point.n_prfaas)
    rivals = (
        []
        if equal is None
        else [
            (
                "homog. equal-$",
                equal.lambda_max,
                equal.usd_per_hour,
                "the PrfaaS cluster does not pay for itself" if prfaas else split,
            )
        ]
    )
    if result.colocated is not None:
        why = "neither the PrfaaS cluster nor the PD-P / PD-D split pays" if prfaas else split
        rivals.append(("co-located", result.colocated.lambda_max_rps, result.colocated.usd_per_hour, why))
    for name, rival, cost, why in rivals:
        if usd is not None and cost is not None and cost <= usd * (1 + 1e-9) and rival > lam * (1 + 1e-6):
            result.notes.append(
                f"{name} (local PD only, ${cost:,.2f}/hour against the plan's ${usd:,.2f}) serves {rival:.3f} req/s, "
                f"more than this plan's {lam:.3f}: at these prices and counts {why}"
            )


def _exhausted(inputs: PlanInputs, sol: Solution, limits: Limits) -> list[str]:
    """Budgets that leave no room for one more instance of a pool that may still grow."""
    out: list[str] = []
    for which in _pools(limits):
        room, _, grown = _one_more(limits, sol, which)
        if room:
            out += [x for x in _blocking(inputs, limits, *grown) if x not in out]
    return out


def _add_latency(result: PlanResult, decode, good: float | None) -> None:
    """Latency at the operating rate, and of every deployment at one common rate."""
    inputs = result.inputs
    settings = inputs.latency
    support = SupportArrays.of(inputs)
    deps = deployments_of(result)
    local_inputs = local_inputs_of(inputs)
    local_support = support if local_inputs is inputs else SupportArrays.of(local_inputs)
    models = {
        name: LatencyModel(inputs, dep, decode, support)
        if dep.n_prfaas
        else LatencyModel(local_inputs, dep, decode, local_support)
        for name, dep in deps.items()
    }
    result.goodput_rps = good
    if good is not None and bounds_queueing(inputs.slo) and good >= result.point.lambda_max * (1 - 1e-6):
        result.notes.append(  # the targets never bind: the goodput is the capacity, at which some stage never settles
            f"slo: the targets hold up to Λ_max ({result.point.lambda_max:.3f} req/s), so the goodput is the plan's "
            "capacity, where the binding stage's queue never settles (its 'bound by'; no target bounds the decode "
            "queue): run below it, as latency.operating_load does"
        )
    if inputs.slo is not None and not bounds_queueing(inputs.slo):  # what sizes the plan, target rate or not
        result.notes.append(
            f"slo: no TTFT target, and a TPOT target does not bound the queues (at Λ_max they never settle): "
            f"goodput is at most latency.operating_load {settings.operating_load:g} x Λ_max"
        )
    target = inputs.objective.target_rate_rps if inputs.objective.kind == ObjectiveKind.min_cost else None
    if target is not None:
        result.operating_rate_rps, result.operating_basis = target, "target rate"
    elif good is not None:
        result.operating_rate_rps, result.operating_basis = good, "SLO goodput"
    else:
        result.operating_rate_rps = settings.operating_load * result.point.lambda_max
        result.operating_basis = f"operating_load {settings.operating_load:g} x Λ_max"
    result.operating_latency = models[DeploymentName.prfaas_pd].at(result.operating_rate_rps, settings.arrival_scv)
    capacity = {DeploymentName.prfaas_pd: result.point.lambda_max, **{n: b.lambda_max for n, b in result.baselines.items()}}
    if inputs.slo is not None:  # every deployment's goodput, found as the plan's (bisection up to its Lambda_max)
        result.goodputs = {
            name: good
            if name == DeploymentName.prfaas_pd and good is not None
            else goodput(models[name], inputs.slo, capacity[name], settings.arrival_scv)
            for name in deps
        }
    # one common rate that every compared deployment with real capacity can carry
    lams = {n: lam for n, lam in capacity.items() if n != DeploymentName.homogeneous_equal_cost}
    served = {n: lam for n, lam in lams.items() if lam >= MIN_CAPACITY_RPS}
    for name in lams.keys() - served.keys():
        result.notes.append(f"{name} has effectively no capacity ({lams[name]:.3g} req/s): left out of the latency comparison")
    result.common_rate_rps = settings.operating_load * min(served.values())
    result.common_latency = {
        name: models[name].at(result.common_rate_rps, settings.arrival_scv)
        for name in deps
        if name in served or name == DeploymentName.homogeneous_equal_cost
    }


def cache_effect(inputs: PlanInputs, table: ThresholdTable, sol: Solution) -> dict:
    """What the cluster caches do for the plan: its regime, Lambda_max of the same counts with no
    cache at all (best threshold), and the egress of cached KV moved to PD (plentiful regime) at
    Lambda_max, decimal Gbps."""
    routed, caches, curve = inputs.workload.routed, inputs.workload.caches, inputs.prfaas.curve
    # plan() asks only for a routed workload, which has its caches; the PrfaaS pool prefills
    assert routed is not None and caches is not None and curve is not None
    full = inputs.workload.full_input_dist
    bare = replace(inputs, workload=replace(inputs.workload, input_dist=full, routed=None, caches=None))
    bare_table = threshold_table(bare, table.mode)
    bare_sol = at_best_threshold(bare_table, bare, sol.n_prfaas, sol.n_p, sol.n_d, None)
    lam_bare = bare_sol.lambda_max
    local = routed.route_tokens <= sol.threshold_tokens
    moved = local & (routed.local_kv_tokens > 0)
    per_request = 0.0
    if moved.any():
        per_request = float(np.sum(routed.probs[moved] * curve.kv_bytes(routed.local_kv_tokens[moved])))
    return {
        "regime": str(routed.regime),
        "lambda_without_caches_rps": lam_bare,
        "cache_egress_gbps": bytes_per_s_to_gbps(sol.lambda_max * per_request),
        "mean_hit_pd": caches.pd.mean_share,
        "mean_hit_prfaas": caches.prfaas.mean_share,
        **({} if caches.requests is None else _trace_effect(caches.requests.summary, bare_table, bare_sol)),
    }


def _trace_effect(summary: dict, bare_table: ThresholdTable, bare: Solution) -> dict:
    """Caches replayed over a trace (``workload.trace_caches``): their hit rates and memory, and
    the no-cache plan's threshold (the first best) and egress at its Lambda_max, decimal Gbps."""
    egress = bytes_per_s_to_gbps(bare.lambda_max * float(bare_table.link_work_bytes[bare.threshold_index]))
    return {"trace": summary, "threshold_without_caches_tokens": bare.threshold_tokens, "egress_without_caches_gbps": egress}
