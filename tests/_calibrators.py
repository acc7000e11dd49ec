"""Calibrators with fast test settings, and the simulated data the property tests share.

The one place that says how tests build a calibrator quickly: every test module that
iterates over the registry takes :func:`build` (or :data:`FAST_PARAMS`) from here.
"""

from __future__ import annotations

import numpy as np

from bayescal._registry import get_calibrator_class

# small sampler settings for the Bayesian calibrator (about 0.3 s a fit)
# (MBCT: leaves of 20 rows, so that it splits on the few hundred rows used here);
# every other calibrator uses its defaults
FAST_PARAMS: dict[str, dict] = {"dpm": {"draws": 100, "tune": 100, "n_components": 6}, "mbct": {"min_samples_leaf": 20}}
SEED_PARAMS = ("random_state", "random_seed")


def build(name: str, seed: int = 0, **params):
    """The calibrator with its fast settings and the given seed (when it takes one).

    Fast settings the class does not accept are dropped; ``params`` override them.
    """
    cls = get_calibrator_class(name)
    accepted = cls().get_params()
    names = [k for k in SEED_PARAMS if k in accepted]
    seeded = {names[0]: seed} if names else {}  # random_state first: the deprecated alias only when it is all there is
    fast = {k: v for k, v in FAST_PARAMS.get(name, {}).items() if k in accepted}
    return cls(**{**seeded, **fast, **params})


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
