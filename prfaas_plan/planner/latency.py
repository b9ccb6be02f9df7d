"""Closed-form latency of a deployment at an arrival rate: TTFT per path, and TPOT.

TTFT = queue wait + prefill time (+ KV transfer on the remote path).

- Each prefill path is a multi-server queue (M/G/c, or G/G/c with arrival SCV c_a^2):
  c instances, arrival rate lambda_path, service time the instance-seconds a request holds
  (``capacity_s``: T_prefill(L) for a per-request curve, its share of a batched pass for a
  saturated one) over the class's lengths (mean m, squared coefficient of variation c_s^2). Erlang C gives
  P(wait) = C(c, a) with a = lambda_path m; the Allen-Cunneen correction scales the mean
  wait: W_q = C / (c/m - lambda_path) * (c_a^2 + c_s^2) / 2. The wait is taken as 0 with
  probability 1 - C and exponential with mean W_q / C otherwise (exact for M/M/c).
- The remote path adds the KV transfer. The link is shared (processor sharing): at link
  utilisation rho_L = lambda p E[S_kv | long] / B an arriving transfer finds N others in
  flight, P(N = n) = (1 - rho_L) rho_L^n (M/G/1-PS, PASTA), and is taken to keep the share it
  finds, B / (N + 1) (``link_shares``: a few bins of N, each at its conditional mean of N + 1).
  The mean of S (N + 1) / B is S / (B (1 - rho_L)), the exact PS sojourn time; unlike one
  deterministic B (1 - rho_L) the spread of N survives the pipelining below (Jensen: a busy
  link delays the unlucky transfers, not each by the same amount).
  With layer-wise pipelining only the part of S/B_n that outlasts the prefill adds to
  TTFT, plus the last layer's share S / (layers * B_n) and the RTT:
  X(L, n) = max(0, S(L)/B_n - T(L)) + S(L) / (layers * B_n) + RTT. With a transport model
  B_n is at most one transfer's rate (connections x one TCP connection's, ``timing.transport``).
- With cluster caches (``workload.cluster_cache``) the support is the regime's (L, h, g) classes: each
  path's T at the tokens that cluster computes, S at the KV it ships; a local request that
  receives cached KV over the link takes max(T, S_cached / B_n + RTT), and that KV counts in rho_L.
- TTFT per request = W + s(L), s = T (+ X), T the prefill latency of one prompt; its CDF is a mixture over the class's lengths,
  F(x) = sum_i w_i [(1 - C) 1{x >= s_i} + C (1 - exp(-(x - s_i) / theta)) 1{x >= s_i}],
  inverted numerically for P90 and P99. Overall TTFT mixes the two paths by 1 - p and p.
- TPOT: each PD-D instance produces r = lambda L_out / N_d tokens/s; its mean batch b solves
  b = r T_step(b) (Little's law) and TPOT = T_step(b) (``decode_model``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..profiles.model import expand_layers
from ..study.model import DecodeModel, PlanInputs
from .deployment import Deployment
from .throughput import per_token_count


def erlang_c(servers: int, offered: float) -> float:
    """Probability that an arrival waits in M/M/c with c servers and offered load a (Erlangs),
    via the Erlang B recursion (numerically stable). 1.0 when a >= c."""
    if servers <= 0 or offered >= servers:
        return 1.0
    if offered <= 0:
        return 0.0
    b = 1.0
    for k in range(1, servers + 1):
        b = offered * b / (k + offered * b)
    rho = offered / servers
    return b / (1 - rho * (1 - b))


# Bin edges of N, the transfers an arrival finds on the link: n = 0..7 each on its own (where the
# pipelining knee usually falls), then where the tail P(N >= n) = rho^n falls below each of these
# (so the bins follow the load).
_EXACT_SHARES = 8
_TAIL_PROBABILITIES = (0.35, 0.25, 0.15, 0.1, 0.05, 0.025, 0.01, 0.005, 0.002, 0.0005)


def link_shares(utilisation: float) -> tuple[np.ndarray, np.ndarray]:
    """(probabilities, multipliers): N + 1, the transfers sharing the link with an arriving one
    (itself included), in bins of N ~ Geometric, P(N = n) = (1 - rho) rho^n (M/G/1 processor
    sharing). Bin [a, a + k) has mass rho^a (1 - rho^k) and multiplier E[N + 1 | a <= N < a + k] =
    a + 1 + m, m the mean of a geometric truncated to 0 .. k - 1, 1 / (e^x - 1) - k / (e^(k x) - 1)
    with x = -ln rho (the last bin, k infinite: rho / (1 - rho)); so the bins' mean of N + 1 is
    1 / (1 - rho) exactly. Evaluated with expm1, and by its series when k x is small, so that
    rho near 1 keeps every bin's multiplier inside it. ``utilisation`` in [0, 1); 0 gives ([1], [1])."""
    rho = float(utilisation)
    if rho <= 0:
        return np.ones(1), np.ones(1)
    x = -math.log(rho)
    edges = set(range(_EXACT_SHARES))
    edges.update(max(_EXACT_SHARES, math.ceil(math.log(q) / math.log(rho))) for q in _TAIL_PROBABILITIES)
    lows = sorted(edges)
    mass, multiplier = [], []
    for a, b in zip(lows, [*lows[1:], None]):
        at_a = math.exp(-a * x)  # P(N >= a)
        if b is None:
            mass.append(at_a)
            multiplier.append(a + 1 + 1 / math.expm1(x))
            continue
        k = b - a
        mass.append(at_a * -math.expm1(-k * x))
        within = (k - 1) / 2 - (k * k - 1) * x / 12 if k * x < 1e-4 else 1 / math.expm1(x) - k / math.expm1(k * x)
        multiplier.append(a + 1 + min(max(within, 0.0), k - 1))
    probs, means = np.array(mass), np.array(multiplier)
    kept = probs > 1e-15
    return probs[kept], means[kept]


