"""The one mixed-integer programme of the planner: PD sites x PrfaaS sites x links x windows x
cases (pulp/CBC). Every MILP the package solves is built here: the one-site plan's
(``optimizer``, ``method: milp``), the multi-site plan and its day (``sites``) and the robust
plan over several sites.

Per case c, window w, PD site i (demand r_ciw req/s, threshold candidates k) and PrfaaS site j,
with the throughput model's work per request (``planner.throughput``, exact class means):
p_ik the offloaded share, PrfaaS seconds T_ijk = E[T_j(L); L > t_k] (per offloaded request:
T_ijk / p_ik), link bytes S_ijk likewise, PD-P seconds P_ik, and r_d,i requests/s per decoding
instance:

    sum_k z_ik = 1,  lambda_ik <= U_i z_ik,            sum_k lambda_ik = s_c r_ciw
    sum_j x_ijk = p_ik lambda_ik                       (site i's offloaded requests, by PrfaaS site)
    sum_{i,k} x_ijk T_ijk / p_ik <= N_j                (PrfaaS site j's compute)
    sum_k x_ijk S_ijk / p_ik <= B_ij                   (each link's usable bandwidth)
    sum_k lambda_ik P_ik <= N_p,i,   sum_k lambda_ik <= r_d,i N_d,i
    instance ranges per site, GPU budgets per hardware, $/hour budget (a link's committed price
    paid when it carries traffic)

The counts are shared by every window and case: N_j per PrfaaS site, N_i = N_p + N_d of a PD
site's pool (split per window and case), or with a decode-only pool N_p and N_d themselves.
Objectives: ``max_throughput`` maximises the common demand scale s (one case); ``worst_case``
maximises min_c s_c; ``weighted`` maximises sum_c w_c s_c; ``min_cost`` minimises the
provisioned $/hour with every s_c = 1 (sum_k lambda_ik >= r_ciw). Over a day, instances that
switch role at a window's start (into_p >= N_p,w - N_p,w-1, into_d likewise, the day cyclic)
are idle for f = min(1, conversion_s / window) of it: PD-P capacity N_p - f into_p, decode
r_d (N_d - f into_d); at most ``max_switches`` switch per site and window. Among equal optima,
``settle`` asks the fewest instances, then the fewest role switches (a second programme that
holds the first's optimum), so the plan printed is not an arbitrary one of them.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, replace
from typing import cast

from ..choices import ObjectiveKind, RobustObjective
from ..errors import PlanInputError
from ..study.model import Link, PdSite, Study
from .throughput import ThresholdTable

SOLVER_TIME_LIMIT_S = 60  # CBC stops here with its best plan, reported as not proven optimal
TIE_WEIGHT = 1e-7  # on the total instance count: a nudge to fewer instances (``settle`` decides the ties)


@dataclass(frozen=True)
class Cell:
    """One case in one window: each PD site's demand (req/s), each (PD site, PrfaaS site) pair's
    threshold table, each link and each site's decode rate per instance (req/s)."""

    case: int
    window: int
    hours: float
    demands: dict[str, float]
    tables: dict[tuple[str, str], ThresholdTable]  # (PD site, PrfaaS site)
    links: dict[tuple[str, str], Link]  # (PrfaaS site, PD site)
    decode_rps: dict[str, float]


@dataclass(frozen=True)
class Goal:
    """What the programme optimises over its cases (``weights`` for ``weighted``)."""

    objective: ObjectiveKind = ObjectiveKind.max_throughput
    robust: RobustObjective | None = None  # with several cases: worst_case or weighted
    weights: tuple[float, ...] = ()

    @property
    def maximise(self) -> bool:
        return self.objective != ObjectiveKind.min_cost and self.robust != RobustObjective.min_cost


@dataclass(frozen=True)
class CellPlan:
    """The solution in one cell, per PD site: the chosen candidate, the split and the offload."""

    case: int
    window: int
    k: dict[str, int]  # PD site -> threshold index
    n_p: dict[str, int]
    n_d: dict[str, int]
    offload_rps: dict[str, dict[str, float]]  # PD site -> PrfaaS site -> req/s


