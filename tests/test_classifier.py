"""CalibratedClassifier: a scikit-learn meta-estimator around any bayescal calibrator."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, StratifiedKFold, cross_val_predict, cross_val_score
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler
from sklearn.svm import LinearSVC
from sklearn.utils.estimator_checks import parametrize_with_checks

import bayescal
from bayescal import CalibratedClassifier
from bayescal.baselines.beta import BetaCalibration
from bayescal.baselines.platt import PlattScaling


def blobs(n=600, seed=0, labels=(0, 1)):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = rng.normal(size=(n, 3)) + 0.9 * y[:, None]
    X[:, 2] = X[:, 0] ** 3 / 4  # a distorted copy: the linear model is over-confident
    return X, np.asarray(labels)[y]


@parametrize_with_checks([CalibratedClassifier(LogisticRegression(), method="platt", cv=3)])
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_ensemble_false_is_one_calibrator_on_out_of_fold_scores_and_a_full_refit():
    X, y = blobs()
    cv = StratifiedKFold(4, shuffle=True, random_state=0)
    model = CalibratedClassifier(LogisticRegression(), method="beta", cv=cv, ensemble=False).fit(X, y)
    oof = cross_val_predict(LogisticRegression(), X, y, cv=cv, method="decision_function")
    cal = BetaCalibration(score_kind="decision").fit(oof, y)
    full = LogisticRegression().fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), cal.predict_proba(full.decision_function(X)), atol=1e-12)
    assert model.score_kind_ == "decision" and not model.ensemble_ and len(model.calibrated_classifiers_) == 1


def test_ensemble_true_averages_fold_models_and_matches_scikit_learn_temperature():
    X, y = blobs(seed=1)
    cv = StratifiedKFold(3, shuffle=True, random_state=1)
    ours = CalibratedClassifier(LogisticRegression(), method="temperature", cv=cv, ensemble=True).fit(X, y)
    ref = CalibratedClassifierCV(LogisticRegression(), method="temperature", cv=cv, ensemble=True).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-6)
    assert ours.ensemble_ and len(ours.calibrated_classifiers_) == 3


def test_platt_on_decision_values_matches_scikit_learn_sigmoid():
    X, y = blobs(seed=2)
    cv = StratifiedKFold(3, shuffle=True, random_state=2)
    ours = CalibratedClassifier(LinearSVC(), method="platt", cv=cv).fit(X, y)
    ref = CalibratedClassifierCV(LinearSVC(), method="sigmoid", cv=cv).fit(X, y)
    np.testing.assert_allclose(ours.predict_proba(X), ref.predict_proba(X), atol=1e-5)


def test_prefit_estimator_is_calibrated_on_all_rows():
    X, y = blobs(seed=3)
    clf = LogisticRegression().fit(X[:300], y[:300])
    model = CalibratedClassifier(FrozenEstimator(clf), method="platt").fit(X[300:], y[300:])
    assert not model.ensemble_
    cal = PlattScaling(score_kind="decision").fit(clf.decision_function(X[300:]), y[300:])
    np.testing.assert_allclose(model.predict_proba(X[:50]), cal.predict_proba(clf.decision_function(X[:50])))


def test_any_two_labels_score_kind_and_better_log_loss():
    X, y = blobs(1500, seed=4, labels=("ok", "fraud"))
    model = CalibratedClassifier(GaussianNB(), method="isotonic").fit(X[:1000], y[:1000])
    assert list(model.classes_) == ["fraud", "ok"] and model.score_kind_ == "probability"
    assert set(model.predict(X[1000:])) <= {"fraud", "ok"}
    from sklearn.metrics import log_loss

    raw = GaussianNB().fit(X[:1000], y[:1000]).predict_proba(X[1000:])
    assert log_loss(y[1000:], model.predict_proba(X[1000:])) < log_loss(y[1000:], raw)
    with pytest.raises(ValueError, match="Only binary classification"):
        CalibratedClassifier(method="platt").fit(X[:30], np.arange(30) % 3)
    with pytest.raises(ValueError, match="registered calibrator name"):
        CalibratedClassifier(method=42).fit(X, y)
    with pytest.raises(ValueError, match="Unknown calibrator"):
        CalibratedClassifier(method="nope").fit(X, y)
    with pytest.raises(ValueError, match="feature-aware"):
        CalibratedClassifier(method="mbct").fit(X, y)


def test_pipeline_grid_search_cross_val_score_and_clone():
    X, y = blobs(400, seed=5)
    pipe = make_pipeline(StandardScaler(), CalibratedClassifier(LogisticRegression(), method="platt", cv=3))
    scores = cross_val_score(pipe, X, y, cv=3, scoring="neg_log_loss")
    assert scores.shape == (3,) and np.all(scores < 0)
    grid = GridSearchCV(
        CalibratedClassifier(LogisticRegression(), cv=2),
        {"method": ["platt", "temperature"], "estimator__C": [0.1, 10.0]},
        scoring="neg_brier_score",
        cv=2,
    ).fit(X, y)
    assert grid.best_params_["method"] in ("platt", "temperature")
    model = CalibratedClassifier(LogisticRegression(C=3.0), method=BetaCalibration(parameters="am"), cv=3)
    twin = clone(model)
    assert twin.get_params()["method"].parameters == "am" and twin.get_params()["estimator__C"] == 3.0
    fitted = model.fit(X, y)
    assert fitted.calibrated_classifiers_[0].calibrator is not model.method  # the instance is cloned
    assert model.method.score_kind == "probability"  # and left untouched


@pytest.mark.parametrize("ensemble", [False, True])
def test_random_state_makes_a_fit_reproducible(ensemble):
    X, y = blobs(300, seed=2)

    def fit(random_state, method="dpm"):
        model = CalibratedClassifier(method=method, cv=2, ensemble=ensemble, random_state=random_state)
        return model.fit(X, y)

    first = fit(0)
    np.testing.assert_array_equal(first.predict_proba(X), fit(0).predict_proba(X))
    assert not np.array_equal(first.predict_proba(X), fit(1).predict_proba(X))
    seeds = [pair.calibrator.random_state for pair in first.calibrated_classifiers_]
    assert len(set(seeds)) == len(seeds)  # each fold's calibrator its own seed
    # an instance's random_state is replaced, as scikit-learn's ensembles replace theirs
    given = fit(0, method=bayescal.make_calibrator("dpm", random_state=123))
    np.testing.assert_array_equal(given.predict_proba(X), first.predict_proba(X))


def test_saving_the_classifier_names_what_can_be_saved(tmp_path):
    X, y = blobs(200, seed=3)
    model = CalibratedClassifier(method="platt", cv=2).fit(X, y)
    with pytest.raises(ValueError, match=r"CalibratedClassifier is not one.*calibrated_classifiers_\[i\]\.calibrator"):
        bayescal.save(model, tmp_path / "m.nc")
    assert not (tmp_path / "m.nc").exists()


def test_calibrator_as_the_last_step_of_a_pipeline():
    # a calibrator takes a single score column, so it ends a pipeline whose steps produce scores
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, 500)
    s = np.where(y == 1, rng.beta(5, 2, 500), rng.beta(2, 5, 500))
    table = np.column_stack([s, rng.normal(size=500)])
    pipe = make_pipeline(FunctionTransformer(lambda T: T[:, :1]), bayescal.make_calibrator("platt")).fit(table, y)
    direct = bayescal.make_calibrator("platt").fit(s, y)
    np.testing.assert_allclose(pipe.predict_proba(table), direct.predict_proba(s))


def test_sample_weight_reaches_estimator_and_calibrator_and_routing():
    X, y = blobs(500, seed=7)
    w = np.random.default_rng(7).uniform(0.2, 3.0, y.size)
    cv = StratifiedKFold(3, shuffle=True, random_state=0)
    model = CalibratedClassifier(LogisticRegression(), method="platt", cv=cv, ensemble=False).fit(X, y, sample_weight=w)
    oof = cross_val_predict(LogisticRegression(), X, y, cv=cv, method="decision_function", params={"sample_weight": w})
    cal = PlattScaling(score_kind="decision").fit(oof, y, sample_weight=w)
    full = LogisticRegression().fit(X, y, sample_weight=w)
    np.testing.assert_allclose(model.predict_proba(X), cal.predict_proba(full.decision_function(X)), atol=1e-10)

    class NoWeights(LogisticRegression):
        def fit(self, X, y):
            return super().fit(X, y)

    with pytest.warns(UserWarning, match="does not accept sample_weight"):
        CalibratedClassifier(NoWeights(), method="platt", cv=3).fit(X, y, sample_weight=w)
    with sklearn.config_context(enable_metadata_routing=True):
        routed = CalibratedClassifier(
            LogisticRegression().set_fit_request(sample_weight=True), method="platt", cv=cv, ensemble=False
        ).set_fit_request(sample_weight=True)
        routed.fit(X, y, sample_weight=w)
    np.testing.assert_allclose(routed.predict_proba(X), model.predict_proba(X), atol=1e-10)


def test_venn_abers_interval_per_row():
    X, y = blobs(600, seed=8)
    model = CalibratedClassifier(LogisticRegression(), method="venn_abers", cv=3).fit(X, y)
    band = model.predict_interval(X[:40])
    p = model.predict_proba(X[:40])[:, 1]
    assert band.dims == ("obs_id", "ci_bound") and band.attrs["ci_kind"] == "venn_abers"
    assert np.all(band.sel(ci_bound="lower") <= p + 1e-12) and np.all(p <= band.sel(ci_bound="upper") + 1e-12)


def test_bayesian_method_gives_a_per_row_posterior():
    X, y = blobs(400, seed=9)
    dpm = bayescal.make_calibrator("dpm", draws=60, tune=60, n_components=5, chains=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # short chains warn about convergence
        model = CalibratedClassifier(LogisticRegression(), method=dpm, cv=3).fit(X, y)
    assert not model.ensemble_  # one posterior from all out-of-fold scores
    post = model.predict_posterior(X[:25])
    assert post.dims == ("chain", "draw", "obs_id") and post.shape == (2, 60, 25)
    np.testing.assert_allclose(post.mean(("chain", "draw")).values, model.predict_proba(X[:25])[:, 1], atol=1e-9)
    band = model.predict_interval(X[:25], ci_prob=0.9)
    assert np.all(band.sel(ci_bound="lower") < band.sel(ci_bound="upper"))
    assert band.attrs["ci_prob"] == 0.9


def test_with_class_prior_shifts_every_calibrator():
    X, y = blobs(600, seed=10)
    model = CalibratedClassifier(LogisticRegression(), method="beta", cv=3).fit(X, y)
    before = model.predict_proba(X[:30]).copy()
    shifted = model.with_class_prior(0.1)
    np.testing.assert_array_equal(model.predict_proba(X[:30]), before)
    expected = np.mean(
        [
            pair.calibrator.with_class_prior(0.1).predict_proba(pair.estimator.decision_function(X[:30]))[:, 1]
            for pair in model.calibrated_classifiers_
        ],
        axis=0,
    )
    np.testing.assert_allclose(shifted.predict_proba(X[:30])[:, 1], expected)
    assert np.all(shifted.predict_proba(X[:30])[:, 1] <= before[:, 1] + 1e-12)  # 0.1 < the data's prevalence
    band = model.with_class_prior((5, 45), random_state=0).predict_interval(X[:30])
    assert np.all(band.sel(ci_bound="upper") - band.sel(ci_bound="lower") >= 0)
