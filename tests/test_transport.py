"""The link's TCP transport (``timing.transport``): one connection's rate by hand (Mathis et al.
1997 at 10 ms and 1e-5 loss), the window bound, the BBR-like bound, the connections a transfer
needs to fill its share, and the plan they change: a scenario bound by PrfaaS compute on the
default link is link-bound with one connection per transfer, with Lambda_max what N_prfaas
transfers carry. The MILP, enumeration and the per-threshold optimum agree with a transport; the
simulator's transfers run at the same per-transfer rate; bad fields are one-line errors."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest
import yaml
from conftest import DATA, REPO

from prfaas_plan.choices import Bound, CongestionControl
from prfaas_plan.errors import PlanInputError
from prfaas_plan.planner.chips import load_inputs
from prfaas_plan.planner.optimizer import optimise
from prfaas_plan.planner.throughput import threshold_table
from prfaas_plan.simulate.bandwidth import CapacitySchedule
from prfaas_plan.simulate.link import KvLink
from prfaas_plan.study.model import Link
from prfaas_plan.timing.transport import Transport, connections_to_fill

SCENARIO = DATA / "transport_one_connection.yaml"
RTT_S = 0.010  # about 1,000 km of fibre and back
LOSS = 1e-5
MSS = 1460
# Mathis et al. 1997 by hand: (1460 B / 0.01 s) x sqrt(3/2) / sqrt(1e-5)
#   = 146,000 x 1.2247448714 / 0.0031622777 = 146,000 x 387.2983346 = 56,545,556.9 B/s (0.4524 Gbps)
MATHIS_BY_HAND_BYTES_PER_S = 146_000 * 387.2983346207417
GBPS = 1.25e8  # bytes/s per decimal Gbps


def loss_based(**changes) -> Transport:
    return Transport(CongestionControl.loss_based, changes.pop("loss_rate", LOSS), **changes)


def test_one_connection_matches_the_mathis_formula_by_hand():
    rate = loss_based().connection_bytes_per_s(RTT_S)
    assert rate == pytest.approx(MATHIS_BY_HAND_BYTES_PER_S, rel=1e-9)
    assert rate == pytest.approx(MSS / RTT_S * math.sqrt(1.5 / LOSS), rel=1e-12)
    assert rate / GBPS == pytest.approx(0.45236, abs=1e-5)  # a small share of 100 Gbps
    assert not loss_based().window_binds(RTT_S)  # 4 MiB / 10 ms = 3.36 Gbps: loss binds


def test_the_window_bounds_a_connection():
    assert loss_based(loss_rate=0.0).connection_bytes_per_s(RTT_S) == 4 * 2**20 / RTT_S  # no loss: window / RTT
    small = loss_based(window_bytes=65_536)  # 64 KiB / 10 ms = 6.55 MB/s, below Mathis's 56.5 MB/s
    assert small.connection_bytes_per_s(RTT_S) == pytest.approx(65_536 / RTT_S)
    assert small.window_binds(RTT_S)
    # the Mathis bound falls with RTT as 1/RTT, so does the window's: the ratio holds
    assert loss_based().connection_bytes_per_s(2 * RTT_S) == pytest.approx(MATHIS_BY_HAND_BYTES_PER_S / 2)


def test_a_bbr_like_connection_is_not_loss_limited_below_its_tolerance():
    bbr = Transport(CongestionControl.bbr, 0.01)
    assert bbr.connection_bytes_per_s(RTT_S) == pytest.approx(0.99 * 4 * 2**20 / RTT_S)  # (1 - p) window / RTT
    assert bbr.connection_bytes_per_s(RTT_S) > 100 * loss_based(loss_rate=0.01).connection_bytes_per_s(RTT_S)
    assert Transport(CongestionControl.bbr, 0.01, mss_bytes=536).connection_bytes_per_s(RTT_S) == bbr.connection_bytes_per_s(
        RTT_S
    )  # the MSS does not enter
    with pytest.raises(PlanInputError, match="0.15 loss"):
        Transport(CongestionControl.bbr, 0.2)


def test_connections_needed_to_fill_a_100_gbps_share():
    link = Link(100 * GBPS, 1.0, RTT_S, transport=loss_based())
    # 12.5e9 / 56,545,556.9 = 221.06: 222 connections, the first count whose rates reach the share
    assert link.connections_to_fill(1) == 222 == math.ceil(12.5e9 / MATHIS_BY_HAND_BYTES_PER_S)
    assert link.connections_to_fill(4) == math.ceil(12.5e9 / 4 / MATHIS_BY_HAND_BYTES_PER_S) == 56
    for k, binds in ((221, True), (222, False)):
        filled = replace(link, transport=loss_based(connections_per_transfer=k))
        assert filled.transport_binds(1) is binds
    assert connections_to_fill(0.0, 1.0) == 0 and connections_to_fill(3.0, 1.0) == 3  # an exact multiple, no extra
    assert Link(100 * GBPS, 1.0, RTT_S).connections_to_fill(1) is None  # no transport model


def _inputs(transport: Transport | None):
    inputs = load_inputs(str(SCENARIO))
    return replace(inputs, link=replace(inputs.link, transport=transport))


def _mean_kv_bytes(inputs) -> float:
    dist = inputs.input_dist
    return float(np.sum(dist.probs * inputs.prfaas.curve.kv_bytes(dist.lengths_tokens)))


def test_one_connection_per_transfer_makes_a_compute_bound_plan_link_bound(run_cli, tmp_path):
    doc = yaml.safe_load(SCENARIO.read_text())
    for field in ("congestion_control", "loss_rate", "connections_per_transfer", "transport_note"):
        del doc["link"][field]
    default = tmp_path / "default.yaml"
    default.write_text(yaml.safe_dump(doc))
    plain, one = (json.loads(run_cli("plan", path, "-f", "json").out) for path in (default, SCENARIO))
    assert plain["prfaas_pd"]["binding"] == Bound.prfaas_compute
    assert one["prfaas_pd"]["binding"] == Bound.link
    assert one["prfaas_pd"]["lambda_max_rps"] < plain["prfaas_pd"]["lambda_max_rps"] / 5
    # every request is offloaded: Lambda_max E[S_kv] = the 4 instances' transfers, 4 x 56.5 MB/s
    inputs = load_inputs(str(SCENARIO))
    assert one["prfaas_pd"]["p"] == 1.0 and one["prfaas_pd"]["n_prfaas"] == 4
    carried = one["prfaas_pd"]["lambda_max_rps"] * _mean_kv_bytes(inputs)
    assert carried == pytest.approx(4 * MATHIS_BY_HAND_BYTES_PER_S, rel=1e-5)
    transport = one["link"]["transport"]
    assert transport["link_limited_by"] == "transport" and transport["connection_limited_by"] == "loss"
    assert transport["connection_gbps"] == pytest.approx(MATHIS_BY_HAND_BYTES_PER_S / GBPS, abs=1e-6)
    assert transport["share_gbps"] == 25.0 and transport["connections_to_fill_share"] == 56
    assert "transport" not in plain["link"] and "link_limited_by" not in plain["prfaas_pd"]  # default: unchanged
    text = run_cli("plan", SCENARIO).out
    assert "the transport, not the bandwidth, caps what the link carries" in text and "needs 56 connections" in text
    csv_lines = run_cli("plan", SCENARIO, "-f", "csv").out.splitlines()
    header, row = csv_lines[0].split(","), csv_lines[1].split(",")
    assert row[header.index("link_limited_by")] == "transport" and row[header.index("connections_to_fill_share")] == "56"


def test_lambda_max_rises_with_connections_and_falls_with_loss():
    lams = [optimise(_inputs(loss_based(connections_per_transfer=k))).lambda_max for k in (1, 2, 4, 16, 64, 256)]
    assert all(a < b for a, b in zip(lams, lams[1:4]))  # link-bound: each doubling helps
    assert lams == sorted(lams)
    unbounded = optimise(_inputs(None)).lambda_max
    assert lams[-1] == pytest.approx(unbounded, rel=1e-12)  # 4 x 256 connections fill 100 Gbps: compute binds again
    by_loss = [optimise(_inputs(loss_based(loss_rate=p))).lambda_max for p in (1e-7, 1e-6, 1e-5, 1e-4, 1e-3)]
    assert by_loss == sorted(by_loss, reverse=True) and by_loss[-1] < by_loss[0]


def test_the_milp_enumeration_and_per_threshold_optimum_agree_with_a_transport(tmp_path):
    """The case study with PD-P kept, PrfaaS counts 1..8 and two connections per transfer: the
    streams, not compute, size the PrfaaS pool (at the min-cost plan 6 instances' streams against
    under 2 of compute), so the optimiser trades threshold against instances; every method finds
    one Lambda_max, and one cheapest plan reaching 0.9 of it."""
    inputs = load_inputs("paper-case-study")
    inputs = replace(inputs, link=replace(inputs.link, transport=loss_based(connections_per_transfer=2)))
    inputs = inputs.with_limits(prfaas_min=1, prfaas_max=8)
    found = {m: optimise(inputs, method=m) for m in ("milp", "enumerate", "per_threshold")}
    lams = {m: s.lambda_max for m, s in found.items()}
    assert max(lams.values()) == pytest.approx(min(lams.values()), rel=1e-9), lams
    sol = found["enumerate"]
    table = threshold_table(inputs)
    egress = sol.lambda_max * float(table.link_work_bytes[sol.threshold_index])
    assert egress <= sol.n_prfaas * inputs.link.transfer_bytes_per_s * (1 + 1e-9)  # each instance one transfer
    target = 0.9 * sol.lambda_max  # the cheapest plan reaching it needs the PrfaaS instances its streams take
    cheapest = {m: optimise(inputs, objective="min_cost", target_rps=target, method=m) for m in ("enumerate", "per_threshold")}
    costs = {m: s.usd_per_hour for m, s in cheapest.items()}
    assert costs["enumerate"] == pytest.approx(costs["per_threshold"], rel=1e-9), costs
    for s in cheapest.values():
        assert s.lambda_max >= target * (1 - 1e-9)


def _finish_s(link: KvLink, key: int) -> float:
    """Step the link through its events until ``key``'s last byte is sent; that time (s)."""
    while True:
        now_s = link.next_s
        if key in link.update(now_s):
            return now_s


