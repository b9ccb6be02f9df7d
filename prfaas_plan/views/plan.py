"""Reports of a plan: deployments, operating point and latency; and sweeps.

One source for every format: ``plan_json`` builds the document, and the table and CSV rows
are read from it by key, so a column can only show the JSON field of its own name
(``tests/test_views.py`` checks every column against the JSON).
"""

from __future__ import annotations

import math
from dataclasses import asdict

import numpy as np

from ..choices import Basis, Bound, DeploymentName, ObjectiveKind, PlanMode, SweepOver
from ..planner.cost import power_unpriced_pools, unpriced_pools
from ..planner.paper import PAPER_TTFT_REDUCTION, is_case_study
from ..report import Column, Report, fmt_opt, signed
from ..study.basis import SOURCE_KEYS, prefill_source, sources
from ..units import bytes_per_s_to_gbps, format_tokens
from .colocated import colocated_details, colocated_json, colocated_notes, colocated_ratio, colocated_rows
from .identity import IDENTITY_CSV, csv_columns, identified
from .timing import layout_chosen
from .trace_cache import trace_cache_rows
from .transport import TRANSPORT_CSV, transport_cells, transport_details, transport_json
from .uncertainty import plan_range_details, plan_uncertainty_json

_LABELS = {
    DeploymentName.prfaas_pd: "PrfaaS-PD",
    DeploymentName.homogeneous: "homogeneous",
    DeploymentName.homogeneous_equal_cost: "homog. equal-$",
    DeploymentName.naive_heterogeneous: "naive heterog.",
    "colocated": "co-located",
    "prfaas_pd @ operating": "PrfaaS-PD @ op.",
}
# the human wording of stages and pools, the same in tables and text (CSV and JSON keep the enum values)
_BOUND_LABELS: dict[str, str] = {
    Bound.prfaas_compute: "PrfaaS",
    Bound.link: "link",
    Bound.pd_prefill: "PD-P",
    Bound.pd_decode: "PD-D",
}
_BOUND_LABELS.update({"decode_batch": "batch", "tpot_limit": "TPOT"})  # what sets the co-located baseline's rate
_POOL_LABELS = {"prfaas": "PrfaaS", "pd": "PD", "pd_prefill": "PD-P", "pd_decode": "PD-D"}  # Role and cost-pool names


def bound_label(value) -> str:
    """A stage of the throughput model as tables and text name it (``pd_prefill`` -> ``PD-P``)."""
    return _BOUND_LABELS.get(value, str(value))


def _pool_label(role) -> str:
    return _POOL_LABELS.get(str(role), str(role))


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _opt(value: float | None, digits: int) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


_CAPACITY_TEXT = {
    "per_request": "one request per instance at a time (N / T_prefill)",
    "saturated": "batched passes of the saturated roofline",
}


_SOURCE_TEXT = {"measured": "measured curve", "calibrated": "roofline (calibrated) curve", "roofline": "roofline curve"}


def sources_view(rows: list[dict], title: str, notes: list[str]) -> Report:
    """Which curve and rate sized each pool, one row per plan or option (``study.basis.sources``)."""

    def pair(source_key: str, capacity_key: str):
        return lambda row: (
            "-" if row.get(source_key) is None else f"{row[source_key]}, {str(row[capacity_key]).replace('_', ' ')}"
        )

    shown = []
    for row in rows:
        shown.append(
            {
                **row,
                "prfaas_prefill": pair("prfaas_prefill_source", "prfaas_prefill_capacity")(row),
                "pd_prefill": pair("pd_prefill_source", "pd_prefill_capacity")(row),
            }
        )
    text = lambda v: "-" if v is None else str(v)  # noqa: E731
    first = (
        [
            c
            for c in (
                Column("rank", "#", text, keep=True),
                Column("pools", "PrfaaS / PD / decode", text, justify="left", keep=True),
            )
            if c.key in rows[0]
        ]
        if rows
        else []
    )
    return Report(
        title=title,
        columns=[
            *first,
            Column("prfaas_prefill", "PrfaaS prefill", text, justify="left"),
            Column("prfaas_layout", "PrfaaS layout", text, justify="left"),
            Column("pd_prefill", "PD prefill", text, justify="left"),
            Column("pd_layout", "PD layout", text, justify="left"),
            Column("decode_source", "decode", text, justify="left"),
            Column("decode_layout", "decode layout", text, justify="left"),
        ],
        rows=shown,
        notes=notes,
    )


SOURCES_NOTE = (
    "prefill: measured (the points, PCHIP), calibrated (the roofline fitted to measured points of that "
    "hardware) or roofline; capacity per request (N / T_prefill) or saturated (batched passes); decode: "
    "scenario (its measured rate), calibrated (the roofline's steps scaled to a measured rate), measured "
    "(the model profile's) or roofline; layout: the one a roofline or calibrated curve is computed on, and "
    "for a measured curve (shape L) the one whose roofline shapes the curve around its points"
)


def _shape_notes(inputs) -> list[str]:
    """For each pool on a measured curve: what its layout (shape L) is for, so that it reads beside
    ``kv``'s layout of the same points (views.timing.kv_layout_note)."""
    out = []
    for pool in (inputs.prfaas, inputs.pd):
        roofline = getattr(pool.curve, "roofline", pool.curve)
        if roofline is pool.curve:
            continue
        lay = roofline.layout.label
        how = layout_chosen(pool.instance.layout is not None, str(roofline.capacity))
        out.append(
            f"{_pool_label(pool.role)} layout shape {lay}: the curve is the measured points on "
            f"{pool.instance.label}; {lay} is the layout whose roofline shapes it around them ({how}), which "
            "says nothing of how they were measured; kv, choosing for one prompt alone, may name another "
            "layout for the same points"
        )
    return out


def tco_json(tco) -> dict:
    """The cost of ownership at one rate ($/hour by component, $/Mtok per output token and
    blended over input + output tokens, facility kW and joules per token)."""
    if tco is None:
        return {}
    return {
        "rate_rps": round(tco.rate_rps, 6),
        "usd_per_hour": _opt(tco.usd_per_hour, 4),
        "usd_per_hour_is_lower_bound": tco.usd_per_hour_is_lower_bound,  # also $/Mtok: power_usd_not_counted
        "power_usd_not_counted": list(tco.power_usd_not_counted),
        "capital_usd_per_hour": _opt(tco.capital_usd_per_hour, 4),
        "power_usd_per_hour": round(tco.power_usd_per_hour, 4),
        "link_usd_per_hour": round(tco.link_usd_per_hour, 4),
        "link_fixed_usd_per_hour": round(tco.link_fixed_usd_per_hour, 4),
        "link_egress_usd_per_hour": round(tco.link_egress_usd_per_hour, 4),
        "usd_per_mtok_output": _opt(tco.usd_per_mtok_output, 6),
        "usd_per_mtok_blended": _opt(tco.usd_per_mtok_blended, 6),
        "power_kw": _opt(tco.power_kw, 4),
        "counted_power_kw": round(tco.counted_power_kw, 4),  # a lower bound when power_not_counted is not empty
        "power_not_counted": list(tco.power_not_counted),
        "joules_per_output_token": _opt(tco.joules_per_output_token, 4),
        "joules_per_token": _opt(tco.joules_per_token, 4),
        "pools": [
            {
                "role": p.role,
                "hardware": p.hardware,
                "instances": p.instances,
                "chips": p.chips,
                "busy": round(p.busy, 6),
                "basis": p.basis,
                "capital_usd_per_hour": _opt(p.capital_usd_per_hour, 4),
                "power_usd_per_hour": round(p.power_usd_per_hour, 4),
                "power_kw": _opt(p.power_kw, 4),
            }
            for p in tco.pools
        ],
    }


