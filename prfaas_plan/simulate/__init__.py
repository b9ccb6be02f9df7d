"""Discrete-event simulation of a PrfaaS-PD deployment: queues, the shared KV link,
layer-wise pipelining, static or adaptive routing, role switches, decode batching.

    from prfaas_plan.simulate import SimConfig, simulate
    result = simulate(inputs, deployment, decode_model(inputs), SimConfig(rate_rps=2.6, requests=10_000))

The model is described in ``engine.py`` (requests, decode, and the one event loop),
``topology.py`` (what it runs: PD sites, PrfaaS sites, links), ``link.py`` (a link),
``policies.py`` (routing), ``roles.py`` (role switches), ``arrivals.py`` and ``results.py``
(what is measured); ``sites.py`` runs one window of a multi-site plan. Importing this
package does not load numpy; ``simulate`` and ``SimResult`` load it on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .bandwidth import read_bandwidth_trace
from .config import SimConfig

if TYPE_CHECKING:
    from .engine import simulate
    from .results import SimResult

__all__ = ["SimConfig", "SimResult", "read_bandwidth_trace", "simulate"]


_LAZY = {"simulate": ".engine", "SimResult": ".results"}  # name -> the module (with numpy) it comes from


def __getattr__(name: str) -> Any:
    """``simulate`` (``engine.simulate``) and ``SimResult``, imported (with numpy) on first use."""
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
