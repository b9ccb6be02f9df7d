"""The report of ``prfaas-plan estimate``: one instance as a benchmark would publish it, and where
the time of a prefill pass and of a decode step goes."""

from __future__ import annotations

from ..report import Column, Report, fmt_float, fmt_int
from ..timing.estimate import ESTIMATE_FIGURES, Budget, Estimate
from ..timing.uncertainty import LEVEL
from .identity import csv_columns, instance_identity

BUDGET_COLUMNS = [
    Column("job", "pass", keep=True),
    Column("layout", "layout"),
    Column("tokens", "tokens", fmt_int),
    Column("ms", "time (ms)", fmt_float(2)),
    Column("compute_ms", "compute", fmt_float(2)),
    Column("memory_ms", "memory", fmt_float(2)),
    Column("communication_ms", "communication", fmt_float(2)),
    Column("overhead_ms", "overhead", fmt_float(2)),
    Column("binding", "binds"),
    Column("scale_up_gb_per_chip", "scale-up GB/chip", fmt_float(3)),
    Column("nic_gb_per_chip", "NIC GB/chip", fmt_float(3)),
]


def budget_row(b: Budget) -> dict:
    """A pass's time in ms per part, its binding part, and the decimal GB one chip exchanges."""
    return {
        "job": b.job,
        "layout": b.layout.label,
        "tokens": round(b.tokens),
        "ms": round(b.seconds * 1e3, 4),
        "compute_ms": round(b.compute_s * 1e3, 4),
        "memory_ms": round(b.memory_s * 1e3, 4),
        "communication_ms": round(b.communication_s * 1e3, 4),
        "overhead_ms": round(b.overhead_s * 1e3, 4),
        "binding": b.binding,
        "scale_up_gb_per_chip": round(b.scale_up_bytes / 1e9, 6),
        "nic_gb_per_chip": round(b.nic_bytes / 1e9, 6),
    }


# the figures of an estimate's row: (name, unit, Estimate figure, scale, per GPU, digits); the key is
# name + unit, and name + "_low" + unit and name + "_high" + unit its range (``Estimate.range_of``)
ROW_FIGURES = (
    ("ttft", "_s", "ttft_s", 1.0, False, 6),
    ("tpot", "_ms", "tpot_s", 1e3, False, 4),
    ("prefill", "_tokens_per_s", "prefill_tokens_per_s", 1.0, False, 3),
    ("prefill", "_tokens_per_s_per_gpu", "prefill_tokens_per_s", 1.0, True, 3),
    ("decode", "_tokens_per_s", "decode_tokens_per_s", 1.0, False, 3),
    ("decode", "_tokens_per_s_per_gpu", "decode_tokens_per_s", 1.0, True, 3),
    ("per_user", "_tokens_per_s", "per_user_tokens_per_s", 1.0, False, 3),
    ("e2e_output", "_tokens_per_s", "e2e_output_tokens_per_s", 1.0, False, 3),
    ("e2e_output", "_tokens_per_s_per_gpu", "e2e_output_tokens_per_s", 1.0, True, 3),
    ("e2e_steady_output", "_tokens_per_s", "e2e_steady_output_tokens_per_s", 1.0, False, 3),
    ("e2e_latency", "_s", "e2e_latency_s", 1.0, False, 4),
    ("ttft_at_load", "_s", "ttft_at_load_s", 1.0, False, 6),
    ("tpot_at_load", "_ms", "tpot_at_load_s", 1e3, False, 4),
    ("batch_prefill", "_s", "batch_prefill_s", 1.0, False, 4),
    ("batch_ttft", "_s", "batch_ttft_s", 1.0, False, 4),
)
RANGE_SHOWN = (
    ("TTFT (s)", "ttft", "_s"),
    ("TPOT (ms)", "tpot", "_ms"),
    ("prefill tok/s/GPU", "prefill", "_tokens_per_s_per_gpu"),
    ("decode tok/s/GPU", "decode", "_tokens_per_s_per_gpu"),
    ("tok/s/user", "per_user", "_tokens_per_s"),
    ("e2e tok/s/GPU", "e2e_output", "_tokens_per_s_per_gpu"),
    ("e2e latency (s)", "e2e_latency", "_s"),
)