@dataclass(frozen=True)
class Solved:
    proven: bool  # False: CBC stopped at its time limit with its best plan
    scales: tuple[float, ...]  # s_c per case (1.0 under min_cost)
    usd_per_hour: float  # provisioned, as the programme counts it (unpriced pools at 0)
    n_prfaas: dict[str, int]
    n_pd: dict[str, int]  # N_p + N_d (shared pool) or N_p (beside a decode-only pool)
    n_decode: dict[str, int]  # N_d of each decode-only pool
    cells: tuple[CellPlan, ...]


def solve(
    study: Study,
    cells: list[Cell],
    candidates: dict[tuple[int, int, str], list[int]],
    goal: Goal,
    hold: float | None = None,
    tight: bool = False,
) -> Solved | None:
    """The programme over ``cells`` with the threshold candidates of each (case, window, PD site); None
    when CBC finds no plan (or one that breaks a constraint). With ``hold`` (the goal's optimum: its
    scale figure, or for min_cost its $/hour) it keeps the goal at least that good and asks the fewest
    instances, then the fewest role switches: the second, lexicographic step of ``settle``. ``tight``:
    only CBC's retry set-up (``_solvers``), for an answer whose rounding the caller refused."""
    programme = _Programme(study, goal, sorted({cell.case for cell in cells}), hold)
    for q, cell in enumerate(cells):
        programme.add_cell(q, cell, candidates)
    programme.add_switches()
    programme.add_budgets()
    return programme.solve(cells, tight)


