"""Uncertainty on every answer: the empirical band of the instance model (residuals of the
published rows, leave-one-out), carried to estimate, plan and compare."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import math
import tomllib
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA, REPO

from prfaas_plan.planner.compare import OptionResult
from prfaas_plan.planner.uncertainty import versus_best
from prfaas_plan.study.resolve.options import CompareOption
from prfaas_plan.timing import uncertainty as u

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ROOT / "prfaas_plan" / "timing" / "residuals.csv"


def table(rows: list[tuple]) -> tuple[u.Residual, ...]:
    """A residual table from (id, group, orientation, engine, ratio predicted / measured)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(u.RESIDUAL_COLUMNS)
    for rid, group, orientation, engine, ratio in rows:
        writer.writerow([rid, "t", "k", group, orientation, engine, "h", repr(ratio)])
    return u.read_residuals(buf.getvalue())


# nine speeds off by x = ln(measured speed / predicted speed), by hand
XS = [-0.4, -0.3, -0.2, -0.1, 0.0, 0.1, 0.2, 0.3, 0.5]


def nine(engine="sglang", group="prefill") -> list[tuple]:
    """The nine x's as rows: the odd ones a rate (ratio e^-x), the even ones a time (ratio e^x)."""
    return [
        (f"R{i}", group, "rate" if i % 2 else "time", engine, math.exp(-x) if i % 2 else math.exp(x)) for i, x in enumerate(XS)
    ]


def test_order_statistic_interval_by_hand():
    """n = 9 at 80%: k = floor(10 x 0.1) = 1, so the band is [x_(1), x_(9)] = [-0.4, 0.5]: a rate
    of 100 lies in [100 e^-0.4, 100 e^0.5], a time of 2 s in [2 / e^0.5, 2 / e^-0.4]; a rate row
    and a time row with the same x count alike."""
    rows = table(nine())
    assert sorted(r.x for r in rows) == pytest.approx(sorted(XS))
    b = u.band("prefill", "sglang", rows, u.Method.order_statistic)
    assert (b.low, b.high) == pytest.approx((math.exp(-0.4), math.exp(0.5)))
    assert (b.pool, b.rows) == ("prefill/sglang", 9)
    assert b.rate(100.0) == pytest.approx((100 * math.exp(-0.4), 100 * math.exp(0.5)))
    assert b.time(2.0) == pytest.approx((2 / math.exp(0.5), 2 / math.exp(-0.4)))
    with pytest.raises(ValueError):  # 8 rows: k = floor(9 x 0.1) = 0, no finite interval
        u.interval(XS[:8], u.Method.order_statistic)


def test_t_band_by_hand():
    """x = (-0.1, 0.1, 0.3): mean 0.1, s = 0.2; t_{0.9, 2} = 1.886 (a t table), so the half width
    is 1.886 x 0.2 x sqrt(1 + 1/3) = 0.4356."""
    lo, hi = u.interval([-0.1, 0.1, 0.3], u.Method.t_band)
    half = 1.886 * 0.2 * math.sqrt(4 / 3)
    assert (lo, hi) == pytest.approx((0.1 - half, 0.1 + half), rel=1e-3)


def test_pooling_and_the_model_figure_inside():
    """A cell with fewer than the minimum rows takes its group's, then every row; the engine
    generic takes the group's; a band always holds the model's own figure (factor 1)."""
    rows = table(nine("trtllm") + [("S1", "prefill", "rate", "sglang", 0.5), ("D1", "decode", "rate", "vllm", 2.0)])
    cell = u.band("prefill", "sglang", rows)  # 1 sglang row: the prefill group's 10
    assert (cell.pool, cell.rows) == ("prefill", 10)
    x = sorted([*XS, -math.log(0.5)])  # k = floor(11 x 0.1) = 1
    assert (cell.low, cell.high) == pytest.approx((math.exp(x[0]), math.exp(x[-1])))
    assert u.band("prefill", "generic", rows).pool == "prefill"
    assert u.band("prefill", "trtllm", rows).pool == "prefill/trtllm"
    assert u.band("decode", "vllm", rows).pool == "all"  # 1 decode row: every row (11)
    slow = table([(f"R{i}", "e2e", "rate", "vllm", 2.0 + i) for i in range(9)])  # every measured speed below
    b = u.band("e2e", "vllm", slow)
    assert b.high == 1.0 and b.low == pytest.approx(1 / 10.0)


