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
(``require_prices``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..errors import PlanInputError
from ..study.model import PlanInputs
from ..study.prices import SECONDS_PER_HOUR
from .throughput import ThresholdTable


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


def tco_at(inputs: PlanInputs, table: ThresholdTable, idx: int, n_prfaas: int, n_p: int, n_d: int, rate_rps: float) -> Tco:
    """The cost of ownership of a deployment at ``rate_rps``: each pool busy for the share of its
    capacity the rate uses (PrfaaS: rate x p T_long / N_prfaas; PD-P: rate x (1 - p) T_short / N_p;
    PD-D: rate / (N_d r_d)), the committed link when PrfaaS is used, egress at the rate."""

    def busy(work: float, servers: float) -> float:
        return min(1.0, rate_rps * work / servers) if servers > 0 else 0.0

    parts = (
        pool_tco(inputs.prfaas, n_prfaas, busy(float(table.prfaas_work_s[idx]), n_prfaas)),
        replace(pool_tco(inputs.pd, n_p, busy(float(table.pd_work_s[idx]), n_p)), role="pd_prefill"),
        replace(pool_tco(inputs.decode_pool, n_d, busy(1.0 / inputs.decode_rps_per_instance, n_d)), role="pd_decode"),
    )
    egress = rate_rps * float(table.link_work_bytes[idx])
    return Tco(
        rate_rps,
        parts,
        inputs.link.fixed_usd_per_hour if n_prfaas else 0.0,
        inputs.link.cost.egress_usd_per_hour(egress),
        inputs.workload.full_input_dist.mean_tokens(),
        inputs.output_mean_tokens,
    )


# What counts of instances (N_prfaas, N_p, N_d) provision: what budgets and ``min_cost`` count.


def _by_pool(inputs: PlanInputs, n_f, n_p, n_d) -> tuple:
    """(pool, count) of the PrfaaS, PD and decoding pools (the last is the PD pool without a decode-only one)."""
    return ((inputs.prfaas, n_f), (inputs.pd, n_p), (inputs.decode_pool, n_d))


def provisioned_usd_per_hour(inputs: PlanInputs, n_f, n_p, n_d):
    """Provisioned $/hour of counts (ints or arrays): each pool's instances at their price
    (capital + full-load power; an unpriced pool counts 0, refused where a price is needed), plus
    the committed link, paid when PrfaaS instances use it."""
    instances = sum((pool.usd_per_hour_per_instance or 0.0) * n for pool, n in _by_pool(inputs, n_f, n_p, n_d))
    return instances + inputs.link.fixed_usd_per_hour * (n_f > 0)


def usd_per_hour(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> float | None:
    """``provisioned_usd_per_hour`` of the counts; None when a used pool has no price."""
    if unpriced_pools(inputs, n_prfaas, n_p, n_d):
        return None
    return float(provisioned_usd_per_hour(inputs, n_prfaas, n_p, n_d))


def chips_of(inputs: PlanInputs, hardware: str, n_f, n_p, n_d):
    """Chips of ``hardware`` that the counts (ints or arrays) use."""
    return sum(pool.gpus_per_instance * n for pool, n in _by_pool(inputs, n_f, n_p, n_d) if pool.hardware_name == hardware)


def gpus_by_hardware(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> dict[str, int]:
    """Chips of each hardware the counts use."""
    counts = _by_pool(inputs, n_prfaas, n_p, n_d)
    return {pool.hardware_name: chips_of(inputs, pool.hardware_name, n_prfaas, n_p, n_d) for pool, n in counts if n}


def _used_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int, missing) -> list[str]:
    """'hardware (role)' of each pool the counts use for which ``missing(pool)`` holds, each once."""
    used = _by_pool(inputs, n_prfaas, n_p, n_d)
    return list(dict.fromkeys(f"{pool.hardware_name} ({pool.role})" for pool, count in used if count and missing(pool)))


def unpriced_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> list[str]:
    """'hardware (role)' of each pool the counts use whose hardware has no price."""
    return _used_pools(inputs, n_prfaas, n_p, n_d, lambda pool: pool.usd_per_hour_per_instance is None)


def power_unpriced_pools(inputs: PlanInputs, n_prfaas: int, n_p: int, n_d: int) -> list[str]:
    """'hardware (role)' of each pool the counts use whose billed power has no TDP
    (``ChipCost.power_unpriced``): any $/hour of the counts is then a lower bound."""
    return _used_pools(inputs, n_prfaas, n_p, n_d, lambda pool: pool.cost.power_unpriced)


def require_prices(pools, owner: str) -> None:
    """Where a cost objective or a $/hour budget needs prices: each (field, pool, most instances)
    that may be bought has a capital or rental price, and a TDP where its power is billed; else a
    one-line error naming the hardware (``owner``: whose cost may give the price, "pool's" or
    "site's")."""
    for where, pool, most in pools:
        if most > 0 and pool.usd_per_hour_per_instance is None:
            missing = f"no price (price_usd_per_gpu_hour in its profile, or the {owner} cost)"
        elif most > 0 and pool.cost.power_unpriced:
            missing = f"no tdp_w, so its billed power (${pool.cost.usd_per_kwh:g}/kWh) has no price"
        else:
            continue
        raise PlanInputError(
            f"hardware '{pool.hardware_name}' has {missing}, needed for a cost objective or budget", field=f"{where}.hardware"
        )
