"""The report of ``prfaas-plan estimate``: one instance as a benchmark would publish it, and where
the time of a prefill pass and of a decode step goes."""

from __future__ import annotations

from ..report import Column, Report, fmt_float, fmt_int
from ..timing.estimate import Budget, Estimate
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


def estimate_view(e: Estimate) -> Report:
    row = {
        **instance_identity(e.model, e.decode_capacity.hardware, e.gpus, prefill_layout=e.prefill.layout,
                            decode_layout=e.decode.layout),
        "input_tokens": e.input_tokens,
        "output_tokens": e.output_tokens,
        "concurrency_requests": e.concurrency,
        "ttft_s": round(e.ttft_s, 6),
        "tpot_ms": round(e.tpot_s * 1e3, 4),
        "prefill_tokens_per_s": round(e.prefill_tokens_per_s, 3),
        "prefill_tokens_per_s_per_gpu": round(e.per_gpu(e.prefill_tokens_per_s), 3),
        "decode_tokens_per_s": round(e.decode_tokens_per_s, 3),
        "decode_tokens_per_s_per_gpu": round(e.per_gpu(e.decode_tokens_per_s), 3),
        "per_user_tokens_per_s": round(e.per_user_tokens_per_s, 3),
        "e2e_output_tokens_per_s": round(e.e2e_output_tokens_per_s, 3),
        "e2e_output_tokens_per_s_per_gpu": round(e.per_gpu(e.e2e_output_tokens_per_s), 3),
        "e2e_steady_output_tokens_per_s": round(e.e2e_steady_output_tokens_per_s, 3),
        "e2e_latency_s": round(e.e2e_latency_s, 4),
        "offline_requests": None if e.offline is None else e.offline.requests,
        "offline_run_s": None if e.offline is None else round(e.offline.seconds, 4),
        "offline_mean_batch_requests": None if e.offline is None else round(e.offline.mean_batch_requests, 2),
    }
    budgets = [budget_row(e.first_token), budget_row(e.prefill), budget_row(e.decode)]
    d = e.decode_capacity
    notes = [
        f"prefill: saturated passes of {e.prefill.tokens:,.0f} tokens on {e.prefill.layout.label}; TTFT is one "
        f"prompt alone on an idle instance, on {e.first_token.layout.label}",
        f"decode: {e.concurrency:,} running requests ({e.concurrency_source}; memory holds {d.bs_max_memory:,} with "
        f"each request's KV reserved for input + output) at a mean context of {d.context_tokens:,} tokens, on "
        f"{e.decode.layout.label}; weights {d.weight_bytes / 1e9:,.1f} GB per chip",
        "e2e: offline, prefill and decode on the same chips (both on the decode layout); " + (
            "steady state (give --requests for a run of that many)" if e.offline is None else
            f"a run of {e.offline.requests:,} requests queued at once: {e.offline.seconds:,.1f} s over "
            f"{e.offline.iterations:,} iterations at a mean of {e.offline.mean_batch_requests:,.0f} running "
            f"({e.per_gpu(e.e2e_steady_output_tokens_per_s):,.0f} tok/s/GPU in the steady state)")
        + f"; latency of the {e.concurrency:,} requests started together = their whole prefill "
          f"({e.batch_prefill_s:,.2f} s, on {e.first_token.layout.label}) + (output - 1) x TPOT",
        "time budget: the parts of one pass add up to its time; 'binds' is the largest part; 'first token' is "
        "one prompt alone (the TTFT, its pipeline fill counted in the parts of its stages)",
    ]
    if e.engine != "generic":
        notes.append(f"engine: {e.engine} (its defaults and kernel efficiencies, timing/engines/{e.engine}.yaml)")
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
        extra={"budget": budgets},
        sections=[budget],
    )
