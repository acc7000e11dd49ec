"""Histogram binning, isotonic, beta and scaling-binning calibrators, and bayescal.datasets.

Known truths come from :func:`bayescal.datasets.simulate_scores`, whose calibration map is
exact; published numbers from the seed authors' simulated data (reference README).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit, logit
from sklearn.isotonic import IsotonicRegression
from sklearn.linear_model import LogisticRegression

from bayescal import metrics
from bayescal.baselines.beta import BetaCalibration, logistic_fit
from bayescal.baselines.histogram import HistogramBinning, equal_mass_bins
from bayescal.baselines.isotonic import IsotonicCalibrator
from bayescal.baselines.platt import PlattScaling
from bayescal.baselines.scaling_binning import ScalingBinning
from bayescal.datasets import TRUTHS, Mixture, ScoreTruth, make_naeini2014, simulate_scores, svm_scores

# ---- helpers ------------------------------------------------------------------------


def mean_abs_error(cal, truth: str, seed: int) -> float:
    """E|fitted map - true map| over fresh scores from the truth."""
    ev = simulate_scores(truth, 20_000, random_state=seed + 1000)
    return float(np.mean(np.abs(cal.predict_proba(ev.scores)[:, 1] - ev.true_map(ev.scores))))


def fitted_mae(make, truth: str, n: int, seeds=(0, 1, 2)) -> float:
    out = []
    for seed in seeds:
        sim = simulate_scores(truth, n, random_state=seed)
        out.append(mean_abs_error(make(n, seed).fit(sim.scores, sim.y), truth, seed))
    return float(np.mean(out))


def kind(truth: str) -> str:
    return TRUTHS[truth].score_kind


@pytest.fixture(scope="module")
def naeini_linear(reference_dir):
    data = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    train, test = data[data["split"] == "train"], data[data["split"] == "test"]
    s_train, s_test = svm_scores(train, test, kernel="linear")
    return s_train, train["y"].to_numpy(), s_test, test["y"].to_numpy()


# ---- accuracy against a known map: small and shrinking with N ----------------------

CONSISTENT = [
    # (id, factory(n, seed), truth, bound on the MAE at N = 32000)
    ("histogram-auto-quantile", lambda n, s: HistogramBinning(n_bins="auto"), "beta_skewed", 0.015),
    ("histogram-auto-quantile-U", lambda n, s: HistogramBinning(n_bins="auto"), "beta_bimodal", 0.025),
    ("histogram-auto-uniform", lambda n, s: HistogramBinning(n_bins="auto", strategy="uniform"), "beta_skewed", 0.015),
    (
        "histogram-decision",
        lambda n, s: HistogramBinning(n_bins="auto", score_kind="decision"),
        "gaussian_decision",
        0.015,
    ),
    ("isotonic-linear", lambda n, s: IsotonicCalibrator(), "beta_skewed", 0.012),
    ("isotonic-step", lambda n, s: IsotonicCalibrator(interpolation="step"), "rare", 0.005),
    ("isotonic-decision", lambda n, s: IsotonicCalibrator(score_kind="decision"), "gaussian_decision", 0.015),
    ("beta-abm", lambda n, s: BetaCalibration(), "beta_skewed", 0.006),
    ("beta-am", lambda n, s: BetaCalibration(parameters="am"), "rare", 0.002),
    (
        "beta-ab-decision",
        lambda n, s: BetaCalibration(parameters="ab", score_kind="decision"),
        "gaussian_decision",
        0.003,
    ),
    # the bins must multiply with N for the binning error to vanish
    ("scaling-binning", lambda n, s: ScalingBinning(n_bins=int(np.sqrt(n) / 4), random_state=s), "beta_skewed", 0.012),
    (
        "scaling-binning-decision",
        lambda n, s: ScalingBinning(n_bins=int(np.sqrt(n) / 4), random_state=s, score_kind="decision"),
        "gaussian_decision",
        0.012,
    ),
]


@pytest.mark.parametrize(("make", "truth", "bound"), [c[1:] for c in CONSISTENT], ids=[c[0] for c in CONSISTENT])
def test_error_against_known_map_is_small_and_shrinks(make, truth, bound):
    def build(n, s):
        cal = make(n, s)
        assert cal.score_kind == kind(truth)
        return cal

    small, large = fitted_mae(build, truth, 500), fitted_mae(build, truth, 32_000)
    assert large < bound
    assert large < 0.6 * small


def test_misspecified_models_keep_their_bias():
    # beta "ab" fixes the map's midpoint at 1/2, but pi = 0.4 moves the true midpoint; the
    # monotone calibrators cannot follow the U-shaped map of "beta_bimodal"
    ab = fitted_mae(lambda n, s: BetaCalibration(parameters="ab"), "beta_skewed", 32_000)
    iso = fitted_mae(lambda n, s: IsotonicCalibrator(), "beta_bimodal", 32_000)
    assert ab > 0.02
    assert iso > 0.15


# ---- published numbers on the Naeini et al. data (reference README) -----------------


def test_reference_simple_fits_on_linear_svm(naeini_linear):
    s_train, y_train, s_test, y_test = naeini_linear

    def test_ece(cal):
        return metrics.ece(y_test, cal.fit(s_train, y_train).predict_proba(s_test)[:, 1], strategy="papers")

    assert test_ece(PlattScaling()) == pytest.approx(0.281, abs=0.005)
    assert test_ece(IsotonicCalibrator()) == pytest.approx(0.326, abs=0.005)
    assert test_ece(HistogramBinning(n_bins=10)) == pytest.approx(0.070, abs=0.005)


def test_beta_gap_to_reference_is_the_monotonicity_constraint(naeini_linear):
    """The README's 0.041 is the unconstrained beta fit, whose a < 0 bends the map down
    again at high scores. Ours, like the authors' ``betacal`` package, refits without the
    ln p term and stays monotone: 0.264."""
    s_train, y_train, s_test, y_test = naeini_linear

    def features(s):
        return np.column_stack([np.log(s), -np.log1p(-s)])

    free = LogisticRegression(C=1e11, tol=1e-10, max_iter=10_000).fit(features(s_train), y_train)
    assert free.coef_[0, 0] < 0
    assert metrics.ece(y_test, free.predict_proba(features(s_test))[:, 1], strategy="papers") == pytest.approx(
        0.041, abs=0.005
    )

    cal = BetaCalibration().fit(s_train, y_train)
    assert cal.a_ == 0.0 and cal.b_ > 0
    assert metrics.ece(y_test, cal.predict_proba(s_test)[:, 1], strategy="papers") == pytest.approx(0.264, abs=0.005)


def _betacal_reference(s_train, y_train, s_test, parameters):
    """The authors' ``betacal`` algorithm (sklearn LogisticRegression, C=99999999999)."""

    def lr(X, fit_intercept=True):
        return LogisticRegression(C=99999999999, fit_intercept=fit_intercept, tol=1e-10, max_iter=10_000).fit(
            X, y_train
        )

    eps = np.finfo(float).eps
    clip = lambda s: np.clip(s, eps, 1 - eps)
    if parameters == "am":
        f = lambda s: logit(clip(s))[:, None]
        return lr(f(s_train)).predict_proba(f(s_test))[:, 1]
    if parameters == "ab":
        f = lambda s: np.log(2 * np.column_stack([clip(s), 1 - clip(s)]))
        return lr(f(s_train), fit_intercept=False).predict_proba(f(s_test))[:, 1]
    f = lambda s: np.column_stack([np.log(clip(s)), -np.log(1 - clip(s))])
    model = lr(f(s_train))
    if model.coef_[0, 0] < 0:
        return lr(f(s_train)[:, [1]]).predict_proba(f(s_test)[:, [1]])[:, 1]
    if model.coef_[0, 1] < 0:
        return lr(f(s_train)[:, [0]]).predict_proba(f(s_test)[:, [0]])[:, 1]
    return model.predict_proba(f(s_test))[:, 1]