class _Programme:
    """The pulp problem of ``solve``, built block by block: the shared counts and their cost, one
    block of rows per cell, the role switches between windows, the budgets, the objective."""

    def __init__(self, study: Study, goal: Goal, cases: list[int], hold: float | None):
        import pulp

        self.study, self.goal, self.cases, self.hold = study, goal, cases, hold
        self.maximise = goal.maximise and hold is None
        self.prob = pulp.LpProblem("prfaas", pulp.LpMaximize if self.maximise else pulp.LpMinimize)
        var = self.var = self.prob.add_variable
        self.n_f = {f.name: var(f"nf_{j}", *f.instances, cat="Integer") for j, f in enumerate(study.prfaas_sites)}
        self.n_pd = {s.name: var(f"npd_{i}", *s.instances, cat="Integer") for i, s in enumerate(study.pd_sites)}
        self.n_dd = {
            s.name: var(f"ndd_{i}", *_decode_range(s), cat="Integer")
            for i, s in enumerate(study.pd_sites)
            if s.decode_pool is not None
        }
        self.scale = {c: var(f"s_{c}", 0, None) if goal.maximise else 1.0 for c in cases}
        self.cost = pulp.lpSum(self.n_f[f.name] * (f.pool.usd_per_hour_per_instance or 0.0) for f in study.prfaas_sites)
        self.gpus: dict[str, list] = {}
        for f in study.prfaas_sites:
            self.gpus.setdefault(f.pool.hardware_name, []).append(f.pool.gpus_per_instance * self.n_f[f.name])
        for s in study.pd_sites:
            self.cost += (s.pool.usd_per_hour_per_instance or 0.0) * self.n_pd[s.name]
            self.gpus.setdefault(s.pool.hardware_name, []).append(s.pool.gpus_per_instance * self.n_pd[s.name])
            if s.decode_pool is not None:
                self.cost += (s.decode_pool.usd_per_hour_per_instance or 0.0) * self.n_dd[s.name]
                self.gpus.setdefault(s.decode_pool.hardware_name, []).append(s.decode_pool.gpus_per_instance * self.n_dd[s.name])
        self.link_used: dict = {}
        self.per_cell: list[dict] = []
        self.switches: dict[tuple[int, str], dict[int, tuple]] = {}

    def add_cell(self, q: int, cell: Cell, candidates: dict) -> None:
        """Cell ``q``'s rows: per PD site its threshold choice, rates, split, PD-P and decode capacity,
        offload per PrfaaS site and link; then each PrfaaS site's compute."""
        f_work: dict[str, list] = {f.name: [] for f in self.study.prfaas_sites}
        self.streams: dict[str, list] = {f.name: [] for f in self.study.prfaas_sites}
        self.per_cell.append({s.name: self._site(q, cell, s, candidates, f_work) for s in self.study.pd_sites})
        for f in self.study.prfaas_sites:
            self.prob += sum_of(f_work[f.name]) <= self.n_f[f.name]
            if self.streams[f.name]:  # each instance streams one transfer at a time (``timing.transport``)
                self.prob += sum_of(self.streams[f.name]) <= self.n_f[f.name]

    def _site(self, q: int, cell: Cell, s, candidates: dict, f_work: dict) -> tuple:
        prob, var, study, name = self.prob, self.var, self.study, s.name
        if s.decode_pool is None:
            n_p = var(f"np_{q}_{name}", 0, s.instances[1], cat="Integer")
            n_d = var(f"nd_{q}_{name}", 0, s.instances[1], cat="Integer")
            prob += n_p + n_d == self.n_pd[name]
        else:
            n_p, n_d = self.n_pd[name], self.n_dd[name]
        r_d = cell.decode_rps[name]
        upper = r_d * (s.decode_instances[1] if s.decode_pool is not None else s.instances[1])
        table = cell.tables[name, study.prfaas_sites[0].name]
        ks = [int(k) for k in candidates[cell.case, cell.window, name]]
        z = [var(f"z_{q}_{name}_{k}", 0, 1, cat="Binary") for k in ks]
        lam = [var(f"lam_{q}_{name}_{k}", 0, upper) for k in ks]
        prob += sum_of(z) == 1
        for zi, li in zip(z, lam):
            prob += li <= upper * zi
        demand, scale, served = cell.demands[name], self.scale[cell.case], sum_of(lam)
        prob += served >= demand if isinstance(scale, float) else served == scale * demand
        n_windows = len(study.windows)
        f_idle = min(1.0, study.conversion_s / (cell.hours * 3600.0)) if n_windows > 1 else 0.0
        into_p = into_d = 0.0
        if s.decode_pool is None and n_windows > 1:
            into_p = var(f"inp_{q}_{name}", 0, s.instances[1])  # instances that became PD-P at this window
            into_d = var(f"ind_{q}_{name}", 0, s.instances[1])  # and PD-D
            self.switches.setdefault((cell.case, name), {})[cell.window] = (n_p, into_p, into_d)
        prob += sum_of(float(table.pd_work_s[k]) * li for k, li in zip(ks, lam)) <= n_p - f_idle * into_p
        prob += served <= r_d * (n_d - f_idle * into_d)
        flows: dict[str, list] = {}
        for k, li in zip(ks, lam):
            p = float(table.p[k])
            if p <= 0:
                continue
            parts = []
            for f in study.prfaas_sites:
                if (f.name, name) not in cell.links:
                    continue
                x = var(f"x_{q}_{name}_{f.name}_{k}", 0, upper)
                parts.append(x)
                flows.setdefault(f.name, []).append((k, x))
                f_work[f.name].append(float(cell.tables[name, f.name].prfaas_work_s[k]) / p * x)
            prob += sum_of(parts) == p * li  # nothing offloaded without a link: lambda_ik = 0
        for f_name, items in flows.items():
            self._link(cell, name, f_name, items, table, upper)
        return ks, z, n_p, n_d, flows

    def _link(self, cell: Cell, name: str, f: str, items: list, table: ThresholdTable, upper: float) -> None:
        """The link from ``f`` to ``name``: its usable bandwidth, and its committed price when it carries traffic."""
        link = cell.links[f, name]
        bytes_ = cell.tables[name, f].link_work_bytes
        per_request = {k: float(bytes_[k]) / float(table.p[k]) for k, _ in items}
        unit = max(per_request.values()) or 1.0  # keep coefficients near 1 for the solver
        self.prob += sum_of(per_request[k] / unit * x for k, x in items) <= link.usable_bytes_per_s / unit
        if link.transport is not None:  # seconds of one instance's stream per offloaded request
            self.streams[f].extend(per_request[k] / link.transfer_bytes_per_s * x for k, x in items)
        if link.fixed_usd_per_hour > 0:
            if (name, f) not in self.link_used:
                self.link_used[name, f] = self.var(f"u_{name}_{f}", 0, 1, cat="Binary")
                self.cost += link.fixed_usd_per_hour * self.link_used[name, f]
            self.prob += sum_of(x for _, x in items) <= upper * self.link_used[name, f]

    def add_switches(self) -> None:
        n_windows = len(self.study.windows)
        for windows in self.switches.values():
            for w, (n_p, into_p, into_d) in windows.items():
                prev = windows[(w - 1) % n_windows][0]  # the day repeats: the last window precedes the first
                self.prob += into_p >= n_p - prev
                self.prob += into_d >= prev - n_p
                if self.study.max_switches is not None:
                    self.prob += into_p + into_d <= self.study.max_switches

    def add_budgets(self) -> None:
        for hardware, budget in self.study.gpu_budget.items():
            self.prob += sum_of(self.gpus.get(hardware, [])) <= budget
        if self.study.usd_per_hour is not None:
            self.prob += self.cost <= self.study.usd_per_hour

    def solve(self, cells: list[Cell], tight: bool = False) -> Solved | None:
        import pulp

        prob = self.prob
        total = sum_of(self.n_pd.values()) + sum_of(self.n_f.values()) + sum_of(self.n_dd.values())
        switched = sum_of(into_p + into_d for w in self.switches.values() for _, into_p, into_d in w.values())
        if self.hold is not None:
            if self.goal.maximise:
                prob += _objective(prob, self.goal, self.scale, self.cases) >= self.hold
            else:
                prob += self.cost <= self.hold
            most = sum(s.instances[1] for s in self.study.pd_sites) * 2 * len(self.per_cell) + 1
            prob += most * total + switched  # fewer instances first, then fewer switches
        elif self.maximise:
            prob += _objective(prob, self.goal, self.scale, self.cases) - TIE_WEIGHT * total
        else:
            prob += self.cost
        solvers = _solvers(gap_abs=0.5 if self.hold is not None else None)  # settle: an integer objective
        for solver in solvers[1:] if tight else solvers:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # as in _solvers
                status = prob.solve(solver)
            scales = tuple(_value(self.scale[c]) for c in self.cases)
            whole = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and integral(prob)
            if pulp.LpStatus[status] in ("Optimal", "Not Solved") and whole and solution_valid(prob) and None not in scales:
                break
            if pulp.LpStatus[status] == "Not Solved" and not whole:  # stopped with no whole-number plan: a retry would too
                raise NoPlanInTime()
        else:
            return None
        return Solved(
            prob.sol_status == pulp.LpSolutionOptimal,
            cast("tuple[float, ...]", scales),  # the loop breaks only with every scale set
            float(pulp.value(self.cost)),
            {f: _int(v) for f, v in self.n_f.items()},
            {name: _int(v) for name, v in self.n_pd.items()},
            {name: _int(v) for name, v in self.n_dd.items()},
            tuple(_cell_plan(cell, per_site) for cell, per_site in zip(cells, self.per_cell)),
        )


