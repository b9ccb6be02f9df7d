"""Resolve a scenario file into the planner's view: the only reader of scenario fields
(``tests/test_layers.py`` checks it). Resolution is pure: it loads the model and every pool's
hardware (names, or paths relative to the scenario file), calibrates a pool's hardware on the
model when it lists ``calibration_points``, builds the length distributions (with a prefix
cache, routing uses the uncached length), fixes the decode rate of one decoding instance, and
converts every quantity to SI: bytes/s for links, seconds for RTTs, the squared coefficient of
variation for arrivals. It plans nothing: choosing chips per instance and the cache regime are
planning steps (``planner.chips``).

A one-site scenario resolves to a ``OneSite`` (``one_site``: the model, workload and hardware,
before chips per instance are chosen) and to ``PlanInputs`` (``build_inputs``, ``build_variants``:
one per combination of the pools' chips per instance); a multi-site file to a ``Study``
(``resolve_sites``), every pool, workload and link resolved once. What-ifs that resolve a part
again (a pool on other hardware, another model: ``OneSite.with_hardware``, ``with_model``;
``resolve_sites``' replacements) run the same functions on the new profile; the file is never
copied. ``compare`` plans its options so (``resolved_base``, ``OneSite.with_option``,
``sites_option``).

Its modules: ``pools`` (a pool's hardware, chips per instance, model and precision, fit),
``links`` (a link in SI units and its transport), ``workload`` (length distributions, traces,
the decode context and rate), ``single_site`` (``OneSite``, ``PlanInputs``, robust cases, day
windows, reference checks), ``sites`` (a multi-site file), ``compare`` (a scenario set) and
``options`` (compare's options: what each replaces, read from the file's ``compare`` section);
the last three are imported when first used (a one-site ``plan`` loads none of them).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from .links import link_of
from .pools import _precision_applied, chip_options, moved_note
from .single_site import (
    OneSite,
    WrittenPool,
    build_inputs,
    build_variants,
    check_references,
    day_windows,
    one_site,
    one_site_cases,
    validate_scenario,
)

if TYPE_CHECKING:
    from .compare import resolved_base, sites_as_written, sites_option
    from .sites import resolve_sites

# where used (start-up): the multi-site and compare resolvers, by the name each defines
_LAZY = {"resolve_sites": "sites", "resolved_base": "compare", "sites_option": "compare", "sites_as_written": "compare"}

__all__ = [
    "OneSite",
    "WrittenPool",
    "_precision_applied",
    "build_inputs",
    "build_variants",
    "check_references",
    "chip_options",
    "day_windows",
    "link_of",
    "moved_note",
    "one_site",
    "one_site_cases",
    "resolve_sites",
    "resolved_base",
    "sites_as_written",
    "sites_option",
    "validate_scenario",
]


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