@dataclass(frozen=True)
class PathLatency:
    """TTFT of one path (seconds); infinite when the path is overloaded."""

    name: str
    arrival_rps: float
    servers: int
    utilisation: float
    wait_probability: float
    mean_wait_s: float
    mean_service_s: float  # prefill (+ transfer extra) without queueing
    mean_s: float
    p90_s: float = math.nan  # the quantiles: NaN until computed (LatencyModel.at)
    p99_s: float = math.nan

    @property
    def stable(self) -> bool:
        return math.isfinite(self.mean_s)


class _Mixture:
    """TTFT = W + s_i with probability w_i; W = 0 w.p. 1 - C, else Exp(theta).

    F(x) = sum_{s_i <= x} w_i [1 - C exp(-(x - s_i) / theta)]
         = S_w(x) - C exp(-x / theta) sum_{s_i <= x} w_i exp(s_i / theta),
    so with the s_i sorted once, prefix sums of w_i and (in log space, to avoid overflow)
    of w_i exp(s_i / theta) give F(x) in O(log n) per evaluation: a quantile by bisection
    costs 48 binary searches, not 48 passes over the distribution."""

    def __init__(self, weights: np.ndarray, service_s: np.ndarray, wait_probability: float, theta_s: float):
        order = np.argsort(service_s, kind="stable")
        self.weights = np.asarray(weights, dtype=float)[order]
        self.service_s = np.asarray(service_s, dtype=float)[order]
        self.wait_probability = wait_probability
        self.theta_s = theta_s
        self._cum_w = np.concatenate(([0.0], np.cumsum(self.weights)))
        self._cum_log: np.ndarray | None = None
        if theta_s > 0 and math.isfinite(theta_s) and self.weights.size and np.all(np.isfinite(self.service_s)):
            with np.errstate(divide="ignore"):
                terms = np.log(self.weights) + self.service_s / theta_s
            self._cum_log = np.concatenate(([-np.inf], np.logaddexp.accumulate(terms)))

    def cdf(self, x: float) -> float:
        """F(x); ``cdf_at`` gives the same value in one pass without the sorted prefix sums."""
        if not self.weights.size:
            return 1.0
        k = int(np.searchsorted(self.service_s, x, side="right"))
        below = float(self._cum_w[k])
        if math.isinf(self.theta_s):  # an unbounded wait: only requests that never wait are done
            return below * (1 - self.wait_probability)
        if k == 0 or self._cum_log is None:  # theta = 0: nobody waits
            return below
        return below - self.wait_probability * math.exp(float(self._cum_log[k]) - x / self.theta_s)


