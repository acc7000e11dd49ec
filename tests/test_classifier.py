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


@pytest.mark.parametrize("labels", [("cancer", "healthy"), (0, 1, 2)])
def test_prefit_estimator_with_other_labels_than_y_is_refused(labels):
    X, y = blobs(300, seed=11)
    other = np.asarray(labels)[np.arange(150) % len(labels)] if len(labels) == 3 else np.asarray(labels)[1 - y[:150]]
    clf = LogisticRegression().fit(X[:150], other)
    with pytest.raises(ValueError, match=r"prefit estimator's classes_ are .* labels of y are \[0, 1\].*Pass y in"):
        CalibratedClassifier(FrozenEstimator(clf), method="platt").fit(X[150:], y[150:])


def test_estimator_whose_classes_differ_from_y_is_refused():
    class Relabels(LogisticRegression):
        def fit(self, X, y, **kw):
            return super().fit(X, np.where(np.asarray(y) == 1, "yes", "no"), **kw)

    X, y = blobs(200, seed=12)
    for ensemble in (True, False):
        with pytest.raises(ValueError, match=r"estimator=Relabels fitted on y has classes_ \['no', 'yes'\]"):
            CalibratedClassifier(Relabels(), method="platt", cv=2, ensemble=ensemble).fit(X, y)


class _FailsOnSmallFits(LogisticRegression):
    """Fits only on more than 250 rows: a fit that fails after some folds succeeded."""

    def fit(self, X, y, **kw):
        if len(X) <= 250:
            raise RuntimeError("estimator fit failed")
        return super().fit(X, y, **kw)


