"""Every line of a report describes the plan shown: the paper's figures only beside the paper's
case study, one name per meaning of link utilisation (plan and compare, CSV and JSON), one set
of time-series names in every format, published CSVs without their optional columns, goodput
under an SLO for every deployment, a routing table a router can follow, and docs examples
that are the commands' real output."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from conftest import DATA

from prfaas_plan.errors import PlanInputError


def _keys(doc) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(doc, dict):
        return set(doc) | set().union(*(_keys(v) for v in doc.values()))
    if isinstance(doc, list):
        return set().union(*(_keys(v) for v in doc)) if doc else set()
    return set()


# --------------------------------------------------------------------------------------------
# the paper's figures only on the paper's case study


def test_paper_figures_only_beside_the_case_study(case_plan, case_inputs, tmp_path, case_study_file):
    """The case study (and a copy under another name) quotes the paper's -50% / -64%; the same
    scenario with a 15 Gbps link, or phase-split, is another deployment and quotes nothing."""
    from dataclasses import replace

    from prfaas_plan.planner.chips import load_inputs
    from prfaas_plan.planner.paper import is_case_study
    from prfaas_plan.views.plan import latency_json, latency_view

    assert is_case_study(case_inputs)
    assert is_case_study(replace(case_inputs, name="my-copy"))
    assert is_case_study(load_inputs(str(case_study_file(tmp_path, name="renamed"))))
    assert not is_case_study(case_inputs.with_usable_link_gbps(15.0))
    assert not is_case_study(load_inputs(str(case_study_file(tmp_path, link__bandwidth_gbps=15))))
    assert not is_case_study(load_inputs(str(case_study_file(tmp_path, link__usable_fraction=0.5))))
    assert not is_case_study(load_inputs("phase-split"))

    doc = latency_json(case_plan)
    assert doc["paper_ttft_reduction_vs_homogeneous"] == {"mean": 0.50, "p90": 0.64}
    assert any("paper's case study: mean -50%, P90 -64%" in n for n in latency_view(case_plan).notes)


def test_no_paper_figures_on_another_scenario(case_plan):
    """The same plan's report with inputs that are not the case study: no paper line, no paper JSON."""
    from dataclasses import replace

    from prfaas_plan.views.plan import latency_json, latency_view

    other = replace(case_plan, inputs=case_plan.inputs.with_usable_link_gbps(15.0))
    assert latency_json(other)["paper_ttft_reduction_vs_homogeneous"] is None
    notes = latency_view(other).notes
    assert not any("paper" in n for n in notes)
    assert any(n.startswith("PrfaaS-PD vs homogeneous TTFT: mean") for n in notes)


# --------------------------------------------------------------------------------------------
# link utilisation: one name per meaning


def test_link_utilisation_names_one_meaning_each(case_plan):
    """plan JSON: ``link_utilisation_at_capacity`` is KV egress at Λ_max over the usable link (for
    the plan and every baseline), ``link_utilisation_at_operating_rate`` the same at the operating
    rate (egress is linear in the rate at one threshold, so it is the former x rate / Λ_max); no
    field is called plain ``link_utilisation``. The CSV has both, under the same names."""
    from prfaas_plan.report import to_csv
    from prfaas_plan.views.plan import plan_json, plan_view

    doc = plan_json(case_plan)
    usable = doc["link"]["usable_gbps"]
    pd = doc["prfaas_pd"]
    assert pd["link_utilisation_at_capacity"] == pytest.approx(pd["egress_gbps"] / usable, rel=1e-4)
    for b in doc["baselines"].values():
        assert b["link_utilisation_at_capacity"] == pytest.approx(b["egress_gbps"] / usable, rel=1e-4, abs=1e-6)
    assert doc["baselines"]["naive_heterogeneous"]["link_utilisation_at_capacity"] > 0  # all KV crosses
    op = doc["operating"]
    assert op["link_utilisation_at_operating_rate"] == pytest.approx(
        pd["link_utilisation_at_capacity"] * op["rate_rps"] / pd["lambda_max_rps"], rel=1e-4
    )
    assert op["link_utilisation_at_operating_rate"] < pd["link_utilisation_at_capacity"]
    assert "link_utilisation" not in _keys(doc)

    rows = list(csv.DictReader(io.StringIO(to_csv(plan_view(case_plan)))))
    assert float(rows[0]["link_utilisation_at_capacity"]) == pytest.approx(pd["link_utilisation_at_capacity"])
    assert float(rows[0]["link_utilisation_at_operating_rate"]) == pytest.approx(op["link_utilisation_at_operating_rate"])
    assert "link_utilisation" not in rows[0] and "operating_link_utilisation" not in rows[0]