def cdf_at(weights: np.ndarray, service_s: np.ndarray, wait_probability: float, theta_s: float, x: float) -> float:
    """``_Mixture(weights, service_s, wait_probability, theta_s).cdf(x)`` in one vectorised pass,
    sum over s_i <= x of w_i [1 - C exp((s_i - x) / theta)] (exponents <= 0: no overflow): what
    an SLO check needs, F at its limit, without sorting the support or its log-space prefix sums."""
    if not weights.size:
        return 1.0
    done = service_s <= x
    below = float(weights[done].sum())
    if math.isinf(theta_s):
        return below * (1 - wait_probability)
    if not (theta_s > 0 and math.isfinite(theta_s)) or not np.all(np.isfinite(service_s)) or not done.any():
        return below
    return below - wait_probability * float(weights[done] @ np.exp((service_s[done] - x) / theta_s))


def _quantile(parts: list[tuple[float, _Mixture]], q: float) -> float:
    """The q-quantile of a weighted mixture of TTFT mixtures (bisection on the CDF)."""
    parts = [(share, m) for share, m in parts if share > 0 and m.weights.size]
    if not parts:
        return float("nan")
    if any(not math.isfinite(m.theta_s) for _, m in parts):
        return math.inf
    hi = max(float(m.service_s.max()) + m.theta_s * 50 + 1e-9 for _, m in parts)
    lo = 0.0
    for _ in range(48):  # resolution: range / 2^48
        mid = 0.5 * (lo + hi)
        if sum(share * m.cdf(mid) for share, m in parts) >= q:
            hi = mid
        else:
            lo = mid
    return hi


def _queue(lam: float, servers: int, service: np.ndarray, weights: np.ndarray, arrival_scv: float):
    """(utilisation, P(wait), mean wait, theta) of a G/G/c queue by Erlang C + Allen-Cunneen."""
    if lam <= 0 or not weights.size:
        return 0.0, 0.0, 0.0, 0.0
    return _queue_of(lam, servers, *_moments(service, weights), arrival_scv)


def _moments(service: np.ndarray, weights: np.ndarray) -> tuple[float, float]:
    """(mean, squared coefficient of variation) of the service time (s) under ``weights``."""
    if not weights.size:
        return 0.0, 0.0
    mean = float(np.sum(weights * service))
    return mean, (float(np.sum(weights * (service - mean) ** 2)) / mean**2 if mean > 0 else 0.0)


def _queue_of(lam: float, servers: int, mean: float, scv: float, arrival_scv: float):
    """``_queue`` from the service time's mean (s) and squared coefficient of variation."""
    if lam <= 0:
        return 0.0, 0.0, 0.0, 0.0
    offered = lam * mean
    if servers <= 0 or offered >= servers:
        return (math.inf if servers <= 0 else offered / servers), 1.0, math.inf, math.inf
    c = erlang_c(servers, offered)
    wait = c / (servers / mean - lam) * (arrival_scv + scv) / 2
    return offered / servers, c, wait, (wait / c if c > 0 else 0.0)


@dataclass(frozen=True)
class LatencyResult:
    deployment: Deployment
    rate_rps: float
    p: float
    local: PathLatency
    remote: PathLatency
    overall_mean_s: float
    overall_p90_s: float
    overall_p99_s: float
    link_utilisation: float  # offered KV load at this rate / usable link bandwidth (Link.utilisation)
    decode_batch: float | None  # None: decode saturated
    tpot_ms: float

    @property
    def stable(self) -> bool:
        return all(path.stable or path.arrival_rps == 0 for path in (self.local, self.remote)) and (self.decode_batch is not None)


