"""Whether a cluster's prefix-cache memory fits in its pool's HBM (issue 19).

``cluster_caches.from_trace`` takes the memory each cluster sets aside for its cache as given
(``hbm_gib``, ``dram_gib``), not derived from the pools: weights, activations and the KV of the
requests in flight take HBM too. A note flags an HBM figure beyond all the HBM the pool has:
instances (the most the plan may use) x chips per instance x memory_gib of its hardware.
"""

from __future__ import annotations

from ..units import BYTES_PER_GIB
from .model import PlanInputs


def cache_memory_notes(workload_spec, inputs: PlanInputs) -> tuple[str, ...]:
    """A note per cluster whose cache HBM (``workload_spec.cluster_caches.from_trace``) exceeds
    its pool's HBM in total, GiB: the PD cluster's PD pool plus its decode-only pool, if any."""
    cc = workload_spec.cluster_caches
    spec = None if cc is None else cc.from_trace
    if spec is None:
        return ()
    lim = inputs.limits
    pools = {
        "prfaas": [(inputs.prfaas, lim.prfaas_max)],
        "pd": [(inputs.pd, lim.pd_max)] + ([] if inputs.pd_decode is None else [(inputs.pd_decode, lim.decode_max or 0)]),
    }
    notes = []
    for name, held in pools.items():
        cache = getattr(spec, name)
        total_gib = sum(n * pool.instance.memory_bytes for pool, n in held) / BYTES_PER_GIB
        if cache is not None and cache.hbm_gib > total_gib:
            what = " + ".join(f"{n} x {pool.gpus_per_instance}x{pool.hardware_name}" for pool, n in held)
            notes.append(
                f"cluster_caches.from_trace.{name}.hbm_gib {cache.hbm_gib:g} GiB is more than the {total_gib:,.0f} GiB "
                f"of HBM its pool has in all ({what}): the cache memory is what you set aside, not derived"
            )
    return tuple(notes)
