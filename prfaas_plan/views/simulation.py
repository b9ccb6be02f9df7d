"""Reports of simulations: one run beside the closed form, its time series, validation."""

from __future__ import annotations

import numpy as np

from ..report import Column, Report, fmt_float, fmt_int, signed
from .identity import csv_columns, identified


def _pct_diff(sim, closed) -> float | None:
    """(closed - simulated) / simulated, or None when either is missing or infinite."""
    if sim is None or closed is None or not np.isfinite(closed) or not np.isfinite(sim) or sim == 0:
        return None
    return round((closed - sim) / sim, 4)


def _finite(value) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


def _stability(stable: bool | None) -> str:
    return "unknown (too few samples)" if stable is None else ("stable" if stable else "growing")


def _counted(sim) -> str:
    """Why the table measures fewer requests than were simulated: the warm-up left out (the first
    ``warmup_fraction`` of completions, ``simulate.results``) and any request left unfinished."""
    cfg = sim.config
    measured = int(sim.ttft["overall"]["count"])
    warmup = sim.completed - measured
    unfinished = cfg.requests - sim.completed
    replay = cfg.replay
    if replay is not None:
        arrivals = f"arrivals: the trace {replay.source} replayed, {replay.speedup:g}x, window {replay.window_text()}"
    else:
        arrivals = f"seed {cfg.seed}, arrivals {cfg.arrivals}" + (f", cv {cfg.cv:g}" if cfg.arrivals == "gamma" else "")
    return (
        f"{cfg.requests:,} requests simulated ({arrivals}), {sim.completed:,} completed"
        + (f" ({unfinished:,} unfinished, not measured)" if unfinished else "")
        + f"; the first {warmup:,} completions ({100 * cfg.warmup_fraction:g}% warm-up) are left out: "
        f"{measured:,} measured"
    )


def _asked(cfg) -> str:
    return "asked" if cfg.replay is None else "replayed"


def _mean_of(cfg) -> str:
    """What the rate is the mean of: the arrival process drawn, or the trace replayed."""
    if cfg.replay is None:
        return "the arrival process's mean"
    return f"the trace's requests / span x speedup {cfg.replay.speedup:g}"


def _closed_egress(closed, run) -> str:
    """The closed form's egress at the simulated rate (decimal Gbps): the KV offered, at most the
    link's usable bandwidth (an overloaded link carries that and queues the rest)."""
    usable_gbps = run.plan.inputs.link.usable_gbps
    if usable_gbps <= 0:  # a link of nothing carries nothing (its utilisation is inf or 0)
        return "0.00, the usable link"
    offered_gbps = closed.link_utilisation * usable_gbps
    if offered_gbps <= usable_gbps * (1 + 1e-9):
        return f"{offered_gbps:.2f}"
    return f"{usable_gbps:.2f}, the usable link: {offered_gbps:.2f} offered"


def simulation_view(run) -> Report:
    """TTFT and TPOT per path from the simulator beside the closed form at the same rate."""
    sim, closed = run.result, run.closed_form
    closed_paths = {"local": closed.local, "remote": closed.remote}
    rows = []
    for path in ("local", "remote", "overall"):
        t = sim.ttft[path]
        c_mean = closed.overall_mean_s if path == "overall" else closed_paths[path].mean_s
        c_p90 = closed.overall_p90_s if path == "overall" else closed_paths[path].p90_s
        rows.append(
            {
                "path": path,
                "requests": t["count"],
                "ttft_mean_s": t["mean_s"],
                "ttft_p50_s": t["p50_s"],
                "ttft_p90_s": t["p90_s"],
                "ttft_p99_s": t["p99_s"],
                "closed_mean_s": _finite(c_mean),
                "closed_p90_s": _finite(c_p90),
                "tpot_mean_ms": sim.tpot[path]["mean_ms"],
            }
        )
    sec = lambda v: "-" if v is None else f"{v:,.2f}"
    cfg = sim.config
    growth = sim.queue_growth
    start_s, end_s = sim.window_s
    notes = [
        _counted(sim),
        f"rates: {_asked(cfg)} {cfg.rate_rps:.3f} req/s ({_mean_of(cfg)}; load {cfg.rate_rps / run.lambda_max:.2f} "
        f"of the closed-form Λ_max {run.lambda_max:.3f}, the deployment's capacity); measured in the window "
        f"{start_s:,.0f}-{end_s:,.0f} s (end of the warm-up to the last arrival): offered {sim.offered_rps:.3f} "
        f"(arrivals per second), achieved {sim.achieved_rps:.3f} (completions per second)",
        f"queues {_stability(sim.stable)} "
        f"(mean total queue in the first / last 20%: {sec(growth.get('first_mean'))} / {sec(growth.get('last_mean'))})",
        f"egress mean {sim.egress.get('mean_gbps') or 0:.2f} Gbps (closed form {_closed_egress(closed, run)}), "
        f"max {sim.egress.get('max_gbps') or 0:.2f}; "
        f"max link backlog {(sim.egress.get('max_link_backlog_bytes') or 0) / 1e9:.2f} GB; policy {cfg.policy}, "
        f"threshold changed {len(sim.threshold_changes) - 1} times",
    ]
    if cfg.rebalance:
        last = sim.role_changes[-1] if sim.role_changes else None
        notes.append(
            f"role rebalancing (conversion {cfg.conversion_s:g} s): {len(sim.role_changes)} switches"
            + ("" if last is None else f", the last at {last[0]:,.0f} s to N_p {last[1]}, N_d {last[2]}")
        )
    return Report(
        title=f"Simulation: {run.deployment.name} at {cfg.rate_rps:.3f} req/s",
        columns=[
            Column("path", "path", justify="left", keep=True),
            Column("requests", "measured requests", fmt_int),
            Column("ttft_mean_s", "TTFT mean s", sec),
            Column("ttft_p50_s", "P50 s", sec),
            Column("ttft_p90_s", "P90 s", sec),
            Column("ttft_p99_s", "P99 s", sec),
            Column("closed_mean_s", "closed-form mean s", sec),
            Column("closed_p90_s", "closed-form P90 s", sec),
            Column("tpot_mean_ms", "TPOT mean ms", sec),
        ],
        rows=rows,
        notes=notes,
        json_doc={
            **sim.to_json_dict(timeseries=False),
            "lambda_max": run.lambda_max,
            "closed_form": {r["path"]: {"mean_s": r["closed_mean_s"], "p90_s": r["closed_p90_s"]} for r in rows},
        },
    )


