"""Issue 16, item 6: tests for six realistic single-point bugs that passed the whole suite.

Each test pins a figure by an independent computation on a case built so that the constraint
binds: a hand count of the $/hour from the shipped prices, a brute-force enumeration of every
split sequence or count combination, or a hand count on a tiny model. The bug each catches is
named in its docstring; the same bugs are mutants of ``tools/mutation_check.py``:

- ``link-priced-on-usable``: the committed link priced on the usable bandwidth, not the raw;
- ``sites-day-not-cyclic``: the multi-site day's first window pays no switch from the last;
- ``sites-prfaas-priced-per-chip``: PrfaaS sites priced per chip, not per instance;
- ``schedule-switch-limit-off-by-one``: the day schedule allows one switch fewer than the limit;
- ``robust-weighted-ignores-targets``: the weighted robust objective drops the per-case targets;
- ``memory-batch-one-replica``: the memory-limited decode batch counts one replica, not all.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from oracles import best_schedule, case_lambda, day_grid
from test_hand_counts import DECODE_CONTEXT, DENSE, GQA, decode_hardware, hand_decode_step_s, model
from test_procurement import inputs_of, scenario_doc
from test_routing_days_and_sites import _day, _day_doc, _robust_doc, _sites, _write, sites_doc

from prfaas_plan import api
from prfaas_plan.planner.plan import plan
from prfaas_plan.planner.throughput import threshold_table
from prfaas_plan.profiles.registry import resolve_hardware
from prfaas_plan.timing.decode import decode_capacity
from prfaas_plan.timing.instance import Instance
from prfaas_plan.timing.layout import Layout

HOURS_PER_MONTH = 8760 / 12  # 730


def usd_per_instance_hour(hardware: str, chips: int = 8) -> float:
    """A rented instance without a site power price: chips x the profile's $/chip-hour."""
    return chips * resolve_hardware(hardware).price_usd_per_gpu_hour


# --------------------------------------------------------------------------------------------
# (a) the committed link is priced on its raw bandwidth


def test_committed_link_is_priced_on_the_raw_bandwidth():
    """The case study's 100 Gbps link, half of it usable for KV, at $2,000 per Gbps-month: the committed
    price is $2,000 x 100 Gbps / 730 h = $273.97/hour (the raw rate is what is bought), and the plan's
    provisioned $/hour is its instances at the shipped rental prices plus that."""
    doc = scenario_doc(link__usable_fraction=0.5, link__usd_per_gbps_month=2000.0)
    result = plan(inputs_of(doc), with_marginals=False)
    pt = result.point
    assert result.inputs.link.usable_gbps == pytest.approx(50.0, rel=1e-12)
    link_usd = 2000.0 * 100 / HOURS_PER_MONTH
    assert pt.n_prfaas > 0 and link_usd == pytest.approx(273.97, abs=0.005)
    assert result.tco.link_fixed_usd_per_hour == pytest.approx(link_usd, rel=1e-12)
    hand = pt.n_prfaas * usd_per_instance_hour("h200") + (pt.n_p + pt.n_d) * usd_per_instance_hour("h20") + link_usd
    assert pt.usd_per_hour == pytest.approx(hand, rel=1e-12)


# --------------------------------------------------------------------------------------------
# (c) and (a) in the multi-site programme: PrfaaS sites priced per instance, links on their raw rate


