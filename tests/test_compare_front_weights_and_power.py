"""What a purchasing committee reads off ``compare``, ``robust``, ``plan`` and their CSVs:

- the Pareto front (``*``) is over the criteria every feasible option has and the buyer asked
  for: $/hour only when every feasible option is priced; req/s only under max throughput (under
  ``min_cost`` every option serves the target); TTFT P90 always. Checked against a direct double
  loop written here;
- weights: robust case weights sum to 1 under every objective; a mixture's weights that do not
  sum to 1 are normalised, and the plan says so;
- power: a pool whose hardware has no ``tdp_w`` draws unknown power (None, ``-``), and the total
  is not a number that looks complete;
- notes say what is true of the option they are on; CSV columns a spreadsheet reads unambiguously.
"""

from __future__ import annotations

import csv
import io
import math

import numpy as np
import pytest
import yaml
from conftest import CASE_STUDY

from prfaas_plan.choices import ObjectiveKind
from prfaas_plan.planner.compare import OptionResult, pareto_front
from prfaas_plan.study.resolve.options import CompareOption


def dominated_by_hand(points: list[tuple | None], i: int) -> bool:
    """Whether another point is at least as good on every coordinate and better on one (each
    coordinate: less is better; None: not feasible)."""
    a = points[i]
    for j, b in enumerate(points):
        if j == i or b is None:
            continue
        if all(x <= y for x, y in zip(b, a)) and any(x < y for x, y in zip(b, a)):
            return True
    return False


@pytest.mark.parametrize("objective", list(ObjectiveKind))
@pytest.mark.parametrize("seed", range(6))
def test_front_is_the_non_dominated_set_over_the_known_criteria(objective, seed):
    """Random options, some unpriced, some with an unbounded TTFT, some infeasible: the front is
    the non-dominated set over ($/hour if all feasible are priced, req/s unless min_cost, TTFT)."""
    rng = np.random.default_rng(seed)
    n = 30
    results, raw = [], []
    for k in range(n):
        cost = float(rng.integers(1, 6)) if rng.random() > (0.15 if seed % 2 else 0.0) else None
        rate = float(rng.integers(1, 6))
        ttft = float(rng.integers(1, 6)) if rng.random() > 0.1 else None
        feasible = rng.random() > 0.1
        results.append(
            OptionResult(
                CompareOption(link_gbps=float(k)),
                failure=None if feasible else "invalid",
                usd_per_hour=cost,
                lambda_max_rps=rate,
                ttft_p90_s=ttft,
            )
        )
        raw.append((cost, rate, ttft) if feasible else None)
    all_priced = all(p[0] is not None for p in raw if p is not None)
    assert all_priced == (seed % 2 == 0)  # both cases are exercised

    def point(p):
        if p is None:
            return None
        cost, rate, ttft = p
        coords = [cost] if all_priced else []
        if objective != ObjectiveKind.min_cost:
            coords.append(-rate)
        coords.append(math.inf if ttft is None else ttft)
        return tuple(coords)

    points = [point(p) for p in raw]
    expected = {i for i, p in enumerate(points) if p is not None and not dominated_by_hand(points, i)}
    assert pareto_front(results, objective) == expected
    assert expected  # never empty while an option is feasible


def test_an_option_equal_but_for_float_noise_and_dearer_is_off_the_front():
    """Two options that serve the same req/s at the same TTFT P90 but for 5e-14 s of float noise
    (two routes to one number) and differ in $/hour: the dearer one is dominated, so not starred;
    a real difference (1e-6 s) still counts."""

    def option(k, usd, ttft):
        return OptionResult(CompareOption(link_gbps=float(k)), usd_per_hour=usd, lambda_max_rps=8.167, ttft_p90_s=ttft)

    noise = [option(0, 24.0, 1.2907805287953904), option(1, 30.6, 1.2907805287953398)]
    assert pareto_front(noise) == {0}
    real = [option(0, 24.0, 1.32), option(1, 30.6, 1.2907805)]  # 2.3% shorter: a gain worth its price
    assert pareto_front(real) == {0, 1}


