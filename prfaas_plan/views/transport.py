"""The link's TCP transport in the plan's report: one connection's rate and what bounds it, one
transfer's rate, a transfer's share of the link with one transfer in flight per PrfaaS instance,
the connections it needs to reach that share, and whether the transport or the bandwidth bounds
what the link carries (``timing.transport``, ``study.model.Link``). Rates in decimal Gbps."""

from __future__ import annotations

from ..study.model import Link
from ..units import bytes_per_s_to_gbps

# the plan CSV's transport cells (only when the link has a transport model)
TRANSPORT_CSV = ("connection_gbps", "transfer_gbps", "share_gbps", "connections_to_fill_share", "link_limited_by")


def transport_json(link: Link, transfers: int) -> dict | None:
    """The transport figures with ``transfers`` in flight (the deployment's N_prfaas); None
    without a transport model. ``link_limited_by``: 'transport' when transfers x one transfer's
    rate is below the usable bandwidth (the link is full in name only), else 'bandwidth'."""
    t = link.transport
    if t is None:
        return None
    doc: dict = {
        "congestion_control": str(t.congestion_control),
        "loss_rate": t.loss_rate,
        "mss_bytes": t.mss_bytes,
        "window_bytes": t.window_bytes,
        "connections_per_transfer": t.connections_per_transfer,
        "connection_gbps": round(bytes_per_s_to_gbps(link.connection_bytes_per_s), 6),
        "connection_limited_by": "window" if t.window_binds(link.rtt_s) else "loss",
        "transfer_gbps": round(bytes_per_s_to_gbps(link.transfer_bytes_per_s), 6),
        "transfers_in_flight": transfers,
        "share_gbps": None,
        "connections_to_fill_share": None,
        "carried_gbps": None,
        "link_limited_by": None,
    }
    if transfers > 0:
        doc.update(
            share_gbps=round(bytes_per_s_to_gbps(link.share_bytes_per_s(transfers)), 6),
            connections_to_fill_share=link.connections_to_fill(transfers),
            carried_gbps=round(bytes_per_s_to_gbps(float(link.carried_bytes_per_s(transfers))), 6),
            link_limited_by="transport" if link.transport_binds(transfers) else "bandwidth",
        )
    return doc


def transport_cells(link: Link, transfers: int) -> dict:
    """The ``TRANSPORT_CSV`` cells of one deployment row (blank without PrfaaS instances)."""
    doc = transport_json(link, transfers) or {}
    return {key: doc.get(key) for key in TRANSPORT_CSV}


def transport_details(link: Link, transfers: int) -> list[tuple[str, str]]:
    """The report's 'transport' line (none without a transport model)."""
    doc = transport_json(link, transfers)
    if doc is None:
        return []
    text = (
        f"{doc['congestion_control']}, loss {doc['loss_rate']:g}, MSS {doc['mss_bytes']:,} B, window "
        f"{doc['window_bytes']:,} B, RTT {link.rtt_s * 1000:g} ms: one connection {doc['connection_gbps']:.3f} Gbps "
        f"({doc['connection_limited_by']}-bound); {doc['connections_per_transfer']} per transfer = "
        f"{doc['transfer_gbps']:.3f} Gbps"
    )
    if transfers > 0:
        binds = (
            "the transport, not the bandwidth, caps what the link carries"
            if doc["link_limited_by"] == "transport"
            else "the bandwidth, not the transport, caps it"
        )
        text += (
            f"; {transfers} transfers in flight (one per PrfaaS instance) carry at most {doc['carried_gbps']:.2f} Gbps "
            f"of the usable {link.usable_gbps:g} Gbps ({binds}); a transfer's share, {doc['share_gbps']:.2f} Gbps, "
            f"needs {doc['connections_to_fill_share']:,} connections"
        )
    return [("transport", text)]