def timeseries_report(run) -> Report:
    """The time series as rows: the scenario's identity and the deployment, then one sample per row."""
    ident = {**run.plan.inputs.identity(), "deployment": str(run.deployment.name)}
    rows = identified(ident, run.result.timeseries_rows())
    columns = csv_columns(rows)
    return Report(title="Simulation time series", columns=columns, rows=rows)


def validation_view(runs) -> Report:
    """Closed form beside simulation at several loads, with relative differences."""
    rows = []
    for run in runs:
        sim, closed = run.result, run.closed_form
        rate = sim.config.rate_rps
        closed_tput = min(rate, run.lambda_max)
        t = sim.ttft["overall"]
        rows.append(
            {
                **run.plan.inputs.identity(),
                "deployment": str(run.deployment.name),
                "load": round(rate / run.lambda_max, 4),
                "rate_rps": round(rate, 4),
                "closed_throughput_rps": round(closed_tput, 4),
                "sim_throughput_rps": round(sim.achieved_rps, 4),
                "throughput_diff_fraction": _pct_diff(sim.achieved_rps, closed_tput),
                "closed_ttft_mean_s": _finite(closed.overall_mean_s),
                "sim_ttft_mean_s": _finite(t["mean_s"]),
                "ttft_mean_diff_fraction": _pct_diff(t["mean_s"], closed.overall_mean_s),
                "closed_ttft_p90_s": _finite(closed.overall_p90_s),
                "sim_ttft_p90_s": _finite(t["p90_s"]),
                "ttft_p90_diff_fraction": _pct_diff(t["p90_s"], closed.overall_p90_s),
                **_path_columns(sim, closed),
                "sim_stable": sim.stable,
            }
        )
    sec = lambda v: "overload" if v is None else f"{v:,.2f}"
    pct = lambda v: "-" if v is None else f"{signed(100 * v, 1)}%"
    cfg = runs[0].result.config
    return Report(
        title="Closed form vs simulation",
        columns=[
            Column("load", "load", lambda v: f"{v:.2f}", keep=True),
            Column("rate_rps", "rate req/s", fmt_float(3)),
            Column("closed_throughput_rps", "closed tput req/s", fmt_float(3)),
            Column("sim_throughput_rps", "sim tput req/s", fmt_float(3)),
            Column("throughput_diff_fraction", "Δ tput", pct),
            Column("closed_ttft_mean_s", "closed TTFT mean s", sec),
            Column("sim_ttft_mean_s", "sim TTFT mean s", sec),
            Column("ttft_mean_diff_fraction", "Δ TTFT mean", pct),
            Column("closed_ttft_p90_s", "closed TTFT P90 s", sec),
            Column("sim_ttft_p90_s", "sim TTFT P90 s", sec),
            Column("ttft_p90_diff_fraction", "Δ TTFT P90", pct),
            Column("local_ttft_mean_diff_fraction", "Δ local mean", pct),
            Column("remote_ttft_mean_diff_fraction", "Δ remote mean", pct),
            Column("remote_ttft_p90_diff_fraction", "Δ remote P90", pct),
            Column("sim_stable", "sim queues", _stability),
        ],
        rows=rows,
        csv_columns=csv_columns(rows),
        notes=[
            f"load = rate / closed-form Λ_max ({runs[0].lambda_max:.3f} req/s); Δ tput, Δ TTFT mean and Δ TTFT P90 = "
            "(closed - simulated) / simulated of the two columns before each; "
            f"{cfg.requests:,} requests per load, seed {cfg.seed}, arrivals {cfg.arrivals}"
            + (f" (cv {cfg.cv:g})" if cfg.arrivals == "gamma" else ""),
            "closed-form throughput = min(rate, Λ_max); closed-form TTFT is infinite at or above Λ_max",
            "Δ local mean, Δ remote mean, Δ remote P90: the same per path (local PD-P, remote PrfaaS with its KV "
            "transfer; '-' where a path serves nothing); CSV and JSON carry each path's closed and simulated mean and P90",
        ],
    )


def _path_columns(sim, closed) -> dict:
    """Per path (local, remote): closed and simulated TTFT mean and P90 (s) and their differences."""
    out: dict = {}
    for name, path in (("local", closed.local), ("remote", closed.remote)):
        t = sim.ttft.get(name) or {}
        served = path.arrival_rps > 0 and t.get("count", 0) > 0
        for stat, value in (("mean", path.mean_s), ("p90", path.p90_s)):
            got = t.get(f"{stat}_s") if served else None
            out[f"{name}_closed_ttft_{stat}_s"] = _finite(value) if served else None
            out[f"{name}_sim_ttft_{stat}_s"] = _finite(got)
            out[f"{name}_ttft_{stat}_diff_fraction"] = _pct_diff(got, value) if served else None
    return out
