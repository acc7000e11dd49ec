"""Quadratic, spline and temperature scaling and Venn-Abers, each against a reference.

References: scikit-learn's unpenalised ``LogisticRegression`` (quadratic), scikit-learn's
``CalibratedClassifierCV(method="temperature")`` (temperature), scipy's natural cubic
spline interpolant (the spline basis), and the ``venn-abers`` package (Venn-Abers).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.interpolate import CubicSpline
from scipy.special import expit, logit
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.isotonic import isotonic_regression
from sklearn.linear_model import LogisticRegression

from bayescal import metrics
from bayescal.baselines.quadratic import QuadraticScaling
from bayescal.baselines.spline import SplineCalibration, natural_cubic_basis, penalised_logistic
from bayescal.baselines.temperature import TemperatureScaling
from bayescal.baselines.venn_abers import VennAbers, venn_abers_tables


def beta_scores(n: int, seed: int, pi: float = 0.4):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < pi).astype(int)
    return np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n)), y


# ---- quadratic --------------------------------------------------------------------------


def test_quadratic_equals_unpenalised_logistic_regression_on_logit_and_square():
    s, y = beta_scores(3000, 0)
    s = s**1.7  # make the square term matter
    t = logit(s)
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10_000).fit(np.column_stack([t, t * t]), y)
    cal = QuadraticScaling().fit(s, y)
    np.testing.assert_allclose(cal.coef_, ref.coef_[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cal.intercept_, ref.intercept_[0], rtol=1e-5, atol=1e-6)
    grid = np.linspace(s.min(), s.max(), 50)
    tg = logit(grid)
    np.testing.assert_allclose(
        cal.predict_proba(grid)[:, 1], ref.predict_proba(np.column_stack([tg, tg * tg]))[:, 1], atol=1e-7
    )


def test_quadratic_recovers_a_quadratic_truth_and_clamps_outside_the_data():
    rng = np.random.default_rng(1)
    t = rng.normal(0, 1.5, 20_000)
    y = (rng.random(t.size) < expit(0.3 + 1.2 * t - 0.4 * t * t)).astype(int)
    cal = QuadraticScaling(score_kind="decision").fit(t, y)
    np.testing.assert_allclose([cal.intercept_, *cal.coef_], [0.3, 1.2, -0.4], atol=0.08)
    far = cal.predict_proba([t.max() + 10])[:, 1]
    np.testing.assert_allclose(far, cal.predict_proba([t.max()])[:, 1])


# ---- temperature ------------------------------------------------------------------------


@pytest.mark.parametrize("transform", ["shift 1e9", "scale 1e-13"])
def test_quadratic_map_does_not_depend_on_where_or_how_widely_the_scores_sit(transform):
    """Decision values 10^9 +- 1 lost every digit when the fit was expanded in t (c + a t + b t^2
    cancels), and a spread of 1e-13 was taken for one distinct score (a constant map)."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=4000)
    y = (rng.random(z.size) < expit(z - 0.5 * z * z + 0.3)).astype(int)
    move = (lambda v: v + 1e9) if transform == "shift 1e9" else (lambda v: v * 1e-13)
    q = np.array([-2.0, -1.0, 0.0, 1.0, 2.0])
    reference = QuadraticScaling(score_kind="decision").fit(z, y).predict_proba(q)[:, 1]
    moved = QuadraticScaling(score_kind="decision").fit(move(z), y).predict_proba(move(q))[:, 1]
    np.testing.assert_allclose(moved, reference, atol=1e-6)
    assert np.ptp(reference) > 0.3