def test_multi_site_cost_is_instances_at_their_price_plus_used_links(tmp_path):
    """Two PD sites of 4 H20 instances sharing up to 8 H200 instances, links of 10 and 100 Gbps raw
    (half usable) at $60 and $40 per Gbps-month: the plan's $/hour is, by hand, every instance at 8 chips x
    its rental price plus the committed price of the raw bandwidth of each link that carries KV."""
    doc = sites_doc(rates=(2.0, 2.0), prfaas_max=8)
    for link, price in zip(doc["links"], (60.0, 40.0)):
        link.update(usable_fraction=0.5, usd_per_gbps_month=price)
    result, _ = _sites(tmp_path, doc)
    assert not result.one_site and result.n_prfaas["factory"] > 0
    egress = {s.name: s.egress_gbps["factory"] for s in result.pd}
    link_usd = sum(
        price * gbps / HOURS_PER_MONTH
        for name, gbps, price in (("east", 10.0, 60.0), ("west", 100.0, 40.0))
        if egress[name] > 1e-9
    )
    assert link_usd > 0
    hand = (
        result.n_prfaas["factory"] * usd_per_instance_hour("h200")
        + sum(result.n_pd.values()) * usd_per_instance_hour("h20")
        + link_usd
    )
    assert result.usd_per_hour == pytest.approx(hand, rel=1e-9)
    assert egress["east"] <= 5.0 * (1 + 1e-6)  # the usable half of the 10 Gbps link


def test_multi_site_min_cost_buys_prfaas_at_its_instance_price(tmp_path):
    """min_cost for two PD sites of 4 H20 instances each and 0..8 H200 PrfaaS instances (unpriced links):
    the PD counts are fixed, so the cheapest plan has the fewest PrfaaS instances that serve both sites'
    1.5 req/s (brute force over the count and each site's threshold and split), and costs, by hand, that many
    instances of 8 H200 plus 8 of 8 H20 at the shipped rental prices."""
    doc = sites_doc(rates=(1.5, 1.5), prfaas_max=8)
    doc["objective"] = {"type": "min_cost"}
    result, si = _sites(tmp_path, doc)
    tables = {name: threshold_table(si.pair(name, "factory")) for name in ("east", "west")}
    fewest = min(n_f for n_f in range(9) if _serves(tables, n_f, {"east": 1.5, "west": 1.5}, (10e9 / 8, 100e9 / 8)))
    assert result.n_prfaas["factory"] == fewest > 0
    hand = fewest * usd_per_instance_hour("h200") + 8 * usd_per_instance_hour("h20")
    assert result.usd_per_hour == pytest.approx(hand, rel=1e-9)


def _serves(tables: dict, n_f: int, rates: dict, links: tuple, pd_instances: int = 4, r_d: float = 800 / 1024) -> bool:
    """Whether n_f PrfaaS instances serve both sites' rates with some threshold and split per site."""
    te, tw = tables["east"], tables["west"]
    for ke in range(len(te)):
        for kw in range(len(tw)):
            if rates["east"] * te.prfaas_work_s[ke] + rates["west"] * tw.prfaas_work_s[kw] > n_f:
                continue
            if rates["east"] * te.link_work_bytes[ke] > links[0] or rates["west"] * tw.link_work_bytes[kw] > links[1]:
                continue
            ok = [
                any(
                    rates[name] * t.pd_work_s[k] <= n_p and rates[name] <= r_d * (pd_instances - n_p)
                    for n_p in range(pd_instances + 1)
                )
                for name, t, k in (("east", te, ke), ("west", tw, kw))
            ]
            if all(ok):
                return True
    return False


# --------------------------------------------------------------------------------------------
# (b) the multi-site day is cyclic: the first window pays for the switch from the last


def _two_window_sites_doc(conversion_s: float) -> dict:
    doc = sites_doc(rates=(2.0, 2.0), links=(100.0, 100.0), pd_instances=6, prfaas_max=8)
    doc["prfaas_sites"][0]["instances"] = 8
    doc["day"] = {
        "conversion_s": conversion_s,
        "windows": [
            {"name": "east-peak", "hours": 1, "rates": {"east": 2.0, "west": 0.5}},
            {"name": "west-busy", "hours": 1, "rates": {"east": 0.5, "west": 1.5}},
        ],
    }
    return doc