@dataclass(frozen=True)
class SupportArrays:
    """Per support point of the input distribution: both clusters' prefill latency (TTFT on an
    idle instance), the instance-seconds a request holds (``capacity_s``, at most the latency) and
    S_kv. Computed once per scenario and shared by every deployment and rate."""

    lengths_tokens: np.ndarray
    weights: np.ndarray
    prfaas_s: np.ndarray
    pd_s: np.ndarray
    kv_bytes: np.ndarray
    layers: int
    prfaas_hold_s: np.ndarray
    pd_hold_s: np.ndarray
    local_kv_bytes: np.ndarray | None = None  # cached KV a local request receives over the link (cluster caches)

    @classmethod
    def of(cls, inputs: PlanInputs) -> SupportArrays:
        """Per support point, or with cluster caches per (L, h, g) class of the cache regime: its
        routing length, each cluster's own tokens, the KV it ships offloaded and received local."""
        routed = inputs.workload.routed
        f, pd = inputs.prfaas.curve, inputs.pd.curve
        assert f is not None and pd is not None  # the PrfaaS and PD pools prefill: only a decode-only pool has no curve
        layers = len(expand_layers(inputs.model))
        local_kv: np.ndarray | None = None
        if routed is None:  # strictly ascending lengths: per_token_count is the curve at each length
            x = inputs.input_dist.lengths_tokens
            weights, route, prfaas_tokens, pd_tokens, offload_kv = inputs.input_dist.probs, x, x, x, x
        else:
            weights, route, offload_kv = routed.probs, routed.route_tokens, routed.offload_kv_tokens
            prfaas_tokens, pd_tokens = routed.prfaas_tokens, routed.pd_tokens
            local_kv = np.zeros_like(routed.probs)
            moved = routed.local_kv_tokens > 0
            if moved.any():
                local_kv[moved] = per_token_count(f.kv_bytes, routed.local_kv_tokens[moved])
        prfaas_s = per_token_count(f.prefill_s, prfaas_tokens)
        pd_s = per_token_count(pd.prefill_s, pd_tokens)
        return cls(
            route,
            weights,
            prfaas_s,
            pd_s,
            per_token_count(f.kv_bytes, offload_kv),
            layers,
            np.minimum(per_token_count(f.capacity_s, prfaas_tokens), prfaas_s),
            np.minimum(per_token_count(pd.capacity_s, pd_tokens), pd_s),
            local_kv,
        )


