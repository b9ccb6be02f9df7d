"""The report of ``prfaas-plan sites``: per window of the day a row per PD site, per link, per
PrfaaS site and a total, each with its provisioned $/hour (``planner.sites.cost_parts``)."""

from __future__ import annotations

from ..report import Column, Report, fmt_opt
from .identity import csv_columns
from .plan import _auto, _opt


def _site_rows(result, si, parts: dict, window, sims: dict) -> list[dict]:
    """One window's rows: each PD site, each link it has, each PrfaaS site, then the total; every
    row with the same keys (blank where a figure is not the part's), identity first."""
    ident = dict.fromkeys(
        (
            "prfaas_site",
            "prfaas_hardware",
            "prfaas_gpus_per_instance",
            "pd_site",
            "pd_hardware",
            "pd_gpus_per_instance",
            "link_gbps",
        )
    )
    blank = dict.fromkeys(
        (
            "usable_gbps",
            "rtt_ms",
            "demand_rps",
            "served_rps",
            "threshold_tokens",
            "p",
            "n_prfaas",
            "n_pd",
            "n_p",
            "n_d",
            "offload_rps",
            "egress_gbps",
            "link_utilisation_at_planned_rate",
            "usd_per_hour",
        )
    )
    head = {"scenario": result.name, "model": si.model.name, "window": window.name}

    def row(part: str, **cells) -> dict:
        return {**head, "part": part, **ident, "hours": window.hours, **blank, **cells}

    def prfaas_identity(f: str) -> dict:
        pool = si.prfaas_site(f).pool
        return {"prfaas_site": f, "prfaas_hardware": pool.hardware_name, "prfaas_gpus_per_instance": pool.gpus_per_instance}

    def pd_identity(name: str) -> dict:
        pool = si.site(name).pool
        return {"pd_site": name, "pd_hardware": pool.hardware_name, "pd_gpus_per_instance": pool.gpus_per_instance}

    sites, links = [], []
    for site in window.pd:
        sim = sims.get(site.name)
        sites.append(
            row(
                "pd_site",
                **pd_identity(site.name),
                demand_rps=site.demand_rps,
                served_rps=round(site.served_rps, 6),
                threshold_tokens=site.threshold_tokens,
                p=round(site.p, 6),
                n_pd=result.n_pd.get(site.name),
                n_p=site.n_p,
                n_d=site.n_d,
                offload_rps=round(sum(site.offload_rps.values()), 6),
                egress_gbps=round(sum(site.egress_gbps.values()), 4),
                usd_per_hour=_opt(parts["pd", site.name], 4),
                **(
                    {}
                    if sim is None
                    else {
                        "sim_rate_rps": round(sim.rate_rps, 6),
                        "sim_ttft_p90_s": round(sim.ttft_p90_s, 4),
                        "sim_egress_gbps": round(sum(sim.egress_gbps.values()), 4),
                        "sim_queues": "bounded" if sim.stable else "growing",
                    }
                ),
            )
        )
        for f in site.offload_rps:
            link = si.links[f, site.name]
            links.append(
                row(
                    "link",
                    **prfaas_identity(f),
                    **pd_identity(site.name),
                    link_gbps=round(link.bandwidth_gbps, 6),
                    usable_gbps=round(link.usable_gbps, 6),
                    rtt_ms=round(link.rtt_s * 1000, 6),
                    offload_rps=round(site.offload_rps[f], 6),
                    egress_gbps=round(site.egress_gbps[f], 4),
                    link_utilisation_at_planned_rate=round(site.link_utilisation_at_planned_rate[f], 6),
                    usd_per_hour=_opt(parts["link", site.name, f], 4),
                    **({} if sim is None else {"sim_egress_gbps": round(sim.egress_gbps.get(f, 0.0), 4)}),
                )
            )
    prfaas = [
        row(
            "prfaas_site",
            **prfaas_identity(f),
            n_prfaas=n,
            offload_rps=round(sum(s.offload_rps.get(f, 0.0) for s in window.pd), 6),
            egress_gbps=round(sum(s.egress_gbps.get(f, 0.0) for s in window.pd), 4),
            usd_per_hour=_opt(parts["prfaas", f], 4),
        )
        for f, n in result.n_prfaas.items()
    ]
    total = row(
        "total",
        demand_rps=sum(r["demand_rps"] for r in sites),
        served_rps=round(sum(r["served_rps"] for r in sites), 6),
        n_prfaas=sum(result.n_prfaas.values()),
        n_pd=sum(r["n_pd"] or 0 for r in sites),
        n_p=sum(r["n_p"] for r in sites),
        n_d=sum(r["n_d"] for r in sites),
        offload_rps=round(sum(r["offload_rps"] for r in sites), 6),
        egress_gbps=round(sum(r["egress_gbps"] for r in sites), 4),
        usd_per_hour=_opt(result.usd_per_hour, 4),
    )
    return [*sites, *links, *prfaas, total]


