"""Total cost of ownership: what a pool's chips, their power and the link cost an hour.

Per chip (``ChipCost``):

- rental: ``usd_per_gpu_hour``;
- purchase: P x CRF(r, n) / 8,760 h, with the capital recovery factor
  CRF = r (1 + r)^n / ((1 + r)^n - 1) (1 / n when r = 0): the level yearly payment that
  repays the price P over n years at a cost of capital r;
- power: TDP x (idle + (1 - idle) x busy) x PUE watts at the facility meter, billed at the
  site's $/kWh. A rental's price includes power unless the site gives ``usd_per_kwh``; a
  purchase without one is billed at ``DEFAULT_USD_PER_KWH`` (an assumption, reported).

The link (``LinkCost``): a committed price per Gbps-month on the raw bandwidth
(730 hours a month = 8,760 / 12) and a metered price per decimal GB of KV shipped.

Budgets and the ``min_cost`` objective count *provisioned* cost: capital plus power at
full load (busy = 1) plus the committed link, so that a budget holds in the busiest hour.
Reports give the cost at the operating point (``tco``): power at the busy share each pool
runs at there, and egress at that rate. A pool whose hardware has no TDP draws an unknown
power (``PoolTco.power_kw`` None); the plan's total kW and J/token are then None too, and
``counted_power_kw`` (the pools with a TDP) is a lower bound, reported as such. Its $ of power
is counted as 0: where that power is billed (a purchase, or a site with ``usd_per_kwh``; a
rental without one includes power) the $/hour is a lower bound (``usd_per_hour_is_lower_bound``,
``ChipCost.power_unpriced``), and a budget or ``min_cost`` treats the pool as unpriced
(``optimizer.check_limits``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..study.prices import SECONDS_PER_HOUR


@dataclass(frozen=True)
class PoolTco:
    role: str
    hardware: str
    instances: int
    chips: int
    busy: float  # share of time the pool's instances work at the operating rate
    capital_usd_per_hour: float | None
    power_usd_per_hour: float
    power_kw: float | None  # at the facility meter (x PUE); None: instances whose hardware has no TDP
    basis: str
    power_usd_unknown: bool = False  # instances whose billed power has no TDP: power_usd_per_hour (0) is a lower bound


@dataclass(frozen=True)
class Tco:
    """The cost of a plan at one rate. $/Mtok: per output token, and blended over input
    (the full prompt, cached prefix included) and output tokens."""

    rate_rps: float
    pools: tuple[PoolTco, ...]
    link_fixed_usd_per_hour: float
    link_egress_usd_per_hour: float
    input_mean_tokens: float
    output_mean_tokens: float

    @property
    def priced(self) -> bool:
        return all(p.capital_usd_per_hour is not None for p in self.pools if p.instances)

    @property
    def capital_usd_per_hour(self) -> float | None:
        if not self.priced:
            return None
        return sum(c for p in self.pools if p.instances and (c := p.capital_usd_per_hour) is not None)

    @property
    def power_usd_per_hour(self) -> float:
        return sum(p.power_usd_per_hour for p in self.pools)

    @property
    def link_usd_per_hour(self) -> float:
        return self.link_fixed_usd_per_hour + self.link_egress_usd_per_hour

    @property
    def usd_per_hour(self) -> float | None:
        cap = self.capital_usd_per_hour
        return None if cap is None else cap + self.power_usd_per_hour + self.link_usd_per_hour

    @property
    def power_not_counted(self) -> tuple[str, ...]:
        """Hardware of the pools that run instances of unknown power (no TDP), each once."""
        return tuple(dict.fromkeys(p.hardware for p in self.pools if p.power_kw is None))

    @property
    def power_usd_not_counted(self) -> tuple[str, ...]:
        """Hardware of the pools whose power is billed but has no TDP, each once: its $ is counted
        as 0, so ``usd_per_hour`` (and $/Mtok) is a lower bound when this is not empty."""
        return tuple(dict.fromkeys(p.hardware for p in self.pools if p.power_usd_unknown))

    @property
    def usd_per_hour_is_lower_bound(self) -> bool:
        return bool(self.power_usd_not_counted)

    @property
    def counted_power_kw(self) -> float:
        """Facility kW of the pools whose power is known: the whole draw when ``power_not_counted``
        is empty, else a lower bound."""
        return sum(p.power_kw for p in self.pools if p.power_kw is not None)

    @property
    def power_kw(self) -> float | None:
        """Facility kW of the plan; None when a pool's power is unknown (see ``counted_power_kw``)."""
        return None if self.power_not_counted else self.counted_power_kw

    def _per_mtok(self, tokens_per_request: float) -> float | None:
        total = self.usd_per_hour
        tokens_per_hour = self.rate_rps * tokens_per_request * SECONDS_PER_HOUR
        return None if total is None or tokens_per_hour <= 0 else total / tokens_per_hour * 1e6

    @property
    def usd_per_mtok_output(self) -> float | None:
        return self._per_mtok(self.output_mean_tokens)

    @property
    def usd_per_mtok_blended(self) -> float | None:
        return self._per_mtok(self.input_mean_tokens + self.output_mean_tokens)

    def _joules(self, tokens_per_request: float) -> float | None:
        tokens_per_s, kw = self.rate_rps * tokens_per_request, self.power_kw
        return None if tokens_per_s <= 0 or kw is None or kw <= 0 else kw * 1000.0 / tokens_per_s

    @property
    def joules_per_output_token(self) -> float | None:
        return self._joules(self.output_mean_tokens)

    @property
    def joules_per_token(self) -> float | None:
        """Facility energy over input + output tokens."""
        return self._joules(self.input_mean_tokens + self.output_mean_tokens)


def pool_tco(pool, instances: int, busy: float) -> PoolTco:
    """One pool's share of the cost with ``instances`` running, each busy ``busy`` of the time."""
    chips = instances * pool.gpus_per_instance
    c = pool.cost
    capital = None if c.capital_usd_per_hour is None else c.capital_usd_per_hour * chips
    kw = None if chips and c.tdp_w is None else c.facility_w(busy) * chips / 1000.0
    return PoolTco(
        str(pool.role),
        pool.hardware_name,
        instances,
        chips,
        busy if instances else 0.0,
        capital,
        c.power_usd_per_hour(busy) * chips,
        kw,
        c.basis,
        bool(chips) and c.power_unpriced,
    )
