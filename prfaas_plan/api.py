"""Typed library API (what the CLI calls; usable from a notebook).

>>> from prfaas_plan import api
>>> rows = api.kv_rows("minimax-m2.5", "h200", gpus=8, lengths_tokens=[32768])
>>> round(rows[0].phi_kv_gbps)  # doctest: +SKIP
71
Model and hardware arguments accept a shipped name, a YAML path, or a loaded profile.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from .errors import PlanInputError

from .accounting.kv import KvModel
from .profiles.hardware import HardwareProfile
from .profiles.model import ModelProfile
from .profiles.registry import resolve_hardware, resolve_model
from .timing.decode import DecodeCapacity, decode_capacity
from .timing.instance import Instance
from .timing.memory import require_fit
from .timing.prefill import KvRow, check_lengths, kv_table, prefill_curve


def model_of(ref: str | ModelProfile) -> ModelProfile:
    return ref if isinstance(ref, ModelProfile) else resolve_model(ref)


def hardware_of(ref: str | HardwareProfile) -> HardwareProfile:
    return ref if isinstance(ref, HardwareProfile) else resolve_hardware(ref)


@dataclass(frozen=True)
class KvReport:
    model: ModelProfile
    instance: Instance
    source: str  # 'roofline' or 'measured'
    kv_model: KvModel
    rows: list[KvRow]


def kv_rows(model, hardware, gpus: int = 8, lengths_tokens: list[int] | None = None, source: str = "auto") -> list[KvRow]:
    """S_kv, T_prefill and Phi_kv per length (see ``timing.prefill``)."""
    return kv_report(model, hardware, gpus, lengths_tokens, source).rows


def kv_report(model, hardware, gpus: int = 8, lengths_tokens: list[int] | None = None, source: str = "auto") -> KvReport:
    m, inst = model_of(model), Instance(hardware_of(hardware), gpus)
    lengths = lengths_tokens or [1024, 8192, 32768, 131072]
    check_lengths(m, lengths)
    require_fit(m, inst, max(lengths))
    curve = prefill_curve(m, inst, source)
    return KvReport(m, inst, curve.source, KvModel.of(m), kv_table(curve, m, lengths))


def decode(model, hardware, gpus: int = 8, context_tokens: int = 32768, tpot_ms: float | None = None,
           max_batch: int | None = None, source: str = "auto") -> DecodeCapacity:
    """Decode batch, step time and tokens/s of one instance (see ``timing.decode``)."""
    return decode_capacity(model_of(model), Instance(hardware_of(hardware), gpus), context_tokens,
                           tpot_ms=tpot_ms, max_batch=max_batch, source=source)


def plan(scenario: str, mode: str = "exact", with_marginals: bool = True):
    """Optimise a scenario (shipped name or YAML path); errors name the scenario file.

    Returns a :class:`prfaas_plan.planner.plan.PlanResult`."""
    from .planner.inputs import load_inputs
    from .planner.plan import plan as run_plan

    with scenario_errors(scenario):
        return run_plan(load_inputs(scenario), mode, with_marginals=with_marginals)


@contextmanager
def scenario_errors(scenario: str):
    """Attach the scenario's file to planning errors that name no file."""
    from .profiles.registry import looks_like_path

    try:
        yield
    except PlanInputError as exc:
        raise exc.with_source(scenario) if looks_like_path(scenario) else exc from None


def sweep(scenario: str, over: str, mode: str = "exact", start: float = 1.0, stop: float | None = None,
          points: int | None = None, progress=None) -> list[dict]:
    """Curves around the scenario's plan (see ``planner.sweep``); rows of dicts with units in the keys."""
    import numpy as np

    from .planner import sweep as sw
    from .planner.inputs import load_inputs
    from .planner.optimizer import optimise
    from .planner.throughput import threshold_table

    if over not in sw.SWEEPS:
        raise PlanInputError(f"unknown sweep '{over}' (use {', '.join(sw.SWEEPS)})", field="--over")
    progress = progress or (lambda done, total: None)
    with scenario_errors(scenario):
        if over == "rate":
            from .planner.plan import plan as run_plan

            return sw.sweep_rate(run_plan(load_inputs(scenario), mode, with_marginals=False), points or 40, progress)
        inputs = load_inputs(scenario)
        table = threshold_table(inputs, mode)
        if over == "instances":
            upto = int(stop) if stop is not None else max(inputs.prfaas.count_max, 1) * 2
            return sw.sweep_instances(inputs, table, upto, progress)
        sol = optimise(inputs, table, objective="max_throughput", method=inputs.scenario.optimiser.method)
        if over == "threshold":
            return sw.sweep_threshold(inputs, table, sol, points)
        if over == "np":
            return sw.sweep_np(inputs, table, sol)
        last = stop if stop is not None else inputs.scenario.link.usable_gbps
        if not (np.isfinite(start) and np.isfinite(last)) or last < start or start < 0:
            raise PlanInputError(f"need 0 <= --from <= --to, got {start:g} and {last:g}", field="--from/--to")
        return sw.sweep_bandwidth(inputs, table, sol, np.linspace(start, last, points or 200), progress)


