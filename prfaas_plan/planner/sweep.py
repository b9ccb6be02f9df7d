"""Sweeps of the throughput model around a plan (vectorised; no solver in the loop).

- ``threshold``: the stage bounds and Lambda_max against t, at the plan's instance counts;
- ``np``: the prefill and decode bounds against N_p (N_d = PD total - N_p), at the plan's t;
- ``bandwidth``: per usable link bandwidth, the best t, p and Lambda_max for the plan's
  deployment: the threshold table a bandwidth-aware router needs;
- ``instances``: Lambda_max against N_prfaas, re-optimising t and the PD split each time;
- ``rate``: throughput-latency curves (closed-form TTFT and TPOT against the arrival rate)
  for PrfaaS-PD and its baselines.
Each returns a list of row dicts (units in the keys). ``progress(done, total)`` is called
as chunks finish, for long sweeps.
"""

from __future__ import annotations

import numpy as np

from ..errors import PlanInputError
from ..ranges import INSTANCES
from ..study.model import PlanInputs
from ..units import bytes_per_s_to_gbps, gbps_to_bytes_per_s
from .executor import Progress, no_progress
from .optimizer import Solution
from .throughput import ThresholdTable, bounds

_CHUNK = 256


def _round(x: float | np.ndarray, digits: int = 6) -> float | None:
    return round(float(x), digits) if np.isfinite(x) else None


