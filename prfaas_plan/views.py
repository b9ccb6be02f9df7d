"""Build :class:`report.Report` objects from library results (no printing here)."""

from __future__ import annotations

import numpy as np

from .accounting.kv import KvModel
from .accounting.params import count_params, weight_bytes
from .api import KvReport
from .calibrate import CalibrationResult
from .profiles.hardware import HardwareProfile
from .profiles.model import ModelProfile, expand_layers
from .report import Column, Report, fmt_float, fmt_int
from .timing.decode import DecodeCapacity
from .units import BYTES_PER_MIB, format_tokens


def kv_view(result: KvReport) -> Report:
    kv = result.kv_model
    rows = [
        {
            "length": r.length_tokens,
            "kv_bytes": r.kv_bytes,
            "kv_mib": round(r.kv_bytes / BYTES_PER_MIB, 3),
            "prefill_s": round(r.prefill_s, 6),
            "phi_kv_gbps": round(r.phi_kv_gbps, 6),
        }
        for r in result.rows
    ]
    notes = [
        f"S_kv(l) = {kv.growing_bytes_per_token:,.0f} B/token x l"
        + (f" + window-bounded part up to {kv.window_cap_bytes / BYTES_PER_MIB:,.2f} MiB" if kv.windows else "")
        + f" + {kv.fixed_bytes / BYTES_PER_MIB:,.2f} MiB fixed state per request (model architecture)",
        f"T_prefill source: {result.source}"
        + (" (profile's measured points, PCHIP-interpolated; roofline shape outside them)" if result.source == "measured" else
           " (per-layer roofline with the hardware profile's efficiency factors)"),
        "Phi_kv = S_kv / T_prefill in decimal Gbps; K = 1024 tokens; MiB = 2^20 B",
    ]
    return Report(
        title=f"KV throughput: {result.model.name} on {result.instance.label}",
        columns=[
            Column("length", "length (tokens)", fmt_int),
            Column("kv_bytes", "S_kv (bytes)", fmt_int),
            Column("kv_mib", "S_kv (MiB)", fmt_float(1)),
            Column("prefill_s", "T_prefill (s)", fmt_float(3)),
            Column("phi_kv_gbps", "Phi_kv (Gbps)", fmt_float(2)),
        ],
        rows=rows,
        meta={"model": result.model.name, "hardware": result.instance.hardware.name, "gpus": result.instance.gpus,
              "source": result.source},
        notes=notes,
        extra={"kv_model": {"growing_bytes_per_token": kv.growing_bytes_per_token,
                            "window_cap_bytes": kv.window_cap_bytes, "fixed_bytes": kv.fixed_bytes}},
    )


def decode_view(d: DecodeCapacity, tpot_limit_ms: float | None) -> Report:
    row = {
        "context": d.context_tokens,
        "batch_size": d.batch_size,
        "bs_max_memory": d.bs_max_memory,
        "limited_by": d.limited_by,
        "step_ms": round(d.step_s * 1e3, 4),
        "tokens_per_s": round(d.tokens_per_s, 3),
        "weight_gb": round(d.weight_bytes / 1e9, 3),
        "kv_per_request_mib": round(d.kv_bytes_per_request / BYTES_PER_MIB, 3),
    }
    notes = [
        f"usable memory {d.usable_memory_bytes / 1e9:,.1f} GB (capacity x memory_usable_fraction); "
        f"BS_max = (usable - weights) / S_kv(context)",
        f"tokens/s source: {d.source}" + (" (the profile's measured decode throughput)" if d.source == "measured" else
                                          " (BS / T_decode(BS) from the per-layer roofline)"),
    ]
    if tpot_limit_ms is not None:
        notes.append(f"TPOT limit {tpot_limit_ms:g} ms")
    return Report(
        title=f"Decode: {d.model} on {d.instance} at context {format_tokens(d.context_tokens)}",
        columns=[
            Column("context", "context (tokens)", fmt_int),
            Column("batch_size", "batch", fmt_int),
            Column("bs_max_memory", "BS_max (memory)", fmt_int),
            Column("limited_by", "limited by"),
            Column("step_ms", "T_decode (ms)", fmt_float(2)),
            Column("tokens_per_s", "tokens/s", fmt_float(0)),
            Column("weight_gb", "weights (GB)", fmt_float(1)),
            Column("kv_per_request_mib", "KV/request (MiB)", fmt_float(1)),
        ],
        rows=[row],
        meta={"model": d.model, "instance": d.instance, "source": d.source},
        notes=notes,
    )