@pytest.mark.parametrize(
    ("truth", "parameters"),
    [("beta_skewed", "abm"), ("beta_skewed", "am"), ("beta_skewed", "ab"), ("rare", "abm"), ("rare", "am")],
)
def test_beta_matches_authors_algorithm(parameters, truth):
    sim = simulate_scores(truth, 3000, random_state=5)
    grid = np.linspace(0.001, 0.999, 301)
    ours = BetaCalibration(parameters=parameters).fit(sim.scores, sim.y).predict_proba(grid)[:, 1]
    np.testing.assert_allclose(ours, _betacal_reference(sim.scores, sim.y, grid, parameters), atol=2e-5)


def test_beta_ab_is_kept_monotone_where_the_authors_package_is_not():
    # m = 1/2 is far from this truth's midpoint: the free "ab" fit wants b < 0, a map that
    # falls again near p = 1; the authors' package keeps it, bayescal refits with b = 0
    sim = simulate_scores("rare", 3000, random_state=5)
    grid = np.linspace(0.001, 0.999, 301)
    authors = _betacal_reference(sim.scores, sim.y, grid, "ab")
    assert np.any(np.diff(authors) < 0)
    cal = BetaCalibration(parameters="ab").fit(sim.scores, sim.y)
    assert cal.b_ == 0.0 and cal.a_ > 0
    assert np.all(np.diff(cal.predict_proba(grid)[:, 1]) >= 0)


def test_beta_refit_rule_matches_authors_on_naeini(naeini_linear):
    s_train, y_train, s_test, _ = naeini_linear
    ours = BetaCalibration().fit(s_train, y_train).predict_proba(s_test)[:, 1]
    np.testing.assert_allclose(ours, _betacal_reference(s_train, y_train, s_test, "abm"), atol=2e-5)


