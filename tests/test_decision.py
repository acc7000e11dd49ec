"""Decisions read off calibration maps (Cohen & Goldszmidt 2004)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression

import bayescal
from bayescal import decision, diagnostics, metrics


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


def test_the_rule_beyond_the_grid_follows_the_calibrators_own_map():
    """Beyond the fitted scores a parametric map keeps rising: with c* = 0.7 and a Platt map below
    it on the whole fitted range [0.1, 0.9], scores near 1 lie above it and the rule predicts 1
    there, as the calibrator's own predict does (it was frozen at the grid's end, predicting 0
    everywhere at twice the optimal expected cost); an unsorted grid gives the same rule."""
    rng = np.random.default_rng(0)
    s = rng.uniform(0.1, 0.9, 3000)
    y = (rng.random(3000) < 0.3 + 0.4 * s).astype(int)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    regions = decision.decision_regions(cal, cost_fp=7, cost_fn=3)
    assert regions.cutoff == 0.7 and regions.intervals == []
    x = np.array([0.0, 0.05, 0.5, 0.9, 0.99, 0.999, 0.9999, 1.0])
    assert (cal.predict_proba(x)[:, 1] > 0.7)[-3:].all()
    np.testing.assert_array_equal(regions.predict(x), cal.predict(x, threshold=regions.cutoff))
    chosen = decision.expected_cost(cal, x, regions.predict(x), cost_fp=7, cost_fn=3)
    optimal = decision.expected_cost(cal, x, cost_fp=7, cost_fn=3)
    assert float(chosen["mean"]) == pytest.approx(float(optimal["mean"]))
    grid = np.linspace(0.1, 0.9, 301)
    shuffled = decision.decision_regions(cal, cost_fp=7, cost_fn=3, grid=rng.permutation(grid))
    assert shuffled.intervals == decision.decision_regions(cal, cost_fp=7, cost_fn=3, grid=grid).intervals
    np.testing.assert_array_equal(shuffled.predict(x), cal.predict(x, threshold=regions.cutoff))


def test_the_rule_beyond_the_grid_follows_the_map_on_decision_values():
    """Decision values far below the fitted ones have a map near 0: with c* = 1e-7 the rule
    predicts 0 there (frozen at the grid's end it predicted 1 at d = -12, where p = 4e-15)."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 500)
    d = rng.normal(0, 1, 500) + 1.5 * (2 * y - 1)
    cal = bayescal.make_calibrator("platt", score_kind="decision").fit(d, y)
    regions = decision.decision_regions(cal, cost_fp=1, cost_fn=10_000_000)
    x = np.array([-12.0, -9.0, -7.0, 0.0, 9.0])
    np.testing.assert_array_equal(regions.predict(x), cal.predict(x, threshold=regions.cutoff))
    assert regions.predict(x)[0] == 0 and regions.predict(x)[-1] == 1


def test_the_rule_returns_the_calibrators_labels():
    """With labels {1, 2} the rule says 2 (the positive class) where it predicts 1, so its output
    goes straight into expected_cost and realized_cost (0/1 codes were read as labels there: a
    rule of 'predict positive' everywhere counted as 'predict 1', the negative class)."""
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < s).astype(int) + 1
    cal = bayescal.make_calibrator("platt").fit(s, y)
    regions = decision.decision_regions(cal, cost_fp=1, cost_fn=50)
    x = np.linspace(0.2, 1.0, 9)
    rule = regions.predict(x)
    np.testing.assert_array_equal(rule, cal.predict(x, threshold=regions.cutoff))
    assert set(rule.tolist()) == {2}
    chosen = decision.expected_cost(cal, x, rule, cost_fp=1, cost_fn=50)
    optimal = decision.expected_cost(cal, x, cost_fp=1, cost_fn=50)
    assert float(chosen["mean"]) == pytest.approx(float(optimal["mean"]))
    text = bayescal.make_calibrator("platt").fit(s, np.where(y == 2, "spam", "ham"), pos_label="spam")
    assert set(decision.decision_regions(text).predict(x).tolist()) <= {"ham", "spam"}


