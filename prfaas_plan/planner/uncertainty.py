"""The instance model's empirical band (``timing.uncertainty``) carried to a plan: Lambda_max,
the operating rate, $ per million tokens and, for a target rate, the counts it needs.

Each pool's rate gets a band by where it comes from: a roofline prefill curve the ``prefill``
band of its engine, a roofline decode rate the ``decode`` band; a measured curve, a curve or a
decode rate calibrated on measured points (their residual error is the calibration's, which
the plan reports), and a decode rate the scenario gives are taken as given (factor 1: their
error is their source's, not the uncalibrated model's the published residuals describe).
With f the factor of each pool at one end (low or high) and the counts and threshold of the
plan fixed, the throughput model is evaluated again on the scaled work:

    p T_long -> p T_long / f_prfaas,  (1 - p) T_short -> (1 - p) T_short / f_pd,  r_d -> r_d f_d
    Lambda_end = min(f_prfaas N_prfaas / (p T_long), B_out / (p S_long), f_pd N_p / ((1 - p) T_short), f_d N_d r_d)

The link bound does not move (bytes are counted, not timed). Every pool is at its low end
together, then at its high end together: a common-mode error, since one instance model (and
often one engine and chip) times them all; an error of opposite sign in two pools would move
Lambda_max less. The threshold is the plan's; re-routing at the low end could recover some of
the loss, so the low end is a little conservative.

The operating rate at each end: the target rate as it is; an SLO goodput or operating_load x
Lambda_max moved with Lambda_max (rate x Lambda_end / Lambda_max; for the goodput an
approximation: the latency curve is not re-evaluated). $ per million tokens (``cost.Tco``) at
each end is that of the scaled pools at that end's rate: the high $/Mtok at the low end. With a
target rate (``min_cost``) the low end also gives the counts the target would need if the model
is optimistic by its band (re-optimised, the budgets held), and their $/Mtok.

An empirical interval from public measurements, not a guarantee.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace

import numpy as np

from ..choices import DecodeSource, ObjectiveKind, PrefillSource
from ..errors import PlanInputError
from ..profiles.registry import speed_figures
from ..study.basis import prefill_source
from ..study.model import PlanInputs
from ..timing.uncertainty import EXACT, Band, band
from .cost import tco_at
from .optimizer import optimise
from .throughput import ThresholdTable, bounds


def engine_of(pool) -> str:
    """The engine name of a pool's instance (``choices.EngineName``)."""
    return str(pool.instance.engine.name)


@dataclass(frozen=True)
class PlanBands:
    """The band of each rate a plan is sized on (``Band``: factors on the predicted speed)."""

    prfaas: Band
    pd: Band
    decode: Band

    def factors(self, end: str) -> tuple[float, float, float]:
        """(f_prfaas, f_pd, f_d) at ``end`` ('low' or 'high')."""
        return tuple(getattr(b, end) for b in (self.prfaas, self.pd, self.decode))


def plan_bands(inputs: PlanInputs) -> PlanBands:
    """Each pool's band by its source (module doc)."""

    def prefill(pool) -> Band:
        source = prefill_source(pool)["source"]
        if source != PrefillSource.roofline:
            return replace(EXACT, pool=f"{source} curve: taken as given")
        return band("prefill", engine_of(pool))

    source = inputs.decode.source
    if source == DecodeSource.roofline:  # modelled, uncalibrated
        decode = band("decode", engine_of(inputs.decode_pool))
    else:  # the scenario's figure or the model profile's measurement
        decode = replace(EXACT, pool=f"decode rate from the {source}: taken as given")
    return PlanBands(prefill(inputs.prfaas), prefill(inputs.pd), decode)


def scaled(inputs: PlanInputs, table: ThresholdTable, factors: tuple[float, float, float]) -> tuple[PlanInputs, ThresholdTable]:
    """The inputs and threshold table with each pool's rate times its factor (module doc)."""
    f_prfaas, f_pd, f_d = factors
    table = replace(table, prfaas_work_s=table.prfaas_work_s / f_prfaas, pd_work_s=table.pd_work_s / f_pd)
    decode = replace(inputs.decode, tokens_per_s_per_instance=inputs.decode.tokens_per_s_per_instance * f_d)
    return replace(inputs, decode=decode), table


@dataclass(frozen=True)
class End:
    """The plan at one end of the band."""

    lambda_max_rps: float
    rate_rps: float  # the operating rate at this end
    usd_per_mtok_output: float | None
    usd_per_mtok_blended: float | None
    counts: tuple[int, int, int] | None = None  # with a target rate, at the low end: the counts it needs
    counts_usd_per_mtok_output: float | None = None  # $/Mtok of those counts at the target
    note: str = ""


@dataclass(frozen=True)
class PlanRange:
    bands: PlanBands
    low: End
    high: End