def test_beta_parameters_recover_the_generating_family():
    # Beta(2,5) vs Beta(5,2), pi = 0.4: logit P = 3 ln p - 3 ln(1-p) + ln(0.4/0.6), m = 0.4^(1/3)-ish
    sim = simulate_scores("beta_skewed", 200_000, random_state=3)
    cal = BetaCalibration().fit(sim.scores, sim.y)
    assert cal.a_ == pytest.approx(3.0, abs=0.15)
    assert cal.b_ == pytest.approx(3.0, abs=0.15)
    assert cal.c_ == pytest.approx(np.log(0.4 / 0.6), abs=0.15)
    true_m = expit(np.log(0.6 / 0.4) / 3.0)  # 3 logit(m) = -c
    assert cal.m_ == pytest.approx(true_m, abs=0.01)


@pytest.mark.parametrize("n", [3_000, 60_000])  # trust-region path, and warm-started Newton path
def test_logistic_fit_is_platt_without_smoothing(n):
    sim = simulate_scores("gaussian_decision", n, random_state=12)
    w = np.random.default_rng(0).uniform(0.5, 2.0, n)
    coef, intercept = logistic_fit(np.vstack([sim.scores, np.ones(n)]), sim.y.astype(float), w, intercept=True)
    platt = PlattScaling(score_kind="decision", smooth_targets=False).fit(sim.scores, sim.y, sample_weight=w)
    assert coef == pytest.approx(platt.coef_, abs=1e-4)
    assert intercept == pytest.approx(platt.intercept_, abs=1e-4)
    ref = LogisticRegression(C=1e12, tol=1e-12, max_iter=10_000).fit(sim.scores[:, None], sim.y, sample_weight=w)
    assert coef == pytest.approx(ref.coef_[0, 0], abs=1e-6)
    assert intercept == pytest.approx(ref.intercept_[0], abs=1e-6)


def test_beta_exact_zero_and_one_are_finite():
    s = np.array([0.0, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0, 1.0, 0.3, 0.7])
    y = np.array([0, 0, 0, 1, 0, 1, 1, 1, 1, 0])
    for parameters in ("abm", "am", "ab"):
        cal = BetaCalibration(parameters=parameters).fit(s, y)
        p = cal.predict_proba(np.array([0.0, 1e-300, 0.5, 1.0]))[:, 1]
        assert np.all(np.isfinite([cal.a_, cal.b_, cal.c_])) and np.all(np.isfinite(p))
        assert np.all(np.diff(p) >= 0)


@pytest.mark.parametrize(("parameters", "constant"), [("abm", 0.4), ("am", 0.4), ("ab", 0.5)])
def test_beta_on_backwards_scores_drops_every_slope(parameters, constant):
    sim = simulate_scores("beta_skewed", 5000, random_state=13)
    y = np.zeros(5000, dtype=int)
    y[np.argsort(sim.scores)[:2000]] = 1  # the 40 % lowest scores are the positives
    cal = BetaCalibration(parameters=parameters).fit(sim.scores, y)
    assert cal.a_ == 0.0 and cal.b_ == 0.0
    np.testing.assert_allclose(cal.predict_proba([0.0, 0.3, 0.9, 1.0])[:, 1], constant, atol=1e-9)


def test_beta_separable_data_stays_finite():
    s = np.linspace(0.01, 0.99, 40)
    y = (s > 0.5).astype(int)
    cal = BetaCalibration().fit(s, y)
    p = cal.predict_proba(s)[:, 1]
    assert np.all(np.isfinite(p))
    assert p[s < 0.4].max() < 0.01 and p[s > 0.6].min() > 0.99


# ---- histogram binning specifics ------------------------------------------------------


def test_histogram_ties_are_never_split():
    s = np.repeat([0.2, 0.5, 0.8], [300, 400, 300])
    y = np.concatenate([np.arange(300) < 60, np.arange(400) < 200, np.arange(300) < 240]).astype(int)
    cal = HistogramBinning(n_bins=10).fit(s, y)
    assert cal.n_bins_ == 3
    np.testing.assert_allclose(cal.bin_weights_, [300, 400, 300])
    np.testing.assert_allclose(cal.predict_proba([0.2, 0.5, 0.8])[:, 1], [0.2, 0.5, 0.8])