def _best_day_scale(si, windows, conversion_s: float, first_window_pays: bool = True) -> float:
    """Brute force over each site's N_p in both windows (6 instances each, 8 PrfaaS instances): a window's
    switched instances (into PD-P: N_p - N_p of the window before, into PD-D likewise; the window before the
    first is the last) are idle f = conversion / 1 h of it; each window's scale is its best thresholds'
    min over PrfaaS, link, PD-P and decode capacity / demand; the day's scale is the worse window's."""
    names = ("east", "west")
    tables = [threshold_table(si.pair(name, "factory")) for name in names]
    r_d, n, n_f, link = 800 / 1024, 6, 8, 100e9 / 8
    f = min(1.0, conversion_s / 3600)
    splits = np.arange(n + 1)
    cur, prev = np.meshgrid(splits, splits, indexing="ij")
    eff_p = cur - f * np.maximum(cur - prev, 0)  # [cur, prev]
    eff_d = (n - cur) - f * np.maximum(prev - cur, 0)
    free_p, free_d = cur.astype(float), (n - cur).astype(float)
    per_window = []
    for w, demand in enumerate(window.rates_rps for window in windows):
        p_cap, d_cap = (eff_p, eff_d) if (w > 0 or first_window_pays) else (free_p, free_d)
        best = np.zeros((n + 1,) * 4)  # [east cur, east prev, west cur, west prev]
        for ke, kw in itertools.product(range(len(tables[0])), range(len(tables[1]))):
            ks = (ke, kw)
            work = sum(demand[name] * t.prfaas_work_s[k] for name, t, k in zip(names, tables, ks))
            shared = min(
                n_f / work if work > 0 else np.inf,
                *(
                    link / (demand[name] * t.link_work_bytes[k]) if t.link_work_bytes[k] > 0 else np.inf
                    for name, t, k in zip(names, tables, ks)
                ),
            )
            local = []
            for name, t, k in zip(names, tables, ks):
                pd_p = p_cap / (demand[name] * t.pd_work_s[k]) if t.pd_work_s[k] > 0 else np.full(p_cap.shape, np.inf)
                local.append(np.minimum(pd_p, r_d * d_cap / demand[name]))
            value = np.minimum(shared, np.minimum(local[0][:, :, None, None], local[1][None, None, :, :]))
            best = np.maximum(best, value)
        per_window.append(best)
    s0, s1 = per_window  # window 0 follows window 1 and window 1 follows window 0
    day = np.minimum(s0, s1.transpose(1, 0, 3, 2))
    return float(day.max())


@pytest.mark.parametrize("conversion_s", [300.0, 600.0])
def test_multi_site_day_is_cyclic(tmp_path, conversion_s):
    """East peaks in the first window and west is busy in the second; switching PD instances between
    prefill and decode pays, and a switch back into the first window (from the last) idles its instances
    too. The planner's day scale is the brute-force best over every split sequence with the cyclic
    switches, which is below the best if the first window's switches were free (the case binds)."""
    doc = _two_window_sites_doc(conversion_s)
    result, si = _sites(tmp_path, doc)
    cyclic = _best_day_scale(si, si.windows, conversion_s)
    assert result.scale == pytest.approx(cyclic, rel=1e-6)
    assert cyclic < _best_day_scale(si, si.windows, conversion_s, first_window_pays=False) * (1 - 1e-3)


# --------------------------------------------------------------------------------------------
# (d) the schedule's switch limit, where it binds


def test_schedule_switch_limit_binds_and_is_exact(tmp_path):
    """Three windows, 8 PD instances, conversion 300 s, at most 1 switch per window: the day scale is the
    brute-force best over every cyclic sequence with |N_p - N_p'| <= 1, strictly between the best with no
    switch and the best with 2 (so a limit one too tight or one too loose gives another answer)."""
    doc = _day_doc(
        max_switches_per_window=1,
        windows=[
            {"name": "a", "hours": 2, "rate_rps": 3.0},
            {"name": "b", "hours": 1, "rate_rps": 2.0, "input_scale": 2.0},
            {"name": "c", "hours": 3, "rate_rps": 1.2, "input_scale": 1.5},
        ],
    )
    (day, windows), _ = _day(tmp_path, doc)
    grids = [day_grid(w, day.n_prfaas, day.n_pd) for w in windows]
    hand = {limit: best_schedule(windows, grids, day.n_pd, 300.0, limit) for limit in (0, 1, 2)}
    assert hand[0] < hand[1] * (1 - 1e-3) and hand[1] < hand[2] * (1 - 1e-3)
    assert day.scale == pytest.approx(hand[1], rel=1e-9)
    splits = [w.n_p for w in day.windows]
    assert max(abs(a - b) for a, b in zip(splits, splits[-1:] + splits[:-1])) == 1
    assert [w.switched for w in day.windows] == [abs(a - b) for a, b in zip(splits, splits[-1:] + splits[:-1])]


