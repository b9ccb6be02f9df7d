"""TCP transport of the KV transfers over the PrfaaS -> PD link: what one connection carries,
what one transfer carries, and how many connections a transfer needs to reach its share.

A cross-datacenter transfer runs over TCP; the paper spreads each transfer over several
connections because one connection's rate is bounded twice (rates in bytes/s, RTT in s):

- by its window: ``window_bytes / RTT`` (a connection never has more than a window in flight;
  the default 4 MiB is Linux's default ``net.ipv4.tcp_wmem`` maximum, the lower of it and
  ``tcp_rmem``'s 6 MiB, Documentation/networking/ip-sysctl.rst);
- by loss, for loss-based congestion control (Reno, CUBIC) in congestion avoidance, the
  macroscopic model of Mathis, Semke, Mahdavi and Ott, "The macroscopic behavior of the TCP
  congestion avoidance algorithm", ACM CCR 27(3), 1997, eq. 3 with periodic loss:

      rate = (MSS / RTT) * C / sqrt(p),   C = sqrt(3/2)

  (it neglects timeouts, so it holds for p up to a few %: Padhye et al., SIGCOMM 1998);
- a BBR-like connection (BBRv1: Cardwell, Cheng, Gunn, Hassas Yeganeh, Jacobson, "BBR:
  Congestion-Based Congestion Control", ACM Queue 14(5), 2016) paces at its bandwidth estimate
  and does not back off on random loss: below 15% loss it delivers its path's rate x (1 - p)
  (the Linux tcp_bbr patch notes: "If the packet loss rate is below 15% then BBR is able to
  fully utilize the path (reaching link_bandwidth*(1 - loss_rate))"), so here
  ``rate = (1 - p) * window_bytes / RTT``, still window-bound. ``ranges.LOSS_RATE`` stops at 15%.

A transfer over k connections carries ``k x`` one connection's rate, and at most its share of
the link. The planner's rule (``study.model.Link.carried_bytes_per_s``): each PrfaaS instance
streams one transfer at a time (its KV, layer by layer while it prefills), so with N instances
at most N transfers are in flight; each one's share is B / N and the link carries at most
min(B, N k r) bytes/s. Connections needed to reach the share: ceil(B / (N r)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..choices import CongestionControl
from ..errors import PlanInputError

MATHIS_C = math.sqrt(1.5)  # Mathis et al. 1997, periodic loss with an ACK per segment
DEFAULT_MSS_BYTES = 1460  # a 1,500-byte Ethernet MTU less 20 bytes of IPv4 and 20 of TCP header (RFC 879, RFC 6691)
DEFAULT_WINDOW_BYTES = 4 * 2**20  # Linux's default tcp_wmem maximum (ip-sysctl.rst: 4 MiB)
BBR_LOSS_TOLERANCE = 0.15  # BBRv1 reaches link x (1 - loss) below it (Linux tcp_bbr patch, 2016)
_CEIL_REL = 1e-12  # a count within this of an integer is that integer (float noise)


@dataclass(frozen=True)
class Transport:
    """The TCP transport of a link's KV transfers: its congestion control, packet loss rate
    (a probability per packet), MSS and largest window (bytes) and connections per transfer."""

    congestion_control: CongestionControl
    loss_rate: float
    mss_bytes: int = DEFAULT_MSS_BYTES
    window_bytes: int = DEFAULT_WINDOW_BYTES
    connections_per_transfer: int = 1

    def __post_init__(self) -> None:
        if self.congestion_control == CongestionControl.bbr and self.loss_rate > BBR_LOSS_TOLERANCE:
            raise PlanInputError(
                f"{self.loss_rate:g} is above the {BBR_LOSS_TOLERANCE:g} loss a BBR-like connection tolerates",
                field="link.loss_rate",
            )

    def connection_bytes_per_s(self, rtt_s: float) -> float:
        """One connection's rate (bytes/s) at round-trip time ``rtt_s`` (> 0): the lower of its
        window bound and, for loss-based control, the Mathis bound; BBR-like: (1 - p) x window / RTT."""
        if rtt_s <= 0:
            raise PlanInputError("the transport model needs a round-trip time above 0", field="link.rtt_ms")
        window = window_bytes_per_s(self.window_bytes, rtt_s)
        if self.congestion_control == CongestionControl.bbr:
            return (1.0 - self.loss_rate) * window
        return min(window, mathis_bytes_per_s(self.mss_bytes, rtt_s, self.loss_rate))

    def window_binds(self, rtt_s: float) -> bool:
        """Whether the window, not loss, bounds one connection (always, for BBR-like control)."""
        if self.congestion_control == CongestionControl.bbr:
            return True
        return window_bytes_per_s(self.window_bytes, rtt_s) <= mathis_bytes_per_s(self.mss_bytes, rtt_s, self.loss_rate)

    def transfer_bytes_per_s(self, rtt_s: float) -> float:
        """One transfer's rate over its connections: connections x one connection's rate (bytes/s)."""
        return self.connections_per_transfer * self.connection_bytes_per_s(rtt_s)


def mathis_bytes_per_s(mss_bytes: float, rtt_s: float, loss_rate: float) -> float:
    """A loss-based connection's rate (bytes/s): (MSS / RTT) sqrt(3/2) / sqrt(p) (Mathis et al.
    1997); inf without loss."""
    if loss_rate <= 0:
        return math.inf
    return mss_bytes / rtt_s * MATHIS_C / math.sqrt(loss_rate)


def window_bytes_per_s(window_bytes: float, rtt_s: float) -> float:
    """A connection's window bound (bytes/s): one window per round trip."""
    return window_bytes / rtt_s


def connections_to_fill(share_bytes_per_s: float, connection_bytes_per_s: float) -> int:
    """The fewest connections whose rates add up to ``share_bytes_per_s``: ceil(share / rate)
    (0 for no share)."""
    if share_bytes_per_s <= 0:
        return 0
    return int(math.ceil(share_bytes_per_s / connection_bytes_per_s * (1 - _CEIL_REL)))