def test_histogram_equal_frequency_bins():
    rng = np.random.default_rng(0)
    s, y = rng.random(1003), rng.integers(0, 2, 1003)
    cal = HistogramBinning(n_bins=10).fit(s, y)
    assert cal.n_bins_ == 10
    assert set(cal.bin_weights_) <= {100.0, 101.0}
    # each bin predicts its fraction of positives, and every training score gets its bin's value
    order = np.argsort(s)
    bins = np.split(order, np.cumsum(cal.bin_weights_.astype(int))[:-1])
    np.testing.assert_allclose(cal.bin_values_, [y[b].mean() for b in bins])
    for k, members in enumerate(bins):
        np.testing.assert_array_equal(cal.predict_proba(s[members])[:, 1], cal.bin_values_[k])


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, 30), min_size=1, max_size=200), n_bins=st.integers(1, 25), weighted=st.booleans())
def test_equal_mass_bins_properties(values, n_bins, weighted):
    x = np.array(values, dtype=float) / 30  # small integer grid: many ties
    w = (np.arange(x.size) % 3 + 1.0) if weighted else np.ones(x.size)
    uniq, bin_of_uniq, inverse = equal_mass_bins(x, w, n_bins)
    np.testing.assert_array_equal(uniq[inverse], x)  # a bin is a set of distinct values: ties stay together
    assert bin_of_uniq[0] == 0 and np.all(np.diff(bin_of_uniq) >= 0) and np.all(np.diff(bin_of_uniq) <= 1)
    assert bin_of_uniq[-1] < n_bins
    mass = np.bincount(bin_of_uniq[inverse], weights=w)
    # a bin's mass exceeds W/B only by the tie block that straddles its upper edge
    block = np.bincount(inverse, weights=w)
    assert np.all(mass <= w.sum() / n_bins + block.max() + 1e-9)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 400), n_bins=st.integers(1, 30))
def test_equal_mass_bins_without_ties_are_balanced(n, n_bins):
    x = np.random.default_rng(n).permutation(n).astype(float)
    uniq, bin_of_uniq, inverse = equal_mass_bins(x, np.ones(n), n_bins)
    sizes = np.bincount(bin_of_uniq[inverse])
    assert sizes.size == min(n, n_bins)
    assert sizes.max() - sizes.min() <= 1


def test_histogram_uniform_edges_and_empty_bins():
    s = np.array([0.0, 0.05, 0.1, 0.15, 0.25, 0.7, 0.75, 0.9, 1.0])
    y = np.array([0, 0, 1, 1, 1, 0, 1, 1, 1])
    cal = HistogramBinning(n_bins=10, strategy="uniform").fit(s, y)
    # [0, .1) -> 0; [.1, .2) -> 1; [.2, .3) -> 1; [.7, .8) -> 1/2; [.9, 1] -> 1
    np.testing.assert_allclose(cal.bin_weights_, [2, 2, 1, 0, 0, 0, 0, 2, 0, 2])
    expected = [0, 1, 1, 1, 1, 0.5, 0.5, 0.5, 0.5, 1]  # empty bins copy the nearest filled centre
    np.testing.assert_allclose(cal.bin_values_, expected)
    # a score on an edge belongs to the upper bin; 1.0 to the last bin
    np.testing.assert_allclose(cal.predict_proba([0.0999999, 0.1, 0.8999, 0.9, 1.0])[:, 1], [0, 1, 0.5, 1, 1])


def test_histogram_auto_bins_use_total_weight():
    rng = np.random.default_rng(1)
    s, y = rng.random(1000), rng.integers(0, 2, 1000)
    assert HistogramBinning(n_bins="auto").fit(s, y).n_bins_ == 10
    assert HistogramBinning(n_bins="auto").fit(s, y, sample_weight=np.full(1000, 1.331)).n_bins_ == 11


def test_histogram_scores_the_prediction_cannot_tell_apart_share_a_bin():
    """0 and 1e-13 are one value to the prediction (clipped to PROB_EPS on the working scale):
    binned apart, score 0 was predicted 1.0, the bin of the positives at 1e-13."""
    s = np.r_[np.zeros(5), np.full(5, 1e-13), np.full(5, 0.4), np.full(5, 0.6)]
    y = np.r_[np.zeros(5), np.ones(5), [0, 0, 0, 1, 1], [1, 1, 0, 1, 1]]
    cal = HistogramBinning(n_bins=4).fit(s, y)
    np.testing.assert_array_equal(cal.predict_proba([0.0, 1e-13])[:, 1], [0.5, 0.5])


def test_histogram_bends_where_monotone_maps_cannot():
    sim = simulate_scores("beta_bimodal", 5000, random_state=0)
    cmap = HistogramBinning().fit(sim.scores, sim.y).calibration_map(201).values.ravel()
    assert not HistogramBinning.monotone
    assert cmap[0] > cmap[100] + 0.3 and cmap[-1] > cmap[100] + 0.3


# ---- isotonic specifics ---------------------------------------------------------------


@pytest.mark.parametrize("weighted", [False, True])
def test_isotonic_matches_scikit_learn_with_ties(weighted):
    rng = np.random.default_rng(2)
    s = np.round(rng.beta(2, 2, 2000), 2)  # about 100 distinct values: heavy ties
    y = (rng.random(2000) < s**2).astype(int)
    w = rng.uniform(0.1, 3.0, 2000) if weighted else None
    grid = np.linspace(-0.1, 1.1, 503).clip(0, 1)
    ours = IsotonicCalibrator().fit(s, y, sample_weight=w).predict_proba(grid)[:, 1]
    ref = IsotonicRegression(out_of_bounds="clip", y_min=0, y_max=1).fit(s, y, sample_weight=w).predict(grid)
    np.testing.assert_allclose(ours, ref, atol=1e-12)


