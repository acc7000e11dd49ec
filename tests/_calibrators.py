"""Calibrators with fast test settings, and the simulated data the property tests share."""

from __future__ import annotations

import numpy as np

from bayescal._registry import get_calibrator_class

# small sampler settings for the Bayesian calibrator (about 0.3 s a fit)
# (MBCT: leaves of 20 rows, so that it splits on the few hundred rows used here)
FAST_PARAMS: dict[str, dict] = {"dpm": {"draws": 100, "tune": 100, "n_components": 6}, "mbct": {"min_samples_leaf": 20}}
SEED_PARAMS = ("random_state", "random_seed")


def build(name: str, seed: int = 0, **params):
    """The calibrator with its fast settings and the given seed (when it takes one)."""
    cls = get_calibrator_class(name)
    accepted = [k for k in SEED_PARAMS if k in cls().get_params()]
    seeded = {accepted[0]: seed} if accepted else {}
    return cls(**{**seeded, **FAST_PARAMS.get(name, {}), **params})


def features(n: int, seed: int) -> np.ndarray:
    """Two categorical feature columns (for feature-aware calibrators)."""
    return np.random.default_rng(seed).integers(0, 3, size=(n, 2))


def simulated(n: int, seed: int):
    """Beta(2,5) negatives, Beta(5,2) positives, pi = 0.4; and features."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    y[:2] = [0, 1]
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return s, y, features(n, seed + 1)
