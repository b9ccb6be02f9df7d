"""Identity columns: what a CSV row is about, in the same names and order in every command.

A row of a scenario's report starts with ``IDENTITY_CSV`` (the scenario, the model, each pool's
hardware and chips per instance, the link's raw bandwidth in decimal Gbps; from
``PlanInputs.identity``); a row of one instance (``kv``, ``decode``, ``estimate``) with
``INSTANCE_IDENTITY`` (the model, the hardware, chips per instance, then the layout of each job).
Every other column names its unit in its key (``_s``, ``_tokens``, ``_gbps``, ``_usd_per_hour``).
"""

from __future__ import annotations

from ..report import Column

IDENTITY_CSV = (
    "scenario",
    "model",
    "prfaas_hardware",
    "prfaas_gpus_per_instance",
    "pd_hardware",
    "pd_gpus_per_instance",
    "pd_decode_hardware",
    "pd_decode_gpus_per_instance",
    "link_gbps",
)
INSTANCE_IDENTITY = ("model", "hardware", "gpus_per_instance")


def instance_identity(model: str, hardware: str, gpus: int, **layouts) -> dict:
    """The identity of one instance: model, hardware profile, chips per instance, and ``layouts``
    (``layout=...``, or ``prefill_layout=..., decode_layout=...``; a ``Layout`` or None, written as
    its label)."""
    return {
        "model": model,
        "hardware": hardware,
        "gpus_per_instance": gpus,
        **{k: None if v is None else getattr(v, "label", v) for k, v in layouts.items()},
    }


def identified(ident: dict, rows: list[dict]) -> list[dict]:
    """Each row with the identity ``ident`` first (a row's own value of an identity key wins)."""
    return [{**ident, **row} for row in rows]


def csv_columns(rows: list[dict]) -> list[Column]:
    """A CSV column per key of the rows, in the order first seen (identity first when the rows
    come from ``identified``)."""
    return [Column(k, k) for k in dict.fromkeys(k for row in rows for k in row)]