def end_of(result, table: ThresholdTable, idx: int, factors: tuple[float, float, float], low: bool) -> End:
    """One end of a ``plan.PlanResult`` at threshold index ``idx`` (``low``: the low end): Lambda_max
    of the counts on the scaled rates, the rate (a target rate fixed, else moved with Lambda_max),
    $/Mtok (``cost.tco_at``), and with a target rate, at the low end, the counts it needs."""
    inputs, pt = result.inputs, result.point
    counts, central_lambda, rate_rps = (pt.n_prfaas, pt.n_p, pt.n_d), pt.lambda_max, result.operating_rate_rps
    fixed_rate = inputs.objective.kind == ObjectiveKind.min_cost and inputs.objective.target_rate_rps is not None
    s_inputs, s_table = scaled(inputs, table, factors)
    lam = float(bounds(s_table, idx, *counts, s_inputs).lambda_max)
    rate = rate_rps if fixed_rate else (rate_rps * lam / central_lambda if central_lambda > 0 else 0.0)
    tco = tco_at(s_inputs, s_table, idx, *counts, min(rate, lam))
    need, need_usd, note = None, None, ""
    if fixed_rate and low:
        try:
            sol = optimise(s_inputs, s_table, limits=inputs.limits)
            need = (sol.n_prfaas, sol.n_p, sol.n_d)
            need_usd = tco_at(s_inputs, s_table, sol.threshold_index, *need, rate).usd_per_mtok_output
        except PlanInputError as exc:
            note = f"the target rate cannot be met within the ranges and budgets at this end ({exc.reason})"
        if lam < rate * (1 - 1e-9):
            note = note or f"the plan's counts serve {lam:.3f} req/s at this end, below the target"
    return End(lam, rate, tco.usd_per_mtok_output, tco.usd_per_mtok_blended, need, need_usd, note)


def plan_range(result, table: ThresholdTable, idx: int) -> PlanRange:
    """The plan's range (module doc) from a ``plan.PlanResult``, its threshold table and threshold index."""
    bands = plan_bands(result.inputs)
    return PlanRange(bands, *(end_of(result, table, idx, bands.factors(end), end == "low") for end in ("low", "high")))


def error_key(inputs: PlanInputs, bands: PlanBands) -> tuple:
    """What the model's error depends on: the model, the workload, and each pool's hardware (its
    speed figures, ``registry.speed_figures``: a copy renamed or repriced is the same chip), chips
    per instance, layout, engine and band. Two plans with the same key differ only in counts, the
    link or prices, so one residual moves both alike and cancels in their ratio; a plan of another
    model, workload or layout is not timed by a common error (residuals on one chip and engine
    range widely across models), so its key differs."""
    pools = (inputs.prfaas, inputs.pd, inputs.decode_pool)
    return (inputs.model.name, _workload_digest(inputs.workload)) + tuple(
        (
            hashlib.sha1(speed_figures(pool.instance.hardware).encode()).hexdigest(),
            pool.gpus_per_instance,
            pool.instance.layout.label if pool.instance.layout else None,
            engine_of(pool),
            b.pool,
            round(b.low, 9),
            round(b.high, 9),
        )
        for pool, b in zip(pools, (bands.prfaas, bands.pd, bands.decode))
    )


def _workload_digest(workload) -> str:
    """A digest of the workload's length distributions (tokens and probabilities)."""
    h = hashlib.sha1()
    for dist in (workload.input_dist, workload.full_input_dist, workload.output_dist):
        h.update(np.asarray(dist.lengths_tokens, dtype=float).tobytes())
        h.update(np.asarray(dist.probs, dtype=float).tobytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Verdict:
    """An option against the best: ``distinguishable`` (None: no range to tell), and whether the
    two share the model's error (``error_key``)."""

    distinguishable: bool | None
    shared_error: bool
    text: str


def versus_best(results: list, objective: str) -> list[Verdict | None]:
    """Each ranked result (``compare.OptionResult``, best first) against the best, on what the
    ranking counts: req/s (``capacity_range_rps``), or for ``min_cost`` $ per million output
    tokens (its range from ``planner.uncertainty``). The rule: two options are distinguishable
    when their ranges do not overlap. Options with the same ``error_key`` (hardware, engine and
    band in every pool) share their error, which moves both together and cancels in their
    ratio: they are distinguishable when their model figures differ at all (a difference the
    band cannot explain away), which is more certain than their overlapping ranges suggest.
    None for an option not planned."""

    def figure(r) -> tuple[float | None, tuple[float, float] | None]:
        if objective == ObjectiveKind.min_cost:
            central = None if r.tco is None else r.tco.usd_per_mtok_output
            low, high = r.usd_per_mtok_output_low, r.usd_per_mtok_output_high
            return central, None if None in (central, low, high) else (low, high)
        return r.capacity_rps, r.capacity_range_rps

    def against_best(r, best) -> Verdict:
        (value, span), (best_value, best_span) = figure(r), figure(best)
        shared = bool(r.error_key) and r.error_key == best.error_key
        if shared and value is not None and best_value is not None:
            apart = abs(value - best_value) > 1e-9 * max(abs(value), abs(best_value))
            return Verdict(apart, True, "shared error: " + ("apart as modelled" if apart else "the same"))
        if span is None or best_span is None or span[0] == span[1] or best_span[0] == best_span[1]:
            # a rate measured or calibrated on measured points has no band here: no ground to tell
            return Verdict(None, False, "no range")
        apart = not (span[0] <= best_span[1] and best_span[0] <= span[1])  # the (low, high) ranges do not overlap
        return Verdict(apart, False, "distinguishable" if apart else "not distinguishable")

    best = results[0] if results and results[0].feasible else None

    def verdict(k: int, r) -> Verdict | None:
        if best is None or not r.feasible:
            return None
        return Verdict(None, True, "best") if k == 0 else against_best(r, best)

    return [verdict(k, r) for k, r in enumerate(results)]