def _figures(e: Estimate) -> dict:
    """Each of ``ROW_FIGURES``, then its low and its high."""
    out = {}
    for name, unit, figure, scale, per_gpu, digits in ROW_FIGURES:
        divide = e.gpus if per_gpu else 1
        low, high = e.range_of(figure)
        out[name + unit] = round(getattr(e, figure) * scale / divide, digits)
        out[f"{name}_low{unit}"] = round(low * scale / divide, digits)
        out[f"{name}_high{unit}"] = round(high * scale / divide, digits)
    return out


def uncertainty_json(e: Estimate) -> dict:
    """The band of each figure group: factors on the predicted speed and the rows they come from."""
    return {
        "engine": e.engine,
        "level": LEVEL,
        **{
            group: {
                "low_factor": round(b.low, 6),
                "high_factor": round(b.high, 6),
                "pool": b.pool,
                "rows": b.rows,
                "method": b.method,
            }
            for group, b in e.bands.items()
        },
    }


def range_rows(e: Estimate, row: dict) -> list[dict]:
    """One row per figure shown: its low, the model's figure and its high (the JSON row's), and the
    residuals behind its band."""
    groups = {name + unit: ESTIMATE_FIGURES[figure][0] for name, unit, figure, *_ in ROW_FIGURES}
    return [
        {
            "figure": label,
            "key": name + unit,
            "low": row[f"{name}_low{unit}"],
            "value": row[name + unit],
            "high": row[f"{name}_high{unit}"],
            "group": groups[name + unit],
            "pool": e.bands[groups[name + unit]].pool,
            "rows": e.bands[groups[name + unit]].rows,
        }
        for label, name, unit in RANGE_SHOWN
    ]


def _shown(value: float) -> str:
    """A figure of the range table: whole above 1,000, else 4 significant digits."""
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"


def range_view(rows: list[dict]) -> Report:
    return Report(
        title=f"Range of each figure ({LEVEL:.0%} empirical interval from published measurements; not a guarantee)",
        columns=[
            Column("figure", "figure", keep=True),
            Column("low", "low", _shown),
            Column("value", "model", _shown),
            Column("high", "high", _shown),
            Column("group", "group", justify="left"),
            Column("pool", "residuals", justify="left"),
            Column("rows", "rows", fmt_int),
        ],
        rows=rows,
    )


def _chunking_text(initial: int, smooth: float | None, applies: bool, layout: str) -> str:
    """How one prompt is chunked under SGLang's dynamic chunking, when it was asked for."""
    if smooth is None:
        return ""
    if not applies:
        return (
            f"; dynamic chunking (smooth factor {smooth:g}) not applied: SGLang runs it only on a pipeline (pp > 1), not {layout}"
        )
    if smooth == 0:
        return f", in fixed chunks of {initial:,} tokens (dynamic chunking's smooth factor 0 keeps them fixed)"
    return (
        f", in chunks from {initial:,} tokens shrinking as its prefix grows (SGLang's dynamic chunking, smooth factor {smooth:g})"
    )