def operating_json(result) -> dict:
    """Numbers at the operating rate: the target rate, else the SLO goodput, else
    operating_load x Lambda_max."""
    lat = result.operating_latency
    return {
        "rate_rps": round(result.operating_rate_rps, 6),
        "basis": result.operating_basis,
        "ttft_mean_s": None if lat is None else _opt(lat.overall_mean_s, 4),
        "ttft_p90_s": None if lat is None else _opt(lat.overall_p90_s, 4),
        "tpot_ms": None if lat is None else _opt(lat.tpot_ms, 4),
        "link_utilisation_at_operating_rate": None if lat is None else _opt(lat.link_utilisation, 6),
        "cost": tco_json(result.tco),
    }


def plan_json(result) -> dict:
    """The plan as JSON: identity, operating point, baselines, ratios, marginal values, Jensen
    gap, latency and cost. Rates in requests/s, bandwidth in decimal Gbps, link utilisation
    against the usable bandwidth, $/hour provisioned for deployments (what budgets count) and
    at the operating rate under ``operating``."""
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    link = inputs.link
    doc = {
        "scenario": inputs.name,
        "model": inputs.model.name,
        "mode": result.mode,
        "identity": inputs.identity(),
        "prefill_curves": {str(pool.role): prefill_source(pool) for pool in (inputs.prfaas, inputs.pd)},
        "sources": sources(inputs, Basis.as_given),
        "prfaas_pd": {
            "threshold_tokens": pt.threshold_tokens,
            "p": round(pt.p, 6),
            "l_long_tokens": _opt(pt.l_long_tokens, 1),
            "l_short_tokens": _opt(pt.l_short_tokens, 1),
            "n_prfaas": pt.n_prfaas,
            "n_p": pt.n_p,
            "n_d": pt.n_d,
            "instances": pt.n_prfaas + pt.n_p + pt.n_d,  # what is bought: the instances of every pool
            "gpus": pt.gpus,
            "theta_prfaas_rps": round(st.theta_prfaas, 6) if pt.n_prfaas else None,  # no PrfaaS pool: no bound
            "theta_pdp_rps": round(st.theta_pdp, 6),
            "theta_pdd_rps": round(st.theta_pdd, 6),
            "lambda_max_rps": round(st.lambda_max, 6),
            "lambda_max_low_rps": None if result.uncertainty is None else round(result.uncertainty.low.lambda_max_rps, 6),
            "lambda_max_high_rps": None if result.uncertainty is None else round(result.uncertainty.high.lambda_max_rps, 6),
            "goodput_rps": _goodput(result, DeploymentName.prfaas_pd),
            "binding": st.binding,
            "tight": pt.tight,
            "egress_gbps": round(st.egress_gbps, 4),
            "link_utilisation_at_capacity": _opt(pt.link_utilisation, 6),
            "usd_per_hour": _opt(pt.usd_per_hour, 2),
            "usd_per_hour_is_lower_bound": bool(power_unpriced_pools(inputs, pt.n_prfaas, pt.n_p, pt.n_d)),
            "ratio_vs_homogeneous": _opt(result.ratio(DeploymentName.prfaas_pd), 6),
        },
        "operating": operating_json(result),
        "uncertainty": plan_uncertainty_json(result),
        "baselines": {
            name: {
                "threshold_tokens": 0.0 if name == DeploymentName.naive_heterogeneous else None,
                "p": 1.0 if name == DeploymentName.naive_heterogeneous else 0.0,
                "n_prfaas": b.n_prfaas,
                "n_p": b.n_p,
                "n_d": b.n_d,
                "instances": b.n_prfaas + b.n_p + b.n_d,
                "lambda_max_rps": round(b.lambda_max, 6),
                "goodput_rps": _goodput(result, name),
                "binding": b.binding,
                "egress_gbps": round(b.egress_gbps, 4),
                "link_utilisation_at_capacity": _opt(b.link_utilisation, 6),
                "usd_per_hour": _opt(b.usd_per_hour, 2),
                "usd_per_hour_is_lower_bound": bool(power_unpriced_pools(inputs, b.n_prfaas, b.n_p, b.n_d)),
                "ratio_vs_homogeneous": _opt(result.ratio(name), 6),
            }
            for name, b in result.baselines.items()
        }
        | colocated_rows(result),
        "ratios_vs_homogeneous": {
            name: _opt(result.ratio(name), 6)
            for name in (DeploymentName.prfaas_pd, DeploymentName.naive_heterogeneous)
            if name == DeploymentName.prfaas_pd or name in result.baselines
        }
        | ({"colocated": _opt(colocated_ratio(result), 6)} if result.colocated is not None else {}),
        "colocated": colocated_json(result),
        "link": {
            "bandwidth_gbps": round(link.bandwidth_gbps, 6),
            "usable_gbps": round(link.usable_gbps, 6),
            "usable_fraction": link.usable_fraction,
            "rtt_ms": round(link.rtt_s * 1000, 6),
        },
        "cache": None
        if result.cache is None
        else {k: round(v, 6) if isinstance(v, float) else v for k, v in result.cache.items()},
        "prices": {
            role: None if pool is None else pool.cost.terms
            for role, pool in (("prfaas", inputs.prfaas), ("pd", inputs.pd), ("pd_decode", inputs.pd_decode))
        },
        "marginal_lambda_rps": {k: round(v, 6) for k, v in result.marginal.items()},
        "marginal": {
            k: {
                "lambda_rps": round(m.lambda_rps, 6),
                "fits_budgets": m.fits,
                "price_usd_per_hour": _opt(m.price_usd_per_hour, 4),
                "value_usd_per_hour": _opt(m.value_usd_per_hour, 4),
                "blocked_by": list(m.blocked_by),
                "budget_lambda_rps": _opt(m.budget_lambda_rps, 6),
                "budget_counts": None if m.budget_counts is None else list(m.budget_counts),
                "budget_usd_per_hour": _opt(m.budget_usd_per_hour, 4),
                "plan_usd_per_hour": _opt(m.plan_usd_per_hour, 4),
                "unused_budget_usd_per_hour": _opt(m.unused_budget_usd_per_hour, 4),
            }
            for k, m in result.marginals.items()
        },
        "jensen": {
            "lambda_exact_rps": round(result.lambda_by_mode(PlanMode.exact), 6),
            "lambda_paper_rps": round(result.lambda_by_mode(PlanMode.paper), 6),
            "gap_fraction": round(result.jensen_gap, 6),
            "exact_lambda_at_paper_point_rps": _opt(result.exact_lambda_at_paper_point, 6),
        },
        "latency": latency_json(result),
        "decode": {
            "tokens_per_s_per_instance": round(inputs.decode.tokens_per_s_per_instance, 3),
            "source": inputs.decode.source,
            "batch": inputs.decode.batch,  # a rate the scenario gives: the running requests it holds at (TPOT limit)
            "context_tokens": inputs.decode.context_tokens,
            "output_mean_tokens": inputs.output_mean_tokens,
        },
        "notes": result.notes,
    }
    if link.transport is not None:  # the TCP transport's figures (``views.transport``), per deployment
        doc["link"]["transport"] = transport_json(link, pt.n_prfaas)
        doc["prfaas_pd"].update(transport_cells(link, pt.n_prfaas))
        for row in doc["baselines"].values():  # the co-located row too (no PrfaaS: blank cells)
            row.update(transport_cells(link, row["n_prfaas"]))
    return doc