def model_summary(m: ModelProfile) -> dict:
    kv = KvModel.of(m)
    counts = count_params(m)
    layers = expand_layers(m)
    kinds: dict[str, int] = {}
    for layer in layers:
        kind = "none" if layer.mixer is None else getattr(layer.mixer, "kind", None) or layer.mixer.type
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "name": m.name,
        "layers": len(layers),
        "mixers": ", ".join(f"{k}:{v}" for k, v in kinds.items()),
        "kv_bytes_per_token": kv.growing_bytes_per_token,
        "window_cap_mib": round(kv.window_cap_bytes / BYTES_PER_MIB, 3),
        "fixed_state_mib": round(kv.fixed_bytes / BYTES_PER_MIB, 3),
        "params_total_b": round(counts.total / 1e9, 2),
        "params_active_b": round(counts.active / 1e9, 2),
        "weight_gb": round(weight_bytes(m) / 1e9, 1),
        "max_context": m.max_context_tokens,
    }


_MODEL_COLUMNS = [
    Column("name", "model"),
    Column("layers", "layers", fmt_int),
    Column("mixers", "mixers (kind:layers)"),
    Column("kv_bytes_per_token", "KV B/token", fmt_int),
    Column("window_cap_mib", "SWA cap MiB", fmt_float(1)),
    Column("fixed_state_mib", "state MiB", fmt_float(1)),
    Column("params_total_b", "params B", fmt_float(1)),
    Column("params_active_b", "active B", fmt_float(1)),
    Column("weight_gb", "weights GB", fmt_float(0)),
    Column("max_context", "context", fmt_int),
]


def models_list_view(models: list[ModelProfile]) -> Report:
    return Report(title="Model profiles", columns=_MODEL_COLUMNS, rows=[model_summary(m) for m in models],
                  notes=["params: counted from the architecture (matrices and embeddings); KV in the model's KV dtype"])


def _show(report: Report, kind: str, profile, *extra_notes: str) -> Report:
    """One profile's summary row, with its description, assumptions and sources as notes;
    the full profile in JSON."""
    report.title = f"{kind} profile: {profile.name}"
    report.notes = [profile.description, *(f"assumption: {a}" for a in profile.assumptions),
                    *(f"source: {s}" for s in profile.sources), *extra_notes]
    report.extra = {"profile": profile.model_dump(mode="json", exclude_none=True)}
    return report


def model_show_view(m: ModelProfile) -> Report:
    return _show(models_list_view([m]), "Model", m)


def hardware_summary(h: HardwareProfile) -> dict:
    e = h.efficiency
    return {
        "name": h.name,
        "bf16_tflops": h.peak_tflops.bf16,
        "fp8_tflops": h.peak_tflops.fp8 or 0.0,
        "fp4_tflops": h.peak_tflops.fp4 or 0.0,
        "memory_gb": h.memory_gb,
        "bandwidth_tb_per_s": h.memory_bandwidth_tb_per_s,
        "scale_up_gb_per_s": h.scale_up_gb_per_s,
        "eff_matmul": e.matmul,
        "eff_attention": e.attention,
        "eff_memory": e.memory,
        "prefill_overhead_s": e.prefill_overhead_s,
        "usd_per_gpu_hour": h.price_usd_per_gpu_hour or 0.0,
    }