def test_a_failed_fit_leaves_no_partial_model_and_a_failed_refit_keeps_the_old_one():
    X, y = blobs(400, seed=13)
    first, second = list(StratifiedKFold(4, shuffle=True, random_state=0).split(X, y))[:2]
    small = (np.setdiff1d(second[0], first[1][: first[1].size // 2]), second[1])  # fewer than 250 training rows
    model = CalibratedClassifier(_FailsOnSmallFits(), method="platt", cv=[first, small], ensemble=True)
    with pytest.raises(RuntimeError, match="estimator fit failed"):
        model.fit(X, y)
    with pytest.raises(sklearn.exceptions.NotFittedError):
        model.predict_proba(X[:3])
    model.set_params(cv=3).fit(X, y)
    before = model.predict_proba(X[:20])
    with pytest.raises(RuntimeError, match="estimator fit failed"):
        model.set_params(cv=[first, small]).fit(X, y)
    assert len(model.calibrated_classifiers_) == 3
    np.testing.assert_array_equal(model.predict_proba(X[:20]), before)


@pytest.mark.parametrize("ensemble", [True, False])
def test_groups_reach_a_group_splitter_with_routing(ensemble):
    from sklearn.model_selection import GroupKFold

    X, y = blobs(300, seed=14)
    groups = np.arange(y.size) % 10
    with sklearn.config_context(enable_metadata_routing=True):
        model = CalibratedClassifier(LogisticRegression(), method="platt", cv=GroupKFold(3), ensemble=ensemble)
        model.fit(X, y, groups=groups)
    splits = list(GroupKFold(3).split(X, y, groups))
    same = CalibratedClassifier(LogisticRegression(), method="platt", cv=splits, ensemble=ensemble).fit(X, y)
    np.testing.assert_allclose(model.predict_proba(X), same.predict_proba(X))
    with pytest.raises(ValueError, match=r"groups= .* without metadata routing .*enable_metadata_routing"):
        CalibratedClassifier(LogisticRegression(), method="platt", cv=GroupKFold(3)).fit(X, y, groups=groups)


def test_a_split_with_one_class_is_named_with_the_fix():
    from sklearn.model_selection import KFold

    X, y = blobs(300, seed=15)
    order = np.argsort(y, kind="stable")
    X, y = X[order], y[order]  # label-sorted rows: unshuffled KFold gives held-out parts of one class
    with pytest.raises(ValueError, match=r"cv split 0 has no rows of class 1 in its held-out part.*StratifiedKFold"):
        CalibratedClassifier(method="platt", cv=KFold(3), ensemble=True).fit(X, y)
    # ensemble=False fits no calibrator per split: one-class held-out parts are fine
    CalibratedClassifier(method="platt", cv=KFold(3), ensemble=False).fit(X, y)
    with pytest.raises(ValueError, match=r"cv split 0 has no rows of class 0 in its training part"):
        CalibratedClassifier(method="platt", cv=KFold(2), ensemble=False).fit(X, y)


def test_ensemble_of_venn_abers_merges_folds_as_cross_venn_abers():
    X, y = blobs(500, seed=16)
    model = CalibratedClassifier(
        LogisticRegression(), method="venn_abers", cv=StratifiedKFold(5, shuffle=True, random_state=0), ensemble=True
    ).fit(X[:400], y[:400])
    Xt = X[400:]
    bands = np.stack(
        [
            pair.calibrator.predict_interval(pair.estimator.decision_function(Xt)).values
            for pair in model.calibrated_classifiers_
        ]
    )
    p0, p1 = bands[..., 0], bands[..., 1]
    g0, g1 = np.exp(np.log(1 - p0).mean(axis=0)), np.exp(np.log(p1).mean(axis=0))  # geometric means over folds
    np.testing.assert_allclose(model.predict_proba(Xt)[:, 1], g1 / (g0 + g1), atol=1e-12)
    np.testing.assert_allclose(model.predict_interval(Xt).values, np.column_stack([1 - g0, g1]), atol=1e-12)
    np.testing.assert_allclose(model.predict_posterior(Xt).values[0, 0], g1 / (g0 + g1), atol=1e-12)


def test_a_venn_abers_ensemble_shifted_to_one_prevalence_merges_its_shifted_pairs():
    """Shifted, the folds' calibrators were no Venn-Abers ones any more: the cross Venn-Abers
    merge gave way to a plain mean (0.011 off at the folds' own prevalence, a shift that must
    change nothing) and the pair to a point."""
    from bayescal.base import shift_odds

    X, y = blobs(500, seed=16)
    model = CalibratedClassifier(
        LogisticRegression(), method="venn_abers", cv=StratifiedKFold(4, shuffle=True, random_state=0)
    ).fit(X[:400], y[:400])
    Xt = X[400:]
    priors = [pair.calibrator.class_prior_ for pair in model.calibrated_classifiers_]
    same = model.with_class_prior(priors[0])
    if np.allclose(priors, priors[0]):
        np.testing.assert_allclose(same.predict_proba(Xt), model.predict_proba(Xt), atol=1e-12)
    shifted = model.with_class_prior(0.1)
    pairs = [
        pair.calibrator.predict_interval(pair.estimator.decision_function(Xt)).values
        for pair in model.calibrated_classifiers_
    ]
    p0 = np.stack([shift_odds(b[:, 0], pi, 0.1) for b, pi in zip(pairs, priors, strict=True)])
    p1 = np.stack([shift_odds(b[:, 1], pi, 0.1) for b, pi in zip(pairs, priors, strict=True)])
    g0, g1 = np.exp(np.log(1 - p0).mean(axis=0)), np.exp(np.log(p1).mean(axis=0))
    interval = shifted.predict_interval(Xt)
    assert interval.attrs["ci_kind"] == "venn_abers" and interval.attrs["degenerate"] == 0
    np.testing.assert_allclose(interval.values, np.column_stack([1 - g0, g1]), atol=1e-12)
    np.testing.assert_allclose(shifted.predict_proba(Xt)[:, 1], g1 / (g0 + g1), atol=1e-12)


def test_a_shifted_venn_abers_calibrator_keeps_its_pair_shifted():
    rng = np.random.default_rng(3)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    va = bayescal.make_calibrator("venn_abers").fit(s, y)
    shifted = va.with_class_prior(0.2)
    from bayescal.base import shift_odds

    pair = va.predict_interval(s[:50])
    moved = shifted.predict_interval(s[:50])
    assert moved.attrs["ci_kind"] == "venn_abers"
    np.testing.assert_allclose(moved.values, shift_odds(pair.values, va.class_prior_, 0.2), atol=1e-12)
    p = shifted.predict_proba(s[:50])[:, 1]
    assert np.all((moved.values[:, 0] <= p + 1e-12) & (p <= moved.values[:, 1] + 1e-12))


@pytest.mark.parametrize("missing", [None, np.nan])
def test_missing_labels_are_named(missing):
    X, y = blobs(100, seed=17)
    labels = y.astype(object)
    labels[3] = missing
    with pytest.raises(ValueError, match=r"y has 1 missing value\(s\) .*first at index 3.*remove those samples"):
        CalibratedClassifier(method="platt", cv=2).fit(X, labels)
    floats = y.astype(float)
    floats[3] = np.nan
    with pytest.raises(ValueError, match=r"y has NaN .*first at index 3.*remove those samples"):
        CalibratedClassifier(method="platt", cv=2).fit(X, floats)


def test_refit_on_an_array_drops_the_feature_names():
    pd = pytest.importorskip("pandas")
    X, y = blobs(200, seed=18)
    model = CalibratedClassifier(LogisticRegression(), method="platt", cv=2).fit(
        pd.DataFrame(X, columns=list("abc")), y
    )
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    model.fit(X, y)
    assert not hasattr(model, "feature_names_in_") and model.n_features_in_ == 3


def test_cross_validation_splits_that_would_leak_or_miss_rows_are_refused_by_name():
    """Overlapping training and held-out parts calibrated on scores of rows the estimator was
    fitted on, silently; a ShuffleSplit with ensemble=False failed with scikit-learn's bare
    "cross_val_predict only works for partitions"."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import ShuffleSplit

    from bayescal.classifier import CalibratedClassifier

    X, y = make_classification(n_samples=300, n_features=5, random_state=0)
    rows = np.arange(300)
    overlapping = [(rows, rows[:150]), (rows, rows[150:])]
    with pytest.raises(ValueError, match=r"cv split 0 holds 150 row\(s\) in both its training and its held-out part"):
        CalibratedClassifier(LogisticRegression(), method="platt", cv=overlapping, ensemble=True).fit(X, y)
    with pytest.raises(ValueError, match=r"cv's held-out parts must cover every row exactly once with ensemble=False"):
        CalibratedClassifier(
            LogisticRegression(), method="platt", cv=ShuffleSplit(3, random_state=0), ensemble=False
        ).fit(X, y)
    fitted = CalibratedClassifier(
        LogisticRegression(), method="platt", cv=ShuffleSplit(3, random_state=0), ensemble=True
    )
    assert len(fitted.fit(X, y).calibrated_classifiers_) == 3