def sum_of(terms):
    """pulp's sum of a linear expression's terms."""
    import pulp

    return pulp.lpSum(terms)


def settle(study: Study, cells: list[Cell], candidates: dict, goal: Goal, sol: Solved) -> Solved:
    """Among the plans as good as ``sol`` by ``goal`` (its scale figure within 1e-9, or its $/hour),
    the one with the fewest instances, then the fewest role switches over the day: a second,
    lexicographic programme (a weight on the instance count inside the first would sit below CBC's
    tolerances and decide nothing). ``sol`` itself when the second finds nothing."""
    value = score(sol.scales, goal) * (1 - 1e-9) if goal.maximise else sol.usd_per_hour * (1 + 1e-9) + 1e-9
    try:
        settled = solve(study, cells, candidates, goal, hold=value)
    except NoPlanInTime:
        return replace(sol, proven=False)  # not settled in time: the plan found, fewest instances not proven
    return sol if settled is None else replace(settled, proven=sol.proven and settled.proven)


def score(scales: tuple[float, ...], goal: Goal) -> float:
    """The figure a maximising goal counts: the one scale, the smallest (worst case) or the weighted mean."""
    if goal.robust == RobustObjective.weighted:
        return sum(w * x for w, x in zip(goal.weights, scales))
    return min(scales)