def _part_label(row: dict) -> str:
    if row["part"] == "link":
        return f"{row['pd_site']} <- {row['prfaas_site']}"
    return {"pd_site": row["pd_site"], "prfaas_site": row["prfaas_site"]}.get(row["part"], "total")


def site_columns() -> list[Column]:
    """The table columns of a multi-site plan's rows (``sites``, and each case of a robust one)."""
    return [
        Column("window", "window", justify="left", keep=True),
        Column("site", "site", justify="left", keep=True),
        Column("demand_rps", "demand req/s", _auto),
        Column("served_rps", "served req/s", _auto),
        Column("threshold_tokens", "t (tokens)", _auto),
        Column("p", "p", _auto),
        Column("n_prfaas", "N_prfaas", _auto),
        Column("n_pd", "N_pd", _auto),
        Column("n_p", "N_p", _auto),
        Column("n_d", "N_d", _auto),
        Column("egress_gbps", "egress Gbps", _auto),
        Column("link_utilisation_at_planned_rate", "link util", _share),
        Column("usd_per_hour", "$/h", fmt_opt(2)),
    ]


def cost_text(usd_per_hour: float | None) -> str:
    """A plan's provisioned $/hour for a title; unknown when a pool it buys has no price."""
    return "$/hour unknown: a pool bought has no price" if usd_per_hour is None else f"${usd_per_hour:,.2f}/hour provisioned"


def _share(fraction) -> str:
    """A link's utilisation as a percentage (the CSV and JSON keep the fraction)."""
    return "-" if fraction is None else f"{100 * fraction:.1f}%"


def sites_view(result, si, simulated=None, load: float = 0.8) -> Report:
    """A multi-site plan, per window of the day (one steady window without a day): a row per PD
    site, per link (its bandwidth, RTT, traffic and utilisation), per PrfaaS site and a total, each
    with its provisioned $/hour (``planner.sites.cost_parts``; the parts add up to the total)."""
    from ..planner.sites import cost_parts

    parts = cost_parts(si, result)
    rows = []
    for w, window in enumerate(result.windows):
        sims = {sim.name: sim for sim in (simulated[w] if simulated else ())}
        rows += _site_rows(result, si, parts, window, sims)
    if simulated:
        for row in rows:
            for key in ("sim_rate_rps", "sim_ttft_p90_s", "sim_egress_gbps", "sim_queues"):
                row.setdefault(key, None)
    csv_cols = csv_columns(rows)
    table_rows = [{**r, "site": _part_label(r)} for r in rows]
    cost = cost_text(result.usd_per_hour)
    prfaas = ", ".join(f"{f} {n}" for f, n in result.n_prfaas.items())
    notes = [
        f"demand scale {result.scale:.3f}: every site's demand x this is served in every window (>= 1: all served)",
        f"buy: PrfaaS {prfaas}; PD " + ", ".join(f"{k} {v}" for k, v in result.n_pd.items()),
        "rows per window: each PD site, each link (PD site <- PrfaaS site), each PrfaaS site, the total; $/h "
        "provisioned (instances x $/hour per instance, a link's committed price when it carries traffic), the "
        "same in every window, the parts adding up to the total",
        "link util: the link's egress at the planned rate (its offloaded req/s) / its usable bandwidth, in % "
        "(CSV and JSON: a fraction, link_utilisation_at_planned_rate)",
    ]
    said = [  # of the inputs, in the JSON's notes too
        "decode per PD-D instance: "
        + ", ".join(
            f"{site.name} {site.decode.tokens_per_s_per_instance:,.0f} tokens/s ({site.decode.source})" for site in si.pd_sites
        ),
        *si.notes,
        *(
            [f"the file's robust: section ({len(si.cases)} cases) is not planned here: the robust plan serves them all"]
            if si.cases
            else []
        ),
    ]
    notes += said
    if len(result.windows) > 1:
        notes.append(
            f"each window splits each PD site's instances between PD-P and PD-D anew; an instance that "
            f"switches is idle for the first {si.conversion_s:g} s of its window"
            + ("" if si.max_switches is None else f", at most {si.max_switches} switches per site")
        )
    if result.one_site:
        notes.append("one PD site and one PrfaaS site: planned by the one-site planner (prfaas-plan plan)")
    if not result.proven:
        notes.append("the solver stopped at its time limit: this is the best plan it found, not proven optimal")
    if simulated:
        notes.append(
            f"simulated at {load:g} x each site's planned rate, every window from empty queues "
            "(discrete-event; PrfaaS instances shared by the sites, a link per pair)"
        )
    return Report(
        title=f"Multi-site plan: {result.name} ({si.objective}; {cost})",
        columns=[
            *site_columns(),
            *(
                [
                    Column("sim_ttft_p90_s", "sim TTFT P90 s", _auto),
                    Column("sim_egress_gbps", "sim egress Gbps", _auto),
                    Column("sim_queues", "sim queues", lambda v: "-" if v is None else str(v), justify="left"),
                ]
                if simulated
                else []
            ),
        ],
        rows=table_rows,
        csv_columns=csv_cols,
        meta={"scenario": result.name, "objective": str(si.objective)},
        notes=notes,
        json_doc={
            "scenario": result.name,
            "objective": str(si.objective),
            "scale": result.scale,
            "usd_per_hour": result.usd_per_hour,
            "n_prfaas": result.n_prfaas,
            "n_pd": result.n_pd,
            "one_site": result.one_site,
            "proven_optimal": result.proven,
            "notes": said,
            "rows": rows,
        },
    )


