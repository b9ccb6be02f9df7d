"""What one chip and one link cost an hour (``planner.cost`` builds the total cost of
ownership on them).

Per chip (``ChipCost``): rental ``usd_per_gpu_hour``; or purchase P x CRF(r, n) / 8,760 h, with
the capital recovery factor CRF = r (1 + r)^n / ((1 + r)^n - 1) (1 / n when r = 0); power
TDP x (idle + (1 - idle) x busy) x PUE watts at the facility meter, billed at the site's $/kWh.
The link (``LinkCost``): a committed price per Gbps-month on the raw bandwidth (730 hours a
month = 8,760 / 12) and a metered price per decimal GB of KV shipped.
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
    terms: str = ""  # how the price was reached, every default named (``chip_cost``)

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
    """The resolved cost of one chip of ``hardware`` (a profile) under a pool's ``cost`` and ``site``,
    with ``terms``: how it was reached, each value the scenario left to a default marked so."""
    given = cost_spec.model_fields_set | {f"site.{name}" for name in site_spec.model_fields_set}

    def told(name: str, text: str) -> str:
        return text if name in given else f"{text} (default)"

    if cost_spec.purchase_usd_per_gpu is not None:
        rate, years = cost_spec.cost_of_capital, cost_spec.depreciation_years
        capital = cost_spec.purchase_usd_per_gpu * capital_recovery_factor(rate, years) / HOURS_PER_YEAR
        kwh = DEFAULT_USD_PER_KWH if site_spec.usd_per_kwh is None else site_spec.usd_per_kwh
        basis = "purchase"
        terms = (
            f"bought at ${cost_spec.purchase_usd_per_gpu:,.0f} per chip over {told('depreciation_years', f'{years:g} years')} "
            f"at {told('cost_of_capital', f'{rate:.1%} a year')}: ${capital:,.4f} per chip-hour; power billed at "
            + (
                f"${kwh:g}/kWh"
                if site_spec.usd_per_kwh is not None
                else f"${kwh:g}/kWh (default: about the 2024 US industrial average)"
            )
        )
    else:
        capital = cost_spec.usd_per_gpu_hour if cost_spec.usd_per_gpu_hour is not None else hardware.price_usd_per_gpu_hour
        kwh = site_spec.usd_per_kwh or 0.0
        basis = "rental"
        price = "no price" if capital is None else f"${capital:,.2f} per chip-hour"
        terms = f"rented at {price}" + (
            "" if cost_spec.usd_per_gpu_hour is not None else f" ({hardware.name}'s example price: edit the pool's cost)"
        )
        terms += ("; power billed at " + f"${kwh:g}/kWh") if kwh > 0 else "; power in the rental's price"
    if kwh > 0 and hardware.tdp_w is None:
        terms += f": {hardware.name} has no tdp_w, so its power is not costed (every $ figure a lower bound)"
    elif kwh > 0:
        terms += (
            f", {told('site.pue', f'PUE {site_spec.pue:g}')}, "
            f"{told('site.idle_power_fraction', f'idle draw {site_spec.idle_power_fraction:.0%} of TDP')}"
        )
    return ChipCost(capital, basis, hardware.tdp_w, kwh, site_spec.pue, site_spec.idle_power_fraction, cost_spec.note, terms)


@dataclass(frozen=True)
class LinkCost:
    usd_per_gbps_month: float = 0.0
    usd_per_gb_egress: float = 0.0

    def fixed_usd_per_hour(self, bandwidth_gbps: float) -> float:
        """The committed price of ``bandwidth_gbps`` raw, per hour."""
        return self.usd_per_gbps_month * bandwidth_gbps / HOURS_PER_MONTH

    def egress_usd_per_hour(self, egress_bytes_per_s: float) -> float:
        return self.usd_per_gb_egress * egress_bytes_per_s * SECONDS_PER_HOUR / 1e9