def test_a_gain_under_one_percent_does_not_put_a_dearer_option_on_the_front():
    """phase-split's case: an option 10.8x dearer with fewer req/s is not starred for a TTFT P90
    1 ms (0.6%) shorter; two options within 1% on every criterion tie; a 1.1% gain is a gain, and
    a 1% saving is not. An option within 1% on every criterion but $/hour, 1.5% dearer, is off."""

    def option(k, usd, rate, ttft):
        return OptionResult(CompareOption(link_gbps=float(k)), usd_per_hour=usd, lambda_max_rps=rate, ttft_p90_s=ttft)

    assert pareto_front([option(0, 121.0, 43.4, 0.158), option(1, 1305.0, 36.9, 0.157)]) == {0}
    # within 1% on every criterion: a tie, neither beats the other, both starred
    assert pareto_front([option(0, 100.0, 10.0, 1.0), option(1, 101.0, 10.09, 1.0)]) == {0, 1}
    # 1.1% more req/s is a gain; 1% less $/hour is not: the other way round
    assert pareto_front([option(0, 100.0, 10.0, 1.0), option(1, 101.0, 10.11, 1.0)]) == {1}
    assert pareto_front([option(0, 100.0, 10.0, 1.0), option(1, 102.0, 10.11, 1.0)]) == {0, 1}
    assert pareto_front([option(0, 100.0, 10.0, 1.0), option(1, 101.5, 10.05, 0.995)]) == {0}
    # an option is dropped only for one that stays: B drops A, C drops B, so A (1.8% faster than C) stays
    chain = [option(0, 100.0, 10.0, 1.000), option(1, 50.0, 10.0, 1.009), option(2, 25.0, 10.0, 1.018)]
    assert pareto_front(chain) == {0, 2} and pareto_front([chain[0], chain[2]]) == {0, 1}


def test_unpriced_options_enter_the_front_and_beat_the_worse_priced_one(run_cli):
    """The trial's cases: rubin (no price) beats mi355x (no price) at equal req/s on TTFT, and
    beats h200 (priced) on req/s and TTFT; the table's note says $/hour is out of the front and why."""
    from prfaas_plan import api

    cmp = api.compare("paper-case-study", prfaas=["rubin", "mi355x"], jobs=1)
    by = {r.option.prfaas: i for i, r in enumerate(cmp.results)}
    rubin, mi = cmp.results[by["rubin"]], cmp.results[by["mi355x"]]
    assert rubin.usd_per_hour is None and mi.usd_per_hour is None
    assert rubin.capacity_rps == pytest.approx(mi.capacity_rps) and rubin.ttft_p90_s < mi.ttft_p90_s
    assert cmp.pareto == {by["rubin"]}

    cmp = api.compare("paper-case-study", prfaas=["h200", "rubin"], pd=["h20"], jobs=1)
    by = {r.option.prfaas: i for i, r in enumerate(cmp.results)}
    rubin, h200 = cmp.results[by["rubin"]], cmp.results[by["h200"]]
    assert rubin.capacity_rps > h200.capacity_rps and rubin.ttft_p90_s < h200.ttft_p90_s
    assert cmp.pareto == {by["rubin"]} and cmp.front == ("capacity_rps", "ttft_p90_s")
    rows = csv.DictReader(
        io.StringIO(run_cli("compare", "--prfaas", "h200,rubin", "--pd", "h20", "--jobs", "1", "-f", "csv").out)
    )
    assert {r["prfaas_hardware"]: r["pareto"] for r in rows} == {"rubin": "True", "h200": "False"}
    out = run_cli("compare", "--prfaas", "h200,rubin", "--pd", "h20", "--jobs", "1").out
    assert "front over req/s and TTFT P90" in out and "left out of the front" in out and "prfaas=rubin" in out