def test_isotonic_step_and_constant_extrapolation():
    s = np.array([0.2, 0.2, 0.4, 0.6, 0.8, 0.8])
    y = np.array([0, 1, 0, 1, 1, 1])
    step = IsotonicCalibrator(interpolation="step").fit(s, y)
    # PAV: 0.2 -> 1/2 and 0.4 -> 0 violate, pooled to 1/3; then 1, 1
    np.testing.assert_allclose(
        step.predict_proba([0.0, 0.2, 0.35, 0.49, 0.51, 0.9, 1.0])[:, 1], [1 / 3, 1 / 3, 1 / 3, 1 / 3, 1, 1, 1]
    )
    linear = IsotonicCalibrator().fit(s, y)
    np.testing.assert_allclose(linear.predict_proba([0.0, 0.4, 0.5, 0.6, 1.0])[:, 1], [1 / 3, 1 / 3, 2 / 3, 1, 1])


# ---- scaling-binning specifics ---------------------------------------------------------


def test_scaling_binning_bins_average_the_platt_values():
    sim = simulate_scores("beta_skewed", 4000, random_state=4)
    cal = ScalingBinning(n_bins=10, random_state=0).fit(sim.scores, sim.y)
    assert cal.n_bins_ == 10
    p = cal.predict_proba(sim.scores)[:, 1]
    assert np.unique(p).size <= 10
    g = expit(cal.platt_coef_ * logit(sim.scores) + cal.platt_intercept_)
    # each output is the mean Platt value of a bin, so it lies in that bin's range of g
    for value in np.unique(p):
        members = g[p == value]
        assert members.min() - 1e-12 <= value <= members.max() + 1e-12
    # and the split is stratified: the Platt fit saw half of each class
    assert 0.3 < cal.platt_coef_ / 3.0 < 1.7  # the truth is logistic with slope 3 on the logit


def test_scaling_binning_follows_the_direction_of_its_platt_step():
    # monotone only as far as the Platt slope's sign allows, hence monotone = False
    assert not ScalingBinning.monotone
    grid = np.linspace(0, 1, 1001)
    for truth, seed in (("beta_skewed", 9), ("beta_bimodal", 9)):
        sim = simulate_scores(truth, 2000, random_state=seed)
        cal = ScalingBinning(random_state=0).fit(sim.scores, sim.y)
        steps = np.diff(cal.calibration_map(grid).values.ravel())
        assert np.all(np.sign(cal.platt_coef_) * steps >= -1e-12)
    # on the U-shaped truth the scaling step has no trend to follow and can come out decreasing
    assert cal.platt_coef_ < 0 and steps.min() < 0


