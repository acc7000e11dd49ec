"""The calibrator contract (the architecture page of the documentation), checked over every registered calibrator.

A calibrator joins these tests by being registered; nothing here names a calibrator except
to give the Bayesian ones tiny settings and to route features to feature-aware ones.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import xarray as xr
from _calibrators import build
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import parametrize_with_checks

import bayescal
from bayescal._registry import get_calibrator_class


def simulated(n: int = 400, seed: int = 0):
    """Scores from Beta(2,5) (negatives) and Beta(5,2) (positives) with pi = 0.4."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    X = rng.integers(0, 3, size=(n, 2))
    return s, y, X


def fit_kwargs(est, X):
    return {"X": X} if est.feature_aware else {}


NAMES = bayescal.calibrators()


def test_registry_lists_and_builds_every_calibrator():
    assert {
        "histogram",
        "platt",
        "isotonic",
        "kde",
        "beta",
        "scaling_binning",
        "bbq",
        "enir",
        "elite",
        "mbct",
        "dpm",
    } <= set(NAMES)
    for name in NAMES:
        est = bayescal.make_calibrator(name)
        assert isinstance(est, bayescal.Calibrator)
    with pytest.raises(ValueError, match="Unknown calibrator 'nope'"):
        bayescal.make_calibrator("nope")


@pytest.mark.parametrize("name", NAMES)
def test_predict_proba_contract(name):
    s, y, X = simulated()
    s_copy, y_copy, X_copy = s.copy(), y.copy(), X.copy()
    est = build(name)
    with pytest.raises(NotFittedError):
        est.predict_proba(s)
    assert est.fit(s, y, **fit_kwargs(est, X)) is est
    proba = est.predict_proba(s[:50], **({"X": X[:50]} if est.feature_aware else {}))
    assert proba.shape == (50, 2)
    assert np.all(np.isfinite(proba)) and proba.min() >= 0 and proba.max() <= 1
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    labels = est.predict(s[:50], **({"X": X[:50]} if est.feature_aware else {}))
    assert set(np.unique(labels)) <= set(est.classes_)
    # nothing the user passed is modified
    np.testing.assert_array_equal(s, s_copy)
    np.testing.assert_array_equal(y, y_copy)
    np.testing.assert_array_equal(X, X_copy)