def _solvers(gap_abs: float | None = None) -> list:
    """CBC as configured by default, then without presolve and with tight tolerances: the retry
    for a programme whose first answer breaks a constraint or is reported infeasible. ``gap_abs``:
    stop only within that much of the optimum (0.5 for an integer objective: at it)."""
    import pulp

    gap = {} if gap_abs is None else {"gapAbs": gap_abs}
    tight = {"presolve": False, "options": ["primalTolerance 1e-10", "integerTolerance 1e-9"]}
    with warnings.catch_warnings():
        # pulp >= 3.3.2 warns, when a PULP_CBC_CMD is made (and 3.3 when it solves), that 4.0 drops the
        # bundled CBC; pyproject pins pulp < 4 to keep it
        warnings.simplefilter("ignore", DeprecationWarning)
        return [pulp.PULP_CBC_CMD(msg=False, timeLimit=SOLVER_TIME_LIMIT_S, **gap, **more) for more in ({}, tight)]


def _objective(prob, goal: Goal, scale: dict, cases: list[int]):
    """The expression maximised: s (one case), min_c s_c (worst case) or sum_c w_c s_c."""
    if len(cases) == 1:
        return scale[cases[0]]
    if goal.robust == RobustObjective.weighted:
        return sum_of(goal.weights[c] * scale[c] for c in cases)
    worst = prob.add_variable("worst", 0, None)
    for c in cases:
        prob += worst <= scale[c]
    return worst


def _cell_plan(cell: Cell, per_site: dict) -> CellPlan:
    k, n_p, n_d, x = {}, {}, {}, {}
    for name, (ks, z, np_var, nd_var, flows) in per_site.items():
        values = [zi.value() or 0.0 for zi in z]
        k[name] = ks[values.index(max(values))]
        n_p[name], n_d[name] = _int(np_var), _int(nd_var)
        x[name] = {f: sum(v.value() or 0.0 for _, v in items) for f, items in flows.items()}
    return CellPlan(cell.case, cell.window, k, n_p, n_d, x)


def _decode_range(s: PdSite) -> tuple[int, int]:
    """N_d (min, max) of a PD site's decode-only pool, for a site with one only."""
    assert s.decode_instances is not None  # set with decode_pool (optimizer.one_site_study, Study.with_counts)
    return s.decode_instances


def _int(v) -> int:
    return int(round(v.value() or 0.0))


def _value(s) -> float | None:
    """A scale's value (a constant 1.0 under min_cost); None when CBC left it unset."""
    return s if isinstance(s, float) else s.value()


SOLUTION_REL_TOLERANCE = 1e-6  # of a constraint's own scale (its largest term or its constant)


class NoPlanInTime(PlanInputError):
    """CBC stopped at its time limit without a whole-number plan (what it hands back then is the
    continuous relaxation, whose counts and routes are not a plan): callers with an exact search
    to fall back on use it; the multi-site planner reports this."""

    def __init__(self) -> None:
        super().__init__(
            f"the solver found no whole-number plan within its {SOLVER_TIME_LIMIT_S} s time limit: narrow the "
            "instance ranges, or plan fewer windows, cases or sites",
            field="optimiser",
        )


def integral(prob, tolerance: float = 1e-6) -> bool:
    """Whether every integer variable of CBC's solution is a whole number: at its time limit CBC
    may hand back the continuous relaxation, whose counts and routes do not make a plan."""
    return all(
        v.varValue is None or abs(v.varValue - round(v.varValue)) <= tolerance for v in prob.variables() if v.cat == "Integer"
    )


def solution_valid(prob, rel_tolerance: float = SOLUTION_REL_TOLERANCE) -> bool:
    """Whether CBC's solution meets every constraint (it can report an infeasible programme, found
    so in presolve, as optimal with a solution that breaks them). The tolerance is relative to
    each constraint's scale: max(1, |constant|, the largest |coefficient x value|), so a
    constraint over rates of 100 req/s is not held to an absolute 1e-6 that CBC's own feasibility
    tolerance (1e-7 per term, relative) can exceed."""
    constraints = prob.constraints() if callable(prob.constraints) else prob.constraints.values()  # pulp 3.3.2 on: a list
    for c in constraints:
        scale = max([1.0, abs(c.constant)] + [abs(coef * (v.value() or 0.0)) for v, coef in c.items()])
        if not c.valid(rel_tolerance * scale):
            return False
    return True