def sweep_threshold(inputs: PlanInputs, table: ThresholdTable, sol: Solution, points: int | None = None) -> list[dict]:
    """Bounds against t at the plan's counts; every distinct threshold, or ``points`` of them."""
    idx = np.arange(len(table)) if points is None else np.unique(np.linspace(0, len(table) - 1, points).round().astype(int))
    b = bounds(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    prfaas, lam = b.prfaas, b.lambda_max  # each a whole array: once, not per row
    return [
        {
            "threshold_tokens": float(table.thresholds_tokens[i]),
            "p": _round(table.p[i]),
            "l_long_tokens": _round(table.l_long_tokens[i], 1),
            "l_short_tokens": _round(table.l_short_tokens[i], 1),
            "prfaas_bound_rps": _round(prfaas[k]),
            "link_bound_rps": _round(b.link[k]),
            "pd_prefill_bound_rps": _round(b.pd_prefill[k]),
            "pd_decode_bound_rps": _round(b.pd_decode),
            "lambda_max_rps": _round(lam[k]),
        }
        for k, i in enumerate(idx)
    ]


def sweep_np(inputs: PlanInputs, table: ThresholdTable, sol: Solution) -> list[dict]:
    """Prefill and decode bounds against N_p at the plan's threshold and PD total (with a
    decode-only pool: N_p over the PD-P pool's range, N_d kept at the plan's)."""
    if inputs.limits.separate_decode:
        n_p = np.arange(inputs.limits.pd_min, inputs.limits.pd_max + 1)
        n_d = np.full_like(n_p, sol.n_d)
    else:
        n_p = np.arange(0, sol.n_p + sol.n_d + 1)
        n_d = sol.n_p + sol.n_d - n_p
    b = bounds(table, sol.threshold_index, sol.n_prfaas, n_p, n_d, inputs)
    prefill, lam = np.minimum(b.prfaas, b.pd_prefill), b.lambda_max  # whole arrays: once, not per row
    return [
        {
            "n_p": int(n),
            "n_d": int(n_d[k]),
            "prefill_bound_rps": _round(prefill[k]),
            "decode_bound_rps": _round(b.pd_decode[k]),
            "lambda_max_rps": _round(lam[k]),
        }
        for k, n in enumerate(n_p)
    ]


def sweep_bandwidth(
    inputs: PlanInputs, table: ThresholdTable, sol: Solution, gbps: np.ndarray, progress: Progress = no_progress
) -> list[dict]:
    """Per usable bandwidth (decimal Gbps): the best threshold, its p and Lambda_max for the
    plan's deployment, the threshold table a bandwidth-aware router needs. The bounds of every
    (bandwidth, threshold) pair are evaluated at once, in chunks of bandwidths."""
    gbps = np.asarray(gbps, dtype=float)
    if gbps.size == 0 or np.any(~np.isfinite(gbps)) or np.any(gbps < 0):
        raise PlanInputError("bandwidths must be finite and >= 0", field="gbps")
    idx = np.arange(len(table))
    rows: list[dict] = []
    for start in range(0, len(gbps), _CHUNK):
        chunk = gbps[start : start + _CHUNK]
        link = np.array([gbps_to_bytes_per_s(float(g)) for g in chunk])[:, None]
        b = bounds(table, idx, sol.n_prfaas, sol.n_p, sol.n_d, inputs, link_bytes_per_s=link)
        lam = np.broadcast_to(b.lambda_max, (len(chunk), len(idx)))
        best = np.argmax(lam, axis=1)
        rows += [
            {
                "usable_gbps": float(g),
                "threshold_tokens": float(table.thresholds_tokens[k]),
                "p": _round(table.p[k]),
                "lambda_max_rps": _round(value),
                "egress_gbps": _round(bytes_per_s_to_gbps(value * table.link_work_bytes[k]), 4),
                # above the scenario's usable bandwidth: what the counts would do on a wider link (a what-if)
                "beyond_link": bool(float(g) > inputs.link.usable_gbps * (1 + 1e-12)),
            }
            for g, k, value in zip(chunk, best, lam[np.arange(len(chunk)), best])
        ]
        progress(min(start + _CHUNK, len(gbps)), len(gbps))
    return rows


def sweep_instances(
    inputs: PlanInputs,
    table: ThresholdTable,
    upto: int,
    points: int | None = None,
    progress: Progress = no_progress,
    first: int = 0,
) -> list[dict]:
    """Lambda_max against N_prfaas from ``first`` to ``upto`` (every count, or ``points`` of them), with t and
    the PD split re-optimised each time within the scenario's PD range and budgets, by the
    scenario's optimiser method. A count the budgets exclude gives a row without a plan."""
    from .optimizer import optimise

    INSTANCES.check(upto, "upto")
    if first > upto:
        raise PlanInputError(f"need `first` <= `upto`, got {first} and {upto}", field="first")
    counts = np.arange(first, upto + 1) if points is None else np.unique(np.linspace(first, upto, points).round().astype(int))
    rows = []
    for k, n in enumerate(counts.tolist()):
        row = {"n_prfaas": n, **dict.fromkeys(("threshold_tokens", "p", "n_p", "n_d", "lambda_max_rps", "usd_per_hour"))}
        try:
            sol = optimise(inputs.with_limits(prfaas_min=n, prfaas_max=n), table, objective="max_throughput")
        except PlanInputError:  # no plan with n PrfaaS instances: a row without one
            pass
        else:
            row.update(
                threshold_tokens=sol.threshold_tokens,
                p=_round(table.p[sol.threshold_index]),
                n_p=sol.n_p,
                n_d=sol.n_d,
                lambda_max_rps=_round(sol.lambda_max),
                usd_per_hour=sol.usd_per_hour,
            )
        rows.append(row)
        progress(k + 1, len(counts))
    return rows


def sweep_rate(result, points: int = 40, progress: Progress = no_progress) -> list[dict]:
    """TTFT (mean, P90, P99) and TPOT against the arrival rate for every deployment of a plan,
    on a common grid from 2% to 100% of the largest Lambda_max; an overloaded point is blank."""
    from ..study.model import decode_model
    from .deployment import deployments_of
    from .latency import LatencyModel, SupportArrays

    inputs = result.inputs
    decode = decode_model(inputs)
    support = SupportArrays.of(inputs)
    scv = inputs.latency.arrival_scv
    lams = {"prfaas_pd": result.point.lambda_max, **{n: b.lambda_max for n, b in result.baselines.items()}}
    top = max(lams.values())
    rates = np.linspace(0.02 * top, top, points)
    rows = []
    deps = deployments_of(result)
    for k, (name, dep) in enumerate(deps.items()):
        model = LatencyModel(inputs, dep, decode, support)
        for rate in rates:
            lat = model.at(float(rate), scv) if rate < lams[name] else None
            lat = lat if lat is not None and lat.stable else None  # an overloaded point is blank
            rows.append(
                {
                    "deployment": name,
                    "rate_rps": round(float(rate), 5),
                    "load": round(float(rate) / lams[name], 5) if lams[name] > 0 else None,
                    "ttft_mean_s": None if lat is None else _round(lat.overall_mean_s, 4),
                    "ttft_p90_s": None if lat is None else _round(lat.overall_p90_s, 4),
                    "ttft_p99_s": None if lat is None else _round(lat.overall_p99_s, 4),
                    "tpot_ms": None if lat is None else _round(lat.tpot_ms, 3),
                }
            )
        progress(k + 1, len(deps))
    return rows