_HW_COLUMNS = [
    Column("name", "hardware"),
    Column("bf16_tflops", "bf16 TFLOPS", fmt_float(0)),
    Column("fp8_tflops", "fp8 TFLOPS", fmt_float(0)),
    Column("fp4_tflops", "fp4 TFLOPS", fmt_float(0)),
    Column("memory_gb", "memory GB", fmt_float(2)),
    Column("bandwidth_tb_per_s", "TB/s", fmt_float(2)),
    Column("scale_up_gb_per_s", "scale-up GB/s", fmt_float(0)),
    Column("eff_matmul", "eff mm", fmt_float(3)),
    Column("eff_attention", "eff attn", fmt_float(3)),
    Column("eff_memory", "eff mem", fmt_float(2)),
    Column("prefill_overhead_s", "overhead s", fmt_float(2)),
    Column("usd_per_gpu_hour", "$/GPU-h (example)", fmt_float(2)),
]


def hardware_list_view(profiles: list[HardwareProfile]) -> Report:
    return Report(title="Hardware profiles (per chip; dense peaks)", columns=_HW_COLUMNS,
                  rows=[hardware_summary(h) for h in profiles],
                  notes=["0 = not available; prices are editable examples, not quotes"])


def hardware_show_view(h: HardwareProfile) -> Report:
    return _show(hardware_list_view([h]), "Hardware", h, *([h.price_note] if h.price_note else []))


def calibration_view(result: CalibrationResult) -> Report:
    rows = [
        {
            "length": p.length_tokens,
            "measured_s": p.measured_s,
            "predicted_s": round(p.predicted_s, 6),
            "error_pct": round(100 * p.error, 3),
            "measured_kv_bytes": p.measured_kv_bytes if p.measured_kv_bytes is not None else "",
            "model_kv_bytes": int(round(p.model_kv_bytes)),
        }
        for p in result.points
    ]
    fitted = ", ".join(f"{k} {result.before[k]:.4g} -> {v:.4g}" for k, v in result.fitted.items())
    return Report(
        title=f"Calibration of {result.hardware.name} on {result.model} ({result.instance})",
        columns=[
            Column("length", "length (tokens)", fmt_int),
            Column("measured_s", "measured (s)", fmt_float(3)),
            Column("predicted_s", "fitted (s)", fmt_float(3)),
            Column("error_pct", "error %", fmt_float(2)),
            Column("measured_kv_bytes", "measured KV (B)", lambda v: f"{v:,.0f}" if v != "" else "-"),
            Column("model_kv_bytes", "model KV (B)", fmt_int),
        ],
        rows=rows,
        meta={"model": result.model, "hardware": result.hardware.name, "instance": result.instance},
        notes=[f"fitted: {fitted}",
               f"max |error| {100 * result.max_abs_error:.2f}%, rms {100 * result.rms_error:.2f}%"],
        extra={"fitted": result.fitted, "before": result.before},
    )


def _tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def _opt(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def plan_json(result) -> dict:
    """The plan as JSON: operating point, baselines, ratios, marginal values, Jensen gap."""
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    doc = {
        "scenario": inputs.scenario.name,
        "model": inputs.model.name,
        "mode": result.mode,
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
            "link_utilisation": round(pt.link_utilisation, 6),
            "usd_per_hour": _opt(pt.usd_per_hour, 2),
            "usd_per_million_output_tokens": _opt(pt.usd_per_million_output_tokens, 4),
        },
        "baselines": {
            name: {"n_prfaas": b.n_prfaas, "n_p": b.n_p, "n_d": b.n_d, "lambda_max": round(b.lambda_max, 6),
                   "binding": b.binding, "usd_per_hour": _opt(b.usd_per_hour, 2),
                   "ratio_prfaas_pd_over": round(pt.lambda_max / b.lambda_max, 6) if b.lambda_max > 0 else None}
            for name, b in result.baselines.items()
        },
        "ratios_vs_homogeneous": {
            "prfaas_pd": round(result.ratio("prfaas_pd"), 6),
            "naive_heterogeneous": round(result.ratio("naive_heterogeneous"), 6),
        },
        "marginal_lambda": {k: round(v, 6) for k, v in result.marginal.items()},
        "jensen": {
            "lambda_exact": round(result.lambda_by_mode("exact"), 6),
            "lambda_paper": round(result.lambda_by_mode("paper"), 6),
            "gap": round(result.jensen_gap, 6),
            "exact_lambda_at_paper_point": _opt(result.exact_lambda_at_paper_point, 6),
        },
        "latency": latency_json(result),
        "decode": {"tokens_per_s_per_instance": round(inputs.decode_tokens_per_s_per_instance, 3),
                   "source": inputs.decode_source, "output_mean_tokens": inputs.output_mean_tokens},
        "notes": result.notes,
    }
    return doc


