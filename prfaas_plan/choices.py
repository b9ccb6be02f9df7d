"""Every choice a user can make, as one enum each: shared by the YAML schemas, the library
and the CLI's options (typer shows an enum's values as the option's choices).

Values are the strings users write; each class is a ``StrEnum``, so a member compares equal
to its value (``PlanMode.exact == "exact"``) and formats as it (``f"{PlanMode.exact}"``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from .errors import PlanInputError, show

E = TypeVar("E", bound=StrEnum)


def choice_of(choices: type[E], value: Any, field: str) -> E:
    """``value`` as a member of the enum ``choices``, or a PlanInputError naming ``field``."""
    try:
        return choices(value)
    except ValueError:
        raise PlanInputError(f"unknown value {show(value)} (use {', '.join(choices)})", field=field) from None


class OutputFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


class CurveSource(StrEnum):
    """Where T_prefill(l) comes from: measured points if the model has them for this
    hardware and chip count (``auto``), the roofline, or measured points only."""

    auto = "auto"
    roofline = "roofline"
    measured = "measured"


class PlanMode(StrEnum):
    """``exact``: class means of T(L) over the distribution; ``paper``: T at the class mean length."""

    exact = "exact"
    paper = "paper"


class ObjectiveKind(StrEnum):
    max_throughput = "max_throughput"
    min_cost = "min_cost"


class CacheRegime(StrEnum):
    """Cache-aware routing (``workload.cluster_caches.regime``): ``scarce`` bandwidth (each
    cluster's own cache decides), ``plentiful`` (the best cache anywhere, cached KV crosses the
    link), or ``auto`` (the planner keeps the regime whose plan is better)."""

    auto = "auto"
    scarce = "scarce"
    plentiful = "plentiful"


class RobustObjective(StrEnum):
    """What one set of instance counts serves across the cases of ``robust:``."""

    worst_case = "worst_case"  # the largest Lambda_max of the worst case
    weighted = "weighted"  # the largest weighted mean of Lambda_max
    min_cost = "min_cost"  # the lowest $/hour meeting every case's target rate


class OptimiserMethod(StrEnum):
    """``milp``: pulp/CBC, certified by the per-threshold optimum; ``enumerate``: exhaustive;
    ``per_threshold``: the exact optimum of every threshold (planner/exact.py); ``auto``:
    enumerate small count spaces, per_threshold above."""

    milp = "milp"
    enumerate = "enumerate"
    per_threshold = "per_threshold"
    auto = "auto"


class SweepOver(StrEnum):
    threshold = "threshold"
    np = "np"
    bandwidth = "bandwidth"
    instances = "instances"
    rate = "rate"


class ArrivalProcess(StrEnum):
    poisson = "poisson"
    gamma = "gamma"
    onoff = "onoff"


class RoutingPolicy(StrEnum):
    static = "static"
    adaptive = "adaptive"


class DeploymentName(StrEnum):
    prfaas_pd = "prfaas_pd"
    homogeneous = "homogeneous"
    homogeneous_equal_cost = "homogeneous_equal_cost"
    naive_heterogeneous = "naive_heterogeneous"


class Bound(StrEnum):
    """The four throughput bounds of the paper's model (section 3.4)."""

    prfaas_compute = "prfaas_compute"
    link = "link"
    pd_prefill = "pd_prefill"
    pd_decode = "pd_decode"


class CongestionControl(StrEnum):
    """A link's TCP congestion control (``timing.transport``): ``loss_based`` (Reno / CUBIC-like:
    a connection's rate falls as 1 / sqrt(loss), Mathis et al. 1997) or ``bbr`` (BBRv1-like: not
    loss-limited below 15% loss, Cardwell et al. 2016)."""

    loss_based = "loss_based"
    bbr = "bbr"


class Role(StrEnum):
    """A pool of a plan: PrfaaS, the local PD cluster (its PD-P pool when decode has its own),
    and a decode-only pool of the local cluster."""

    prfaas = "prfaas"
    pd = "pd"
    pd_decode = "pd_decode"


class Dtype(StrEnum):
    """Storage dtypes a profile may name (bytes per element in ``units.DTYPE_BYTES``)."""

    fp32 = "fp32"
    bf16 = "bf16"
    fp16 = "fp16"
    fp8 = "fp8"
    int8 = "int8"
    fp4 = "fp4"
    int4 = "int4"


class ComputeDtype(StrEnum):
    """Tensor-core input dtypes a hardware profile gives a peak for."""

    bf16 = "bf16"
    fp8 = "fp8"
    fp4 = "fp4"


