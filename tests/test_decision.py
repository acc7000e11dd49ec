"""Decisions read off calibration maps (Cohen & Goldszmidt 2004)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import bayescal
from bayescal import decision, metrics


def two_clusters(n: int, seed: int):
    """Cohen & Goldszmidt's Fig. 2 setting: class 1 in two clusters on either side of class 0."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    side = rng.random(n) < 0.7
    x1 = np.where(y == 0, rng.normal(0, 1, n), np.where(side, rng.normal(3.5, 1, n), rng.normal(-3.5, 1, n)))
    x2 = rng.normal(0, 1, n)
    return np.c_[x1, x2], y


@pytest.fixture(scope="module")
def fitted():
    X_fit, y_fit = two_clusters(2000, 0)
    X_cal, y_cal = two_clusters(4000, 1)
    X_test, y_test = two_clusters(4000, 2)
    lr = LogisticRegression().fit(X_fit, y_fit)
    s_cal, s_test = lr.predict_proba(X_cal)[:, 1], lr.predict_proba(X_test)[:, 1]
    cal = bayescal.make_calibrator("kde").fit(s_cal, y_cal)
    return cal, s_test, y_test


def test_two_thresholds_cut_the_error(fitted):
    cal, s_test, y_test = fitted
    regions = decision.decision_regions(cal)
    assert regions.cutoff == 0.5
    assert regions.thresholds.size == 2, regions.thresholds
    assert len(regions.intervals) == 2  # predict 1 below the first and above the second threshold
    err_single = decision.realized_cost(y_test, (s_test > 0.5).astype(int))
    err_two = decision.realized_cost(y_test, regions.predict(s_test))
    assert err_two <= 0.7 * err_single, (err_single, err_two)
    # the rule is the calibrated probability thresholded at the cut-off (up to the grid's resolution)
    agree = regions.predict(s_test) == (cal.predict_proba(s_test)[:, 1] > 0.5)
    assert agree.mean() > 0.995


def test_cutoff_of_costs_near_the_largest_float():
    assert decision.cost_cutoff(cost_fp=1e308, cost_fn=1e308) == 0.5
    assert decision.cost_cutoff(cost_fp=1e308, cost_fn=3e307) == pytest.approx(1 / 1.3)
    assert decision.cost_cutoff(cost_fp=0.0, cost_fn=2.0) == 0.0


def test_costs_move_the_cutoff(fitted):
    cal, s_test, y_test = fitted
    cheap_fp = decision.decision_regions(cal, cost_fp=1, cost_fn=9)
    assert cheap_fp.cutoff == pytest.approx(0.1)
    assert cheap_fp.predict(s_test).mean() > decision.decision_regions(cal).predict(s_test).mean()
    with pytest.raises(ValueError, match="cost_fp"):
        decision.decision_regions(cal, cost_fp=-1)


def test_expected_cost_of_a_calibrated_rule_matches_the_realized_cost(fitted):
    cal, s_test, y_test = fitted
    rule = decision.decision_regions(cal).predict(s_test)
    exp = decision.expected_cost(cal, s_test, rule)
    real = decision.realized_cost(y_test, rule)
    assert float(exp["mean"]) == pytest.approx(real, abs=0.02)
    assert exp["ci"].sel(ci_bound="lower") <= exp["ci"].sel(ci_bound="upper")
    # the default rule maximises expected profit, so it is at least as good as the 0.5 score rule
    best = decision.expected_cost(cal, s_test)
    naive = decision.expected_cost(cal, s_test, (s_test > 0.5).astype(int))
    assert float(best["mean"]) <= float(naive["mean"]) + 1e-12
    free = decision.expected_cost(cal, s_test, cost_fp=0.0, cost_fn=1.0)  # never predicting 0 costs nothing
    assert np.all(np.signbit(free["cost"].values) == False) and float(free["mean"]) == 0.0  # noqa: E712


