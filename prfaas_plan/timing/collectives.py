"""Collectives in an alpha-beta model: a fixed latency per collective plus bytes over bandwidth.

A group of chips placed together uses the scale-up fabric (NVLink, Infinity Fabric, the LPU's
chip-to-chip links) while it fits in one scale-up domain (``scale_up_domain_chips``), and the
scale-out NIC of each chip when it spans domains. Per chip, one direction:

    all-reduce over n chips:               2 s alpha + 2 (n - 1) / n x bytes / bandwidth
    all-gather or reduce-scatter:          s alpha + (n - 1) / n x bytes / bandwidth
    all-to-all (expert-parallel dispatch
    and combine), bytes split by where
    the destination chip is:               s alpha + max(intra / scale-up bw, inter / NIC bw)
    point-to-point (a pipeline hop):       alpha + bytes / bandwidth

s = ceil(log2 n) latency steps (a tree or recursive halving; the bandwidth term is a ring's);
bandwidth = datasheet x the profile's network (scale-up) or nic (scale-out) efficiency; alpha =
the profile's ``scale_up_latency_us`` or ``nic_latency_us`` per step. Arrays broadcast.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import PlanInputError
from ..profiles.hardware import HardwareProfile


@dataclass(frozen=True)
class Fabric:
    """One level of the interconnect: achievable bytes/s per chip and latency per collective (s)."""

    name: str
    bytes_per_s: float
    latency_s: float


def scale_up(hw: HardwareProfile) -> Fabric:
    return Fabric("scale-up", hw.scale_up_gb_per_s * 1e9 * hw.efficiency.network, hw.scale_up_latency_us * 1e-6)


def scale_out(hw: HardwareProfile) -> Fabric:
    """The scale-out NIC of each chip; a profile without ``nic_gbps`` cannot span scale-up domains."""
    if hw.nic_gbps is None:
        raise PlanInputError(
            f"hardware '{hw.name}' has no nic_gbps, so an instance cannot span more than one scale-up "
            f"domain of {hw.scale_up_domain_chips} chips: add nic_gbps to the profile, or use fewer "
            "chips per instance",
            field="nic_gbps",
        )
    return Fabric("NIC", hw.nic_gbps * 1e9 / 8 * hw.efficiency.nic, hw.nic_latency_us * 1e-6)


def steps(chips: int) -> int:
    """Latency steps of a collective over ``chips`` chips: ceil(log2 chips)."""
    return max(1, math.ceil(math.log2(chips))) if chips > 1 else 0


def fabric_for(hw: HardwareProfile, chips: int) -> Fabric:
    """The fabric a group of ``chips`` placed together communicates over."""
    return scale_up(hw) if chips <= hw.scale_up_domain_chips else scale_out(hw)


def all_reduce_s(hw: HardwareProfile, chips: int, payload_bytes) -> np.ndarray:
    """Ring all-reduce of ``payload_bytes`` (per chip) over ``chips`` chips; 0 for one chip."""
    payload = np.asarray(payload_bytes, dtype=float)
    if chips <= 1:
        return np.zeros_like(payload)
    f = fabric_for(hw, chips)
    return 2 * steps(chips) * f.latency_s + 2 * (chips - 1) / chips * payload / f.bytes_per_s


def all_gather_s(hw: HardwareProfile, chips: int, payload_bytes) -> np.ndarray:
    """All-gather (or reduce-scatter) of a ``payload_bytes`` tensor over ``chips`` chips."""
    payload = np.asarray(payload_bytes, dtype=float)
    if chips <= 1:
        return np.zeros_like(payload)
    f = fabric_for(hw, chips)
    return steps(chips) * f.latency_s + (chips - 1) / chips * payload / f.bytes_per_s


def all_to_all_s(
    hw: HardwareProfile, chips: int, bytes_per_chip, top_k: int = 1, dedupe: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Expert-parallel dispatch or combine over ``chips`` ranks: each chip sends ``bytes_per_chip``
    (``top_k`` copies of each token) spread evenly over the other ranks. With ``dedupe`` (DeepEP's
    normal kernels, used for prefill) a token crosses the NIC once per remote domain it goes to,
    D (1 - (1 - 1/D)^k) (D - 1) / D of them for D domains, and is forwarded inside the domain;
    without (the low-latency kernels of decode), once per remote expert. Returns (time, bytes
    over the scale-up fabric, bytes over the NIC), per chip."""
    sent = np.asarray(bytes_per_chip, dtype=float)
    if chips <= 1:
        zero = np.zeros_like(sent)
        return zero, zero, zero
    domain = min(chips, hw.scale_up_domain_chips)
    intra = sent * (domain - 1) / (chips - 1)
    inter = sent - intra
    domains = math.ceil(chips / domain)
    if dedupe and domains > 1 and top_k > 1:
        per_expert = top_k * (domains - 1) / domains
        distinct = domains * (1 - (1 - 1 / domains) ** top_k) * (domains - 1) / domains
        inter = inter * min(1.0, distinct / per_expert)
    up = scale_up(hw)
    if chips <= hw.scale_up_domain_chips:
        return steps(chips) * up.latency_s + intra / up.bytes_per_s, intra, inter
    out = scale_out(hw)
    return steps(chips) * out.latency_s + np.maximum(intra / up.bytes_per_s, inter / out.bytes_per_s), intra, inter


def hop_s(hw: HardwareProfile, crosses_domain: bool, payload_bytes) -> np.ndarray:
    """Point-to-point send of ``payload_bytes`` to the next pipeline stage."""
    f = scale_out(hw) if crosses_domain else scale_up(hw)
    return f.latency_s + np.asarray(payload_bytes, dtype=float) / f.bytes_per_s
