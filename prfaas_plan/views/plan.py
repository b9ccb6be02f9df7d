"""Reports of a plan: deployments, operating point and latency; and sweeps.

One source for every format: ``plan_json`` builds the document, and the table and CSV rows
are read from it by key, so a column can only show the JSON field of its own name
(``tests/test_views.py`` checks every column against the JSON).
"""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ..choices import Bound, DeploymentName, PlanMode
from ..report import Column, Report
from ..units import format_tokens

PAPER_TTFT_REDUCTION = {"mean": 0.50, "p90": 0.64}  # PrfaaS-PD vs homogeneous PD, paper section 4

_LABELS = {DeploymentName.prfaas_pd: "PrfaaS-PD", DeploymentName.homogeneous: "homogeneous",
           DeploymentName.homogeneous_equal_cost: "homog. equal-$", DeploymentName.naive_heterogeneous: "naive heterog.",
           "prfaas_pd @ operating": "PrfaaS-PD @ op."}
_BOUND_LABELS = {Bound.prfaas_compute: "PrfaaS", Bound.link: "link", Bound.pd_prefill: "PD-P", Bound.pd_decode: "PD-D"}


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _opt(value: float | None, digits: int) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), digits)


def _num(digits: int):
    return lambda v: "-" if v is None else f"{v:,.{digits}f}"


_CAPACITY_TEXT = {
    "per_request": "one request per instance at a time (N / T_prefill)",
    "saturated": "batched passes of the saturated roofline",
}


def prefill_basis(pool) -> dict[str, str]:
    """Which prefill curve sized a pool: its source, capacity mode and layout."""
    curve = pool.curve
    roofline = getattr(curve, "roofline", curve)
    source = curve.source + (" (calibrated)" if pool.calibration is not None else "")
    layout = roofline.layout.label if curve is roofline else f"shape from {roofline.layout.label}"
    return {"source": source, "capacity": str(curve.capacity), "layout": layout}


def plan_json(result) -> dict:
    """The plan as JSON: operating point, baselines, ratios, marginal values, Jensen gap,
    latency. Rates in requests/s, bandwidth in decimal Gbps, link utilisation against the
    usable bandwidth."""
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    link = inputs.link
    return {
        "scenario": inputs.name,
        "model": inputs.model.name,
        "mode": result.mode,
        "prefill_curves": {str(pool.role): prefill_basis(pool) for pool in (inputs.prfaas, inputs.pd)},
        "prfaas_pd": {
            "threshold_tokens": pt.threshold_tokens,
            "p": round(pt.p, 6),
            "l_long_tokens": _opt(pt.l_long_tokens, 1),
            "l_short_tokens": _opt(pt.l_short_tokens, 1),
            "n_prfaas": pt.n_prfaas,
            "n_p": pt.n_p,
            "n_d": pt.n_d,
            "gpus": pt.gpus,
            "theta_prfaas": round(st.theta_prfaas, 6),
            "theta_pdp": round(st.theta_pdp, 6),
            "theta_pdd": round(st.theta_pdd, 6),
            "lambda_max": round(st.lambda_max, 6),
            "binding": st.binding,
            "tight": pt.tight,
            "egress_gbps": round(st.egress_gbps, 4),
            "link_utilisation": _opt(pt.link_utilisation, 6),
            "usd_per_hour": _opt(pt.usd_per_hour, 2),
            "usd_per_million_output_tokens": _opt(pt.usd_per_million_output_tokens, 4),
            "ratio_vs_homogeneous": _opt(result.ratio(DeploymentName.prfaas_pd), 6),
        },
        "baselines": {
            name: {"threshold_tokens": 0.0 if name == DeploymentName.naive_heterogeneous else None,
                   "p": 1.0 if name == DeploymentName.naive_heterogeneous else 0.0,
                   "n_prfaas": b.n_prfaas, "n_p": b.n_p, "n_d": b.n_d, "lambda_max": round(b.lambda_max, 6),
                   "binding": b.binding, "egress_gbps": round(b.egress_gbps, 4), "usd_per_hour": _opt(b.usd_per_hour, 2),
                   "ratio_vs_homogeneous": _opt(result.ratio(name), 6)}
            for name, b in result.baselines.items()
        },
        "ratios_vs_homogeneous": {name: _opt(result.ratio(name), 6) for name in (
            DeploymentName.prfaas_pd, DeploymentName.naive_heterogeneous)
            if name == DeploymentName.prfaas_pd or name in result.baselines},
        "link": {"bandwidth_gbps": round(link.bandwidth_gbps, 6), "usable_gbps": round(link.usable_gbps, 6),
                 "usable_fraction": link.usable_fraction, "rtt_ms": round(link.rtt_s * 1000, 6)},
        "marginal_lambda": {k: round(v, 6) for k, v in result.marginal.items()},
        "jensen": {
            "lambda_exact": round(result.lambda_by_mode(PlanMode.exact), 6),
            "lambda_paper": round(result.lambda_by_mode(PlanMode.paper), 6),
            "gap": round(result.jensen_gap, 6),
            "exact_lambda_at_paper_point": _opt(result.exact_lambda_at_paper_point, 6),
        },
        "latency": latency_json(result),
        "decode": {"tokens_per_s_per_instance": round(inputs.decode.tokens_per_s_per_instance, 3),
                   "source": inputs.decode.source, "context_tokens": inputs.decode.context_tokens,
                   "output_mean_tokens": inputs.output_mean_tokens},
        "notes": result.notes,
    }


