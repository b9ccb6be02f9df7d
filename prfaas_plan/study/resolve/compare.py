"""A scenario set (``prfaas-plan compare``): the scenario resolved once, each option its what-ifs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...errors import PlanInputError
from ...profiles.registry import same_hardware
from ...profiles.scenario import ClusterSpec
from ..model import Study, joined
from .pools import _base
from .single_site import OneSite, one_site
from .sites import resolve_sites

if TYPE_CHECKING:  # compare's options: imported where used (start-up)
    from .options import CompareOption, ScenarioSet


def resolved_base(scenarios: ScenarioSet) -> OneSite | Study | None:
    """The set's scenario resolved as written, once for every option: a ``OneSite``, or a
    multi-site file's ``Study`` (None when it does not resolve: each option then resolves its own
    what-ifs, and says why it cannot)."""
    from ...profiles.sites import SitesScenario  # where used: plan does not load the multi-site schema

    spec = scenarios.scenario
    if not isinstance(spec, SitesScenario):
        return one_site(spec, scenarios.source, scenarios.basis)
    try:
        return resolve_sites(spec, scenarios.source)
    except PlanInputError:
        return None


def sites_option(scenarios: ScenarioSet, option: CompareOption, base: Study | None = None) -> tuple[Study, list[str]]:
    """A multi-site file with an option's what-ifs, and what they replaced in words: the hardware of
    every PrfaaS site (``prfaas``) or every PD site (``pd``) and the model resolved as the file's own
    (``resolve_sites``; ``base``, the file resolved as written, when the option replaces neither),
    every link at the option's bandwidth (``Study.with_links_gbps``)."""
    from ...profiles.sites import SitesScenario

    spec = scenarios.scenario
    assert isinstance(spec, SitesScenario)  # a one-site scenario's options are OneSite.with_option
    if option.pd_decode is not None:
        raise PlanInputError("a multi-site file has no decode-only pools", field="compare.pd_decode")
    said: list[str] = []
    hardware = {kind: ref for kind, ref in (("prfaas_sites", option.prfaas), ("pd_sites", option.pd)) if ref is not None}
    study = base if base is not None and not hardware and option.model is None else None
    study = study or resolve_sites(spec, scenarios.source, hardware, option.model, said)
    return (study if option.link_gbps is None else study.with_links_gbps(option.link_gbps)), said


def sites_as_written(scenarios: ScenarioSet, option: CompareOption) -> dict:
    """The identity of a multi-site file's option as written (``sites_identity``'s columns), the
    option's references in place of those it replaces: for options that could not be planned."""
    from ...profiles.sites import SitesScenario

    spec, folder = scenarios.scenario, _base(scenarios.source)
    assert isinstance(spec, SitesScenario)

    def hardware(site: ClusterSpec, ref: str | None) -> str:
        return ref if ref is not None and not same_hardware(ref, site.hardware, folder) else site.hardware

    gbps = {
        f"{lk.prfaas}-{lk.pd}": float(lk.bandwidth_gbps if option.link_gbps is None else option.link_gbps) for lk in spec.links
    }
    return {
        "scenario": spec.name,
        "model": option.model or spec.model,
        "prfaas_hardware": joined({s.name: hardware(s, option.prfaas) for s in spec.prfaas_sites}),
        "prfaas_gpus_per_instance": joined({s.name: s.gpus_per_instance for s in spec.prfaas_sites}),
        "pd_hardware": joined({s.name: hardware(s, option.pd) for s in spec.pd_sites}),
        "pd_gpus_per_instance": joined({s.name: s.gpus_per_instance for s in spec.pd_sites}),
        "pd_decode_hardware": None,
        "pd_decode_gpus_per_instance": None,
        "link_gbps": joined(gbps),
    }
