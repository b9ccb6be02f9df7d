"""The planner: the paper's case study, optimiser properties, and degenerate scenarios."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracles.one_site import brute_force

from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.optimizer import optimise
from prfaas_plan.planner.throughput import bounds, stage_throughputs, threshold_table

SLOW = settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def case(case_inputs):
    return case_inputs


@pytest.fixture(scope="module")
def paper_plan(case_plan_paper):
    return case_plan_paper


def test_case_study_paper_mode_reproduces_table6(paper_plan):
    pt = paper_plan.point
    # t = 19.4K +- 1.5K (the paper's K here is 1,000 tokens: p = 0.496 at 19,400)
    assert 19_400 - 1_500 <= pt.threshold_tokens <= 19_400 + 1_500
    assert (pt.n_prfaas, pt.n_p, pt.n_d) == (4, 3, 5)
    assert pt.lambda_max == pytest.approx(3.24, rel=0.03)
    home = paper_plan.baselines["homogeneous"]
    assert (home.n_p, home.n_d) == (9, 3) and home.lambda_max == pytest.approx(2.11, rel=0.03)
    naive = paper_plan.baselines["naive_heterogeneous"]
    assert (naive.n_prfaas, naive.n_d) == (4, 8) and naive.lambda_max == pytest.approx(2.45, rel=0.03)
    assert paper_plan.ratio("prfaas_pd") == pytest.approx(1.54, abs=0.05)
    assert paper_plan.ratio("naive_heterogeneous") == pytest.approx(1.16, abs=0.05)
    # egress = Lambda x p x S_kv(l_long) in decimal Gbps (paper mode: S at the class mean length)
    s_long = float(paper_plan.inputs.prfaas.curve.kv_bytes([pt.l_long_tokens])[0])
    assert pt.stages.egress_gbps == pytest.approx(pt.lambda_max * pt.p * s_long * 8 / 1e9, rel=1e-9)
    assert pt.stages.egress_gbps == pytest.approx(13, rel=0.15)  # the paper: about 13 Gbps
    assert pt.p == pytest.approx(0.496, abs=0.02)
    assert pt.stages.theta_pdd == pytest.approx(3.91, rel=0.01)  # 5 x 800 tokens/s / 1024 tokens
    # at the optimum the two prefill paths balance (eq. 7)
    p = pt.p
    assert pt.stages.theta_prfaas / p == pytest.approx(pt.stages.theta_pdp / (1 - p), rel=0.02)


def test_equal_cost_gain_near_paper(paper_plan):
    """The paper reports about 15% more throughput than homogeneous PD at equal cost."""
    equal = paper_plan.baselines["homogeneous_equal_cost"]
    assert paper_plan.point.lambda_max / equal.lambda_max == pytest.approx(1.15, abs=0.05)


def _lambda_by_hand(inputs, mode: str) -> float:
    """Lambda_max of the case study's counts (4 PrfaaS, 8 PD split any way) maximised over every
    threshold, from the distribution's support directly (suffix sums; no ClassStats, no optimiser):
    exact mode uses the class means of T(L) and S(L), paper mode T and S at the class mean length."""
    lengths, w = inputs.input_dist.lengths_tokens, inputs.input_dist.probs
    curve_f, curve_pd = inputs.prfaas.curve, inputs.pd.curve
    suffix = lambda x: np.concatenate((np.cumsum(x[::-1])[::-1], [0.0]))  # noqa: E731  [k] = sum_{i>=k}
    prefix = lambda x: np.concatenate(([0.0], np.cumsum(x)))  # noqa: E731  [k] = sum_{i<k}
    p, q = suffix(w), prefix(w)  # requests k.. are long (L > t = lengths[k-1])
    with np.errstate(invalid="ignore", divide="ignore"):
        if mode == "exact":
            work_f, work_link = suffix(w * curve_f.prefill_s(lengths)), suffix(w * curve_f.kv_bytes(lengths))
            work_pd = prefix(w * curve_pd.prefill_s(lengths))
        else:
            l_long, l_short = suffix(w * lengths) / p, prefix(w * lengths) / q
            work_f = np.where(p > 0, p * curve_f.prefill_s(np.nan_to_num(l_long, nan=1.0)), 0.0)
            work_link = np.where(p > 0, p * curve_f.kv_bytes(np.nan_to_num(l_long, nan=1.0)), 0.0)
            work_pd = np.where(q > 0, q * curve_pd.prefill_s(np.nan_to_num(l_short, nan=1.0)), 0.0)
        over = lambda cap, work: np.where(work > 0, cap / work, np.inf)  # noqa: E731
        best = 0.0
        for n_p in range(9):
            lam = np.minimum.reduce(
                [over(4, work_f), over(100e9 / 8, work_link), over(n_p, work_pd), np.full_like(p, (8 - n_p) * 800 / 1024)]
            )
            best = max(best, float(lam.max()))
    return best


def test_exact_mode_states_jensen_gap(case, case_plan, run_cli):
    """Lambda_max in both modes and the Jensen gap 1 - exact/paper, against the brute force above."""
    exact, paper = _lambda_by_hand(case, "exact"), _lambda_by_hand(case, "paper")
    assert case_plan.point.lambda_max == pytest.approx(exact, rel=1e-9)
    assert case_plan.lambda_by_mode("paper") == pytest.approx(paper, rel=1e-9)
    assert case_plan.jensen_gap == pytest.approx(1 - exact / paper, rel=1e-9)
    assert exact < paper  # convex T: class means cost more
    res = run_cli("plan", "--mode", "exact")
    assert res.code == 0, res.err
    assert "Jensen gap" in res.out and f"{100 * case_plan.jensen_gap:.1f}%" in res.out


def test_plan_json_schema(run_cli):
    import json

    res = run_cli("plan", "paper-case-study", "--mode", "paper", "-f", "json")
    doc = json.loads(res.out)
    assert doc["mode"] == "paper"
    for key in (
        "threshold_tokens",
        "p",
        "n_prfaas",
        "n_p",
        "n_d",
        "theta_prfaas_rps",
        "theta_pdp_rps",
        "theta_pdd_rps",
        "lambda_max_rps",
        "egress_gbps",
        "binding",
    ):
        assert key in doc["prfaas_pd"]
    assert {"n_p", "n_d", "lambda_max_rps"} <= set(doc["baselines"]["homogeneous"])
    assert {"n_prfaas", "n_d", "lambda_max_rps"} <= set(doc["baselines"]["naive_heterogeneous"])
    csv_out = run_cli("plan", "--mode", "paper", "-f", "csv").out.splitlines()
    assert csv_out[0].startswith("scenario,model,") and csv_out[1].startswith("paper-case-study,prfaas-1t-hybrid,h200,8,h20,8")
    assert ",prfaas_pd," in csv_out[1]
    lam = float(csv_out[1].split(",")[csv_out[0].split(",").index("lambda_max_rps")])
    assert lam == pytest.approx(doc["prfaas_pd"]["lambda_max_rps"])


def test_lambda_never_exceeds_a_stage_bound(case):
    table = threshold_table(case, "exact")
    sol = optimise(case, table)
    st_ = stage_throughputs(table, sol.threshold_index, sol.n_prfaas, sol.n_p, sol.n_d, case)
    p = float(table.p[sol.threshold_index])
    assert st_.lambda_max <= st_.theta_prfaas / p + 1e-12
    assert st_.lambda_max <= st_.theta_pdp / (1 - p) + 1e-12
    assert st_.lambda_max <= st_.theta_pdd + 1e-12


def small(case, prfaas=(0, 3), pd=(1, 5), gbps=None, decode_tps=None):
    """The case study with small ranges (for brute force), optionally changed."""
    inputs = case.with_limits(prfaas_min=prfaas[0], prfaas_max=prfaas[1], pd_min=pd[0], pd_max=pd[1])
    if gbps is not None:
        inputs = inputs.with_link_gbps(gbps)
    if decode_tps is not None:
        inputs = inputs.with_decode_tokens_per_s(decode_tps)
    return inputs


@pytest.mark.slow
@SLOW
@given(
    st.integers(0, 3),
    st.integers(0, 3),
    st.integers(1, 4),
    st.integers(0, 4),
    st.sampled_from([0.5, 3.0, 10.0, 100.0]),
    st.sampled_from(["exact", "paper"]),
)
def test_milp_equals_brute_force(case, f_lo, f_span, pd_lo, pd_span, gbps, mode):
    inputs = small(case, (f_lo, f_lo + f_span), (pd_lo, pd_lo + pd_span), gbps)
    table = threshold_table(inputs, mode)
    brute = brute_force(inputs, table)
    if brute.lambda_max == 0:  # e.g. one PD instance and no PrfaaS: nothing can both prefill and decode
        with pytest.raises(PlanInputError, match="serve any request"):
            optimise(inputs, table, method="milp")
        return
    milp = optimise(inputs, table, method="milp")
    assert milp.lambda_max == pytest.approx(brute.lambda_max, rel=1e-6)
    # and no grid point does better: every threshold x every count combination
    idx = np.arange(len(table))
    for n_f in range(f_lo, f_lo + f_span + 1):
        for n_pd in range(pd_lo, pd_lo + pd_span + 1):
            for n_p in range(n_pd + 1):
                assert bounds(table, idx, n_f, n_p, n_pd - n_p, inputs).lambda_max.max() <= milp.lambda_max * (1 + 1e-9)


def best_lambda(inputs) -> float:
    """Lambda_max of the exhaustive optimum; 0 where no plan can serve anything."""
    try:
        return optimise(inputs, method="enumerate").lambda_max
    except PlanInputError as exc:
        if "serve any request" in str(exc):
            return 0.0
        raise


@SLOW
@given(st.floats(0.1, 200.0), st.floats(1.0, 50.0))
def test_more_bandwidth_never_hurts(case, gbps, extra):
    a = best_lambda(small(case, gbps=gbps))
    b = best_lambda(small(case, gbps=gbps + extra))
    assert b >= a * (1 - 1e-12)


@SLOW
@given(st.integers(0, 4), st.integers(1, 6), st.sampled_from(["prfaas", "pd"]))
def test_more_instances_never_hurt(case, n_f, n_pd, which):
    a = best_lambda(small(case, (n_f, n_f), (n_pd, n_pd)))
    grown = (n_f + 1, n_f + 1) if which == "prfaas" else (n_f, n_f)
    grown_pd = (n_pd + 1, n_pd + 1) if which == "pd" else (n_pd, n_pd)
    b = best_lambda(small(case, grown, grown_pd))
    assert b >= a * (1 - 1e-12)


@SLOW
@given(st.floats(1.05, 3.0), st.sampled_from(["prfaas", "pd", "decode"]))
def test_faster_hardware_never_hurts(case, factor, which):
    from prfaas_plan.timing.instance import Instance
    from prfaas_plan.timing.prefill import prefill_curve

    base = small(case, (4, 4), (8, 8))
    if which == "decode":
        faster = base.with_decode_tokens_per_s(base.decode.tokens_per_s_per_instance * factor)
    else:
        cluster = getattr(base, which)
        hw = cluster.instance.hardware
        peaks = hw.peak_tflops.model_copy(update={k: v * factor for k, v in hw.peak_tflops.model_dump().items() if v})
        inst = Instance(hw.model_copy(update={"peak_tflops": peaks, "name": hw.name + "-fast"}), cluster.instance.gpus)
        faster = replace(base, **{which: replace(cluster, instance=inst, curve=prefill_curve(base.model, inst, "roofline"))})
        base = replace(base, **{which: replace(cluster, curve=prefill_curve(base.model, cluster.instance, "roofline"))})
    a = best_lambda(base)
    b = best_lambda(faster)
    assert b >= a * (1 - 1e-12)


def test_optimiser_beats_every_threshold_for_its_counts(case):
    table = threshold_table(case, "paper")
    sol = optimise(case, table)
    lam = bounds(table, np.arange(len(table)), sol.n_prfaas, sol.n_p, sol.n_d, case).lambda_max
    assert sol.lambda_max >= lam.max() * (1 - 1e-12)


def test_min_cost_objective(case):
    inputs = small(case, (0, 6), (1, 12))
    table = threshold_table(inputs, "exact")
    target = 2.5
    sol = optimise(inputs, table, objective="min_cost", target_rps=target)
    assert sol.lambda_max >= target
    brute = optimise(inputs, table, objective="min_cost", target_rps=target, method="enumerate")
    assert sol.usd_per_hour == pytest.approx(brute.usd_per_hour)


def test_marginal_values_match_re_solves(paper_plan, case):
    m = paper_plan.marginal
    assert m["per_gbps"] == pytest.approx(0.0, abs=1e-9)  # the link is far from binding (12% used)
    assert m["per_prfaas_instance"] > 0 and m["per_pd_instance"] > 0