def test_roc_and_prior_shift_refuse_counts_beyond_their_caps_by_name():
    """n_thresholds and n_prior_draws of 10^11-10^12 are refused with the argument's name before
    any allocation (numpy's MemoryError for 745 GiB / 7 TiB before)."""
    rng = np.random.default_rng(0)
    s = rng.random(200)
    y = (rng.random(200) < s).astype(int)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    with pytest.raises(ValueError, match="n_thresholds="):
        decision.roc_from_map(cal, s, n_thresholds=10**11)
    with pytest.raises(ValueError, match="n_prior_draws=1000000000000 is more than"):
        cal.with_class_prior((2, 8), n_prior_draws=10**12)


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


def test_atoms_of_the_dpm_are_decided_by_their_own_map():
    """Exact 0 and 1 scores and a heavily repeated score are point masses of the DPM, whose map
    there is not the map beside them: the regions' rule agrees with the calibrator's own rule
    (predict 1 where P(y=1 | s) > c*) at the atoms and between them, with no spurious thresholds
    next to the atoms (they were interpolated across the jump at an atom)."""
    from bayescal.datasets import simulate_scores

    fit = simulate_scores("beta_skewed", 300, random_state=0)
    rng = np.random.default_rng(1)
    s = np.r_[fit.scores, np.zeros(30), np.ones(30), np.full(30, 0.3)]
    y = np.r_[fit.y, rng.random(90) < 0.5].astype(int)
    cal = bayescal.make_calibrator("dpm", random_state=0, draws=200, tune=200).fit(s, y)
    regions = decision.decision_regions(cal)
    np.testing.assert_array_equal(np.sort(regions.atoms), [0.0, 0.3, 1.0])
    # 1e-13 and 1 - 1e-16 are the atoms at 0 and 1 for the calibrator (it clips at 1e-12)
    x = np.r_[0.0, 1e-13, 1e-6, 1e-5, 0.3, np.linspace(0.01, 0.99, 99), 1 - 1e-6, 1 - 1e-16, 1.0]
    agree = regions.predict(x) == (cal.predict_proba(x)[:, 1] > regions.cutoff)
    assert agree[[0, 1, 2, 3, 4, -3, -2, -1]].all() and agree.mean() >= 0.98
    assert regions.thresholds.min() > 1e-3 and regions.thresholds.max() < 1 - 1e-3  # none beside the atoms at 0, 1
    chosen = decision.expected_cost(cal, x, regions.predict(x))
    optimal = decision.expected_cost(cal, x)
    assert float(chosen["mean"]) <= float(optimal["mean"]) + 0.01


def test_roc_of_a_map_without_positives_is_undefined():
    """Where an isotonic map is 0 at every score no positive is implied: no ROC curve (an error
    saying so), not an AUC of -0.0 from a curve that starts at (1, 0)."""
    rng = np.random.default_rng(0)
    s = rng.random(400)
    y = (rng.random(400) < np.clip(2 * s - 0.6, 0, 1)).astype(int)
    iso = bayescal.make_calibrator("isotonic").fit(s, y)
    low = np.linspace(0.01, 0.05, 50)
    assert np.all(iso.predict_proba(low)[:, 1] == 0)
    with pytest.raises(ValueError, match=r"map is 0 \(no positives\) at every one of the 50 scores"):
        decision.roc_from_map(iso, low)
    assert 0.5 < float(decision.roc_from_map(iso, s)["auc"].squeeze()) <= 1.0


def test_costs_near_the_largest_float_do_not_overflow(fitted):
    cal, s_test, _ = fitted
    assert decision.realized_cost([0, 0, 1, 1], [1, 1, 0, 0], cost_fp=1e308, cost_fn=1e308) == 1e308
    assert decision.realized_cost([0, 0, 1, 1], [0, 1, 0, 1], cost_fp=1e308, cost_fn=1e308) == 5e307
    huge = decision.expected_cost(cal, s_test[:200], cost_fp=1e308, cost_fn=1e308)
    unit = decision.expected_cost(cal, s_test[:200])
    assert float(huge["mean"]) == pytest.approx(1e308 * float(unit["mean"]), rel=1e-9)