@pytest.mark.parametrize("response", ["decision_function", "predict_proba"])
def test_temperature_matches_scikit_learn(response):
    X, y = _blobs()
    clf = LogisticRegression(C=100).fit(X[:1000], y[:1000])
    Xc, yc = X[1000:], y[1000:]
    if response == "decision_function":
        scores, kind = clf.decision_function(Xc), "decision"
    else:
        scores, kind = clf.predict_proba(Xc)[:, 1], "probability"
    ours = TemperatureScaling(score_kind=kind).fit(scores, yc)
    est = clf if response == "decision_function" else _ProbaOnly(clf)
    ref = CalibratedClassifierCV(FrozenEstimator(est), method="temperature").fit(Xc, yc)
    np.testing.assert_allclose(ours.predict_proba(scores)[:, 1], ref.predict_proba(Xc)[:, 1], atol=1e-6)
    assert ours.temperature_ > 1  # C=100 on overlapping blobs: over-confident, so softened


def _blobs():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    X = rng.normal(size=(2000, 2)) + 0.8 * y[:, None]
    X = np.column_stack([X, X[:, 0] ** 3 / 3])  # a distorted feature: the linear model is miscalibrated
    return X, y


class _ProbaOnly:
    """A fitted classifier that exposes predict_proba only (so scikit-learn uses it)."""

    _estimator_type = "classifier"

    def __init__(self, clf):
        self.clf = clf
        self.classes_ = clf.classes_

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        return self.clf.predict_proba(X)

    def predict(self, X):
        return self.clf.predict(X)

    def __sklearn_tags__(self):
        return self.clf.__sklearn_tags__()

    def get_params(self, deep=True):
        return {"clf": self.clf}


def test_temperature_keeps_the_threshold_and_is_constant_for_useless_scores():
    s, y = beta_scores(2000, 3)
    cal = TemperatureScaling().fit(s, y)
    np.testing.assert_allclose(cal.predict_proba([0.5])[:, 1], 0.5)
    rng = np.random.default_rng(4)
    anti = TemperatureScaling().fit(rng.random(500), (rng.random(500) < 0.5).astype(int) * 0 + (np.arange(500) % 2))
    assert np.isfinite(anti.coef_) and anti.coef_ >= 0


def test_temperature_ignores_rows_of_weight_zero():
    """Every weighted score at 0.5 and one other score of weight 0: the scale was taken over the
    weighted rows (0) but guarded over all of them, and the fit divided by zero."""
    s = np.r_[np.full(10, 0.5), 0.9]
    y = np.r_[np.tile([0, 1], 5), 1]
    cal = TemperatureScaling().fit(s, y, sample_weight=np.r_[np.ones(10), 0.0])
    np.testing.assert_array_equal(cal.predict_proba(s), TemperatureScaling().fit(s[:10], y[:10]).predict_proba(s))


# ---- spline -----------------------------------------------------------------------------


def test_natural_cubic_basis_spans_the_natural_spline_interpolant():
    knots = np.array([-2.0, -0.5, 0.3, 1.0, 2.5])
    rng = np.random.default_rng(0)
    values = rng.normal(size=knots.size)
    natural = CubicSpline(knots, values, bc_type="natural")
    x = np.linspace(-2.0, 2.5, 400)
    design = np.column_stack([np.ones_like(x), natural_cubic_basis(x, knots)])
    coef, *_ = np.linalg.lstsq(design, natural(x), rcond=None)
    np.testing.assert_allclose(design @ coef, natural(x), atol=1e-10)
    # linear beyond the boundary knots (zero second difference)
    outside = np.concatenate([np.linspace(-6, -2, 9), np.linspace(2.5, 7, 9)])
    basis = natural_cubic_basis(outside, knots)
    np.testing.assert_allclose(np.diff(basis[:9], 2, axis=0), 0, atol=1e-9)
    np.testing.assert_allclose(np.diff(basis[9:], 2, axis=0), 0, atol=1e-9)


