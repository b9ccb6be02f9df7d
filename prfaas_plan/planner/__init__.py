"""The PrfaaS planner: scenario inputs -> threshold tables -> throughput model -> optimiser."""
