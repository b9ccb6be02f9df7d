"""AMD Instinct scale-up fabric figures from their own sources: MI300X's all-reduce bandwidth
(Azure's RCCL bus bandwidth over the Infinity Fabric mesh) and per-step latency (vLLM's custom
all-reduce at its smallest message), MI355X's link rate and latency (vLLM's MI355X all-reduce
tuning), each read back from the source text the profile quotes; and a hand count of what they
change: one all-reduce, and a Llama-3.1-70B decode step's communication on 8 x MI300X.

Independent values: the bus-bandwidth definition of rccl-tests / nccl-tests (busbw = algbw x
2 (n - 1) / n, so an all-reduce of S bytes takes 2 (n - 1) / n x S / busbw), the kernel-table
times quoted in the profiles, and a count of Llama-3.1-70B's all-reduces (two per layer, 80
layers, hidden 8192, bf16 activations).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from prfaas_plan import api
from prfaas_plan.profiles.registry import resolve_hardware
from prfaas_plan.timing import collectives as coll
from prfaas_plan.timing.decode import step_cost

LLAMA_70B = "tests/data/hf-configs/meta-llama--Meta-Llama-3.1-70B.config.json"
RCCL_8G_BYTES = 8 * 2**30  # rccl-tests' "8G" message


def _number(pattern: str, text: str) -> float:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in the source text: {text}"
    return float(found.group(1))


def _assumption(hw, starts: str) -> str:
    """The profile's ``assumptions`` entry that states the figure ``starts`` names."""
    hits = [a for a in hw.assumptions if a.startswith(starts)]
    assert len(hits) == 1, f"{hw.name}: no single assumptions entry starting {starts!r}"
    return hits[0]


def test_mi300x_network_fraction_is_azures_rccl_bus_bandwidth_over_the_link_rate():
    """MI300X's network fraction is a measurement, not an assumption: the RCCL all-reduce bus
    bandwidth Azure measured at an 8G message (316.82 GB/s) over the 448 GB/s scale_up_gb_per_s."""
    hw = resolve_hardware("mi300x")
    source = hw.efficiency_sources["network"]
    assert not source.startswith(("assumption", "fallback")) and "RCCL" in source
    busbw = _number(r"([\d.]+) GB/s at 8G", source)
    assert busbw == pytest.approx(316.82)
    assert _number(r"of the ([\d.]+) GB/s scale_up_gb_per_s", source) == hw.scale_up_gb_per_s
    assert hw.efficiency.network == pytest.approx(busbw / hw.scale_up_gb_per_s, abs=1e-4)


def test_mi300x_all_reduce_of_8g_runs_at_the_measured_bus_bandwidth():
    """The model's 8-chip all-reduce of rccl-tests' 8G message takes 2 (n - 1) / n x S / busbw
    (the bus-bandwidth definition) plus its latency steps: it reproduces Azure's 316.82 GB/s."""
    hw = resolve_hardware("mi300x")
    busbw = _number(r"([\d.]+) GB/s at 8G", hw.efficiency_sources["network"]) * 1e9
    seconds = float(coll.all_reduce_s(hw, 8, RCCL_8G_BYTES))
    by_hand = 2 * 3 * hw.scale_up_latency_us * 1e-6 + 2 * 7 / 8 * RCCL_8G_BYTES / busbw
    assert seconds == pytest.approx(by_hand, rel=1e-4)
    assert 2 * 7 / 8 * RCCL_8G_BYTES / seconds == pytest.approx(busbw, rel=1e-3)  # the bus bandwidth it implies


def test_mi300x_latency_step_is_vllms_custom_all_reduce_floor_over_its_steps():
    """scale_up_latency_us is the custom all-reduce's 7.18 us at a 2.0KB message (TP=4 table of
    vLLM pull request 19744) over the 2 x ceil(log2 4) = 4 steps the model charges at TP4, so the
    model's 2 KB all-reduce over 4 MI300X takes that time (its bandwidth term is 0.03 us)."""
    hw = resolve_hardware("mi300x")
    text = _assumption(hw, "scale_up_latency_us")
    measured_us = _number(r"([\d.]+) us at a 2\.0KB message", text)
    assert measured_us == pytest.approx(7.18)
    assert hw.scale_up_latency_us == pytest.approx(measured_us / (2 * math.ceil(math.log2(4))), abs=1e-3)
    model_us = float(coll.all_reduce_s(hw, 4, 2048)) * 1e6
    assert model_us == pytest.approx(measured_us + 2 * 3 / 4 * 2048 / (448e9 * hw.efficiency.network) * 1e6, rel=1e-3)
    assert model_us == pytest.approx(measured_us, abs=0.05)


def test_mi355x_fabric_is_its_own_link_rate_and_latency():
    """MI355X no longer borrows MI300X's fabric: 7 peers x 76.8 GB/s = 537.6 GB/s, and 6.3 us
    for vLLM's TP8 all-reduce of a 24K message over its 2 x ceil(log2 8) = 6 steps."""
    hw = resolve_hardware("mi355x")
    rate = _assumption(hw, "scale_up_gb_per_s")
    per_link = _number(r"\(N-1\) x\s+([\d.]+) GB/s", rate)
    assert hw.scale_up_gb_per_s == pytest.approx(7 * per_link) == pytest.approx(_number(r"TP8=([\d.]+) GB/s", rate))
    latency = _assumption(hw, "scale_up_latency_us")
    assert hw.scale_up_latency_us == pytest.approx(_number(r"at ([\d.]+) us", latency) / 6, abs=1e-3)
    assert hw.scale_up_gb_per_s != resolve_hardware("mi300x").scale_up_gb_per_s


@pytest.mark.parametrize("batch", [1, 256])
def test_llama70b_decode_step_communication_on_8_mi300x_by_hand(batch):
    """A Llama-3.1-70B decode step on 8 x MI300X (TP8) communicates 2 all-reduces per layer over
    80 layers, each of batch x 8192 bf16 activations: 160 x (6 x 1.795 us + 2 x 7/8 x bytes /
    (448 GB/s x 0.7072)). The step's communication part is that count, at batch 1 (latency-bound)
    and at batch 256 (4 MiB messages, bandwidth-bound)."""
    model = api.precision_of(api.import_model(LLAMA_70B)[1], {"weights": "fp8", "kv": "fp8"})
    instance = api.instance_of(model, "mi300x", 8, {"tp": 8}, {"name": "vllm"})
    _, parts = step_cost(model, instance, instance.layout, np.array([float(batch)]), 2048.0)
    hw = instance.hardware
    payload = batch * 8192 * 2
    one = 2 * 3 * 1.795e-6 + 2 * 7 / 8 * payload / (448e9 * 0.7072)
    assert hw.scale_up_latency_us == 1.795 and hw.efficiency.network == 0.7072  # the figures counted here
    assert float(parts.communication_s[0]) == pytest.approx(160 * one, rel=1e-6)
