"""The exact near-isotonic path and the ENIR calibrator built on it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from _strategies import score_rows
from hypothesis import assume, given, settings
from scipy.special import expit, xlogy
from sklearn.isotonic import IsotonicRegression

import bayescal
from bayescal import metrics
from bayescal.baselines.enir import ENIR
from bayescal.baselines.neariso import neariso_path


# ---- the path ---------------------------------------------------------------------------------
def test_path_reproduces_the_published_neariso_output(reference_dir):
    read = lambda name: np.loadtxt(reference_dir / f"neariso_path_{name}.csv", delimiter=",")
    y, z = read("y"), read("z")
    assert np.all(np.diff(y) > 0)  # sorted distinct scores: the labels are fitted in score order
    path = neariso_path(z)
    np.testing.assert_allclose(path.lambdas, read("lambda"), rtol=0, atol=1e-6)
    np.testing.assert_allclose(path.beta, read("beta"), rtol=0, atol=1e-6)
    np.testing.assert_allclose(path.df, read("df"), rtol=0, atol=1e-6)


def assert_kkt(z, w, beta, lam, tol=1e-9):
    """Optimality of 1/2 sum w (z - b)^2 + lam sum (b_i - b_{i+1})_+ at ``beta``.

    Stationarity gives cumsum(w (z - beta))_k = lam * g_k with g_k a subgradient of (.)_+ at
    beta_k - beta_{k+1}: 1 where the fit decreases, 0 where it increases, in [0, 1] where flat;
    and the residuals sum to zero.
    """
    c = np.cumsum(w * (z - beta))
    assert abs(c[-1]) < tol
    c = c[:-1]
    diff = beta[:-1] - beta[1:]
    down, up, flat = diff > tol, diff < -tol, np.abs(diff) <= tol
    np.testing.assert_allclose(c[down], lam, atol=tol)
    np.testing.assert_allclose(c[up], 0.0, atol=tol)
    assert np.all(c[flat] >= -tol) and np.all(c[flat] <= lam + tol)


@pytest.mark.parametrize("seed", range(4))
def test_path_is_optimal_at_any_penalty(seed):
    rng = np.random.default_rng(seed)
    n = 60
    z = (rng.random(n) < np.linspace(0.1, 0.9, n)).astype(float)
    z[::7] = rng.random(len(z[::7]))  # some non-binary responses (mean labels of ties)
    w = rng.integers(1, 5, n).astype(float)
    path = neariso_path(z, w)
    assert np.all(np.diff(path.lambdas) > 0)
    lams = np.concatenate([path.lambdas, 0.5 * (path.lambdas[1:] + path.lambdas[:-1]), [2 * path.lambdas[-1] + 1]])
    for lam in lams:
        assert_kkt(z, w, path.fitted(lam), lam)


@pytest.mark.parametrize("scale", [1e-12, 1e12])
def test_the_path_does_not_depend_on_the_units_of_weights_and_responses(scale):
    """Weights (or responses) c times larger give the path with breakpoints c times larger and
    the same fits (weights near 1e-12 once merged every breakpoint into lambda = 0)."""
    rng = np.random.default_rng(7)
    z = (rng.random(80) < np.linspace(0.1, 0.9, 80)).astype(float)
    w = rng.integers(1, 5, 80).astype(float)
    base = neariso_path(z, w)
    for zc, wc, fit_factor in ((z, w * scale, 1.0), (z * scale, w, scale)):
        path = neariso_path(zc, wc)
        np.testing.assert_allclose(path.lambdas, base.lambdas * scale, rtol=1e-9)
        for lam in base.lambdas:
            np.testing.assert_allclose(path.fitted(lam * scale), base.fitted(lam) * fit_factor, rtol=1e-9)


def test_path_ends_at_the_weighted_isotonic_regression(rng):
    z = (rng.random(500) < np.linspace(0, 1, 500)).astype(float)
    w = rng.random(500) + 0.5
    path = neariso_path(z, w)
    iso = IsotonicRegression().fit_transform(np.arange(500), z, sample_weight=w)
    np.testing.assert_allclose(path.fitted(path.lambdas[-1]), iso, atol=1e-12)
    np.testing.assert_allclose(path.fitted(0.0), z)
    # groups only merge: the number of distinct boundaries alive never increases along the path
    alive = [(path.merge_lambda > lam).sum() for lam in path.lambdas]
    assert np.all(np.diff(alive) < 0)


def test_path_input_errors():
    with pytest.raises(ValueError, match="z is empty"):
        neariso_path([])
    with pytest.raises(ValueError, match="one weight per response"):
        neariso_path([0, 1], [1.0])
    with pytest.raises(ValueError, match="w must be positive"):
        neariso_path([0, 1], [1.0, 0.0])
    with pytest.raises(ValueError, match="finite"):
        neariso_path([0, np.nan])
    with pytest.raises(ValueError, match="non-negative"):
        neariso_path([1, 0]).fitted(-1.0)


# ---- the calibrator ---------------------------------------------------------------------------
@pytest.fixture(scope="module")
def quadratic_svm(reference_dir):
    d = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    return tr.score.to_numpy(), tr.label.to_numpy(), te.score.to_numpy(), te.label.to_numpy()


def test_calibrates_the_reference_svm_scores(quadratic_svm, reference_dir):
    s_tr, y_tr, s_te, y_te = quadratic_svm
    p = ENIR().fit(s_tr, y_tr).predict_proba(s_te)[:, 1]
    # uncalibrated: ECE 0.0495, RMSE 0.1263; BBQ (authors): ECE 0.0090, RMSE 0.0716
    assert metrics.ece(y_te, p, strategy="papers") < 0.01
    assert metrics.rmse(y_te, p) < 0.075
    assert metrics.roc_auc(y_te, p) > 0.999

    from sklearn.svm import SVC

    d = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    tr, te = d[d.split == "train"], d[d.split == "test"]
    svm = SVC(kernel="linear").fit(tr[["x1", "x2"]].to_numpy(), tr.y.to_numpy())
    score = lambda frame: expit(svm.decision_function(frame[["x1", "x2"]].to_numpy()))
    p = ENIR().fit(score(tr), tr.y.to_numpy()).predict_proba(score(te))[:, 1]
    assert metrics.ece(te.y.to_numpy(), p, strategy="papers") <= 0.06  # uncalibrated 0.268
    assert metrics.roc_auc(te.y.to_numpy(), p) >= 0.83  # uncalibrated 0.53


def test_models_scores_and_weights(quadratic_svm):
    s_tr, y_tr, _, _ = quadratic_svm
    est = ENIR().fit(s_tr, y_tr)
    path = neariso_path(y_tr[np.argsort(s_tr)].astype(float))
    # every breakpoint but lambda = 0 is a member (the path has fewer than 100)
    np.testing.assert_array_equal(est.lambdas_, path.lambdas[1:])
    z = y_tr[np.argsort(s_tr)]
    for lam, bic, df in zip(est.lambdas_, est.bic_, est.df_):
        fit = np.clip(path.fitted(lam), 0, 1)
        loglik = np.sum(xlogy(z, fit) + xlogy(1 - z, 1 - fit))
        assert df == 1 + np.count_nonzero(np.diff(fit))
        assert bic == pytest.approx(-2 * loglik + df * (np.log(len(z)) + np.log(2 * np.pi)))
    want = np.exp(-(est.bic_ - est.bic_.min()) / 2)
    np.testing.assert_allclose(est.weights_, want / want.sum())
    fits = np.column_stack([np.clip(path.fitted(lam), 0, 1) for lam in est.lambdas_])
    s_sorted = np.sort(s_tr)
    np.testing.assert_allclose(est.predict_proba(s_sorted)[:, 1], fits @ est.weights_, atol=1e-12)
    best = ENIR(selection="best").fit(s_tr, y_tr)
    np.testing.assert_allclose(best.predict_proba(s_sorted)[:, 1], fits[:, np.argmin(est.bic_)], atol=1e-12)


def test_thinning_keeps_both_ends(rng):
    s = rng.random(3000)
    y = (rng.random(3000) < s).astype(int)
    full = ENIR(max_models=10_000).fit(s, y)
    thin = ENIR(max_models=7).fit(s, y)
    assert len(full.lambdas_) > 7 and len(thin.lambdas_) <= 7
    assert thin.lambdas_[0] == full.lambdas_[0] and thin.lambdas_[-1] == full.lambdas_[-1]
    assert set(thin.lambdas_) <= set(full.lambdas_)


def test_linear_interpolation_between_training_scores():
    s = np.array([0.1, 0.2, 0.2, 0.4, 0.6, 0.8, 0.9])
    y = np.array([0, 1, 0, 0, 1, 1, 1])
    est = ENIR().fit(s, y)
    u = np.unique(s)  # ties collapsed
    assert set(est.knots_) <= set(u) and est.knots_[0] == u[0] and est.knots_[-1] == u[-1]
    v = est.predict_proba(u)[:, 1]  # the curve at the training scores
    p = est.predict_proba(np.array([0.0, 0.3, 0.5, 0.85, 1.0]))[:, 1]
    np.testing.assert_allclose(p, [v[0], (v[1] + v[2]) / 2, (v[2] + v[3]) / 2, (v[4] + v[5]) / 2, v[5]], atol=1e-12)
    # the ensemble at the training scores is the weighted mean of the clipped member fits
    z = np.array([0, 0.5, 0, 1, 1, 1])
    path = neariso_path(z, [1, 2, 1, 1, 1, 1])
    fits = np.column_stack([np.clip(path.fitted(lam), 0, 1) for lam in est.lambdas_])
    np.testing.assert_allclose(v, fits @ est.weights_, atol=1e-12)


def test_ties_and_integer_weights_equal_repeated_rows(rng):
    s = np.round(rng.random(400), 2)
    y = (rng.random(400) < s).astype(int)
    w = rng.integers(0, 4, 400)
    weighted = ENIR().fit(s, y, sample_weight=w)
    repeated = ENIR().fit(np.repeat(s, w), np.repeat(y, w))
    grid = np.linspace(0, 1, 101)
    np.testing.assert_allclose(weighted.predict_proba(grid), repeated.predict_proba(grid), atol=1e-12)
    np.testing.assert_allclose(weighted.bic_, repeated.bic_, rtol=1e-12)


def test_summary_input(rng):
    s = rng.random(2000)
    y = (rng.random(2000) < s).astype(int)
    summary = bayescal.ScoreSummary.from_arrays(s, y, n_bins=64)
    p = ENIR().fit(summary).predict_proba(s)[:, 1]
    assert metrics.ece(y, p) < 0.05


def test_decision_scores_interpolate_on_the_decision_scale(rng):
    d = rng.normal(size=300)
    y = (rng.random(300) < expit(2 * d)).astype(int)
    est = ENIR(score_kind="decision").fit(d, y)
    assert set(est.knots_) <= set(d)
    x = np.array([-0.3, 0.1, 0.7])
    np.testing.assert_allclose(est.predict_proba(x)[:, 1], np.interp(x, est.knots_, est.values_))


def test_deterministic_bounded_and_inputs_untouched(rng):
    s = rng.random(500)
    y = (rng.random(500) < s**2).astype(int)
    s0, y0 = s.copy(), y.copy()
    a = ENIR().fit(s, y).predict_proba(s)
    np.testing.assert_array_equal(a, ENIR().fit(s, y).predict_proba(s))
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)
    assert np.all(np.isfinite(a)) and a.min() >= 0 and a.max() <= 1
    assert ENIR.monotone is False


def test_all_scores_equal_give_the_weighted_base_rate():
    est = ENIR().fit(np.full(5, 0.3), [1, 0, 0, 1, 0], sample_weight=[1, 1, 1, 3, 2])
    np.testing.assert_allclose(est.predict_proba([0.0, 0.3, 1.0])[:, 1], 4 / 8)


def test_already_isotonic_data_gives_one_model():
    est = ENIR().fit([0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1])
    assert est.lambdas_.tolist() == [0.0]
    np.testing.assert_allclose(est.predict_proba([0.1, 0.25, 0.4])[:, 1], [0.0, 0.5, 1.0])


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"selection": "mean"}, "selection='mean' must be one of"),
        ({"max_models": 0}, "max_models=0 must be an integer of at least 1"),
        ({"max_models": True}, "max_models=True must be an integer of at least 1"),  # was taken as 1
    ],
)
def test_bad_parameters(params, match):
    with pytest.raises(ValueError, match=match):
        ENIR(**params).fit([0.1, 0.4, 0.6, 0.9], [0, 1, 0, 1])


def test_bad_input_goes_through_the_base():
    with pytest.raises(ValueError, match="scores"):
        ENIR().fit([0.1, np.inf, 0.5], [0, 1, 1])
    with pytest.raises(ValueError, match="class"):
        ENIR().fit([0.1, 0.2, 0.5], [0, 0, 0])
    with pytest.raises(ValueError, match="sample_weight"):
        ENIR().fit([0.1, 0.2, 0.5], [0, 1, 1], sample_weight=[1, -1, 1])


@settings(max_examples=40, deadline=None)
@given(score_rows)
def test_any_valid_data_gives_probabilities(rows):
    s, y = (np.array(v) for v in zip(*rows))
    assume(0 < y.sum() < y.size)
    est = ENIR().fit(s, y)
    p = est.predict_proba(np.concatenate([np.linspace(0, 1, 21), s]))[:, 1]
    assert np.all(np.isfinite(p)) and p.min() >= 0 and p.max() <= 1
    np.testing.assert_allclose(est.weights_.sum(), 1.0)
    assert np.all(np.isfinite(est.bic_)) and np.all(np.diff(est.lambdas_) > 0)


def test_scores_the_prediction_cannot_tell_apart_are_one_knot():
    """Scores within PROB_EPS of 0 are one value to the prediction (the working scale clips
    them): fitted as two knots, score 0 was predicted 0.7 although its fitted value was 0."""
    from bayescal.baselines.enir import ENIR

    s = np.r_[np.zeros(5), np.full(5, 1e-13), np.full(5, 0.4), np.full(5, 0.6)]
    y = np.r_[np.zeros(5), np.ones(5), [0, 0, 0, 1, 1], [1, 1, 0, 1, 1]]
    cal = ENIR().fit(s, y)
    p = cal.predict_proba(np.array([0.0, 1e-13, 1e-12]))[:, 1]
    assert p[0] == p[1] == p[2]
    assert cal.knots_.size == 3 and cal.knots_[0] == 1e-12
    np.testing.assert_allclose(cal.predict_proba(cal.knots_)[:, 1], cal.values_, atol=1e-9)
