"""Request arrival times, drawn up front with numpy (vectorised).

- ``poisson``: inter-arrival times ~ Exponential(mean 1 / rate_rps).
- ``gamma``: inter-arrival times ~ Gamma(shape k = 1 / cv^2, scale 1 / (k rate_rps)), whose
  mean is 1 / rate_rps and coefficient of variation cv (cv = 1 is Poisson; cv > 1 bursty).
- ``onoff``: a two-state Markov-modulated Poisson process. 'on' periods last
  Exponential(mean on_s) and carry rate_on = rate_rps * burst_factor; 'off' periods last
  Exponential(mean off_s) and carry rate_off = (rate_rps (on_s + off_s) - rate_on on_s) / off_s,
  so that the long-run mean rate is rate_rps. The first period is 'on' with probability
  on_s / (on_s + off_s) (the stationary share). Within a period, the arrivals are a Poisson
  count placed uniformly (the order statistics of a Poisson process).
All times are in seconds from the start of the run (the first arrival is after 0).
"""

from __future__ import annotations

import numpy as np

from ..choices import ArrivalProcess
from .config import SimConfig


def arrival_times_s(config: SimConfig, rng: np.random.Generator) -> np.ndarray:
    """``config.requests`` ascending arrival times in seconds."""
    n, rate = config.requests, config.rate_rps
    if config.arrivals == ArrivalProcess.poisson:
        return np.cumsum(rng.exponential(1.0 / rate, n))
    if config.arrivals == ArrivalProcess.gamma:
        shape = 1.0 / config.cv**2
        return np.cumsum(rng.gamma(shape, 1.0 / (shape * rate), n))
    return _onoff_times_s(config, rng)


def _onoff_times_s(config: SimConfig, rng: np.random.Generator) -> np.ndarray:
    n, rate = config.requests, config.rate_rps
    rate_on = rate * config.burst_factor
    rate_off = max((rate * (config.on_s + config.off_s) - rate_on * config.on_s) / config.off_s, 0.0)
    on_first = rng.random() < config.on_s / (config.on_s + config.off_s)
    chunks: list[np.ndarray] = []
    count, period_start_s = 0, 0.0
    # Enough periods per batch for about n arrivals on average; more batches if short.
    pairs = max(16, int(np.ceil(n / (rate * (config.on_s + config.off_s)))) + 1)
    while count < n:
        on_s = rng.exponential(config.on_s, pairs)
        off_s = rng.exponential(config.off_s, pairs)
        durations_s = np.column_stack((on_s, off_s) if on_first else (off_s, on_s)).ravel()
        rates = np.tile([rate_on, rate_off] if on_first else [rate_off, rate_on], pairs)
        starts_s = period_start_s + np.concatenate(([0.0], np.cumsum(durations_s)[:-1]))
        counts = rng.poisson(rates * durations_s)
        offsets = rng.random(int(counts.sum())) * np.repeat(durations_s, counts)
        chunks.append(np.repeat(starts_s, counts) + offsets)
        count += int(counts.sum())
        period_start_s = starts_s[-1] + durations_s[-1]
    return np.sort(np.concatenate(chunks))[:n]