class MixerType(StrEnum):
    """Attention kinds: the discriminator of a model profile's ``mixers`` entries."""

    gqa = "gqa"
    swa = "swa"
    mla = "mla"
    sparse = "sparse"
    linear = "linear"


class LinearKind(StrEnum):
    kda = "kda"
    gdn = "gdn"
    lightning = "lightning"
    mamba2 = "mamba2"


class FfnType(StrEnum):
    dense = "dense"
    moe = "moe"


class WorkloadType(StrEnum):
    """Length distributions: the discriminator of a scenario's ``workload.input``/``output``."""

    lognormal = "lognormal"
    trace = "trace"
    histogram = "histogram"
    cdf = "cdf"
    mixture = "mixture"
    fixed = "fixed"


class TraceFormat(StrEnum):
    """Formats of a request trace (``workload.input: {type: trace, format: ...}``;
    ``workload.traces`` reads each): ``auto`` detects one by the file's first line."""

    auto = "auto"
    mooncake = "mooncake"
    azure = "azure"
    burstgpt = "burstgpt"
    splitwise = "splitwise"
    distserve = "distserve"
    coding_agent = "coding_agent"


class DecodeLimit(StrEnum):
    """What limits the decode batch of one instance."""

    memory = "memory"
    tpot = "tpot"
    max_batch = "max_batch"


class PrefillCapacity(StrEnum):
    """How a prefill pool's capacity is counted: prompts batched into saturated passes, or one
    prompt at a time (the paper's N / T_prefill, and what a measured latency describes)."""

    saturated = "saturated"
    per_request = "per_request"


class DecodeSource(StrEnum):
    """Where a PD-D instance's decode throughput comes from."""

    scenario = "scenario"  # the scenario's decode.tokens_per_s_per_instance (measured or implied)
    roofline = "roofline"
    measured = "measured"  # the model profile's measurement on this instance
    calibrated = "calibrated"  # the roofline's step times scaled to a measurement on this hardware


class PrefillSource(StrEnum):
    """Which prefill curve sized a pool: measured points (PCHIP between them), the roofline
    calibrated on measured points of its hardware, or the roofline alone."""

    measured = "measured"
    calibrated = "calibrated"
    roofline = "roofline"


class Basis(StrEnum):
    """What every option of a comparison is sized on. ``model``: each pool on the instance
    model (the roofline; calibrated where the pool's own hardware has measured points or a
    measured decode rate; prefill capacity batched unless the pool fixes it); ``as-given``:
    the scenario's measured curves and rates where it has them, as ``plan`` uses them. In
    both, a measurement belongs to the hardware it was measured on."""

    model = "model"
    as_given = "as-given"


class ProfileKind(StrEnum):
    model = "model"
    hardware = "hardware"
    scenario = "scenario"
    sites = "sites"  # a multi-site scenario (pd_sites, prfaas_sites, links)


class FitParam(StrEnum):
    """What calibration may fit: efficiency fractions of a hardware profile (``compute`` scales
    the matmul and attention fractions together, keeping their ratio), the per-request
    prefill overhead, and ``attention_<kind>``: the multiplier on the attention-core rate of one
    attention kind (``MixerType``) in prefill (``Efficiency.attention_kind``)."""

    compute = "compute"
    matmul = "matmul"
    attention = "attention"
    memory = "memory"
    prefill_overhead_s = "prefill_overhead_s"
    attention_gqa = "attention_gqa"
    attention_swa = "attention_swa"
    attention_mla = "attention_mla"
    attention_sparse = "attention_sparse"
    attention_linear = "attention_linear"

    @property
    def attention_kind(self) -> MixerType | None:
        """The attention kind an ``attention_<kind>`` parameter scales; None otherwise."""
        return MixerType(self.value.removeprefix("attention_")) if self.value.startswith("attention_") else None


class EngineName(StrEnum):
    """The serving engine whose defaults and kernel efficiencies an instance is timed with
    (``timing/engines/<name>.yaml``); ``generic`` is the engine-neutral model (every kernel at
    the chip's own fractions, the schema's defaults)."""

    generic = "generic"
    sglang = "sglang"
    trtllm = "trtllm"
    vllm = "vllm"


class SnapshotPolicy(StrEnum):
    """Where a hybrid model's prefix cache keeps a linear-attention/SWA state snapshot
    (``workload.prefix_cache``): at the end of every k-th block, at each request's end, or both."""

    every_k_blocks = "every_k_blocks"
    request_end = "request_end"
    both = "both"


class Eviction(StrEnum):
    """What a full prefix cache drops first: ``lru``, the least recently used block or snapshot."""

    lru = "lru"