class LatencyModel:
    """Closed-form latency of one deployment, evaluated at any rate (see module doc)."""

    def __init__(self, inputs: PlanInputs, deployment: Deployment, decode: DecodeModel, support: SupportArrays | None = None):
        self.inputs, self.deployment, self.decode = inputs, deployment, decode
        sup = support or SupportArrays.of(inputs)
        remote = sup.lengths_tokens > deployment.threshold_tokens
        self.p = float(sup.weights[remote].sum())
        local_kv = sup.local_kv_bytes if sup.local_kv_bytes is not None else np.zeros_like(sup.kv_bytes)
        self._paths = {}
        for name, mask, service, kv, hold, servers in (
            ("local", ~remote, sup.pd_s, local_kv, sup.pd_hold_s, deployment.n_p),
            ("remote", remote, sup.prfaas_s, sup.kv_bytes, sup.prfaas_hold_s, deployment.n_prfaas),
        ):
            share = float(sup.weights[mask].sum())
            w = sup.weights[mask] / share if share > 0 else sup.weights[mask]
            self._paths[name] = (share, w, service[mask], kv[mask], servers, hold[mask])
        self._layers = sup.layers
        # the queue sees the hold time, whose moments no rate changes
        self._moments = {name: _moments(path[5], path[1]) for name, path in self._paths.items()}
        self._mean_kv = {name: float(np.sum(path[1] * path[3])) if path[1].size else 0.0 for name, path in self._paths.items()}

    def _mixtures(self, rate_rps: float, arrival_scv: float):
        """Per path: (share, mixture, PathLatency without quantiles); and the link utilisation."""
        paths, link_util = self._paths_at(rate_rps, arrival_scv)
        mixtures = {
            name: (share, _Mixture(w, total, c, theta), path) for name, (share, w, total, c, theta, path) in paths.items()
        }
        return mixtures, link_util

    def _paths_at(self, rate_rps: float, arrival_scv: float):
        """Per path: (share, weights, TTFT service times s_i, P(wait), theta, PathLatency without
        quantiles), the parts of its TTFT mixture; and the link utilisation."""
        link = self.inputs.link
        bandwidth = link.usable_bytes_per_s
        link_util = link.utilisation(sum(rate_rps * self._paths[name][0] * self._mean_kv[name] for name in self._paths))
        # the seconds per byte a transfer sees in each bin of the link's sharing (link_shares); None:
        # the link carries nothing more
        sharing: tuple[np.ndarray, np.ndarray] | None = None  # (probability, seconds per byte) per bin
        if bandwidth > 0 and link_util < 1:
            shares, multipliers = link_shares(link_util)
            sharing = shares, np.maximum(multipliers / bandwidth, 1 / link.transfer_bytes_per_s)
        out = {}
        for name, (share, w, service, kv, servers, _hold) in self._paths.items():
            lam = rate_rps * share
            total = service
            uses_link = service.size and (name == "remote" or np.any(kv > 0))
            if uses_link and sharing is None:
                total = np.where((kv > 0) | (name == "remote"), math.inf, service)
            elif uses_link and sharing is not None:
                shares, per_byte_s = sharing
                sent_s = kv[:, None] * per_byte_s[None, :]  # (support point, bin of the link's sharing)
                prefill = service[:, None]
                if name == "remote":
                    full = prefill + np.maximum(0.0, sent_s - prefill) + sent_s / self._layers + link.rtt_s
                else:  # cached KV received during the prefill
                    full = np.maximum(prefill, sent_s + link.rtt_s * (kv[:, None] > 0))
                total = full.ravel()
                w = (w[:, None] * shares[None, :]).ravel()
            util, c, wait, theta = _queue_of(lam, servers, *self._moments[name], arrival_scv) if w.size else (0.0, 0.0, 0.0, 0.0)
            if service.size and not np.all(np.isfinite(total)):
                wait, c, theta = math.inf, 1.0, math.inf
            mean_service = float(np.sum(w * total)) if service.size else float("nan")
            out[name] = (
                share,
                w,
                total,
                c,
                theta,
                PathLatency(name, lam, servers, util, c, wait, mean_service, wait + mean_service),
            )
        return out, link_util

    def _tpot(self, rate_rps: float) -> tuple[float | None, float]:
        n_d = self.deployment.n_d
        r = rate_rps * self.inputs.output_mean_tokens / n_d if n_d > 0 else math.inf
        batch = self.decode.batch_at(r) if math.isfinite(r) else None
        return batch, (float(self.decode.step_s(batch)) * 1e3 if batch is not None else math.inf)

    def at(self, rate_rps: float, arrival_scv: float = 1.0) -> LatencyResult:
        """TTFT mean, P90 and P99 per path and overall, and TPOT, at ``rate_rps``."""
        paths, link_util = self._mixtures(rate_rps, arrival_scv)
        done = {}
        for name, (_, mix, path) in paths.items():  # a path without requests: NaN quantiles (_quantile)
            done[name] = replace(path, p90_s=_quantile([(1.0, mix)], 0.9), p99_s=_quantile([(1.0, mix)], 0.99))
        parts = [(share, mix) for share, mix, _ in paths.values()]
        overall_mean = sum(share * done[n].mean_s for n, (share, _, _) in paths.items() if share > 0)
        batch, tpot = self._tpot(rate_rps)
        return LatencyResult(
            self.deployment,
            rate_rps,
            self.p,
            done["local"],
            done["remote"],
            overall_mean,
            _quantile(parts, 0.9),
            _quantile(parts, 0.99),
            link_util,
            batch,
            tpot,
        )

    def meets(self, rate_rps: float, slo, arrival_scv: float = 1.0) -> bool:
        """Whether the SLO (ttft_p90_s, ttft_p99_s, tpot_ms; None = no limit) holds at the rate:
        checked on the CDF at each limit, F(limit) >= quantile, without inverting it."""
        paths, _ = self._paths_at(rate_rps, arrival_scv)
        parts = [part[:5] for part in paths.values() if part[0] > 0]
        for limit, q in ((slo.ttft_p90_s, 0.9), (slo.ttft_p99_s, 0.99)):
            if limit is not None and (
                any(not math.isfinite(theta) for *_, theta in parts)
                or sum(share * cdf_at(w, total, c, theta, limit) for share, w, total, c, theta in parts) < q
            ):
                return False
        batch, tpot = self._tpot(rate_rps)
        return batch is not None and (slo.tpot_ms is None or tpot <= slo.tpot_ms)