def test_min_cost_front_ignores_lambda_above_the_target(tmp_path):
    """Under min_cost both options serve the target at the same TTFT P90; the costlier one only
    has more Lambda_max, which the buyer did not ask for: it is not on the front."""
    from prfaas_plan import api

    doc = yaml.safe_load(CASE_STUDY.read_text())
    doc["objective"] = {"type": "min_cost", "target_rate_rps": 3}
    path = tmp_path / "min_cost.yaml"
    path.write_text(yaml.safe_dump(doc))
    cmp = api.compare(str(path), prfaas=["b200"], pd=["h20", "h200"], jobs=1)
    assert cmp.front == ("usd_per_hour", "ttft_p90_s")
    cheap, dear = cmp.results  # ranked: least $/hour first
    assert cheap.usd_per_hour < dear.usd_per_hour and dear.capacity_rps > cheap.capacity_rps
    assert dear.ttft_p90_s >= cheap.ttft_p90_s
    assert cmp.pareto == {0}
    # the old 3-criteria rule would have kept the costlier one (more Lambda_max): the change is live
    assert pareto_front(cmp.results, ObjectiveKind.max_throughput) == {0, 1}


# --------------------------------------------------------------------------------------------
# power of hardware without a TDP


def test_unknown_power_is_none_and_the_total_a_marked_lower_bound(run_cli, tmp_path, case_study_file):
    """The case study with Rubin CPX (no tdp_w) as PrfaaS: its pool's kW is null, the plan's kW
    and J/token are null, and the counted kW is the H20 pools' by hand (chips x TDP x (idle +
    (1 - idle) busy) x PUE); the text says '≥' and names what is not counted."""
    import json

    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.profiles.registry import resolve_hardware

    path = case_study_file(tmp_path, prfaas__hardware="rubin-cpx")
    res = run_cli("plan", path, "-f", "json")
    assert res.code == 0, res.err
    cost = json.loads(res.out)["operating"]["cost"]
    pools = {p["role"]: p for p in cost["pools"]}
    assert pools["prfaas"]["hardware"] == "rubin-cpx" and pools["prfaas"]["chips"] > 0
    assert pools["prfaas"]["power_kw"] is None
    assert cost["power_kw"] is None and cost["joules_per_output_token"] is None and cost["joules_per_token"] is None
    assert cost["power_not_counted"] == ["rubin-cpx"]
    h20 = resolve_hardware("h20")
    site = load_inputs(str(path)).pd.cost
    by_hand = sum(
        p["chips"] * h20.tdp_w * (site.idle_power_fraction + (1 - site.idle_power_fraction) * p["busy"]) * site.pue / 1000
        for role, p in pools.items()
        if role != "prfaas"
    )
    assert by_hand > 0 and cost["counted_power_kw"] == pytest.approx(by_hand, rel=1e-4)
    assert all(p["power_kw"] is not None for role, p in pools.items() if role != "prfaas")
    text = run_cli("plan", path).out
    assert f"≥ {by_hand:,.1f} kW at the meter, rubin-cpx not counted" in text, text
    assert "rubin-cpx busy" in text and "power not known" in text


def test_a_pool_without_instances_draws_nothing_and_a_full_plan_sums_its_pools():
    """Tco's totals by hand: an idle pool of unknown power is 0 (no chips), not unknown; with every
    pool known the total is the sum and J/token = kW x 1000 / tokens per second."""
    from prfaas_plan.planner.cost import PoolTco, Tco

    def pool(role, instances, kw):
        return PoolTco(role, role + "-hw", instances, 8 * instances, 0.5, 1.0, 0.0, kw, "rental")

    known = Tco(2.0, (pool("prfaas", 2, 10.0), pool("pd_prefill", 0, 0.0), pool("pd_decode", 3, 5.0)), 0.0, 0.0, 1000.0, 500.0)
    assert known.power_kw == pytest.approx(15.0) and known.power_not_counted == ()
    assert known.joules_per_output_token == pytest.approx(15.0 * 1000 / (2.0 * 500.0))
    partial = Tco(2.0, (pool("prfaas", 2, None), pool("pd_prefill", 0, 0.0), pool("pd_decode", 3, 5.0)), 0.0, 0.0, 1000.0, 500.0)
    assert partial.power_kw is None and partial.counted_power_kw == pytest.approx(5.0)
    assert partial.power_not_counted == ("prfaas-hw",) and partial.joules_per_token is None