def estimate_view(e: Estimate) -> Report:
    row = {
        **instance_identity(
            e.model, e.decode_capacity.hardware, e.gpus, prefill_layout=e.prefill.layout, decode_layout=e.decode.layout
        ),
        "input_tokens": e.input_tokens,
        "output_tokens": e.output_tokens,
        "concurrency_requests": e.concurrency,
        "kv_dtype": e.kv_dtype,
        **_figures(e),
        "offline_requests": None if e.offline is None else e.offline.requests,
        "offline_run_s": None if e.offline is None else round(e.offline.seconds, 4),
        "offline_mean_batch_requests": None if e.offline is None else round(e.offline.mean_batch_requests, 2),
        "measured_prefill_s": None if e.measured_prefill_s is None else round(e.measured_prefill_s, 6),
    }
    budgets = [budget_row(e.first_token), budget_row(e.prefill), budget_row(e.decode)]
    ranges = range_rows(e, row)
    d = e.decode_capacity
    notes = [
        f"prefill: saturated passes of {e.prefill.tokens:,.0f} tokens on {e.prefill.layout.label}; TTFT is one "
        f"prompt alone on an idle instance, on {e.first_token.layout.label}"
        + _chunking_text(*e.chunking, e.first_token.layout.label),
        f"decode: {e.concurrency:,} running requests ({e.concurrency_source}; memory holds {d.bs_max_memory:,} with "
        f"each request's KV reserved for input + output) at a mean context of {d.context_tokens:,} tokens, on "
        f"{e.decode.layout.label}; weights {d.weight_bytes / 1e9:,.1f} GB per chip",
        "e2e: offline, prefill and decode on the same chips (both on the decode layout); "
        + (
            "steady state (given a number of requests: an offline run of that many)"
            if e.offline is None
            else f"a run of {e.offline.requests:,} requests queued at once: {e.offline.seconds:,.1f} s over "
            f"{e.offline.iterations:,} iterations at a mean of {e.offline.mean_batch_requests:,.0f} running "
            f"({e.per_gpu(e.e2e_steady_output_tokens_per_s):,.0f} tok/s/GPU in the steady state)"
        )
        + f"; latency of the {e.concurrency:,} requests started together = their whole prefill "
        f"({e.batch_prefill_s:,.2f} s, on {e.decode.layout.label}, the chips that decode it) + (output - 1) x TPOT",
        f"at load: {e.load.concurrency:,} in flight, a new request admitted as one ends, its prompt's chunks mixed into "
        f"the running decodes' steps (timing.serving): TTFT {e.ttft_at_load_s:,.3f} s, mean TPOT "
        f"{e.tpot_at_load_s * 1e3:,.2f} ms ({e.load.decodes:,.1f} decoding, {e.load.mixed_fraction:.1%} of steps carry "
        "prompts)",
        f"range: low and high of each figure ({LEVEL:.0%} prediction interval of the instance model's residuals on "
        f"published measurements, by figure group and engine ({e.engine}), its coverage checked leave-one-out; an "
        "empirical interval, not a guarantee)",
        "time budget: the parts of one pass add up to its time; 'binds' is the largest part; 'first token' is "
        "one prompt alone (the TTFT, its pipeline fill counted in the parts of its stages)",
    ]
    notes.append(
        f"KV cache in {e.kv_dtype} (the precision given, else the engine's choice for a re-quantised "
        "checkpoint, else the model's own)"
    )
    if e.engine != "generic":
        notes.append(f"engine: {e.engine} (its defaults and its sourced kernel multipliers, timing/engines/{e.engine}.yaml)")
    if e.measured_prefill_s is not None:
        notes.append(
            f"measured: {e.model} has measured prefill points on {e.instance} (the model profile's, which kv and plan "
            f"use): {e.measured_prefill_s:,.3f} s for one {e.input_tokens:,}-token prompt, against the TTFT above; "
            "estimate's figures are the instance model's"
        )
    budget = Report(title="Time budget of one pass", columns=BUDGET_COLUMNS, rows=budgets)
    return Report(
        title=f"Estimate: {e.model} on {e.instance}",
        columns=[
            Column("input_tokens", "input", fmt_int, keep=True),
            Column("output_tokens", "output", fmt_int, keep=True),
            Column("concurrency_requests", "concurrency", fmt_int),
            Column("ttft_s", "TTFT (s)", fmt_float(3)),
            Column("tpot_ms", "TPOT (ms)", fmt_float(2)),
            Column("prefill_tokens_per_s_per_gpu", "prefill tok/s/GPU", fmt_float(0)),
            Column("decode_tokens_per_s_per_gpu", "decode tok/s/GPU", fmt_float(0)),
            Column("per_user_tokens_per_s", "tok/s/user", fmt_float(1)),
            Column("e2e_output_tokens_per_s_per_gpu", "e2e tok/s/GPU", fmt_float(0)),
            Column("e2e_latency_s", "e2e latency (s)", fmt_float(2)),
        ],
        csv_columns=csv_columns([row]),
        rows=[row],
        meta={"model": e.model, "instance": e.instance, "gpus": e.gpus},
        notes=notes,
        extra={"budget": budgets, "ranges": ranges, "uncertainty": uncertainty_json(e)},
        sections=[range_view(ranges), budget],
    )
