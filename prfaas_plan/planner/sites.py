"""Several PD sites sharing PrfaaS sites over links of their own (``profiles.sites``).

Per PD site i (demand r_i req/s, its own workload, hardware and threshold t_i) and PrfaaS
site j, with the throughput model's work per request at candidate threshold k of site i
(``planner.throughput``, exact class means): p_ik, PrfaaS seconds T_ijk = E[T_j(L); L > t_k]
(per offloaded request: T_ijk / p_ik), link bytes S_ijk likewise, PD-P seconds P_ik, and the
decode rate r_d,i per PD-D instance. A mixed-integer program (pulp/CBC):

    sum_k z_ik = 1,  lambda_ik <= U_i z_ik,            sum_k lambda_ik = s r_i
    sum_j x_ijk = p_ik lambda_ik                       (site i's offloaded requests, split by PrfaaS site)
    sum_{i,k} x_ijk T_ijk / p_ik <= N_j                (PrfaaS site j's compute)
    sum_k x_ijk S_ijk / p_ik <= B_ij                   (each link's usable bandwidth)
    sum_k lambda_ik P_ik <= N_p,i,   sum_k lambda_ik <= r_d,i N_d,i
    instance ranges per site, GPU budgets per hardware, $/hour budget (links' committed price
    paid when they carry traffic)

maximising the common demand scale s (``max_throughput``), or minimising the provisioned
$/hour with s = 1 (``min_cost``). Thresholds come from ``coarse_thresholds`` quantiles per site,
then a second programme over the candidates between each site's neighbours; with many windows
fewer candidates per site (``CANDIDATE_BUDGET`` over all windows, at least ``MIN_CANDIDATES``),
and CBC stops after ``SOLVER_TIME_LIMIT_S`` with its best plan, reported as not proven optimal.
Over a day, instances that switch role at a window's start (into_p >= N_p,w - N_p,w-1, into_d
likewise, the day cyclic) are idle for f = min(1, conversion_s / window) of it: PD-P capacity
N_p - f into_p, decode r_d (N_d - f into_d); at most ``max_switches_per_window`` switch per site. A scenario with
one PD site and one PrfaaS site is planned by the one-site planner (``planner.plan``), so it
gives today's plans exactly.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..choices import ObjectiveKind
from ..errors import PlanInputError
from ..units import bytes_per_s_to_gbps
from .inputs import PlanInputs, build_inputs
from .optimizer import coarse_indices, solution_valid
from .throughput import ThresholdTable, threshold_table

FINE_PER_SITE = 32
CANDIDATE_BUDGET = 192  # threshold candidates per site over all windows: 48 for one window, 8 for 24
MIN_CANDIDATES = 8
SOLVER_TIME_LIMIT_S = 60  # CBC stops here with its best plan, reported as not proven optimal
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
    usd_per_hour: float | None  # provisioned
    one_site: bool  # planned by the one-site planner
    proven: bool = True  # False: CBC stopped at its time limit with the best plan it had

    @property
    def pd(self) -> tuple[PdSitePlan, ...]:
        """The PD sites' plans of the first (or only) window."""
        return self.windows[0].pd


@dataclass(frozen=True)
class SitesInputs:
    name: str
    pd: list[tuple[str, float]]  # (PD site, demand)
    prfaas: list[str]
    linked: dict  # (PrfaaS site, PD site) -> True
    pairs: dict  # (PD site, PrfaaS site) -> PlanInputs
    gpu_budget: dict
    usd_per_hour: float | None
    objective: ObjectiveKind
    coarse: int
    windows: list  # (name, hours, {PD site: demand req/s}); one "steady" window without a day
    conversion_s: float = 0.0  # a role switch idles the instance this long
    max_switches: int | None = None  # per site between consecutive windows
    notes: tuple[str, ...] = ()  # every pair's input notes (measurements left out, weights normalised), once each