@pytest.mark.parametrize("name", [n for n in NAMES if not get_calibrator_class(n).feature_aware])
def test_calibration_map_and_band(name):
    s, y, _ = simulated()
    est = build(name).fit(s, y)
    cmap = est.calibration_map()
    assert isinstance(cmap, xr.DataArray)
    assert cmap.dims == ("chain", "draw", "score")
    assert cmap.attrs["score_scale"] == "probability"
    assert cmap.sizes["score"] == 201
    # the map agrees with predict_proba at the same scores
    grid = np.linspace(0.05, 0.95, 19)
    np.testing.assert_allclose(
        est.calibration_map(grid).mean(("chain", "draw")).values, est.predict_proba(grid)[:, 1], atol=2e-3
    )
    band = est.credible_band(grid, ci_prob=0.9)
    assert band.dims == ("score", "ci_bound")
    assert list(band.ci_bound.values) == ["lower", "upper"]
    assert band.attrs["ci_prob"] == 0.9 and band.attrs["ci_kind"] in ("eti", "hdi")
    assert np.all(band.sel(ci_bound="lower") <= band.sel(ci_bound="upper") + 1e-12)
    assert cmap.attrs["extrapolated"] in (0, 1)
    # a grid that repeats a score: the same band at each copy, no warning from inside ArviZ
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        repeated = est.credible_band(np.repeat(grid[:3], 2), ci_prob=0.9)
    np.testing.assert_array_equal(repeated.score.values, np.repeat(grid[:3], 2))
    np.testing.assert_allclose(repeated.values, np.repeat(band.values[:3], 2, axis=0), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_save_load_roundtrip(name, tmp_path):
    s, y, X = simulated()
    est = build(name)
    est.fit(s, y, **fit_kwargs(est, X))
    path = tmp_path / f"{name}.nc"
    est.save(path)
    loaded = bayescal.load(path)
    assert type(loaded) is type(est)
    assert loaded.get_params() == est.get_params()
    kw = {"X": X} if est.feature_aware else {}
    np.testing.assert_allclose(loaded.predict_proba(s, **kw), est.predict_proba(s, **kw), rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", [n for n in NAMES if not get_calibrator_class(n).feature_aware])
def test_a_refit_that_raises_leaves_the_former_fit_whole(name, monkeypatch):
    """A refit on other data (here text labels, reflected scores) that fails inside the method
    leaves the calibrator answering as before: it held the new data's classes and range beside
    the former fit's map (the DPM then predicted 0.9 where it had said 0.03)."""
    s, y, _ = simulated()
    est = build(name).fit(s, y)
    before = est.predict_proba(s)

    def failing_fit(self, *args, **kwargs):
        self.half_done_ = True
        raise RuntimeError("the method failed")

    monkeypatch.setattr(type(est), "_fit", failing_fit)
    with pytest.raises(RuntimeError, match="the method failed"):
        est.fit(1 - s**3, np.where(y == 1, "no", "yes"))
    monkeypatch.undo()
    assert list(est.classes_) == [0, 1] and not hasattr(est, "half_done_")
    np.testing.assert_array_equal(est.predict_proba(s), before)


@pytest.mark.parametrize("name", [n for n in NAMES if get_calibrator_class(n).supports_weights])
def test_weights_normalised_to_sum_one_warn_where_their_scale_changes_the_fit(name):
    """Weights read as frequencies: a calibrator that declares its fit free of their scale gives
    the same map for w and w / w.sum(); the others warn on weights averaging 1 / n, which they
    fit as one sample (and not on weights averaging 1)."""
    import warnings

    s, y, X = simulated()
    w = np.random.default_rng(1).random(s.size)
    est = build(name)
    kw = fit_kwargs(est, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        build(name).fit(s, y, w * s.size / w.sum(), **kw)
    if est.weight_scale_matters:
        with pytest.warns(UserWarning, match=r"sample_weight averages 0.0025 over the 400 rows.*rescale them"):
            est.fit(s, y, w / w.sum(), **kw)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            relative = est.fit(s, y, w / w.sum(), **kw).predict_proba(s, **kw)
        counts = build(name).fit(s, y, w, **kw).predict_proba(s, **kw)
        np.testing.assert_allclose(relative, counts, atol=1e-6)


@pytest.mark.parametrize(
    "name", [n for n in NAMES if get_calibrator_class(n).supports_weights and not get_calibrator_class(n).feature_aware]
)
def test_rows_of_weight_zero_leave_the_score_range_and_the_default_grid(name):
    """A row of weight 0 is no row: held-out rows at extreme scores do not stretch
    ``score_range_``, hence the default grid of the map (they did, and the map was drawn and
    flagged as extrapolated by rows the fit never saw)."""
    s, y, _ = simulated()
    s_out = np.r_[s, 0.001, 0.999]
    y_out, w_out = np.r_[y, 1, 0], np.r_[np.ones(s.size), 0.0, 0.0]
    kept = build(name).fit(s, y)
    padded = build(name).fit(s_out, y_out, w_out)
    np.testing.assert_array_equal(padded.score_range_, kept.score_range_)
    np.testing.assert_array_equal(padded.calibration_map()["score"], kept.calibration_map()["score"])


@pytest.mark.parametrize("name", [n for n in NAMES if not get_calibrator_class(n).feature_aware])
def test_labels_with_pos_label_and_strings(name):
    s, y, _ = simulated()
    words = np.where(y == 1, "spam", "ham")
    est = build(name).fit(s, words)
    assert list(est.classes_) == ["ham", "spam"]
    assert set(est.predict(s)) <= {"ham", "spam"}
    # naming "ham" positive and reflecting the scores (s -> 1 - s) describes the same problem,
    # (scores that rise with "ham"), so P(ham) from that fit is close to 1 - P(spam) of the first
    flipped = build(name).fit(1 - s, words, pos_label="ham")
    assert list(flipped.classes_) == ["spam", "ham"]
    # (binning calibrators cut reflected data at slightly different places: compare on average)
    assert np.mean(np.abs(flipped.predict_proba(1 - s)[:, 1] - est.predict_proba(s)[:, 0])) < 0.03


def test_import_is_light():
    code = (
        "import sys, bayescal; bayescal.calibrators(); bayescal.make_calibrator('platt');"
        "heavy = [m for m in ('pymc', 'pytensor', 'matplotlib', 'dask') if m in sys.modules];"
        "print(','.join(heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import bayescal pulled in {out.stdout.strip()}"


# ---- scikit-learn's estimator checks --------------------------------------------------
# Checks that feed several feature columns (or assume X is 2-D with many features) cannot
# apply to a calibrator, which takes exactly one score per sample.
_MULTI_COLUMN = "feeds X with several feature columns; a calibrator takes one score per sample"
EXPECTED_FAILED_CHECKS = {
    "check_classifier_not_supporting_multiclass": _MULTI_COLUMN,
    "check_classifiers_train": _MULTI_COLUMN,
    "check_dict_unchanged": "indexes X[:, 0] after reducing X to 1-D for the one_d_array tag",
    "check_dont_overwrite_parameters": _MULTI_COLUMN,
    "check_dtype_object": _MULTI_COLUMN,
    "check_estimator_sparse_array": "scikit-learn cannot build a 1-D sparse array in this check",
    "check_estimators_nan_inf": _MULTI_COLUMN + " (NaN and inf in scores are rejected: see test_validation.py)",
    "check_f_contiguous_array_estimator": _MULTI_COLUMN,
    "check_fit1d": "1-D input is the calibrator's native input, so it must not raise",
    "check_fit2d_1feature": "indexes X[:, 0] after reducing X to 1-D for the one_d_array tag",
    "check_fit2d_1sample": _MULTI_COLUMN,
    "check_fit2d_predict1d": "indexes X[:, 0] after reducing X to 1-D for the one_d_array tag",
    "check_methods_sample_order_invariance": "indexes X[:, 0] after reducing X to 1-D for the one_d_array tag",
    "check_methods_subset_invariance": "indexes X[:, 0] after reducing X to 1-D for the one_d_array tag",
    "check_n_features_in": _MULTI_COLUMN,
    "check_n_features_in_after_fitting": _MULTI_COLUMN,
    "check_sample_weight_equivalence_on_dense_data": _MULTI_COLUMN + " (covered by the weight property tests)",
    "check_sample_weights_not_overwritten": _MULTI_COLUMN,
    "check_sample_weights_shape": _MULTI_COLUMN,
    "check_supervised_y_2d": _MULTI_COLUMN,
}
# MBCT needs X; the DPM calibrator runs the full Bayesian fit dozens of times here, so it is
# left to its own contract tests above and in test_dpm.py.
SKLEARN_CHECKED = [
    build(n, score_kind="decision") for n in NAMES if not get_calibrator_class(n).feature_aware and n != "dpm"
]


@parametrize_with_checks(SKLEARN_CHECKED, expected_failed_checks=lambda est: EXPECTED_FAILED_CHECKS)
def test_sklearn_compatible(estimator, check):
    check(estimator)


@pytest.mark.parametrize("name", [n for n in NAMES if not get_calibrator_class(n).feature_aware])
def test_score_kind_changed_after_the_fit_is_refused_until_refit(name, tmp_path):
    """set_params(score_kind=...) without a refit read the scores on the other scale and saved a
    file whose parameters disagreed with its state; now prediction and save refuse it by name,
    and setting it back (or refitting) restores the fitted calibrator."""
    rng = np.random.default_rng(0)
    s = rng.random(300)
    y = (rng.random(300) < s).astype(int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = build(name).fit(s, y)
    before = est.predict_proba(s[:5])
    est.set_params(score_kind="decision")
    for call in (lambda: est.predict_proba(s[:5]), est.calibration_map, lambda: est.save(tmp_path / "m.nc")):
        with pytest.raises(ValueError, match=r"score_kind='decision' was set after this .* fitted with"):
            call()
    assert not (tmp_path / "m.nc").exists()
    est.set_params(score_kind="probability")
    np.testing.assert_array_equal(est.predict_proba(s[:5]), before)