def test_compare_and_plan_call_the_same_figure_by_the_same_name(run_cli):
    """compare (JSON and CSV) of phase-split's own pools gives the plan's two utilisations under
    the plan's names."""
    args = ("phase-split", "--prfaas", "rubin-cpx", "--pd", "h200", "--decode", "groq-lpu", "--jobs", "1")
    res = run_cli("compare", *args, "-f", "json")
    assert res.code == 0, res.err
    option = json.loads(res.out)["options"][0]
    res = run_cli("compare", *args, "-f", "csv")
    assert res.code == 0, res.err
    row = next(csv.DictReader(io.StringIO(res.out)))
    res = run_cli("plan", "phase-split", "-f", "json")
    assert res.code == 0, res.err
    plan = json.loads(res.out)
    assert option["lambda_max_rps"] == pytest.approx(plan["prfaas_pd"]["lambda_max_rps"], rel=1e-6)
    assert option["link_utilisation_at_capacity"] == pytest.approx(plan["prfaas_pd"]["link_utilisation_at_capacity"])
    assert option["link_utilisation_at_operating_rate"] == pytest.approx(plan["operating"]["link_utilisation_at_operating_rate"])
    for key in ("link_utilisation_at_capacity", "link_utilisation_at_operating_rate"):
        assert float(row[key]) == pytest.approx(option[key])
    assert "link_utilisation" not in row and "link_utilisation" not in option


# --------------------------------------------------------------------------------------------
# simulate: one set of time-series names


def test_simulation_series_have_one_name_in_json_and_csv():
    """The JSON ``timeseries`` keys are the CSV's columns after the identity, the queues in
    waiting requests (``*_queue_requests``), and the values agree."""
    from prfaas_plan import api
    from prfaas_plan.report import to_csv
    from prfaas_plan.views.simulation import timeseries_report

    run = api.simulate("paper-case-study", requests=200)
    series = run.result.to_json_dict()["timeseries"]
    rows = list(csv.DictReader(io.StringIO(to_csv(timeseries_report(run)))))
    header = list(rows[0])
    assert header[-len(series) :] == list(series)
    assert {"prfaas_queue_requests", "pdp_queue_requests", "decode_queue_requests"} <= set(series)
    assert not {"prfaas_queue", "pdp_queue", "decode_queue"} & (set(series) | set(header))
    assert [float(r["pdp_queue_requests"]) for r in rows] == series["pdp_queue_requests"]


# --------------------------------------------------------------------------------------------
# published measurements: optional columns may be absent


def _published_subset(tmp_path, columns: list[str], ids=("B01", "B05")) -> str:
    rows = [r for r in csv.DictReader(io.StringIO((DATA / "published_benchmarks.csv").read_text())) if r["id"] in ids]
    path = tmp_path / "mine.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    return str(path)


def test_published_csv_without_optional_columns(tmp_path):
    """A CSV with only the required columns and the ones its rows use predicts as the full CSV
    does: each absent optional column is a blank cell (its documented default)."""
    from prfaas_plan import published

    full = {
        p.id: p.predicted
        for p in published.predict_all(
            _published_subset(
                tmp_path, list(csv.DictReader(io.StringIO((DATA / "published_benchmarks.csv").read_text())).fieldnames)
            )
        )
    }
    # B01 and B05 (prefill): blank requests, context, batch and batch_scope in the shipped CSV
    needed = [*published.REQUIRED_COLUMNS, "unit_gpus", "engine", "parallelism", "input_len", "output_len", "dtype_override"]
    assert not {"requests", "context", "batch", "batch_scope"} & set(needed)
    short = {p.id: p.predicted for p in published.predict_all(_published_subset(tmp_path, needed))}
    assert short == full and set(full) == {"B01", "B05"}


@pytest.mark.parametrize("drop", ["measured", "kind", "gpus"])
def test_published_csv_without_a_required_column(tmp_path, drop):
    """A required column missing from the header is one error naming it and the required set."""
    from prfaas_plan import published

    columns = [c for c in published.REQUIRED_COLUMNS if c != drop]
    with pytest.raises(PlanInputError) as err:
        published.predict_all(_published_subset(tmp_path, columns))
    assert f"no column {drop}" in str(err.value) and "required: id, kind" in str(err.value)


# --------------------------------------------------------------------------------------------
# route-table: a dead link keeps everything local; rows beyond the link are what-ifs


