"""The report of ``prfaas-plan compare``: one row per option, ranked, the Pareto front marked.

The JSON document holds every row; the table and the CSV read their cells from the same rows
by key, so a column can only show the field of its name. CSV rows carry the option's
identity (scenario, model, each pool's hardware and chips per instance, link) and every
column its unit.
"""

from __future__ import annotations

from ..report import Column, Report, fmt_opt
from ..study.basis import SOURCE_KEYS
from .plan import IDENTITY_CSV, SOURCES_NOTE, sources_view, tco_json, under_slo_ratio
from .uncertainty import WHAT

METRIC_CSV = (
    "rank",
    "pareto",
    "status",
    "reason",
    "objective",
    "capacity_rps",
    "lambda_max_rps",
    "goodput_rps",
    "threshold_tokens",
    "n_prfaas",
    "n_p",
    "n_d",
    "gpus_total",
    "usd_per_hour",
    "usd_per_hour_is_lower_bound",
    "operating_rate_rps",
    "ttft_p90_s",
    "tpot_ms",
    "link_utilisation_at_capacity",
    "link_utilisation_at_operating_rate",
    "usd_per_hour_operating",
    "usd_per_mtok_output",
    "usd_per_mtok_blended",
    "power_kw",
    "counted_power_kw",
    "joules_per_output_token",
    "link_operating_usd_per_hour",
    "binding",
    "ratio_vs_homogeneous",
    "colocated_lambda_max_rps",
    "ratio_vs_colocated",
    "capacity_low_rps",
    "capacity_high_rps",
    "lambda_max_low_rps",
    "lambda_max_high_rps",
    "usd_per_mtok_output_low",
    "usd_per_mtok_output_high",
    "versus_best",
    "distinguishable_from_best",
    "shares_error_with_best",
    "notes",
)


def _round(value, digits: int = 6):
    return None if value is None else round(float(value), digits)


def option_row(rank: int | None, r, pareto: bool, objective: str, verdict=None) -> dict:
    """One option as a flat row (identity, then metrics with units in the keys; ``verdict``: the
    option against the best, ``planner.uncertainty.versus_best``)."""
    ident = dict.fromkeys(IDENTITY_CSV)
    ident.update(
        {
            "scenario": None,
            "prfaas_hardware": r.option.prfaas,
            "pd_hardware": r.option.pd,
            "pd_decode_hardware": r.option.pd_decode,
            "model": r.option.model,
            "link_gbps": r.option.link_gbps,
        }
    )
    if r.identity:
        ident.update(r.identity)
    cost = tco_json(r.tco) if r.tco is not None else {}
    span = r.capacity_range_rps
    return {
        **ident,
        "option": r.option.label,
        "rank": rank,
        "pareto": pareto if r.feasible else None,
        "status": "ok" if r.feasible else r.failure,
        "reason": r.reason,
        "objective": objective,
        "capacity_rps": _round(r.capacity_rps),
        "lambda_max_rps": _round(r.lambda_max_rps),
        "goodput_rps": _round(r.goodput_rps),
        "threshold_tokens": r.threshold_tokens,
        "n_prfaas": r.n_prfaas,
        "n_p": r.n_p,
        "n_d": r.n_d,
        "gpus_total": sum(r.gpus.values()) if r.feasible else None,
        "usd_per_hour": _round(r.usd_per_hour, 4),
        "usd_per_hour_is_lower_bound": None if r.tco is None else r.tco.usd_per_hour_is_lower_bound,
        "operating_rate_rps": _round(r.operating_rate_rps),
        "ttft_p90_s": _round(r.ttft_p90_s, 4),
        "tpot_ms": _round(r.tpot_ms, 4),
        "link_utilisation_at_capacity": _round(r.link_utilisation_at_capacity),
        "link_utilisation_at_operating_rate": _round(r.link_utilisation_at_operating_rate),
        "usd_per_hour_operating": cost.get("usd_per_hour"),
        "usd_per_mtok_output": cost.get("usd_per_mtok_output"),
        "usd_per_mtok_blended": cost.get("usd_per_mtok_blended"),
        "power_kw": cost.get("power_kw"),
        "counted_power_kw": cost.get("counted_power_kw"),
        "joules_per_output_token": cost.get("joules_per_output_token"),
        "link_operating_usd_per_hour": cost.get("link_usd_per_hour"),  # committed + metered egress at the rate
        "binding": r.binding,
        "ratio_vs_homogeneous": _round(r.ratio_vs_homogeneous),
        "colocated_lambda_max_rps": _round(r.colocated_lambda_rps),
        "ratio_vs_colocated": _round(r.ratio_vs_colocated),
        "capacity_low_rps": _round(span[0] if span else None),
        "capacity_high_rps": _round(span[1] if span else None),
        "lambda_max_low_rps": _round(r.lambda_low_rps),
        "lambda_max_high_rps": _round(r.lambda_high_rps),
        "usd_per_mtok_output_low": _round(r.usd_per_mtok_output_low),
        "usd_per_mtok_output_high": _round(r.usd_per_mtok_output_high),
        "versus_best": None if verdict is None else verdict.text,
        "distinguishable_from_best": None if verdict is None else verdict.distinguishable,
        "shares_error_with_best": None if verdict is None else verdict.shared_error,
        "notes": "; ".join(r.notes),
        **{key: r.sources.get(key) for key in SOURCE_KEYS},
    }


