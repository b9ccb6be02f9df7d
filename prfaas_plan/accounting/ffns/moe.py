"""Mixture of experts: a router (hidden x experts), shared experts used by every token, and
routed experts of which each token uses top_k.

Parameters per expert: (3 if gated else 2) x hidden x expert_intermediate_size.
FLOPs for n tokens: 2 n (router + shared) + 2 n top_k per_expert (routed, at the experts' dtype).
Weights read in one pass over n tokens: router and shared experts once, and the expected
number of distinct routed experts the n tokens touch, E (1 - (1 - k/E)^n) (uniform routing).
"""

from __future__ import annotations

from typing import ClassVar

import numpy as np

from ...choices import FfnType
from ..kinds import FfnKind, FfnParams, Gemms, ffn_kind


def expected_distinct_experts(num_experts: int, top_k: int, routed_tokens):
    """Expected number of distinct experts touched when ``routed_tokens`` tokens each pick
    ``top_k`` of ``num_experts`` uniformly: E * (1 - (1 - k/E)^n)."""
    n = np.asarray(routed_tokens, dtype=float)
    return num_experts * (1.0 - (1.0 - top_k / num_experts) ** n)


@ffn_kind(FfnType.moe)
class Moe(FfnKind):
    # norm, router, top-k, shared expert (3), permutation, grouped gate-up, activation, grouped down, un-permutation
    kernels: ClassVar[int] = 10

    def params(self, hidden: int) -> FfnParams:
        s = self.spec
        mats = 3 if s.gated else 2
        shared = s.shared_experts * mats * hidden * (s.shared_intermediate_size or s.expert_intermediate_size)
        router = hidden * s.num_experts
        return FfnParams(shared + router, mats * hidden * s.expert_intermediate_size, s.num_experts, s.top_k)

    def gemms(self, hidden: int) -> tuple[Gemms, Gemms]:
        s = self.spec
        up = 2 if s.gated else 1
        i_shared, i_expert = s.shared_intermediate_size or s.expert_intermediate_size, s.expert_intermediate_size
        shared = (
            (
                (s.shared_experts * up * hidden * i_shared, hidden),
                (s.shared_experts * i_shared * hidden, i_shared),
                (hidden * s.num_experts, hidden),
            )
            if s.shared_experts
            else ((hidden * s.num_experts, hidden),)
        )
        return shared, ((up * hidden * i_expert, hidden), (i_expert * hidden, i_expert))
