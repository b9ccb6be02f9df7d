"""Several PD sites sharing PrfaaS sites over links of their own (``profiles.sites``), planned
by the one programme (``planner.formulation``) over the sites x links x windows of a ``Study``
(``study.resolve.resolve_sites``).

Thresholds come from ``coarse_thresholds`` quantiles per site, then a second programme over the
candidates between each site's neighbours; with many windows fewer candidates per site
(``CANDIDATE_BUDGET`` over all windows, at least ``MIN_CANDIDATES``), and CBC stops after
``formulation.SOLVER_TIME_LIMIT_S`` with its best whole-number plan, reported as not proven
optimal (none by then: ``formulation.NoPlanInTime``, a one-line error; a refining or settling
programme that runs out of time leaves the plan before it standing, not proven). A study
with one PD site, one PrfaaS site and one window is planned by the one-site planner
(``planner.plan``), so it gives today's plans exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from ..choices import ObjectiveKind, RobustObjective
from ..errors import PlanInputError
from ..study.model import Objective, Study
from ..units import bytes_per_s_to_gbps
from .cost import require_prices
from .formulation import Cell, Goal, NoPlanInTime, Solved, score, settle, solve
from .optimizer import coarse_indices
from .throughput import ThresholdTable, threshold_table

FINE_PER_SITE = 32
CANDIDATE_BUDGET = 192  # threshold candidates per site over all windows: 48 for one window, 8 for 24
MIN_CANDIDATES = 8
MAX_VARIABLES = 5_000  # of the programme (windows x PD sites x candidates x (2 + PrfaaS sites))


@dataclass(frozen=True)
class PdSitePlan:
    name: str
    demand_rps: float
    served_rps: float  # s x demand
    threshold_tokens: float
    p: float
    n_p: int
    n_d: int
    offload_rps: dict  # PrfaaS site -> offloaded req/s
    egress_gbps: dict  # PrfaaS site -> KV egress on that link, decimal Gbps
    # PrfaaS site -> egress at the planned rate (offload_rps) / that link's usable bandwidth
    link_utilisation_at_planned_rate: dict


@dataclass(frozen=True)
class WindowSites:
    """One window of the day (or the steady state): each PD site's plan in it."""

    name: str
    hours: float
    pd: tuple[PdSitePlan, ...]


@dataclass(frozen=True)
class SitesPlan:
    name: str
    scale: float  # every site's demand x scale is served (in every window)
    n_prfaas: dict  # PrfaaS site -> instances
    n_pd: dict  # PD site -> instances (N_p + N_d, split per window)
    windows: tuple[WindowSites, ...]
    usd_per_hour: float | None  # provisioned (None: a pool bought has no price)
    one_site: bool  # planned by the one-site planner
    proven: bool = True  # False: CBC stopped at its time limit with the best plan it had
    n_decode: dict = field(default_factory=dict)  # PD site -> N_d of its decode-only pool

    @property
    def pd(self) -> tuple[PdSitePlan, ...]:
        """The PD sites' plans of the first (or only) window."""
        return self.windows[0].pd


def pair_tables(study: Study) -> dict[tuple[str, str], ThresholdTable]:
    """The threshold table of every (PD site, PrfaaS site) pair (``Study.pair``)."""
    return {(s.name, f.name): threshold_table(study.pair(s.name, f.name)) for s in study.pd_sites for f in study.prfaas_sites}


def window_cells(study: Study, tables: dict, case: int = 0) -> list[Cell]:
    """One cell per window of the study, as case ``case``."""
    decode = {s.name: s.decode_rps_per_instance for s in study.pd_sites}
    return [Cell(case, w, window.hours, window.rates_rps, tables, study.links, decode) for w, window in enumerate(study.windows)]


def coarse_candidates(study: Study, tables: dict, per_site: int, case: int = 0) -> dict:
    """Each PD site's ``per_site`` coarse threshold candidates (``optimizer.coarse_indices``), the same
    in every window of case ``case``."""
    first = study.prfaas_sites[0].name
    coarse = {s.name: [int(k) for k in coarse_indices(tables[s.name, first], per_site)] for s in study.pd_sites}
    return {(case, w, name): c for name, c in coarse.items() for w in range(len(study.windows))}