def compare_rows(comparison) -> list[dict]:
    rows, rank = [], 0
    for i, r in enumerate(comparison.results):
        rank += r.feasible
        verdict = comparison.versus_best[i] if comparison.versus_best else None
        rows.append(option_row(rank if r.feasible else None, r, i in comparison.pareto, comparison.objective, verdict))
    return rows


def _chips(row: dict) -> str:
    parts = [row["prfaas_gpus_per_instance"], row["pd_gpus_per_instance"]]
    if row["pd_decode_hardware"] is not None:
        parts.append(row["pd_decode_gpus_per_instance"])
    return "-" if all(p is None for p in parts) else "/".join("-" if p is None else str(p) for p in parts)


CRITERIA_NAMES = {"usd_per_hour": "$/hour", "capacity_rps": "req/s", "ttft_p90_s": "TTFT P90"}


def front_note(comparison) -> str:
    """What ``*`` means: the front's criteria (``planner.compare.front_criteria``) and why one is left out."""
    names = [CRITERIA_NAMES[c] for c in comparison.front]
    where = "at the target rate" if comparison.objective == "min_cost" else "at each option's operating rate"
    text = (
        f"* marks the Pareto front over {', '.join(names[:-1])} and {names[-1]}"
        if len(names) > 1
        else f"* marks the Pareto front over {names[0]}"
    )
    text += f" {where} (no other feasible option is within 1% on each and better by more than 1% on one)"
    if comparison.objective == "min_cost":
        text += "; every option serves the target, so Λ_max above it is not counted"
    unpriced = comparison.unpriced
    if unpriced and comparison.feasible:
        labels = [r.option.label for r in unpriced]
        text += (
            f"; $/hour is left out of the front because {len(labels)} option"
            f"{' has' if len(labels) == 1 else 's have'} no price ({', '.join(labels)})"
        )
    return text


def _kw(row: dict) -> str:
    """The kW cell: the plan's facility kW, '≥ x' when a pool's power is unknown (x: the pools
    whose power is known), '-' without a plan."""
    if row["power_kw"] is not None:
        return f"{row['power_kw']:,.1f}"
    return "-" if row["counted_power_kw"] is None else f"≥ {row['counted_power_kw']:,.1f}"


_ROLES = {"prfaas_prefill_source": "PrfaaS prefill", "pd_prefill_source": "PD prefill", "decode_source": "decode"}
_ON = {
    "calibrated": "calibrated on measured points",
    "measured": "on a measured curve",
    "scenario": "at the scenario's measured rate",
}