# operating-point columns of the plan's CSV (the PrfaaS-PD row; blank for the baselines)
OPERATING_CSV = (
    "operating_rate_rps",
    "ttft_p90_s",
    "link_utilisation_at_operating_rate",
    "usd_per_hour_operating",
    "usd_per_mtok_output",
    "usd_per_mtok_blended",
    "power_kw",
    "joules_per_output_token",
    "link_operating_usd_per_hour",
)


def operating_columns(doc: dict) -> dict:
    """The flat operating-point cells of a plan document (``OPERATING_CSV``)."""
    op, cost = doc["operating"], doc["operating"]["cost"]
    return {
        "operating_rate_rps": op["rate_rps"],
        "ttft_p90_s": op["ttft_p90_s"],
        "link_utilisation_at_operating_rate": op["link_utilisation_at_operating_rate"],
        "usd_per_hour_operating": cost.get("usd_per_hour"),
        "usd_per_mtok_output": cost.get("usd_per_mtok_output"),
        "usd_per_mtok_blended": cost.get("usd_per_mtok_blended"),
        "power_kw": cost.get("power_kw"),
        "joules_per_output_token": cost.get("joules_per_output_token"),
        "link_operating_usd_per_hour": cost.get("link_usd_per_hour"),  # committed + metered egress at the rate
    }


def _goodput(result, name: str) -> float | None:
    """A deployment's goodput under the plan's SLO (None without one)."""
    value = result.goodputs.get(name)
    return None if value is None else round(float(value), 6)


def under_slo_ratio(label: str) -> str:
    """What a ratio to the homogeneous baseline divides under an SLO (``label``: the ratio's name)."""
    return (
        f"{label}: goodput under the SLO over the homogeneous baseline's (what the plan maximises; each "
        "deployment's goodput from its own closed-form latency, as the plan's)"
    )


def vs_homogeneous_note(result) -> str:
    """What the 'vs homog' ratios divide."""
    if result.goodputs:
        text = under_slo_ratio("vs homog")
        if result.ratio(DeploymentName.prfaas_pd) is None:
            text += "; the homogeneous baseline meets the SLO at no rate, so there is no ratio"
        return text
    return "vs homog: Λ_max over the homogeneous baseline's"


def _rows(doc: dict) -> list[dict]:
    """One row per deployment, read from the JSON document (baselines have no Θ and no
    operating point)."""
    ident = {**doc["identity"], **doc["sources"]}
    rows = [{**ident, "deployment": DeploymentName.prfaas_pd, **doc["prfaas_pd"], **operating_columns(doc)}]
    blank = dict.fromkeys(OPERATING_CSV)
    for name, b in doc["baselines"].items():
        rows.append(
            {**ident, "deployment": name, "theta_prfaas_rps": None, "theta_pdp_rps": None, "theta_pdd_rps": None, **blank, **b}
        )
    for row in rows:  # the $/h cell: '≥ x' where billed power of unknown TDP is counted as $0
        row["usd_h"] = (
            "-"
            if row["usd_per_hour"] is None
            else ("≥ " if row["usd_per_hour_is_lower_bound"] else "") + f"{row['usd_per_hour']:,.0f}"
        )
    return rows