def _rows(doc: dict) -> list[dict]:
    """One row per deployment, read from the JSON document (baselines have no Θ)."""
    rows = [{"deployment": DeploymentName.prfaas_pd, **doc["prfaas_pd"]}]
    for name, b in doc["baselines"].items():
        rows.append({"deployment": name, "theta_prfaas": None, "theta_pdp": None, "theta_pdd": None, **b})
    return rows


def plan_view(result) -> Report:
    """Deployments as rows (table and CSV), the operating point and diagnostics as sections."""
    doc = plan_json(result)
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    num = _num
    columns = [
        Column("deployment", "deployment", _label, justify="left", min_width=14),
        Column("n_prfaas", "N_prfaas", num(0)), Column("n_p", "N_p", num(0)), Column("n_d", "N_d", num(0)),
        Column("theta_prfaas", "Θ_prfaas", num(2)), Column("theta_pdp", "Θ_pdp", num(2)),
        Column("theta_pdd", "Θ_pdd", num(2)), Column("lambda_max", "Λ_max", num(2)),
        Column("binding", "bound by", lambda v: _BOUND_LABELS.get(v, v), justify="left"),
        Column("usd_per_hour", "$/h", num(0)),
        Column("ratio_vs_homogeneous", "vs homog", lambda v: "-" if v is None else f"{v:.2f}x"),
    ]
    csv_columns = [Column(key, key) for key in (
        "deployment", "threshold_tokens", "p", "n_prfaas", "n_p", "n_d", "theta_prfaas", "theta_pdp", "theta_pdd",
        "lambda_max", "binding", "egress_gbps", "usd_per_hour", "ratio_vs_homogeneous")]
    link = inputs.link
    details = [
        ("threshold t", f"{pt.threshold_tokens:,.0f} tokens ({format_tokens(pt.threshold_tokens)}, K = 1,024)"),
        ("offloaded share p", f"{pt.p:.3f}"),
        ("l_long / l_short", f"{_tokens(pt.l_long_tokens)} / {_tokens(pt.l_short_tokens)} tokens"),
        ("instances", f"N_prfaas {pt.n_prfaas} x {inputs.prfaas.instance.label}, N_p {pt.n_p} + N_d {pt.n_d} "
                      f"x {inputs.pd.instance.label}"),
        ("GPUs", ", ".join(f"{n} {k}" for k, n in pt.gpus.items()) or "-"),
        ("Λ_max", f"{st.lambda_max:.3f} req/s, bound by {st.binding}; tight: {', '.join(pt.tight)}"),
        ("egress", f"{st.egress_gbps:.2f} Gbps = {_pct(pt.link_utilisation)} of the usable {link.usable_gbps:g} Gbps "
                   f"(link {link.bandwidth_gbps:g} Gbps x usable fraction {link.usable_fraction:g})"),
        ("cost", "-" if pt.usd_per_hour is None else f"${pt.usd_per_hour:,.0f}/hour" + (
            "" if pt.usd_per_million_output_tokens is None
            else f", ${pt.usd_per_million_output_tokens:,.3f} per million output tokens")),
        ("decode", f"{inputs.decode.tokens_per_s_per_instance:,.0f} tokens/s per PD-D instance "
                   f"({inputs.decode.source}) at {inputs.decode.context_tokens:,} tokens of context; "
                   f"mean output {inputs.output_mean_tokens:,.0f} tokens"),
    ]
    for pool in (inputs.prfaas, inputs.pd):
        basis = prefill_basis(pool)
        details.append((f"{pool.role} prefill", f"{basis['source']} curve on {pool.instance.label} "
                                                 f"({basis['layout']}); capacity {basis['capacity'].replace('_', ' ')}: "
                                                 + _CAPACITY_TEXT[basis['capacity']]))
    for pool in (inputs.prfaas, inputs.pd):
        cal = pool.calibration
        if cal is not None:
            fitted = ", ".join(f"{k} {v:.3g}" for k, v in cal.fitted.items())
            details.append((f"{pool.role} calibration", f"{pool.hardware_name} fitted on {len(cal.points)} points "
                                                         f"({fitted}); max error {100 * cal.max_abs_error:.2f}%"))
    if result.marginal:
        m = result.marginal
        details.append(("marginal Λ_max", f"+1 usable Gbps: {m['per_gbps']:+.4f}, +1 PrfaaS instance: "
                                          f"{m['per_prfaas_instance']:+.3f}, +1 PD instance: "
                                          f"{m['per_pd_instance']:+.3f} req/s"))
    exact, paper = result.lambda_by_mode(PlanMode.exact), result.lambda_by_mode(PlanMode.paper)
    details.append(("Jensen gap", f"exact {exact:.3f} vs paper {paper:.3f} req/s: the paper's mean-length "
                                  f"evaluation overstates Λ_max by {100 * result.jensen_gap:.1f}% (T_prefill is convex)"))
    section = Report(title="Operating point", columns=[Column("item", "item"), Column("value", "value")],
                     rows=[{"item": k, "value": v} for k, v in details])
    return Report(
        title=f"PrfaaS plan: {inputs.name} ({result.mode} mode; rates in req/s)",
        columns=columns, rows=_rows(doc), csv_columns=csv_columns,
        meta={"scenario": inputs.name, "model": inputs.model.name, "mode": result.mode},
        notes=list(result.notes), json_doc=doc, sections=[section, latency_view(result, doc["latency"])],
    )


