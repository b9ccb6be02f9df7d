"""Sane ranges of every number a user can type, in one place.

Each schema field, CLI option and file reader takes its bounds from here, so that a value
far outside what any real deployment has (a 400-digit token count, 10^9 instances, a chip
of 10^-9 TFLOPS, a price of 10^-12 $/hour) is a one-line error instead of a hang, an
overflow or a plan of zeros. The table of ranges in docs/yaml-reference.md is ``markdown_table()``
(``tests/test_ranges.py`` checks that they agree).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from .errors import PlanInputError, shorten, show
from .units import MAX_TOKENS as TOKENS_CAP  # 16M tokens (K = 1,024)


class Range(NamedTuple):
    """A closed interval [lo, hi] (``lo_open``: (lo, hi]) with its unit and what it bounds."""

    lo: float
    hi: float
    unit: str
    what: str
    lo_open: bool = False

    def problem(self, value: object) -> str | None:
        """Why ``value`` is not a finite number inside the range (None: it is)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and math.isnan(value)):
            return f"must be a number, got {show(value)}"
        if not (value > self.lo if self.lo_open else value >= self.lo) or value > self.hi:
            shown = f"{value:g}" if isinstance(value, float) else shorten(str(value), 24)
            return f"must be in {self.describe()}, got {shown}"
        return None

    def check(self, value: float, field: str, source: str | None = None) -> float:
        """``value`` if it is a finite number inside the range, else a PlanInputError naming ``field``."""
        reason = self.problem(value)
        if reason is not None:
            raise PlanInputError(reason, source=source, field=field)
        return value

    def describe(self) -> str:
        left = "(" if self.lo_open else "["
        return f"{left}{_num(self.lo)}, {_num(self.hi)}]" + (f" {self.unit}" if self.unit else "")


def _num(x: float) -> str:
    if x == int(x) and abs(x) <= 1e9:
        return f"{int(x):,}"
    return f"{x:g}"