_LABELS = {"prfaas_pd": "PrfaaS-PD", "homogeneous": "homogeneous", "homogeneous_equal_cost": "homog. equal-$",
           "naive_heterogeneous": "naive heterog.", "prfaas_pd @ operating": "PrfaaS-PD @ op."}


_BOUND_LABELS = {"prfaas_compute": "PrfaaS", "link": "link", "pd_prefill": "PD-P", "pd_decode": "PD-D"}


def _label(name: str) -> str:
    return _LABELS.get(name, name)


def plan_view(result) -> Report:
    """Deployments as rows (table and CSV), the operating point and diagnostics as sections."""
    pt, st = result.point, result.point.stages
    inputs = result.inputs
    rows = [{
        "deployment": "prfaas_pd", "threshold_tokens": pt.threshold_tokens, "p": round(pt.p, 6),
        "n_prfaas": pt.n_prfaas, "n_p": pt.n_p, "n_d": pt.n_d, "theta_prfaas": round(st.theta_prfaas, 6),
        "theta_pdp": round(st.theta_pdp, 6), "theta_pdd": round(st.theta_pdd, 6),
        "lambda_max": round(st.lambda_max, 6), "binding": st.binding, "egress_gbps": round(st.egress_gbps, 4),
        "usd_per_hour": _opt(pt.usd_per_hour, 2), "ratio_vs_homogeneous": round(result.ratio("prfaas_pd"), 6),
    }]
    home = result.baselines["homogeneous"].lambda_max
    for name, b in result.baselines.items():
        rows.append({
            "deployment": name, "threshold_tokens": None, "p": 1.0 if name == "naive_heterogeneous" else 0.0,
            "n_prfaas": b.n_prfaas, "n_p": b.n_p, "n_d": b.n_d, "theta_prfaas": None, "theta_pdp": None,
            "theta_pdd": None, "lambda_max": round(b.lambda_max, 6), "binding": b.binding, "egress_gbps": None,
            "usd_per_hour": _opt(b.usd_per_hour, 2),
            "ratio_vs_homogeneous": round(b.lambda_max / home, 6) if home > 0 else None,
        })
    num = lambda d: (lambda v: "-" if v is None else f"{v:,.{d}f}")
    columns = [
        Column("deployment", "deployment", _label, justify="left", min_width=14),
        Column("n_prfaas", "N_prfaas", num(0)), Column("n_p", "N_p", num(0)), Column("n_d", "N_d", num(0)),
        Column("theta_prfaas", "Θ_prfaas", num(2)), Column("theta_pdp", "Θ_pdp", num(2)),
        Column("theta_pdd", "Θ_pdd", num(2)), Column("lambda_max", "Λ_max", num(2)),
        Column("binding", "bound by", lambda v: _BOUND_LABELS.get(v, v), justify="left"), Column("usd_per_hour", "$/h", num(0)),
        Column("ratio_vs_homogeneous", "vs homog", lambda v: "-" if v is None else f"{v:.2f}x"),
    ]
    csv_columns = columns[:1] + [Column("threshold_tokens", "t"), Column("p", "p")] + columns[1:8] + [
        Column("binding", "binding"), Column("egress_gbps", "egress"), *columns[9:]]
    link = inputs.scenario.link
    details = [
        ("threshold t", f"{pt.threshold_tokens:,.0f} tokens ({format_tokens(pt.threshold_tokens)})"),
        ("offloaded share p", f"{pt.p:.3f}"),
        ("l_long / l_short", f"{_tokens(pt.l_long_tokens)} / {_tokens(pt.l_short_tokens)} tokens"),
        ("instances", f"N_prfaas {pt.n_prfaas} x {inputs.prfaas.instance.label}, N_p {pt.n_p} + N_d {pt.n_d} "
                      f"x {inputs.pd.instance.label}"),
        ("GPUs", ", ".join(f"{n} {k}" for k, n in pt.gpus.items()) or "-"),
        ("Λ_max", f"{st.lambda_max:.3f} req/s, bound by {st.binding}; tight: {', '.join(pt.tight)}"),
        ("egress", f"{st.egress_gbps:.2f} Gbps = {100 * pt.link_utilisation:.1f}% of {link.bandwidth_gbps:g} Gbps "
                   f"(usable {link.usable_gbps:g})"),
        ("cost", "-" if pt.usd_per_hour is None else f"${pt.usd_per_hour:,.0f}/hour" + (
            "" if pt.usd_per_million_output_tokens is None
            else f", ${pt.usd_per_million_output_tokens:,.3f} per million output tokens")),
        ("decode", f"{inputs.decode_tokens_per_s_per_instance:,.0f} tokens/s per PD-D instance "
                   f"({inputs.decode_source}); mean output {inputs.output_mean_tokens:,.0f} tokens"),
    ]
    for cluster in (inputs.prfaas, inputs.pd):
        cal = cluster.calibration
        if cal is not None:
            fitted = ", ".join(f"{k} {v:.3g}" for k, v in cal.fitted.items())
            details.append((f"{cluster.role} calibration", f"{cluster.hardware_name} fitted on {len(cal.points)} points "
                                                            f"({fitted}); max error {100 * cal.max_abs_error:.2f}%"))
    if result.marginal:
        m = result.marginal
        details.append(("marginal Λ_max", f"+1 Gbps: {m['per_gbps']:+.4f}, +1 PrfaaS instance: "
                                      f"{m['per_prfaas_instance']:+.3f}, +1 PD instance: {m['per_pd_instance']:+.3f} req/s"))
    exact, paper = result.lambda_by_mode("exact"), result.lambda_by_mode("paper")
    details.append(("Jensen gap", f"exact {exact:.3f} vs paper {paper:.3f} req/s: the paper's mean-length "
                                  f"evaluation overstates Λ_max by {100 * result.jensen_gap:.1f}% (T_prefill is convex)"))
    section = Report(title="Operating point", columns=[Column("item", "item"), Column("value", "value")],
                     rows=[{"item": k, "value": v} for k, v in details])
    sections = [section, latency_view(result)]
    return Report(
        title=f"PrfaaS plan: {inputs.scenario.name} ({result.mode} mode; rates in req/s)",
        columns=columns, rows=rows, csv_columns=csv_columns,
        meta={"scenario": inputs.scenario.name, "model": inputs.model.name, "mode": result.mode},
        notes=list(result.notes), json_doc=plan_json(result), sections=sections,
    )


