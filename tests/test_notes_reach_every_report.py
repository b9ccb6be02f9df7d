"""Every report says what it did with the scenario's numbers: sites carries its pairs' input
notes, plan/compare/sites name their link utilisations once, compare says what "vs homog"
divides, robust's JSON rows are its CSV rows, the JSON keys docs/planning.md lists exist."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from test_marginal_and_sites_wording import SITES as _WORDING_SITES

from prfaas_plan.planner.throughput import threshold_table

# two PD sites sharing one PrfaaS site (the sites wording test's), with inputs of two classes in
# weights 1 and 3 (a mixture whose weights do not sum to 1)
SITES = {
    **copy.deepcopy(_WORDING_SITES),
    "workload": {
        "input": {
            "type": "mixture",
            "components": [{"weight": 1, "type": "fixed", "tokens": 30000}, {"weight": 3, "type": "fixed", "tokens": 2000}],
        },
        "output": {"type": "fixed", "tokens": 1024},
    },
    "decode": {"max_batch": 64},
}


def _sites(run_cli, tmp_path, doc: dict, *extra: str):
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("sites", path, *extra)
    assert res.code == 0, res.err
    return res.out


def test_sites_says_a_decode_rate_of_other_chips_is_not_used(run_cli, tmp_path):
    """A decode rate measured on a 4-chip instance, where every PD site decodes on 8 x h20, is
    dropped (the plan is the one without a rate) and sites says so once, in the table and the
    JSON; the mixture's weights (1 and 3) are normalised to 0.25/0.75 and that is said too."""
    measured = copy.deepcopy(SITES)
    measured["decode"].update(tokens_per_s_per_instance=800, tokens_per_s_gpus=4)
    doc = json.loads(_sites(run_cli, tmp_path, measured, "-f", "json"))
    plain = json.loads(_sites(run_cli, tmp_path, SITES, "-f", "json"))
    assert doc["usd_per_hour"] == plain["usd_per_hour"] and doc["rows"] == [
        {**r, "scenario": doc["scenario"]} for r in plain["rows"]
    ]
    dropped = [n for n in doc["notes"] if "800 tokens/s" in n]
    assert len(dropped) == 1 and "4-chip" in dropped[0] and "not used" in dropped[0], doc["notes"]
    weights = [n for n in doc["notes"] if "workload.input" in n]
    assert len(weights) == 1 and "sum to 4" in weights[0] and "0.25, 0.75" in weights[0], doc["notes"]
    assert [n for n in plain["notes"] if not n.startswith("decode per PD-D instance: ")] == weights
    table = _sites(run_cli, tmp_path, measured)
    assert "is not used" in table and table.count("800 tokens/s") == 1
    # measured on the decoding instance itself (8 chips), the rate is used and no note says otherwise
    used = copy.deepcopy(SITES)
    used["decode"].update(tokens_per_s_per_instance=800, tokens_per_s_gpus=8)
    assert not [n for n in json.loads(_sites(run_cli, tmp_path, used, "-f", "json"))["notes"] if "not used" in n]


def test_plan_link_utilisation_at_capacity_is_one_formula_for_every_deployment(run_cli, case_study_file, tmp_path, case_plan):
    """Every deployment's link_utilisation_at_capacity is its egress at Lambda_max over the usable
    bandwidth: on the case study's 100 Gbps link that is egress_gbps / usable_gbps (the homogeneous
    baselines send nothing: 0; the naive one sends every request's KV); on a 0 Gbps link nothing
    crosses and every deployment reads 0.0, the plan and the baselines alike (never null)."""
    from prfaas_plan.views.plan import plan_json

    doc = plan_json(case_plan)
    usable_gbps = doc["link"]["usable_gbps"]
    deployments = {"prfaas_pd": doc["prfaas_pd"], **doc["baselines"]}
    assert doc["baselines"]["naive_heterogeneous"]["egress_gbps"] > 0
    for name, row in deployments.items():
        assert row["link_utilisation_at_capacity"] == pytest.approx(row["egress_gbps"] / usable_gbps, rel=1e-4, abs=1e-6), name
    # the naive baseline's egress, counted here: Lambda_max x every request's mean KV bytes (t = 0)
    naive = case_plan.baselines["naive_heterogeneous"]
    table = threshold_table(case_plan.inputs)
    assert naive.link_utilisation == pytest.approx(
        naive.lambda_max * float(table.link_work_bytes[0]) / case_plan.inputs.link.usable_bytes_per_s, rel=1e-12
    )
    res = run_cli("plan", case_study_file(tmp_path, link__bandwidth_gbps=0), "-f", "json")
    assert res.code == 0, res.err
    zero = json.loads(res.out)
    assert [zero["prfaas_pd"]["link_utilisation_at_capacity"]] + [
        b["link_utilisation_at_capacity"] for b in zero["baselines"].values()
    ] == [0.0] * (1 + len(zero["baselines"]))


def _readme_keys(text: str) -> dict:
    """The docs' pseudo-JSON key list (``{"a", "b": {"c"}, "d": [...]}``) as a tree: name ->
    its listed children (None: none listed); parentheses are prose and left out."""
    import re

    tokens = re.findall(r'"[^"]+"|[{}:,]|\[\.\.\.\]', re.sub(r"\([^)]*\)", "", text))
    pos = 0

    def group() -> dict:
        nonlocal pos
        assert tokens[pos] == "{"
        pos += 1
        out: dict = {}
        while tokens[pos] != "}":
            name = tokens[pos].strip('"')
            pos += 1
            out[name] = None
            if tokens[pos] == ":":
                pos += 1
                if tokens[pos] == "{":
                    out[name] = group()
                else:
                    pos += 1  # [...]
            if tokens[pos] == ",":
                pos += 1
        pos += 1
        return out

    return group()