def plan_sites(study: Study) -> SitesPlan:
    """The multi-site plan (see the module docstring)."""
    check_prices(study, study.objective == ObjectiveKind.min_cost or study.usd_per_hour is not None)
    if len(study.pd_sites) == 1 and len(study.prfaas_sites) == 1 and len(study.windows) == 1:
        return _one_site(study)
    tables = pair_tables(study)
    n_windows = len(study.windows)
    where = "day.windows" if study.day else "pd_sites"
    per_site = _per_site(study, n_windows, "windows, PD sites or PrfaaS sites", where)
    cands = coarse_candidates(study, tables, per_site)
    rates = "every site's rate in every window (day.windows[].rates)" if study.day else "every site's rate_rps"
    what = f"serves {rates}" if study.objective == ObjectiveKind.min_cost else "fits"
    error = PlanInputError(f"no multi-site plan within the ranges and budgets {what}", field=where)
    sol = _coarse_to_fine(study, window_cells(study, tables), cands, Goal(study.objective), per_site, error)
    return _result(study, tables, sol)


def _coarse_to_fine(study: Study, cells: list[Cell], cands: dict, goal: Goal, per_site: int, error: PlanInputError) -> Solved:
    """The programme over the coarse candidates, again over the fine ones around its choice (``refine``)
    where that does better, then ``settle``d; ``error`` when the coarse one finds no plan."""
    sol = solve(study, cells, cands, goal)
    if sol is None:
        raise error
    fine = refine(cands, sol, per_site * 2)
    try:
        refined = solve(study, cells, fine, goal)
    except NoPlanInTime:  # the coarse plan stands, not proven optimal
        refined, sol = None, replace(sol, proven=False)
    if refined is not None and _better(refined, sol, goal):
        sol, cands = refined, fine
    return settle(study, cells, cands, goal, sol)