def plan_view(result) -> Report:
    """Deployments as rows (table and CSV), the operating point and diagnostics as sections."""
    doc = plan_json(result)
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    num = fmt_opt
    rows = _rows(doc)  # no $/h column when no deployment has a price
    columns = [
        Column("deployment", "deployment", _label, justify="left", min_width=14, keep=True),
        Column("n_prfaas", "N_prfaas", num(0)),
        Column("n_p", "N_p", num(0)),
        Column("n_d", "N_d", num(0)),
        Column("theta_prfaas_rps", "Θ_prfaas", num(2)),
        Column("theta_pdp_rps", "Θ_pdp", num(2)),
        Column("theta_pdd_rps", "Θ_pdd", num(2)),
        Column("lambda_max_rps", "Λ_max", num(2)),
        *([Column("goodput_rps", "goodput", num(2))] if result.goodputs else []),
        Column("binding", "bound by", bound_label, justify="left"),
        *([Column("usd_h", "$/h", justify="right")] if any(r["usd_per_hour"] is not None for r in rows) else []),
        Column("ratio_vs_homogeneous", "vs homog", lambda v: "-" if v is None else f"{v:.2f}x"),
    ]
    csv_columns = [
        Column(key, key)
        for key in (
            *IDENTITY_CSV,
            "deployment",
            "threshold_tokens",
            "p",
            "n_prfaas",
            "n_p",
            "n_d",
            "instances",
            "theta_prfaas_rps",
            "theta_pdp_rps",
            "theta_pdd_rps",
            "lambda_max_rps",
            "goodput_rps",
            "binding",
            "egress_gbps",
            "link_utilisation_at_capacity",
            "usd_per_hour",
            "usd_per_hour_is_lower_bound",
            "ratio_vs_homogeneous",
            *OPERATING_CSV,
            *SOURCE_KEYS,
            *(TRANSPORT_CSV if inputs.link.transport is not None else ()),
        )
    ]
    link = inputs.link
    details = [
        (
            "threshold t",
            f"{pt.threshold_tokens:,.0f} tokens ({format_tokens(pt.threshold_tokens)}, K = 1,024)"
            + (": nothing offloaded (no input exceeds it)" if pt.p <= 0 else ""),
        ),
        ("offloaded share p", f"{pt.p:.3f}"),
        ("l_long / l_short", f"{_tokens(pt.l_long_tokens)} / {_tokens(pt.l_short_tokens)} tokens"),
        *_output_by_class(inputs, pt.threshold_tokens),
        (
            "instances",
            f"N_prfaas {pt.n_prfaas} x {inputs.prfaas.instance.label}, "
            + (
                f"N_p {pt.n_p} x {inputs.pd.instance.label} (PD-P), N_d {pt.n_d} x "
                f"{inputs.pd_decode.instance.label} (decode-only pool)"
                if inputs.pd_decode is not None
                else f"N_p {pt.n_p} + N_d {pt.n_d} x {inputs.pd.instance.label}"
            ),
        ),
        ("GPUs", ", ".join(f"{n} {k}" for k, n in pt.gpus.items()) or "-"),
        (
            "Λ_max",
            f"{st.lambda_max:.3f} req/s, bound by {bound_label(st.binding)}; tight: {', '.join(map(bound_label, pt.tight))}",
        ),
        (
            "egress",
            f"{st.egress_gbps:.2f} Gbps = {_pct(pt.link_utilisation)} of the usable {link.usable_gbps:g} Gbps "
            f"(link {link.bandwidth_gbps:g} Gbps x usable fraction {link.usable_fraction:g})"
            + _carried_share(link, pt.n_prfaas, st.egress_gbps),
        ),
        *transport_details(link, pt.n_prfaas),
        (
            "provisioned cost",
            _no_price(result)
            if pt.usd_per_hour is None
            else f"{_usd_low(pt.usd_per_hour, doc['prfaas_pd']['usd_per_hour_is_lower_bound'])}/hour (capital or rental + "
            "power at full load + committed link: what budgets and min_cost count)"
            + _power_unpriced_text(power_unpriced_pools(inputs, pt.n_prfaas, pt.n_p, pt.n_d)),
        ),
        *price_terms(inputs),
        *colocated_details(result),
        *plan_range_details(result),
        *_operating_details(result),
        *_cache_details(result),
        (
            "decode",
            f"{inputs.decode.tokens_per_s_per_instance:,.0f} tokens/s per PD-D instance "
            f"({inputs.decode.source}) at {inputs.decode.context_tokens:,} tokens of context; "
            f"mean output {inputs.output_mean_tokens:,.0f} tokens",
        ),
    ]
    for pool in (inputs.prfaas, inputs.pd):
        basis = prefill_source(pool)
        details.append(
            (
                f"{_pool_label(pool.role)} prefill",
                f"{_SOURCE_TEXT[basis['source']]} on {pool.instance.label} "
                f"({basis['layout']}); capacity {basis['capacity'].replace('_', ' ')}: " + _CAPACITY_TEXT[basis['capacity']],
            )
        )
    for pool in (inputs.prfaas, inputs.pd):
        cal = pool.calibration
        if cal is not None:
            fitted = ", ".join(f"{k} {v:.3g}" for k, v in cal.fitted.items())
            details.append(
                (
                    f"{_pool_label(pool.role)} calibration",
                    f"{pool.hardware_name} fitted on {len(cal.points)} points "
                    f"({fitted}); max error {100 * cal.max_abs_error:.2f}%",
                )
            )
    details += _marginal_details(result)
    exact, paper = result.lambda_by_mode(PlanMode.exact), result.lambda_by_mode(PlanMode.paper)
    if np.isfinite(paper):
        details.append(
            (
                "Jensen gap",
                f"of this plan's counts ({pt.n_prfaas}/{pt.n_p}/{pt.n_d}), each mode at its best "
                f"threshold: exact {exact:.3f} vs paper {paper:.3f} req/s: the paper's mean-length "
                f"evaluation overstates Λ_max by {100 * result.jensen_gap:.1f}% (T_prefill is "
                "convex)",
            )
        )
    section = Report(
        title="Operating point",
        columns=[Column("item", "item", keep=True), Column("value", "value")],
        rows=[{"item": k, "value": v} for k, v in details],
    )
    pools = " / ".join(p.hardware_name for p in inputs.pools)
    sources_table = sources_view(
        [{**doc["sources"], "pools": pools}],
        "Sources (basis as-given: the scenario's measurements where it has them)",
        [SOURCES_NOTE, *_shape_notes(inputs)],
    )
    return Report(
        title=f"PrfaaS plan: {inputs.name} ({result.mode} mode; rates in req/s)",
        columns=columns,
        rows=rows,
        csv_columns=csv_columns,
        meta={"scenario": inputs.name, "model": inputs.model.name, "mode": result.mode},
        notes=[vs_homogeneous_note(result), *colocated_notes(result), *result.notes],
        json_doc=doc,
        sections=[section, sources_table, latency_view(result, doc["latency"])],
    )


_MARGINAL_LABELS = {
    "per_gbps": "+1 usable Gbps",
    "per_prfaas_instance": "+1 PrfaaS instance",
    "per_pd_instance": "+1 PD instance",
    "per_decode_instance": "+1 decode instance",
}


def _usd(value: float | None, digits: int = 2) -> str:
    """'$1,234.50', '-$70.71' for a negative amount, '-' for none."""
    if value is None:
        return "-"
    text = f"${abs(value):,.{digits}f}"
    return f"-{text}" if value < 0 and text.strip("$0.,") else text


def _usd_low(value: float | None, lower_bound: bool, digits: int = 2) -> str:
    """'$x', or '≥ $x' when the figure counts a pool's billed power of unknown TDP as $0."""
    return ("≥ " if lower_bound and value is not None else "") + _usd(value, digits)


def _power_unpriced_text(hardware) -> str:
    return f"; a lower bound: the power of {', '.join(hardware)} is billed but not counted (no tdp_w)" if hardware else ""


def power_text(tco) -> str:
    """The plan's facility kW, or its known part marked as a lower bound ('≥ 99.6 kW at the meter,
    rubin-cpx not counted') when a pool's hardware has no TDP."""
    if tco.power_kw is not None:
        return f"{tco.power_kw:,.1f} kW at the meter"
    return f"≥ {tco.counted_power_kw:,.1f} kW at the meter, {', '.join(tco.power_not_counted)} not counted"


