"""Views: library results -> presentation-neutral :class:`prfaas_plan.report.Report` objects,
one module per report family (profiles, one instance, plans, simulations). Nothing here
prints or writes files."""