TOKENS = Range(1, TOKENS_CAP, "tokens", "a request length, context, threshold or window (16M = 16 x 1,024^2)")
INSTANCES = Range(0, 10_000, "instances", "instances of one pool (PrfaaS or PD)")
CHIPS_PER_INSTANCE = Range(1, 65_536, "chips", "chips per instance (gpus_per_instance, the API's gpus)")
GPU_BUDGET = Range(0, 10_000_000, "chips", "a GPU budget per hardware")
USD_PER_HOUR_BUDGET = Range(0, 1e9, "$/hour", "a $/hour budget", lo_open=True)
LAYERS = Range(1, 1_024, "layers", "layers of a model")
WIDTH = Range(1, 1_048_576, "", "a hidden, intermediate, vocabulary, rank or head size (2^20)")
HEADS = Range(1, 65_536, "heads", "attention or state heads")
EXPERTS = Range(1, 65_536, "experts", "experts of an MoE layer, top-k, shared experts")
PARAMS_B = Range(0, 100_000, "billion parameters", "a declared parameter count", lo_open=True)
TFLOPS = Range(0.001, 500_000, "TFLOPS", "a dense peak per chip (500 PFLOPS: 14x Rubin's FP4; above, GFLOPS typed as TFLOPS)")
MEMORY_GIB = Range(0.001, 1e6, "GiB", "memory per chip")
MEMORY_TB_PER_S = Range(0.001, 1e4, "TB/s", "memory bandwidth per chip")
# Cross-field checks of a hardware profile, against figures typed in the wrong unit (PFLOPS as
# TFLOPS, GB/s as TB/s): each narrower dtype's peak at most this many times the next wider one's
# (shipped: at most 4.4x, Rubin's FP8 over BF16) ...
PEAK_STEP_MAX = 8.0
# ... and the BF16 peak over the memory bandwidth, FLOP per byte (shipped: 2.4 for the Groq LPU's
# SRAM to 2,500 for Rubin CPX's GDDR7; below 1, a bandwidth in GB/s typed as TB/s; the top leaves
# room for deliberately memory-bound test chips)
MACHINE_BALANCE = Range(1, 1e6, "bf16 FLOP per byte", "peak_tflops.bf16 over memory_bandwidth_tb_per_s")
SCALE_UP_GB_PER_S = Range(0.001, 1e6, "GB/s", "scale-up bandwidth per chip, one direction")
NIC_GBPS = Range(0.001, 1e6, "Gbps", "scale-out NIC bandwidth per chip")
TDP_W = Range(1, 1e5, "W", "power per chip")
PRICE_USD_PER_GPU_HOUR = Range(0.001, 1e4, "$/GPU-hour", "a rental price per chip")
PREFILL_OVERHEAD_S = Range(0, 60, "s", "fixed prefill cost per request")
DECODE_STEP_OVERHEAD_S = Range(0, 10, "s", "fixed cost per decode step")
GEMM_SHAPE = Range(0, 100_000, "elements", "a GEMM shape constant (matmul_k0, matmul_m0)")
CHUNK_STEP_US = Range(0, 1_000, "us", "time of one chunk step of a chunked linear-attention prefill kernel")
KERNEL_OVERHEAD_US = Range(0, 1_000, "us", "fixed cost per GPU kernel of a pass (launch gap, minimum duration)")
COLLECTIVE_LATENCY_US = Range(0, 10_000, "us", "latency of one step of a collective (scale-up or NIC)")
OVERLAP = Range(0, 1, "", "share of communication hidden behind compute (engine.overlap)")
EXPERT_IMBALANCE = Range(1, 64, "x", "tokens on the busiest expert rank over the mean (engine.expert_imbalance)")
PASS_TOKENS = Range(1, 1_048_576, "tokens", "a chunked-prefill budget per pass and attention group")
MTP_TOKENS = Range(1, 16, "tokens/step", "tokens accepted per decode step (multi-token prediction)")
SMOOTH_FACTOR = Range(0, 1, "", "dynamic chunking's smooth factor (SGLANG_DYNAMIC_CHUNKING_SMOOTH_FACTOR; 0: fixed chunks)")
KERNEL_MULTIPLIER = Range(0.05, 20, "x", "an engine kernel's rate over the chip's own fraction (engine profiles)")
LINK_GBPS = Range(0, 1e6, "Gbps", "link bandwidth (0: no link)")
RTT_MS = Range(0, 1e5, "ms", "link round-trip time")
# The transport model (timing.transport): 0.15 is where BBRv1 stops reaching link x (1 - loss)
# (Cardwell et al.'s Linux tcp_bbr patch, 2016), past the few % where the Mathis formula holds;
# 536 bytes is the IPv4 default MSS (RFC 879), 65,495 the largest (a 65,535-byte IP packet);
# 10^9 bytes is under the largest TCP window, 2^30 (window scale 14, RFC 7323).
LOSS_RATE = Range(0, 0.15, "", "a link's packet loss rate (link.loss_rate; 1e-5 = one packet in 100,000)")
MSS_BYTES = Range(536, 65_495, "bytes", "a TCP maximum segment size (link.mss_bytes)")
WINDOW_BYTES = Range(1_024, 1_000_000_000, "bytes", "a TCP connection's largest window (link.window_bytes)")
CONNECTIONS = Range(1, 65_536, "connections", "TCP connections per KV transfer (link.connections_per_transfer)")
TPOT_MS = Range(0.01, 1e6, "ms", "a time-per-output-token limit")
DECODE_BATCH = Range(1, 100_000, "requests", "running requests per decode instance (max_batch; the batch is capped here)")
DECODE_TOKENS_PER_S = Range(0.001, 1e9, "tokens/s", "a measured decode throughput per instance")
PREFILL_SECONDS = Range(0, 1e6, "s", "a measured prefill latency", lo_open=True)
RATE_RPS = Range(0, 1e6, "requests/s", "an arrival or target rate", lo_open=True)
SLO_SECONDS = Range(0.001, 1e6, "s", "a TTFT target")
LOAD = Range(0, 10, "x Lambda_max", "a load as a fraction of Lambda_max", lo_open=True)
ARRIVAL_CV = Range(0.01, 100, "", "a coefficient of variation of inter-arrival times")
# Simulated requests per command, over all its runs (validate-model: 4 loads; schedule
# --simulate: 2 per window; sites --simulate: one per PD site and window). Worst case measured
# on the 2-core machine of docs/yaml-reference.md: 500,000 case-study requests with --policy adaptive
# --rebalance --arrivals onoff take 4.7 s of CPU and 390 MB (10,000,000 took 76 s and
# 6.4 GB: memory, not time, bounds it), so a larger count is an error.
REQUESTS = Range(1, 500_000, "requests", "requests simulated by one command, over all its runs")
# A published figure (tokens/s, or seconds of a latency) is positive and finite; the largest in
# tests/data/published_benchmarks.csv is 57,674 input tokens/s per node, so 10^9 leaves room
# for any deployment while a stray exponent (1e12) is refused.
PUBLISHED_MEASUREMENT = Range(0, 1e9, "", "a published measurement (the CSV's measured, in its unit)", lo_open=True)
OFFLINE_REQUESTS = Range(1, 1_000_000, "requests", "requests of an offline run (estimate's requests)")
POINTS = Range(2, 10_000, "points", "points of a sweep (a rate sweep: at most 1,000)")
RATE_POINTS = Range(2, 1_000, "points", "points of a rate sweep (each evaluates the latency of every deployment)")
SIM_SECONDS = Range(0, 1e7, "s", "a time in a simulation (drop start or length, trace step)")
# a replayed trace's time scale: 1000x turns a day into 86 s, 1/1000 a minute into 17 hours
SPEEDUP = Range(1e-3, 1e3, "x", "the time scale of a replayed trace (a replay's speedup)", lo_open=False)
TRACE_SECONDS = Range(0, 1e9, "s", "a time in a request trace (a replay's from_s, to_s)")
SEED = Range(0, 2**63 - 1, "", "a random seed")
LOGNORMAL_MU = Range(-10, 30, "ln tokens", "the mu of a log-normal length distribution")
LOGNORMAL_SIGMA = Range(0, 10, "ln tokens", "the sigma of a log-normal length distribution", lo_open=True)
BINS = Range(1, 65_536, "bins", "bins of a log-normal, points per histogram bin")
LIST_ITEMS = Range(1, 10_000, "items", "entries of a list in a profile or scenario (edges, counts, layers)")
CALIBRATION_POINTS = Range(1, 1_000, "points", "measured prefill points to calibrate on (CSV rows or calibration_points)")
BANDWIDTH_STEPS = Range(1, 100_000, "steps", "rows of a bandwidth trace")
GPU_BUDGET_ENTRIES = Range(0, 64, "hardware names", "entries of budgets.gpus")
COARSE_THRESHOLDS = Range(4, 2_048, "thresholds", "optimiser.coarse_thresholds (MILP candidates)")
OPERATING_LOAD = Range(0, 0.999, "x Lambda_max", "latency.operating_load (the reported rate)", lo_open=True)
MIXTURE_COMPONENTS = Range(1, 1_000, "components", "components of a mixture workload")
PURCHASE_USD_PER_GPU = Range(1, 1e7, "$/chip", "a purchase price per chip (cost.purchase_usd_per_gpu)")
DEPRECIATION_YEARS = Range(0.25, 30, "years", "a depreciation period (cost.depreciation_years)")
COST_OF_CAPITAL = Range(0, 1, "/year", "a cost of capital (cost.cost_of_capital, 0.08 = 8% a year)")
USD_PER_KWH = Range(0, 10, "$/kWh", "an electricity price (site.usd_per_kwh)")
PUE = Range(1, 5, "", "a power usage effectiveness (site.pue)")
IDLE_POWER_FRACTION = Range(0, 1, "x TDP", "an idle chip's draw (site.idle_power_fraction)")
USD_PER_GBPS_MONTH = Range(0, 1e6, "$/Gbps-month", "a committed link price (link.usd_per_gbps_month)")
USD_PER_GB = Range(0, 1e3, "$/GB", "an egress price (link.usd_per_gb_egress)")
WINDOW_HOURS = Range(0, 8760, "hours", "a window of the day profile (day.windows[].hours)", lo_open=True)
INPUT_SCALE = Range(0.01, 100, "x", "a window's input-length factor (day.windows[].input_scale)")
CONVERSION_S = Range(0, 1e6, "s", "the time one instance takes to switch role (day.conversion_s)")
DAY_WINDOWS = Range(1, 168, "windows", "windows of a day profile")
CACHE_GIB = Range(0, 1e7, "GiB", "prefix-cache memory a cluster sets aside, per tier (cluster_caches.from_trace)")
BLOCK_TOKENS = Range(1, 65_536, "tokens", "tokens per prefix-cache block (cluster_caches.from_trace.block_tokens)")
SNAPSHOT_EVERY_BLOCKS = Range(1, 1_000_000, "blocks", "blocks between state snapshots (from_trace.snapshots.every_blocks)")
COMPARE_OPTIONS = Range(1, 512, "options", "combinations one compare plans")
JOBS = Range(1, 64, "processes", "parallel processes of compare (its jobs)")
MAX_SUPPORT_POINTS = 4 * 2**20  # distinct lengths of a distribution (trace, histogram, mixture, prefix cache)
MAX_CHIP_COMBINATIONS = 64  # combinations of the pools' chips per instance one plan resolves
MIN_CAPACITY_RPS = 1e-3  # a plan below this Lambda_max (3.6 requests/hour) is an error, not a table of zeros