def sites_inputs(spec, source: str | None = None) -> SitesInputs:
    """Every (PD site, PrfaaS site) pair resolved as a one-site scenario (``profiles.sites.pair_scenario``)."""
    from ..profiles.sites import pair_scenario, site_names, sites_budgets, sites_objective, sites_switching, sites_windows

    pd, prfaas, linked = site_names(spec)
    pairs = {}
    for name, _ in pd:
        for f in prfaas:
            try:
                pairs[name, f] = build_inputs(pair_scenario(spec, name, f), source)
            except PlanInputError as exc:
                raise PlanInputError(exc.reason, source=source, field=f"{_site_field(exc.field, name, f)}") from None
    gpus, usd = sites_budgets(spec)
    used = {p.hardware_name for inputs in pairs.values() for p in (inputs.prfaas, inputs.pd)}
    for hardware in gpus:
        if hardware not in used:
            raise PlanInputError(
                f"budget for '{hardware}', which no site uses (they use {', '.join(sorted(used))})",
                source=source,
                field=f"budgets.gpus.{hardware}",
            )
    first = next(iter(pairs.values()))
    notes = tuple(dict.fromkeys(n for inputs in pairs.values() for n in inputs.notes))
    return SitesInputs(
        spec.name,
        pd,
        prfaas,
        linked,
        pairs,
        gpus,
        usd,
        sites_objective(spec),
        first.optimiser.coarse_thresholds,
        sites_windows(spec),
        *sites_switching(spec),
        notes=notes,
    )


def _site_field(field: str | None, pd: str, prfaas: str) -> str:
    if not field:
        return f"pd_sites.{pd}"
    head, _, rest = field.partition(".")
    site = {"prfaas": f"prfaas_sites.{prfaas}", "pd": f"pd_sites.{pd}", "link": f"links.{prfaas}-{pd}"}.get(head)
    return f"{site}.{rest}" if site and rest else (site or field)


