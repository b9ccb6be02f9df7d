"""An SLO plan under min_cost needs one steady target rate: without one (a day scenario, whose
windows are the schedule's targets) ``plan`` refuses it as the plan without an SLO does."""

from pathlib import Path

import pytest
import yaml

from prfaas_plan.errors import PlanInputError

REPO = Path(__file__).resolve().parents[1]
DAY = REPO / "prfaas_plan" / "scenarios" / "day-rebalance.yaml"
NEEDS_TARGET = "min_cost needs target_rate_rps to plan one steady rate"


def _day_min_cost(tmp_path: Path, slo: dict | None) -> Path:
    doc = yaml.safe_load(DAY.read_text())
    doc["objective"] = {"type": "min_cost"}
    if slo is not None:
        doc["slo"] = slo
    path = tmp_path / "day-min-cost.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_slo_plan_without_target_is_refused_like_plain_plan(tmp_path, run_cli):
    plain = run_cli("plan", _day_min_cost(tmp_path, None))
    with_slo = run_cli("plan", _day_min_cost(tmp_path, {"ttft_p90_s": 5.0}))
    for res in (plain, with_slo):
        assert res.code == 2, (res.code, res.err)
        assert res.out == "" and "Traceback" not in res.err and "internal error" not in res.err
        lines = res.err.strip().splitlines()
        assert len(lines) == 1 and "objective.target_rate_rps" in lines[0] and NEEDS_TARGET in lines[0], res.err
    assert with_slo.err == plain.err


def test_slo_optimise_min_cost_without_target_names_the_field():
    from prfaas_plan.api import inputs as load_inputs
    from prfaas_plan.planner.slo import slo_optimise
    from prfaas_plan.planner.throughput import threshold_table
    from prfaas_plan.study.model import Slo, decode_model

    inputs = load_inputs(str(DAY))
    with pytest.raises(PlanInputError) as err:
        slo_optimise(inputs, threshold_table(inputs), decode_model(inputs), Slo(ttft_p90_s=5.0), objective="min_cost")
    assert err.value.field == "objective.target_rate_rps" and NEEDS_TARGET in str(err.value)


def test_an_slo_target_no_plan_reaches_is_refused_with_the_most_any_serves():
    """min_cost at 30 req/s under a TTFT P90 of 4 s on the case study's ranges: no plan reaches it,
    and the error says what the ranges can do under the SLO, the max-goodput plan's figure and counts."""
    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.slo import slo_optimise
    from prfaas_plan.planner.throughput import threshold_table
    from prfaas_plan.study.model import Slo, decode_model

    inputs = load_inputs("paper-case-study").with_limits(prfaas_min=2, prfaas_max=4)
    table, decode, slo = threshold_table(inputs), decode_model(inputs), Slo(ttft_p90_s=4.0)
    most = slo_optimise(inputs, table, decode, slo)
    with pytest.raises(PlanInputError) as err:
        slo_optimise(inputs, table, decode, slo, objective="min_cost", target_rps=30.0)
    dep = most.deployment
    assert err.value.field == "slo" and str(err.value).endswith(
        f"reaches 30 req/s under it: the most any serves is {most.goodput_rps:.3g} req/s "
        f"(N_prfaas {dep.n_prfaas}, N_p {dep.n_p}, N_d {dep.n_d})"
    ), str(err.value)
    assert 0 < most.goodput_rps < 30
