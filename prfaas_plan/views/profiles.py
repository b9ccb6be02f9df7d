"""Reports of the shipped and user profiles: model and hardware lists and details."""

from __future__ import annotations

from ..accounting.kinds import mixer_of
from ..accounting.kv import KvModel
from ..accounting.params import count_params, weight_bytes
from ..choices import ComputeDtype
from ..profiles.hardware import FALLBACK, HardwareProfile
from ..profiles.model import ModelProfile, expand_layers
from ..report import Column, Report, fmt_float, fmt_int, fmt_opt
from ..units import BYTES_PER_MIB


def model_summary(m: ModelProfile) -> dict:
    """A model's row: its name (the identity), then figures with their units in the keys
    (parameter counts in billions, weights in decimal GB, KV in bytes and MiB)."""
    kv = KvModel.of(m)
    counts = count_params(m)
    layers = expand_layers(m)
    kinds: dict[str, int] = {}
    for layer in layers:
        kind = mixer_of(layer.mixer, m.dtypes).label
        kinds[kind] = kinds.get(kind, 0) + 1
    return {
        "model": m.name,
        "layers": len(layers),
        "mixers": ", ".join(f"{k}:{v}" for k, v in kinds.items()),
        "kv_bytes_per_token": kv.growing_bytes_per_token,
        "window_cap_mib": round(kv.window_cap_bytes / BYTES_PER_MIB, 3),
        "fixed_state_mib": round(kv.fixed_bytes / BYTES_PER_MIB, 3),
        "params_total_billions": round(counts.total / 1e9, 2),
        "params_active_billions": round(counts.active / 1e9, 2),
        "weight_gb": round(weight_bytes(m) / 1e9, 1),
        "max_context_tokens": m.max_context_tokens,
    }


_MODEL_COLUMNS = [
    Column("model", "model", keep=True),
    Column("layers", "layers", fmt_int),
    Column("mixers", "mixers (kind:layers)"),
    Column("kv_bytes_per_token", "KV B/token", fmt_int),
    Column("window_cap_mib", "SWA cap MiB", fmt_float(1)),
    Column("fixed_state_mib", "state MiB", fmt_float(1)),
    Column("params_total_billions", "params B", fmt_float(1)),
    Column("params_active_billions", "active B", fmt_float(1)),
    Column("weight_gb", "weights GB", fmt_float(0)),
    Column("max_context_tokens", "context", fmt_int),
]


def models_list_view(models: list[ModelProfile]) -> Report:
    return Report(
        title="Model profiles",
        columns=_MODEL_COLUMNS,
        rows=[model_summary(m) for m in models],
        notes=["params: counted from the architecture (matrices and embeddings); KV in the model's KV dtype"],
    )


def _show(report: Report, kind: str, profile, *extra_notes: str) -> Report:
    """One profile's summary row, with its description, assumptions and sources as notes;
    the full profile in JSON."""
    report.title = f"{kind} profile: {profile.name}"
    report.notes = [
        *([profile.description] if profile.description else []),
        *(f"assumption: {a}" for a in profile.assumptions),
        *(f"source: {s}" for s in profile.sources),
        *extra_notes,
    ]
    report.extra = {"profile": profile.model_dump(mode="json", exclude_none=True)}
    return report


def model_show_view(m: ModelProfile) -> Report:
    return _show(models_list_view([m]), "Model", m)


def hardware_summary(h: HardwareProfile) -> dict:
    e = h.efficiency
    return {
        "hardware": h.name,
        "bf16_tflops": h.peak_tflops.bf16,
        "fp8_tflops": h.peak_tflops.fp8,
        "fp4_tflops": h.peak_tflops.fp4,
        "memory_gib": h.memory_gib,
        "bandwidth_tb_per_s": h.memory_bandwidth_tb_per_s,
        "scale_up_gb_per_s": h.scale_up_gb_per_s,
        "eff_matmul": e.matmul,
        "eff_attention": e.attention,
        "eff_attention_fp8": e.attention_fraction(ComputeDtype.fp8),  # its own figure, or the bf16 one it falls back to
        "eff_memory": e.memory,
        "prefill_overhead_s": e.prefill_overhead_s,
        "usd_per_gpu_hour": h.price_usd_per_gpu_hour,
    }


_HW_COLUMNS = [
    Column("hardware", "hardware", keep=True),
    Column("bf16_tflops", "bf16 TFLOPS", fmt_float(0)),
    Column("fp8_tflops", "fp8 TFLOPS", fmt_opt(0)),
    Column("fp4_tflops", "fp4 TFLOPS", fmt_opt(0)),
    Column("memory_gib", "memory GiB", fmt_float(2)),
    Column("bandwidth_tb_per_s", "TB/s", fmt_float(2)),
    Column("scale_up_gb_per_s", "scale-up GB/s", fmt_float(0)),
    Column("eff_matmul", "eff mm", fmt_float(3)),
    Column("eff_attention", "eff attn", fmt_float(3)),
    Column("eff_attention_fp8", "eff attn fp8", fmt_float(3)),
    Column("eff_memory", "eff mem", fmt_float(2)),
    Column("prefill_overhead_s", "overhead s", fmt_float(2)),
    Column("usd_per_gpu_hour", "$/GPU-h (example)", fmt_opt(2)),
]


def hardware_list_view(profiles: list[HardwareProfile]) -> Report:
    return Report(
        title="Hardware profiles (per chip; dense peaks)",
        columns=_HW_COLUMNS,
        rows=[hardware_summary(h) for h in profiles],
        notes=["- = not available (null in JSON, empty in CSV); prices are editable examples, not quotes"],
    )


def efficiency_source_notes(h: HardwareProfile) -> list[str]:
    """One line per efficiency field the profile sets, and per per-dtype fraction it falls back
    for: the field, its value (a fallback's is the value it takes) and where it comes from."""
    e, lines = h.efficiency, []
    for name in h.efficiency_fields():
        value = getattr(e, e.field_in_use(name)) if name in FALLBACK else getattr(e, name)
        lines.append(f"efficiency {name} {value:g}: {h.efficiency_source(name)}")
    defaults = h.efficiency_defaults()
    if defaults:
        lines.append(
            "efficiency at the schema's defaults (not set in the profile, no source): "
            + ", ".join(f"{name} {value:g}" for name, value in defaults.items())
            + (
                "; fixed costs at 0 make the chip faster than the shipped GPU profiles assume (most: 4 us per kernel, "
                "2 ms per prefill pass, 20 ms per request, 1 ms per decode step)"
                if any(defaults.get(f) == 0 for f in FIXED_COSTS)
                else ""
            )
        )
    links = h.link_defaults()
    if links:
        lines.append("links at the schema's defaults: " + ", ".join(f"{name} {value:g}" for name, value in links.items()))
    return lines


FIXED_COSTS = ("kernel_overhead_us", "prefill_pass_overhead_s", "prefill_overhead_s", "decode_step_overhead_s")


def hardware_show_view(h: HardwareProfile) -> Report:
    return _show(hardware_list_view([h]), "Hardware", h, *([h.price_note] if h.price_note else []), *efficiency_source_notes(h))