PAPER_TTFT_REDUCTION = {"mean": 0.50, "p90": 0.64}  # PrfaaS-PD vs homogeneous PD, paper section 4


def _lat_row(name: str, lat) -> dict:
    num = lambda v: None if v is None or not np.isfinite(v) else round(float(v), 4)
    return {"deployment": name, "rate_rps": round(lat.rate_rps, 4), "ttft_mean_s": num(lat.overall_mean_s),
            "ttft_p90_s": num(lat.overall_p90_s), "ttft_p99_s": num(lat.overall_p99_s),
            "local_mean_s": num(lat.local.mean_s), "remote_mean_s": num(lat.remote.mean_s),
            "tpot_ms": num(lat.tpot_ms), "stable": lat.stable}


def ttft_reduction(result) -> dict[str, float | None]:
    """1 - PrfaaS-PD / homogeneous TTFT (mean and P90) at the common rate."""
    a, b = result.common_latency["prfaas_pd"], result.common_latency["homogeneous"]
    ratio = lambda x, y: 1 - x / y if np.isfinite(x) and np.isfinite(y) and y > 0 else None
    return {"mean": ratio(a.overall_mean_s, b.overall_mean_s), "p90": ratio(a.overall_p90_s, b.overall_p90_s)}


def latency_json(result) -> dict:
    red = ttft_reduction(result)
    return {
        "operating": _lat_row("prfaas_pd", result.operating_latency),
        "goodput_rps": result.goodput_rps,
        "slo": result.inputs.scenario.slo.model_dump() if result.inputs.scenario.slo else None,
        "common_rate_rps": round(result.common_rate_rps, 4),
        "at_common_rate": {n: _lat_row(n, lat) for n, lat in result.common_latency.items()},
        "ttft_reduction_vs_homogeneous": {k: None if v is None else round(v, 4) for k, v in red.items()},
        "paper_ttft_reduction_vs_homogeneous": PAPER_TTFT_REDUCTION,
    }