# Files: each input is read whole, so its size is bounded before reading.
MAX_PROFILE_BYTES = 4 * 2**20  # YAML or JSON profile, scenario or config: 4 MiB
MAX_CSV_BYTES = 64 * 2**20  # calibration points, bandwidth trace: 64 MiB
MAX_TRACE_BYTES = 1 * 2**30  # a request-length trace: 1 GiB
MAX_DEPTH = 64  # nesting of YAML/JSON collections
MAX_NODES = 50_000  # YAML/JSON values after expanding aliases (an alias bomb is refused before expanding)
MAX_INT_DIGITS = 30  # digits of an integer literal in YAML/JSON
MAX_NAME_CHARS = 128  # a profile or scenario name

NUMERIC = (
    TOKENS,
    INSTANCES,
    CHIPS_PER_INSTANCE,
    GPU_BUDGET,
    USD_PER_HOUR_BUDGET,
    LAYERS,
    WIDTH,
    HEADS,
    EXPERTS,
    PARAMS_B,
    TFLOPS,
    MEMORY_GIB,
    MEMORY_TB_PER_S,
    MACHINE_BALANCE,
    SCALE_UP_GB_PER_S,
    NIC_GBPS,
    TDP_W,
    PRICE_USD_PER_GPU_HOUR,
    PREFILL_OVERHEAD_S,
    DECODE_STEP_OVERHEAD_S,
    GEMM_SHAPE,
    KERNEL_OVERHEAD_US,
    CHUNK_STEP_US,
    COLLECTIVE_LATENCY_US,
    OVERLAP,
    EXPERT_IMBALANCE,
    PASS_TOKENS,
    MTP_TOKENS,
    KERNEL_MULTIPLIER,
    LINK_GBPS,
    RTT_MS,
    LOSS_RATE,
    MSS_BYTES,
    WINDOW_BYTES,
    CONNECTIONS,
    TPOT_MS,
    DECODE_BATCH,
    DECODE_TOKENS_PER_S,
    PREFILL_SECONDS,
    RATE_RPS,
    SLO_SECONDS,
    LOAD,
    ARRIVAL_CV,
    REQUESTS,
    OFFLINE_REQUESTS,
    PUBLISHED_MEASUREMENT,
    POINTS,
    SIM_SECONDS,
    SPEEDUP,
    TRACE_SECONDS,
    SEED,
    LOGNORMAL_MU,
    LOGNORMAL_SIGMA,
    BINS,
    LIST_ITEMS,
    MIXTURE_COMPONENTS,
    RATE_POINTS,
    CALIBRATION_POINTS,
    BANDWIDTH_STEPS,
    GPU_BUDGET_ENTRIES,
    COARSE_THRESHOLDS,
    OPERATING_LOAD,
    PURCHASE_USD_PER_GPU,
    DEPRECIATION_YEARS,
    COST_OF_CAPITAL,
    USD_PER_KWH,
    PUE,
    IDLE_POWER_FRACTION,
    USD_PER_GBPS_MONTH,
    USD_PER_GB,
    CACHE_GIB,
    BLOCK_TOKENS,
    SNAPSHOT_EVERY_BLOCKS,
    COMPARE_OPTIONS,
    JOBS,
    WINDOW_HOURS,
    INPUT_SCALE,
    CONVERSION_S,
    DAY_WINDOWS,
)