def _pct(fraction: float) -> str:
    return "n/a" if not np.isfinite(fraction) else f"{100 * fraction:.1f}%"


def _lat_row(name: str, lat) -> dict:
    num = lambda v: _opt(v, 4)  # noqa: E731
    return {"deployment": name, "rate_rps": round(lat.rate_rps, 4), "ttft_mean_s": num(lat.overall_mean_s),
            "ttft_p90_s": num(lat.overall_p90_s), "ttft_p99_s": num(lat.overall_p99_s),
            "local_mean_s": num(lat.local.mean_s), "remote_mean_s": num(lat.remote.mean_s),
            "tpot_ms": num(lat.tpot_ms), "link_utilisation": num(lat.link_utilisation), "stable": lat.stable}


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
        "paper_ttft_reduction_vs_homogeneous": PAPER_TTFT_REDUCTION,
    }


def latency_view(result, doc: dict | None = None) -> Report:
    """TTFT and TPOT of every deployment at one common rate, and of the plan at its operating rate."""
    doc = doc or latency_json(result)
    rows = [{**doc["operating"], "deployment": "prfaas_pd @ operating"}, *doc["at_common_rate"].values()]
    red = doc["ttft_reduction_vs_homogeneous"]
    sec = _num(2)
    pct = lambda v: "n/a" if v is None else f"{-100 * v:+.0f}%"  # noqa: E731
    notes = [f"common rate {result.common_rate_rps:.3f} req/s = {result.inputs.latency.operating_load:g} x the "
             f"lowest Λ_max of the compared deployments; operating rate {result.operating_rate_rps:.3f} req/s"
             + (" (SLO goodput)" if result.goodput_rps is not None else " (operating_load x Λ_max)"),
             f"PrfaaS-PD vs homogeneous TTFT: mean {pct(red['mean'])}, P90 {pct(red['p90'])} "
             f"(paper: mean -50%, P90 -64%, at an unstated load)",
             "closed form: Erlang C with the Allen-Cunneen correction per prefill path, pipelined KV transfer on a "
             "processor-sharing link; TPOT from the decode batch at that rate"]
    return Report(
        title="Latency (closed form)",
        columns=[Column("deployment", "deployment", _label, justify="left", min_width=15),
                 Column("rate_rps", "rate req/s", sec),
                 Column("ttft_mean_s", "TTFT mean s", sec), Column("ttft_p90_s", "P90 s", sec),
                 Column("ttft_p99_s", "P99 s", sec), Column("local_mean_s", "local s", sec),
                 Column("remote_mean_s", "remote s", sec), Column("tpot_ms", "TPOT ms", sec)],
        rows=rows, notes=notes)


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


def sweep_view(rows: list[dict], over: str, scenario: str) -> Report:
    """Rows of a sweep (keys carry units); the table rounds, CSV and JSON keep the values."""
    columns = [Column(key, key, _auto, justify="right") for key in (rows[0] if rows else {})]
    return Report(title=f"Sweep over {over}: {scenario}", columns=columns, rows=rows)
