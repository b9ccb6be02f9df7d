"""One home per block kind: the registry of attention (mixer) and FFN physics.

Each kind is one class in ``accounting/mixers/`` or ``accounting/ffns/``, registered under
its schema discriminator (``type: gqa``, ``type: moe``) with ``@mixer_kind`` or
``@ffn_kind``. A class wraps one block of a model profile with the model's dtypes and
answers everything the rest of the package asks of a block:

- mixers: KV bytes per request (``kv``), matrix parameters (``params``), attention-core
  FLOPs of a prefill (``prefill_flops``) and FLOPs and KV/state bytes of a decode step
  (``decode_step``);
- FFNs: parameters (``params``), FLOPs (``flops``) and weight bytes touched (``weight_bytes``)
  for a number of tokens.

Adding a kind is one file and one registry entry; nothing else dispatches on the kind.
A layer without a mixer or an FFN (``none`` in the layer stack) gets the null kinds, which
contribute nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import numpy as np

from ..profiles.model import Dtypes
from ..units import dtype_bytes


@dataclass(frozen=True)
class LayerKv:
    """KV footprint of one layer, bytes: growing per token, window-bounded per token, fixed."""

    growing_bytes_per_token: float = 0.0
    window_bytes_per_token: float = 0.0
    window_tokens: int = 0
    fixed_bytes: float = 0.0

    def at(self, length_tokens):
        """S_kv of this layer for ``length_tokens`` (scalar or array)."""
        return (
            self.growing_bytes_per_token * length_tokens
            + self.window_bytes_per_token * np.minimum(length_tokens, self.window_tokens)
            + self.fixed_bytes
        )


def causal_keys(length, window=None) -> np.ndarray:
    """Sum over query positions i = 1..l of the keys attended, min(i, window)."""
    l = np.asarray(length, dtype=float)
    full = l * (l + 1) / 2
    if window is None:
        return full
    w = float(window)
    return np.where(l <= w, full, w * (w + 1) / 2 + (l - w) * w)


Gemms = tuple[tuple[int, int], ...]  # (parameters, reduction depth K) of each matrix


@dataclass(frozen=True)
class MixerKind:
    """Physics of one attention block (``spec``) of a model with ``dtypes``. The base class
    is the null mixer (a layer without attention)."""

    tag: ClassVar[str] = "none"  # the schema discriminator the kind is registered under
    spec: Any
    dtypes: Dtypes
    kernels: ClassVar[int] = 0  # GPU kernels one pass through this block launches (see accounting.work)

    @property
    def label(self) -> str:
        """Short name in reports: the schema's type (the linear kind for linear attention)."""
        return "none" if self.spec is None else str(self.spec.type)

    @property
    def kv_bytes(self) -> float:
        """Bytes per element of the cached KV."""
        return dtype_bytes(self.dtypes.kv)

    def kv(self) -> LayerKv:
        return LayerKv()

    @property
    def kv_ways(self) -> int:
        """Ways tensor parallelism can split this layer's KV or state (heads it has); 1: every chip
        of a tensor-parallel group holds all of it (MLA's latent)."""
        return 1

    def params(self, hidden: int) -> int:
        """Matrix parameters (all active for every token)."""
        return 0

    def gemms(self, hidden: int) -> Gemms:
        """(parameters, reduction depth K) of each projection, for the shape term of
        ``timing.cost`` (default: all of ``params`` at K = hidden)."""
        return ((self.params(hidden), hidden),)

    def prefill_flops(self, lengths: np.ndarray) -> np.ndarray:
        """Attention-core FLOPs of prefilling one request of each length (causal)."""
        return np.zeros_like(lengths, dtype=float)

    def prefill_sequential_steps(self, lengths: np.ndarray) -> np.ndarray:
        """Steps of the attention core's prefill kernel that must run one after another for one request
        of each length (a chunked recurrence: ceil(l / C)); none for attention that parallelises over keys."""
        return np.zeros_like(lengths, dtype=float)

    def decode_step(self, batch: np.ndarray, context_tokens: float) -> tuple[np.ndarray, np.ndarray]:
        """(attention-core FLOPs, KV/state bytes read or written) of one decode step of
        ``batch`` requests, each at ``context_tokens``."""
        zeros = np.zeros_like(batch, dtype=float)
        return zeros, zeros


@dataclass(frozen=True)
class FfnParams:
    """Parameters of one FFN block: always-active part, and routed experts."""

    dense: int  # dense FFN, or shared experts + router: used by every token
    per_expert: int = 0
    num_experts: int = 0
    top_k: int = 0

    @property
    def total(self) -> int:
        return self.dense + self.per_expert * self.num_experts

    @property
    def active(self) -> int:
        return self.dense + self.per_expert * self.top_k


@dataclass(frozen=True)
class FfnKind:
    """Physics of one FFN block (``spec``) of a model with ``dtypes``; the base class is the
    null FFN (a mixer-only layer)."""

    tag: ClassVar[str] = "none"
    spec: Any
    dtypes: Dtypes
    kernels: ClassVar[int] = 0  # GPU kernels one pass through this block launches (see accounting.work)

    def params(self, hidden: int) -> FfnParams:
        return FfnParams(0)

    def gemms(self, hidden: int) -> tuple[Gemms, Gemms]:
        """(parameters, reduction depth K) of each matrix of the always-active part and of one
        routed expert (see ``MixerKind.gemms``)."""
        return (), ()

    def flops(self, tokens: np.ndarray, hidden: int) -> tuple[np.ndarray, np.ndarray]:
        """(FLOPs of the always-active part, FLOPs of routed experts) for ``tokens`` tokens:
        2 x tokens x the parameters each token uses."""
        p = self.params(hidden)
        return 2 * tokens * p.dense, 2 * tokens * p.per_expert * p.top_k


MIXERS: dict[str, type[MixerKind]] = {}
FFNS: dict[str, type[FfnKind]] = {}
NoMixer, NoFfn = MixerKind, FfnKind


K = TypeVar("K", MixerKind, FfnKind)


def _registrar(table: dict[str, type[K]]) -> Callable[[str], Callable[[type[K]], type[K]]]:
    def kind(tag: str) -> Callable[[type[K]], type[K]]:
        """Class decorator: register a kind under its schema discriminator ``tag``."""

        def register(cls: type[K]) -> type[K]:
            table[tag] = cls
            cls.tag = tag
            return cls

        return register

    return kind


mixer_kind = _registrar(MIXERS)
ffn_kind = _registrar(FFNS)


def mixer_of(spec: Any, dtypes: Dtypes) -> MixerKind:
    """The physics of a mixer block (None: the null mixer). The kinds register themselves
    when ``prfaas_plan.accounting`` is imported."""
    return NoMixer(None, dtypes) if spec is None else MIXERS[spec.type](spec, dtypes)


def ffn_of(spec: Any, dtypes: Dtypes) -> FfnKind:
    """The physics of an FFN block (None: the null FFN)."""
    return NoFfn(None, dtypes) if spec is None else FFNS[spec.type](spec, dtypes)