def test_the_simulator_runs_a_transfer_at_the_transport_rate():
    rate = 10e6  # bytes/s of one transfer
    alone = KvLink(CapacitySchedule(1e9), transfer_bytes_per_s=rate)
    alone.start(0.0, 100e6, 1.0, key=1)  # produced at 100 MB/s over 1 s, sent at 10 MB/s
    assert _finish_s(alone, 1) == pytest.approx(10.0)  # S / r_t, not S / link = 0.1 s after the prefill's 1 s
    unbounded = KvLink(CapacitySchedule(1e9))
    unbounded.start(0.0, 100e6, 1.0, key=1)
    assert _finish_s(unbounded, 1) == pytest.approx(1.0)  # no transport model: the production binds
    shared = KvLink(CapacitySchedule(15e6), transfer_bytes_per_s=rate)  # two transfers: 7.5 MB/s each, the share
    shared.start(0.0, 15e6, 0.5, key=1)
    shared.start(0.0, 15e6, 0.5, key=2)
    assert _finish_s(shared, 1) == pytest.approx(2.0)
    slow = KvLink(CapacitySchedule(1e9), transfer_bytes_per_s=rate)  # produced at 5 MB/s: production binds
    slow.start(0.0, 10e6, 2.0, key=1)
    assert _finish_s(slow, 1) == pytest.approx(2.0)


