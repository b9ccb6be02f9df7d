"""Issue 16, item 5: the adaptive threshold protects the whole deployment, not only the link.

The case study's plan (t = 19,349 tokens, 4 PrfaaS / 3 PD-P / 5 PD-D) on a 15 Gbps link at
2 req/s, halved for 600 s from 1,000 s on (docs/simulation.md's link-fluctuation example), and the
role-switch example of docs/sites-and-days.md (0.8 x Lambda_max, the 100 Gbps link down to 10% from 600 s on,
role switches with a 120 s conversion).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from prfaas_plan.planner.deployment import Deployment, deployments_of
from prfaas_plan.planner.plan import plan
from prfaas_plan.simulate import SimConfig, simulate
from prfaas_plan.simulate.engine import _draw, _Loop, one_site_topology
from prfaas_plan.simulate.policies import AdaptivePolicy
from prfaas_plan.simulate.roles import busy_share, busy_share_without_one
from prfaas_plan.study.model import decode_model

PLAN = Deployment("prfaas_pd", 19349.0, 4, 3, 5)
DROP = dict(rate_rps=2.0, requests=8000, drop_at_s=1000.0, drop_for_s=600.0)  # docs/simulation.md's example


@pytest.fixture(scope="module")
def thin(case_inputs):
    """The case study with a 15 Gbps link, planned as ``simulate thin.yaml`` plans it."""
    inputs = case_inputs.with_link_gbps(15)
    return inputs, deployments_of(plan(inputs, "exact", with_marginals=False))["prfaas_pd"], decode_model(inputs)


def _drop_runs(thin, arrivals):
    inputs, dep, dec = thin
    return {
        policy: simulate(inputs, dep, dec, SimConfig(policy=policy, arrivals=arrivals, **DROP))
        for policy in ("static", "adaptive")
    }


# --- the controller's rules, signal by signal ---------------------------------------------------


@pytest.fixture
def policy(case_inputs):
    """An adaptive policy two rungs up its ladder (defaults: u 0.6 / 0.9, waits 1 s / 5 s)."""
    pol = AdaptivePolicy(PLAN.threshold_tokens, case_inputs.input_dist, SimConfig(rate_rps=2.0, requests=10), 5.0)
    pol._rung = 2
    return pol


@pytest.mark.parametrize(
    "signals, step, why",
    [
        ((0.95, 0.0, 0.0, 0.0), +1, "link near saturation, PD-P idle: raise"),
        ((0.95, 0.0, 0.0, 1.5), 0, "link near saturation, PD-P has 1.5 s queued: hold (the old policy raised)"),
        ((0.5, 0.0, 6.0, 0.5), +1, "PrfaaS queue of 6 s, PD-P has headroom: raise"),
        ((0.95, 2.0, 0.0, 8.0), -2, "PD-P backed up (8 s), link waits 2 s: back to t0 at once"),
        ((0.95, 30.0, 0.0, 8.0), 0, "both backed up, the link more: hold"),
        ((0.3, 0.5, 0.0, 3.0), -1, "link relaxed, PD-P not backed up: one rung down"),
        ((0.3, 3.0, 0.0, 0.0), 0, "link idle but its backlog (3 s) not drained: hold"),
        ((0.7, 0.0, 0.0, 0.0), 0, "between the utilisation bounds: hold (hysteresis)"),
    ],
)
def test_controller_rules(policy, signals, step, why):
    assert policy.decide(*signals) == step, why


def test_controller_never_leaves_its_ladder(policy):
    policy._rung = len(policy.ladder_tokens) - 1
    assert policy.decide(5.0, 50.0, 50.0, 0.0) == 0
    policy._rung = 0
    assert policy.decide(0.0, 0.0, 0.0, 50.0) == 0 and policy.decide(0.1, 0.0, 0.0, 0.0) == 0


def test_controller_reads_utilisation_and_backlog_seconds(policy):
    """One 5 s interval on a 2 GB/s link (10 GB of capacity): 7 GB sent and the backlog grown from
    1 to 4 GB is 10 GB offered (u = 1.0); a 4 GB backlog at 2 GB/s is 2 s of link time."""
    from prfaas_plan.simulate.policies import Observation

    clock_s, seen = [0.0], []
    readings = iter([Observation(0.0, 1e9, 2e9, 0.5, 0.25), Observation(7e9, 4e9, 2e9, 0.5, 0.25)])
    policy.decide = lambda *signals: seen.append(signals) or 0
    controller = policy.run(lambda: next(readings), lambda a, b: 2e9 * (b - a), lambda: bool(seen), lambda: clock_s[0])
    clock_s[0] += next(controller)  # the event loop waits the interval it yields
    assert clock_s[0] == 5.0
    with pytest.raises(StopIteration):  # one look, then the run is over
        next(controller)
    assert seen == [(pytest.approx(1.0), pytest.approx(2.0), 0.5, 0.25)]


def test_queued_work_is_the_hold_seconds_of_the_waiting_requests(case_inputs):
    """The controller's queues in seconds: at a look in an overloaded run, the PD-P (PrfaaS) wait is
    the hold seconds of the last q local (remote) arrivals, q the requests the resource has queued
    (FIFO), over N_p (N_prfaas), and the link backlog is the link's own count."""
    dec = decode_model(case_inputs)
    config = SimConfig(rate_rps=8.0, requests=600, seed=5)
    topology = one_site_topology(case_inputs, PLAN, dec, config)
    run = _Loop(topology, config, _draw(topology, config))
    stop_s, at_stop = 40.0, []

    def look():  # a controller the loop resumes once, at stop_s: what it sees then
        yield stop_s
        at_stop.append((run._observe(0), len(run.pdp_queue[0]), len(run.pf_queue[0]), run.links[0].totals(stop_s)[2]))

    run._add_controller(look(), 0)
    run.run(None)
    ((seen, q_local, q_remote, backlog_bytes),) = at_stop
    arrived = np.flatnonzero(run.drawn["arrival_s"] < stop_s)
    remote = np.array(run.remote, dtype=bool)[arrived]  # set at arrival
    remote_hold_s, local_hold_s = run.drawn["remote_hold_s"], run.drawn["local_hold_s"]
    assert q_local > 3 and q_remote > 3  # both queue at this rate
    local, far = arrived[~remote], arrived[remote]
    assert seen.pdp_wait_s == pytest.approx(local_hold_s[local[-q_local:]].sum() / PLAN.n_p, rel=1e-9)
    assert seen.prfaas_wait_s == pytest.approx(remote_hold_s[far[-q_remote:]].sum() / PLAN.n_prfaas, rel=1e-9)
    assert seen.backlog_bytes == backlog_bytes  # totals(): (sent, produced, backlog)
    assert seen.capacity_bytes_per_s == case_inputs.link.usable_bytes_per_s