def _per_site(study: Study, n_cells: int, fewer: str, field: str) -> int:
    """Threshold candidates per PD site in each of ``n_cells`` cells (``CANDIDATE_BUDGET`` over them, at
    least ``MIN_CANDIDATES``); a one-line error where the programme would pass ``MAX_VARIABLES``."""
    per_site = max(MIN_CANDIDATES, min(study.optimiser.coarse_thresholds, CANDIDATE_BUDGET // n_cells))
    size = n_cells * len(study.pd_sites) * per_site * (2 + len(study.prfaas_sites))
    if size > MAX_VARIABLES:
        raise PlanInputError(f"about {size:,} variables (at most {MAX_VARIABLES:,}): use fewer {fewer}", field=field)
    return per_site


def refine(cands: dict, sol: Solved, most: int) -> dict:
    """Per (case, PD site), the candidates between the neighbours of each threshold the solution
    chose in any window of the case (``FINE_PER_SITE`` per window), at most ``most``, evenly
    thinned; the same for every window (a case's tables are the same in each)."""
    chosen: dict = {}
    for plan in sol.cells:
        for name, k in plan.k.items():
            chosen.setdefault((plan.case, name), []).append(k)
    fine = {}
    for (case, window, name), c in cands.items():
        picks = set()
        for k in chosen[case, name]:
            pos = int(np.searchsorted(c, k))
            lo, hi = c[max(pos - 1, 0)], c[min(pos + 1, len(c) - 1)]
            picks |= set(np.linspace(lo, hi, min(hi - lo + 1, FINE_PER_SITE)).round().astype(int).tolist())
        ordered = np.array(sorted(picks))
        keep = np.unique(np.linspace(0, len(ordered) - 1, most).round().astype(int))
        fine[case, window, name] = ordered if len(ordered) <= most else ordered[keep]
    return fine


def _better(a: Solved, b: Solved, goal: Goal) -> bool:
    if not goal.maximise:
        return a.usd_per_hour < b.usd_per_hour - 1e-9
    return score(a.scales, goal) > score(b.scales, goal) * (1 + 1e-7)


def _result(study: Study, tables: dict, sol: Solved) -> SitesPlan:
    windows = _windows(study, tables, sol.cells, sol.scales[0])
    cost = sol.usd_per_hour if not unpriced(study, sol) else None
    return SitesPlan(study.name, sol.scales[0], sol.n_prfaas, sol.n_pd, windows, cost, False, sol.proven, sol.n_decode)


def _bought(study: Study, sol: Solved):
    """(field path, pool, count) of every pool, PrfaaS sites first."""
    for f in study.prfaas_sites:
        yield f"prfaas_sites.{f.name}", f.pool, sol.n_prfaas[f.name]
    for s in study.pd_sites:
        yield f"pd_sites.{s.name}", s.pool, sol.n_pd[s.name]
        if s.decode_pool is not None:
            yield f"pd_sites.{s.name}.decode", s.decode_pool, sol.n_decode[s.name]


def unpriced(study: Study, sol: Solved) -> list[str]:
    """The pools a plan buys whose hardware has no price (its $/hour is then unknown)."""
    return [where for where, pool, n in _bought(study, sol) if n and pool.usd_per_hour_per_instance is None]


def check_prices(study: Study, needed: bool) -> None:
    """Where a cost objective or a $/hour budget needs prices (``needed``), every pool that may be
    bought has one: a capital or rental price, and a TDP where its power is billed; else a one-line
    error naming the site's hardware (``cost.require_prices``, as the one-site ``optimizer.check_limits``)."""
    if not needed:
        return
    ranges = [(f"prfaas_sites.{f.name}", f.pool, f.instances[1]) for f in study.prfaas_sites]
    for s in study.pd_sites:
        ranges.append((f"pd_sites.{s.name}", s.pool, s.instances[1]))
        if s.decode_pool is not None:
            assert s.decode_instances is not None  # set with the decode-only pool (optimizer.one_site_study)
            ranges.append((f"pd_sites.{s.name}.decode", s.decode_pool, s.decode_instances[1]))
    require_prices(ranges, "site's")


def _windows(study: Study, tables: dict, cells, scale: float) -> tuple[WindowSites, ...]:
    """Each window's PD-site plans from the programme's cells."""
    windows = []
    first = study.prfaas_sites[0].name
    for window, cell in zip(study.windows, cells):
        sites = []
        for name in (s.name for s in study.pd_sites):
            k = cell.k[name]
            table: ThresholdTable = tables[name, first]
            p = float(table.p[k])
            offload = dict(cell.offload_rps[name])
            # KV bytes/s on each link: the offloaded rate x the bytes per offloaded request
            carried = {f: rate * (float(tables[name, f].link_work_bytes[k]) / p if p > 0 else 0.0) for f, rate in offload.items()}
            egress = {f: bytes_per_s_to_gbps(b) for f, b in carried.items()}
            util = {f: study.links[f, name].utilisation(b) for f, b in carried.items()}
            demand = window.rates_rps[name]
            sites.append(
                PdSitePlan(
                    name,
                    demand,
                    scale * demand,
                    float(table.thresholds_tokens[k]),
                    p,
                    cell.n_p[name],
                    cell.n_d[name],
                    offload,
                    egress,
                    util,
                )
            )
        windows.append(WindowSites(window.name, window.hours, tuple(sites)))
    return tuple(windows)


# ---------------------------------------------------------------------------------------
# A robust plan over several sites


@dataclass(frozen=True)
class CaseSites:
    """One case of a robust multi-site plan: its demand scale and its windows' site plans, at the
    case's best for the counts bought."""

    name: str
    weight: float | None  # None: the cases carry no weights (worst case)
    scale: float  # every site's demand in the case x scale is served (in every window)
    windows: tuple[WindowSites, ...]


@dataclass(frozen=True)
class RobustSitesPlan:
    name: str
    objective: RobustObjective
    n_prfaas: dict  # PrfaaS site -> instances, shared by every case
    n_pd: dict  # PD site -> instances (N_p + N_d, split per case and window)
    cases: tuple[CaseSites, ...]
    usd_per_hour: float | None  # provisioned (None: a pool bought has no price)
    proven: bool = True

    @property
    def worst_scale(self) -> float:
        return min(c.scale for c in self.cases)

    @property
    def weighted_scale(self) -> float | None:
        """sum_c w_c scale_c; None when the cases carry no weights."""
        weights = [c.weight for c in self.cases]
        return None if None in weights else sum(w * c.scale for w, c in zip(weights, self.cases) if w is not None)


def plan_robust_sites(study: Study) -> RobustSitesPlan:
    """One set of counts for every case of a multi-site study (``profiles.scenario.RobustSpec``):
    the one programme over cases x windows, coarse then fine thresholds per case and site."""
    robust = study.robust
    assert robust is not None  # set with the cases (study.resolve.resolve_sites; api.robust_sites refuses a file without)
    check_prices(study, robust == RobustObjective.min_cost or study.usd_per_hour is not None)
    per_site = _per_site(study, len(study.windows) * len(study.cases), "cases, windows or sites", "robust.cases")
    unders = [study.under(case) for case in study.cases]
    tables = [pair_tables(under) for under in unders]
    cells: list[Cell] = []
    cands: dict = {}
    for c, (under, table) in enumerate(zip(unders, tables)):
        cells += window_cells(under, table, c)
        cands |= coarse_candidates(under, table, per_site, c)
    objective = ObjectiveKind.min_cost if study.robust == RobustObjective.min_cost else ObjectiveKind.max_throughput
    goal = Goal(objective, study.robust, tuple(case.weight for case in study.cases))
    what = "serves every case's rates" if not goal.maximise else "fits"
    error = PlanInputError(f"no robust multi-site plan within the ranges and budgets {what}", field="robust")
    sol = _coarse_to_fine(study, cells, cands, goal, per_site, error)
    cases = []
    weighted = any(case.weight for case in study.cases)
    for c, case in enumerate(study.cases):
        alone = _case_at_its_best(study, sol, c)
        if alone.scale >= sol.scales[c] * (1 - 1e-9):
            cases.append(CaseSites(case.name, case.weight if weighted else None, alone.scale, alone.windows))
        else:  # not reached: the programme's own plan of the case is a plan of it alone
            own = [plan for plan in sol.cells if plan.case == c]
            windows = _windows(unders[c], tables[c], own, sol.scales[c])
            cases.append(CaseSites(case.name, case.weight if weighted else None, sol.scales[c], windows))
    cost = sol.usd_per_hour if not unpriced(study, sol) else None
    return RobustSitesPlan(study.name, robust, sol.n_prfaas, sol.n_pd, tuple(cases), cost, sol.proven)


def _case_at_its_best(study: Study, sol: Solved, c: int) -> SitesPlan:
    """Case ``c`` planned alone, as ``sites`` plans a file, on the counts ``sol`` bought: its largest
    demand scale and its windows' plans (the robust objective pins only the cases that bind it;
    the others may do better than it needs)."""
    fixed = replace(study.with_counts(sol.n_prfaas, sol.n_pd, sol.n_decode), objective=ObjectiveKind.max_throughput)
    return plan_sites(fixed.under(study.cases[c]))


def _one_site(study: Study) -> SitesPlan:
    """One PD site and one PrfaaS site: the one-site planner, with the demand as the target rate."""
    from .plan import plan

    site, factory = study.pd_sites[0], study.prfaas_sites[0]
    name, f, demand = site.name, factory.name, study.windows[0].rates_rps[site.name]
    inputs = study.pair(name, f)
    limits = replace(inputs.limits, gpu_budget=study.gpu_budget, usd_per_hour=study.usd_per_hour)
    objective = Objective(study.objective, demand if study.objective == ObjectiveKind.min_cost else None)
    result = plan(replace(inputs, limits=limits, objective=objective), with_marginals=False, with_other_mode=False)
    pt = result.point
    # min_cost serves the demand (scale 1, as the programme reports it); max_throughput its capacity
    served = demand if study.objective == ObjectiveKind.min_cost else pt.lambda_max
    at = served / pt.lambda_max  # the traffic at the served rate, of that at capacity
    linked = (f, name) in study.links
    plan_site = PdSitePlan(
        name,
        demand,
        served,
        pt.threshold_tokens,
        pt.p,
        pt.n_p,
        pt.n_d,
        {f: served * pt.p} if linked else {},
        {f: pt.stages.egress_gbps * at} if linked else {},
        {f: pt.link_utilisation * at} if linked else {},
    )
    window = study.windows[0]
    separate = site.decode_pool is not None
    return SitesPlan(
        study.name,
        served / demand,
        {f: pt.n_prfaas},
        {name: pt.n_p if separate else pt.n_p + pt.n_d},
        (WindowSites(window.name, window.hours, (plan_site,)),),
        pt.usd_per_hour,
        True,
        n_decode={name: pt.n_d} if separate else {},
    )


def cost_parts(study: Study, result: SitesPlan) -> dict:
    """The provisioned $/hour of each part of a multi-site plan, the terms of the programme's cost:
    ``("prfaas", j)``: N_j x the PrfaaS site's $/hour per instance; ``("pd", i)``: N_i x the PD
    site's; ``("decode", i)``: N_d x its decode-only pool's, where it has one; ``("link", i, j)``: the
    link's committed $/hour, paid when it carries traffic in some window. None where the hardware
    has no price. Their sum is ``result.usd_per_hour``."""
    parts: dict = {}
    for f, n in result.n_prfaas.items():
        price = study.prfaas_site(f).pool.usd_per_hour_per_instance
        parts["prfaas", f] = None if price is None else n * price
    for name, n in result.n_pd.items():
        price = study.site(name).pool.usd_per_hour_per_instance
        parts["pd", name] = None if price is None else n * price
    for name, n in result.n_decode.items():
        decode_pool = study.site(name).decode_pool
        assert decode_pool is not None  # n_decode names only the sites with a decode-only pool (formulation.Solved)
        price = decode_pool.usd_per_hour_per_instance
        parts["decode", name] = None if price is None else n * price
    for site in study.pd_sites:
        for f in study.prfaas_sites:
            link = study.link(f.name, site.name)
            if link is not None:
                used = any(s.offload_rps.get(f.name, 0.0) > 0 for w in result.windows for s in w.pd if s.name == site.name)
                parts["link", site.name, f.name] = link.fixed_usd_per_hour if used else 0.0
    return parts
