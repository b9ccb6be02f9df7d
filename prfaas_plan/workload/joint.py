"""What a request trace gives the planner jointly: per request its routing length, full
input and output, so that the output of each length class and the decode context come from
the requests themselves rather than from independent marginals.

For requests k with full input x_k, cached prefix c_k (0 where the format has none) and
output y_k:

- routing (uncached) length r_k = max(1, x_k - c_k), full input x_k, output max(1, y_k)
  (a request yields at least its first token; BurstGPT's failed requests have y = 0);
- the mean output of the requests at each routing length, E[y | r = l_i], so that a class
  split at t has its own mean output (``ClassStats.class_means``);
- the decode context: a decoding slot holds its request for y steps, its context growing from
  x to x + y, so a slot seen at a random time holds E[y (x + y/2)] / E[y] tokens (requests
  weighted by their decode time), not E[x] + E[y]/2.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .distributions import LengthDistribution, empirical
from .traces import Trace


@dataclass(frozen=True, eq=False)
class JointLengths:
    input_dist: LengthDistribution  # routing (uncached) lengths r
    full_input_dist: LengthDistribution  # full inputs x
    output_dist: LengthDistribution  # outputs max(1, y)
    output_by_input: np.ndarray  # E[max(1, y) | r = l_i], one per input_dist support point
    decode_context_tokens: float  # E[y (x + y/2)] / E[y]


def joint_lengths(trace: Trace) -> JointLengths:
    """The joint statistics above of ``trace``'s requests (errors name the trace file)."""
    full = trace.input_tokens.astype(np.float64)
    cached = np.zeros_like(full) if trace.cached_tokens is None else trace.cached_tokens.astype(np.float64)
    routed = np.maximum(full - cached, 1.0)
    out = np.maximum(trace.output_tokens.astype(np.float64), 1.0)
    support, inverse, counts = np.unique(routed, return_inverse=True, return_counts=True)
    output_by_input = np.bincount(inverse, weights=out, minlength=support.size) / counts
    context = float(np.sum(out * (full + out / 2.0)) / np.sum(out))
    return JointLengths(empirical(routed), empirical(full), empirical(out), output_by_input, context)