def _operating_details(result) -> list[tuple[str, str]]:
    """The operating rate, latency, link and cost there."""
    lat, tco = result.operating_latency, result.tco
    rows = [("operating rate", f"{result.operating_rate_rps:.3f} req/s ({result.operating_basis})")]
    if lat is not None:
        rows.append(
            (
                "at that rate",
                f"TTFT mean {lat.overall_mean_s:.2f} s, P90 {lat.overall_p90_s:.2f} s; TPOT "
                f"{lat.tpot_ms:.1f} ms; link {_pct(lat.link_utilisation)} of usable",
            )
        )
    if tco is not None:
        parts = ", ".join(
            f"{_pool_label(p.role)} {p.chips} {p.hardware} busy {100 * p.busy:.0f}%"
            + (": power not known" if p.power_kw is None else "")
            for p in tco.pools
            if p.instances
        )
        per_out = tco.joules_per_output_token
        power = (
            "power",
            f"{power_text(tco)} ({parts}); "
            + (
                "J per token not known"
                if tco.power_kw is None
                else "-"
                if per_out is None
                else f"{per_out:,.1f} J per output token, {tco.joules_per_token:,.2f} J per token"
            ),
        )
        if tco.usd_per_hour is None:  # no price: no $ lines (the provisioned cost line says why)
            return [*rows, power]
        low, uncounted = tco.usd_per_hour_is_lower_bound, ", ".join(tco.power_usd_not_counted)
        rows.append(
            (
                "cost at that rate",
                f"{_usd_low(tco.usd_per_hour, low)}/hour = capital {_usd(tco.capital_usd_per_hour)} + power "
                f"{_usd_low(tco.power_usd_per_hour, low)}{f' ({uncounted} not counted)' if low else ''} + link "
                f"{_usd(tco.link_usd_per_hour)} (committed {_usd(tco.link_fixed_usd_per_hour)}, egress "
                f"{_usd(tco.link_egress_usd_per_hour)})",
            )
        )
        rows.append(
            (
                "$ per million tokens",
                f"{_usd_low(tco.usd_per_mtok_output, low, 4)} per million output "
                f"tokens; {_usd_low(tco.usd_per_mtok_blended, low, 4)} per million "
                "tokens blended over input (the full prompt) and output",
            )
        )
        rows.append(power)
    return rows


def price_terms(inputs) -> list[tuple[str, str]]:
    """A row per pool: its price basis (``ChipCost.terms``), rental or purchase, each default named."""
    pools = [("PrfaaS", inputs.prfaas), ("PD-P" if inputs.pd_decode is not None else "PD", inputs.pd)]
    if inputs.pd_decode is not None:
        pools.append(("PD-D", inputs.pd_decode))
    return [(f"price {role}", f"{pool.hardware_name}: {pool.cost.terms}") for role, pool in pools]


def _no_price(result) -> str:
    pt = result.point
    return (
        "not known: no price for "
        + ", ".join(unpriced_pools(result.inputs, pt.n_prfaas, pt.n_p, pt.n_d))
        + " (price_usd_per_gpu_hour in the hardware profile, or the pool's cost)"
    )


def _cache_details(result) -> list[tuple[str, str]]:
    c = result.cache
    if c is None:
        return []
    lam = result.point.lambda_max
    gain = lam / c["lambda_without_caches_rps"] - 1 if c["lambda_without_caches_rps"] > 0 else float("nan")
    rule = (
        "each cluster's own cache decides (route on the PD-uncached length)"
        if c["regime"] == "scarce"
        else "the best cache anywhere counts; cached KV crosses the link"
    )
    return [
        (
            "cache-aware routing",
            f"{c['regime']} regime: {rule}; mean hit PD {100 * c['mean_hit_pd']:.0f}%, PrfaaS {100 * c['mean_hit_prfaas']:.0f}%",
        ),
        (
            "what the caches save",
            f"Λ_max {lam:.3f} req/s against {c['lambda_without_caches_rps']:.3f} without "
            f"caches, same counts ({signed(100 * gain, 1)}%); cached KV moved to PD "
            f"{c['cache_egress_gbps']:.2f} Gbps at Λ_max",
        ),
        *trace_cache_rows(c, result.point.threshold_tokens, result.point.stages.egress_gbps),
    ]


def _marginal_details(result) -> list[tuple[str, str]]:
    """Each marginal value: the unit's own gain with the budgets held (what it is worth against its
    price) and, with budgets, what the budgets raised by its price buy instead (and as which counts)."""
    rows = []
    pt, anchor = result.point, result.marginal_anchor
    shown = (
        anchor == (pt.n_prfaas, pt.n_p, pt.n_d)
        and abs(pt.lambda_max - result.max_throughput_lambda) <= 1e-9 * result.max_throughput_lambda
    )
    for what, m in result.marginals.items():
        worth = "" if m.value_usd_per_hour is None else f", worth {_usd(m.value_usd_per_hour)}/hour"
        if m.budget_lambda_rps is None and m.fits:  # no budgets: the unit's gain is all there is
            text = f"{signed(m.lambda_rps, 4)} req/s{worth}"
            if m.price_usd_per_hour is not None:
                text += f" against a price of {_usd(m.price_usd_per_hour)}/hour"
        else:
            text = "" if m.price_usd_per_hour is None else f"price {_usd(m.price_usd_per_hour)}/hour; "
            text += (
                f"own gain with the budgets held {signed(m.lambda_rps, 4)} req/s{worth}"
                if m.fits
                else "own gain with the budgets held: none, they do not allow it"
            )
            if m.blocked_by:
                gives_way = "; with it other instances give way" if m.fits else ""
                text += f" (the plan plus it breaks {', '.join(m.blocked_by)}{gives_way})"
            if m.budget_lambda_rps is not None:
                text += "; " + _relaxed_text(m, anchor, "this plan" if shown else "the max-throughput plan")
        rows.append((f"marginal {_MARGINAL_LABELS.get(what, what)}", text))
    if rows:
        of = (
            ""
            if shown
            else (
                f"of the max-throughput plan (N_f/N_p/N_d {'/'.join(map(str, anchor))}, Λ_max "
                f"{result.max_throughput_lambda:.3f} req/s), not of the plan shown; "
            )
        )
        budgeted = any(m.budget_lambda_rps is not None for m in result.marginals.values())
        rows.append(
            (
                "marginal values",
                f"{of}own gain = max-throughput Λ_max re-optimised (threshold and the other "
                "counts) with one more unit"
                + (
                    " and the budgets held; the budgets raised by its price = re-optimised with the budgets raised "
                    "by the unit's price and chips, the unit not required: the plan it reaches, at its provisioned "
                    "$/hour, which may also spend budget the plan left unused"
                    if budgeted
                    else ""
                )
                + "; worth = own gain x the max-throughput plan's provisioned $/hour per req/s",
            )
        )
    return rows