def test_leave_one_out_by_hand():
    """Ten distinct x's in one cell: without row i the band is the min and max of the other nine,
    which holds every row but the two extremes: coverage 8/10."""
    rows = table([(f"R{i}", "e2e", "rate", "trtllm", math.exp(-(i - 4.5))) for i in range(10)])
    loo = u.leave_one_out(rows)
    assert [inside for _, _, inside in loo.rows] == [False] + [True] * 8 + [False]
    assert loo.coverage == pytest.approx(0.8)
    _, first, _ = loo.rows[0]
    assert (first.low, first.high) == pytest.approx((math.exp(-3.5), math.exp(4.5)))


def test_leave_one_out_covers_the_published_rows():
    """On the shipped residuals, each row's band computed without it (the rows re-selected here)
    holds at least 80% of the rows."""
    rows = u.read_residuals(SHIPPED.read_text())
    inside = []
    for r in rows:
        others = tuple(o for o in rows if (o.set, o.id) != (r.set, r.id))
        b = u.band(r.group, r.engine, others)
        inside.append(math.log(b.low) <= r.x <= math.log(b.high))
    coverage = sum(inside) / len(inside)
    assert coverage >= 0.8, f"leave-one-out coverage {coverage:.1%}"
    assert u.leave_one_out(rows).coverage == pytest.approx(coverage)