def test_scaling_binning_split_is_reproducible_and_random():
    sim = simulate_scores("beta_skewed", 1000, random_state=6)
    a = ScalingBinning(random_state=11).fit(sim.scores, sim.y).predict_proba(sim.scores)
    b = ScalingBinning(random_state=11).fit(sim.scores, sim.y).predict_proba(sim.scores)
    c = ScalingBinning(random_state=12).fit(sim.scores, sim.y).predict_proba(sim.scores)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_scaling_binning_map_does_not_depend_on_a_common_offset_of_decision_values():
    """The scaling step is PlattScaling's estimate, on centred scores: decision values shifted by
    1e5 or 1e7 give the same map (an uncentred fit's ridge flattened it to 0.43-0.61, then to the
    base rate)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 2000)
    t = rng.normal(2 * y - 1, 1)
    grid = np.linspace(-3, 3, 61)
    base = ScalingBinning(random_state=0, score_kind="decision").fit(t, y)
    for offset in (1e5, 1e7):
        shifted = ScalingBinning(random_state=0, score_kind="decision").fit(t + offset, y)
        assert shifted.platt_coef_ == pytest.approx(base.platt_coef_, rel=1e-6)
        np.testing.assert_allclose(shifted.predict_proba(grid + offset), base.predict_proba(grid), atol=1e-9)


def test_scaling_binning_parameters_take_numpy_numbers():
    """A float32 split was refused with a message saying it was not between 0 and 1 (bad values:
    ``test_bad_parameters_are_named``)."""
    sim = simulate_scores("beta_skewed", 400, random_state=2)
    plain = ScalingBinning(n_bins=5, split=0.5, random_state=0).fit(sim.scores, sim.y).predict_proba(sim.scores)
    numpy = ScalingBinning(n_bins=np.int64(5), split=np.float32(0.5), random_state=0).fit(sim.scores, sim.y)
    np.testing.assert_array_equal(numpy.predict_proba(sim.scores), plain)


def test_scaling_binning_is_symmetric_in_the_labels():
    # same seed, classes swapped: the same split, Platt's sign flips, bins mirror
    sim = simulate_scores("beta_skewed", 1000, random_state=14)
    p = ScalingBinning(random_state=5).fit(sim.scores, sim.y).predict_proba(sim.scores)[:, 1]
    q = ScalingBinning(random_state=5).fit(sim.scores, 1 - sim.y).predict_proba(sim.scores)[:, 1]
    np.testing.assert_allclose(q, 1 - p, atol=1e-6)


def test_scaling_binning_weights():
    sim = simulate_scores("beta_skewed", 2000, random_state=7)
    w = np.random.default_rng(0).uniform(0.5, 2.0, 2000)
    base = ScalingBinning(random_state=3).fit(sim.scores, sim.y, sample_weight=w).predict_proba(sim.scores)
    scaled = ScalingBinning(random_state=3).fit(sim.scores, sim.y, sample_weight=7.5 * w).predict_proba(sim.scores)
    np.testing.assert_allclose(base, scaled, atol=1e-9)
    heavy_pos = ScalingBinning(random_state=3).fit(sim.scores, sim.y, sample_weight=np.where(sim.y == 1, 5.0, 1.0))
    assert heavy_pos.predict_proba([0.5])[0, 1] > base[np.argmin(np.abs(sim.scores - 0.5)), 1] + 0.1


def test_scaling_binning_splits_only_the_rows_of_positive_weight():
    """Rows of weight 0 are in neither part: two of five positives held out by weight 0 once
    took both positive places of the scaling part, whose Platt fit then saw one class and gave
    1e-15 everywhere."""
    s = np.array([0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.6, 0.7, 0.8, 0.9])
    y = np.array([0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1])
    w = np.r_[np.ones(10), 0.0, 0.0]
    for seed in range(40):
        cal = ScalingBinning(random_state=seed).fit(s, y, sample_weight=w)
        assert cal.platt_coef_ > 0, seed  # its scaling part holds both classes


# ---- properties shared by the four calibrators ---------------------------------------

ALL = {
    "histogram-quantile": lambda **kw: HistogramBinning(**kw),
    "histogram-uniform": lambda **kw: HistogramBinning(strategy="uniform", **kw),
    "histogram-auto": lambda **kw: HistogramBinning(n_bins="auto", **kw),
    "isotonic-linear": lambda **kw: IsotonicCalibrator(**kw),
    "isotonic-step": lambda **kw: IsotonicCalibrator(interpolation="step", **kw),
    "beta-abm": lambda **kw: BetaCalibration(**kw),
    "beta-am": lambda **kw: BetaCalibration(parameters="am", **kw),
    "beta-ab": lambda **kw: BetaCalibration(parameters="ab", **kw),
    "scaling-binning": lambda **kw: ScalingBinning(random_state=0, **kw),
}
EXACT_WEIGHTS = [k for k in ALL if not k.startswith("scaling")]  # a random row split cannot see repeats


@pytest.mark.parametrize("score_kind", ["probability", "decision"])
@pytest.mark.parametrize("key", EXACT_WEIGHTS)
def test_integer_weights_equal_repeated_rows(key, score_kind):
    rng = np.random.default_rng(8)
    sim = simulate_scores("beta_skewed", 300, random_state=8)
    s = sim.scores if score_kind == "probability" else logit(sim.scores)
    w = rng.integers(0, 4, s.size)  # zeros drop rows
    w[:2] = 1  # keep some of each class
    weighted = ALL[key](score_kind=score_kind).fit(s, sim.y, sample_weight=w)
    repeated = ALL[key](score_kind=score_kind).fit(np.repeat(s, w), np.repeat(sim.y, w))
    grid = np.quantile(s, np.linspace(0, 1, 97))
    atol = 1e-6 if key.startswith("beta") else 1e-12
    np.testing.assert_allclose(weighted.predict_proba(grid), repeated.predict_proba(grid), atol=atol)


MONOTONE = ["isotonic-linear", "isotonic-step", "beta-abm", "beta-am", "beta-ab"]


@pytest.mark.parametrize("truth", ["beta_bimodal", "beta_skewed"])
@pytest.mark.parametrize("key", MONOTONE)
def test_monotone_calibrators_give_non_decreasing_maps(key, truth):
    sim = simulate_scores(truth, 2000, random_state=9)
    cal = ALL[key]().fit(sim.scores, sim.y)
    assert cal.monotone
    cmap = cal.calibration_map(np.linspace(0, 1, 1001)).values.ravel()
    assert np.all(np.diff(cmap) >= -1e-12)


@pytest.mark.parametrize("key", ["beta-abm", "beta-ab", "beta-am", "isotonic-linear"])
def test_monotone_even_when_the_data_bend_backwards(key, naeini_linear):
    s_train, y_train, *_ = naeini_linear
    cmap = ALL[key]().fit(s_train, y_train).calibration_map(np.linspace(0, 1, 1001)).values.ravel()
    assert np.all(np.diff(cmap) >= -1e-12)


@pytest.mark.parametrize("key", list(ALL))
def test_deterministic_and_inputs_untouched(key):
    sim = simulate_scores("beta_skewed", 500, random_state=10)
    s, y = sim.scores.copy(), sim.y.copy()
    w = np.linspace(0.5, 1.5, 500)
    first = ALL[key]().fit(s, y, sample_weight=w).predict_proba(s)
    second = ALL[key]().fit(s, y, sample_weight=w).predict_proba(s)
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(s, sim.scores)
    np.testing.assert_array_equal(y, sim.y)
    np.testing.assert_array_equal(w, np.linspace(0.5, 1.5, 500))


@pytest.mark.parametrize("key", list(ALL))
def test_scores_outside_unit_interval_are_rejected(key):
    with pytest.raises(ValueError, match=r"scores has 1 value\(s\) outside \[0, 1\].*score_kind='decision'"):
        ALL[key]().fit([0.1, 0.2, 1.4, 0.5, 0.9, 0.3], [0, 1, 1, 0, 1, 0])
    with pytest.raises(ValueError, match="score_kind='logits' is not one of"):
        ALL[key](score_kind="logits").fit([0.1, 0.9, 0.5, 0.4], [0, 1, 1, 0])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: HistogramBinning(n_bins=0), r"n_bins=0 must be a positive integer or 'auto'"),
        (lambda: HistogramBinning(n_bins=2.5), r"n_bins=2.5 must be a positive integer or 'auto'"),
        (
            lambda: HistogramBinning(n_bins="many"),
            r"n_bins='many' is not understood: pass a positive integer or 'auto'",
        ),
        (lambda: HistogramBinning(strategy="kmeans"), r"strategy='kmeans' must be 'quantile' .* or 'uniform'"),
        (lambda: IsotonicCalibrator(interpolation="cubic"), r"interpolation='cubic' must be 'linear' or 'step'"),
        (lambda: BetaCalibration(parameters="abc"), r"parameters='abc' must be 'abm', 'am' or 'ab'"),
        (lambda: ScalingBinning(split=1.0), r"split=1.0 must lie in \(0, 1\)"),
        (lambda: ScalingBinning(split="half"), r"split='half' must be a real number"),
        (lambda: ScalingBinning(n_bins=0), r"n_bins=0 must be an integer of at least 1"),
        (lambda: ScalingBinning(n_bins=2.0), r"n_bins=2.0 must be an integer of at least 1"),
    ],
)
def test_bad_parameters_are_named(make, message):
    sim = simulate_scores("beta_skewed", 100, random_state=0)
    with pytest.raises(ValueError, match=message):
        make().fit(sim.scores, sim.y)


def test_scaling_binning_needs_two_of_each_class():
    with pytest.raises(ValueError, match="ScalingBinning needs at least 2 samples of each class"):
        ScalingBinning().fit([0.1, 0.2, 0.8, 0.9, 0.3], [0, 0, 1, 0, 0])


# ---- datasets -----------------------------------------------------------------------------


def test_make_naeini2014_layout_and_reproducibility():
    df = make_naeini2014(2000, random_state=0)
    assert list(df.columns) == ["split", "x1", "x2", "y"]
    assert (df["split"].iloc[:1000] == "train").all() and (df["split"].iloc[1000:] == "test").all()
    assert df.groupby(["split", "y"]).size().tolist() == [500, 500, 500, 500]
    r = np.hypot(df["x1"], df["x2"])
    assert r[df["y"] == 0].max() < 2 <= r[df["y"] == 1].min() and r.max() < 4
    pd.testing.assert_frame_equal(df, make_naeini2014(2000, random_state=0))
    assert not df.equals(make_naeini2014(2000, random_state=1))
    odd = make_naeini2014(7, random_state=0)
    assert odd["split"].tolist().count("train") == 3 and odd["y"].sum() == 4


def test_make_naeini2014_matches_the_authors_geometry(reference_dir):
    ref = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    ours = make_naeini2014(20_000, random_state=0)
    for label in (0, 1):
        a, b = ours[ours["y"] == label], ref[ref["y"] == label]
        # radius uniform (not area-uniform) and angle uniform, as in the authors' file
        assert stats.ks_2samp(np.hypot(a["x1"], a["x2"]), np.hypot(b["x1"], b["x2"])).pvalue > 0.01
        assert stats.ks_2samp(np.arctan2(a["x2"], a["x1"]), np.arctan2(b["x2"], b["x1"])).pvalue > 0.01


def test_svm_scores_reproduce_the_published_pattern_on_fresh_data():
    df = make_naeini2014(2000, random_state=3)
    train, test = df[df["split"] == "train"], df[df["split"] == "test"]
    (lin_tr, lin_te), (quad_tr, quad_te) = (svm_scores(train, test, kernel=k) for k in ("linear", "quadratic"))
    assert lin_tr.shape == (1000,) and lin_te.shape == (1000,)
    assert 0.35 < metrics.roc_auc(test["y"], lin_te) < 0.65  # near chance
    assert metrics.roc_auc(test["y"], quad_te) > 0.99
    with pytest.raises(ValueError, match="kernel='rbf' is not one of"):
        svm_scores(train, test, kernel="rbf")
    with pytest.raises(ValueError, match="train has no 'y' column"):
        svm_scores(train.drop(columns="y"), test)


@pytest.mark.parametrize("truth", sorted(TRUTHS))
def test_simulated_labels_follow_the_true_map(truth):
    sim = simulate_scores(truth, 200_000, random_state=0)
    assert sim.y.mean() == pytest.approx(TRUTHS[truth].pi, abs=0.005)
    # within each decile of the scores the positive fraction matches the mean true map
    edges = np.quantile(sim.scores, np.linspace(0, 1, 11))
    bins = np.clip(np.searchsorted(edges, sim.scores, side="right") - 1, 0, 9)
    p = sim.true_map(sim.scores)
    for b in range(10):
        m = bins == b
        se = np.sqrt(p[m].mean() * (1 - p[m].mean()) / m.sum())
        assert abs(sim.y[m].mean() - p[m].mean()) < 5 * se + 1e-4


def test_simulate_scores_custom_truth_and_errors():
    truth = ScoreTruth(stats.beta(2, 2), Mixture([stats.beta(8, 2), stats.uniform(0, 1)], [3, 1]), 0.25)
    sim = simulate_scores(truth, 1000, random_state=1)
    again = simulate_scores(truth, 1000, random_state=1)
    np.testing.assert_array_equal(sim.scores, again.scores)
    x = np.linspace(0, 1, 20_001)
    assert np.trapezoid(truth.f1.pdf(x), x) == pytest.approx(1.0, abs=1e-4)
    s = np.array([0.3, 0.9])
    f1 = 0.75 * stats.beta(8, 2).pdf(s) + 0.25
    np.testing.assert_allclose(sim.true_map(s), 0.25 * f1 / (0.25 * f1 + 0.75 * stats.beta(2, 2).pdf(s)))
    with pytest.raises(ValueError, match="truth='nope' is not a preset"):
        simulate_scores("nope")
    with pytest.raises(ValueError, match="n=0 must be an integer of at least 1"):
        simulate_scores("rare", 0)
    with pytest.raises(ValueError, match="outside \\[0, 1\\]"):
        simulate_scores(ScoreTruth(stats.norm(), stats.norm(1), 0.5), 100, random_state=0)
    with pytest.raises(ValueError, match="n_samples=3 must be an integer of at least 4"):
        make_naeini2014(3)


def test_beta_calibration_on_decision_values_does_not_depend_on_a_common_offset():
    """``parameters="am"`` is a logistic map of the decision value with an intercept, so shifting
    every value by a constant must not change it; uncentred, the fit's tiny ridge flattened the
    map at an offset of 1e6 ([0.371, 0.373, 0.375] for [0.027, 0.302, 0.903])."""
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.4).astype(int)
    d = rng.normal(size=1000) + 1.5 * y
    grid = np.quantile(d, [0.05, 0.5, 0.95])
    base = BetaCalibration(parameters="am", score_kind="decision").fit(d, y)
    for offset in (1e4, 1e6):
        shifted = BetaCalibration(parameters="am", score_kind="decision").fit(d + offset, y)
        np.testing.assert_allclose(shifted.predict_proba(grid + offset), base.predict_proba(grid), atol=1e-6)


def test_isotonic_treats_probabilities_the_working_scale_cannot_tell_apart_as_ties():
    """Scores within 1e-12 of 0 or 1 are read at one point by prediction: as separate knots the
    knot at 0 (value 0) could never be reached (predict_proba gave 0.5 at both 0 and 5e-13)."""
    s = np.array([0.0, 5e-13, 0.3, 0.4, 0.6, 0.7, 1 - 5e-13, 1.0])
    y = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    cal = IsotonicCalibrator().fit(s, y)
    p = cal.predict_proba(s)[:, 1]
    assert p[0] == p[1] and p[-2] == p[-1]
    assert np.all(np.diff(cal.knots_) > 0) and cal.knots_.size == np.unique(cal.knots_).size


def test_isotonic_interpolation_changed_after_the_fit_is_refused_by_name():
    rng = np.random.default_rng(0)
    s = rng.random(300)
    y = (rng.random(300) < s).astype(int)
    cal = IsotonicCalibrator().fit(s, y).set_params(interpolation="step")
    with pytest.raises(ValueError, match="interpolation='step' was set after this IsotonicCalibrator was fitted"):
        cal.predict_proba(s)