def test_pool_tco_power_is_none_only_with_chips_and_no_tdp():
    from types import SimpleNamespace

    from prfaas_plan.planner.cost import pool_tco
    from prfaas_plan.study.prices import ChipCost

    def pool(tdp):
        return SimpleNamespace(
            role="prfaas", hardware_name="x", gpus_per_instance=8, cost=ChipCost(2.0, "rental", tdp, 0.1, 1.5, 0.25)
        )

    assert pool_tco(pool(None), 2, 0.5).power_kw is None
    assert pool_tco(pool(None), 0, 0.5).power_kw == 0.0
    # 16 chips x 1000 W x (0.25 + 0.75 x 0.5) x 1.5 = 15 kW
    assert pool_tco(pool(1000.0), 2, 0.5).power_kw == pytest.approx(16 * 1000 * (0.25 + 0.75 * 0.5) * 1.5 / 1000)


# --------------------------------------------------------------------------------------------
# weights: robust cases and workload mixtures

ROBUST = "prfaas_plan/scenarios/robust-three-mixes.yaml"


def robust_doc(objective: str, weights) -> dict:
    from conftest import REPO

    doc = yaml.safe_load((REPO / ROBUST).read_text())
    doc["robust"]["objective"] = objective
    if objective == "min_cost":
        doc["objective"] = {"type": "min_cost", "target_rate_rps": 2.0}
    for case, w in zip(doc["robust"]["cases"], weights):
        case.pop("weight", None)
        if w is not None:
            case["weight"] = w
    return doc


@pytest.mark.parametrize("objective", ["worst_case", "weighted", "min_cost"])
def test_robust_weights_that_do_not_sum_to_one_are_refused_under_every_objective(run_cli, tmp_path, objective):
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(robust_doc(objective, (0.5, 0.3, 0.3))))
    res = run_cli("robust", path)
    assert res.code == 2 and len(res.err.strip().splitlines()) == 1, res.err
    assert "robust" in res.err and "weights sum to 1.1, not 1" in res.err and str(path) in res.err


def test_robust_without_weights_prints_no_weighted_figure_and_with_them_their_sum(run_cli, tmp_path):
    """No weights (worst case): no 'weighted' figure. Weights summing to 1: the figure is
    sum_c w_c Lambda_c of the table's rows, never above the largest case."""
    path = tmp_path / "r.yaml"
    path.write_text(yaml.safe_dump(robust_doc("worst_case", (None, None, None))))
    res = run_cli("robust", path)
    assert res.code == 0, res.err
    assert "worst case" in res.out and "weighted" not in res.out
    path.write_text(yaml.safe_dump(robust_doc("worst_case", (0.4, 0.3, 0.3))))
    rows = list(csv.DictReader(io.StringIO(run_cli("robust", path, "-f", "csv").out)))
    weighted = sum(float(r["weight"]) * float(r["lambda_max_rps"]) for r in rows)
    assert weighted <= max(float(r["lambda_max_rps"]) for r in rows)
    assert f"weighted {weighted:.3f} req/s" in run_cli("robust", path).out


def test_mixture_weights_not_summing_to_one_are_normalised_with_a_note(tmp_path, case_study_file):
    """Weights 0.5 + 0.2: the plan's notes say so, with the shares 5/7 and 2/7 used; the
    distribution is the one of weights 5/7 and 2/7 (a fixed 2K component: its mass is 2/7)."""
    from prfaas_plan.planner.chips import load_inputs

    lognormal = yaml.safe_load(CASE_STUDY.read_text())["workload"]["input"]

    def inputs(w1, w2):
        mix = {"type": "mixture", "components": [dict(lognormal, weight=w1), {"type": "fixed", "tokens": 3000, "weight": w2}]}
        return load_inputs(str(case_study_file(tmp_path, workload__input=mix)))

    odd = inputs(0.5, 0.2)
    notes = [n for n in odd.notes if "mixture" in n]
    assert notes == [
        f"workload.input: the mixture's weights sum to 0.7, not 1: each is divided by the sum (shares {5 / 7:.3g}, {2 / 7:.3g})"
    ]
    dist = odd.workload.full_input_dist
    assert float(dist.probs[dist.lengths_tokens == 3000].sum()) == pytest.approx(2 / 7, abs=1e-9)
    assert not [n for n in inputs(5 / 7, 2 / 7).notes if "mixture" in n]