def test_decode_room_after_giving_one_instance_away():
    """4 decoding instances of 10 slots with 28 running: 70% busy, 28 / 30 = 93% with one fewer."""
    site = SimpleNamespace(running=[7, 7, 7, 7, 0], decoding=[True] * 4 + [False], batch=10, pdp_active=1)
    assert busy_share(site) == pytest.approx(0.7)
    assert busy_share_without_one(site) == pytest.approx(28 / 30)


# --- docs/simulation.md's link drop -----------------------------------------------------------


def test_link_drop_adaptive_bounds_the_backlog_and_keeps_the_overall_p90(thin):
    """Poisson: the static threshold offers ~7.5 Gbps into the halved 7.5 Gbps link and its backlog
    reaches 23 GB; the adaptive one keeps it under half of that and its overall P90 TTFT no worse
    than static (the old policy's was 29.5 s against 6.2 s: it flooded PD-P)."""
    static, adaptive = _drop_runs(thin, "poisson").values()
    t0 = thin[1].threshold_tokens
    s_backlog, a_backlog = (r.egress["max_link_backlog_bytes"] for r in (static, adaptive))
    assert a_backlog < 0.5 * s_backlog
    assert adaptive.ttft["overall"]["p90_s"] <= static.ttft["overall"]["p90_s"]
    # what the adaptive policy moves to PD-P does not make its queue the slow path
    assert adaptive.ttft["local"]["p90_s"] <= adaptive.ttft["remote"]["p90_s"]
    # it acts during the drop only: t rises above the plan, and is back at the plan after it
    changes = np.array(adaptive.threshold_changes)
    assert changes[changes[:, 0] < DROP["drop_at_s"], 1].max() <= 1.2 * t0
    during = (changes[:, 0] >= DROP["drop_at_s"]) & (changes[:, 0] < DROP["drop_at_s"] + DROP["drop_for_s"])
    assert changes[during, 1].max() > 1.2 * t0
    assert adaptive.timeseries["threshold_tokens"][-1] == t0
    # the link's backlog drains once the link is back
    series = adaptive.timeseries
    assert series["link_backlog_bytes"][series["time_s"] > DROP["drop_at_s"] + DROP["drop_for_s"] + 300].max() < 1e9


