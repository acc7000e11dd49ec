"""One name for randomness (``random_state``) and one default band probability.

``random_seed``, the old name, is still accepted for one release with a
``DeprecationWarning``; giving both names is an error, not a silent choice.
"""

import inspect
import warnings

import numpy as np
import pytest

import bayescal
from bayescal import diagnostics, plotting
from bayescal._validation import DEFAULT_CI_PROB, check_ci_prob, resolve_random_state
from bayescal.base import BayesianCalibrator
from bayescal.datasets import simulate_scores


def test_resolve_random_state_prefers_the_new_name_and_warns_on_the_old():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert resolve_random_state(7, None, "f") == 7
        assert resolve_random_state(None, None, "f") is None
    with pytest.warns(DeprecationWarning, match="random_seed is deprecated.*use random_state"):
        assert resolve_random_state(None, 3, "f") == 3
    with pytest.raises(ValueError, match="pass random_state only"):
        resolve_random_state(1, 2, "f")


def test_old_name_gives_the_same_result_with_a_warning():
    d = simulate_scores("beta_skewed", 300, random_state=0)
    new = diagnostics.consistency_check(d.scores, d.y, n_replicates=50, band=False, random_state=4)
    with pytest.warns(DeprecationWarning, match="consistency_check"):
        old = diagnostics.consistency_check(d.scores, d.y, n_replicates=50, band=False, random_seed=4)
    np.testing.assert_array_equal(new["replicated"].values, old["replicated"].values)


def test_the_deprecation_warning_points_at_the_callers_line():
    """Python shows a DeprecationWarning by default only when it is attributed to the user's code."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    d = simulate_scores("beta_skewed", 200, random_state=3)
    with pytest.warns(DeprecationWarning) as record:
        diagnostics.consistency_check(d.scores, d.y, n_replicates=20, band=False, random_seed=1)
        plotting.PPCDisplay.from_predictions(d.y, d.scores, statistics="ece", random_seed=1)
        plotting.ReliabilityDisplay.from_predictions(d.y, d.scores, n_consistency=5, random_seed=1)
    plt.close("all")
    assert [w.filename for w in record if w.category is DeprecationWarning] == [__file__] * 3


class _TwoDraws(BayesianCalibrator):
    """Smallest Bayesian calibrator: two draws of a map, the identity and its square."""

    def _fit(self, data, X=None):
        self.idata_ = None

    def _map_draws(self, t, X=None):
        p = 1.0 / (1.0 + np.exp(-t))
        return np.stack([p, p**2])[None]


def test_sample_posterior_predictive_takes_random_state():
    d = simulate_scores("beta_skewed", 200, random_state=1)
    cal = _TwoDraws().fit(d.scores, d.y)
    a = cal.sample_posterior_predictive(d.scores, random_state=5).posterior_predictive["y"].values
    b = cal.sample_posterior_predictive(d.scores, random_state=5).posterior_predictive["y"].values
    np.testing.assert_array_equal(a, b)
    with pytest.warns(DeprecationWarning):
        c = cal.sample_posterior_predictive(d.scores, random_seed=5).posterior_predictive["y"].values
    np.testing.assert_array_equal(a, c)


def test_one_default_band_probability():
    assert DEFAULT_CI_PROB == bayescal.base.DEFAULT_CI_PROB == 0.95
    assert check_ci_prob(None) == DEFAULT_CI_PROB
    d = simulate_scores("beta_skewed", 300, random_state=2)
    band = _TwoDraws().fit(d.scores, d.y).credible_band(11)
    assert band.attrs["ci_prob"] == DEFAULT_CI_PROB
    for cls in (plotting.ReliabilityDisplay, plotting.DensityDisplay, plotting.DecisionDisplay):
        for factory in (cls.from_calibrators, cls.from_calibrator):
            assert inspect.signature(factory).parameters["ci_prob"].default == DEFAULT_CI_PROB


def test_no_public_signature_takes_args_or_kwargs_blindly():
    """Display factories spell out their parameters (only plot_ppc_pava forwards to ArviZ)."""
    for cls in (plotting.ReliabilityDisplay, plotting.DensityDisplay, plotting.PPCDisplay, plotting.DecisionDisplay):
        for name in ("from_calibrators", "from_calibrator", "from_predictions"):
            if hasattr(cls, name):
                kinds = {p.kind for p in inspect.signature(getattr(cls, name)).parameters.values()}
                assert inspect.Parameter.VAR_POSITIONAL not in kinds
                assert inspect.Parameter.VAR_KEYWORD not in kinds


SEEDED = [n for n in bayescal.calibrators() if "random_state" in bayescal.make_calibrator(n).get_params()]


@pytest.mark.parametrize("name", SEEDED)
@pytest.mark.parametrize("bad", [-1, "a", 1.5, True])
def test_a_random_state_that_is_not_a_seed_is_refused_by_name(name, bad):
    """It reached numpy's SeedSequence ("expected non-negative integer"), where the DPM, spline
    and scaling-binning calibrators used it, or was ignored where the data needed no randomness."""
    from _calibrators import build

    d = simulate_scores("beta_skewed", 300, random_state=0)
    X = np.zeros((d.scores.size, 1)) if bayescal.make_calibrator(name).feature_aware else None
    with pytest.raises(ValueError, match=rf"random_state={bad!r} is not a seed: pass None, an integer in \[0, 2\*\*64\)"):
        build(name, random_state=bad).fit(d.scores, d.y, X=X)


def test_a_legacy_random_state_is_read_as_a_seed_drawn_from_it():
    """scikit-learn's idiom, np.random.RandomState(0), gives a seed: two equal states, equal draws."""
    assert resolve_random_state(np.random.RandomState(0)) == resolve_random_state(np.random.RandomState(0))
    d = simulate_scores("beta_skewed", 300, random_state=0)
    a, b = (
        bayescal.make_calibrator("spline", random_state=np.random.RandomState(0)).fit(d.scores, d.y) for _ in range(2)
    )
    np.testing.assert_array_equal(a.predict_proba(d.scores), b.predict_proba(d.scores))