def _mixed_sources(rows: list[dict]) -> list[str]:
    """A note per role whose feasible options stand on different sources: some on the roofline
    alone, others corrected by measurements (calibrated, measured or the scenario's rate), so a
    gap between them may be the correction's, not the hardware's."""
    out = []
    for key, role in _ROLES.items():
        by_source: dict[str, list[str]] = {}
        for row in rows:
            if row["status"] == "ok" and row.get(key) is not None:
                by_source.setdefault(str(row[key]), []).append(str(row["rank"]))
        roofline = by_source.pop("roofline", [])
        if roofline and by_source:
            measured = ", ".join(f"{_options(ranks)} {_ON.get(source, source)}" for source, ranks in by_source.items())
            out.append(
                f"{role} is not on one basis: {_options(roofline)} on the roofline alone, {measured}; "
                "the roofline is optimistic where nothing measured corrects it, so part of a gap between them may be "
                "the measurements', not the hardware's"
            )
    return out


def _options(ranks: list[str]) -> str:
    return f"option{'s' if len(ranks) > 1 else ''} {', '.join(ranks)}"


def _usd_cell(row: dict, key: str, digits: int) -> str:
    """A $ cell, '≥ x' when a pool's billed power has no tdp_w (``usd_per_hour_is_lower_bound``)."""
    value = row[key]
    if value is None:
        return "-"
    return ("≥ " if row["usd_per_hour_is_lower_bound"] else "") + f"{value:,.{digits}f}"


RANGE_NOTE = (
    f"ranges: low .. high at the ends of the instance model's band ({WHAT}; every pool of an option at its "
    "low end, then at its high end, together); vs best: not distinguishable when the option's range of what "
    "the ranking counts (req/s, or $/Mtok for min_cost) overlaps the best's ('no range' where a rate is "
    "measured or calibrated on measured points); options that differ only in counts, link or prices (the "
    "same model, workload, and hardware, chips, layout, engine and band in every pool) share that error, "
    "which cancels in their ratio, so their difference is more certain than their ranges suggest "
    "('shared error')"
)


COLOCATED_NOTE = (
    "colo: Λ_max over the co-located baseline's, a ratio (the homogeneous baseline's instances, each prefilling "
    "and decoding with chunked prefill; see plan), Λ_max under an SLO too"
)


def _span(low: float | None, high: float | None, digits: int) -> str:
    """'low .. high' of a figure, '-' without one."""
    return "-" if low is None or high is None else f"{low:,.{digits}f} .. {high:,.{digits}f}"


