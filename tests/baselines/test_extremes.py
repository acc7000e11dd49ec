"""Exact 0 and 1 probability scores for the calibrators whose map is a smooth function of the
working scale (bayescal.baselines._extremes): placed next to the observed scores, not at the
logit clip's +-27.6."""

from __future__ import annotations

import numpy as np
import pytest

import bayescal
from bayescal.baselines._extremes import extreme_limits
from bayescal.data import to_working
from bayescal.metrics import brier_score

SMOOTH = ["platt", "temperature", "beta", "quadratic", "spline", "scaling_binning"]


def vote_fractions(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Scores as ten nearest neighbours give them: the share of 10 votes, many exactly 0 or 1."""
    rng = np.random.default_rng(seed)
    p = rng.beta(1.2, 1.2, n)
    votes = rng.binomial(10, p) / 10.0
    return votes, (rng.random(n) < p).astype(int)


def fit(name: str, s, y, **kw):
    params = {"random_state": 0} if name in ("spline", "scaling_binning") else {}
    return bayescal.make_calibrator(name, **params, **kw).fit(s, y)


@pytest.mark.parametrize("name", SMOOTH)
def test_exact_zeros_and_ones_do_not_flatten_the_map(name):
    """At the logit clip the exact 0/1 rows (about a fifth here) pulled Platt's map to the base
    rate: worse than the votes themselves on fresh data (Brier 0.211 against 0.192 for ten
    nearest neighbours on two Gaussian classes)."""
    s, y = vote_fractions(4000, 0)
    s_new, y_new = vote_fractions(20_000, 1)
    cal = fit(name, s, y)
    assert brier_score(y_new, cal.predict_proba(s_new)[:, 1]) <= brier_score(y_new, s_new) + 0.002
    lower, upper = cal.t_limits_
    np.testing.assert_allclose([lower, upper], to_working(np.array([0.05, 0.95]), "probability"))
    # an exact 0 is read at the lower level, and so is a new score below it: the map stays monotone
    at = cal.predict_proba(np.array([0.0, 1e-6, 0.05, 0.1]))[:, 1]
    assert at[0] == at[1] == at[2] and (at[3] >= at[2] if name != "scaling_binning" else True)


@pytest.mark.parametrize("name", SMOOTH)
def test_without_exact_zeros_and_ones_nothing_is_clipped(name):
    rng = np.random.default_rng(2)
    s = rng.beta(2, 3, 500)
    y = (rng.random(500) < s).astype(int)
    cal = fit(name, s, y)
    np.testing.assert_array_equal(cal.t_limits_, [-np.inf, np.inf])
    t = np.log(s / (1 - s))
    decision = fit(name, np.r_[t, 40.0], np.r_[y, 1], score_kind="decision")
    np.testing.assert_array_equal(decision.t_limits_, [-np.inf, np.inf])


def test_extreme_limits():
    t = to_working(np.array([0.0, 0.0, 0.2, 0.6, 1.0]), "probability")
    np.testing.assert_allclose(extreme_limits(t, np.ones(5)), to_working(np.array([0.1, 0.8]), "probability"))
    # only one end exact; a row of weight 0 neither counts as exact nor as the smallest score
    t = to_working(np.array([0.0, 0.01, 0.2, 0.6]), "probability")
    np.testing.assert_allclose(
        extreme_limits(t, np.array([1.0, 0.0, 1.0, 1.0])), [to_working(np.array([0.1]), "probability")[0], np.inf]
    )
    # a hard classifier: only 0 and 1
    t = to_working(np.array([0.0, 1.0, 1.0]), "probability")
    np.testing.assert_allclose(extreme_limits(t, np.ones(3)), to_working(np.array([0.25, 0.75]), "probability"))
    # scores within PROB_EPS of 0 are exact to the working scale
    t = to_working(np.array([1e-14, 0.4]), "probability")
    np.testing.assert_allclose(extreme_limits(t, np.ones(2)), [to_working(np.array([0.2]), "probability")[0], np.inf])


def test_limits_survive_save_and_load(tmp_path):
    s, y = vote_fractions(1000, 3)
    cal = fit("platt", s, y)
    cal.save(tmp_path / "m.nc")
    loaded = bayescal.load(tmp_path / "m.nc")
    np.testing.assert_array_equal(loaded.t_limits_, cal.t_limits_)
    np.testing.assert_array_equal(loaded.predict_proba(s), cal.predict_proba(s))
