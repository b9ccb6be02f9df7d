"""A link between pools, resolved to SI units (bytes/s, seconds) and to its transport."""

from __future__ import annotations

from ...profiles.scenario import LinkSpec
from ...timing.transport import Transport
from ...units import gbps_to_bytes_per_s
from ..model import Link
from ..prices import LinkCost


def link_of(spec: LinkSpec) -> Link:
    """A link in SI units: decimal Gbps -> bytes/s, ms -> s; its TCP transport where the file
    gives ``congestion_control`` (``timing.transport``'s defaults for the fields it leaves out)."""
    return Link(
        gbps_to_bytes_per_s(spec.bandwidth_gbps),
        spec.usable_fraction,
        spec.rtt_ms / 1000.0,
        LinkCost(spec.usd_per_gbps_month, spec.usd_per_gb_egress),
        _transport(spec),
    )


def _transport(spec: LinkSpec) -> Transport | None:
    if spec.congestion_control is None:
        return None
    assert spec.loss_rate is not None  # LinkSpec refuses congestion_control without it
    given = {
        name: value
        for name in ("mss_bytes", "window_bytes", "connections_per_transfer")
        if (value := getattr(spec, name)) is not None
    }
    return Transport(spec.congestion_control, spec.loss_rate, **given)