def _relaxed_text(m, anchor, plan: str) -> str:
    """What the budgets raised by a unit's price buy: the plan they allow (counts, provisioned
    $/hour and its change against ``plan``), saying when it also spends budget the plan left
    unused (its cost rises by more than the unit's price), then the Lambda gain."""
    counts = "/".join(map(str, m.budget_counts))
    gain = f"{signed(m.budget_lambda_rps, 4)} req/s"
    if m.budget_counts == anchor:
        return f"the budgets raised by its price allow no other plan (N_f/N_p/N_d {counts} again): {gain}"
    text = f"the budgets raised by its price allow another plan, N_f/N_p/N_d {counts}"
    if m.budget_usd_per_hour is None or m.plan_usd_per_hour is None:
        return f"{text}: {gain}"
    extra = m.budget_usd_per_hour - m.plan_usd_per_hour
    sign = "-" if _usd(extra).startswith("-") else "+"  # an extra that rounds to $0.00 is +$0.00
    text += f" at {_usd(m.budget_usd_per_hour)}/hour ({sign}{_usd(abs(extra))}/hour over {plan}"
    price = m.price_usd_per_hour or 0.0
    if m.unused_budget_usd_per_hour is not None and extra > price + 0.005:
        text += (
            f": {_usd(extra - price)}/hour more than its price, from the "
            f"{_usd(m.unused_budget_usd_per_hour)}/hour of the budget {plan} left unused"
        )
    return f"{text}): {gain}"


def _carried_share(link, transfers: int, egress_gbps: float) -> str:
    """Where the transport binds: the egress as a share of what the transfers in flight carry
    (the link's utilisation against its bandwidth then understates how busy it is)."""
    if not transfers or not link.transport_binds(transfers):
        return ""
    carried_gbps = bytes_per_s_to_gbps(float(link.carried_bytes_per_s(transfers)))
    share = _pct(egress_gbps / carried_gbps)
    return f"; {share} of the {carried_gbps:.2f} Gbps its {transfers} transfers in flight carry (the transport's cap)"


def _pct(fraction: float) -> str:
    return "n/a" if not np.isfinite(fraction) else f"{100 * fraction:.1f}%"


def _lat_row(name: str, lat) -> dict:
    num = lambda v: _opt(v, 4)  # noqa: E731
    return {
        "deployment": name,
        "rate_rps": round(lat.rate_rps, 4),
        "ttft_mean_s": num(lat.overall_mean_s),
        "ttft_p90_s": num(lat.overall_p90_s),
        "ttft_p99_s": num(lat.overall_p99_s),
        "local_mean_s": num(lat.local.mean_s),
        "remote_mean_s": num(lat.remote.mean_s),
        "tpot_ms": num(lat.tpot_ms),
        "link_utilisation_at_rate": num(lat.link_utilisation),
        "stable": lat.stable,
    }


def ttft_reduction(result) -> dict[str, float | None]:
    """1 - PrfaaS-PD / homogeneous TTFT (mean and P90) at the common rate (None if either is left out)."""
    a = result.common_latency.get(DeploymentName.prfaas_pd)
    b = result.common_latency.get(DeploymentName.homogeneous)
    if a is None or b is None:
        return {"mean": None, "p90": None}

    def ratio(x: float, y: float) -> float | None:
        return 1 - x / y if np.isfinite(x) and np.isfinite(y) and y > 0 else None

    return {"mean": ratio(a.overall_mean_s, b.overall_mean_s), "p90": ratio(a.overall_p90_s, b.overall_p90_s)}


def latency_json(result) -> dict:
    red = ttft_reduction(result)
    slo = result.inputs.slo
    return {
        "operating": _lat_row(DeploymentName.prfaas_pd, result.operating_latency),
        "operating_rate_rps": round(result.operating_rate_rps, 6),
        "goodput_rps": result.goodput_rps,
        "slo": None if slo is None else asdict(slo),
        "common_rate_rps": round(result.common_rate_rps, 4),
        "at_common_rate": {n: _lat_row(n, lat) for n, lat in result.common_latency.items()},
        "ttft_reduction_vs_homogeneous": {k: None if v is None else round(v, 4) for k, v in red.items()},
        # the paper's figures only beside the paper's own case study (``planner.paper``)
        "paper_ttft_reduction_vs_homogeneous": PAPER_TTFT_REDUCTION if is_case_study(result.inputs) else None,
    }


def _reduction_pct(reduction: float | None) -> str:
    """A reduction (0.5: halved) as the change it is, '-50%'; one that rounds to nothing '0%'
    (no sign); 'n/a' when unknown."""
    if reduction is None or not math.isfinite(reduction):
        return "n/a"
    return f"{signed(-100 * reduction, 0)}%"


def latency_view(result, doc: dict | None = None) -> Report:
    """TTFT and TPOT of every deployment at one common rate, and of the plan at its operating rate."""
    doc = doc or latency_json(result)
    rows = [{**doc["operating"], "deployment": "prfaas_pd @ operating"}, *doc["at_common_rate"].values()]
    red, paper = doc["ttft_reduction_vs_homogeneous"], doc["paper_ttft_reduction_vs_homogeneous"]
    sec = fmt_opt(2)
    equal_cost = result.common_latency.get(DeploymentName.homogeneous_equal_cost)
    notes = [
        f"common rate {result.common_rate_rps:.3f} req/s = {result.inputs.latency.operating_load:g} x the "
        f"lowest Λ_max of PrfaaS-PD, homogeneous and naive; operating rate {result.operating_rate_rps:.3f} req/s "
        f"({result.operating_basis})"
        + (
            "; homog. equal-$ cannot carry that rate (its Λ_max is below it): '-' in its row"
            if equal_cost is not None and not equal_cost.stable
            else ""
        ),
        f"PrfaaS-PD vs homogeneous TTFT: mean {_reduction_pct(red['mean'])}, P90 {_reduction_pct(red['p90'])}"
        + (
            ""
            if paper is None
            else f" (paper's case study: mean {_reduction_pct(paper['mean'])}, P90 {_reduction_pct(paper['p90'])}, "
            "at an unstated load)"
        ),
        "closed form: Erlang C with the Allen-Cunneen correction per prefill path, pipelined KV transfer on a "
        "processor-sharing link; TPOT from the decode batch at that rate",
    ]
    return Report(
        title="Latency (closed form)",
        columns=[
            Column("deployment", "deployment", _label, justify="left", min_width=15, keep=True),
            Column("rate_rps", "rate req/s", sec),
            Column("ttft_mean_s", "TTFT mean s", sec),
            Column("ttft_p90_s", "P90 s", sec),
            Column("ttft_p99_s", "P99 s", sec),
            Column("local_mean_s", "local s", sec),
            Column("remote_mean_s", "remote s", sec),
            Column("tpot_ms", "TPOT ms", sec),
        ],
        rows=rows,
        notes=notes,
    )


def _auto(value) -> str:
    """A sweep cell: blank for None, integers with separators, floats to 4 significant digits."""
    if value is None:
        return "-"
    if isinstance(value, float):
        if not np.isfinite(value):
            return "-"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


# the columns that name a sweep's row (what is varied), repeated in every part of a split table
_SWEPT: dict[str, tuple[str, ...]] = {
    SweepOver.threshold: ("threshold_tokens",),
    SweepOver.np: ("n_p", "n_d"),
    SweepOver.bandwidth: ("usable_gbps",),
    SweepOver.instances: ("n_prfaas",),
    SweepOver.rate: ("deployment", "rate_rps"),
}