def check_simulated_requests(requests: int, runs: int, field: str, what: str = "") -> int:
    """``requests`` per run if ``runs`` x ``requests`` is within ``REQUESTS`` (``what`` names
    the runs: '3 windows x 2 plans'), else a PlanInputError that says the limit and why."""
    reason = REQUESTS.problem(requests)
    over = reason is not None and isinstance(requests, int) and requests > REQUESTS.hi
    if reason is not None and not over:
        raise PlanInputError(reason, field=field)
    total = requests * runs
    if total > REQUESTS.hi:
        count = shorten(f"{requests:,}", 24)
        product = f"{what} x {count} = {shorten(f'{total:,}', 24)}" if runs > 1 else count
        most = f"; give at most {int(REQUESTS.hi) // runs:,} per run" if runs > 1 else ""
        raise PlanInputError(
            f"{product} simulated requests, over the limit of {int(REQUESTS.hi):,} per command "
            "(at the limit the worst case takes about 5 s of CPU here; 10,000,000 took 76 s and 6.4 GB)"
            f"{most}",
            field=field,
        )
    return requests


def markdown_table() -> str:
    """The table of sane ranges in docs/yaml-reference.md (generated from this module)."""
    lines = ["| what | range |", "|---|---|"]
    lines += [f"| {r.what} | {r.describe()} |" for r in NUMERIC]
    lines.append(f"| a plan's Lambda_max | at least {MIN_CAPACITY_RPS:g} requests/s, else an error |")
    lines.append(f"| chips per instance (lists, auto) | at most {MAX_CHIP_COMBINATIONS} combinations over the pools |")
    lines.append(
        f"| YAML/JSON files | at most {MAX_PROFILE_BYTES // 2**20} MiB, {MAX_DEPTH} levels deep, "
        f"{MAX_NODES:,} values after aliases, integers of at most {MAX_INT_DIGITS} digits |"
    )
    lines.append(
        f"| a length distribution (trace, histogram, mixture, prefix cache) | at most {MAX_SUPPORT_POINTS:,} distinct lengths |"
    )
    lines.append(f"| CSV files (calibration points, bandwidth traces) | at most {MAX_CSV_BYTES // 2**20} MiB |")
    lines.append(f"| request-length traces | at most {MAX_TRACE_BYTES // 2**30} GiB |")
    lines.append(f"| names | 1 to {MAX_NAME_CHARS} characters |")
    return "\n".join(lines)
