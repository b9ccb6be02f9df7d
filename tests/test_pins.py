"""Pins of the latency, simulator, calibration and optimiser formulas against independent sources.

Every expected value below is computed in the test itself, from a formula written out by
hand, a brute-force loop or a property, never copied from the code's output:

1. TPOT: r = lambda L_out / N_d per PD-D instance, b solving b = r T_step(b) (Little's law)
   by bisection here, TPOT = T_step(b); independent of N_p, invariant under (N_d, lambda) -> 2x.
2. RTT: the closed-form remote TTFT moves by exactly the RTT difference.
3. Layer-wise pipelining in the closed form: remote TTFT = T + max(0, S/B - T) + S/(layers B) + RTT.
4. Simulator: a lone remote request on a fluid link has TTFT = max(T, S/B) + RTT.
5. Calibration minimises the log residuals, not the absolute ones.
6. Optimiser ties: among thresholds with the same Lambda_max, the largest min(PrfaaS, PD-P bound).
7. Link utilisation = egress / usable bandwidth (decimal: 1 Gbps = 1.25e8 B/s).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import yaml

from prfaas_plan import api
from prfaas_plan.planner.deployment import Deployment
from prfaas_plan.planner.latency import LatencyModel
from prfaas_plan.planner.optimizer import optimise
from prfaas_plan.planner.plan import plan
from prfaas_plan.planner.throughput import bounds, threshold_table
from prfaas_plan.profiles.model import expand_layers
from prfaas_plan.profiles.scenario import load_scenario
from prfaas_plan.simulate import SimConfig, simulate
from prfaas_plan.study.model import decode_model
from prfaas_plan.study.resolve import build_inputs
from prfaas_plan.timing.calibrate import CalibrationPoint, calibrate
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.prefill import RooflinePrefill

PLAN = Deployment("prfaas_pd", 19349.0, 4, 3, 5)  # the case study's operating point
FIXED_L = 65536  # tokens of the single-length workload
BYTES_PER_GBPS = 1e9 / 8  # decimal: 1 Gbps = 1.25e8 bytes/s


def _inputs_of(path):
    return build_inputs(load_scenario(yaml.safe_load(path.read_text()), str(path)), str(path))


@pytest.fixture
def fixed_inputs(tmp_path, case_study_file):
    """The case study with every request FIXED_L tokens long (one support point, p = 1 above t)."""
    return _inputs_of(case_study_file(tmp_path, workload__input={"type": "fixed", "tokens": FIXED_L}))


def _with_rtt(inputs, rtt_s: float):
    return dataclasses.replace(inputs, link=dataclasses.replace(inputs.link, rtt_s=rtt_s))


# ---------------------------------------------------------------------------------------
# 1. TPOT


def _step_s(dec, b: float) -> float:
    """T_step(b): the table T_step(1..BS) read linearly between integers, b clipped to [1, BS]."""
    steps = dec.step_s_by_batch
    b = min(max(b, 1.0), float(len(steps)))
    k = min(int(math.floor(b)), len(steps) - 1)  # 1-based lower integer
    return float(steps[k - 1] + (b - k) * (steps[k] - steps[k - 1])) if k < len(steps) else float(steps[-1])


def _little_batch(dec, tokens_per_s: float) -> float:
    """The b solving b = r T_step(b), by bisection on f(b) = b - r T_step(b) over [0, BS]."""
    lo, hi = 0.0, float(dec.batch_size)
    assert hi - tokens_per_s * _step_s(dec, hi) > 0, "below saturation by construction"
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid - tokens_per_s * _step_s(dec, mid) >= 0:
            hi = mid
        else:
            lo = mid
    return 0.5 * (lo + hi)


@pytest.mark.parametrize("rate", [0.3, 1.5, 2.5])
def test_tpot_is_step_time_at_littles_law_batch(case_inputs, rate):
    """r = lambda L_out / N_d; b = r T_step(b) (bisection here); TPOT = 1000 T_step(b) ms."""
    dec = decode_model(case_inputs)
    r = rate * case_inputs.output_mean_tokens / PLAN.n_d
    b = _little_batch(dec, r)
    assert b == pytest.approx(r * _step_s(dec, b), rel=1e-9)  # the fixed point holds
    lat = LatencyModel(case_inputs, PLAN, dec).at(rate)
    assert lat.decode_batch == pytest.approx(b, rel=1e-6)
    assert lat.tpot_ms == pytest.approx(1e3 * _step_s(dec, b), rel=1e-6)


def test_tpot_depends_on_decode_instances_only(case_inputs):
    """TPOT(lambda; N_p, N_d) = TPOT(lambda; N_p', N_d) = TPOT(2 lambda; N_p, 2 N_d): r = lambda L_out / N_d."""
    dec = decode_model(case_inputs)
    rate = 1.2

    def tpot(n_p: int, n_d: int, lam: float) -> float:
        return LatencyModel(case_inputs, dataclasses.replace(PLAN, n_p=n_p, n_d=n_d), dec).at(lam).tpot_ms

    base = tpot(3, 5, rate)
    for n_p in (1, 6, 12):
        assert tpot(n_p, 5, rate) == pytest.approx(base, rel=1e-12)
    assert tpot(3, 10, 2 * rate) == pytest.approx(base, rel=1e-12)
    assert tpot(3, 4, rate) > base  # fewer decode instances, bigger batch, slower step


# ---------------------------------------------------------------------------------------
# 2. RTT in the closed form


def test_closed_form_remote_ttft_shifts_by_the_rtt(case_inputs):
    """Only link.rtt_s changes: remote TTFT (mean, P90, P99) moves by exactly rtt' - rtt; local stays."""
    dec = decode_model(case_inputs)
    rate = 1.5  # about 6 Gbps of egress on a 100 Gbps link
    near = LatencyModel(_with_rtt(case_inputs, 0.010), PLAN, dec).at(rate)
    far = LatencyModel(_with_rtt(case_inputs, 0.060), PLAN, dec).at(rate)
    assert near.link_utilisation < 0.1
    assert far.remote.mean_s - near.remote.mean_s == pytest.approx(0.050, abs=1e-9)
    assert far.remote.p90_s - near.remote.p90_s == pytest.approx(0.050, abs=1e-6)
    assert far.remote.p99_s - near.remote.p99_s == pytest.approx(0.050, abs=1e-6)
    assert far.remote.mean_wait_s == pytest.approx(near.remote.mean_wait_s, rel=1e-12)
    assert far.local.mean_s == pytest.approx(near.local.mean_s, rel=1e-12)


# ---------------------------------------------------------------------------------------
# 3. Layer-wise pipelining in the closed form


def _frozen_share_ttft_s(t_prefill: float, s_kv: float, usable: float, rho: float, layers: int, rtt: float) -> float:
    """Remote TTFT without queueing by brute force over N, the transfers an arrival finds on a
    processor-sharing link (P(N = n) = (1 - rho) rho^n), each keeping the share B / (N + 1):
    E[T + max(0, S (N + 1) / B - T) + S (N + 1) / (layers B)] + RTT, summed to a negligible tail."""
    n = np.arange(20000)
    prob = (1 - rho) * rho**n if rho > 0 else (n == 0).astype(float)
    sent = s_kv * (n + 1) / usable
    return float(np.sum(prob * (t_prefill + np.maximum(0.0, sent - t_prefill) + sent / layers))) + rtt


# S/B = 1.03 s < T = 3.49 s (hidden on an idle link); S/B = 10.3 s > T. Link utilisation 0 (a lone
# request), 0.5 and 0.8 (a busy link, where an even B (1 - rho) would hide the transfer's spread).
@pytest.mark.parametrize("gbps", [10.0, 1.0])
@pytest.mark.parametrize("rho", [1e-7, 0.5, 0.8])
def test_closed_form_pipelined_transfer(fixed_inputs, gbps, rho):
    """Remote TTFT = T(L) + max(0, S/B_n - T(L)) + S/(layers B_n) + RTT with B_n = B / (N + 1), N the
    transfers in flight (geometric at link utilisation rho), against a brute-force sum over N; when
    the transfer outlasts the prefill at every N its mean is the exact processor-sharing sojourn,
    S / (B (1 - rho)) (1 + 1 / layers) + RTT."""
    inputs = fixed_inputs.with_link_gbps(gbps)
    dep = Deployment("prfaas_pd", 1000.0, 4, 3, 5)  # every request (L = 65,536) goes remote
    t_prefill = float(inputs.prfaas.curve.prefill_s(np.array([FIXED_L]))[0])
    s_kv = float(inputs.prfaas.curve.kv_bytes(np.array([FIXED_L]))[0])
    layers = len(expand_layers(inputs.model))
    usable = gbps * BYTES_PER_GBPS * inputs.link.usable_fraction
    rate = rho * usable / s_kv
    rtt = inputs.link.rtt_s
    hidden = s_kv / usable < t_prefill
    assert hidden == (gbps == 10.0)  # one case of each kind, as constructed
    lat = LatencyModel(inputs, dep, decode_model(inputs)).at(rate)
    assert lat.p == 1.0 and lat.link_utilisation == pytest.approx(rho, rel=1e-9)
    expected = _frozen_share_ttft_s(t_prefill, s_kv, usable, rho, layers, rtt)
    assert lat.remote.mean_service_s == pytest.approx(expected, rel=1e-9)
    if not hidden:
        assert lat.remote.mean_service_s == pytest.approx(s_kv / (usable * (1 - rho)) * (1 + 1 / layers) + rtt, rel=1e-9)
    if rho < 1e-3:  # a lone request: no queueing, and the transfer has the link to itself
        lone = t_prefill + max(0.0, s_kv / usable - t_prefill) + s_kv / (layers * usable) + rtt
        assert lat.remote.mean_s == pytest.approx(lone, rel=1e-5)
        assert lat.remote.p90_s == pytest.approx(lone, rel=1e-5)
    elif hidden:  # Jensen: the spread of N makes the mean exceed the even share's
        b_eff = usable * (1 - rho)
        even = t_prefill + max(0.0, s_kv / b_eff - t_prefill) + s_kv / (layers * b_eff) + rtt
        assert lat.remote.mean_service_s > even * 1.01


# ---------------------------------------------------------------------------------------
# 4. RTT and pipelining in the simulator


@pytest.mark.parametrize("gbps", [100.0, 1.0])
def test_simulated_lone_remote_request(fixed_inputs, gbps):
    """A lone remote request: KV is produced at S/T and sent as produced, so the last byte leaves at
    max(T, S/B); TTFT = max(T(L), S/B) + RTT (= T + RTT on a link much faster than S/T)."""
    inputs = _with_rtt(fixed_inputs.with_link_gbps(gbps), 0.040)
    dep = Deployment("prfaas_pd", 1000.0, 4, 3, 5)
    t_prefill = float(inputs.prfaas.curve.prefill_s(np.array([FIXED_L]))[0])
    s_kv = float(inputs.prfaas.curve.kv_bytes(np.array([FIXED_L]))[0])
    usable = gbps * BYTES_PER_GBPS
    expected = max(t_prefill, s_kv / usable) + 0.040
    config = SimConfig(rate_rps=1e-3, requests=3, seed=0, warmup_fraction=0.0)
    result = simulate(inputs, dep, decode_model(inputs), config)
    arrivals = result.per_request["arrival_s"]
    assert np.all(np.diff(arrivals) > 2 * expected)  # no two requests overlap: each is alone
    assert result.per_request["remote"].all()
    np.testing.assert_allclose(result.per_request["ttft_s"], expected, rtol=1e-9)


# ---------------------------------------------------------------------------------------
# 5. Calibration on relative residuals


def test_calibration_minimises_log_residuals():
    """The fit minimises sum (log T_pred - log T_meas)^2: every +-1% (and +-0.1%) move of a fitted
    parameter raises it; sum (T_pred - T_meas)^2 is lowered by some such move (its optimum differs)."""
    model, hw = api.model_of("prfaas-1t-hybrid"), api.hardware_of("h200")

    def with_eff(values):
        return hw.model_copy(update={"efficiency": hw.efficiency.model_copy(update=values)})

    # calibration holds the layout the base profile gives the lowest TTFT
    layout = RooflinePrefill(model, Instance(hw, 8), capacity="per_request").layout

    def predict(values):
        return RooflinePrefill(model, Instance(with_eff(values), 8, layout)).prefill_s(lengths)

    truth = {"matmul": 0.45, "attention": 0.22, "prefill_overhead_s": 0.15}
    lengths = np.array([1024, 8192, 32768, 131072])
    measured = predict(truth) * np.array([1.05, 0.96, 1.03, 0.98])
    result = calibrate(model, hw, 8, [CalibrationPoint(int(l), float(t)) for l, t in zip(lengths, measured)])
    fitted = dict(result.fitted)
    assert set(fitted) == set(truth)

    def log_sse(values):
        return float(np.sum((np.log(predict(values)) - np.log(measured)) ** 2))

    def abs_sse(values):
        return float(np.sum((predict(values) - measured) ** 2))

    def moved(key, factor):
        return {**fitted, key: fitted[key] * factor}

    moves = [(k, f) for k in fitted for f in (0.99, 1.01, 0.999, 1.001)]
    at_fit = log_sse(fitted)
    for key, factor in moves:
        assert log_sse(moved(key, factor)) >= at_fit * (1 - 1e-9), (key, factor)
    assert any(abs_sse(moved(key, factor)) < abs_sse(fitted) * (1 - 1e-3) for key, factor in moves)


# ---------------------------------------------------------------------------------------
# 6. The optimiser's balance point among ties


@pytest.mark.parametrize("method", ["enumerate", "milp"])
def test_balance_point_among_tied_thresholds(case_inputs, method):
    """Decode binds (Lambda = N_d * tokens_per_s / L_out at many t); the chosen t maximises
    min(PrfaaS bound, PD-P bound) over the tied thresholds, by brute force."""
    tokens_per_s = 400.0
    inputs = case_inputs.with_limits(prfaas_min=2, prfaas_max=2, pd_min=6, pd_max=6).with_decode_tokens_per_s(tokens_per_s)
    table = threshold_table(inputs)
    sol = optimise(inputs, table, method=method)
    everywhere = np.arange(len(table))
    # the counts are the best of every split of the 6 PD instances (brute force)
    best_split = max(float(bounds(table, everywhere, 2, n_p, 6 - n_p, inputs).lambda_max.max()) for n_p in range(7))
    assert sol.lambda_max == pytest.approx(best_split, rel=1e-7)
    b = bounds(table, everywhere, sol.n_prfaas, sol.n_p, sol.n_d, inputs)
    lam = b.lambda_max
    assert lam.max() == pytest.approx(sol.n_d * tokens_per_s / inputs.output_mean_tokens, rel=1e-12)  # decode binds
    tied = np.flatnonzero(lam >= lam.max() * (1 - 1e-7))
    assert len(tied) > 10  # many thresholds tie, as constructed
    balance = [min(float(b.prfaas_compute[k]), float(b.link[k]), float(b.pd_prefill[k])) for k in tied]
    want = int(tied[int(np.argmax(balance))])
    assert sol.threshold_index in set(tied.tolist())
    chosen = min(float(b.prfaas[sol.threshold_index]), float(b.pd_prefill[sol.threshold_index]))
    assert chosen == pytest.approx(max(balance), rel=1e-12)
    assert sol.threshold_index == want
    assert sol.threshold_tokens == table.thresholds_tokens[want]


# ---------------------------------------------------------------------------------------
# 7. Link utilisation


def _hand_egress(inputs, threshold_tokens: float, lam: float) -> float:
    """Lambda p E[S | L > t] in bytes/s, from the length distribution's support and S_kv(L)."""
    dist = inputs.input_dist
    long = dist.lengths_tokens > threshold_tokens
    p = float(dist.probs[long].sum())
    mean_kv_long = float(np.sum(dist.probs[long] * inputs.prfaas.curve.kv_bytes(dist.lengths_tokens[long]))) / p
    return lam * p * mean_kv_long


def test_link_utilisation_is_egress_over_usable(tmp_path, case_study_file):
    """usable_fraction 0.5 on 100 Gbps: utilisation = Lambda p E[S|long] / (0.5 * 100 * 1.25e8 B/s),
    at Lambda_max (the plan) and at any rate (the closed form)."""
    inputs = _inputs_of(case_study_file(tmp_path, link__usable_fraction=0.5))
    usable = 0.5 * 100 * BYTES_PER_GBPS
    point = plan(inputs, "exact", with_marginals=False).point
    egress = _hand_egress(inputs, point.threshold_tokens, point.lambda_max)
    assert point.p > 0
    assert point.link_utilisation == pytest.approx(egress / usable, rel=1e-9)
    assert point.stages.egress_gbps == pytest.approx(egress / BYTES_PER_GBPS, rel=1e-9)
    rate = 1.7
    lat = LatencyModel(inputs, PLAN, decode_model(inputs)).at(rate)
    assert lat.link_utilisation == pytest.approx(_hand_egress(inputs, PLAN.threshold_tokens, rate) / usable, rel=1e-9)


def test_link_utilisation_on_15_gbps(case_inputs):
    """with_link_gbps(15): utilisation = egress of the re-planned case / (15 * 1.25e8 B/s), about 0.81
    (docs/planning.md: the plan offloads ~12 Gbps)."""
    inputs = case_inputs.with_link_gbps(15)
    point = plan(inputs, "exact", with_marginals=False).point
    egress = _hand_egress(inputs, point.threshold_tokens, point.lambda_max)
    assert point.link_utilisation == pytest.approx(egress / (15 * BYTES_PER_GBPS), rel=1e-9)
    assert point.link_utilisation == pytest.approx(point.stages.egress_gbps / 15, rel=1e-9)
    assert point.link_utilisation == pytest.approx(0.81, abs=0.01)


@pytest.mark.parametrize("rho", [1e-7, 0.3, 0.8, 0.95, 1 - 1e-6, 1 - 1e-9, 1 - 1e-12])
def test_link_share_bins_keep_the_geometric_mass_and_mean_to_saturation(rho):
    """The bins of N ~ Geometric(rho) hold all its mass, their mean of N + 1 is 1 / (1 - rho), and
    each bin's multiplier lies inside it (N = 0, 1, 2 exactly 1, 2, 3), also a hair below saturation,
    where differences of tail sums would lose every digit."""
    from prfaas_plan.planner.latency import link_shares

    probs, multipliers = link_shares(rho)
    assert probs.sum() == pytest.approx(1.0, rel=1e-12)
    assert float(probs @ multipliers) * (1 - rho) == pytest.approx(1.0, rel=1e-9)
    np.testing.assert_array_equal(multipliers[:3], [1.0, 2.0, 3.0])
    assert np.all(np.diff(multipliers) > 0)


@pytest.mark.parametrize("knee", [6.5, 20.5])
def test_a_bin_that_straddles_the_pipelining_knee_stays_close_to_the_exact_sum(fixed_inputs, knee):
    """At link utilisation 0.9 and S/B = T / knee the transfer starts to outlast the prefill at N + 1
    = knee: at 6.5 within the bins of one N each (N = 0 .. 7), at 20.5 inside a bin of several
    (N = 19 .. 21), where collapsing the bin to its mean under-counts max(0, .) (Jensen); the closed
    form stays within 1% of the brute-force sum over every N."""
    inputs = fixed_inputs
    t_prefill = float(inputs.prfaas.curve.prefill_s(np.array([FIXED_L]))[0])
    s_kv = float(inputs.prfaas.curve.kv_bytes(np.array([FIXED_L]))[0])
    gbps = knee * s_kv / t_prefill / BYTES_PER_GBPS / inputs.link.usable_fraction
    inputs = inputs.with_link_gbps(gbps)
    usable = gbps * BYTES_PER_GBPS * inputs.link.usable_fraction
    rho = 0.9
    dep = Deployment("prfaas_pd", 1000.0, 4, 3, 5)
    lat = LatencyModel(inputs, dep, decode_model(inputs)).at(rho * usable / s_kv)
    layers = len(expand_layers(inputs.model))
    exact = _frozen_share_ttft_s(t_prefill, s_kv, usable, rho, layers, inputs.link.rtt_s)
    assert lat.remote.mean_service_s == pytest.approx(exact, rel=0.01)
