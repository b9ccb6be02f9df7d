"""What a pool's chips cost and where they run: the schema of a scenario's ``cost`` and
``site`` (``planner.cost`` turns them into $/hour).

- ``cost``: rented at ``usd_per_gpu_hour`` (default: the hardware profile's example price), or
  bought at ``purchase_usd_per_gpu`` and depreciated over ``depreciation_years`` at
  ``cost_of_capital`` a year (capital recovery factor). Prices are editable assumptions.
- ``site``: ``usd_per_kwh`` (omitted: power is in a rental's price; for a purchase it is then
  ``planner.cost.DEFAULT_USD_PER_KWH``), ``pue`` (facility power over IT power) and
  ``idle_power_fraction`` (an idle chip's draw as a share of TDP).
"""

from typing import Annotated

from ..ranges import (
    COST_OF_CAPITAL,
    DEPRECIATION_YEARS,
    IDLE_POWER_FRACTION,
    PRICE_USD_PER_GPU_HOUR,
    PUE,
    PURCHASE_USD_PER_GPU,
    USD_PER_KWH,
)
from ._base import StrictModel, Text, Within, refuse


class CostSpec(StrictModel):
    usd_per_gpu_hour: Annotated[float, Within(PRICE_USD_PER_GPU_HOUR)] | None = None  # rental; default: the profile's price
    purchase_usd_per_gpu: Annotated[float, Within(PURCHASE_USD_PER_GPU)] | None = None  # chip + its share of server and network
    depreciation_years: Annotated[float, Within(DEPRECIATION_YEARS)] = 4.0
    cost_of_capital: Annotated[float, Within(COST_OF_CAPITAL)] = 0.0  # a year (0.08: 8%)
    note: Text = ""

    _one_basis = refuse(
        lambda s: s.usd_per_gpu_hour is not None and s.purchase_usd_per_gpu is not None,
        "give usd_per_gpu_hour (rental) or purchase_usd_per_gpu, not both",
        (
            lambda s: s.purchase_usd_per_gpu is None and bool(s.model_fields_set & {"depreciation_years", "cost_of_capital"}),
            lambda s: (
                f"{' and '.join(sorted(s.model_fields_set & {'depreciation_years', 'cost_of_capital'}))} "
                "apply only to purchase_usd_per_gpu: a rental's price per chip-hour already holds them"
            ),
        ),
    )


class SiteSpec(StrictModel):
    usd_per_kwh: Annotated[float, Within(USD_PER_KWH)] | None = None
    pue: Annotated[float, Within(PUE)] = 1.3
    idle_power_fraction: Annotated[float, Within(IDLE_POWER_FRACTION)] = 0.3
    note: Text = ""