def plan_sites(si: SitesInputs) -> SitesPlan:
    """The multi-site plan (see the module docstring)."""
    if len(si.pd) == 1 and len(si.prfaas) == 1 and len(si.windows) == 1:
        return _one_site(si)
    tables = {key: threshold_table(inputs) for key, inputs in si.pairs.items()}
    per_site = max(MIN_CANDIDATES, min(si.coarse, CANDIDATE_BUDGET // len(si.windows)))
    size = len(si.windows) * len(si.pd) * per_site * (2 + len(si.prfaas))
    if size > MAX_VARIABLES:
        raise PlanInputError(
            f"about {size:,} variables (at most {MAX_VARIABLES:,}): use fewer windows, PD sites or PrfaaS sites",
            field="day.windows" if len(si.windows) > 1 else "pd_sites",
        )
    cands = {name: coarse_indices(tables[name, si.prfaas[0]], per_site) for name, _ in si.pd}
    sol = _solve(si, tables, cands)
    if sol is None:
        raise _infeasible(si)
    fine = {}
    for name, _ in si.pd:
        c = cands[name]
        picks = set()
        for w in range(len(si.windows)):
            pos = int(np.searchsorted(c, sol["k"][w][name]))
            lo, hi = c[max(pos - 1, 0)], c[min(pos + 1, len(c) - 1)]
            picks |= set(np.linspace(lo, hi, min(hi - lo + 1, FINE_PER_SITE)).round().astype(int).tolist())
        picks = np.array(sorted(picks))
        fine[name] = (
            picks
            if len(picks) <= per_site * 2
            else picks[np.unique(np.linspace(0, len(picks) - 1, per_site * 2).round().astype(int))]
        )
    refined = _solve(si, tables, fine)
    if refined is not None and _better(refined, sol, si.objective):
        sol = refined
    return _result(si, tables, sol)


def _better(a: dict, b: dict, objective: ObjectiveKind) -> bool:
    if objective == ObjectiveKind.min_cost:
        return a["cost"] < b["cost"] - 1e-9
    return a["s"] > b["s"] * (1 + 1e-7)


def _infeasible(si: SitesInputs) -> PlanInputError:
    what = "serves every site's rate_rps" if si.objective == ObjectiveKind.min_cost else "fits"
    return PlanInputError(f"no multi-site plan within the ranges and budgets {what}", field="pd_sites")


def _solve(si: SitesInputs, tables: dict, cands: dict) -> dict | None:
    """One programme over every window: shared counts (N_j per PrfaaS site, N_i per PD site), per
    window and PD site a threshold, a split of N_i and the offload per PrfaaS site."""
    import pulp

    prob_max = si.objective != ObjectiveKind.min_cost
    prob = pulp.LpProblem("sites", pulp.LpMaximize if prob_max else pulp.LpMinimize)
    var = prob.add_variable
    first = si.pd[0][0]
    n_f = {
        f: var(f"nf_{f}", si.pairs[first, f].limits.prfaas_min, si.pairs[first, f].limits.prfaas_max, cat="Integer")
        for f in si.prfaas
    }
    n_pd = {
        name: var(
            f"npd_{name}", si.pairs[name, si.prfaas[0]].limits.pd_min, si.pairs[name, si.prfaas[0]].limits.pd_max, cat="Integer"
        )
        for name, _ in si.pd
    }
    s = var("s", 0, None) if prob_max else 1.0
    cost = pulp.lpSum(n_f[f] * (si.pairs[first, f].prfaas.usd_per_hour_per_instance or 0.0) for f in si.prfaas)
    gpus: dict[str, list] = {}
    for f in si.prfaas:
        pool = si.pairs[first, f].prfaas
        gpus.setdefault(pool.hardware_name, []).append(pool.gpus_per_instance * n_f[f])
    for name, _ in si.pd:
        inputs = si.pairs[name, si.prfaas[0]]
        cost += (inputs.pd.usd_per_hour_per_instance or 0.0) * n_pd[name]
        gpus.setdefault(inputs.pd.hardware_name, []).append(inputs.pd.gpus_per_instance * n_pd[name])
    link_used: dict = {}
    per_window = []
    switches: list = []
    for w, (_, _, demands) in enumerate(si.windows):
        f_work: dict[str, list] = {f: [] for f in si.prfaas}
        per_site = {}
        for name, _ in si.pd:
            inputs = si.pairs[name, si.prfaas[0]]
            lim = inputs.limits
            n_p = var(f"np_{w}_{name}", 0, lim.pd_max, cat="Integer")
            n_d = var(f"nd_{w}_{name}", 0, lim.pd_max, cat="Integer")
            prob += n_p + n_d == n_pd[name]
            upper = inputs.decode_rps_per_instance * lim.pd_max
            table = tables[name, si.prfaas[0]]
            ks = [int(k) for k in cands[name]]
            z = [var(f"z_{w}_{name}_{k}", 0, 1, cat="Binary") for k in ks]
            lam = [var(f"lam_{w}_{name}_{k}", 0, upper) for k in ks]
            prob += pulp.lpSum(z) == 1
            for zi, li in zip(z, lam):
                prob += li <= upper * zi
            demand = demands[name]
            prob += pulp.lpSum(lam) == s * demand if prob_max else pulp.lpSum(lam) >= demand
            f_idle = min(1.0, si.conversion_s / (si.windows[w][1] * 3600.0)) if len(si.windows) > 1 else 0.0
            into_p = into_d = 0.0
            if f_idle > 0 or si.max_switches is not None:
                into_p = var(f"inp_{w}_{name}", 0, lim.pd_max)  # instances that became PD-P at this window
                into_d = var(f"ind_{w}_{name}", 0, lim.pd_max)  # and PD-D
                switches.append((w, name, n_p, into_p, into_d))
            prob += pulp.lpSum(float(table.pd_work_s[k]) * li for k, li in zip(ks, lam)) <= n_p - f_idle * into_p
            prob += pulp.lpSum(lam) <= inputs.decode_rps_per_instance * (n_d - f_idle * into_d)
            flows = {}
            for k, li in zip(ks, lam):
                p = float(table.p[k])
                if p <= 0:
                    continue
                parts = []
                for f in si.prfaas:
                    if (f, name) not in si.linked:
                        continue
                    x = var(f"x_{w}_{name}_{f}_{k}", 0, upper)
                    parts.append(x)
                    flows.setdefault(f, []).append((k, x))
                    f_work[f].append(float(tables[name, f].prfaas_work_s[k]) / p * x)
                prob += pulp.lpSum(parts) == p * li  # nothing offloaded without a link: lambda_ik = 0
            for f, items in flows.items():
                link = si.pairs[name, f].link
                scale = max(float(tables[name, f].link_work_bytes[k]) / float(table.p[k]) for k, _ in items) or 1.0
                prob += (
                    pulp.lpSum(float(tables[name, f].link_work_bytes[k]) / float(table.p[k]) / scale * x for k, x in items)
                    <= link.usable_bytes_per_s / scale
                )
                if link.fixed_usd_per_hour > 0:
                    if (name, f) not in link_used:
                        link_used[name, f] = var(f"u_{name}_{f}", 0, 1, cat="Binary")
                        cost += link.fixed_usd_per_hour * link_used[name, f]
                    prob += pulp.lpSum(x for _, x in items) <= upper * link_used[name, f]
            per_site[name] = (ks, z, n_p, n_d, flows)
        for f in si.prfaas:
            prob += pulp.lpSum(f_work[f]) <= n_f[f]
        per_window.append(per_site)
    by_site: dict = {}
    for w, name, n_p, into_p, into_d in switches:
        by_site.setdefault(name, {})[w] = (n_p, into_p, into_d)
    for windows in by_site.values():
        for w, (n_p, into_p, into_d) in windows.items():
            prev = windows[(w - 1) % len(si.windows)][0]  # the day repeats: the last window precedes the first
            prob += into_p >= n_p - prev
            prob += into_d >= prev - n_p
            if si.max_switches is not None:
                prob += into_p + into_d <= si.max_switches
    for hardware, budget in si.gpu_budget.items():
        if hardware not in gpus:
            raise PlanInputError(f"budget for '{hardware}', which no site uses", field=f"budgets.gpus.{hardware}")
        prob += pulp.lpSum(gpus[hardware]) <= budget
    if si.usd_per_hour is not None:
        prob += cost <= si.usd_per_hour
    total = pulp.lpSum(n_pd.values()) + pulp.lpSum(n_f.values())
    prob += (s - 1e-7 * total) if prob_max else cost
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        status = prob.solve(pulp.PULP_CBC_CMD(msg=False, timeLimit=SOLVER_TIME_LIMIT_S))
    if pulp.LpStatus[status] not in ("Optimal", "Not Solved") or not solution_valid(prob) or s_value(s) is None:
        return None
    out = {
        "proven": prob.sol_status == pulp.LpSolutionOptimal,
        "s": s_value(s),
        "cost": float(pulp.value(cost)),
        "nf": {f: int(round(v.value())) for f, v in n_f.items()},
        "npd": {name: int(round(v.value())) for name, v in n_pd.items()},
        "k": [],
        "np": [],
        "nd": [],
        "x": [],
    }
    for per_site in per_window:
        k, n_p, n_d, x = {}, {}, {}, {}
        for name, (ks, z, np_var, nd_var, flows) in per_site.items():
            k[name] = ks[int(np.argmax([zi.value() or 0.0 for zi in z]))]
            n_p[name], n_d[name] = int(round(np_var.value())), int(round(nd_var.value()))
            x[name] = {f: sum(v.value() or 0.0 for _, v in items) for f, items in flows.items()}
        for key, value in (("k", k), ("np", n_p), ("nd", n_d), ("x", x)):
            out[key].append(value)
    return out


def s_value(s) -> float | None:
    """The value of the scale variable (a constant 1.0 for min_cost); None when CBC left it unset."""
    return s if isinstance(s, float) else s.value()


def _result(si: SitesInputs, tables: dict, sol: dict) -> SitesPlan:
    windows = []
    for w, (wname, hours, demands) in enumerate(si.windows):
        sites = []
        for name, _ in si.pd:
            k = sol["k"][w][name]
            table: ThresholdTable = tables[name, si.prfaas[0]]
            p = float(table.p[k])
            offload, egress, util = {}, {}, {}
            for f, rate in sol["x"][w][name].items():
                per_request = float(tables[name, f].link_work_bytes[k]) / p if p > 0 else 0.0
                offload[f] = rate
                egress[f] = bytes_per_s_to_gbps(rate * per_request)
                util[f] = si.pairs[name, f].link.utilisation(rate * per_request)
            sites.append(
                PdSitePlan(
                    name,
                    demands[name],
                    sol["s"] * demands[name],
                    float(table.thresholds_tokens[k]),
                    p,
                    sol["np"][w][name],
                    sol["nd"][w][name],
                    offload,
                    egress,
                    util,
                )
            )
        windows.append(WindowSites(wname, hours, tuple(sites)))
    return SitesPlan(si.name, sol["s"], sol["nf"], sol["npd"], tuple(windows), sol["cost"], False, sol["proven"])


def _one_site(si: SitesInputs) -> SitesPlan:
    """One PD site and one PrfaaS site: the one-site planner, with the demand as the target rate."""
    from dataclasses import replace

    from .inputs import Limits, Objective
    from .plan import plan

    (name, demand), f = si.pd[0], si.prfaas[0]
    inputs: PlanInputs = si.pairs[name, f]
    limits: Limits = replace(inputs.limits, gpu_budget=si.gpu_budget, usd_per_hour=si.usd_per_hour)
    objective = Objective(si.objective, demand if si.objective == ObjectiveKind.min_cost else None)
    result = plan(replace(inputs, limits=limits, objective=objective), with_marginals=False, with_other_mode=False)
    pt = result.point
    egress = pt.stages.egress_gbps
    site = PdSitePlan(
        name,
        demand,
        pt.lambda_max,
        pt.threshold_tokens,
        pt.p,
        pt.n_p,
        pt.n_d,
        {f: pt.lambda_max * pt.p} if (f, name) in si.linked else {},
        {f: egress} if (f, name) in si.linked else {},
        {f: pt.link_utilisation} if (f, name) in si.linked else {},
    )
    return SitesPlan(
        si.name,
        pt.lambda_max / demand,
        {f: pt.n_prfaas},
        {name: pt.n_p + pt.n_d},
        (WindowSites(si.windows[0][0], si.windows[0][1], (site,)),),
        pt.usd_per_hour,
        True,
    )


def cost_parts(si: SitesInputs, result: SitesPlan) -> dict:
    """The provisioned $/hour of each part of a multi-site plan, the terms of the programme's cost:
    ``("prfaas", j)``: N_j x the PrfaaS site's $/hour per instance; ``("pd", i)``: N_i x the PD
    site's; ``("link", i, j)``: the link's committed $/hour, paid when it carries traffic in some
    window. None where the hardware has no price. Their sum is ``result.usd_per_hour``."""
    first = si.pd[0][0]
    parts: dict = {}
    for f, n in result.n_prfaas.items():
        price = si.pairs[first, f].prfaas.usd_per_hour_per_instance
        parts["prfaas", f] = None if price is None else n * price
    for name, n in result.n_pd.items():
        price = si.pairs[name, si.prfaas[0]].pd.usd_per_hour_per_instance
        parts["pd", name] = None if price is None else n * price
    for name, _ in si.pd:
        for f in si.prfaas:
            if (f, name) in si.linked:
                used = any(site.offload_rps.get(f, 0.0) > 0 for w in result.windows for site in w.pd if site.name == name)
                parts["link", name, f] = si.pairs[name, f].link.fixed_usd_per_hour if used else 0.0
    return parts