def test_route_table_keeps_everything_local_where_nothing_can_be_offloaded():
    """phase-split (no local prefill: N_p = 0) at 0 Gbps serves nothing at any threshold; the tie
    once picked t = 0, all onto the dead link. The row must offload nothing (p = 0 at the table's
    largest threshold); with a link every row offloads (its only prefill), and p never rises as
    the bandwidth falls."""
    from prfaas_plan import api
    from prfaas_plan.planner.throughput import threshold_table

    table = api.route_table("phase-split", points=4)
    assert table.point.n_p == 0
    rows = table.rows
    assert rows[0].usable_gbps == 0.0
    thresholds = threshold_table(table.inputs)
    assert rows[0].p == 0.0 and rows[0].egress_gbps == 0.0
    assert rows[0].threshold_tokens == float(thresholds.thresholds_tokens.max())
    assert all(r.p > 0 for r in rows[1:])
    assert all(a.p <= b.p for a, b in zip(rows, rows[1:]))


def test_route_table_marks_rows_beyond_the_link():
    """Rows above the scenario's usable bandwidth are what-ifs (``beyond_link``), named in a note;
    the planned row and every row at or below it are not."""
    from prfaas_plan import api
    from prfaas_plan.views.plan import route_table_view

    table = api.route_table("paper-case-study", start=0, stop=250, points=6)
    usable = table.inputs.link.usable_gbps
    assert [r.beyond_link for r in table.rows] == [r.usable_gbps > usable for r in table.rows]
    assert any(r.beyond_link for r in table.rows) and not next(r for r in table.rows if r.planned).beyond_link
    view = route_table_view(table)
    assert any("what-if" in n and f"{usable:g} Gbps" in n for n in view.notes)
    assert [row["beyond_link"] for row in view.rows] == [r.beyond_link for r in table.rows]
    within = api.route_table("paper-case-study", start=0, stop=usable, points=4)
    assert not any(r.beyond_link for r in within.rows)
    assert not any("what-if" in n for n in route_table_view(within).notes)


# --------------------------------------------------------------------------------------------
# with an SLO every deployment's goodput is shown and "vs homog" divides goodputs


@pytest.fixture(scope="module")
def slo_plan(case_inputs):
    """The case study with a P90 TTFT target of 12 s, which the homogeneous baseline meets at
    some rate (at 4 s it meets it at none)."""
    from dataclasses import replace

    from prfaas_plan.planner.plan import plan
    from prfaas_plan.study.model import Slo

    return plan(replace(case_inputs, slo=Slo(ttft_p90_s=12.0)), "exact", with_marginals=False, with_other_mode=False)


def test_slo_goodput_of_every_deployment(slo_plan):
    """Each deployment's goodput is the largest rate whose closed-form P90 TTFT meets the target
    (checked here on the latency itself: met just below, missed just above unless it is Λ_max),
    and 'vs homog' is goodput over the homogeneous baseline's goodput, not Λ_max."""
    from prfaas_plan.planner.deployment import deployments_of
    from prfaas_plan.planner.latency import LatencyModel
    from prfaas_plan.planner.plan import local_inputs_of
    from prfaas_plan.study.model import decode_model

    result = slo_plan
    deps = deployments_of(result)
    assert set(result.goodputs) == set(deps)
    assert result.goodputs["prfaas_pd"] == result.goodput_rps
    capacity = {"prfaas_pd": result.point.lambda_max, **{n: b.lambda_max for n, b in result.baselines.items()}}
    decode = decode_model(result.inputs)
    for name, dep in deps.items():
        model = LatencyModel(result.inputs if dep.n_prfaas else local_inputs_of(result.inputs), dep, decode)
        good = result.goodputs[name]
        assert 0 < good <= capacity[name]
        assert model.at(good * (1 - 1e-6)).overall_p90_s <= 12.0 * (1 + 1e-6)
        if good < capacity[name] * (1 - 1e-6):
            assert model.at(min(good * 1.001, capacity[name] * (1 - 1e-9))).overall_p90_s > 12.0
    homog = result.goodputs["homogeneous"]
    for name in ("prfaas_pd", "naive_heterogeneous"):
        assert result.ratio(name) == pytest.approx(result.goodputs[name] / homog, rel=1e-12)
    assert result.ratio("prfaas_pd") != pytest.approx(result.point.lambda_max / result.baselines["homogeneous"].lambda_max)