def plot(scenario: str, path: str, mode: str = "exact") -> None:
    """Write the paper's figure 5 for a scenario to ``path`` (.png, .svg or .pdf)."""
    from .plot import figure5
    from .planner.inputs import load_inputs
    from .planner.optimizer import optimise
    from .planner.throughput import threshold_table

    with scenario_errors(scenario):
        inputs = load_inputs(scenario)
        table = threshold_table(inputs, mode)
        sol = optimise(inputs, table, objective="max_throughput", method=inputs.scenario.optimiser.method)
        figure5(inputs, table, sol, path)


DEFAULT_SIM_REQUESTS = 20_000


@dataclass
class SimulationRun:
    """A simulation of one deployment of a scenario's plan, with the closed form beside it."""

    plan: object  # planner.plan.PlanResult
    deployment: object  # planner.deployment.Deployment
    lambda_max: float
    result: object  # simulate.SimResult
    closed_form: object  # planner.latency.LatencyResult at the same rate


def simulate(scenario: str, *, rate_rps: float | None = None, load: float | None = None, requests: int | None = None,
             deployment: str = "prfaas_pd", mode: str = "exact", progress=None, **config) -> SimulationRun:
    """Simulate a scenario's planned deployment (or a baseline) with SimPy.

    Give ``rate_rps`` or ``load`` (a fraction of the deployment's closed-form Lambda_max;
    default 0.8). At or above Lambda_max the number of requests must be given: an overloaded
    queue grows without bound. Other keywords go to :class:`prfaas_plan.simulate.SimConfig`."""
    from .planner.decode_model import decode_model
    from .planner.deployment import deployments_of
    from .planner.inputs import load_inputs
    from .planner.latency import LatencyModel
    from .planner.plan import plan as run_plan
    from .simulate import SimConfig
    from .simulate import simulate as run_sim

    with scenario_errors(scenario):
        inputs = load_inputs(scenario)
        result = run_plan(inputs, mode, with_marginals=False)
        deps = deployments_of(result)
        if deployment not in deps:
            raise PlanInputError(f"unknown deployment '{deployment}' (use {', '.join(deps)})", field="--deployment")
        dep = deps[deployment]
        lam = result.point.lambda_max if deployment == "prfaas_pd" else result.baselines[deployment].lambda_max
        rate = _sim_rate(rate_rps, load, lam)
        if requests is None:
            if rate >= lam:
                raise PlanInputError(
                    f"rate {rate:.3g} req/s is at or above Lambda_max {lam:.3g}: the queues grow without bound, "
                    "so give --requests explicitly", field="--requests")
            requests = DEFAULT_SIM_REQUESTS
        sim_config = SimConfig(rate_rps=rate, requests=requests, **config)
        decode = decode_model(inputs)
        sim = run_sim(inputs, dep, decode, sim_config, progress)
        closed = LatencyModel(inputs, dep, decode).at(rate, sim_config.cv**2 if sim_config.arrivals == "gamma" else 1.0)
        return SimulationRun(result, dep, lam, sim, closed)


def _sim_rate(rate_rps: float | None, load: float | None, lambda_max: float) -> float:
    if rate_rps is not None and load is not None:
        raise PlanInputError("give --rate or --load, not both", field="--rate")
    if rate_rps is not None:
        if not (rate_rps > 0 and rate_rps < float("inf")):
            raise PlanInputError(f"must be a positive number of requests/s, got {rate_rps:g}", field="--rate")
        return rate_rps
    load = 0.8 if load is None else load
    if not (load > 0 and load < float("inf")):
        raise PlanInputError(f"must be a positive fraction of Lambda_max, got {load:g}", field="--load")
    return load * lambda_max


VALIDATION_LOADS = (0.5, 0.8, 0.95, 1.1)


def validate_model(scenario: str, *, requests: int = DEFAULT_SIM_REQUESTS, loads=VALIDATION_LOADS, mode: str = "exact",
                   progress=None, **config) -> list[SimulationRun]:
    """Simulate the plan at fractions of its closed-form Lambda_max (default 50%, 80%, 95%
    and 110%) so that the closed forms can be read beside the simulation."""
    runs = []
    for k, load in enumerate(loads):
        runs.append(simulate(scenario, load=load, requests=requests, mode=mode, **config))
        if progress is not None:
            progress(k + 1, len(loads))
    return runs