def test_a_simulated_plan_carries_its_transfers_at_the_planned_rate():
    """The one-connection scenario at 0.8 Lambda_max: no remote request's first token comes before
    its KV could cross at one transfer's rate (S / r_t + RTT: about 11.5 s at the mean KV of 650 MB,
    against a few seconds of prefill), and the simulated mean TTFT is the closed form's, which
    uses the same per-transfer rate."""
    from prfaas_plan import api

    run = api.simulate(str(SCENARIO), requests=2000, load=0.8)
    per = run.result.per_request
    remote = per["remote"].astype(bool)
    assert remote.all()
    floor_s = per["kv_bytes"][remote] / MATHIS_BY_HAND_BYTES_PER_S + RTT_S
    assert np.all(per["ttft_s"][remote] >= floor_s * (1 - 1e-9))
    assert run.result.ttft["remote"]["mean_s"] == pytest.approx(run.closed_form.remote.mean_s, rel=0.05)


def test_a_sites_link_takes_the_transport_and_each_instance_streams_one_transfer(tmp_path):
    """two-edges-day (min cost, $147.92/h on its links as given) with 1e-5 loss and 4 connections
    per transfer on both links (30 and 70 ms): in every window the seconds of stream the offloaded
    requests need, egress / one transfer's rate summed over the links, fit in the PrfaaS instances
    bought, and the day costs more."""
    from prfaas_plan import api

    doc = yaml.safe_load((REPO / "prfaas_plan" / "scenarios" / "two-edges-day.yaml").read_text())
    for link in doc["links"]:
        link.update(congestion_control="loss_based", loss_rate=LOSS, connections_per_transfer=4)
    path = tmp_path / "sites.yaml"
    path.write_text(yaml.safe_dump(doc))
    result, study = api.sites(str(path))
    n_f = result.n_prfaas["factory"]
    for pd in ("us-east", "europe"):
        link = study.links["factory", pd]
        assert link.transport == loss_based(connections_per_transfer=4)
        assert link.transfer_bytes_per_s == pytest.approx(4 * MSS / link.rtt_s * math.sqrt(1.5 / LOSS))
    streams = [
        sum(s.egress_gbps["factory"] * GBPS / study.links["factory", s.name].transfer_bytes_per_s for s in w.pd)
        for w in result.windows
    ]
    assert max(streams) <= n_f * (1 + 1e-6) and max(streams) > n_f - 1  # the streams, not compute, size N_prfaas
    assert result.usd_per_hour > 147.93