# --------------------------------------------------------------------------------------------
# (e) the weighted robust objective counts each case against its own target


def test_robust_weighted_counts_cases_against_their_targets(tmp_path):
    """Three mixes with targets 1, 4 and 1 req/s and weights 0.4 / 0.3 / 0.3: the weighted plan maximises
    sum_c w_c Lambda_c / target_c, by brute force over every count within the ranges and the $350 budget;
    the counts that maximise the plain sum_c w_c Lambda_c score lower on it (the targets matter here)."""
    from prfaas_plan.planner.robust import robust_inputs
    from prfaas_plan.profiles.registry import resolve_scenario_file

    doc = _robust_doc(objective="weighted")
    targets = (1.0, 4.0, 1.0)
    for case, target in zip(doc["robust"]["cases"], targets):
        case["target_rate_rps"] = target
    path = _write(tmp_path, doc)
    result = api.robust(path)
    _, cases = robust_inputs(*resolve_scenario_file(path))
    tables = [threshold_table(c.inputs) for c in cases]
    weights = [c.weight for c in cases]
    normalised, plain = {}, {}
    for n_f in range(9):
        for n_pd in range(4, 13):
            if n_f * usd_per_instance_hour("h200") + n_pd * usd_per_instance_hour("h20") > 350:
                continue
            lams = [case_lambda(c.inputs, t, n_f, n_pd, 0, True) for c, t in zip(cases, tables)]
            normalised[n_f, n_pd] = sum(w * lam / t for w, lam, t in zip(weights, lams, targets))
            plain[n_f, n_pd] = sum(w * lam for w, lam in zip(weights, lams))
    best = max(normalised.values())
    got = sum(c.weight * c.lambda_max_rps / c.target_rate_rps for c in result.cases)
    assert got == pytest.approx(best, rel=1e-9)
    plain_best = max(plain, key=plain.get)
    assert normalised[plain_best] < best * (1 - 1e-3)


# --------------------------------------------------------------------------------------------
# (f) the memory-limited decode batch of an instance of several replicas


def test_memory_batch_counts_every_replica():
    """The tiny gqa + dense model on 4 chips as 2 replicas of tp 2: each replica holds what one tp-2 instance
    does, floor((9,663,676 - 80,384) / 96,000) = 99 requests (test_hand_counts), so the instance holds
    2 x 99 = 198; each replica steps its 99 in T_decode(99), so the instance makes 198 / T_decode(99) tokens/s."""
    m = model(GQA, DENSE)
    cap = decode_capacity(m, Instance(decode_hardware(), 4, Layout(tp=2, replicas=2)), DECODE_CONTEXT)
    usable, weights, kv = 0.01 * 2**30 * 0.9, (2 * 100 * 64 + 2 * (9216 + 24576)) * 2 / 2, 2 * 96 * DECODE_CONTEXT / 2
    per_replica = math.floor((usable - weights) / kv)
    assert per_replica == 99
    assert cap.bs_max_memory == 2 * per_replica == 198
    assert (cap.batch_size, cap.limited_by) == (198, "memory")
    assert cap.step_s == pytest.approx(hand_decode_step_s(99), rel=1e-9)
    assert cap.tokens_per_s == pytest.approx(198 / hand_decode_step_s(99), rel=1e-9)
    capped = decode_capacity(m, Instance(decode_hardware(), 4, Layout(tp=2, replicas=2)), DECODE_CONTEXT, max_batch=150)
    assert (capped.batch_size, capped.limited_by) == (150, "max_batch")  # between one replica's 99 and 198
