"""The ranges of a plan's figures (``planner.uncertainty``) in JSON and as lines of its
operating-point section."""

from __future__ import annotations

from ..choices import ObjectiveKind
from ..timing.uncertainty import LEVEL, Band

WHAT = (
    f"{LEVEL:.0%} prediction interval of the instance model's residuals on published measurements (its "
    "coverage checked leave-one-out), an empirical interval, not a guarantee"
)


def band_json(b: Band) -> dict:
    """A band: factors on the predicted speed and the residual rows behind them."""
    return {"low_factor": round(b.low, 6), "high_factor": round(b.high, 6), "pool": b.pool, "rows": b.rows, "method": b.method}


def _r(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def end_json(end) -> dict:
    return {
        "lambda_max_rps": round(end.lambda_max_rps, 6),
        "rate_rps": round(end.rate_rps, 6),
        "usd_per_mtok_output": _r(end.usd_per_mtok_output, 6),
        "usd_per_mtok_blended": _r(end.usd_per_mtok_blended, 6),
        "target_counts": None if end.counts is None else list(end.counts),
        "target_counts_usd_per_mtok_output": _r(end.counts_usd_per_mtok_output, 6),
        "note": end.note,
    }


def plan_uncertainty_json(result) -> dict | None:
    """Each pool's band and the plan at the low and high ends (``planner.uncertainty``)."""
    u = result.uncertainty
    if u is None:
        return None
    tco = result.tco
    return {
        "what": WHAT,
        "common_mode": True,
        "bands": {
            "prfaas_prefill": band_json(u.bands.prfaas),
            "pd_prefill": band_json(u.bands.pd),
            "decode": band_json(u.bands.decode),
        },
        "low": end_json(u.low),
        "high": end_json(u.high),
        "usd_per_mtok_output": {
            "low": _r(u.high.usd_per_mtok_output, 6),
            "central": None if tco is None else _r(tco.usd_per_mtok_output, 6),
            "high": _r(u.low.usd_per_mtok_output, 6),
        },
    }


def _fixed_target(result) -> bool:
    """A min_cost plan for a target rate: its operating rate is that rate at both ends."""
    objective = result.inputs.objective
    return objective.kind == ObjectiveKind.min_cost and objective.target_rate_rps is not None


def plan_range_details(result) -> list[tuple[str, str]]:
    """Lines of the operating-point section: Lambda_max and $/Mtok at the ends of the band."""
    u = result.uncertainty
    if u is None:
        return []
    b = u.bands
    pools = "; ".join(
        f"{name} x{band.low:.2f}..x{band.high:.2f} ({band.pool}{f', {band.rows} rows' if band.rows else ''})"
        for name, band in (("PrfaaS prefill", b.prfaas), ("PD prefill", b.pd), ("decode", b.decode))
    )
    rows = [
        (
            "Λ_max range",
            f"{u.low.lambda_max_rps:.3f} .. {u.high.lambda_max_rps:.3f} req/s (model "
            f"{result.point.lambda_max:.3f}), the counts and threshold fixed, every pool at its low end "
            f"then at its high end together (a common-mode error); {WHAT}",
        ),
        ("band of each rate", pools),
    ]
    tco = result.tco
    if tco is not None and tco.usd_per_mtok_output is not None and u.low.usd_per_mtok_output is not None:
        low = "≥ " if tco.usd_per_hour_is_lower_bound else ""  # a pool's billed power of unknown TDP counted as $0
        rows.append(
            (
                "$/Mtok range",
                f"{low}${u.high.usd_per_mtok_output:,.4f} .. {low}${u.low.usd_per_mtok_output:,.4f} per "
                f"million output tokens (model {low}${tco.usd_per_mtok_output:,.4f}), at the operating "
                f"rate of each end ({u.low.rate_rps:.3f} .. {u.high.rate_rps:.3f} req/s)"
                + (
                    "; the SLO goodput moved with Λ_max, its latency not re-evaluated at either end (an approximation)"
                    if result.goodput_rps is not None and not _fixed_target(result)
                    else ""
                ),
            )
        )
    if u.low.counts is not None:
        usd = u.low.counts_usd_per_mtok_output
        rows.append(
            (
                "target at the low end",
                f"N_prfaas/N_p/N_d {'/'.join(map(str, u.low.counts))} meet the target "
                "if every rate is at its low end" + ("" if usd is None else f" (${usd:,.4f} per million output tokens)"),
            )
        )
    rows += [(f"{name} end", end.note) for name, end in (("low", u.low), ("high", u.high)) if end.note]
    return rows