def _merged(a, b):
    """Two JSON documents' keys together (a's values where both have one, objects merged)."""
    if not (isinstance(a, dict) and isinstance(b, dict)):
        return a if a is not None else b
    return {k: _merged(a.get(k), b.get(k)) for k in {**b, **a}}


def test_every_key_the_docs_list_for_plan_json_is_in_it(case_plan):
    """docs/planning.md's list of `plan -f json` keys, against the keys of two plans together: the case
    study (every baseline) and phase-split (a decode pool, so every marginal): each listed key is in
    the document at its place, every baseline has the keys listed for them, and
    where the page lists an object's keys it lists them all (goodput_rps of every deployment,
    counted_power_kw and power_not_counted of operating.cost among them)."""
    from prfaas_plan import api
    from prfaas_plan.views.plan import plan_json

    readme = (Path(__file__).resolve().parents[1] / "docs" / "planning.md").read_text()
    start = readme.index("JSON (`-f json`): `{") + len("JSON (`-f json`): `")
    listed = _readme_keys(readme[start : readme.index("`;", start)])
    doc = json.loads(json.dumps(_merged(plan_json(case_plan), plan_json(api.plan("phase-split")))))

    def check(tree: dict, node: dict, where: str) -> list[str]:
        wrong = (
            [f"{where}: {sorted(set(node) - set(tree))} not listed, {sorted(set(tree) - set(node))} not in the JSON"]
            if set(tree) != set(node)
            else []
        )
        for name, children in tree.items():
            if children is not None and name in node:
                wrong += check(children, node[name], f"{where}.{name}")
        return wrong

    assert check(listed, doc, "plan") == []
    baseline_keys = next(v for v in listed["baselines"].values() if v)
    assert all(set(row) == set(baseline_keys) for row in doc["baselines"].values())
    # the keys the README once left out (before docs/), named
    assert all("goodput_rps" in row for row in (doc["prfaas_pd"], *doc["baselines"].values()))
    assert {"counted_power_kw", "power_not_counted"} <= set(listed["operating"]["cost"])


def test_compare_says_its_ratio_divides_goodputs_under_an_slo(case_study_file, tmp_path):
    """Under an SLO compare's ratio_vs_homogeneous is the plan's: goodput over the homogeneous
    baseline's goodput (checked against plan's two goodputs on the same basis), and its notes say
    so; without an SLO it divides Lambda_max and no note speaks of goodput."""
    from prfaas_plan import api
    from prfaas_plan.views.compare import compare_view
    from prfaas_plan.views.plan import plan_json

    path = str(case_study_file(tmp_path, slo={"ttft_p90_s": 10.0}))  # the homogeneous baseline meets it too
    report = compare_view(api.compare(path, prfaas=["h200"], jobs=1, basis="as-given"))
    option = report.json_doc["options"][0]
    plan = plan_json(api.plan(path))
    goodput, homogeneous = plan["prfaas_pd"]["goodput_rps"], plan["baselines"]["homogeneous"]["goodput_rps"]
    assert option["goodput_rps"] == pytest.approx(goodput, rel=1e-6)
    assert option["ratio_vs_homogeneous"] == pytest.approx(goodput / homogeneous, rel=1e-5)
    assert any(
        n.startswith(
            "ratio_vs_homogeneous (CSV, JSON): goodput under the SLO over the homogeneous baseline's (what the plan maximises"
        )
        for n in report.notes
    ), report.notes
    plain = compare_view(api.compare("paper-case-study", prfaas=["h200"], jobs=1, basis="as-given")).notes
    assert not [n for n in plain if "ratio_vs_homogeneous" in n or "goodput under the SLO" in n]


def test_robust_json_rows_are_its_csv_rows(run_cli):
    """robust's JSON rows have exactly the CSV's columns (one number a column: own_n_prfaas,
    own_n_p, own_n_d) and the same values; the table alone joins them into one 'a/b/c' cell."""
    import csv
    import io

    doc = json.loads(run_cli("robust", "robust-three-mixes", "-f", "json").out)
    table_csv = list(csv.DictReader(io.StringIO(run_cli("robust", "robust-three-mixes", "-f", "csv").out)))
    assert [list(row) for row in doc["rows"]] == [list(row) for row in table_csv]
    assert "own_counts" not in doc["rows"][0]
    for row, line in zip(doc["rows"], table_csv):
        assert [str(row[k]) for k in ("own_n_prfaas", "own_n_p", "own_n_d")] == [
            line[k] for k in ("own_n_prfaas", "own_n_p", "own_n_d")
        ]
    table = run_cli("robust", "robust-three-mixes").out
    for row in doc["rows"]:
        assert f"{row['own_n_prfaas']}/{row['own_n_p']}/{row['own_n_d']}" in table
    assert doc["notes"] and doc["notes"][0].startswith("worst case")


def test_compare_plot_legend_states_the_fronts_rule():
    """The compare plot's stars are the table's Pareto front, and its legend gives that front's
    rule, word for word the compare notes' (front_note: its criteria, where they are measured)."""
    from prfaas_plan import api
    from prfaas_plan.plot import _pyplot, compare_figure
    from prfaas_plan.views.compare import front_note

    comparison = api.compare("paper-case-study", prfaas=["h200", "b200"], jobs=1)
    assert comparison.pareto
    fig = compare_figure(comparison)
    legend = [" ".join(t.get_text().split()) for t in fig.axes[1].get_legend().get_texts()]
    _pyplot().close(fig)
    assert " ".join(front_note(comparison).split()) in legend
    assert "Pareto front over $/hour, req/s" in front_note(comparison)