def _tool():
    spec = importlib.util.spec_from_file_location("residuals_tool", ROOT / "tools" / "residuals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shipped_residuals_are_a_fresh_run_and_ship():
    """The package data is what tools/residuals.py writes now (one row per published row), it is
    in the package data of pyproject, and the library reads that file."""
    tool = _tool()
    assert SHIPPED.read_text() == tool.text(), "rerun tools/residuals.py"
    published = sum(1 for _ in csv.DictReader((ROOT / "tests/data/published_benchmarks.csv").open()))
    assert len(u.read_residuals()) >= published
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "residuals.csv" in data["prfaas_plan.timing"]
    rows = {r["id"]: r for r in csv.DictReader(SHIPPED.open())}
    assert rows["B14"]["engine"] == "sglang" and rows["B06"]["engine"] == "trtllm"  # the engine each row names
    assert rows["B15"]["engine"] == "vllm"


def _band_by_hand(group: str) -> tuple[float, float]:
    """The generic engine's band of a group from the shipped CSV, recounted: the group's rows if
    at least 9, else every row; [x_(k), x_(n+1-k)], k = floor((n + 1) / 10), widened to hold 0."""
    rows = list(csv.DictReader(SHIPPED.open()))

    def x(r):
        ratio = float(r["ratio_predicted_over_measured"])
        return -math.log(ratio) if r["orientation"] == "rate" else math.log(ratio)

    chosen = [x(r) for r in rows if r["group"] == group]
    if len(chosen) < 9:
        chosen = [x(r) for r in rows]
    chosen.sort()
    k = (len(chosen) + 1) // 10
    return math.exp(min(chosen[k - 1], 0.0)), math.exp(max(chosen[len(chosen) - k], 0.0))


def test_estimate_json_carries_a_range_for_every_figure(run_cli):
    out = run_cli("estimate", "deepseek-v3", "-g", "8", "-i", "4K", "-O", "512", "-f", "json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    (row,) = doc["rows"]
    figures = [
        ("ttft", "_s"),
        ("tpot", "_ms"),
        ("prefill", "_tokens_per_s"),
        ("prefill", "_tokens_per_s_per_gpu"),
        ("decode", "_tokens_per_s"),
        ("decode", "_tokens_per_s_per_gpu"),
        ("per_user", "_tokens_per_s"),
        ("e2e_output", "_tokens_per_s"),
        ("e2e_output", "_tokens_per_s_per_gpu"),
        ("e2e_steady_output", "_tokens_per_s"),
        ("e2e_latency", "_s"),
    ]
    for name, unit in figures:
        assert row[f"{name}_low{unit}"] <= row[name + unit] <= row[f"{name}_high{unit}"], name + unit
        assert row[f"{name}_low{unit}"] < row[f"{name}_high{unit}"], name + unit
    groups = {
        ("ttft", "_s"): ("prefill", "time"),
        ("prefill", "_tokens_per_s"): ("prefill", "rate"),
        ("tpot", "_ms"): ("decode", "time"),
        ("decode", "_tokens_per_s"): ("decode", "rate"),
        ("per_user", "_tokens_per_s"): ("decode", "rate"),
        ("e2e_output", "_tokens_per_s"): ("e2e", "rate"),
        ("e2e_latency", "_s"): ("e2e", "time"),
    }
    for (name, unit), (group, orientation) in groups.items():
        low, high = _band_by_hand(group)
        value = row[name + unit]
        expected = (value * low, value * high) if orientation == "rate" else (value / high, value / low)
        assert (row[f"{name}_low{unit}"], row[f"{name}_high{unit}"]) == pytest.approx(expected, rel=2e-4), name
    assert doc["uncertainty"]["engine"] == "generic"


def _check_plan_range(doc: dict, inputs) -> None:
    """Lambda_max low <= Lambda_max <= high, each the four bounds recomputed here with the plan's
    counts and threshold and each pool's rate times its factor; the operating rate moved with
    Lambda_max; $/Mtok low <= central <= high."""
    from prfaas_plan.planner.throughput import threshold_table

    pt, unc = doc["prfaas_pd"], doc["uncertainty"]
    bands = unc["bands"]
    assert pt["lambda_max_low_rps"] <= pt["lambda_max_rps"] <= pt["lambda_max_high_rps"]
    t = threshold_table(inputs, "exact")
    (idx,) = np.flatnonzero(np.isclose(t.thresholds_tokens, pt["threshold_tokens"]))
    r_d = inputs.decode.tokens_per_s_per_instance / inputs.output_mean_tokens
    link = inputs.link.usable_bytes_per_s / t.link_work_bytes[idx]
    for end in ("low", "high"):
        f_f, f_p, f_d = (bands[k][f"{end}_factor"] for k in ("prfaas_prefill", "pd_prefill", "decode"))
        pools = [(f_f * pt["n_prfaas"], t.prfaas_work_s[idx]), (f_p * pt["n_p"], t.pd_work_s[idx])]
        prefill = [rate / work if work > 0 else math.inf for rate, work in pools]  # a pool with no work binds nothing
        lam = min(*prefill, link, f_d * pt["n_d"] * r_d)
        assert pt[f"lambda_max_{end}_rps"] == pytest.approx(lam, rel=1e-5)
        assert unc[end]["lambda_max_rps"] == pytest.approx(lam, rel=1e-5)
        rate = doc["operating"]["rate_rps"] * lam / pt["lambda_max_rps"]  # operating_load x Lambda_max
        assert unc[end]["rate_rps"] == pytest.approx(rate, rel=1e-4)
    usd = unc["usd_per_mtok_output"]
    assert usd["low"] <= usd["central"] <= usd["high"]
    assert usd["central"] == pytest.approx(doc["operating"]["cost"]["usd_per_mtok_output"], rel=1e-6)


def test_plan_lambda_range_is_the_throughput_model_at_scaled_rates(run_cli, case_inputs):
    """plan -f json on the case study: every rate is measured or calibrated on measured points
    (the PrfaaS curve, the H20 prefill calibrated on two points, the decode rate the scenario
    gives), so each is taken as given and the range is the plan's own figure; the plan itself is
    unchanged (t 19,349, 4/3/5, Lambda_max 3.237)."""
    out = run_cli("plan", "paper-case-study", "-f", "json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    pt = doc["prfaas_pd"]
    assert round(pt["threshold_tokens"]) == 19349 and (pt["n_prfaas"], pt["n_p"], pt["n_d"]) == (4, 3, 5)
    assert pt["lambda_max_rps"] == pytest.approx(3.237, abs=5e-4)
    bands = doc["uncertainty"]["bands"]
    for name in ("prfaas_prefill", "pd_prefill", "decode"):
        assert bands[name]["low_factor"] == bands[name]["high_factor"] == 1.0, name
    assert "calibrated" in bands["pd_prefill"]["pool"]
    _check_plan_range(doc, case_inputs)


def test_plan_range_with_every_rate_modelled(case_study_file, tmp_path):
    """The case study on chips without measurements (PrfaaS on B200, PD on H100: the H20 points
    and decode rate do not apply), basis ``model``: every pool is on the roofline and has a band,
    and the range is the throughput model at the scaled rates."""
    from prfaas_plan.choices import Basis
    from prfaas_plan.planner.chips import choose, resolve_scenario_file
    from prfaas_plan.planner.plan import plan
    from prfaas_plan.views.plan import plan_json

    path = case_study_file(tmp_path, prfaas__hardware="b200", pd__hardware="h100")
    scenario, path = resolve_scenario_file(str(path))
    inputs = choose(scenario, path, Basis.model)
    doc = plan_json(plan(inputs, with_marginals=False, with_other_mode=False))
    for band in doc["uncertainty"]["bands"].values():
        assert band["low_factor"] < 1.0 < band["high_factor"], band
    _check_plan_range(doc, inputs)


def test_target_counts_at_the_low_end(run_cli, case_study_file, tmp_path):
    """min_cost: the counts the low end names serve the target when every modelled rate is at its
    low end (recomputed here at the best threshold), and cost no less than the plan's."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.throughput import threshold_table

    path = case_study_file(
        tmp_path,
        objective={"type": "min_cost", "target_rate_rps": 2.0},
        prfaas__instances={"min": 0, "max": 8},
        pd__instances={"min": 1, "max": 16},
    )
    out = run_cli("plan", str(path), "-f", "json")
    assert out.code == 0, out.err
    doc = json.loads(out.out)
    low = doc["uncertainty"]["low"]
    counts = low["target_counts"]
    assert counts is not None, low["note"]
    inputs = load_inputs(str(path))
    t = threshold_table(inputs, "exact")
    f = {k: doc["uncertainty"]["bands"][k]["low_factor"] for k in ("prfaas_prefill", "pd_prefill", "decode")}
    r_d = inputs.decode.tokens_per_s_per_instance / inputs.output_mean_tokens
    with np.errstate(divide="ignore"):
        lam = np.minimum.reduce(
            [
                np.where(t.prfaas_work_s > 0, f["prfaas_prefill"] * counts[0] / t.prfaas_work_s, np.inf),
                np.where(t.link_work_bytes > 0, inputs.link.usable_bytes_per_s / t.link_work_bytes, np.inf),
                np.where(t.pd_work_s > 0, f["pd_prefill"] * counts[1] / t.pd_work_s, np.inf),
                np.full(len(t), f["decode"] * counts[2] * r_d),
            ]
        )
    assert lam.max() >= 2.0 * (1 - 1e-9)
    pt = doc["prfaas_pd"]
    assert sum(counts) >= pt["n_prfaas"] + pt["n_p"] + pt["n_d"]


def _option(label_hw: str, lam: float, low: float, high: float, key: tuple) -> OptionResult:
    return OptionResult(
        CompareOption(prfaas=label_hw), lambda_max_rps=lam, lambda_low_rps=low, lambda_high_rps=high, error_key=key
    )


def test_compare_flags_options_the_band_cannot_tell_apart():
    """Against the best: overlapping ranges are not distinguishable, disjoint ones are; two with
    the same hardware, engine and band share the error, so a difference of theirs stands."""
    best = _option("a", 10.0, 6.0, 14.0, ("a",))
    near = _option("b", 9.0, 5.0, 13.0, ("b",))
    far = _option("c", 3.0, 2.0, 4.5, ("c",))
    twin = _option("a", 9.0, 5.4, 12.6, ("a",))
    verdicts = versus_best([best, near, far, twin], "max_throughput")
    assert verdicts[0].text == "best"
    assert verdicts[1].distinguishable is False and not verdicts[1].shared_error
    assert verdicts[2].distinguishable is True
    assert verdicts[3].distinguishable is True and verdicts[3].shared_error


def test_compare_json_ranges_and_flags(run_cli):
    out = run_cli("compare", "--prfaas", "h200,b200", "--pd", "h20", "--jobs", "1", "-f", "json")
    assert out.code == 0, out.err
    rows = [r for r in json.loads(out.out)["options"] if r["status"] == "ok"]
    assert rows[0]["versus_best"] == "best"
    for r in rows:
        assert r["capacity_low_rps"] <= r["capacity_rps"] <= r["capacity_high_rps"]
        assert r["usd_per_mtok_output_low"] <= r["usd_per_mtok_output"] <= r["usd_per_mtok_output_high"]

    def zero_width(r):
        return r["capacity_low_rps"] == r["capacity_high_rps"]

    for r in rows[1:]:
        apart = r["capacity_high_rps"] < rows[0]["capacity_low_rps"]
        if not r["shares_error_with_best"]:
            # a rate measured or calibrated on measured points has no band: no ground to tell them apart
            expected = None if zero_width(r) or zero_width(rows[0]) else apart
            assert r["distinguishable_from_best"] is expected, r


def test_options_of_other_models_do_not_share_the_model_error(run_cli):
    """Two models on the same chips and engine are not timed by a common error (residuals on one chip
    and engine range widely across models): compare does not call their difference certain."""
    out = run_cli(
        "compare", "--prfaas", "b200", "--pd", "h100", "--model", "prfaas-1t-hybrid,kimi-linear-48b", "--jobs", "1", "-f", "json"
    )
    assert out.code == 0, out.err
    rows = [r for r in json.loads(out.out)["options"] if r["status"] == "ok"]
    assert len(rows) == 2 and not rows[1]["shares_error_with_best"]
    apart = (
        rows[1]["capacity_high_rps"] < rows[0]["capacity_low_rps"] or rows[0]["capacity_high_rps"] < rows[1]["capacity_low_rps"]
    )
    assert rows[1]["distinguishable_from_best"] is apart


def test_a_renamed_repriced_copy_shares_the_error_and_a_faster_one_does_not(run_cli, tmp_path):
    """A copy of h200 under another name at a contract price is the same chip to the instance model
    (its speed figures are h200's): its difference from h200 is certain ('shared error'), not lost in
    the band; a copy with more memory is other hardware, whose error need not match."""
    shipped = (REPO / "hardware_profiles" / "h200.yaml").read_text()
    contract = tmp_path / "h200-contract.yaml"
    contract.write_text(
        shipped.replace("name: h200\n", "name: h200-contract\n").replace(
            "price_usd_per_gpu_hour: 4.0", "price_usd_per_gpu_hour: 3.1"
        )
    )
    bigger = tmp_path / "h200-big.yaml"
    bigger.write_text(shipped.replace("name: h200\n", "name: h200-big\n").replace("memory_gib: 141", "memory_gib: 282"))
    assert contract.read_text() != shipped and bigger.read_text() != shipped
    scenario = DATA / "busy_link.yaml"
    for copy, shared in ((contract, True), (bigger, False)):
        out = run_cli("compare", scenario, "--prfaas", f"h200,{copy}", "--jobs", "1", "-f", "json")
        assert out.code == 0, out.err
        rows = [r for r in json.loads(out.out)["options"] if r["status"] == "ok"]
        assert len(rows) == 2 and rows[1]["shares_error_with_best"] is shared, (copy.name, rows[1]["versus_best"])
        if shared:
            assert rows[1]["versus_best"].startswith("shared error")


def test_an_slo_plans_cost_range_says_its_goodput_was_not_re_evaluated(run_cli, tmp_path):
    """Under an SLO the operating rate of each end is the goodput moved with Λ_max, not the rate at
    which the latency holds at that end: the $/Mtok range line says so; without an SLO it does not."""
    import yaml

    doc = yaml.safe_load((DATA / "busy_link.yaml").read_text())
    plain = run_cli("plan", DATA / "busy_link.yaml").out
    doc["slo"] = {"ttft_p90_s": 12.0}
    path = tmp_path / "slo.yaml"
    path.write_text(yaml.safe_dump(doc))
    with_slo = run_cli("plan", path).out
    line = next(x for x in with_slo.splitlines() if "$/Mtok range" in x)
    assert "the SLO goodput moved with Λ_max, its latency not re-evaluated" in line
    assert "not re-evaluated" not in next(x for x in plain.splitlines() if "$/Mtok range" in x)
