"""The throughput model of the PrfaaS paper (section 3.4), in two modes.

For a routing threshold t (a request goes to PrfaaS iff its uncached length L > t):

    Theta_prfaas = min(N_prfaas / T_prfaas(l_long), B_out / S_kv(l_long))
    Theta_pdp    = N_p / T_pd(l_short)
    Theta_pdd    = N_d * BS_max / (T_decode * L_out)
    Lambda_max   = min(Theta_prfaas / p, Theta_pdp / (1 - p), Theta_pdd)

Written per request, each bound is a capacity over a *work* per request:
Lambda <= N_prfaas / (p T_long), B_out / (p S_long), N_p / ((1 - p) T_short), N_d r_d.
With a transport model (``timing.transport``) B_out = min(usable bandwidth, N_prfaas r_transfer):
each PrfaaS instance streams one transfer at a time, at r_transfer = connections x one
connection's rate.

Modes:
- ``paper``: T and S at each class's mean length, as the paper evaluates them;
- ``exact`` (default): the class mean of T(L) and S(L) over the distribution,
  p T_long = E[T(L); L > t]. Since T is convex (quadratic attention), the exact work is
  larger than the paper's (Jensen), so the exact Lambda_max is lower.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..choices import Bound, PlanMode
from ..study.model import PlanInputs
from ..units import bytes_per_s_to_gbps
from ..workload.distributions import class_stats_table

BOUNDS = tuple(Bound)
TIE_REL = 1e-7  # relative tolerance when comparing Lambda values


@dataclass(frozen=True)
class ThresholdTable:
    """Per candidate threshold: the split and the per-request work of each stage."""

    mode: PlanMode
    thresholds_tokens: np.ndarray
    p: np.ndarray
    l_long_tokens: np.ndarray  # NaN where no request is long
    l_short_tokens: np.ndarray  # NaN where no request is short
    prfaas_work_s: np.ndarray  # p * T_prfaas(long class): PrfaaS instance-seconds per request
    link_work_bytes: np.ndarray  # p * S_kv(long class): link bytes per request
    pd_work_s: np.ndarray  # (1 - p) * T_pd(short class): PD-P instance-seconds per request

    def __len__(self) -> int:
        return len(self.thresholds_tokens)


def threshold_table(inputs: PlanInputs, mode: str = PlanMode.exact, thresholds_tokens=None) -> ThresholdTable:
    """Split statistics and per-request stage work at each threshold (vectorised); by default every
    distinct threshold: 0 (all offloaded) and each support point (L <= t stays local)."""
    mode = PlanMode(mode)
    if inputs.workload.routed is not None:
        return routed_table(inputs, mode, thresholds_tokens)
    dist = inputs.input_dist
    t = _candidates(dist.lengths_tokens, inputs) if thresholds_tokens is None else np.asarray(thresholds_tokens, dtype=float)
    stats = class_stats_table(dist)
    p, l_long, l_short = stats.split(t)
    prfaas, pd = inputs.prfaas.curve, inputs.pd.curve
    # the PrfaaS and PD-P pools always prefill (study.model.Pool: only a decode-only pool has no curve)
    assert prfaas is not None and pd is not None
    if mode == PlanMode.exact:
        support = dist.lengths_tokens
        t_long, _ = stats.class_means(prfaas.capacity_s(support), t)
        s_long, _ = stats.class_means(prfaas.kv_bytes(support), t)
        _, t_short = stats.class_means(pd.capacity_s(support), t)
    else:
        t_long = _at(prfaas.capacity_s, l_long)
        s_long = _at(prfaas.kv_bytes, l_long)
        t_short = _at(pd.capacity_s, l_short)
    q = 1.0 - p
    return ThresholdTable(
        mode=mode,
        thresholds_tokens=t,
        p=p,
        l_long_tokens=l_long,
        l_short_tokens=l_short,
        prfaas_work_s=np.where(p > 0, p * np.nan_to_num(t_long), 0.0),
        link_work_bytes=np.where(p > 0, p * np.nan_to_num(s_long), 0.0),
        pd_work_s=np.where(q > 0, q * np.nan_to_num(t_short), 0.0),
    )


def _candidates(support_tokens: np.ndarray, inputs: PlanInputs) -> np.ndarray:
    """Every distinct threshold (tokens): 0 (all offloaded), each support point but the last, and
    in its place the model's context, the threshold that offloads nothing. A request is offloaded
    when its (routing) length exceeds t; no input exceeds the context (``study.resolve`` refuses
    one that does), while a binned support's top point is a bin's mean below the inputs' bound, so
    a router given it would offload the few longest inputs even where the plan offloads none."""
    top = max(float(support_tokens[-1]), float(inputs.model.max_context_tokens))
    return np.concatenate(([0.0], support_tokens[:-1], [top]))


def per_token_count(fn, tokens: np.ndarray) -> np.ndarray:
    """fn over the distinct token counts of ``tokens`` (whole tokens), spread back."""
    values, inverse = np.unique(tokens, return_inverse=True)
    return np.asarray(fn(values), dtype=float)[inverse]


def routed_table(inputs: PlanInputs, mode: PlanMode, thresholds_tokens=None) -> ThresholdTable:
    """The threshold table of cache-aware routing (``workload.cluster_cache``): request classes by
    routing length, each with the tokens PrfaaS or PD-P computes and the KV tokens the link carries
    when it is offloaded or kept local. Work per request at threshold t:
    PrfaaS E[T_prfaas(c_f); r > t], PD-P E[T_pd(c_pd); r <= t], link E[S(off); r > t] + E[S(local); r <= t].
    Class means in both modes (the paper's mean-length form has no meaning for mixed classes)."""
    pts = inputs.workload.routed
    assert pts is not None  # routed tables are built only for cache-aware routing (threshold_table checks)
    t = (
        _candidates(np.unique(pts.route_tokens), inputs)
        if thresholds_tokens is None
        else np.asarray(thresholds_tokens, dtype=float)
    )
    prfaas, pd = inputs.prfaas.curve, inputs.pd.curve
    # the PrfaaS and PD-P pools always prefill (study.model.Pool: only a decode-only pool has no curve)
    assert prfaas is not None and pd is not None
    w = pts.probs
    t_f = w * per_token_count(prfaas.capacity_s, pts.prfaas_tokens)
    t_pd = w * per_token_count(pd.capacity_s, pts.pd_tokens)
    s_off = w * per_token_count(prfaas.kv_bytes, pts.offload_kv_tokens)
    moved = pts.local_kv_tokens > 0
    s_loc = np.zeros_like(w)
    if moved.any():
        s_loc[moved] = w[moved] * per_token_count(prfaas.kv_bytes, pts.local_kv_tokens[moved])

    k = np.searchsorted(pts.route_tokens, t, side="right")  # the classes with r <= t: [0, k)

    def head(x):  # sum over classes with r <= t
        return np.concatenate(([0.0], np.cumsum(x)))[k]

    def tail(x):  # sum over classes with r > t (a reverse cumulative sum: exactly 0 past the last)
        return np.concatenate((np.cumsum(x[::-1])[::-1], [0.0]))[k]

    p = tail(w)
    q = 1.0 - p
    r = w * pts.route_tokens
    with np.errstate(divide="ignore", invalid="ignore"):
        l_long = np.where(p > 0, tail(r) / np.where(p > 0, p, 1.0), np.nan)
        l_short = np.where(q > 0, head(r) / np.where(q > 0, q, 1.0), np.nan)
    return ThresholdTable(mode, t, p, l_long, l_short, tail(t_f), tail(s_off) + head(s_loc), head(t_pd))


def _at(curve, lengths: np.ndarray) -> np.ndarray:
    """curve(l) where l is defined, NaN elsewhere."""
    out = np.full_like(lengths, np.nan, dtype=float)
    ok = np.isfinite(lengths)
    if ok.any():
        out[ok] = curve(lengths[ok])
    return out


def _over(capacity, work):
    """capacity / work, +inf where the stage has no work."""
    capacity = np.asarray(capacity, dtype=float)
    work = np.asarray(work, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(work > 0, capacity / np.where(work > 0, work, 1.0), np.inf)


@dataclass(frozen=True)
class Bounds:
    """Lambda bounds (req/s) of each stage; arrays broadcast over thresholds and counts."""

    prfaas_compute: np.ndarray
    link: np.ndarray
    pd_prefill: np.ndarray
    pd_decode: np.ndarray

    @property
    def lambda_max(self) -> np.ndarray:
        return np.minimum(self.prfaas, np.minimum(self.pd_prefill, self.pd_decode))

    @property
    def prfaas(self) -> np.ndarray:
        """The PrfaaS path's bound, Theta_prfaas / p: the lower of its compute and the link."""
        return np.minimum(self.prfaas_compute, self.link)

    def binding(self) -> Bound:
        """The smallest bound (scalar use)."""
        values = [float(np.asarray(getattr(self, b))) for b in BOUNDS]
        return BOUNDS[int(np.argmin(values))]


def bounds(table: ThresholdTable, idx, n_prfaas, n_p, n_d, inputs: PlanInputs, link_bytes_per_s=None) -> Bounds:
    """Lambda bounds at threshold index ``idx`` for the given instance counts; ``link_bytes_per_s``
    (broadcast like the counts) replaces the usable link bandwidth, for bandwidth sweeps. With a
    transport model the link carries at most N_prfaas transfers' rates (``Link.carried_bytes_per_s``)."""
    n_d = np.asarray(n_d, dtype=float)
    link = inputs.link.carried_bytes_per_s(n_prfaas, link_bytes_per_s)
    return Bounds(
        prfaas_compute=_over(n_prfaas, table.prfaas_work_s[idx]),
        link=_over(link, table.link_work_bytes[idx]),
        pd_prefill=_over(n_p, table.pd_work_s[idx]),
        pd_decode=n_d * inputs.decode_rps_per_instance,
    )


@dataclass(frozen=True)
class StageThroughputs:
    """The paper's Theta terms (req/s) at one operating point."""

    theta_prfaas: float
    theta_pdp: float
    theta_pdd: float
    lambda_max: float
    binding: Bound
    egress_gbps: float  # KV egress at lambda_max: lambda * p * S_long, decimal Gbps


def stage_throughputs(table: ThresholdTable, idx: int, n_prfaas: int, n_p: int, n_d: int, inputs: PlanInputs) -> StageThroughputs:
    b = bounds(table, idx, n_prfaas, n_p, n_d, inputs)
    lam = float(b.lambda_max)
    p = float(table.p[idx])
    theta_prfaas = float(b.prfaas * p) if p > 0 else 0.0
    theta_pdp = float(b.pd_prefill * (1 - p)) if p < 1 else 0.0
    egress = bytes_per_s_to_gbps(lam * float(table.link_work_bytes[idx]))
    return StageThroughputs(theta_prfaas, theta_pdp, float(b.pd_decode), lam, b.binding(), egress)


def best_thresholds(
    table: ThresholdTable, inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int, link_bytes_per_s: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per link bandwidth (bytes/s): the index of the best threshold for the counts and its
    Lambda_max; among ties, the balance point of eq. 7 (Theta_prfaas / p = Theta_pdp / (1 - p)):
    the largest min(PrfaaS bound, PD-P bound). The optimiser's rule and the router's."""
    idx = np.arange(len(table))
    b = bounds(table, idx, n_prfaas, n_p, n_d, inputs, link_bytes_per_s=link_bytes_per_s[:, None])
    shape = (len(link_bytes_per_s), len(idx))
    lam = np.broadcast_to(b.lambda_max, shape)
    best = lam.max(axis=1, keepdims=True)
    prefill = np.broadcast_to(np.minimum(b.prfaas, b.pd_prefill), shape)
    pick = np.argmax(np.where(lam >= best * (1 - TIE_REL), prefill, -np.inf), axis=1)
    # where nothing can be offloaded (no link, no PrfaaS instance) or nothing is served at all, every
    # threshold ties at 0 and the tie rule would pick t = 0 (offload everything onto a dead link):
    # keep everything local instead (the table's last threshold, p = 0)
    stuck = (np.asarray(link_bytes_per_s) <= 0) | (n_prfaas == 0) | (best[:, 0] <= 0)
    pick = np.where(stuck, int(np.argmin(table.p)), pick)
    return pick, lam[np.arange(len(pick)), pick]
