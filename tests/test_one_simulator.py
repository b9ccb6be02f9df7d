"""One simulator: a single event loop (``simulate/engine.py``, ``_Loop.run``) runs every topology;
the one-site simulation is its 1 x 1 case and the multi-site one (``simulate/sites.py``) an adapter.

The case study's plan (t = 19,349 tokens, 4 PrfaaS / 3 PD-P / 5 PD-D) serves as the PD site of the
topologies below; "two pairs" is two copies of its 1 x 1 topology side by side (each PD site with a
PrfaaS site and a link of its own), so site 0 of it must be the 1 x 1 run, request by request.
"""

from __future__ import annotations

import ast
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.deployment import Deployment
from prfaas_plan.simulate import SimConfig, simulate
from prfaas_plan.simulate.engine import one_site_topology, run
from prfaas_plan.simulate.topology import PrfaasSite, Topology
from prfaas_plan.study.model import decode_model

PACKAGE = Path(__file__).resolve().parent.parent / "prfaas_plan"
PLAN = Deployment("prfaas_pd", 19349.0, 4, 3, 5)


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        yield path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text())


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def _functions_naming(tree: ast.Module, names: set[str]) -> list[str]:
    """Qualified names (Class.method) of the functions whose own body names one of ``names`` (as a
    name or an attribute: ``heappop``, ``heapq.heappop``), nested functions apart."""
    found = []

    def named(node) -> set[str]:
        out = set()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, ast.Name):
                out.add(child.id)
            elif isinstance(child, ast.Attribute):
                out.add(child.attr)
            out |= named(child)
        return out

    def visit(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if named(child) & names:
                    found.append(prefix + child.name)
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return found


def test_one_event_loop_in_the_package():
    """Exactly one module imports heapq (simulate/engine.py), exactly one function there pops
    events (``_Loop.run``, the event loop), nothing imports SimPy, and the multi-site simulation
    runs that loop (it imports ``engine.run``) rather than one of its own."""
    heap_users = {name: tree for name, tree in _modules() if "heapq" in _imports(tree)}
    assert list(heap_users) == ["simulate/engine.py"]
    assert _functions_naming(heap_users["simulate/engine.py"], {"heappop"}) == ["_Loop.run"]
    assert not [name for name, tree in _modules() if "simpy" in _imports(tree)]
    sites = ast.parse((PACKAGE / "simulate" / "sites.py").read_text())
    imported = {(node.module, alias.name) for node in ast.walk(sites) if isinstance(node, ast.ImportFrom) for alias in node.names}
    assert ("engine", "run") in imported
    assert not _functions_naming(sites, {"heappush", "heappop", "heapq", "Environment"})


def test_no_option_string_in_the_simulator():
    """Below the CLI the simulator names config fields, never options (``--rate``); ``config.py``,
    whose messages the CLI's field-to-option map takes over, is the one file left to convert."""
    for path in sorted((PACKAGE / "simulate").glob("*.py")):
        if path.name == "config.py":
            continue
        strings = [
            node.value
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
        ]
        assert not [s for s in strings if s.lstrip().startswith("--")], path.name


def _two_pairs(topology: Topology) -> Topology:
    """The 1 x 1 topology twice: PD site 'pd-b' with PrfaaS site 'prfaas-b' and its own link."""
    (site,), (pool,), (link,) = topology.pd, topology.prfaas, topology.links
    return Topology(
        (site, replace(site, name="pd-b")),
        (pool, PrfaasSite("prfaas-b", pool.instances)),
        (link, replace(link, prfaas="prfaas-b", pd="pd-b")),
    )


CONFIGS = {
    "static": dict(rate_rps=2.6, requests=3000, seed=4),
    "adaptive, link drop": dict(
        rate_rps=2.0, requests=3000, seed=3, policy="adaptive", drop_at_s=300.0, drop_for_s=400.0, drop_to_fraction=0.5
    ),
    "role switches": dict(
        rate_rps=2.6,
        requests=4000,
        policy="adaptive",
        drop_at_s=300.0,
        drop_for_s=1e6,
        drop_to_fraction=0.1,
        rebalance=True,
        conversion_s=60.0,
    ),
}


@pytest.mark.parametrize("name", list(CONFIGS))
def test_one_site_is_the_1x1_case_of_any_topology(case_inputs, name):
    """Site 0 of two independent pairs is the one-site simulation exactly (same streams, the
    same events; its controllers, threshold and role changes its own), and site 1, drawing its own
    streams, measures the same system: its mean TTFT within 15% of site 0's."""
    inputs = case_inputs.with_link_gbps(15) if name != "role switches" else case_inputs
    dec = decode_model(inputs)
    config = SimConfig(**CONFIGS[name])
    alone = simulate(inputs, PLAN, dec, config)
    log = run(_two_pairs(one_site_topology(inputs, PLAN, dec, config)), config)
    first = log.per_request(0)
    for field in ("arrival_s", "input_tokens", "output_tokens", "remote", "kv_bytes", "ttft_s", "tpot_s", "done_s"):
        np.testing.assert_array_equal(first[field], alone.per_request[field], err_msg=field)
    np.testing.assert_array_equal(log.completion_order(0), np.argsort(alone.per_request["done_s"], kind="stable"))
    assert tuple(log.threshold_changes[0]) == alone.threshold_changes
    assert tuple(log.role_changes[0]) == alone.role_changes
    rows = alone.timeseries["time_s"].size  # the sampler runs until both sites are done
    for column in ("time_s", "link_backlog_bytes", "egress_gbps", "pdp_queue_requests", "threshold_tokens"):
        np.testing.assert_array_equal(log.series[0][column][:rows], alone.timeseries[column], err_msg=column)
    assert log.link_sent_bytes[0] == alone.egress["sent_bytes"]
    if name == "role switches":
        assert alone.role_changes and log.role_changes[1]  # both sites switch roles on their own
    second = log.per_request(1)
    assert not np.array_equal(second["input_tokens"], first["input_tokens"])
    assert second["ttft_s"].mean() == pytest.approx(first["ttft_s"].mean(), rel=0.15)


def test_pd_sites_share_a_prfaas_site(case_inputs):
    """Two PD sites sending to one PrfaaS site share its instances: with 4 instances for both, each
    site's remote requests wait longer than with 4 each (the two pairs), and every request ends."""
    dec = decode_model(case_inputs)
    config = SimConfig(rate_rps=2.0, requests=3000, seed=2)
    pairs = _two_pairs(one_site_topology(case_inputs, PLAN, dec, config))
    shared = replace(pairs, prfaas=pairs.prfaas[:1], links=(pairs.links[0], replace(pairs.links[1], prfaas="prfaas")))
    apart, together = run(pairs, config), run(shared, config)
    for k in (0, 1):
        remote_apart = apart.per_request(k)["ttft_s"][apart.per_request(k)["remote"]]
        remote_together = together.per_request(k)["ttft_s"][together.per_request(k)["remote"]]
        assert remote_together.mean() > 1.5 * remote_apart.mean()
        assert together.completion_order(k).size == 3000
    # each PD site's local path is its own: the local TTFTs do not change
    np.testing.assert_array_equal(
        together.per_request(1)["ttft_s"][~together.per_request(1)["remote"]],
        apart.per_request(1)["ttft_s"][~apart.per_request(1)["remote"]],
    )


def test_a_multi_site_error_names_the_site_field(case_inputs):
    dec = decode_model(case_inputs)
    config = SimConfig(rate_rps=1.0, requests=10)
    pairs = _two_pairs(one_site_topology(case_inputs, PLAN, dec, config))
    broken = replace(pairs, pd=(pairs.pd[0], replace(pairs.pd[1], n_p=0, field_prefix="pd_sites.pd-b.")))
    with pytest.raises(PlanInputError) as info:
        run(broken, config)
    assert info.value.field == "pd_sites.pd-b.n_p"
    with pytest.raises(PlanInputError) as info:
        run(replace(pairs, pd=(replace(pairs.pd[0], separate_decode=True), pairs.pd[1])), replace(config, rebalance=True))
    assert info.value.field == "rebalance"
    all_local = Deployment("homogeneous", math.inf, 0, 9, 3)
    assert run(one_site_topology(case_inputs, all_local, dec, config), config).arrays["remote"].sum() == 0


def test_simulated_tpot_follows_the_decode_batch():
    """Each request decodes at the step time of its instance's batch: at 0.8 x Lambda_max on the
    case study the simulated TPOT mean is the closed form's within 2% (about 59 ms), far above the
    step time of a batch of one (30 ms)."""
    from prfaas_plan import api
    from prfaas_plan.study.model import decode_model

    run = api.simulate("paper-case-study", load=0.8, requests=4000, seed=1)
    simulated_ms = run.result.tpot["overall"]["mean_ms"]
    assert simulated_ms == pytest.approx(run.closed_form.tpot_ms, rel=0.02)
    single_ms = decode_model(api.inputs("paper-case-study")).step_s_by_batch[0] * 1000
    assert simulated_ms > 1.5 * single_ms


def test_a_sites_simulation_reports_the_egress_its_requests_offered_while_they_arrived(monkeypatch):
    """An unsaturated link carries what its remote requests offer: a site's simulated egress is the KV
    of the remote requests that arrived in its measurement window (after the warm-up, to its last
    arrival) over that window's length, within 1% (the rest is KV in flight at the window's ends);
    the bytes a link sent until the last completion over that time count the drain (~2.5% low here)."""
    from prfaas_plan import api
    from prfaas_plan.simulate import sites as sim_sites

    result, si = api.sites(str(PACKAGE / "scenarios" / "two-edges-day.yaml"))
    logs = []
    run = sim_sites.run
    monkeypatch.setattr(sim_sites, "run", lambda topology, config: logs.append(run(topology, config)) or logs[-1])
    sims = sim_sites.simulate_sites(si, result, window=0, requests=3000, seed=0)
    for k, sim in enumerate(sims):
        per_request = logs[0].per_request(k)
        arrival_s = per_request["arrival_s"]
        start_s, end_s = arrival_s[int(len(arrival_s) * sim_sites.WARMUP_SHARE)], arrival_s[-1]
        offered = (arrival_s >= start_s) & (arrival_s <= end_s) & per_request["remote"]
        offered_gbps = per_request["kv_bytes"][offered].sum() * 8 / 1e9 / (end_s - start_s)
        assert offered_gbps > 1.0, sim.name
        assert sim.egress_gbps["factory"] == pytest.approx(offered_gbps, rel=0.01), sim.name
