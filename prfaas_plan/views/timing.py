"""Reports of one instance: KV throughput, decode capacity, calibration."""

from __future__ import annotations

from ..report import Column, Report, fmt_float, fmt_int, unsigned_zero
from ..timing.calibrate import FAR_FIT_FACTOR, CalibrationResult, far_fitted
from ..timing.decode import DecodeCapacity
from ..timing.prefill import KvReport
from ..units import BYTES_PER_MIB, format_tokens
from .identity import csv_columns, instance_identity


def layout_chosen(given: bool, capacity: str) -> str:
    """How a prefill roofline's layout was chosen (``RooflinePrefill.layout``): given by the
    instance, else the fitting layout that is fastest for the roofline's capacity."""
    if given:
        return "the layout given (parallel)"
    return (
        "the fitting layout with the lowest one-prompt TTFT"
        if capacity == "per_request"
        else "the fitting layout with the lowest time per token in a saturated pass"
    )


def kv_layout_note(result: KvReport) -> str:
    """What the kv report's layout is for: the layout its one-prompt T_prefill is computed on
    (roofline), or, for measured points, the layout whose one-prompt roofline shapes the curve
    around them (``MeasuredPrefill._interp``; the points themselves hold on any layout)."""
    assert result.layout is not None  # kv_view adds this note only to a report with a layout
    lay = result.layout.label
    how = layout_chosen(result.instance.layout is not None, "per_request")
    if result.source != "measured":
        return f"; layout {lay}: the layout its one-prompt latency is computed on ({how})"
    return (
        f"; layout {lay}: the layout whose one-prompt roofline shapes the curve around the measured points "
        f"({how}), which says nothing of how they were measured; plan's Sources may name another for the same "
        "points: its pool's roofline layout"
    )


def kv_view(result: KvReport) -> Report:
    kv = result.kv_model
    ident = instance_identity(result.model.name, result.instance.hardware.name, result.instance.gpus, layout=result.layout)
    rows = [
        {
            **ident,
            "length_tokens": r.length_tokens,
            "kv_bytes": r.kv_bytes,
            "kv_mib": round(r.kv_bytes / BYTES_PER_MIB, 3),
            "prefill_s": round(r.prefill_s, 6),
            "phi_kv_gbps": round(r.phi_kv_gbps, 6),
        }
        for r in result.rows
    ]
    formula = (
        f"{kv.growing_bytes_per_token:,.0f} B/token x l"
        + (f" + window-bounded part up to {kv.window_cap_bytes / BYTES_PER_MIB:,.2f} MiB" if kv.windows else "")
        + f" + {kv.fixed_bytes / BYTES_PER_MIB:,.2f} MiB fixed state per request"
    )
    if result.kv_source == "measured":  # the table shows the measured sizes: the formula is not theirs
        first = result.rows[0]
        arch = int(round(float(kv.bytes_at([first.length_tokens])[0])))
        kv_note = (
            f"S_kv: the profile's measured sizes (PCHIP-interpolated along the architecture's shape), as the "
            f"planner uses them; the model architecture gives S_kv(l) = {formula} ({arch:,} B at "
            f"{first.length_tokens:,} tokens against {first.kv_bytes:,} B measured)"
        )
    else:
        kv_note = f"S_kv(l) = {formula} (model architecture)"
    notes = [
        kv_note,
        f"T_prefill source: {result.source}"
        + (
            " (profile's measured points, PCHIP-interpolated; roofline shape outside them)"
            if result.source == "measured"
            else " (per-layer roofline with the hardware profile's efficiency factors; one prompt alone)"
        )
        + (kv_layout_note(result) if result.layout is not None else ""),
        "Phi_kv = S_kv / T_prefill in decimal Gbps; K = 1024 tokens; MiB = 2^20 B",
    ]
    return Report(
        title=f"KV throughput: {result.model.name} on {result.instance.label}",
        columns=[
            Column("length_tokens", "length (tokens)", fmt_int, keep=True),
            Column("kv_bytes", "S_kv (bytes)", fmt_int),
            Column("kv_mib", "S_kv (MiB)", fmt_float(1)),
            Column("prefill_s", "T_prefill (s)", fmt_float(3)),
            Column("phi_kv_gbps", "Phi_kv (Gbps)", fmt_float(2)),
        ],
        rows=rows,
        csv_columns=csv_columns(rows),
        meta={
            "model": result.model.name,
            "hardware": result.instance.hardware.name,
            "gpus": result.instance.gpus,
            "source": result.source,
        },
        notes=notes,
        extra={
            "kv_model": {
                "growing_bytes_per_token": kv.growing_bytes_per_token,
                "window_cap_bytes": kv.window_cap_bytes,
                "fixed_bytes": kv.fixed_bytes,
            },
            "kv_source": result.kv_source,
        },
    )