def test_feature_aware_calibrators_are_refused_by_the_functions_of_scores_alone():
    rng = np.random.default_rng(0)
    s, X = rng.random(300), rng.integers(0, 2, (300, 1)).astype(float)
    y = (rng.random(300) < s).astype(int)
    mbct = bayescal.make_calibrator("mbct", random_state=0).fit(s, y, X=X)
    calls = {
        "expected_cost": lambda: decision.expected_cost(mbct, s),
        "expected_profit": lambda: decision.expected_profit(mbct, s),
        "bayes_error_posterior": lambda: decision.bayes_error_posterior(mbct, s),
        "roc_from_map": lambda: decision.roc_from_map(mbct, s),
        "ppc_calibration": lambda: diagnostics.ppc_calibration(mbct, s, y),
        "calibration_error_posterior": lambda: diagnostics.calibration_error_posterior(mbct, s),
    }
    for name, call in calls.items():
        with pytest.raises(ValueError, match=rf"^{name} reads a calibration map of scores alone, and MBCT depends"):
            call()


def test_summaries_per_draw_work_a_block_of_scores_at_a_time(monkeypatch):
    """Expected cost, the ROC from the map, the Bayes-error bounds and the calibration error's
    posterior summarise each draw over the scores a block at a time (all draws at all scores of a DPM at 10^6 scores would be tens of GB):
    the results equal those computed from all of ``predict_posterior`` at once, for any block size."""
    from bayescal import base

    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 400)
    s = np.where(y == 1, rng.beta(5, 2, 400), rng.beta(2, 5, 400))
    cal = bayescal.make_calibrator("dpm", draws=100, tune=100, random_state=0).fit(s, y)
    new = np.r_[rng.beta(2, 5, 997), 0.0, 1.0, 0.5]
    p = cal.predict_posterior(new).values
    gain = np.where(p.mean(axis=(0, 1)) > 0.2, -(1 - p), -4 * p)  # cost_fp 1, cost_fn 4: cut-off 0.2
    order = np.argsort(-new, kind="stable")
    for elements in (base._CHUNK_ELEMENTS, 7 * p.shape[0] * p.shape[1]):  # one block; blocks of 7 scores
        monkeypatch.setattr(base, "_CHUNK_ELEMENTS", elements)
        cost = decision.expected_cost(cal, new, cost_fp=1.0, cost_fn=4.0)["cost"].values
        np.testing.assert_allclose(cost, -gain.mean(axis=-1), rtol=1e-12, atol=1e-15)
        bounds = decision.bayes_error_posterior(cal, new)
        np.testing.assert_allclose(bounds["refinement"].values, (p * (1 - p)).mean(axis=-1), rtol=1e-12)
        np.testing.assert_allclose(bounds["expected_error_rate"].values, np.minimum(p, 1 - p).mean(axis=-1), rtol=1e-12)
        roc = decision.roc_from_map(cal, new, n_thresholds=11)
        above = new[order][None, :] > roc["threshold"].values[:, None]  # (threshold, score)
        tpr = (p[..., order] @ above.T) / p.sum(axis=-1, keepdims=True)
        np.testing.assert_allclose(roc["tpr"].values, tpr, rtol=1e-12, atol=1e-15)
        ece = diagnostics.calibration_error_posterior(cal, new)["ece"].values
        np.testing.assert_allclose(ece, np.abs(p - new).mean(axis=-1), rtol=1e-12)
    import tracemalloc

    many = rng.beta(2, 5, 20_000)
    full = p.shape[0] * p.shape[1] * many.size * 8  # bytes of all draws at all scores
    monkeypatch.setattr(base, "_CHUNK_ELEMENTS", p.shape[0] * p.shape[1] * 500)
    for summary in (
        decision.expected_cost,
        decision.bayes_error_posterior,
        decision.roc_from_map,
        diagnostics.calibration_error_posterior,
    ):
        tracemalloc.start()
        try:
            summary(cal, many)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < full / 2, (summary.__name__, peak, full)


def test_regions_keep_the_fit_they_were_read_from():
    """A refit of the calibrator afterwards must not mix the old intervals with the new map
    (the regions held the live calibrator: [0 0 1 1] before a refit on flipped labels, [1 0 1 0]
    after, matching neither fit)."""
    rng = np.random.default_rng(0)
    s = rng.uniform(0.2, 0.8, 2000)
    y = (rng.random(2000) < s).astype(int)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    regions = decision.decision_regions(cal)
    x = np.array([0.1, 0.3, 0.7, 0.9])
    before = regions.predict(x)
    np.testing.assert_array_equal(before, [0, 0, 1, 1])
    cal.fit(s, 1 - y)
    np.testing.assert_array_equal(regions.predict(x), before)
