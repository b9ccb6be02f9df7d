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

import math
from dataclasses import dataclass

HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12  # 730
SECONDS_PER_HOUR = 3600.0
DEFAULT_USD_PER_KWH = 0.08  # assumption: about the 2024 US industrial average (EIA: 8.0 cents/kWh)


def capital_recovery_factor(rate_per_year: float, years: float) -> float:
    """CRF(r, n) = r (1 + r)^n / ((1 + r)^n - 1), per year; 1 / n at r = 0."""
    if rate_per_year <= 0:
        return 1.0 / years
    growth = math.pow(1.0 + rate_per_year, years)
    return rate_per_year * growth / (growth - 1.0)


@dataclass(frozen=True)
class ChipCost:
    """One chip of a pool: its capital (or rental) $/hour and its power."""

    capital_usd_per_hour: float | None  # None: no price is known
    basis: str  # "rental" or "purchase"
    tdp_w: float | None  # None: power is unknown (reported as such; counted as $0, see power_unpriced)
    usd_per_kwh: float  # 0: power is in the rental's price
    pue: float
    idle_power_fraction: float
    note: str = ""

    def facility_w(self, busy: float) -> float:
        """Facility watts of one chip busy ``busy`` of the time (0 without a TDP)."""
        if self.tdp_w is None:
            return 0.0
        busy = min(max(busy, 0.0), 1.0)
        return self.tdp_w * (self.idle_power_fraction + (1.0 - self.idle_power_fraction) * busy) * self.pue

    @property
    def power_unpriced(self) -> bool:
        """Power is billed (``usd_per_kwh`` > 0) but the hardware has no TDP: its $ is not known,
        and the 0 counted for it makes any $/hour with this chip a lower bound."""
        return self.tdp_w is None and self.usd_per_kwh > 0

    def power_usd_per_hour(self, busy: float) -> float:
        return self.facility_w(busy) / 1000.0 * self.usd_per_kwh

    @property
    def provisioned_usd_per_hour(self) -> float | None:
        """Capital + power at full load: what budgets and ``min_cost`` count."""
        if self.capital_usd_per_hour is None:
            return None
        return self.capital_usd_per_hour + self.power_usd_per_hour(1.0)


def chip_cost(hardware, cost_spec, site_spec) -> ChipCost:
    """The resolved cost of one chip of ``hardware`` (a profile) under a pool's ``cost`` and ``site``."""
    if cost_spec.purchase_usd_per_gpu is not None:
        capital = (
            cost_spec.purchase_usd_per_gpu
            * capital_recovery_factor(cost_spec.cost_of_capital, cost_spec.depreciation_years)
            / HOURS_PER_YEAR
        )
        kwh = DEFAULT_USD_PER_KWH if site_spec.usd_per_kwh is None else site_spec.usd_per_kwh
        basis = "purchase"
    else:
        capital = cost_spec.usd_per_gpu_hour if cost_spec.usd_per_gpu_hour is not None else hardware.price_usd_per_gpu_hour
        kwh = site_spec.usd_per_kwh or 0.0
        basis = "rental"
    return ChipCost(capital, basis, hardware.tdp_w, kwh, site_spec.pue, site_spec.idle_power_fraction, cost_spec.note)


@dataclass(frozen=True)
class LinkCost:
    usd_per_gbps_month: float = 0.0
    usd_per_gb_egress: float = 0.0

    def fixed_usd_per_hour(self, bandwidth_gbps: float) -> float:
        """The committed price of ``bandwidth_gbps`` raw, per hour."""
        return self.usd_per_gbps_month * bandwidth_gbps / HOURS_PER_MONTH

    def egress_usd_per_hour(self, egress_bytes_per_s: float) -> float:
        return self.usd_per_gb_egress * egress_bytes_per_s * SECONDS_PER_HOUR / 1e9


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
        return sum(p.capital_usd_per_hour for p in self.pools if p.instances) if self.priced else None

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