@pytest.mark.parametrize(
    "change, needles",
    [
        ({"loss_rate": 0.5}, ["link.loss_rate", "must be in [0, 0.15], got 0.5"]),
        ({"congestion_control": "cubic"}, ["link.congestion_control", "loss_based", "bbr"]),
        ({"connections_per_transfer": 0}, ["link.connections_per_transfer", "must be in [1, 65,536]"]),
        ({"mss_bytes": 100}, ["link.mss_bytes", "must be in [536, 65,495]"]),
        ({"window_bytes": 1.5e6}, ["link.window_bytes"]),
        ({"congestion_control": None}, ["link", "loss_rate is a transport field: give congestion_control"]),
        ({"loss_rate": None}, ["link", "congestion_control needs loss_rate"]),
        ({"rtt_ms": 0}, ["link", "congestion_control needs rtt_ms above 0"]),
    ],
)
def test_bad_transport_fields_are_one_line_errors(run_cli, tmp_path, change, needles):
    doc = yaml.safe_load(SCENARIO.read_text())
    for key, value in change.items():
        if value is None:
            del doc["link"][key]
        else:
            doc["link"][key] = value
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path)
    assert res.code == 2 and "Traceback" not in res.err and res.out == ""
    line = res.err.strip()
    assert "\n" not in line and str(path) in line
    for needle in needles:
        assert needle in line, (needle, line)


def test_the_case_study_with_a_transport_is_not_the_papers(case_study_file, tmp_path):
    from prfaas_plan.planner.paper import is_case_study

    path = case_study_file(tmp_path, link__congestion_control="loss_based", link__loss_rate=LOSS)
    assert load_inputs(str(path)).link.transport == loss_based()
    assert not is_case_study(load_inputs(str(path)))


def test_the_egress_line_measures_a_transport_bound_link_against_what_its_transfers_carry(run_cli):
    """Link-bound by the transport, the egress is a small share of the bandwidth but all of what
    the N_prfaas transfers in flight carry; a plain link's egress line says nothing of it."""
    out = run_cli("plan", DATA / "transport_one_connection.yaml").out
    line = next(row for row in out.splitlines() if row.strip().startswith("egress"))
    assert "1.8% of the usable 100 Gbps" in line
    assert "100.0% of the 1.81 Gbps its 4 transfers in flight carry (the transport's cap)" in line
    plain = next(row for row in run_cli("plan").out.splitlines() if row.strip().startswith("egress"))
    assert "transfers in flight" not in plain


def test_a_transport_plan_writes_its_csv_with_the_colocated_row(run_cli, tmp_path):
    """Every CSV row gets the transport cells: the link's rates on each, the share and what
    limits the link blank on the co-located baseline's (it has no PrfaaS transfers)."""
    import csv
    import io

    import yaml
    from conftest import case_study_doc

    doc = case_study_doc()
    doc["link"].update(congestion_control="loss_based", loss_rate=1e-5, connections_per_transfer=4)
    path = tmp_path / "tcp.yaml"
    path.write_text(yaml.safe_dump(doc))
    res = run_cli("plan", path, "-f", "csv")
    assert res.code == 0, res.err
    rows = {row["deployment"]: row for row in csv.DictReader(io.StringIO(res.out))}
    assert rows["colocated"]["share_gbps"] == "" and rows["colocated"]["link_limited_by"] == ""
    assert rows["colocated"]["connection_gbps"] == rows["prfaas_pd"]["connection_gbps"]
    assert float(rows["prfaas_pd"]["connection_gbps"]) == pytest.approx(0.452, abs=1e-3)
    assert float(rows["prfaas_pd"]["transfer_gbps"]) == pytest.approx(4 * 0.452, abs=4e-3)