def test_spline_fit_is_the_logistic_regression_on_its_basis_and_tracks_a_bent_truth():
    rng = np.random.default_rng(2)
    t = rng.normal(0, 2, 6000)
    truth = expit(1.5 * np.tanh(t))  # bends back towards 0.18 / 0.82: Platt cannot follow it
    y = (rng.random(t.size) < truth).astype(int)
    cal = SplineCalibration(score_kind="decision", random_state=0).fit(t, y)
    assert cal.C_ in cal.Cs and cal.knots_.size in cal.n_knots
    assert np.isfinite(cal.cv_scores_).all()
    grid = np.linspace(-4, 4, 81)
    err = np.abs(cal.predict_proba(grid)[:, 1] - expit(1.5 * np.tanh(grid))).max()
    from bayescal.baselines.platt import PlattScaling

    platt = np.abs(
        PlattScaling(score_kind="decision").fit(t, y).predict_proba(grid)[:, 1] - expit(1.5 * np.tanh(grid))
    ).max()
    assert err < 0.05 < platt
    # the refit is scikit-learn's LogisticRegression(C_) on the standardised basis, each column
    # centred and scaled over the scores clipped to the boundary knots
    mu, sd = cal.z_centre_scale_
    z = (t - mu) / sd
    B = natural_cubic_basis(z, cal.z_knots_)
    inside = natural_cubic_basis(np.clip(z, cal.z_knots_[0], cal.z_knots_[-1]), cal.z_knots_)
    D = (B - inside.mean(0)) / inside.std(0)
    ref = LogisticRegression(C=cal.C_, max_iter=1000, tol=1e-8).fit(D, y)
    np.testing.assert_allclose(cal.predict_proba(t[:100])[:, 1], ref.predict_proba(D[:100])[:, 1], atol=1e-6)


def test_spline_is_reproducible_from_random_state_and_small_data_falls_back():
    s, y = beta_scores(600, 5)
    a = SplineCalibration(random_state=3).fit(s, y).predict_proba(s)
    b = SplineCalibration(random_state=3).fit(s, y).predict_proba(s)
    np.testing.assert_array_equal(a, b)
    two_values = SplineCalibration().fit([0.2, 0.2, 0.8, 0.8, 0.2, 0.8], [0, 1, 0, 1, 0, 1])
    assert two_values.C_ == 1.0 and np.isnan(two_values.cv_scores_).all()
    np.testing.assert_allclose(two_values.predict_proba([0.2, 0.8])[:, 1], [1 / 3, 2 / 3], atol=0.05)
    for bad in ((0.0,), "abc", None, [[1.0, 2.0]], ()):
        with pytest.raises(ValueError, match="Cs=.* must be a sequence of positive numbers"):
            SplineCalibration(Cs=bad).fit(s, y)


