"""Every report says what it did with the scenario's numbers: sites carries its pairs' input
notes, plan/compare/sites name their link utilisations once, compare says what "vs homog"
divides, robust's JSON rows are its CSV rows, the README's JSON keys exist."""

from __future__ import annotations

import copy
import json

import yaml

SITES = {
    "name": "two-edges", "model": "prfaas-1t-hybrid",
    "prfaas_sites": [{"name": "factory", "hardware": "h200", "gpus_per_instance": 8, "instances": {"min": 0, "max": 4}}],
    "pd_sites": [{"name": n, "hardware": "h20", "gpus_per_instance": 8, "instances": 4, "rate_rps": 2.0}
                 for n in ("east", "west")],
    "links": [{"prfaas": "factory", "pd": "east", "bandwidth_gbps": 10, "rtt_ms": 20},
              {"prfaas": "factory", "pd": "west", "bandwidth_gbps": 100, "rtt_ms": 35}],
    "workload": {"input": {"type": "mixture", "components": [
                     {"weight": 1, "type": "fixed", "tokens": 30000},
                     {"weight": 3, "type": "fixed", "tokens": 2000}]},
                 "output": {"type": "fixed", "tokens": 1024}},
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
        {**r, "scenario": doc["scenario"]} for r in plain["rows"]]
    dropped = [n for n in doc["notes"] if "800 tokens/s" in n]
    assert len(dropped) == 1 and "4-chip" in dropped[0] and "not used" in dropped[0], doc["notes"]
    weights = [n for n in doc["notes"] if "workload.input" in n]
    assert len(weights) == 1 and "sum to 4" in weights[0] and "0.25, 0.75" in weights[0], doc["notes"]
    assert plain["notes"] == weights
    table = _sites(run_cli, tmp_path, measured)
    assert "is not used" in table and table.count("800 tokens/s") == 1
    # measured on the decoding instance itself (8 chips), the rate is used and no note says otherwise
    used = copy.deepcopy(SITES)
    used["decode"].update(tokens_per_s_per_instance=800, tokens_per_s_gpus=8)
    assert not [n for n in json.loads(_sites(run_cli, tmp_path, used, "-f", "json"))["notes"] if "not used" in n]