def test_the_rule_beyond_the_fitted_scores_follows_the_map_at_its_nearest_end():
    """Scores above the highest fitted one (here up to 1) are decided as that one is, as the
    calibrator's own predict does; an unsorted grid gives the same rule as a sorted one."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    p = np.clip(0.15 + 0.7 * y + rng.normal(0, 0.1, 500), 0.02, 0.95)
    cal = bayescal.make_calibrator("platt").fit(p, y)
    beyond = np.array([0.0, 0.01, 0.97, 0.99, 1.0])
    regions = decision.decision_regions(cal)
    np.testing.assert_array_equal(regions.predict(beyond), cal.predict(beyond))
    grid = np.linspace(0.02, 0.95, 301)
    shuffled = decision.decision_regions(cal, grid=rng.permutation(grid))
    assert shuffled.intervals == decision.decision_regions(cal, grid=grid).intervals
    np.testing.assert_array_equal(shuffled.predict(beyond), cal.predict(beyond))


def test_the_roc_from_the_map_starts_at_one_one_for_scores_of_any_magnitude():
    """The lowest threshold lies below every score also where 1e-12 is below the scores' spacing."""
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 400)
    d = rng.normal(size=400) + 1.5 * (2 * y - 1)
    cal = bayescal.make_calibrator("platt", score_kind="decision").fit(d * 1e5 + 1e6, y)
    roc = decision.roc_from_map(cal, d * 1e5 + 1e6)
    assert roc["tpr"].values[0, 0, 0] == 1.0 and roc["fpr"].values[0, 0, 0] == 1.0


def test_quantities_per_posterior_draw_carry_chain_and_draw_coordinates(fitted):
    """As predict_posterior's draws do (ArviZ's convention), so they align with them."""
    cal, s_test, _ = fitted
    for draws in (
        decision.expected_cost(cal, s_test)["cost"],
        decision.roc_from_map(cal, s_test)["auc"],
        decision.decision_regions(cal).n_crossings,
    ):
        assert draws.dims == ("chain", "draw") and {"chain", "draw"} <= set(draws.coords)
        np.testing.assert_array_equal(draws.coords["draw"].values, np.arange(draws.sizes["draw"]))


def test_roc_from_map_matches_the_empirical_roc_for_a_calibrated_map():
    rng = np.random.default_rng(5)
    s = rng.random(20000)
    y = (rng.random(20000) < s).astype(int)  # the identity map is the truth
    cal = bayescal.make_calibrator("isotonic").fit(s, y)
    roc = decision.roc_from_map(cal, s)
    assert roc["tpr"].dims == ("chain", "draw", "threshold")
    assert float(roc["auc"].mean()) == pytest.approx(metrics.roc_auc(y, s), abs=0.01)
    assert np.all(np.diff(roc["tpr"].values[0, 0]) <= 1e-12)  # thresholds increase, rates fall


def test_bayes_error_posterior_for_a_point_estimate_is_the_metric():
    rng = np.random.default_rng(6)
    s = rng.random(5000)
    y = (rng.random(5000) < s).astype(int)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    post = decision.bayes_error_posterior(cal, s)
    point = metrics.bayes_error_bounds(y, cal.predict_proba(s)[:, 1])
    assert float(post["refinement_mean"]) == pytest.approx(point.refinement)
    assert float(post["upper_mean"]) == pytest.approx(point.upper)


def test_plugs_into_scikit_learn_threshold_tools(fitted):
    from sklearn.model_selection import FixedThresholdClassifier

    cal, s_test, _ = fitted
    clf = FixedThresholdClassifier(cal, threshold=0.3, response_method="predict_proba").fit(
        s_test.reshape(-1, 1), (s_test > 0.5).astype(int)
    )
    np.testing.assert_array_equal(
        clf.predict(s_test.reshape(-1, 1)), (clf.estimator_.predict_proba(s_test)[:, 1] >= 0.3).astype(int)
    )