def sweep_view(rows: list[dict], over: str, inputs) -> Report:
    """Rows of a sweep (keys carry units); the table rounds, CSV and JSON keep the values and
    start with the scenario's identity (``views.identity``)."""
    named = _SWEPT.get(str(over), ())
    columns = [
        Column(key, key, _what_if, justify="left")
        if key == "beyond_link"
        else Column(key, key, _auto, justify="right", keep=key in named)
        for key in (rows[0] if rows else {})
    ]
    notes = [_what_if_note(inputs)] if any(r.get("beyond_link") for r in rows) else []
    rows = identified(inputs.identity(), rows)
    return Report(
        title=f"Sweep over {over}: {inputs.name}", columns=columns, rows=rows, csv_columns=csv_columns(rows), notes=notes
    )


def _what_if(value) -> str:
    return "what-if" if value else "-"


def _what_if_note(inputs) -> str:
    return (
        f"rows marked what-if are above the link's usable {inputs.link.usable_gbps:g} Gbps: what these counts "
        "would do on a wider link, not bandwidth the provisioned link gives"
    )


def route_table_view(table) -> Report:
    """The routing table (one row per available bandwidth) and the counts it is for."""
    inputs, pt = table.inputs, table.point
    counts = {"n_prfaas": pt.n_prfaas, "n_p": pt.n_p, "n_d": pt.n_d}
    rows = identified(
        {**inputs.identity(), **counts},
        [
            {
                "usable_gbps": r.usable_gbps,
                "threshold_tokens": r.threshold_tokens,
                "p": round(r.p, 6),
                "lambda_max_rps": round(r.lambda_max_rps, 6),
                "egress_gbps": round(r.egress_gbps, 4),
                "binding": str(r.binding),
                "planned": r.planned,
                "beyond_link": r.beyond_link,
                "cache_regime": r.cache_regime,
            }
            for r in table.rows
        ],
    )
    meta = {"scenario": inputs.name, "model": inputs.model.name, **counts}  # the rows carry the whole identity
    return Report(
        title=f"Routing table: {inputs.name} (offload a request when its uncached input exceeds threshold_tokens)",
        columns=[
            Column("usable_gbps", "usable Gbps", _auto, keep=True),
            Column("threshold_tokens", "threshold (tokens)", _auto),
            Column("p", "offloaded p", _auto),
            Column("lambda_max_rps", "Λ_max req/s", _auto),
            Column("egress_gbps", "egress Gbps", _auto),
            Column("binding", "bound by", bound_label, justify="left"),
            Column("planned", "planned", justify="left"),
            Column("beyond_link", "beyond link", _what_if, justify="left"),
            Column("cache_regime", "cache regime", lambda v: "-" if v is None else str(v), justify="left"),
        ],
        rows=rows,
        meta=meta,
        csv_columns=csv_columns(rows),
        notes=[
            f"for N_prfaas {pt.n_prfaas}, N_p {pt.n_p}, N_d {pt.n_d}; a router uses the row of the largest "
            "bandwidth at or below the one it measures; 'planned' marks the scenario's usable bandwidth",
            *([_what_if_note(inputs)] if any(r.beyond_link for r in table.rows) else []),
        ],
    )


def robust_view(result, inputs) -> Report:
    """A robust plan: the shared counts and, per case, its threshold, split, Lambda_max and the loss
    against the case planned alone."""
    ident = inputs.identity()
    weighted = any(c.weight for c in result.cases)  # given, the weights sum to 1; none given: no weights
    rows = [
        {
            **ident,
            **({} if c.link_gbps is None else {"link_gbps": round(c.link_gbps, 6)}),  # a case may have its own link
            "case": c.name,
            "weight": c.weight if weighted else None,
            "target_rate_rps": c.target_rate_rps,
            "n_prfaas": result.n_prfaas,
            "threshold_tokens": c.threshold_tokens,
            "p": round(c.p, 6),
            "n_p": c.n_p,
            "n_d": c.n_d,
            "lambda_max_rps": round(c.lambda_max_rps, 6),
            "own_lambda_rps": round(c.own_lambda_rps, 6),
            "loss_fraction": round(c.loss, 6),  # a share (0.25 = 25%), as are p and the weights
            # the counts of the case planned alone, one number a column (a spreadsheet reads '7/1/6' as a date)
            **dict(zip(("own_n_prfaas", "own_n_p", "own_n_d"), c.own_counts)),
        }
        for c in result.cases
    ]
    csv = csv_columns(rows)
    # the table's one cell for them, on a copy: CSV and JSON rows keep one number a column
    table_rows = [{**row, "own_counts": f"{row['own_n_prfaas']}/{row['own_n_p']}/{row['own_n_d']}"} for row in rows]
    shared = f"N_prfaas {result.n_prfaas}, " + (
        f"N_p {result.n_pd}, N_d {result.n_decode}" if result.n_decode is not None else f"N_pd {result.n_pd} (split per case)"
    )
    cost = "-" if result.usd_per_hour is None else f"${result.usd_per_hour:,.2f}/hour provisioned"
    meta, notes = {"scenario": inputs.name, "objective": str(result.objective)}, _robust_notes(result) + list(result.notes)
    summary = {  # the title's and the first note's figures, as numbers
        "n_prfaas": result.n_prfaas,
        "n_pd": result.n_pd,
        "n_decode": result.n_decode,
        "usd_per_hour": None if result.usd_per_hour is None else round(result.usd_per_hour, 6),
        "worst_lambda_rps": round(result.worst_lambda_rps, 6),
        "weighted_lambda_rps": round(result.weighted_lambda_rps, 6) if weighted else None,
    }
    return Report(
        title=f"Robust plan: {inputs.name} ({result.objective}; shared {shared}; {cost})",
        columns=[
            Column("case", "case", justify="left", keep=True),
            Column("weight", "weight", _auto),
            Column("target_rate_rps", "target req/s", _auto),
            Column("threshold_tokens", "t (tokens)", _auto),
            Column("p", "p", _auto),
            Column("n_p", "N_p", _auto),
            Column("n_d", "N_d", _auto),
            Column("lambda_max_rps", "Λ_max req/s", _auto),
            Column("own_lambda_rps", "alone req/s", _auto),
            Column("loss_fraction", "loss", lambda v: f"{100 * v:.1f}%"),
            Column("own_counts", "alone N_f/N_p/N_d", justify="right"),
        ],
        rows=table_rows,
        meta=meta,
        csv_columns=csv,
        notes=notes,
        json_doc={**meta, "plan": summary, "rows": rows, "notes": notes},
    )