def test_slo_goodput_in_the_table_json_and_note(slo_plan, case_plan):
    from prfaas_plan.report import to_csv
    from prfaas_plan.views.plan import plan_json, plan_view

    doc = plan_json(slo_plan)
    assert doc["prfaas_pd"]["goodput_rps"] == pytest.approx(slo_plan.goodput_rps, rel=1e-6)
    colocated = doc["baselines"].pop("colocated")  # Λ_max only: no latency model, so no goodput and no ratio
    assert colocated["goodput_rps"] is None and colocated["ratio_vs_homogeneous"] is None
    for name, b in doc["baselines"].items():
        assert b["goodput_rps"] == pytest.approx(slo_plan.goodputs[name], rel=1e-6)
        assert b["ratio_vs_homogeneous"] == pytest.approx(slo_plan.goodputs[name] / slo_plan.goodputs["homogeneous"], rel=1e-5)
    view = plan_view(slo_plan)
    assert "goodput" in [c.header for c in view.columns]
    assert view.notes[0].startswith("vs homog: goodput under the SLO")
    rows = list(csv.DictReader(io.StringIO(to_csv(view))))
    assert [float(r["goodput_rps"]) for r in rows if r["deployment"] != "colocated"] == [
        doc["prfaas_pd"]["goodput_rps"],
        *(b["goodput_rps"] for b in doc["baselines"].values()),
    ]
    plain = plan_view(case_plan)  # no SLO: no goodput column, the ratio is of Λ_max
    assert "goodput" not in [c.header for c in plain.columns]
    assert plain.notes[0] == "vs homog: Λ_max over the homogeneous baseline's"
    assert plan_json(case_plan)["prfaas_pd"]["goodput_rps"] is None


# --------------------------------------------------------------------------------------------
# docs/planning.md's plan examples are the commands' real output


def _docs_plan_examples() -> list[tuple[list[str], str]]:
    """Each example of docs/planning.md's `plan` sections (plan to the baselines): the command
    quoted as "(`prfaas-plan plan ...`):" and the block (a ``` block or a Markdown table) after it."""
    from conftest import REPO

    text = (REPO / "docs" / "planning.md").read_text()
    section = text[text.index("## `prfaas-plan plan ") : text.index("## Baselines under the same rules")]
    found = re.findall(r"\(`prfaas-plan (plan[^`]*)`\):\n\n(```\n.*?```|(?:\|[^\n]*\n)+)", section, re.S)
    return [(command.split()[1:], block) for command, block in found]


def _numbers(text: str) -> list[str]:
    return re.findall(r"-?\d[\d,]*\.?\d*", text.replace("−", "-"))


@pytest.mark.slow
def test_docs_plan_examples_are_the_real_output(run_cli):
    """Every line of a docs/planning.md plan block is a line of the command's output; every number
    of its latency table is in its deployment's output row, in order; the common rate and the
    TTFT reductions quoted beside the table are the output's."""
    from conftest import REPO

    examples = _docs_plan_examples()
    assert {"```" in block for _, block in examples} == {True, False}  # a table block and a latency table
    for args, block in examples:
        res = run_cli("plan", *args)
        assert res.code == 0, res.err
        out_lines = [line.rstrip() for line in res.out.splitlines()]
        if block.startswith("```"):
            shown = [line.rstrip() for line in block.strip("`\n").splitlines() if line.strip()]
            missing = [line for line in shown if line not in out_lines]
            assert not missing, f"docs/planning.md block of plan {' '.join(args)} is not the output: {missing}"
            continue
        latency = res.out[res.out.index("Latency (closed form)") :]
        rows = {}
        for line in latency.splitlines():
            label = re.match(r"\s+(PrfaaS-PD|homogeneous|homog\. equal-\$|naive heterog\.)\s+\d", line)
            if label:
                rows[label[1]] = _numbers(line[label.end(1) :])
        for line in block.splitlines()[2:]:
            label, *cells = [c.strip() for c in line.strip("|").split("|")]
            wanted, have = [n for c in cells for n in _numbers(c)], iter(rows[label])
            assert all(n in have for n in wanted), f"docs/planning.md latency row {label}: {wanted} not in {rows[label]}"
        text = (REPO / "docs" / "planning.md").read_text()
        rate = re.search(r"case study at ([\d.]+) req/s \(`prfaas-plan plan`\)", text)[1]
        common = re.search(r"common rate ([\d.]+) req/s", latency)[1]
        assert rate == f"{float(common):.2f}"
        quoted = re.search(r"PrfaaS-PD over homogeneous: mean (\S+), P90 (\S+) ", text)
        said = re.search(r"PrfaaS-PD vs homogeneous TTFT: mean (\S+), P90 ([^\s,(]+)", latency)
        assert (quoted[1], quoted[2]) == (said[1], said[2])
