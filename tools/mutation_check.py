"""Deliberate bugs in the core formulas, each of which some test must catch.

    python tools/mutation_check.py            # every mutant, fast tier (about 3 minutes each)
    python tools/mutation_check.py swa-prefill-flops egress-gib   # some of them
    python tools/mutation_check.py --tests tests/test_costs_switches_and_replicas.py sites-day-not-cyclic
                                              # only those test files (quick, while writing a test)
    python tools/mutation_check.py --check    # the list still applies (seconds; no test is run)

For each mutant the repository is copied to a temporary folder, one line of the copy's source
is changed, and the fast tier (``-m "not slow"``, or the ``--tests`` files) runs there against
the copy (PYTHONPATH); a mutant that passes every test has escaped (exit 1, naming it). Not part
of the suite (it runs the suite many times); run it after changing a formula or its tests.

``--check`` runs no test: it checks that every mutant's text occurs exactly once in its file
and differs from its replacement, and exits 1 naming the stale ones (a formula was rewritten:
update the mutant's text, or drop it with the code it tested). Run it after any change to the
source; it takes well under a second.

The list holds the bugs a review found passing the previous suite (issues 7 and 16) and the
ones the changes that added entries touched.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# name: (file, text to find (exactly once), replacement)
MUTANTS: dict[str, tuple[str, str, str]] = {
    "misspelt-required-field-reported-missing": (
        "prfaas_plan/profiles/_base.py",
        'misspelt = _misspelt(loc, errors) if kind == "missing" else None',
        "misspelt = None",
    ),
    "option-errors-name-the-scenario-file": (
        "prfaas_plan/api.py",
        'if exc.field is not None and exc.source is None and re.split(r"[./\\[]", exc.field)[0] in parameters:',
        'if exc.field is not None and exc.source is None and re.split(r"[./\\[]", exc.field)[0] in ():',
    ),
    "robust-case-replans-the-counts": (
        "prfaas_plan/study/model.py",
        "replace(c, instances=s.instances, decode_instances=s.decode_instances) for s, c in zip(self.pd_sites, case.pd_sites)",
        "replace(c, instances=c.instances, decode_instances=c.decode_instances) for s, c in zip(self.pd_sites, case.pd_sites)",
    ),
    "sim-egress-mean-from-zero": (
        "prfaas_plan/simulate/results.py",
        "overlap_s = np.clip(np.minimum(end, end_s) - np.maximum(start, start_s), 0.0, None)",
        "overlap_s = np.clip(np.minimum(end, end_s) - start, 0.0, None)",
    ),
    "serving-little-law": (
        "prfaas_plan/timing/serving.py",
        'd_next = min(c * w / (w + n), cap, full)',
        'd_next = min(c, cap, full)',
    ),
    "serving-prompts-per-step-ignored": (
        'prfaas_plan/timing/serving.py',
        '        **{f: getattr(a, f) + scale * getattr(b, f) for f in ADDITIVE},',
        '        **{f: getattr(a, f) + getattr(b, f) for f in ADDITIVE},',
    ),
    "serving-own-newcomer-mixed": (
        "prfaas_plan/timing/serving.py",
        'mixed_fraction = min(1.0, arrivals * (c - 1) / c * n / k)',
        'mixed_fraction = min(1.0, arrivals * n / k)',
    ),
    "serving-ttft-no-wait": (
        "prfaas_plan/timing/serving.py",
        'ttft = wait_steps * step + float(np.sum(t_pre))',
        'ttft = float(np.sum(t_pre))',
    ),
    "serving-ttft-beside-all-decodes": (
        "prfaas_plan/timing/serving.py",
        't_pre, _ = mixed_step_cost(model, instance, layout, d_pre * schedulers,',
        't_pre, _ = mixed_step_cost(model, instance, layout, d_dec * schedulers,',
    ),
    "serving-budget-ignores-decodes": (
        "prfaas_plan/timing/serving.py",
        'room = max(budget - d * q, 1.0)',
        'room = max(budget, 1.0)',
    ),
    "serving-no-prefill-bound": ("prfaas_plan/timing/serving.py", 'full = budget / (q + I / w)', 'full = budget / q'),
    "serving-mixed-step-decode-overhead": (
        "prfaas_plan/timing/serving.py",
        'overhead = max(eff.decode_step_overhead_s, eff.prefill_pass_overhead_s) + engine.step_overhead_s',
        'overhead = eff.decode_step_overhead_s + engine.step_overhead_s',
    ),
    "published-load-default-static": (
        "prfaas_plan/published.py",
        'return "closed" if kind in LOAD_KINDS and row["requests"] else "static"',
        'return "static"',
    ),
    "published-load-tpot-static": (
        "prfaas_plan/published.py",
        'seconds = est.ttft_at_load_s if f.kind == "ttft" else est.tpot_at_load_s',
        'seconds = est.ttft_at_load_s if f.kind == "ttft" else est.tpot_s',
    ),
    "theta-prfaas-ignores-link": (
        "prfaas_plan/planner/throughput.py",
        "link=_over(link, table.link_work_bytes[idx]),",
        "link=_over(np.inf, table.link_work_bytes[idx]),",
    ),
    "egress-gib": (
        "prfaas_plan/planner/throughput.py",
        "egress = bytes_per_s_to_gbps(lam * float(table.link_work_bytes[idx]))",
        "egress = lam * float(table.link_work_bytes[idx]) * 8 / 2**30",
    ),
    "milp-link-rhs-unscaled": (
        'prfaas_plan/planner/formulation.py',
        '<= link.usable_bytes_per_s / unit',
        '<= link.usable_bytes_per_s',
    ),
    "plan-columns-swapped": (
        "prfaas_plan/views/plan.py",
        'Column("theta_pdp_rps", "Θ_pdp", num(2)),',
        'Column("theta_pdp_rps", "Θ_pdd", num(2)),',
    ),
    "plan-csv-swapped": (
        'prfaas_plan/views/plan.py',
        '            "theta_pdp_rps",\n            "theta_pdd_rps",',
        '            "theta_pdd_rps",\n            "theta_pdp_rps",',
    ),
    "swa-prefill-flops": (
        "prfaas_plan/accounting/mixers/gqa.py",
        "return self._flops_per_key() * causal_keys(lengths, self.window_tokens)",
        "return self._flops_per_key() * causal_keys(lengths)",
    ),
    "swa-kv-write": (
        "prfaas_plan/accounting/work.py",
        "written = kv.at(prefix + l) - kv.at(prefix) + kv.fixed_bytes",
        "written = kv.growing_bytes_per_token * l + kv.window_bytes_per_token * l + kv.fixed_bytes",
    ),
    "swa-decode-full-context": (
        "prfaas_plan/accounting/mixers/gqa.py",
        "keys = context_tokens if self.window_tokens is None else min(context_tokens, self.window_tokens)",
        "keys = context_tokens",
    ),
    "sparse-decode-max": (
        "prfaas_plan/accounting/mixers/sparse.py",
        "keys = min(context_tokens, s.index_topk_tokens)",
        "keys = max(context_tokens, s.index_topk_tokens)",
    ),
    "moe-decode-topk-experts": (
        "prfaas_plan/timing/cost.py",
        "touched = math.ceil(e / layout.ep) * (1.0 - (1.0 - k / e) ** tokens)",
        "touched = k + 0 * tokens",
    ),
    "linear-state-not-written": (
        "prfaas_plan/accounting/mixers/linear.py",
        "return flops, batch * 2 * self.state_bytes",
        "return flops, batch * self.state_bytes",
    ),
    "tpot-over-all-pd": (
        "prfaas_plan/planner/latency.py",
        "r = rate_rps * self.inputs.output_mean_tokens / n_d if n_d > 0 else math.inf",
        "r = rate_rps * self.inputs.output_mean_tokens / (n_d + self.deployment.n_p) if n_d > 0 else math.inf",
    ),
    "closed-form-no-pipelining": (
        "prfaas_plan/planner/latency.py",
        "full = prefill + np.maximum(0.0, sent_s - prefill) + sent_s / self._layers + link.rtt_s",
        "full = prefill + sent_s + link.rtt_s",
    ),
    "sim-no-rtt": ("prfaas_plan/simulate/engine.py", "rtt_s=inputs.link.rtt_s,", "rtt_s=0.0,"),
    "sim-link-caps-always-fit": (
        "prfaas_plan/simulate/link.py",
        "if capped_bytes_per_s < capacity * (1 - tolerance):",
        "if capped_bytes_per_s < math.inf:",
    ),
    "sim-prfaas-instances-doubled": (
        "prfaas_plan/simulate/engine.py",
        "self.pf_free = list(self.instances)",
        "self.pf_free = [2 * n for n in self.instances]",
    ),
    "attention-kind-factor-inverted": (
        "prfaas_plan/timing/cost.py",
        "attn = engine.attention_rate(w.mixer_type, prefill) * eff.attention_kind_rate(w.mixer_type, prefill)",
        "attn = engine.attention_rate(w.mixer_type, prefill) / eff.attention_kind_rate(w.mixer_type, prefill)",
    ),
    "attention-kind-factor-in-decode": (
        "prfaas_plan/profiles/hardware.py",
        "return self.attention_kind.get(mixer_type, 1.0) if prefill else 1.0",
        "return self.attention_kind.get(mixer_type, 1.0) if True else 1.0",
    ),
    "calibration-kind-never-held": (
        "prfaas_plan/timing/calibrate.py",
        "return [i for i, p in enumerate(self.fit) if not p.attention_kind or p.attention_kind in kinds]",
        "return list(range(len(self.fit)))",
    ),
    "calibration-kind-absent-accepted": (
        "prfaas_plan/timing/calibrate.py",
        "if p.attention_kind and p.attention_kind not in kinds:",
        "if False:",
    ),
    "linear-chunk-steps-not-whole": (
        "prfaas_plan/accounting/mixers/linear.py",
        "return np.ceil(np.asarray(lengths, dtype=float) / self.spec.chunk_tokens)",
        "return np.asarray(lengths, dtype=float) / self.spec.chunk_tokens",
    ),
    "linear-chunk-floor-per-request": (
        'prfaas_plan/timing/cost.py',
        '            w.sequential_steps * engine.linear_chunk_step_s,',
        '            w.sequential_steps * r * engine.linear_chunk_step_s,',
    ),
    "linear-chunk-floor-counted-once-roofline": (
        "prfaas_plan/timing/cost.py",
        "short = c + m < floor_s",
        "short = c + m > floor_s",
    ),
    "calibration-absolute-residuals": (
        "prfaas_plan/timing/calibrate.py",
        "return np.log(self.predict(full(xa), chosen)) - np.log(measured)",
        "return self.predict(full(xa), chosen) - measured",
    ),
    "balance-tie-reversed": (
        "prfaas_plan/planner/throughput.py",
        "pick = np.argmax(np.where(lam >= best * (1 - TIE_REL), prefill, -np.inf), axis=1)",
        "pick = np.argmin(np.where(lam >= best * (1 - TIE_REL), prefill, np.inf), axis=1)",
    ),
    "decode-weight-gib": (
        "prfaas_plan/views/timing.py",
        '"weight_gb_per_chip": round(d.weight_bytes / 1e9, 3),',
        '"weight_gb_per_chip": round(d.weight_bytes / 2**30, 3),',
    ),
    "link-utilisation-raw": (
        "prfaas_plan/study/model.py",
        "usable = self.usable_bytes_per_s\n",
        "usable = self.bandwidth_bytes_per_s\n",
    ),
    "kv-dtype-ignored": ("prfaas_plan/accounting/kinds.py", "return dtype_bytes(self.dtypes.kv)", "return 2.0"),
    "alias-bomb-unchecked": ("prfaas_plan/yamlio.py", "        if total > MAX_NODES:", "        if False:"),
    "instances-unbounded": (
        "prfaas_plan/ranges.py",
        'INSTANCES = Range(0, 10_000, "instances"',
        'INSTANCES = Range(0, 1e30, "instances"',
    ),
    "zero-capacity-accepted": (
        "prfaas_plan/planner/optimizer.py",
        "if sol.lambda_max < MIN_CAPACITY_RPS:",
        "if sol.lambda_max < 0:",
    ),
    # issue 8: the instance model
    "all-reduce-half-bytes": (
        "prfaas_plan/timing/collectives.py",
        "return 2 * steps(chips) * f.latency_s + 2 * (chips - 1) / chips * payload / f.bytes_per_s",
        "return 2 * steps(chips) * f.latency_s + (chips - 1) / chips * payload / f.bytes_per_s",
    ),
    "all-to-all-nic-at-nvlink-speed": (
        "prfaas_plan/timing/collectives.py",
        "np.maximum(intra / up.bytes_per_s, inter / out.bytes_per_s), intra, inter",
        "np.maximum(intra / up.bytes_per_s, inter / up.bytes_per_s), intra, inter",
    ),
    "nic-gbps-as-gbytes": (
        "prfaas_plan/timing/collectives.py",
        'return Fabric("NIC", hw.nic_gbps * 1e9 / 8 * hw.efficiency.nic, hw.nic_latency_us * 1e-6)',
        'return Fabric("NIC", hw.nic_gbps * 1e9 * hw.efficiency.nic, hw.nic_latency_us * 1e-6)',
    ),
    "gemm-shape-ignores-rows": (
        "prfaas_plan/timing/cost.py",
        "return depth * (m + eff.matmul_m0) / np.maximum(m, 1e-9)",
        "return depth",
    ),
    "kernel-overhead-ignored": (
        "prfaas_plan/timing/cost.py",
        "overhead = np.full_like(tokens, w.kernels * eff.kernel_overhead_us * 1e-6)",
        "overhead = np.zeros_like(tokens)",
    ),
    "overlap-hides-everything": (
        "prfaas_plan/timing/cost.py",
        "exposed = comm - engine.overlap * np.minimum(comm, compute + memory)",
        "exposed = comm - np.minimum(comm, compute + memory)",
    ),
    "pipeline-fill-ignored": (
        "prfaas_plan/timing/prefill.py",
        "parts = parts.add(longest.scaled(layout.pp - 1))",
        "parts = parts.add(longest.scaled(0))",
    ),
    "decode-one-stage-per-step": ("prfaas_plan/timing/decode.py", "parts = stage.scaled(layout.pp)", "parts = stage.scaled(1)"),
    "mtp-ignored": (
        "prfaas_plan/timing/decode.py",
        'tokens_per_s, used = best * mtp / step, "roofline"',
        'tokens_per_s, used = best / step, "roofline"',
    ),
    "e2e-no-prefill": (
        "prfaas_plan/timing/estimate.py",
        "e2e = output_tokens / (mixed_capacity_s + (output_tokens - 1) * mixed_step",
        "e2e = output_tokens / (0.0 + (output_tokens - 1) * mixed_step",
    ),
    "uncertainty-ignores-dof": (
        "prfaas_plan/timing/calibrate.py",
        "s2 = float(2 * res.cost) / dof",
        "s2 = float(2 * res.cost) / points",
    ),
    "ep-dispatch-spread-over-stage": (
        "prfaas_plan/timing/cost.py",
        "share = max(1 / (max(busy, 1) * tp), engine.expert_imbalance / stage)",
        "share = engine.expert_imbalance / stage",
    ),
    "mtp-drafts-free": ("prfaas_plan/timing/decode.py", "q = math.ceil(mtp - 1e-9)", "q = 1"),
    "output-head-every-stage": (
        "prfaas_plan/timing/cost.py",
        "cost = _layer(model, hw, layout, engine, work, r, busy, prefill, rates).scaled(count / layout.pp)",
        "cost = _layer(model, hw, layout, engine, work, r, busy, prefill, rates).scaled(count / layout.pp if count > 1 else 1)",
    ),
    "estimate-columns-swapped": (
        "prfaas_plan/views/estimate.py",
        'Column("decode_tokens_per_s_per_gpu", "decode tok/s/GPU", fmt_float(0)),',
        'Column("prefill_tokens_per_s_per_gpu", "decode tok/s/GPU", fmt_float(0)),',
    ),
    "chunk-sum-off-by-one": (
        "prfaas_plan/timing/prefill.py",
        "np.concatenate([[0.0], np.cumsum(full_parts[f])])[before]",
        "np.concatenate([[0.0], np.cumsum(full_parts[f])])[np.maximum(before - 1, 0)]",
    ),
    "pipeline-memory-mean-stage": (
        "prfaas_plan/timing/cost.py",
        "best = part if best is None else np.maximum(best, part)",
        "best = (part if best is None else best + part)",
    ),
    "search-ignores-missing-nic": (
        "prfaas_plan/timing/memory.py",
        "return hw.nic_gbps is not None or layout.replica_chips <= hw.scale_up_domain_chips",
        "return True",
    ),
    # issue 9: pools per phase, cost of ownership, operating point, compare
    "crf-simple-interest": (
        "prfaas_plan/study/prices.py",
        "return rate_per_year * growth / (growth - 1.0)",
        "return 1.0 / years + rate_per_year",
    ),
    "power-ignores-idle": (
        "prfaas_plan/study/prices.py",
        "return self.tdp_w * (self.idle_power_fraction + (1.0 - self.idle_power_fraction) * busy) * self.pue",
        "return self.tdp_w * busy * self.pue",
    ),
    "blended-counts-output-only": (
        "prfaas_plan/planner/cost.py",
        "return self._per_mtok(self.input_mean_tokens + self.output_mean_tokens)",
        "return self._per_mtok(self.output_mean_tokens)",
    ),
    "egress-per-gib": (
        "prfaas_plan/study/prices.py",
        "return self.usd_per_gb_egress * egress_bytes_per_s * SECONDS_PER_HOUR / 1e9",
        "return self.usd_per_gb_egress * egress_bytes_per_s * SECONDS_PER_HOUR / 2**30",
    ),
    "month-of-30-days": (
        "prfaas_plan/study/prices.py",
        "HOURS_PER_MONTH = HOURS_PER_YEAR / 12  # 730",
        "HOURS_PER_MONTH = 720.0",
    ),
    "min-cost-reported-at-lambda-max": (
        "prfaas_plan/planner/plan.py",
        "        result.operating_rate_rps, result.operating_basis = target, \"target rate\"",
        "        result.operating_rate_rps, result.operating_basis = result.point.lambda_max, \"target rate\"",
    ),
    "budget-block-not-named": (
        "prfaas_plan/planner/plan.py",
        "            out += [x for x in _blocking(inputs, limits, *grown) if x not in out]",
        "            pass",
    ),
    "decode-on-the-pd-pool": (
        "prfaas_plan/study/resolve/single_site.py",
        "        decoder = chosen.get(Role.pd_decode, chosen[Role.pd])",
        "        decoder = chosen[Role.pd]",
    ),
    "auto-chips-not-the-fewest": (
        "prfaas_plan/study/resolve/pools.py",
        "    return tuple(range(least, cap + 1, least))",
        "    return tuple(range(least + 1, cap + 2, least))",
    ),
    "compare-ranks-cheapest-first": (
        "prfaas_plan/planner/compare.py",
        "        return (0, -capacity, cost, ttft)",
        "        return (0, cost, -capacity, ttft)",
    ),
    "homogeneous-ignores-budgets": ("prfaas_plan/planner/plan.py", "    count = _most(total, local(free))", "    count = total"),
    "milp-link-free": (
        'prfaas_plan/planner/formulation.py',
        'self.prob += sum_of(x for _, x in items) <= upper * self.link_used[name, f]',
        'pass',
    ),
    "slo-idle-check-inverted": (
        "prfaas_plan/planner/slo.py",
        "    if not any(idle_ok(int(k)) for k in coarse):",
        "    if any(idle_ok(int(k)) for k in coarse):",
    ),
    "slo-min-cost-target-unchecked": (
        "prfaas_plan/planner/optimizer.py",
        "    if objective == ObjectiveKind.min_cost and target_rps is None:",
        "    if False:",
    ),
    "compare-keeps-old-cost": (
        "prfaas_plan/study/resolve/pools.py",
        "        chip_cost(hardware, CostSpec(), spec.site.model_copy(update={\"usd_per_kwh\": None}))\n        if moved",
        "        chip_cost(hardware, spec.cost, spec.site)\n        if moved",
    ),
    # issue 10: cache-aware routing, robust plans, day schedule, several sites
    "scarce-prfaas-uses-pd-cache": (
        "prfaas_plan/workload/cluster_cache.py",
        "        prfaas = np.broadcast_to(np.maximum(np.round(length * (1 - g)), 1.0), shape)",
        "        prfaas = pd_missing",
    ),
    "plentiful-cache-not-on-link": (
        "prfaas_plan/workload/cluster_cache.py",
        "        local_kv = np.broadcast_to(np.round(length * np.maximum(g - h, 0.0)), shape)",
        "        local_kv = np.zeros(shape)",
    ),
    "switches-cost-nothing": (
        "prfaas_plan/planner/schedule.py",
        "    f = min(1.0, conversion_s / (window.hours * 3600.0))",
        "    f = 0.0",
    ),
    "sites-link-unbounded": ('prfaas_plan/planner/formulation.py', '<= link.usable_bytes_per_s / unit', '<= 1e30'),
    "robust-worst-is-mean": (
        "prfaas_plan/planner/robust.py",
        "            value = min(scaled) if objective == RobustObjective.worst_case else weighted",
        "            value = sum(scaled) / len(scaled) if objective == RobustObjective.worst_case else weighted",
    ),
    "cbc-solution-trusted": (
        'prfaas_plan/planner/formulation.py',
        '        if not c.valid(rel_tolerance * scale):',
        '        if False:',
    ),
    "solution-tolerance-absolute": (
        'prfaas_plan/planner/formulation.py',
        'scale = max([1.0, abs(c.constant)] + [abs(coef * (v.value() or 0.0)) for v, coef in c.items()])',
        'scale = max(1.0, abs(c.constant))',
    ),
    "certificate-floor-counts": (
        "prfaas_plan/planner/exact.py",
        "    return np.ceil(x * (1 - _CEIL_REL))",
        "    return np.floor(x * (1 - _CEIL_REL))",
    ),
    "certificate-ignores-link": (
        "prfaas_plan/planner/exact.py",
        "    link_ok = rate_rps * table.link_work_bytes <= inputs.link.usable_bytes_per_s * (1 + _CEIL_REL)",
        "    link_ok = rate_rps >= 0",
    ),
    "certificate-no-pd-minimum": (
        "prfaas_plan/planner/exact.py",
        "        n_d = np.maximum(n_d, limits.pd_min - n_p)",
        "        n_d = n_d",
    ),
    "sites-switches-free": (
        'prfaas_plan/planner/formulation.py',
        'f_idle = min(1.0, study.conversion_s / (cell.hours * 3600.0)) if n_windows > 1 else 0.0',
        'f_idle = 0.0',
    ),
    # issue 8: offline runs and trtllm-bench's own limits
    "offline-run-decodes-one-step-short": (
        "prfaas_plan/timing/offline.py",
        "running -= admitted[-window - 1]",
        "running -= admitted[-window]",
    ),
    "offline-run-no-token-budget": (
        "prfaas_plan/timing/offline.py",
        "room = max(budget_tokens - query * running, 0.0) / input_tokens",
        "room = max(budget_tokens, 0.0) / input_tokens",
    ),
    "e2e-steady-o-decode-steps": (
        "prfaas_plan/timing/estimate.py",
        "e2e = output_tokens / (mixed_capacity_s + (output_tokens - 1) * mixed_step",
        "e2e = output_tokens / (mixed_capacity_s + output_tokens * mixed_step",
    ),
    "trtllm-batch-limit-per-instance": (
        "prfaas_plan/published.py",
        "max_batch = per_rank * _ranks(f, layout_kind_, gpus)",
        "max_batch = per_rank",
    ),
    "trtllm-kv-heads-not-tp": (
        "prfaas_plan/published.py",
        "kv_gib_per_token = 2 * model.layers.count * max(tp_size, kv_heads) * head",
        "kv_gib_per_token = 2 * model.layers.count * kv_heads * head",
    ),
    "unchunked-long-prompt-accepted": (
        "prfaas_plan/timing/cost.py",
        "        if not self.chunked_prefill and longest > self.prefill_tokens_per_pass:",
        "        if False:",
    ),
    "steady-batch-ignores-budget": ("prfaas_plan/timing/estimate.py", "    if room >= dec.batch_size:", "    if True:"),
    "offline-run-mtp-ignored": (
        "prfaas_plan/timing/offline.py",
        "    window = math.ceil((output_tokens - 1) / mtp_tokens_per_step - 1e-9)",
        "    window = output_tokens - 1",
    ),
    "offline-run-one-group": (
        "prfaas_plan/timing/offline.py",
        "    groups = layout.dp_attention * layout.replicas",
        "    groups = 1",
    ),
    "chip-memory-decimal": (
        "prfaas_plan/profiles/hardware.py",
        "        return self.memory_gib * 2**30",
        "        return self.memory_gib * 1e9",
    ),
    # issue 16: six bugs that passed the whole suite (tests/test_costs_switches_and_replicas.py)
    "link-priced-on-usable": (
        "prfaas_plan/study/model.py",
        "return self.cost.fixed_usd_per_hour(self.bandwidth_gbps)",
        "return self.cost.fixed_usd_per_hour(self.usable_gbps)",
    ),
    "sites-day-not-cyclic": (
        'prfaas_plan/planner/formulation.py',
        'prev = windows[(w - 1) % n_windows][0]',
        'prev = windows[max(w - 1, 0)][0]',
    ),
    "sites-prfaas-priced-per-chip": (
        'prfaas_plan/planner/formulation.py',
        'n_f[f.name] * (f.pool.usd_per_hour_per_instance or 0.0)',
        'n_f[f.name] * (f.pool.cost.provisioned_usd_per_hour or 0.0)',
    ),
    "schedule-switch-limit-one-too-tight": (
        "prfaas_plan/planner/schedule.py",
        "np.abs(splits[:, None] - splits[None, :]) <= max_switches",
        "np.abs(splits[:, None] - splits[None, :]) < max_switches",
    ),
    "schedule-switch-limit-one-too-loose": (
        "prfaas_plan/planner/schedule.py",
        "np.abs(splits[:, None] - splits[None, :]) <= max_switches",
        "np.abs(splits[:, None] - splits[None, :]) <= max_switches + 1",
    ),
    "robust-weighted-ignores-targets": (
        "prfaas_plan/planner/robust.py",
        "weighted = sum(c.weight * x for c, x in zip(cases, scaled))",
        "weighted = sum(c.weight * x for c, x in zip(cases, lams))",
    ),
    "memory-batch-one-replica": (
        "prfaas_plan/timing/decode.py",
        "return max(per_group, 0) * layout.dp_attention * layout.replicas, weights, kv",
        "return max(per_group, 0) * layout.dp_attention, weights, kv",
    ),
    # measurements follow their instance (tests/test_measurements_follow_their_hardware.py)
    "hardware-compared-as-written": (
        "prfaas_plan/profiles/registry.py",
        "    if not (looks_like_path(a) or looks_like_path(b)):\n        return True",
        "    if not (looks_like_path(a) or looks_like_path(b)):\n        return False",
    ),
    "hardware-file-by-path-not-name": (
        "prfaas_plan/profiles/registry.py",
        'return (resolve_hardware if kind == "hardware_profiles" else resolve_model)(str(path)).name',
        "return str(path)",
    ),
    "measurement-chips-ignored": (
        "prfaas_plan/study/basis.py",
        "if measured_gpus is not None and measured_gpus != gpus:",
        "if False:",
    ),
    "decode-rate-chips-not-passed": (
        "prfaas_plan/study/resolve/workload.py",
        "        pd.gpus_per_instance,\n        dec.tokens_per_s_gpus,\n",
        "        pd.gpus_per_instance,\n        None,\n",
    ),
    "compare-swap-by-raw-name": (
        "prfaas_plan/study/resolve/single_site.py",
        "if same_hardware(ref, pool.written, base):",
        "if ref == pool.written:",
    ),
    "decode-chips-default-from-pd": (
        "prfaas_plan/profiles/scenario.py",
        'pool = data.get("pd_decode") or data.get("pd")',
        'pool = data.get("pd")',
    ),
    "split-parts-drop-row-name": (
        "prfaas_plan/report.py",
        "return [kept + part for part in out]",
        "return [kept + part if k == 0 else part for k, part in enumerate(out)]",
    ),
    "sites-site-not-kept": (
        'prfaas_plan/views/sites.py',
        '        Column("site", "site", justify="left", keep=True),',
        '        Column("site", "site", justify="left"),',
    ),
    "union-list-read-as-integer": (
        "prfaas_plan/profiles/_base.py",
        "(kind in _SCALAR_MISMATCH and (given_mapping or given_list))",
        "(kind in _SCALAR_MISMATCH and given_mapping)",
    ),
    "robust-error-without-file": (
        "prfaas_plan/api.py",
        "    with scenario_errors(path):  # a shipped name's errors name its file too\n        objective, cases",
        "    with scenario_errors(scenario):\n        objective, cases",
    ),
    "text-binding-as-enum": ("prfaas_plan/views/plan.py", "return _BOUND_LABELS.get(value, str(value))", "return str(value)"),
    "validate-delta-headers-by-position": (
        "prfaas_plan/views/simulation.py",
        'Column("ttft_mean_diff_fraction", "Δ TTFT mean", pct)',
        'Column("ttft_mean_diff_fraction", "Δ", pct)',
    ),
    # issue 16: the compare front, unknown power, weights, notes and CSV a committee reads
    "front-prices-unpriced-as-worst": (
        "prfaas_plan/planner/compare.py",
        "    priced = all(r.usd_per_hour is not None for r in feasible)",
        "    priced = any(r.usd_per_hour is not None for r in feasible)",
    ),
    "front-counts-lambda-under-min-cost": (
        'prfaas_plan/planner/compare.py',
        '    return (\n        *(("usd_per_hour",) if priced else ()),\n        *(("capacity_rps",) if objective != ObjectiveKind.min_cost else ()),\n        "ttft_p90_s",\n    )',
        '    return (*(("usd_per_hour",) if priced else ()), "capacity_rps", "ttft_p90_s")',
    ),
    "front-ttft-more-is-better": (
        "prfaas_plan/planner/compare.py",
        'CRITERIA_SENSE = {"usd_per_hour": -1, "capacity_rps": +1, "ttft_p90_s": -1}',
        'CRITERIA_SENSE = {"usd_per_hour": -1, "capacity_rps": +1, "ttft_p90_s": +1}',
    ),
    "no-price-row-without-sources": (
        'prfaas_plan/planner/compare.py',
        '            option, exc, identity, sources(inputs, scenarios.basis) if inputs else {"basis": str(scenarios.basis)}, said',
        '            option, exc, identity, {"basis": str(scenarios.basis)}, said',
    ),
    "unknown-power-is-zero": (
        "prfaas_plan/planner/cost.py",
        "    kw = None if chips and c.tdp_w is None else c.facility_w(busy) * chips / 1000.0",
        "    kw = c.facility_w(busy) * chips / 1000.0",
    ),
    "partial-power-as-the-total": (
        "prfaas_plan/planner/cost.py",
        "        return None if self.power_not_counted else self.counted_power_kw",
        "        return self.counted_power_kw",
    ),
    "robust-weights-checked-for-weighted-only": (
        "prfaas_plan/profiles/scenario.py",
        "if self.weighted and abs(total - 1.0) > 1e-6:",
        "if self.objective == RobustObjective.weighted and abs(total - 1.0) > 1e-6:",
    ),
    "robust-weighted-figure-without-weights": (
        "prfaas_plan/views/plan.py",
        'if any(c.weight for c in result.cases) else "")',
        'if True else "")',
    ),
    "mixture-weights-normalised-silently": (
        "prfaas_plan/profiles/workload_spec.py",
        "    if total <= 0 or abs(total - 1.0) <= 1e-9:",
        "    if True:",
    ),
    "dropped-cost-note-claims-a-rental": (
        "prfaas_plan/study/resolve/pools.py",
        "        if price is None\n",
        "        if False\n",
    ),
    "written-chips-not-described": (
        "prfaas_plan/study/resolve/single_site.py",
        "            role: p.spec.gpus_per_instance if isinstance(p.spec.gpus_per_instance, int) else None",
        "            role: None",
    ),
    "robust-own-counts-swapped": (
        'prfaas_plan/views/plan.py',
        '            **dict(zip(("own_n_prfaas", "own_n_p", "own_n_d"), c.own_counts)),',
        '            **dict(zip(("own_n_p", "own_n_prfaas", "own_n_d"), c.own_counts)),',
    ),
    "relaxed-plan-priced-as-the-plan": (
        "prfaas_plan/planner/plan.py",
        "relaxed = (more.lambda_max - base, counts, usd_per_hour(inputs, *counts))",
        "relaxed = (more.lambda_max - base, counts, usd_per_hour(inputs, sol.n_prfaas, sol.n_p, sol.n_d))",
    ),
    "unused-budget-is-the-whole-budget": (
        "prfaas_plan/planner/plan.py",
        "else limits.usd_per_hour - plan_cost",
        "else limits.usd_per_hour",
    ),
    "relaxed-rise-net-of-the-price": (
        "prfaas_plan/views/plan.py",
        "extra = m.budget_usd_per_hour - m.plan_usd_per_hour",
        "extra = m.budget_usd_per_hour - m.plan_usd_per_hour - (m.price_usd_per_hour or 0.0)",
    ),
    "slack-said-when-none-is-spent": ("prfaas_plan/views/plan.py", "extra > price + 0.005", "extra > 0.005"),
    "sites-link-utilisation-on-raw-bandwidth": (
        "prfaas_plan/views/sites.py",
        "link_utilisation_at_planned_rate=round(site.link_utilisation_at_planned_rate[f], 6),",
        "link_utilisation_at_planned_rate=round(site.egress_gbps[f] / link.bandwidth_gbps, 6),",
    ),
    "layout-choice-text-swapped": (
        'prfaas_plan/views/timing.py',
        '        if capacity == "per_request"',
        '        if capacity != "per_request"',
    ),
    "unpriced-power-ignores-the-kwh": (
        "prfaas_plan/study/prices.py",
        "return self.tdp_w is None and self.usd_per_kwh > 0",
        "return self.tdp_w is None",
    ),
    "pool-tco-never-flags-uncounted-power": (
        'prfaas_plan/planner/cost.py',
        '        bool(chips) and c.power_unpriced,',
        '        False,',
    ),
    "budget-accepts-unpriced-power": (
        "prfaas_plan/planner/cost.py",
        "if most > 0 and pool.cost.power_unpriced:",
        "if False and pool.cost.power_unpriced:",
    ),
    "cost-line-total-not-marked": (
        "prfaas_plan/views/plan.py",
        'f"{_usd_low(tco.usd_per_hour, low)}/hour = capital',
        'f"{_usd(tco.usd_per_hour)}/hour = capital',
    ),
    "plan-row-flag-always-false": (
        "prfaas_plan/views/plan.py",
        '"usd_per_hour_is_lower_bound": bool(power_unpriced_pools(inputs, pt.n_prfaas, pt.n_p, pt.n_d)),',
        '"usd_per_hour_is_lower_bound": False,',
    ),
    "compare-usd-cell-unmarked": (
        "prfaas_plan/views/compare.py",
        'return ("≥ " if row["usd_per_hour_is_lower_bound"] else "") + f"{value:,.{digits}f}"',
        'return f"{value:,.{digits}f}"',
    ),
    "paper-fingerprint-without-slo": ('prfaas_plan/planner/paper.py', '        inputs.slo,', ''),
    "paper-fingerprint-without-objective": ('prfaas_plan/planner/paper.py', '        inputs.objective,', ''),
    "paper-fingerprint-input-mean-only": (
        "prfaas_plan/planner/paper.py",
        "*(_distribution(d) for d in (workload.input_dist, workload.full_input_dist, workload.output_dist)),",
        "round(workload.full_input_dist.mean_tokens(), 6), round(inputs.output_mean_tokens, 6),",
    ),
    "sites-pair-notes-dropped": ('prfaas_plan/study/resolve/sites.py', 'notes=tuple(dict.fromkeys(notes)),', 'notes=(),'),
    "baseline-utilisation-null": (
        "prfaas_plan/views/plan.py",
        '"link_utilisation_at_capacity": _opt(b.link_utilisation, 6),',
        '"link_utilisation_at_capacity": None,',
    ),
    "naive-utilisation-zero": (
        'prfaas_plan/planner/plan.py',
        '        cost,\n        bytes_per_s_to_gbps(egress_bytes_per_s),\n        inputs.link.utilisation(egress_bytes_per_s),',
        '        cost,\n        bytes_per_s_to_gbps(egress_bytes_per_s),\n        0.0,',
    ),
    "compare-ratio-note-missing": ("prfaas_plan/views/compare.py", 'if served == "goodput":', 'if served == "Λ_max":'),
    "robust-json-rows-carry-table-cell": (
        'prfaas_plan/views/plan.py',
        '        json_doc={**meta, "plan": summary, "rows": rows, "notes": notes},\n    )\n\n\ndef _robust_notes',
        '        json_doc={**meta, "plan": summary, "rows": table_rows, "notes": notes},\n    )\n\n\ndef _robust_notes',
    ),
    "compare-plot-legend-without-rule": (
        'prfaas_plan/plot.py',
        '            label=textwrap.fill(front_note(comparison), 46),',
        '            label="Pareto front (TTFT too)",',
    ),
    # per-chip efficiencies (tests/test_chip_efficiencies.py)
    "fp8-attention-uses-bf16-fraction": (
        "prfaas_plan/timing/cost.py",
        "return hw.peak_flops(running) * hw.efficiency.attention_fraction(running)",
        "return hw.peak_flops(running) * hw.efficiency.attention",
    ),
    "fp8-attention-field-is-bf16": (
        "prfaas_plan/profiles/hardware.py",
        '    ComputeDtype.bf16: "attention",\n    ComputeDtype.fp8: "attention_fp8",\n    ComputeDtype.fp4: "attention_fp8",\n}',
        '    ComputeDtype.bf16: "attention",\n    ComputeDtype.fp8: "attention",\n    ComputeDtype.fp4: "attention_fp8",\n}',
    ),
    "fp8-matmul-field-is-bf16": (
        "prfaas_plan/profiles/hardware.py",
        '_MATMUL_FIELD: dict[str, str] = {ComputeDtype.bf16: "matmul", ComputeDtype.fp8: "matmul_fp8",',
        '_MATMUL_FIELD: dict[str, str] = {ComputeDtype.bf16: "matmul", ComputeDtype.fp8: "matmul",',
    ),
    "fp8-attention-falls-back-to-matmul": (
        'prfaas_plan/profiles/hardware.py',
        '    "attention_fp8": "attention",',
        '    "attention_fp8": "matmul",',
    ),
    "fallback-source-names-itself": (
        "prfaas_plan/profiles/hardware.py",
        'return f"fallback: {self.efficiency.field_in_use(field)} (no source for this chip)"',
        'return f"fallback: {field} (no source for this chip)"',
    ),
    "efficiency-sources-typo-accepted": (
        "prfaas_plan/profiles/hardware.py",
        "unknown = sorted(set(self.efficiency_sources) - set(Efficiency.model_fields))",
        "unknown = []",
    ),
    "calibration-drops-fp8-attention-ratio": (
        "prfaas_plan/timing/calibrate.py",
        '"grouped_matmul_fp4": "matmul", "attention_fp8": "attention"}',
        '"grouped_matmul_fp4": "matmul"}',
    ),
    "fp4-matmul-skips-its-fraction": (
        "prfaas_plan/profiles/hardware.py",
        'ComputeDtype.fp4: "matmul_fp4"}',
        'ComputeDtype.fp4: "matmul_fp8"}',
    ),
    # the published format says everything estimate can
    "batch-pipeline-fill-per-stage": (
        'prfaas_plan/timing/prefill.py',
        '        done = (\n            np.cumsum(t)\n            + (layout.pp - 1) * np.maximum.accumulate(t)\n            + count * eff.prefill_pass_overhead_s\n            + eff.prefill_overhead_s\n        )',
        '        done = np.cumsum(t) + layout.pp * np.maximum.accumulate(t) + count * eff.prefill_pass_overhead_s + eff.prefill_overhead_s',
    ),
    "batch-pass-ignores-budget": (
        "prfaas_plan/timing/prefill.py",
        "k = max(1, min(budget // input_tokens, held, per_group))",
        "k = max(1, min(held, per_group))",
    ),
    "batch-prompts-not-cut-to-batch": (
        "prfaas_plan/timing/prefill.py",
        "ended = np.minimum(ended, np.maximum(batch - (np.cumsum(ended) - ended), 0.0))",
        "ended = ended",
    ),
    "e2e-latency-one-prompt-prefill": (
        "prfaas_plan/timing/estimate.py",
        "e2e_latency_s=burst.seconds + (output_tokens - 1) * tpot,",
        "e2e_latency_s=float(ttft[0]) + (output_tokens - 1) * tpot,",
    ),
    "full-context-refused": (
        "prfaas_plan/timing/estimate.py",
        "held = input_tokens + output_tokens - 1  # the last token is never held",
        "held = input_tokens + output_tokens  # the last token is never held",
    ),
    "published-batch-wins-over-concurrency": (
        "prfaas_plan/published.py",
        "    if concurrency is None and batch is not None:",
        "    if batch is not None:",
    ),
    "published-ms-not-converted": (
        "prfaas_plan/published.py",
        'SECONDS_PER_UNIT = {"s": 1.0, "ms": 1e-3}',
        'SECONDS_PER_UNIT = {"s": 1.0, "ms": 1.0}',
    ),
    "published-chunk-column-ignored": (
        'prfaas_plan/published.py',
        '        ("chunk_tokens", "prefill_tokens_per_pass"),\n        ("chunked_prefill", "chunked_prefill"),',
        '        ("chunked_prefill", "chunked_prefill"),',
    ),
    "published-burst-ttft-is-whole-prefill": (
        "prfaas_plan/published.py",
        '"ttft": est.ttft_s if lone else est.batch_ttft_s}[f.kind]',
        '"ttft": est.ttft_s if lone else est.batch_prefill_s}[f.kind]',
    ),
    "published-layout-chips-unchecked": ("prfaas_plan/published.py", "    if chips != gpus:", "    if False:"),
    "published-layout-columns-ignored": (
        "prfaas_plan/published.py",
        "return dict(f.layout) if f.layout is not None else layout_of(_layout_kind_of(row, f), gpus)",
        "return layout_of(_layout_kind_of(row, f), gpus)",
    ),
    "engine-attention-prefill-ignored": (
        "prfaas_plan/timing/cost.py",
        "attn_flops = min(attn_rate * attn, attn_peak)",
        "attn_flops = attn_rate",
    ),
    "engine-attention-decode-ignored": (
        "prfaas_plan/timing/cost.py",
        "attn_bw = min(bw * attn, hw.memory_bytes_per_s)",
        "attn_bw = bw",
    ),
    "engine-attention-phases-swapped": (
        "prfaas_plan/timing/cost.py",
        "return in_prefill if prefill else in_decode",
        "return in_decode if prefill else in_prefill",
    ),
    "engine-gemm-multipliers-swapped": (
        "prfaas_plan/timing/cost.py",
        "mm, expert_rate = mm * engine.dense_gemm, expert_rate * engine.grouped_gemm",
        "mm, expert_rate = mm * engine.grouped_gemm, expert_rate * engine.dense_gemm",
    ),
    "engine-all-to-all-ignored": (
        "prfaas_plan/timing/cost.py",
        "time, up, nic = time + t / engine.all_to_all, up + intra, nic + inter",
        "time, up, nic = time + t, up + intra, nic + inter",
    ),
    "engine-given-settings-ignored": (
        "prfaas_plan/timing/cost.py",
        "settings = {f: given.get(f, getattr(profile.defaults, f)) for f in SETTINGS}",
        "settings = {f: getattr(profile.defaults, f) for f in SETTINGS}",
    ),
    "engine-step-overhead-dropped": (
        "prfaas_plan/timing/decode.py",
        "overhead = instance.hardware.efficiency.decode_step_overhead_s + instance.engine.step_overhead_s",
        "overhead = instance.hardware.efficiency.decode_step_overhead_s",
    ),
    "engine-batch-limit-per-instance": (
        "prfaas_plan/timing/decode.py",
        "max_batch = instance.engine.max_batch * layout.dp_attention * layout.replicas",
        "max_batch = instance.engine.max_batch",
    ),
    "engine-fp8-kv-overrides-given-kv": (
        "prfaas_plan/profiles/serving.py",
        'if kv_fp8_checkpoint is not None and "kv" not in update and quantised:',
        "if kv_fp8_checkpoint is not None and quantised:",
    ),
    "engine-fp8-kv-on-any-checkpoint": (
        "prfaas_plan/profiles/serving.py",
        'quantised = any(update.get(part) in QUANTISED for part in ("weights", "experts"))',
        'quantised = True',
    ),
    "engine-name-keyword-missing": (
        "prfaas_plan/published.py",
        '(EngineName.trtllm, ("TENSORRT-LLM", "TRT-LLM", "TRTLLM"))',
        '(EngineName.trtllm, ("TENSORRT-LLM", "TRT-LLM"))',
    ),
    "engine-unsourced-value-accepted": (
        "prfaas_plan/timing/engines/__init__.py",
        "return [k for k, v in flat_values(profile).items() if v != base[k] and not profile.field_sources.get(k, \"\").strip()]",
        "return []",
    ),
    "engine-published-override-ignored": (
        "prfaas_plan/published.py",
        'args = _estimate_args(row, f, checkpoint, precision, engine_name or engine_name_of(row["engine"]))',
        'args = _estimate_args(row, f, checkpoint, precision, engine_name_of(row["engine"]))',
    ),
    # uncertainty (timing/uncertainty.py, planner/uncertainty.py, views): tests/test_uncertainty.py
    "band-order-statistic-narrow": (
        "prfaas_plan/timing/uncertainty.py",
        "return ordered[k - 1], ordered[n - k]",
        "return ordered[k], ordered[n - k - 1]",
    ),
    "band-time-rows-as-rates": (
        "prfaas_plan/timing/uncertainty.py",
        'return -math.log(self.ratio) if self.orientation == "rate" else math.log(self.ratio)',
        "return -math.log(self.ratio)",
    ),
    "band-excludes-the-model-figure": (
        "prfaas_plan/timing/uncertainty.py",
        "return Band(math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0)), name, len(chosen), str(method))",
        "return Band(math.exp(lo), math.exp(hi), name, len(chosen), str(method))",
    ),
    "t-band-without-prediction-term": ("prfaas_plan/timing/uncertainty.py", "s * math.sqrt(1 + 1 / n)", "s * math.sqrt(1 / n)"),
    "leave-one-out-keeps-the-row": (
        "prfaas_plan/timing/uncertainty.py",
        'b = band(r.group, r.engine, rows, method, min_rows, exclude=f"{r.set}/{r.id}")',
        "b = band(r.group, r.engine, rows, method, min_rows)",
    ),
    "band-time-range-as-rate": (
        "prfaas_plan/timing/uncertainty.py",
        "return value / self.high, value / self.low",
        "return value * self.low, value * self.high",
    ),
    "plan-range-pd-work-times-factor": (
        "prfaas_plan/planner/uncertainty.py",
        "pd_work_s=table.pd_work_s / f_pd)",
        "pd_work_s=table.pd_work_s * f_pd)",
    ),
    "plan-range-decode-fixed": (
        "prfaas_plan/planner/uncertainty.py",
        "tokens_per_s_per_instance=inputs.decode.tokens_per_s_per_instance * f_d)",
        "tokens_per_s_per_instance=inputs.decode.tokens_per_s_per_instance)",
    ),
    "plan-range-rate-fixed": (
        "prfaas_plan/planner/uncertainty.py",
        "rate = rate_rps if fixed_rate else (rate_rps * lam / central_lambda if central_lambda > 0 else 0.0)",
        "rate = rate_rps",
    ),
    "compare-overlap-one-sided": (
        "prfaas_plan/planner/uncertainty.py",
        "apart = not (span[0] <= best_span[1] and best_span[0] <= span[1])",
        "apart = not (span[0] <= best_span[1])",
    ),
    # issue 18: compare's executor keeps the option order whatever order the workers finish in
    "executor-completion-order": (
        "prfaas_plan/planner/executor.py",
        "                out[futures[future]] = future.result()",
        "                out[done - 1] = future.result()",
    ),
    "compare-shared-error-ignored": (
        "prfaas_plan/planner/uncertainty.py",
        "shared = bool(r.error_key) and r.error_key == best.error_key",
        "shared = False",
    ),
    "estimate-range-per-gpu-not-divided": (
        "prfaas_plan/views/estimate.py",
        'out[f"{name}_low{unit}"] = round(low * scale / divide, digits)',
        'out[f"{name}_low{unit}"] = round(low * scale, digits)',
    ),
    # issue 17, wave 2: the AMD Instinct fabric figures (tests/test_rocm_efficiencies.py)
    "mi300x-network-back-to-assumed": ("hardware_profiles/mi300x.yaml", "  network: 0.7072\n", "  network: 0.8\n"),
    "mi300x-latency-step-back-to-assumed": (
        "hardware_profiles/mi300x.yaml",
        "scale_up_latency_us: 1.795\n",
        "scale_up_latency_us: 3.0\n",
    ),
    "mi355x-fabric-borrowed-from-mi300x": (
        "hardware_profiles/mi355x.yaml",
        "scale_up_gb_per_s: 537.6\n",
        "scale_up_gb_per_s: 448\n",
    ),
    "all-reduce-latency-one-way": (
        "prfaas_plan/timing/collectives.py",
        "return 2 * steps(chips) * f.latency_s + 2 * (chips - 1) / chips * payload / f.bytes_per_s",
        "return steps(chips) * f.latency_s + 2 * (chips - 1) / chips * payload / f.bytes_per_s",
    ),
    "sparse-prefill-uncompressed": (
        'prfaas_plan/accounting/mixers/sparse.py',
        '        return self._indexer_flops_per_key() * causal_keys(lengths) + self._decode_flops_per_key() * causal_keys(\n            lengths, topk\n        )  # absorbed form (module doc)',
        '        return self._indexer_flops_per_key() * causal_keys(lengths) + self._prefill_flops_per_key() * causal_keys(lengths, topk)',
    ),
    # MLA decode (tests/test_mla_decode.py)
    "mla-decode-values-not-absorbed": (
        "prfaas_plan/accounting/mixers/mla.py",
        "return 2 * self.spec.num_heads * (2 * self.spec.kv_lora_rank + self.spec.qk_rope_head_dim)",
        "return 2 * self.spec.num_heads * (self.spec.kv_lora_rank + self.spec.qk_rope_head_dim)",
    ),
    "mla-decode-reads-no-rope-key": (
        "prfaas_plan/accounting/mixers/mla.py",
        "batch * self.latent * self.kv_bytes * context_tokens)",
        "batch * self.spec.kv_lora_rank * self.kv_bytes * context_tokens)",
    ),
    "mla-latent-split-by-tp": (
        "prfaas_plan/accounting/mixers/mla.py",
        "    def kv(self) -> LayerKv:\n        return LayerKv(growing_bytes_per_token=self.latent * self.kv_bytes)",
        (
            "    kv_ways = 128\n\n    def kv(self) -> LayerKv:\n"
            "        return LayerKv(growing_bytes_per_token=self.latent * self.kv_bytes)"
        ),
    ),
    "published-override-keeps-first-part-only": (
        "prfaas_plan/published.py",
        "return dict(part.split(\"=\", 1) for part in parts)",
        "return dict(part.split(\"=\", 1) for part in parts[:1])",
    ),
    "engine-fp8-checkpoint-kv-ignored": (
        "prfaas_plan/api.py",
        "kv = None if spec is None else engine_profile(spec.name).defaults.kv_dtype_fp8_checkpoint",
        "kv = None",
    ),
    "grouped-fp4-fraction-ignored": (
        "prfaas_plan/profiles/hardware.py",
        'return getattr(self, self.field_in_use("grouped_matmul_fp4"))',
        "return self.matmul_fraction(dtype)",
    ),
    "experts-at-dense-matmul-rate": (
        "prfaas_plan/timing/cost.py",
        "grouped_matmul_rate(hw, MATMUL_DTYPE[model.dtypes.experts or model.dtypes.weights]),",
        "matmul_rate(hw, MATMUL_DTYPE[model.dtypes.experts or model.dtypes.weights]),",
    ),
    "trtllm-untuned-quant-tuned": (
        "prfaas_plan/published.py",
        "return not (d.experts == Dtype.fp4 and d.weights in (Dtype.bf16, Dtype.fp16))",
        "return True",
    ),
    "trtllm-untuned-budget-not-raised": (
        "prfaas_plan/published.py",
        "return defaults.max_batch, max(defaults.prefill_tokens_per_pass, input_tokens + defaults.max_batch)",
        "return defaults.max_batch, defaults.prefill_tokens_per_pass",
    ),
    "trtllm-nvfp4-sized-at-weights-dtype": (
        "prfaas_plan/published.py",
        "weight_dtype = Dtype.fp4 if model.dtypes.experts == Dtype.fp4 else model.dtypes.weights",
        "weight_dtype = model.dtypes.weights",
    ),
    "calibration-drops-grouped-fp4-ratio": (
        "prfaas_plan/timing/calibrate.py",
        '"matmul_fp4": "matmul", "grouped_matmul_fp4": "matmul",',
        '"matmul_fp4": "matmul",',
    ),
    "serving-mixed-step-drops-chunk-floor": (
        'prfaas_plan/timing/serving.py',
        '    return replace(\n        a,\n        **{f: getattr(a, f) + scale * getattr(b, f) for f in ADDITIVE},\n        sequential_steps=np.maximum(a.sequential_steps, b.sequential_steps),\n    )',
        '    return replace(a, **{f: getattr(a, f) + scale * getattr(b, f) for f in ADDITIVE}, sequential_steps=a.sequential_steps)',
    ),
    "kernel-multiplier-past-peak": (
        "prfaas_plan/timing/cost.py",
        "attn_flops = min(attn_rate * attn, attn_peak)",
        "attn_flops = attn_rate * attn",
    ),
    "shared-error-ignores-model": (
        "prfaas_plan/planner/uncertainty.py",
        "return (inputs.model.name, _workload_digest(inputs.workload)) + tuple(",
        "return () + tuple(",
    ),
    "load-beyond-memory-ignored": (
        'prfaas_plan/timing/estimate.py',
        '        max(load_concurrency or 0, dec.batch_size),',
        '        dec.batch_size,',
    ),
    "static-batch-on-lone-layout": (
        "prfaas_plan/timing/estimate.py",
        "    burst = mixed.batch(input_tokens, dec.batch_size)",
        "    burst = lone.batch(input_tokens, dec.batch_size)",
    ),
    'decode-pool-day-best-window': (
        'prfaas_plan/planner/schedule.py',
        'return min(lam / w.rate_rps for (lam, _), w in zip(best, windows)), best',
        'return min(lam / windows[0].rate_rps for (lam, _), w in zip(best, windows)), best',
    ),
    'decode-pool-day-programme-first-window-only': (
        'prfaas_plan/planner/schedule.py',
        '0, k, w.hours, {"pd": w.rate_rps}, {("pd", "prfaas"): w.table}',
        '0, k, w.hours, {"pd": windows[0].rate_rps}, {("pd", "prfaas"): windows[0].table}',
    ),
    'robust-sites-case-rate-ignored': (
        'prfaas_plan/study/resolve/sites.py',
        'demand = case.rates.get(site.name, site.demand_rps)',
        'demand = site.demand_rps',
    ),
    'robust-sites-weights-ignored': (
        'prfaas_plan/planner/formulation.py',
        'return sum_of(goal.weights[c] * scale[c] for c in cases)',
        'return sum_of(scale[c] for c in cases[:1])',
    ),
    'robust-sites-worst-is-the-first-case': (
        'prfaas_plan/planner/formulation.py',
        '        prob += worst <= scale[c]',
        '        prob += worst <= scale[cases[0]]',
    ),
    'robust-sites-cases-not-at-their-best': (
        'prfaas_plan/planner/sites.py',
        '        if alone.scale >= sol.scales[c] * (1 - 1e-9):',
        '        if False:',
    ),
    'sites-day-any-optimum-split': (
        'prfaas_plan/planner/formulation.py',
        '    settled = solve(study, cells, candidates, goal, hold=value)',
        '    settled = None',
    ),
    'sim-decode-at-batch-one': (
        'prfaas_plan/simulate/engine.py',
        '            tpot = step_s[k][(b if b < batch[k] else batch[k]) - 1]',
        '            tpot = step_s[k][0]',
    ),
    "trace-joint-output-by-class-overall": (
        "prfaas_plan/workload/joint.py",
        "output_by_input = np.bincount(inverse, weights=out, minlength=support.size) / counts",
        "output_by_input = np.full(support.size, out.mean())",
    ),
    "trace-joint-context-unweighted": (
        "prfaas_plan/workload/joint.py",
        "context = float(np.sum(out * (full + out / 2.0)) / np.sum(out))",
        "context = float(np.mean(full + out / 2.0))",
    ),
    "trace-unsorted-kept": (
        "prfaas_plan/workload/traces/record.py",
        'trace = trace.take(np.argsort(trace.arrival_s, kind="stable"))',
        "trace = trace",
    ),
    "trace-ragged-take-from-zero": (
        "prfaas_plan/workload/traces/record.py",
        "inner = np.arange(int(new_offsets[-1]), dtype=np.int64) - np.repeat(new_offsets[:-1], lengths)",
        "inner = np.zeros(int(new_offsets[-1]), dtype=np.int64)",
    ),
    "replay-speedup-ignored": (
        "prfaas_plan/simulate/replay.py",
        "(part.arrival_s - part.arrival_s[0]) / speedup,",
        "(part.arrival_s - part.arrival_s[0]),",
    ),
    "trace-mooncake-cut-line-trusted": (
        "prfaas_plan/workload/traces/mooncake.py",
        "if len(_WHOLE.findall(block)) != lines:",
        "if False:",
    ),
    "trace-timestamp-layout-unchecked": (
        "prfaas_plan/workload/traces/timestamps.py",
        "    if not ok.all():\n",
        "    if False:\n",
    ),
    "trace-timestamp-offset-unbounded": (
        "prfaas_plan/workload/traces/timestamps.py",
        "bad = (minutes >= 60) | (hours * 60 + minutes > MAX_OFFSET_MIN)",
        "bad = minutes >= 60",
    ),
    "trace-timestamp-offset-sign-ignored": (
        "prfaas_plan/workload/traces/timestamps.py",
        'offset_ns = np.where(at(0) == ord("-"), -1, 1)',
        "offset_ns = np.where(at(0) == 0, -1, 1)",
    ),
    "trace-rate-one-instant-as-1s": (
        "prfaas_plan/workload/traces/record.py",
        'return arrival_s.size / span if span > 0 else float("inf")',
        "return arrival_s.size / span if span > 0 else float(arrival_s.size)",
    ),
    "replay-one-instant-window-accepted": (
        "prfaas_plan/simulate/replay.py",
        "if len(part) < 2 or part.span_s == 0:",
        "if False:",
    ),
    "transport-mathis-no-constant": (
        "prfaas_plan/timing/transport.py",
        "return mss_bytes / rtt_s * MATHIS_C / math.sqrt(loss_rate)",
        "return mss_bytes / rtt_s / math.sqrt(loss_rate)",
    ),
    "transport-mathis-loss-linear": (
        "prfaas_plan/timing/transport.py",
        "return mss_bytes / rtt_s * MATHIS_C / math.sqrt(loss_rate)",
        "return mss_bytes / rtt_s * MATHIS_C / loss_rate",
    ),
    "transport-window-not-a-bound": (
        "prfaas_plan/timing/transport.py",
        "return min(window, mathis_bytes_per_s(self.mss_bytes, rtt_s, self.loss_rate))",
        "return mathis_bytes_per_s(self.mss_bytes, rtt_s, self.loss_rate)",
    ),
    "transport-bbr-loss-limited": (
        "prfaas_plan/timing/transport.py",
        "return (1.0 - self.loss_rate) * window",
        "return min(window, mathis_bytes_per_s(self.mss_bytes, rtt_s, self.loss_rate))",
    ),
    "transport-one-connection-per-transfer": (
        "prfaas_plan/timing/transport.py",
        "return self.connections_per_transfer * self.connection_bytes_per_s(rtt_s)",
        "return self.connection_bytes_per_s(rtt_s)",
    ),
    "transport-connections-floor": (
        "prfaas_plan/timing/transport.py",
        "return int(math.ceil(share_bytes_per_s / connection_bytes_per_s * (1 - _CEIL_REL)))",
        "return int(share_bytes_per_s / connection_bytes_per_s)",
    ),
    "transport-one-transfer-in-flight": (
        "prfaas_plan/study/model.py",
        "return np.minimum(usable, np.asarray(transfers, dtype=float) * self.transfer_bytes_per_s)",
        "return np.minimum(usable, self.transfer_bytes_per_s)",
    ),
    "transport-exact-no-stream-count": (
        "prfaas_plan/planner/exact.py",
        "n_f = np.maximum(n_f, _ceil(rate_rps * table.link_work_bytes / inputs.link.transfer_bytes_per_s))",
        "pass",
    ),
    "transport-milp-no-stream-row": (
        "prfaas_plan/planner/formulation.py",
        "self.prob += sum_of(self.streams[f.name]) <= self.n_f[f.name]",
        "pass",
    ),
    "transport-simulator-uncapped": (
        "prfaas_plan/simulate/engine.py",
        "self.links = [KvLink(link.schedule, link.transfer_bytes_per_s) for link in topology.links]",
        "self.links = [KvLink(link.schedule) for link in topology.links]",
    ),
    "transport-latency-uncapped": (
        "prfaas_plan/planner/latency.py",
        "sharing = shares, np.maximum(multipliers / bandwidth, 1 / link.transfer_bytes_per_s)",
        "sharing = shares, multipliers / bandwidth",
    ),
    "colocated-no-chunks-in-step": (
        "prfaas_plan/planner/colocated.py",
        "    tau = steps + b * m * w_p / out",
        "    tau = steps",
    ),
    "colocated-first-batch-within-tpot": (
        "prfaas_plan/planner/colocated.py",
        "    k = int(np.nonzero(ok)[0][-1]) if ok.any() else -1",
        "    k = int(np.nonzero(ok)[0][0]) if ok.any() else -1",
    ),
    "colocated-higher-tpot-limit": (
        "prfaas_plan/planner/colocated.py",
        "    limit_ms = min(limits) if limits else None",
        "    limit_ms = max(limits) if limits else None",
    ),
    "colocated-one-instance": (
        "prfaas_plan/planner/colocated.py",
        "    rate = instances * batch * m / (out * float(tau[k])) if batch else 0.0",
        "    rate = batch * m / (out * float(tau[k])) if batch else 0.0",
    ),
    "colocated-pd-p-instances-only": (
        "prfaas_plan/planner/colocated.py",
        "    found = colocated(inputs, local_table, decode, homogeneous.n_p + homogeneous.n_d)",
        "    found = colocated(inputs, local_table, decode, homogeneous.n_p)",
    ),
    "compare-ratio-vs-colocated-inverted": (
        "prfaas_plan/planner/compare.py",
        "colo < MIN_CAPACITY_RPS else self.lambda_max_rps / colo",
        "colo < MIN_CAPACITY_RPS else colo / self.lambda_max_rps",
    ),
    # issue 19: the prefix-cache model replayed over a trace
    "prefix-cache-hybrid-reuses-any-match": (
        "prfaas_plan/workload/prefix_cache.py",
        "            if hybrid and d * B < length and _where(tiers, 2 * node + 1) >= 0:  # a state short of L",
        "            if True:",
    ),
    "prefix-cache-hybrid-resumes-at-L": (
        "prfaas_plan/workload/prefix_cache.py",
        "            if hybrid and d * B < length and _where(tiers, 2 * node + 1) >= 0:  # a state short of L",
        "            if hybrid and _where(tiers, 2 * node + 1) >= 0:",
    ),
    "prefix-cache-rewritten-snapshot-counted": (
        "prfaas_plan/workload/prefix_cache.py",
        "                if d > deep and _where(tiers, 2 * node + 1) < 0:  # a new snapshot (one at L is rewritten)",
        "                if d > deep:",
    ),
    "prefix-cache-computes-no-token": (
        "prfaas_plan/workload/prefix_cache.py",
        "    cached = np.minimum(reusable * B, requests.input_tokens - 1)",
        "    cached = np.minimum(reusable * B, requests.input_tokens)",
    ),
    "prefix-cache-evicts-most-recent": (
        "prfaas_plan/workload/prefix_cache.py",
        "        k, b = hbm.entries.popitem(last=False)",
        "        k, b = hbm.entries.popitem(last=True)",
    ),
    "prefix-cache-head-evicted-first": (
        "prfaas_plan/workload/prefix_cache.py",
        "        for d in range(len(nodes), 0, -1):",
        "        for d in range(1, len(nodes) + 1):",
    ),
    "prefix-cache-snapshot-off-by-one": (
        "prfaas_plan/workload/prefix_cache.py",
        "at_k = self.snapshots != SnapshotPolicy.request_end and depth % self.every_blocks == 0",
        "at_k = self.snapshots != SnapshotPolicy.request_end and (depth + 1) % self.every_blocks == 0",
    ),
    "prefix-cache-no-dram-tier": (
        "prfaas_plan/workload/prefix_cache.py",
        "    tiers = (_Tier(config.hbm_bytes), _Tier(config.dram_bytes))",
        "    tiers = (_Tier(config.hbm_bytes), _Tier(0.0))",
    ),
    "prefix-cache-identity-by-id-alone": (
        "prfaas_plan/workload/prefix_cache.py",
        "            node = chain.setdefault((parent, b), len(chain))",
        "            node = chain.setdefault((0, b), len(chain))",
    ),
    "prefix-cache-swa-state-free": (
        "prfaas_plan/workload/prefix_cache.py",
        "        return self.state_fixed_bytes + sum(b * min(prefix_tokens, w) for w, b in self.windows)",
        "        return self.state_fixed_bytes",
    ),
    "prefix-cache-block-of-one-token": (
        "prfaas_plan/workload/prefix_cache.py",
        "        return CacheGeometry(block_tokens, kv.growing_bytes_per_token * block_tokens, kv.fixed_bytes, kv.windows)",
        "        return CacheGeometry(block_tokens, kv.growing_bytes_per_token, kv.fixed_bytes, kv.windows)",
    ),
    "trace-caches-output-ignores-the-trace": (
        "prfaas_plan/study/resolve/workload.py",
        '    given = "output" in spec.model_fields_set\n    output = build_distribution',
        '    given = True\n    output = build_distribution',
    ),
    "cache-memory-note-never": (
        "prfaas_plan/study/cache_memory.py",
        "        if cache is not None and cache.hbm_gib > total_gib:",
        "        if cache is not None and cache.hbm_gib > 2 * total_gib:",
    ),
    "block-trace-line-counts-blank-lines-out": (
        "prfaas_plan/workload/block_trace.py",
        "                line = start + block.count(b\"\\n\", 0, starts[i - seen])",
        "                line = start + i",
    ),
    "block-trace-resorted-file-named-by-line": (
        "prfaas_plan/workload/block_trace.py",
        "    in_order = line is not None and ms.size == len(trace) and not np.any(ms[1:] < ms[:-1])",
        "    in_order = line is not None",
    ),
    "trace-caches-as-a-product": (
        "prfaas_plan/workload/cluster_cache.py",
        "    if joint is not None:",
        "    if False:",
    ),
    "local-beats-plan-cost-reversed": (
        "prfaas_plan/planner/plan.py",
        "cost <= usd * (1 + 1e-9) and rival > lam * (1 + 1e-6)",
        "cost >= usd * (1 + 1e-3) and rival > lam * (1 + 1e-6)",
    ),
    "transport-egress-share-of-usable": (
        "prfaas_plan/views/plan.py",
        "    share = _pct(egress_gbps / carried_gbps)",
        "    share = _pct(egress_gbps / link.usable_gbps)",
    ),
    "replay-drawn-arrivals-accepted": (
        "prfaas_plan/api.py",
        "        if name in config and config[name] != defaults[name]:",
        "        if False:",
    ),
    "replay-caches-classes-not-inverted": (
        "prfaas_plan/workload/cluster_cache.py",
        "        rank[self.request_of] = np.arange(self.request_of.size)",
        "        rank[:] = self.request_of",
    ),
    "replay-caches-classes-by-rank": (
        "prfaas_plan/simulate/engine.py",
        "            at = routed.classes_of(replay.rows if replay.rows is not None else np.arange(n))",
        "            at = np.arange(n)",
    ),
    "replay-caches-window-from-first-request": (
        "prfaas_plan/simulate/replay.py",
        "        to_s,\n        rows,\n",
        "        to_s,\n        None,\n",
    ),
    "colocated-tpot-ignores-mtp": (
        "prfaas_plan/planner/colocated.py",
        "        return self.step_s / self.tokens_per_step * 1e3",
        "        return self.step_s * 1e3",
    ),
    "prefix-cache-gib-as-1e9": (
        "prfaas_plan/workload/prefix_cache.py",
        "return CacheConfig(hbm_gib * BYTES_PER_GIB, dram_gib * BYTES_PER_GIB, **kw)",
        "return CacheConfig(hbm_gib * 1e9, dram_gib * 1e9, **kw)",
    ),
    # session of 2026-12-03: the new-user trial's fixes
    "slo-cdf-exponent-sign": (
        "prfaas_plan/planner/latency.py",
        "np.exp((service_s[done] - x) / theta_s)",
        "np.exp((x - service_s[done]) / theta_s)",
    ),
    "slo-bisects-too-few-thresholds": (
        "prfaas_plan/planner/slo.py",
        "            if model is not None and m > 0 and not model.meets(m, slo, scv):",
        "            if model is not None and m > 0 and not model.meets(1.3 * m, slo, scv):",
    ),
    "site-workload-named-as-the-scenarios": (
        "prfaas_plan/study/resolve/sites.py",
        'where = "workload" if site.workload is None else f"pd_sites.{site.name}.workload"',
        'where = "workload"',
    ),
    "tpot-only-slo-goodput-at-lambda-max": (
        "prfaas_plan/planner/slo.py",
        "top = upper_rps * (1 - 1e-9) if bounds_queueing(slo) else model.inputs.latency.operating_load * upper_rps",
        "top = upper_rps * (1 - 1e-9)",
    ),
    "idle-slo-miss-blames-prefill": (
        "prfaas_plan/planner/slo.py",
        "if (limit := getattr(slo, field)) is not None and min(values) > limit",
        "if (limit := getattr(slo, field)) is not None and min(values) > 2 * limit",
    ),
    "price-counts-as-a-speed-figure": (
        "prfaas_plan/profiles/registry.py",
        '{"name", "description", "sources", "assumptions", "tdp_w", "price_usd_per_gpu_hour", "price_note", "efficiency_sources"}',
        '{"name", "description", "sources", "assumptions", "tdp_w", "price_note", "efficiency_sources"}',
    ),
    "renamed-copy-loses-its-measured-points": (
        "prfaas_plan/timing/prefill.py",
        "names = [hardware.name, *(m.hardware for m in model.measured if m.gpus == gpus and m.hardware != hardware.name)]",
        "names = [hardware.name]",
    ),
    "measurements-kept-for-another-model": (
        "prfaas_plan/study/resolve/single_site.py",
        "    measured = same_model(taken_on, scenario.model, base)",
        "    measured = True",
    ),
    "what-if-of-the-measured-model-drops-them": (
        "prfaas_plan/study/resolve/single_site.py",
        "        measured = same_model(self.measured_on, ref, base)",
        "        measured = False",
    ),
    "sites-calibration-kept-for-another-model": (
        "prfaas_plan/study/resolve/sites.py",
        "pool = _fitted(Role.pd, site, model, refs[where], need, source, base, where, measured)",
        "pool = _fitted(Role.pd, site, model, refs[where], need, source, base, where)",
    ),
    "schedule-drops-the-scenarios-notes": (
        "prfaas_plan/planner/schedule.py",
        "    day = replace(day, notes=inputs.notes + day.notes)",
        "    day = replace(day, notes=day.notes)",
    ),
    "robust-drops-the-scenarios-notes": (
        "prfaas_plan/planner/robust.py",
        "    notes = tuple(dict.fromkeys(n for case in cases for n in case.inputs.notes))",
        "    notes = ()",
    ),
    "far-calibration-never-noted": (
        "prfaas_plan/study/resolve/pools.py",
        "        notes = [*notes, *far_fit_notes(where, written or spec.hardware, calibration.fitted, calibration.before)]\n",
        "",
    ),
    "measured-rate-not-held-to-tpot": (
        "prfaas_plan/study/model.py",
        "    if tpot_ms is None or k * float(steps[-1]) * 1e3 <= tpot_ms * (1 + 1e-9):",
        "    if True:",
    ),
    "held-rate-at-the-wrong-batch": (
        "prfaas_plan/study/model.py",
        "    batch = int(within[-1]) + 1\n",
        "    batch = int(within[-1])\n",
    ),
    "decode-model-ignores-the-held-batch": (
        "prfaas_plan/study/model.py",
        "        cap = decode_capacity(inputs.model, pool, context, max_batch=dec.batch, source=CurveSource.roofline)",
        "        cap = decode_capacity(inputs.model, pool, context, max_batch=dec.max_batch, source=CurveSource.roofline)",
    ),
    "fast-measured-rate-never-noted": (
        "prfaas_plan/study/resolve/workload.py",
        "    if k < 1 / FAR_FIT_FACTOR:",
        "    if k < 0.01 / FAR_FIT_FACTOR:",
    ),
    "front-counts-a-one-ms-ttft-gain": (
        "prfaas_plan/planner/compare.py",
        "FRONT_REL_TOL = 0.01\n",
        "FRONT_REL_TOL = 1e-9\n",
    ),
    "peak-in-another-unit-accepted": (
        "prfaas_plan/profiles/hardware.py",
        "            if ratio > PEAK_STEP_MAX:",
        "            if ratio > 1e9 * PEAK_STEP_MAX:",
    ),
    "bandwidth-in-another-unit-accepted": (
        "prfaas_plan/profiles/hardware.py",
        "        if MACHINE_BALANCE.problem(balance) is not None:",
        "        if False:",
    ),
    "unserved-window-not-said": (
        "prfaas_plan/views/plan.py",
        "    over = [w for w in day.windows if w.utilisation > 1]",
        "    over = [w for w in day.windows if w.utilisation > 100]",
    ),
    "sweep-beyond-the-link-unmarked": (
        "prfaas_plan/planner/sweep.py",
        '"beyond_link": bool(float(g) > inputs.link.usable_gbps * (1 + 1e-12)),',
        '"beyond_link": bool(float(g) > 2 * inputs.link.usable_gbps),',
    ),
    "model-basis-rate-not-held": (
        "prfaas_plan/study/resolve/workload.py",
        "    if rate is not None:  # as given, or calibrating the roofline (basis model): held to the TPOT limit alike",
        "    if rate is not None and basis == Basis.as_given:",
    ),
    "measured-rate-ignores-mtp": (
        "prfaas_plan/study/model.py",
        "context_tokens, cap.layout) / instance.engine.mtp_tokens_per_step",
        "context_tokens, cap.layout)",
    ),
    "robust-case-keeps-a-dropped-rate": (
        "prfaas_plan/study/resolve/single_site.py",
        "    measured = same_model(scenario.measurements_model or scenario.model, inputs.model.name, base)",
        "    measured = True",
    ),
    "copy-of-a-chip-is-another-chip-for-its-measurements": (
        "prfaas_plan/profiles/registry.py",
        '    return shipped_twin(hardware, (hardware.name, *shipped_names("hardware_profiles"))) or name',
        "    return name",
    ),
    "front-drops-for-a-dropped-option": (
        "prfaas_plan/planner/compare.py",
        "        dropped = {i for i in front if beaten[i] & unbeaten}",
        "        dropped = {i for i in front if beaten[i]}",
    ),
    "measurements-model-unchecked": (
        "prfaas_plan/study/resolve/pools.py",
        '        resolve_model(_ref(ref, base, source, "measurements_model"))\n',
        "        pass\n",
    ),
    "relaxation-at-the-time-limit-planned": (
        "prfaas_plan/planner/formulation.py",
        "            whole = prob.sol_status in (pulp.LpSolutionOptimal, pulp.LpSolutionIntegerFeasible) and integral(prob)",
        "            whole = True",
    ),
    "slo-that-never-binds-unsaid": (
        "prfaas_plan/planner/plan.py",
        "    if good is not None and bounds_queueing(inputs.slo) and good >= result.point.lambda_max * (1 - 1e-6):",
        "    if False:",
    ),
    "published-per-gpu-unit-compared-per-instance": (
        "prfaas_plan/published.py",
        '    if PER_GPU_UNIT.search(row["unit"]) and unit_gpus != 1:',
        "    if False:",
    ),
    "published-speed-ratio-of-a-time-uninverted": (
        "prfaas_plan/published.py",
        "        return 1.0 / self.ratio if self.kind in LATENCY_KINDS else self.ratio",
        "        return self.ratio",
    ),
    "calibrate-far-fit-unsaid": (
        "prfaas_plan/views/timing.py",
        "    for name, factor in far_fitted(result.fitted, result.before):",
        "    for name, factor in far_fitted({}, result.before):",
    ),
    "sites-robust-cases-unsaid": (
        "prfaas_plan/views/sites.py",
        "            if si.cases\n",
        "            if False\n",
    ),
    "tpot-floor-of-a-fallback-layout": (
        "prfaas_plan/timing/decode.py",
        "        fits = [layout] if instance.layout is not None else fitting_layouts(model, instance, reserve_tokens or context_tokens)",
        "        fits = [layout]",
    ),
    "robust-case-output-reset-to-default": (
        "prfaas_plan/study/resolve/workload.py",
        '    if "output" not in given:',
        "    if False:",
    ),
    "shipped-key-keeps-the-fit-date": (
        "prfaas_plan/timing/shipped.py",
        '{k: v for k, v in data["calibration"].items() if k != "date"}',
        'data["calibration"]',
    ),
    "sites-sim-egress-counts-the-drain": (
        "prfaas_plan/simulate/sites.py",
        'total_gbps = window_mean(series, "egress_gbps", start_s, float(arrival_s[-1])) or 0.0',
        'total_gbps = window_mean(series, "egress_gbps", 0.0, float(series["time_s"][-1])) or 0.0',
    ),
    "front-without-float-tolerance": (
        "prfaas_plan/planner/compare.py",
        "        same = [math.isclose(x, y, rel_tol=tol, abs_tol=1e-12) for x, y in zip(b, a)]",
        "        same = [x == y for x, y in zip(b, a)]",
    ),
    "sweep-ignores-unused-range-options": (
        "prfaas_plan/api.py",
        "        if name not in SWEEP_PARAMETERS[over] and value is not None:",
        "        if False:",
    ),
    "signed-zero-keeps-its-sign": (
        "prfaas_plan/report.py",
        '    return text[1:] if not text.strip("+-0.") else text',
        "    return text",
    ),
    "published-unit-gpus-above-the-instance": (
        "prfaas_plan/published.py",
        "    if unit_gpus > gpus:",
        "    if False:",
    ),
    "published-repeated-id-accepted": (
        "prfaas_plan/published.py",
        '        if row.get("id", "") in first_line:',
        "        if False:",
    ),
    # session of 2026-12-08: a busy link's spread of shares; the declared input bound
    "link-share-even": (
        "prfaas_plan/planner/latency.py",
        "    return probs[kept], means[kept]",
        "    return np.ones(1), np.full(1, 1 / (1 - rho))",
    ),
    "link-share-bin-mean-off-by-one": (
        "prfaas_plan/planner/latency.py",
        "        multiplier.append(a + 1 + min(max(within, 0.0), k - 1))",
        "        multiplier.append(a + min(max(within, 0.0), k - 1))",
    ),
    "link-share-tail-mean": (
        "prfaas_plan/planner/latency.py",
        "            multiplier.append(a + 1 + 1 / math.expm1(x))",
        "            multiplier.append(a + 1 / math.expm1(x))",
    ),
    "input-bound-from-the-support": (
        "prfaas_plan/study/resolve/workload.py",
        "    declared = None if spec is None else declared_max_tokens(spec)",
        "    declared = None",
    ),
    "context-note-without-the-output": (
        "prfaas_plan/study/resolve/workload.py",
        "    if longest_in + longest_out <= context:",
        "    if longest_in <= context:",
    ),
    "no-offload-threshold-at-the-top-bin": (
        "prfaas_plan/planner/throughput.py",
        "    top = max(float(support_tokens[-1]), float(inputs.model.max_context_tokens))",
        "    top = float(support_tokens[-1])",
    ),
    "price-terms-hide-defaults": (
        "prfaas_plan/study/prices.py",
        'return text if name in given else f"{text} (default)"',
        "return text",
    ),
    "rental-keeps-depreciation-terms": (
        "prfaas_plan/profiles/cost_spec.py",
        'lambda s: s.purchase_usd_per_gpu is None and bool(s.model_fields_set & {"depreciation_years", "cost_of_capital"}),',
        "lambda s: False,",
    ),
    "dynamic-chunks-unsmoothed": (
        "prfaas_plan/timing/prefill.py",
        "        size = max(int(base + smooth * (x - base)), floor)",
        "        size = max(int(x), floor)",
    ),
    "dynamic-chunks-no-floor": (
        "prfaas_plan/timing/prefill.py",
        "    floor = max(budget // DYNAMIC_CHUNK_FLOOR, 1)",
        "    floor = 1",
    ),
    "dynamic-chunks-target-with-constant": (
        "prfaas_plan/timing/prefill.py",
        "    a, b, _c = np.polyfit(lengths, np.asarray(pass_s(lengths), dtype=float), 2)",
        "    a, b, _c = np.polyfit(lengths, np.asarray(pass_s(lengths), dtype=float), 2); b += _c / base",
    ),
    "dynamic-chunks-on-one-stage": (
        "prfaas_plan/timing/prefill.py",
        "engine.chunked_prefill and layout.pp > 1:",
        "engine.chunked_prefill:",
    ),
    "last-chunk-without-its-prefix": (
        "prfaas_plan/timing/prefill.py",
        "    last = cost_of(l - first, first, index)",
        "    last = cost_of(l - first, 0.0 * first, index)",
    ),
    "published-dynamic-chunking-column-ignored": (
        "prfaas_plan/published.py",
        '        ("dynamic_chunking", "dynamic_chunking"),\n    ):',
        "    ):",
    ),
    "error-key-by-hardware-name": (
        "prfaas_plan/planner/uncertainty.py",
        "            hashlib.sha1(speed_figures(pool.instance.hardware).encode()).hexdigest(),",
        "            pool.hardware_name,",
    ),
    "efficiency-defaults-unreported": (
        "prfaas_plan/study/resolve/pools.py",
        "    defaults = hardware.efficiency_defaults() if looks_like_path(ref) else {}",
        "    defaults = {}",
    ),
    "failed-option-identity-as-written": (
        "prfaas_plan/study/resolve/single_site.py",
        '            "prfaas_hardware": self.pools[Role.prfaas].hardware.name,',
        '            "prfaas_hardware": self.pools[Role.prfaas].written,',
    ),
    "moved-pool-bills-site-power": (
        "prfaas_plan/study/resolve/pools.py",
        'spec.site.model_copy(update={"usd_per_kwh": None})',
        "spec.site",
    ),
    "compare-plans-repeats": (
        "prfaas_plan/study/resolve/options.py",
        "        dims.append([values[i] for i in first] or [None])",
        "        dims.append(values or [None])",
    ),
}


def stale() -> list[str]:
    """The mutants whose text does not occur exactly once in their file, or equals the replacement."""
    out = []
    for name, (path, old, new) in MUTANTS.items():
        file = REPO / path
        count = file.read_text().count(old) if file.is_file() else 0
        if count != 1 or old == new:
            why = (
                "no such file"
                if not file.is_file()
                else ("text equals its replacement" if old == new else f"text occurs {count} times")
            )
            out.append(f"{name} ({path}: {why})")
    return out


def run(name: str | None, tests: list[str]) -> bool:
    """True if some test fails with the mutant in place (caught); None runs the unmutated copy."""
    with tempfile.TemporaryDirectory(prefix=f"mutant-{name}-") as tmp:
        copy = Path(tmp) / "repo"
        shutil.copytree(REPO, copy, ignore=shutil.ignore_patterns(".git", "__pycache__", "*.egg-info", ".hypothesis"))
        if name is not None:
            path, old, new = MUTANTS[name]
            source = (copy / path).read_text()
            if source.count(old) != 1:
                raise SystemExit(f"{name}: the text to replace occurs {source.count(old)} times in {path}")
            (copy / path).write_text(source.replace(old, new))
        env = dict(os.environ, PYTHONPATH=str(copy), PRFAAS_PLAN_SKIP_VENV_TEST="1")
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-m", "not slow", "-p", "no:cacheprovider", *tests],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
        )
        return result.returncode != 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="mutants to run (default: all)")
    parser.add_argument("--check", action="store_true", help="only check that every mutant still applies")
    parser.add_argument(
        "--tests",
        action="append",
        default=[],
        metavar="PATH",
        help="run only these test files or node ids (repeatable; default: the fast tier)",
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in MUTANTS]
    if unknown:
        print(f"unknown mutant(s): {', '.join(unknown)}")
        return 2
    if args.check:
        bad = [s for s in stale() if not args.names or s.split(" ", 1)[0] in args.names]
        for line in bad:
            print(f"STALE    {line}")
        print(
            f"{len(bad)} of {len(args.names or MUTANTS)} mutants stale"
            if bad
            else f"all {len(args.names or MUTANTS)} mutants apply"
        )
        return 1 if bad else 0
    if run(None, args.tests):
        print("the tests fail without any mutant: fix that first")
        return 2
    escaped = []
    names = args.names or list(MUTANTS)
    for name in names:
        caught = run(name, args.tests)
        print(f"{'caught ' if caught else 'ESCAPED'}  {name}", flush=True)
        if not caught:
            escaped.append(name)
    print(f"{len(escaped)} of {len(names)} escaped" + (f": {', '.join(escaped)}" if escaped else ""))
    return 1 if escaped else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
