"""Chips per instance and the cache regime, chosen by the planner (planning steps after the pure
resolution of ``study.resolve``): where a pool offers several counts (a list, or
``auto``: the fewest chips that hold the model and its multiples up to a cap), every
combination is resolved (``inputs.build_variants``) and optimised under the scenario's own
objective (max throughput, or min cost at the target rate; with an SLO, its goodput), and
the best is kept: the most req/s (ties: the lower provisioned $/hour, then fewer chips), or
the lowest $/hour (ties: the most req/s). Combinations whose pools do not hold the model,
or with no plan within the ranges and budgets, are left out; if none is left, the error of
the smallest is raised.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ..choices import Basis, CacheRegime, ObjectiveKind
from ..errors import PlanInputError
from ..profiles.registry import resolve_scenario_file
from ..study.model import PlanInputs
from ..study.resolve import build_variants


def _score(inputs: PlanInputs) -> tuple:
    """A sort key of one combination, lower is better."""
    from ..study.model import decode_model
    from .slo import best_plan
    from .throughput import threshold_table

    sol, good = best_plan(inputs, threshold_table(inputs), decode_model(inputs))
    rate = sol.lambda_max if good is None else good
    cost = math.inf if sol.usd_per_hour is None else sol.usd_per_hour
    chips = sum(pool.gpus_per_instance for pool in inputs.pools)
    if inputs.objective.kind == ObjectiveKind.min_cost:
        return (cost, -rate, chips)
    return (-round(rate, 9), cost, chips)


def _scored(variants: list[PlanInputs]) -> tuple[list, PlanInputError | None]:
    """(``_score``, position, inputs) of each variant with a plan, best first (ties: the earlier),
    and the error of the first without one."""
    scored, first_error = [], None
    for k, inputs in enumerate(variants):
        try:
            scored.append((_score(inputs), k, inputs))
        except PlanInputError as exc:
            first_error = first_error or exc
    return sorted(scored, key=lambda item: (item[0], item[1])), first_error


def choose(scenario, source: str | None = None, basis: Basis = Basis.as_given) -> PlanInputs:
    """The scenario's planning inputs on ``basis`` (``study.basis``), with each pool's chips per
    instance chosen (see the module docstring) and, for cache-aware routing with ``regime: auto``,
    the cache regime; notes record the choices."""
    return choose_among(build_variants(scenario, source, basis=basis), source)


def choose_among(variants: list[PlanInputs], source: str | None = None) -> PlanInputs:
    """``choose`` of resolved ``variants`` (``study.resolve.OneSite.variants``: one per combination
    of chips per instance); errors name ``source``."""
    return _cache_regime(_chips(variants, source))


def _cache_regime(inputs: PlanInputs) -> PlanInputs:
    """With ``cluster_caches.regime: auto``, the regime whose plan is better by the scenario's own
    objective (scarce: each cluster's cache, no cache on the link; plentiful: the best cache anywhere,
    cached KV across the link); the report says which, and what the other gives."""
    caches = inputs.workload.caches
    if caches is None or caches.regime != CacheRegime.auto:
        return inputs
    regimes = (CacheRegime.scarce, CacheRegime.plentiful)
    scored, _ = _scored([inputs.with_cache_regime(regime) for regime in regimes])
    if not scored:
        return inputs
    (_, k, best), others = scored[0], scored[1:]
    regime, other = regimes[k], ""
    if others:
        (value, *_), j, _ = others[0]
        name = regimes[j]
        other = (
            f"; the {name} rule would cost ${value:,.2f}/hour"
            if inputs.objective.kind == ObjectiveKind.min_cost
            else f"; the {name} rule would serve {-value:.3f} req/s"
        )
    return replace(best, notes=best.notes + (f"cache regime: {regime} (chosen by the plan{other})",))


def _chips(variants: list[PlanInputs], source: str | None = None) -> PlanInputs:
    if len(variants) == 1:
        return variants[0]
    scored, first_error = _scored(variants)
    if not scored:
        assert first_error is not None  # every variant (two or more) raised one
        raise first_error.with_source(source) if source else first_error
    best = scored[0][2]
    chosen = "; ".join(
        f"{pool.role} {pool.gpus_per_instance} of {list(pool.chip_options)}" for pool in best.pools if pool.chip_options
    )
    return replace(
        best,
        notes=best.notes
        + (f"chips per instance chosen by the planner ({len(scored)} of {len(variants)} combinations planned): {chosen}",),
    )


def load_inputs(ref: str) -> PlanInputs:
    """A shipped scenario name or a scenario YAML path -> resolved planning inputs, with chips
    per instance chosen where a pool offers several."""
    scenario, path = resolve_scenario_file(ref)
    return choose(scenario, path)