def test_prefix_cache_probs_not_summing_to_one_are_normalised_with_a_note(tmp_path, case_study_file):
    """Hit probabilities 0.6 + 0.5 are read as the shares 6/11 and 5/11, and the plan says so, as
    for a mixture's weights; probabilities that sum to 1 get no note."""
    from prfaas_plan.planner.chips import load_inputs

    def notes(probs):
        cache = {"hit_fractions": [0.0, 0.5], "probs": probs}
        return [n for n in load_inputs(str(case_study_file(tmp_path, workload__prefix_cache=cache))).notes if "probs" in n]

    assert notes([0.6, 0.5]) == [
        f"workload.prefix_cache: the probs sum to 1.1, not 1: each is divided by the sum (shares {6 / 11:.3g}, {5 / 11:.3g})"
    ]
    assert notes([0.5, 0.5]) == []
    # a cache per cluster: the same note, each under its own field
    cluster = {"pd": {"hit_fractions": [0.0, 0.5], "probs": [0.6, 0.5]}, "prfaas": {"hit_fractions": [0.0], "probs": [2.0]}}
    got = [n for n in load_inputs(str(case_study_file(tmp_path, workload__cluster_caches=cluster))).notes if "probs" in n]
    assert got == [
        "workload.cluster_caches.pd: the probs sum to 1.1, not 1: each is divided by the sum "
        f"(shares {6 / 11:.3g}, {5 / 11:.3g})",
        "workload.cluster_caches.prfaas: the probs sum to 2, not 1: each is divided by the sum (shares 1)",
    ]


def test_nested_mixture_notes_name_their_field():
    from prfaas_plan.profiles.workload_spec import MixtureSpec, mixture_weight_notes

    inner = {
        "type": "mixture",
        "weight": 0.5,
        "components": [{"type": "fixed", "tokens": 5, "weight": 2}, {"type": "fixed", "tokens": 6, "weight": 2}],
    }
    spec = MixtureSpec.model_validate({"type": "mixture", "components": [inner, {"type": "fixed", "tokens": 7, "weight": 0.5}]})
    assert mixture_weight_notes(spec, "workload.input") == [
        "workload.input.components[0]: the mixture's weights sum to 4, not 1: each is divided by the sum (shares 0.5, 0.5)"
    ]


# --------------------------------------------------------------------------------------------
# notes true of their option; CSV a spreadsheet reads


def test_a_dropped_cost_note_says_what_the_new_hardware_is_priced_at():
    """phase-split's PrfaaS pool has a Rubin CPX cost: moved onto rubin (no price) the note says
    rubin has no price; onto h200 it gives h200's example rental from its profile."""
    from prfaas_plan.profiles.registry import resolve_hardware, resolve_scenario_file
    from prfaas_plan.study.resolve import one_site

    base = one_site(*resolve_scenario_file("phase-split"))
    assert resolve_hardware("rubin").price_usd_per_gpu_hour is None
    notes = list(base.with_option(CompareOption(prfaas="rubin")).said)
    assert notes == [
        "prfaas on rubin: the cost of rubin-cpx dropped, and rubin has no price (no price_usd_per_gpu_hour in its profile)"
    ]
    price = resolve_hardware("h200").price_usd_per_gpu_hour
    notes = list(base.with_option(CompareOption(prfaas="h200")).said)
    assert notes == [
        f"prfaas on h200: the cost of rubin-cpx dropped (priced at its profile's example rental, ${price:,.2f} per GPU-hour)"
    ]
    assert not any("; " in n for n in notes)  # the compare CSV joins notes with '; '


