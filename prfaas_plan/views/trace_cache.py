"""Rows of the plan report for prefix caches replayed over a trace (``workload.trace_caches``):
hit rates by cluster and kind, prefill tokens saved, snapshot memory, and t and egress with and
without the caches (Lambda_max is in the "what the caches save" row)."""

from __future__ import annotations

from ..units import format_tokens


def trace_cache_rows(cache: dict, threshold_tokens: float, egress_gbps: float) -> list[tuple[str, str]]:
    """Empty unless the plan's ``cache`` (``planner.plan.cache_effect``) comes from a trace."""
    trace = cache.get("trace")
    if trace is None:
        return []
    rows = []
    kind = "hybrid: full-attention blocks + linear/SWA state snapshots" if trace["hybrid"] else "dense: full-attention blocks"
    for name, label in (("pd", "PD"), ("prfaas", "PrfaaS")):
        c = trace.get(name)
        if c is None:
            rows.append((f"{label} cache (trace)", "none"))
            continue
        text = (
            f"{kind}, {trace['block_tokens']}-token blocks; {c['requests']:,} requests: prefill tokens saved "
            f"{c['prefill_tokens_saved']:,} ({100 * c['token_hit_rate']:.1f}%), blocks found {100 * c['block_hit_rate']:.1f}%"
        )
        if trace["hybrid"]:
            text += (
                f", of them reusable at a kept snapshot {100 * c['usable_block_share']:.1f}%; requests resuming from a "
                f"snapshot {100 * c['snapshot_hit_rate']:.1f}% of those with a match; {c['snapshots_kept']:,} snapshots "
                f"kept, at most {c['snapshot_gib_peak']:,.1f} GiB at once"
            )
        if c["dram_hit_tokens"]:
            text += f"; {c['dram_hit_tokens']:,} cached tokens read from host DRAM"
        rows.append((f"{label} cache (trace)", text + f"; {c['evicted_gib']:,.1f} GiB evicted (LRU)"))
    rows.append(
        (
            "without the trace's caches",
            f"threshold t {format_tokens(cache['threshold_without_caches_tokens'])} tokens "
            f"against {format_tokens(threshold_tokens)}, "
            f"egress {cache['egress_without_caches_gbps']:.2f} Gbps against {egress_gbps:.2f} (same counts, each at its Λ_max)",
        )
    )
    return rows