def robust_sites_view(result, study) -> Report:
    """A robust multi-site plan: the shared counts and, per case and window, the sites' rows as
    ``sites`` gives them (each PD site, link, PrfaaS site and the total, with $/hour), each case with
    its own demand scale."""
    from ..planner.sites import SitesPlan, cost_parts

    def as_plan(windows, scale: float) -> SitesPlan:
        return SitesPlan(result.name, scale, result.n_prfaas, result.n_pd, windows, result.usd_per_hour, False, result.proven)

    # a committed link is paid when it carries traffic in any case
    parts = cost_parts(study, as_plan(tuple(w for c in result.cases for w in c.windows), 1.0))
    rows = []
    weighted = any(c.weight for c in result.cases)
    for case, spec in zip(result.cases, study.cases):
        plan = as_plan(case.windows, case.scale)
        for window in case.windows:
            part = _site_rows(plan, study.under(spec), parts, window, {})
            weight = case.weight if weighted else None  # None: the cases carry no weights
            rows += [
                {"scenario": r["scenario"], "model": r["model"], "case": case.name, "case_weight": weight}
                | {"case_scale": round(case.scale, 6), **r}
                for r in part
            ]
    table_rows = [{**r, "site": _part_label(r)} for r in rows]
    cost = (
        "$ unknown: a pool bought has no price"
        if result.usd_per_hour is None
        else f"${result.usd_per_hour:,.2f}/hour provisioned"
    )
    prfaas = ", ".join(f"{f} {n}" for f, n in result.n_prfaas.items())
    scales = ", ".join(f"{c.name} {c.scale:.3f}" for c in result.cases)
    notes = [
        f"demand scale per case (every site's demand in the case x this is served in every window): {scales}; "
        f"worst {result.worst_scale:.3f}" + (f", weighted {result.weighted_scale:.3f}" if weighted else ""),
        f"buy: PrfaaS {prfaas}; PD " + ", ".join(f"{k} {v}" for k, v in result.n_pd.items()) + " (shared by every case)",
        "each case has its own thresholds, PD-P / PD-D splits and offloads; $/h provisioned, a link's committed "
        "price when it carries traffic in some case",
        *study.notes,
    ]
    if not result.proven:
        notes.append("the solver stopped at its time limit: this is the best plan it found, not proven optimal")
    return Report(
        title=f"Robust multi-site plan: {result.name} ({result.objective}; {cost})",
        columns=[Column("case", "case", justify="left", keep=True), *site_columns()],
        rows=table_rows,
        csv_columns=csv_columns(rows),
        meta={"scenario": result.name, "objective": str(result.objective)},
        notes=notes,
        json_doc={
            "scenario": result.name,
            "objective": str(result.objective),
            "cases": [{"name": c.name, "weight": c.weight if weighted else None, "scale": c.scale} for c in result.cases],
            "usd_per_hour": result.usd_per_hour,
            "n_prfaas": result.n_prfaas,
            "n_pd": result.n_pd,
            "proven_optimal": result.proven,
            "notes": list(study.notes),
            "rows": rows,
        },
    )