def decode_view(d: DecodeCapacity, tpot_limit_ms: float | None) -> Report:
    from ..timing.estimate import Budget  # the estimate model only here: plan's report uses this module too
    from .estimate import budget_row

    row = {
        **instance_identity(d.model, d.hardware, d.gpus, layout=d.layout),
        "context_tokens": d.context_tokens,
        "batch_requests": d.batch_size,
        "bs_max_memory_requests": d.bs_max_memory,
        "limited_by": d.limited_by,
        "step_ms": round(d.step_s * 1e3, 4),
        "tpot_ms": round(d.tpot_ms, 4),
        "tokens_per_s": round(d.tokens_per_s, 3),
        "per_user_tokens_per_s": round(d.per_user_tokens_per_s, 3),
        "weight_gb_per_chip": round(d.weight_bytes / 1e9, 3),
        "kv_per_request_mib_per_chip": round(d.kv_bytes_per_request / BYTES_PER_MIB, 3),
    }
    notes = [
        f"usable memory {d.usable_memory_bytes / 1e9:,.1f} GB per chip (capacity x memory_usable_fraction); "
        "BS_max = attention groups x (usable - weights per chip) / KV per chip of one request",
        f"tokens/s source: {d.source}"
        + (
            " (the profile's measured decode throughput)"
            if d.source == "measured"
            else " (BS x tokens per step / T_decode(BS) from the per-kernel roofline)"
        ),
        "TPOT = T_decode / tokens accepted per step; per-user tokens/s = 1 / TPOT",
    ]
    if tpot_limit_ms is not None:
        notes.append(f"TPOT limit {tpot_limit_ms:g} ms")
    return Report(
        title=f"Decode: {d.model} on {d.instance} at context {format_tokens(d.context_tokens)}",
        columns=[
            Column("context_tokens", "context (tokens)", fmt_int, keep=True),
            Column("layout", "layout", lambda v: "-" if v is None else v, justify="left"),
            Column("batch_requests", "batch", fmt_int),
            Column("bs_max_memory_requests", "BS_max (memory)", fmt_int),
            Column("limited_by", "limited by"),
            Column("step_ms", "T_decode (ms)", fmt_float(2)),
            Column("tpot_ms", "TPOT (ms)", fmt_float(2)),
            Column("tokens_per_s", "tokens/s", fmt_float(0)),
            Column("per_user_tokens_per_s", "tok/s/user", fmt_float(1)),
            Column("weight_gb_per_chip", "weights/chip (GB)", fmt_float(1)),
            Column("kv_per_request_mib_per_chip", "KV/request/chip (MiB)", fmt_float(1)),
        ],
        rows=[row],
        csv_columns=csv_columns([row]),
        meta={"model": d.model, "instance": d.instance, "source": d.source},
        notes=notes,
        extra={}
        if d.cost is None
        else {"parallel": d.layout.as_dict(), "budget": budget_row(Budget.of("decode step", d.layout, d.batch_size, d.cost))},
    )


def calibration_view(result: CalibrationResult) -> Report:
    joint = len({p.model for p in result.points}) > 1 or len({p.gpus for p in result.points}) > 1
    rows = [
        {
            **instance_identity(p.model, result.hardware.name, p.gpus),
            "length_tokens": p.length_tokens,
            "measured_s": p.measured_s,
            "predicted_s": round(p.predicted_s, 6),
            "error_pct": unsigned_zero(round(100 * p.error, 3)),
            "measured_kv_bytes": p.measured_kv_bytes,  # None: not measured (null in JSON, empty in CSV)
            "model_kv_bytes": int(round(p.model_kv_bytes)),
        }
        for p in result.points
    ]

    spare = len(result.points) - len(result.fitted)
    missing = (
        "no standard error: as many parameters as points"
        if spare <= 0
        else "no standard error: at a bound of its range, or not determined by these points"
    )

    def fitted_text(k: str, v: float) -> str:
        sd = result.uncertainty.get(k)
        return f"{k} {result.before[k]:.4g} -> {v:.4g}" + (f" +/- {sd:.2g}" if sd is not None else f" ({missing})")

    any_sd = any(result.uncertainty.get(k) is not None for k in result.fitted)
    notes = [
        f"fitted: {', '.join(fitted_text(k, v) for k, v in result.fitted.items())}"
        + (" (+/- one standard error)" if any_sd else ""),
        f"max |error| {100 * result.max_abs_error:.2f}%, rms {100 * result.rms_error:.2f}%",
    ]
    for name, factor in far_fitted(result.fitted, result.before):
        notes.append(
            f"the fit puts {name} at {factor:.3g}x the profile's (beyond {FAR_FIT_FACTOR:g}x either way): are the points "
            "of this hardware, chip count and layout, and in seconds?"
        )
    if result.leave_one_model_out:
        loo = ", ".join(
            f"{m} {100 * e:.1f}%" if e is not None else f"{m} not determined without it"
            for m, e in result.leave_one_model_out.items()
        )
        notes.append(f"leave-one-model-out max |error| (fitted on the other models): {loo}")
    return Report(
        title=f"Calibration of {result.hardware.name} on {result.model} ({result.instance})",
        columns=([Column("model", "model", keep=True), Column("gpus_per_instance", "GPUs", fmt_int, keep=True)] if joint else [])
        + [
            Column("length_tokens", "length (tokens)", fmt_int, keep=True),
            Column("measured_s", "measured (s)", fmt_float(3)),
            Column("predicted_s", "fitted (s)", fmt_float(3)),
            Column("error_pct", "error %", fmt_float(2)),
            Column("measured_kv_bytes", "measured KV (B)", lambda v: f"{v:,.0f}" if v is not None else "-"),
            Column("model_kv_bytes", "model KV (B)", fmt_int),
        ],
        rows=rows,
        csv_columns=csv_columns(rows),
        meta={"model": result.model, "hardware": result.hardware.name, "instance": result.instance},
        notes=notes,
        extra={
            "fitted": result.fitted,
            "before": result.before,
            "uncertainty": result.uncertainty,
            "leave_one_model_out": result.leave_one_model_out,
        },
    )
