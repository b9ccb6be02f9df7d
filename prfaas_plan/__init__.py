"""prfaas-plan: an analytical capacity planner for Prefill-as-a-Service deployments.

Data flow: profiles (model, hardware) -> per-layer KV and FLOP accounting
(``accounting``) -> roofline timing of one instance (``timing``) -> reports -> CLI.
The CLI (``prfaas_plan.cli``) is a thin layer over this library; a notebook can use
``prfaas_plan.api`` directly.
"""

__version__ = "0.1.0"