@pytest.mark.parametrize("far", [1e4, 1e8, 1e50, -1e8])
def test_one_far_decision_value_of_the_class_the_map_points_to_leaves_the_map_alone(far):
    """The score is standardised by its median and robust spread and the basis columns by their
    spread between the boundary knots: one decision value far out, with the label the map's trend
    gives it, moved neither, and the penalty at the largest C forbade the slopes the rest needs
    (the map was flat at the base rate for a value of 1e8)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 600)
    t = rng.normal(2 * y - 1, 1)
    grid = np.linspace(-2, 2, 9)
    clean = SplineCalibration(score_kind="decision", random_state=0).fit(t, y).predict_proba(grid)
    i = np.flatnonzero(y == (far > 0))[0]
    t[i] = far
    est = SplineCalibration(score_kind="decision", random_state=0).fit(t, y)
    np.testing.assert_allclose(est.predict_proba(grid), clean, atol=0.01)
    assert est.predict_proba([far])[0, int(far > 0)] > 0.99


def test_spline_helpers_and_parameters_refuse_bad_values_by_name():
    t = np.linspace(-2, 2, 5)
    for knots in ([1.0, 0.0, -1.0], [0.0, 0.0, 1.0], [0.0], [0.0, np.nan, 1.0]):
        with pytest.raises(ValueError, match=r"knots=.* must be at least 2 finite, strictly increasing values"):
            natural_cubic_basis(t, knots)
    D, y, w = t[:, None], np.array([0, 0, 1, 0, 1]), np.ones(5)
    for C, match in ((-1.0, r"C=-1.0 must lie in \(0, inf\)"), (0.0, r"C=0.0 must lie in"), (np.inf, "C=inf must be")):
        with pytest.raises(ValueError, match=match):
            penalised_logistic(D, y, w, C)
    s, labels = beta_scores(100, 1)
    with pytest.raises(ValueError, match=r"^n_knots=2 must be an integer of at least 3\.$"):
        SplineCalibration(n_knots=2).fit(s, labels)


@pytest.mark.filterwarnings("error")
def test_a_rare_class_is_kept_in_the_cross_validation_sample():
    """30 000 rows, 3 positives: the 10 000-row cross-validation sample keeps them all (a plain
    random sample held 0 or 1 in 20 of 30 seeds, and every fold score was NaN), and its weights
    keep the classes' balance, so the penalty chosen is that of the full data's folds."""
    rng = np.random.default_rng(4)
    s = rng.uniform(0.01, 0.99, 30_000)
    y = np.zeros(s.size, dtype=int)
    y[rng.choice(s.size, 3, replace=False)] = 1
    cal = SplineCalibration(random_state=0).fit(s, y)
    assert np.isfinite(cal.cv_scores_).all()
    # the map is near the base rate 1e-4 (a bent map fitted on a sample without the positives
    # would not be), and the sample's weights hold the full data's class balance
    assert np.all(np.abs(cal.predict_proba(np.linspace(0.05, 0.95, 19))[:, 1] - 1e-4) < 5e-4)
    sub, rate = SplineCalibration._cv_rows(y, 3, np.random.default_rng(0))
    assert (y[sub] == 1).sum() == 3 and sub.size == pytest.approx(10_000, abs=5)
    np.testing.assert_allclose(np.bincount(y[sub], weights=1 / rate[y[sub]]), np.bincount(y), rtol=1e-12)


# ---- Venn-Abers -------------------------------------------------------------------------


def _slow_tables(t, y):
    """Definition: one isotonic regression per slot and label."""
    values = np.unique(t)
    groups = [y[t == v] for v in values]
    out = np.empty((2, values.size + 1))
    for i in range(values.size + 1):
        for label in (0, 1):
            yy = np.concatenate(
                [g.mean(keepdims=True) for g in groups[:i]] + [[label]] + [g.mean(keepdims=True) for g in groups[i:]]
            )
            ww = np.array([g.size for g in groups[:i]] + [1] + [g.size for g in groups[i:]], dtype=float)
            out[label, i] = isotonic_regression(yy, sample_weight=ww)[i]
    return values, out[0], out[1]


def test_venn_abers_tables_equal_the_definition():
    rng = np.random.default_rng(0)
    for _ in range(15):
        n = int(rng.integers(2, 120))
        y = rng.integers(0, 2, n)
        t = np.round(rng.normal(size=n) + y, int(rng.integers(0, 3)))
        _, p0, p1 = venn_abers_tables(t, y)
        _, q0, q1 = _slow_tables(t, y)
        np.testing.assert_allclose(p0, q0, atol=1e-12)
        np.testing.assert_allclose(p1, q1, atol=1e-12)
        assert np.all(p0 <= p1 + 1e-12)


def test_venn_abers_equals_the_venn_abers_package():
    va_pkg = pytest.importorskip(
        "venn_abers.venn_abers", reason="the venn-abers package (bench extra) is not installed"
    )
    for seed, digits in [(0, None), (1, 2)]:
        s, y = beta_scores(1500, seed)
        if digits is not None:
            s = np.round(s, digits)  # heavy ties
        test = np.concatenate([np.random.default_rng(seed + 10).random(400), s[:100]])  # ties with calibration too
        ref = va_pkg.VennAbers()
        ref.fit(np.column_stack([1 - s, s]), y)
        p_ref, p01_ref = ref.predict_proba(np.column_stack([1 - test, test]))
        cal = VennAbers().fit(s, y)
        np.testing.assert_allclose(cal.predict_proba(test)[:, 1], p_ref[:, 1], atol=1e-9, rtol=0)
        interval = cal.predict_interval(test)
        assert interval.dims == ("obs_id", "ci_bound")
        np.testing.assert_allclose(interval.values, p01_ref, atol=1e-9, rtol=0)


def test_cross_venn_abers_merges_fold_predictors_by_geometric_means():
    va_pkg = pytest.importorskip(
        "venn_abers.venn_abers", reason="the venn-abers package (bench extra) is not installed"
    )
    from sklearn.model_selection import StratifiedKFold

    s, y = beta_scores(1200, 7)
    test = np.linspace(0.01, 0.99, 99)
    cal = VennAbers(n_splits=4, random_state=0).fit(s, y)
    p0s, p1s = [], []
    for _, fold in StratifiedKFold(4, shuffle=True, random_state=0).split(s, y):
        ref = va_pkg.VennAbers()
        ref.fit(np.column_stack([1 - s[fold], s[fold]]), y[fold])
        _, p01 = ref.predict_proba(np.column_stack([1 - test, test]))
        p0s.append(p01[:, 0])
        p1s.append(p01[:, 1])
    p0s, p1s = np.array(p0s), np.array(p1s)
    g1 = np.exp(np.log(p1s).mean(0))
    g0 = np.exp(np.log1p(-p0s).mean(0))
    np.testing.assert_allclose(cal.predict_proba(test)[:, 1], g1 / (g0 + g1), atol=1e-9)
    np.testing.assert_allclose(cal.predict_interval(test).values, np.column_stack([1 - g0, g1]), atol=1e-9)
    with pytest.raises(ValueError, match="n_splits"):
        VennAbers(n_splits=1).fit(s, y)


def test_cross_venn_abers_does_not_depend_on_the_order_of_the_rows():
    """The folds were drawn over the rows as given, so the same rows reversed, with the same seed,
    gave predictions up to 0.065 apart."""
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int)
    grid = np.linspace(0, 1, 51)
    forward = VennAbers(n_splits=5, random_state=0).fit(s, y).predict_proba(grid)
    backward = VennAbers(n_splits=5, random_state=0).fit(s[::-1], y[::-1]).predict_proba(grid)
    np.testing.assert_array_equal(forward, backward)


def test_venn_abers_is_calibrated_on_fresh_data():
    s, y = beta_scores(3000, 11)
    cal = VennAbers().fit(s**3, y)  # a miscalibrated but monotone classifier
    s2, y2 = beta_scores(20_000, 12)
    p = cal.predict_proba(s2**3)[:, 1]
    assert metrics.ece(y2, p, n_bins=10, strategy="quantile") < 0.02
    assert metrics.ece(y2, s2**3, n_bins=10, strategy="quantile") > 0.1


def test_venn_abers_tables_leave_out_rows_of_weight_zero():
    from bayescal.baselines.venn_abers import venn_abers_tables

    t, y = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0, 1, 0, 1])
    held = venn_abers_tables(t, y, np.array([1.0, 0.0, 1.0, 1.0]))
    dropped = venn_abers_tables(t[[0, 2, 3]], y[[0, 2, 3]])
    for a, b in zip(held, dropped, strict=True):
        np.testing.assert_array_equal(a, b)


def test_platt_smooth_targets_must_be_a_bool():
    from bayescal.baselines.platt import PlattScaling

    with pytest.raises(ValueError, match="smooth_targets='yes' must be True or False"):
        PlattScaling(smooth_targets="yes").fit([0.1, 0.2, 0.8, 0.9], [0, 0, 1, 1])