def latency_view(result) -> Report:
    """TTFT and TPOT of every deployment at one common rate, and of the plan at its operating rate."""
    sec = lambda v: "-" if v is None else f"{v:,.2f}"
    rows = [_lat_row(n, lat) for n, lat in result.common_latency.items()]
    op = _lat_row("prfaas_pd @ operating", result.operating_latency)
    rows.insert(0, op)
    red = ttft_reduction(result)
    pct = lambda v: "n/a" if v is None else f"{-100 * v:+.0f}%"
    notes = [f"common rate {result.common_rate_rps:.3f} req/s = {result.inputs.scenario.latency.operating_load:g} x the "
             f"lowest Λ_max of the three deployments; operating rate {result.operating_rate_rps:.3f} req/s"
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


def _pct_diff(sim, closed) -> float | None:
    """(closed - simulated) / simulated, or None when either is missing or infinite."""
    if sim is None or closed is None or not np.isfinite(closed) or not np.isfinite(sim) or sim == 0:
        return None
    return round((closed - sim) / sim, 4)


def _finite(value) -> float | None:
    return None if value is None or not np.isfinite(value) else round(float(value), 4)


def _stability(stable: bool | None) -> str:
    return "unknown (too few samples)" if stable is None else ("stable" if stable else "growing")


def simulation_view(run) -> Report:
    """TTFT and TPOT per path from the simulator beside the closed form at the same rate."""
    sim, closed = run.result, run.closed_form
    closed_paths = {"local": closed.local, "remote": closed.remote}
    rows = []
    for path in ("local", "remote", "overall"):
        t = sim.ttft[path]
        c_mean = closed.overall_mean_s if path == "overall" else closed_paths[path].mean_s
        c_p90 = closed.overall_p90_s if path == "overall" else closed_paths[path].p90_s
        rows.append({"path": path, "requests": t["count"], "ttft_mean_s": t["mean_s"], "ttft_p50_s": t["p50_s"],
                     "ttft_p90_s": t["p90_s"], "ttft_p99_s": t["p99_s"], "closed_mean_s": _finite(c_mean),
                     "closed_p90_s": _finite(c_p90), "tpot_mean_ms": sim.tpot[path]["mean_ms"]})
    sec = lambda v: "-" if v is None else f"{v:,.2f}"
    cfg = sim.config
    growth = sim.queue_growth
    notes = [
        f"offered {sim.offered_rps:.3f} req/s, achieved {sim.achieved_rps:.3f} req/s "
        f"(closed-form Λ_max {run.lambda_max:.3f}); queues {_stability(sim.stable)} "
        f"(mean total queue in the first / last 20%: {sec(growth.get('first_mean'))} / {sec(growth.get('last_mean'))})",
        f"egress mean {sim.egress.get('mean_gbps') or 0:.2f} Gbps (closed form "
        f"{closed.link_utilisation * run.plan.inputs.scenario.link.usable_gbps:.2f}), max {sim.egress.get('max_gbps') or 0:.2f}; "
        f"max link backlog {(sim.egress.get('max_link_backlog_bytes') or 0) / 1e9:.2f} GB; policy {cfg.policy}, "
        f"threshold changed {len(sim.threshold_changes) - 1} times",
        f"{cfg.requests:,} requests, seed {cfg.seed}, arrivals {cfg.arrivals}"
        + (f" (cv {cfg.cv:g})" if cfg.arrivals == "gamma" else ""),
    ]
    return Report(
        title=f"Simulation: {run.deployment.name} at {cfg.rate_rps:.3f} req/s",
        columns=[Column("path", "path", justify="left"), Column("requests", "requests", fmt_int),
                 Column("ttft_mean_s", "TTFT mean s", sec), Column("ttft_p50_s", "P50 s", sec),
                 Column("ttft_p90_s", "P90 s", sec), Column("ttft_p99_s", "P99 s", sec),
                 Column("closed_mean_s", "closed-form mean s", sec), Column("closed_p90_s", "closed-form P90 s", sec),
                 Column("tpot_mean_ms", "TPOT mean ms", sec)],
        rows=rows, notes=notes,
        json_doc={**sim.to_json_dict(timeseries=False), "lambda_max": run.lambda_max,
                  "closed_form": {r["path"]: {"mean_s": r["closed_mean_s"], "p90_s": r["closed_p90_s"]} for r in rows}},
    )


def timeseries_report(run) -> Report:
    rows = run.result.timeseries_rows()
    return Report(title="Simulation time series", columns=[Column(k, k) for k in (rows[0] if rows else {})], rows=rows)


def validation_view(runs) -> Report:
    """Closed form beside simulation at several loads, with relative differences."""
    rows = []
    for run in runs:
        sim, closed = run.result, run.closed_form
        rate = sim.config.rate_rps
        closed_tput = min(rate, run.lambda_max)
        t = sim.ttft["overall"]
        rows.append({
            "load": round(rate / run.lambda_max, 4), "rate_rps": round(rate, 4),
            "closed_throughput_rps": round(closed_tput, 4), "sim_throughput_rps": round(sim.achieved_rps, 4),
            "throughput_diff": _pct_diff(sim.achieved_rps, closed_tput),
            "closed_ttft_mean_s": _finite(closed.overall_mean_s), "sim_ttft_mean_s": t["mean_s"],
            "ttft_mean_diff": _pct_diff(t["mean_s"], closed.overall_mean_s),
            "closed_ttft_p90_s": _finite(closed.overall_p90_s), "sim_ttft_p90_s": t["p90_s"],
            "ttft_p90_diff": _pct_diff(t["p90_s"], closed.overall_p90_s),
            "sim_stable": sim.stable,
        })
    sec = lambda v: "overload" if v is None else f"{v:,.2f}"
    pct = lambda v: "-" if v is None else f"{100 * v:+.1f}%"
    cfg = runs[0].result.config
    return Report(
        title="Closed form vs simulation",
        columns=[Column("load", "load", lambda v: f"{v:.2f}"), Column("rate_rps", "rate", fmt_float(3)),
                 Column("closed_throughput_rps", "closed tput", fmt_float(3)),
                 Column("sim_throughput_rps", "sim tput", fmt_float(3)), Column("throughput_diff", "Δ", pct),
                 Column("closed_ttft_mean_s", "closed mean s", sec), Column("sim_ttft_mean_s", "sim mean s", sec),
                 Column("ttft_mean_diff", "Δ", pct), Column("closed_ttft_p90_s", "closed P90 s", sec),
                 Column("sim_ttft_p90_s", "sim P90 s", sec), Column("ttft_p90_diff", "Δ", pct),
                 Column("sim_stable", "sim queues", _stability)],
        rows=rows,
        notes=[f"load = rate / closed-form Λ_max ({runs[0].lambda_max:.3f} req/s); Δ = (closed - simulated) / simulated; "
               f"{cfg.requests:,} requests per load, seed {cfg.seed}, arrivals {cfg.arrivals}"
               + (f" (cv {cfg.cv:g})" if cfg.arrivals == "gamma" else ""),
               "closed-form throughput = min(rate, Λ_max); closed-form TTFT is infinite at or above Λ_max"],
    )
