"""Brute-force oracles (issue 18: today's brute-force searches stay as test oracles): the one-site
plan (``one_site.brute_force``), the robust plan and the day schedule: every count
combination, every split and every threshold (or every cyclic sequence of splits) evaluated
with the throughput model by plain loops. The package's searches (``planner.robust``,
``planner.schedule``) and the one programme (``planner.formulation``) are checked against
them on small cases; tests import them as ``from oracles import ...`` (``tests/`` is on the
path, as for ``conftest``)."""

from .day import best_schedule, brute_force_day, day_grid, day_scale, formulation_day
from .robust import case_lambda, formulation_robust, robust_brute_force

__all__ = [
    "best_schedule",
    "brute_force_day",
    "case_lambda",
    "day_grid",
    "day_scale",
    "formulation_day",
    "formulation_robust",
    "robust_brute_force",
]