def _robust_notes(result) -> list[str]:
    """The robust report's note: the worst and weighted Lambda_max and what the loss is."""
    return [
        f"worst case {result.worst_lambda_rps:.3f} req/s"
        # the weights sum to 1 when given (``profiles.scenario.RobustSpec``); none given: no weighted figure
        + (f", weighted {result.weighted_lambda_rps:.3f} req/s" if any(c.weight for c in result.cases) else "")
        + "; "
        + (
            "loss = the shared counts' $/hour over the case's own cheapest plan meeting its target, minus 1"
            if result.objective == "min_cost"
            else "loss = 1 - Λ_max with the shared counts / the case planned alone within the same ranges and budgets"
        )
        + (
            "; cases count relative to their target rates"
            if all(c.target_rate_rps for c in result.cases) and result.objective != "min_cost"
            else ""
        )
    ]


def schedule_view(day, inputs, simulated=None) -> Report:
    """A day's schedule: per window the split, threshold, capacity and utilisation, beside the best
    static plan."""
    ident = inputs.identity()
    rows = []
    for w, s in zip(day.windows, day.static_windows):
        rows.append(
            {
                **ident,
                "window": w.name,
                "hours": w.hours,
                "rate_rps": w.rate_rps,
                "n_prfaas": day.n_prfaas,
                "n_p": w.n_p,
                "n_d": w.n_d,
                "switched": w.switched,
                "threshold_tokens": w.threshold_tokens,
                "capacity_rps": round(w.capacity_rps, 6),
                "utilisation_fraction": round(w.utilisation, 6),  # rate / capacity (1.0: full)
                "static_n_p": s.n_p,
                "static_n_d": s.n_d,
                "static_capacity_rps": round(s.capacity_rps, 6),
                "static_utilisation_fraction": round(s.utilisation, 6),
            }
        )
    stability = {True: "bounded", False: "growing", None: "unknown"}
    for row, sim in zip(rows, simulated or ()):
        row["sim_queues"], row["static_sim_queues"] = (stability[x] for x in sim)
    cost = "-" if day.usd_per_hour is None else f"${day.usd_per_hour:,.2f}/hour"
    scale_note = "day scale (the factor by which every window's rate could grow and still be served)"
    if day.n_decode is not None:  # a decode-only pool: no role switches, so no static plan beside it
        notes = [
            f"{scale_note}: {day.scale:.3f}",
            "a decode-only pool: no instance switches role; the threshold follows each window",
        ]
        bought = f"N_prfaas {day.n_prfaas}, N_p {day.n_pd}, N_d {day.n_decode}"
        rows = [{k: v for k, v in row.items() if not k.startswith("static_") and k != "switched"} for row in rows]
    else:
        gain = day.scale / day.static_scale - 1 if day.static_scale > 0 else float("inf")
        s_f, s_pd, s_cost = day.static_counts
        versus = f"({signed(100 * gain, 1)}%)"
        if inputs.objective.kind == ObjectiveKind.min_cost and day.usd_per_hour is not None and s_cost:
            # min_cost: both serve every window; what counts is what each costs
            change = 100 * (day.usd_per_hour / s_cost - 1)
            than = "as much $/hour" if round(change, 1) == 0 else f"{abs(change):.1f}% {'more' if change > 0 else 'less'} $/hour"
            versus = f"(both serve every window; the schedule costs {than})"
        notes = [
            f"{scale_note}: schedule {day.scale:.3f}, best static plan {day.static_scale:.3f} {versus}",
            f"best static plan: N_prfaas {s_f}, N_pd {s_pd}"
            + ("" if s_cost is None else f", ${s_cost:,.2f}/hour")
            + "; one split all day, threshold per window",
        ]
        bought = f"N_prfaas {day.n_prfaas}, N_pd {day.n_pd}"
    if day.fell_back:
        notes.append(
            "one window: nothing to switch between, so the schedule is the static plan"
            if len(day.windows) == 1
            else "role switches do not pay here (conversion time, switch limit): the schedule keeps one split"
        )
    over = [w for w in day.windows if w.utilisation > 1]
    if over:  # the counts bought do not serve these windows: say so, not only through the load column
        worst = max(over, key=lambda w: w.utilisation)
        notes.append(
            f"not served: {', '.join(w.name for w in over)} "
            f"({'its rate is' if len(over) == 1 else 'the worst, ' + worst.name + ', has a rate'} "
            f"{worst.utilisation:.3g}x the capacity of the counts bought); every window's rate would have to "
            f"fall to {day.scale:.3g}x for all to be served"
        )
    hours = sum(w.hours for w in day.windows)
    if not math.isclose(hours, 24.0, rel_tol=1e-9):
        notes.append(f"the windows span {hours:g} hours, not 24: each window counts for its hours, as given")
    notes += list(day.notes)
    columns = [
        Column("window", "window", justify="left", keep=True),
        Column("hours", "hours", _auto),
        Column("rate_rps", "rate req/s", _auto),
        Column("n_p", "N_p", _auto),
        Column("n_d", "N_d", _auto),
        Column("switched", "switched", _auto),
        Column("threshold_tokens", "t (tokens)", _auto),
        Column("capacity_rps", "capacity req/s", _auto),
        Column("utilisation_fraction", "load", _auto),
        Column("static_n_p", "static N_p", _auto),
        Column("static_capacity_rps", "static capacity req/s", _auto),
        Column("static_utilisation_fraction", "static load", _auto),
        *(
            [Column("sim_queues", "sim queues", justify="left"), Column("static_sim_queues", "static sim", justify="left")]
            if simulated
            else []
        ),
    ]
    summary = {  # the title's and the first notes' figures, as numbers
        "n_prfaas": day.n_prfaas,
        "n_pd": day.n_pd,
        "n_decode": day.n_decode,
        "usd_per_hour": None if day.usd_per_hour is None else round(day.usd_per_hour, 6),
        "day_scale": round(day.scale, 6),
        **(
            {}
            if day.n_decode is not None
            else {
                "static_day_scale": round(day.static_scale, 6),
                "static_n_prfaas": day.static_counts[0],
                "static_n_pd": day.static_counts[1],
                "static_usd_per_hour": None if day.static_counts[2] is None else round(day.static_counts[2], 6),
            }
        ),
    }
    meta = {"scenario": inputs.name}
    return Report(
        title=f"Day schedule: {inputs.name} (buy {bought}; {cost} provisioned)",
        columns=[c for c in columns if any(c.key in row for row in rows)],
        rows=rows,
        csv_columns=csv_columns(rows),
        meta=meta,
        notes=notes,
        json_doc={**meta, "plan": summary, "rows": rows, "notes": notes},
    )


def _output_by_class(inputs, threshold_tokens: float) -> list[tuple[str, str]]:
    """The mean output of each class at t, where a request trace gives it jointly (``workload.joint``)."""
    means = inputs.workload.output_class_means(threshold_tokens)
    if means is None:
        return []
    shown = [_tokens(m) if math.isfinite(m) else "-" for m in (float(means[0]), float(means[1]))]
    return [("output long / short", f"{shown[0]} / {shown[1]} tokens (the trace's, by class)")]
