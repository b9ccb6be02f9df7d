"""A multi-site file, resolved to a ``Study`` (``resolve_sites``): every pool, workload and link resolved once."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ...choices import Role
from ...profiles.hardware import HardwareProfile
from ...profiles.model import ModelProfile
from ...profiles.registry import same_hardware, same_model
from ..model import Case, OptimiserSettings, PdSite, PrfaasSite, Study, Window
from .links import link_of
from .pools import _base, _budgets, _fits, _fitted, _hardware, _measured_on, _model, dropped_measurements, measured_on, moved_note
from .workload import _decode, _decode_context, _workload, case_workload

if TYPE_CHECKING:  # the multi-site schema: imported where used (start-up)
    from ...profiles.sites import SitesScenario


def resolve_sites(
    spec: SitesScenario,
    source: str | None = None,
    hardware: dict[str, str] | None = None,
    model_ref: str | None = None,
    said: list[str] | None = None,
) -> Study:
    """A multi-site file as a ``Study``: each PrfaaS site's pool, each PD site's pool, workload
    and decode rate, and each link, resolved once; the windows of its day (one steady window
    without one). Errors name the site (``pd_sites.<name>.<field>``).

    What-ifs, resolved as the file's own parts are: ``hardware`` moves every site of a kind
    (``prfaas_sites``, ``pd_sites``) onto a hardware reference (``OneSite.with_hardware``: its
    layout and cost dropped, its counts kept); ``model_ref`` another model, whose decode rate is
    each site's roofline (the file's tokens/s were measured on its own). ``said`` collects what
    they replaced or dropped, in words."""
    base, hardware, said = _base(source), hardware or {}, [] if said is None else said
    refs: dict[str, tuple[str, HardwareProfile, bool]] = {}  # field path -> (reference, profile, moved)
    for kind in ("prfaas_sites", "pd_sites"):
        for site in getattr(spec, kind):
            where, ref = f"{kind}.{site.name}", hardware.get(kind)
            if ref is None or same_hardware(ref, site.hardware, base):
                refs[where] = (site.hardware, _hardware(where, site.hardware, base, source), False)
                continue
            refs[where] = (ref, _hardware(where, ref, base, source), True)
            note = moved_note(where, site, ref, refs[where][1])
            said.extend([note] if note else [])
    pool_specs = [(f"prfaas_sites.{s.name}", s) for s in spec.prfaas_sites] + [(f"pd_sites.{s.name}", s) for s in spec.pd_sites]
    model, notes = _model(model_ref or spec.model, spec.precision, pool_specs, base, source)
    taken_on, planned = measured_on(spec, base, source), model_ref or spec.model
    measured = same_model(taken_on, planned, base)
    if not measured and model_ref is None:  # the file's own mismatch
        notes += dropped_measurements(taken_on, planned, pool_specs, spec.decode, "each site's")
    elif not measured:  # a what-if's, which names its model where it reports them
        said += dropped_measurements(taken_on, None, pool_specs, spec.decode, "each site's")
    workloads = {}
    for site in spec.pd_sites:
        where = "workload" if site.workload is None else f"pd_sites.{site.name}.workload"
        workloads[site.name], workload_notes = _workload(site.workload or spec.workload, model, source, where)
        notes += workload_notes
    longest = max(int(w.full_input_dist.lengths_tokens[-1]) for w in workloads.values())
    prfaas_sites = []
    for factory in spec.prfaas_sites:
        where = f"prfaas_sites.{factory.name}"
        pool = _fitted(Role.prfaas, factory, model, refs[where], longest, source, base, where, measured)
        notes += pool.notes
        prfaas_sites.append(PrfaasSite(factory.name, pool, factory.count_range))
    pd_sites = []
    for site in spec.pd_sites:
        where, workload = f"pd_sites.{site.name}", workloads[site.name]
        context = _decode_context(spec.decode, model, workload, source)
        need = max(context, int(workload.full_input_dist.lengths_tokens[-1]))
        pool = _fitted(Role.pd, site, model, refs[where], need, source, base, where, measured)
        written = refs[where][0]
        decode, decode_notes = _decode(
            _measured_on(spec.decode, written, site.gpus_per_instance),
            model,
            pool,
            written,
            context,
            source,
            base=base,
            measured=measured,
        )
        notes += [*pool.notes, *decode_notes]
        pd_sites.append(PdSite(site.name, pool, None, workload, decode, site.count_range, None, site.rate_rps))
    links = {(lk.prfaas, lk.pd): link_of(lk) for lk in spec.links}
    used = {s.pool.hardware_name for s in prfaas_sites} | {s.pool.hardware_name for s in pd_sites}
    budgets = _budgets(spec.budgets.gpus, used, source)  # 'H200' is h200, as for one site
    cases = (
        tuple(_case(spec, k, model, pd_sites, prfaas_sites, source, base, refs, measured) for k in range(len(spec.robust.cases)))
        if spec.robust
        else ()
    )
    base_rates = {s.name: s.rate_rps for s in spec.pd_sites}
    day = spec.day
    windows = (
        (Window("steady", 24.0, base_rates),)
        if day is None
        else tuple(Window(w.name or f"w{k}", w.hours, {**base_rates, **w.rates}) for k, w in enumerate(day.windows))
    )
    return Study(
        name=spec.name,
        source=source,
        model=model,
        prfaas_sites=tuple(prfaas_sites),
        pd_sites=tuple(pd_sites),
        links=links,
        windows=windows,
        gpu_budget=budgets,
        usd_per_hour=spec.budgets.usd_per_hour,
        objective=spec.objective.type,
        conversion_s=0.0 if day is None else day.conversion_s,
        max_switches=None if day is None else day.max_switches_per_window,
        optimiser=OptimiserSettings(spec.optimiser.method, spec.optimiser.coarse_thresholds),
        notes=tuple(dict.fromkeys(notes)),
        cases=cases,
        robust=spec.robust.objective if spec.robust else None,
        day=day is not None,
    )


def _case(
    spec: SitesScenario,
    k: int,
    model: ModelProfile,
    sites: list[PdSite],
    factories: list[PrfaasSite],
    source,
    base,
    refs: dict[str, tuple[str, HardwareProfile, bool]],
    measured: bool,
) -> Case:
    """Robust case ``k`` of a multi-site file: each PD site at the case's rate, under its workload
    (a new workload: its decode context and rate too, and every pool must still hold its longest
    request), and the bandwidths of the links it changes. ``refs``, ``measured``: the what-ifs of
    ``resolve_sites``."""
    assert spec.robust is not None  # resolve_sites makes cases only of a file with a robust: section
    case, where = spec.robust.cases[k], f"robust.cases[{k}].workload"
    out, longest = [], 0
    for site in sites:
        demand = case.rates.get(site.name, site.demand_rps)
        if case.workload is None:
            out.append(replace(site, demand_rps=demand))
            continue
        site_spec = next(s for s in spec.pd_sites if s.name == site.name)
        # what the case leaves out is the site's own workload's (else the file's)
        workload = _workload(case_workload(site_spec.workload or spec.workload, case.workload), model, source)[0]
        longest = max(longest, int(workload.full_input_dist.lengths_tokens[-1]))
        context = _decode_context(spec.decode, model, workload, source)
        _fits(model, site.pool, max(context, int(workload.full_input_dist.lengths_tokens[-1])), source, where)
        chips = site_spec.gpus_per_instance
        written = refs[f"pd_sites.{site.name}"][0]
        decode, _ = _decode(
            _measured_on(spec.decode, written, chips), model, site.pool, written, context, source, base=base, measured=measured
        )
        out.append(replace(site, workload=workload, decode=decode, demand_rps=demand))
    if case.workload is not None:
        for factory in factories:
            if factory.instances[1] > 0:
                _fits(model, factory.pool, longest, source, where)
    return Case(case.name, case.weight, tuple(out), {(lk.prfaas, lk.pd): lk.bandwidth_gbps for lk in case.links})