def compare_view(comparison) -> Report:
    rows = compare_rows(comparison)
    for row in rows:
        row["pools"] = " / ".join(
            str(row[k]) for k in ("prfaas_hardware", "pd_hardware", "pd_decode_hardware") if row[k] is not None
        )
        row["chips"] = _chips(row)  # also on an option not planned, where its chips are known
        row["counts"] = "-" if row["n_p"] is None else f"{row['n_prfaas']}/{row['n_p']}/{row['n_d']}"
        row["front"] = "*" if row["pareto"] else "-"
        row["kw"] = _kw(row)
        row["usd_h"], row["usd_mtok"] = _usd_cell(row, "usd_per_hour", 0), _usd_cell(row, "usd_per_mtok_output", 3)
        row["capacity_range"] = _span(row["capacity_low_rps"], row["capacity_high_rps"], 3)
        row["usd_mtok_range"] = _span(row["usd_per_mtok_output_low"], row["usd_per_mtok_output_high"], 3)
    # no $ columns when no option has a price (rather than a column of blanks next to "ok")
    priced = any(row["usd_per_hour"] is not None for row in rows)
    priced_columns = (
        [
            Column("usd_h", "$/h", justify="right"),
            Column("usd_mtok", "$/Mtok out", justify="right"),
            Column("usd_mtok_range", "$/Mtok range", justify="right"),
        ]
        if priced
        else []
    )
    served = "goodput" if any(r.goodput_rps is not None for r in comparison.results) else "Λ_max"
    columns = [
        Column("rank", "#", lambda v: "-" if v is None else str(v), keep=True),
        Column("front", "front", justify="left"),
        Column("pools", "PrfaaS / PD / decode", justify="left", min_width=16, keep=True),
        Column("model", "model", lambda v: "-" if v is None else str(v), justify="left"),
        Column("link_gbps", "Gbps", lambda v: v if isinstance(v, str) else fmt_opt(0)(v)),  # a sites file: per link
        Column("chips", "chips", justify="right"),
        Column("counts", "N_f/N_p/N_d", justify="right"),
        Column("capacity_rps", f"{served} req/s", fmt_opt(3)),
        Column("capacity_range", "req/s range", justify="right"),
        *priced_columns,
        Column("versus_best", "vs best", lambda v: "-" if v is None else str(v), justify="left"),
        Column("ratio_vs_colocated", "colo", fmt_opt(2)),  # x the co-located baseline (COLOCATED_NOTE)
        Column("ttft_p90_s", "TTFT P90 s", fmt_opt(2)),
        Column("kw", "kW", justify="right"),
        Column("status", "status", justify="left"),
    ]
    csv_columns = [Column(k, k) for k in (*IDENTITY_CSV, "option", *METRIC_CSV, *SOURCE_KEYS)]
    ranked = "least provisioned $/hour" if comparison.objective == "min_cost" else f"most req/s ({served})"
    notes = [
        f"ranked by {ranked}; {front_note(comparison)}",
        "$/h: provisioned (capital or rental + power at full load + committed link); $/Mtok out, TTFT and kW at "
        "each option's operating rate (target rate, SLO goodput, or operating_load x Λ_max)"
        if priced
        else "no option has a price (price_usd_per_gpu_hour in the hardware profiles, or the pools' cost): no $ "
        "columns; TTFT and kW at each option's operating rate (SLO goodput, or operating_load x Λ_max)",
    ]
    notes += list(comparison.notes)
    notes.append(RANGE_NOTE)
    notes.append(COLOCATED_NOTE)
    if served == "goodput":
        notes.append(under_slo_ratio("ratio_vs_homogeneous (CSV, JSON)"))
    partial = [row["option"] for row in rows if row["power_kw"] is None and row["counted_power_kw"] is not None]
    if partial:
        notes.append(
            "kW '≥ x': a pool's hardware has no tdp_w, so its power is not known; x is the power of the "
            f"other pools, a lower bound ({', '.join(partial)})"
        )
    low = [row["option"] for row in rows if row["usd_per_hour_is_lower_bound"] and row["usd_per_hour"] is not None]
    if low:
        notes.append(
            "$ '≥ x': a pool's power is billed but its hardware has no tdp_w, so that power is counted as "
            f"$0 and x is a lower bound ({', '.join(low)})"
        )
    notes += _mixed_sources(rows)
    shared: dict[str, list[str]] = {}
    for row in rows:
        if row["status"] != "ok":
            notes.append(f"{row['option']}: {row['status']}: {row['reason']}")
        for note in filter(None, row["notes"].split("; ")):
            shared.setdefault(note, []).append(row["option"])
    for note, options in shared.items():
        notes.append(f"{note} ({'every option' if len(options) == len(rows) else ', '.join(options)})")
    failed = sum(r["status"] != "ok" for r in rows)
    basis = str(comparison.basis)
    said = {
        "model": "every pool on the instance model, calibrated where its own hardware has measured points",
        "as-given": "the scenario's measurements where it has them, as plan uses them",
    }[basis]
    sources = sources_view(rows, f"Sources (basis {basis}: {said})", [SOURCES_NOTE])
    return Report(
        title=f"Compare: {comparison.name} ({len(rows)} option{'s' if len(rows) != 1 else ''}, "
        f"{len(rows) - failed} feasible; "
        f"objective {comparison.objective})",
        columns=columns,
        rows=rows,
        csv_columns=csv_columns,
        meta={"scenario": comparison.name, "objective": str(comparison.objective), "basis": basis},
        notes=notes,
        json_doc={
            "scenario": comparison.name,
            "objective": str(comparison.objective),
            "basis": basis,
            "options": rows,
            "notes": list(comparison.notes),  # what building the options said (a value given twice)
        },
        sections=[sources],
    )
