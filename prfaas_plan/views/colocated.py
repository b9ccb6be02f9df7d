"""The co-located baseline in a plan's reports (``planner.colocated``): its row among the
baselines (JSON ``baselines.colocated``, the table and the CSV, with the baselines' fields), what
sets its rate (JSON ``colocated``), its line in the operating-point section and its note."""

from __future__ import annotations

import math

from ..choices import DeploymentName
from ..planner.colocated import COLOCATED
from ..planner.cost import power_unpriced_pools
from ..ranges import MIN_CAPACITY_RPS


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None or not math.isfinite(value) else round(float(value), digits)


def colocated_ratio(result) -> float | None:
    """Lambda_max of the co-located baseline over the homogeneous baseline's; None under an SLO
    (the other ratios divide goodputs there, and co-location has no latency model) or when
    either is missing or serves effectively nothing."""
    colo, homog = result.colocated, result.baselines.get(DeploymentName.homogeneous)
    if colo is None or homog is None or result.goodputs or homog.lambda_max < MIN_CAPACITY_RPS:
        return None
    return colo.lambda_max_rps / homog.lambda_max


def colocated_rows(result) -> dict[str, dict]:
    """``{"colocated": row}`` for the JSON's baselines (empty without the baseline), with the
    baselines' fields (N_p = N_d = N: the same instances prefill and decode; no threshold, no
    egress); what sets its rate is ``colocated_json``."""
    c = result.colocated
    if c is None:
        return {}
    return {
        COLOCATED: {
            "threshold_tokens": None,
            "p": 0.0,
            "n_prfaas": 0,
            "n_p": c.instances,
            "n_d": c.instances,
            "instances": c.instances,  # N_p = N_d = N are the same N instances: not N_p + N_d
            "lambda_max_rps": round(c.lambda_max_rps, 6),
            "goodput_rps": None,
            "binding": c.limited_by,
            "egress_gbps": 0.0,
            "link_utilisation_at_capacity": 0.0,
            "usd_per_hour": _round(c.usd_per_hour, 2),
            "usd_per_hour_is_lower_bound": bool(power_unpriced_pools(result.inputs, 0, c.instances, 0)),
            "ratio_vs_homogeneous": _round(colocated_ratio(result), 6),
        }
    }


def colocated_json(result) -> dict | None:
    """What sets the co-located baseline's rate (JSON ``colocated``; None without it)."""
    c = result.colocated
    if c is None:
        return None
    return {
        "instances": c.instances,
        "gpus": c.gpus,
        "batch": c.batch,
        "batch_max": c.batch_max,
        "decode_step_s": _round(c.decode_step_s, 6),
        "step_s": _round(c.step_s, 6),
        "tpot_ms": _round(c.tpot_ms, 4),
        "tpot_limit_ms": c.tpot_limit_ms,
        "prefill_work_s": round(c.prefill_work_s, 6),
        "prefill_share": round(c.prefill_share, 6),
        "prompt_tokens_per_step": round(c.prompt_tokens_per_step, 1),
        "prefill_only_rps": _round(c.prefill_only_rps, 6),
        "decode_only_rps": round(c.decode_only_rps, 6),
    }


def colocated_details(result) -> list[tuple[str, str]]:
    """The operating-point line of the co-located baseline (none without it)."""
    c = result.colocated
    if c is None:
        return []
    if c.batch == 0:
        return [("co-located", f"{c.instances} x {result.inputs.pd.instance.label}: no batch meets the TPOT limit")]
    limit = "" if c.tpot_limit_ms is None else f" (limit {c.tpot_limit_ms:g} ms)"
    return [
        (
            "co-located",
            f"{c.instances} x {result.inputs.pd.instance.label}, each prefilling and decoding: batch {c.batch} of "
            f"{c.batch_max}, step {1e3 * c.step_s:,.1f} ms = decode {1e3 * c.decode_step_s:,.1f} ms + prompt chunks "
            f"({c.prompt_tokens_per_step:,.0f} tokens a step, {100 * c.prefill_share:.0f}% of the time), TPOT "
            f"{c.tpot_ms:,.1f} ms{limit}; Λ {c.lambda_max_rps:.3f} req/s, below prefill only {c.prefill_only_rps:.3f} "
            f"and decode only {c.decode_only_rps:.3f}",
        )
    ]


NOTE = (
    "co-located: the homogeneous baseline's instances, each prefilling and decoding with chunked prefill "
    "(N_p = N_d = N; Λ_max only: no latency model, so no goodput and no ratio under an SLO)"
)


def colocated_notes(result) -> list[str]:
    return [NOTE] if result.colocated is not None else []