@pytest.mark.slow
def test_link_drop_with_bursts_adaptive_is_no_worse_than_static(thin):
    """On-off arrivals (bursts at twice the mean rate overload both prefill paths): the adaptive
    policy's backlog and overall P90 are no worse than the static threshold's (the old policy's P90
    was 318.6 s against 34.9 s)."""
    static, adaptive = _drop_runs(thin, "onoff").values()
    assert adaptive.egress["max_link_backlog_bytes"] <= static.egress["max_link_backlog_bytes"]
    assert adaptive.ttft["overall"]["p90_s"] <= static.ttft["overall"]["p90_s"]
    assert adaptive.ttft["local"]["p90_s"] < 2 * static.ttft["local"]["p90_s"]


# --- docs/sites-and-days.md's role-switch example ----------------------------------------------


@pytest.mark.slow
def test_role_switch_example_keeps_the_queue_bounded(case_inputs):
    """docs/sites-and-days.md's example (30,000 requests): one switch, to the 4 / 4 split that the planner
    chooses for a 10 Gbps link, and no oscillation (the 5 / 3 split it used to move to has decode
    capacity 3 x 0.78 = 2.34 req/s, below the 2.59 req/s offered); the queues stay bounded."""
    plain = plan(case_inputs, "exact", with_marginals=False)
    rate = 0.8 * plain.point.lambda_max
    config = SimConfig(
        rate_rps=rate,
        requests=30_000,
        policy="adaptive",
        drop_at_s=600,
        drop_for_s=1e6,
        drop_to_fraction=0.1,
        rebalance=True,
        conversion_s=120,
    )
    result = simulate(case_inputs, deployments_of(plain)["prfaas_pd"], decode_model(case_inputs), config)
    assert [change[1:] for change in result.role_changes] == [(4, 4)]
    thin_plan = plan(case_inputs.with_link_gbps(10), "exact", with_marginals=False).point
    assert (thin_plan.n_p, thin_plan.n_d) == (4, 4)
    for _, _, n_d in result.role_changes:
        assert n_d * case_inputs.decode_rps_per_instance > rate
    assert result.queue_growth["stable"] is True


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"adaptive_wait_low_s": 6.0}, "adaptive_wait_low_s"),  # above the default high bound (5 s)
        ({"adaptive_wait_high_s": 0.0}, "adaptive_wait_high_s"),
        ({"adaptive_wait_low_s": -1.0}, "adaptive_wait_low_s"),
    ],
)
def test_wait_bounds_are_checked(changes, field):
    from prfaas_plan.errors import PlanInputError

    with pytest.raises(PlanInputError) as info:
        SimConfig(rate_rps=1.0, requests=10, **changes)
    assert info.value.field == field