def test_compare_csv_fills_the_chips_of_an_option_without_a_price(run_cli, tmp_path, case_study_file):
    """min_cost with rubin (no price): the row is 'no price' and still says its 8 + 8 chips (the
    scenario's fixed counts), and which curves it would use."""
    doc_path = case_study_file(tmp_path, objective={"type": "min_cost", "target_rate_rps": 2.0})
    res = run_cli("compare", doc_path, "--prfaas", "rubin", "--jobs", "1", "-f", "csv")
    assert res.code == 0, res.err
    (row,) = list(csv.DictReader(io.StringIO(res.out)))
    written = yaml.safe_load(doc_path.read_text())
    assert row["status"] == "no price"
    assert row["prfaas_gpus_per_instance"] == str(written["prfaas"]["gpus_per_instance"])
    assert row["pd_gpus_per_instance"] == str(written["pd"]["gpus_per_instance"])
    assert row["prfaas_prefill_source"] and row["decode_source"]


def test_robust_csv_has_one_number_a_column_and_names_fractions(run_cli):
    """No 'a/b/c' cell (a spreadsheet's date); the alone counts are the table's; the loss is a
    fraction (the table's percent / 100)."""
    from conftest import REPO

    from prfaas_plan import api

    rows = list(csv.DictReader(io.StringIO(run_cli("robust", REPO / ROBUST, "-f", "csv").out)))
    table = run_cli("robust", REPO / ROBUST).out
    own = {c.name: c.own_counts for c in api.robust(str(REPO / ROBUST)).cases}  # (N_prfaas, N_p, N_d) alone
    for r in rows:
        assert not any("/" in cell for cell in r.values())
        assert (int(r["own_n_prfaas"]), int(r["own_n_p"]), int(r["own_n_d"])) == tuple(own[r["case"]])
        alone = "/".join(map(str, own[r["case"]]))
        line = next(line for line in table.splitlines() if line.split()[:1] == [r["case"]])
        assert line.split()[-1] == alone and line.split()[-2] == f"{100 * float(r['loss_fraction']):.1f}%"
    assert "loss" not in rows[0] and "own_counts" not in rows[0]


def test_schedule_utilisation_is_a_named_fraction_of_capacity(run_cli):
    from conftest import DATA

    rows = list(csv.DictReader(io.StringIO(run_cli("schedule", DATA / "day_profile.yaml", "-f", "csv").out)))
    assert rows and "utilisation" not in rows[0]
    for r in rows:
        assert float(r["utilisation_fraction"]) == pytest.approx(float(r["rate_rps"]) / float(r["capacity_rps"]), rel=1e-5)
        assert float(r["static_utilisation_fraction"]) == pytest.approx(
            float(r["rate_rps"]) / float(r["static_capacity_rps"]), rel=1e-5
        )


def test_an_option_that_does_not_fit_keeps_the_chips_it_was_written_with(run_cli):
    """Not resolved (kimi-k2 does not fit 8 H20s): the chips are the scenario's fixed counts."""
    (row,) = list(csv.DictReader(io.StringIO(run_cli("compare", "--model", "kimi-k2", "--jobs", "1", "-f", "csv").out)))
    written = yaml.safe_load(CASE_STUDY.read_text())
    assert row["status"] == "does not fit"
    assert (row["prfaas_gpus_per_instance"], row["pd_gpus_per_instance"]) == (
        str(written["prfaas"]["gpus_per_instance"]),
        str(written["pd"]["gpus_per_instance"]),
    )


def test_compare_kw_cell_marks_a_lower_bound():
    from prfaas_plan.views.compare import _kw

    assert _kw({"power_kw": 51.72, "counted_power_kw": 51.72}) == "51.7"
    assert _kw({"power_kw": None, "counted_power_kw": 99.61}) == "≥ 99.6"
    assert _kw({"power_kw": None, "counted_power_kw": None}) == "-"
