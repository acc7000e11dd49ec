"""Prior shift (with_class_prior), prevalence estimation (estimate_class_prior) and the
declared class-conditional protocol.

Truth: negatives Beta(2, 5), positives Beta(5, 2), so the calibration map at any prevalence
pi is known exactly, pi f1 / (pi f1 + (1 - pi) f0).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit
from sklearn.base import clone

import bayescal
from bayescal import decision
from bayescal.base import ClassConditional, PriorShiftedCalibrator, shift_odds
from bayescal.prior_shift import saerens_em


def sample(n, pi, rng):
    y = (rng.random(n) < pi).astype(int)
    return np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n)), y


def true_map(s, pi):
    f1, f0 = stats.beta(5, 2).pdf(s), stats.beta(2, 5).pdf(s)
    return pi * f1 / (pi * f1 + (1 - pi) * f0)


@pytest.fixture(scope="module")
def tiny_dpm():
    s, y = sample(800, 0.4, np.random.default_rng(0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return bayescal.make_calibrator("dpm", draws=100, tune=100, n_components=6, random_state=0).fit(s, y), s, y


def _nodes(dpm):
    from scipy.special import expit

    t = dpm.grid_
    inner = t[(t > -1.2) & (t < 1.2)]
    return expit(inner[:: max(1, inner.size // 7)])


# ---- the protocol ------------------------------------------------------------------------


def test_class_conditional_is_declared_not_guessed(tiny_dpm):
    dpm, _, _ = tiny_dpm
    assert isinstance(dpm, ClassConditional)
    assert isinstance(bayescal.make_calibrator("kde"), ClassConditional)
    for name in ("platt", "beta", "isotonic", "venn_abers", "spline"):
        assert not isinstance(bayescal.make_calibrator(name), ClassConditional)
    pi = dpm.class_prior_draws()
    assert pi.dims == ("chain", "draw") and pi.shape == dpm.calibration_map(5).shape[:2]
    # the map is Bayes' rule on the declared densities and prior, draw by draw (at the nodes of
    # the DPM's cached grid, where its map is not interpolated)
    g = _nodes(dpm)
    dens = dpm.density_map(g).values
    p = pi.values[..., None]
    bayes = p * dens[:, :, 1] / (p * dens[:, :, 1] + (1 - p) * dens[:, :, 0])
    informative = dpm.idata_["sample_stats"]["informative"].values.astype(bool)
    np.testing.assert_allclose(dpm.calibration_map(g).values[informative], bayes[informative], rtol=1e-6, atol=1e-9)
    assert dpm.score_atoms().dims == ("chain", "draw", "class", "atom")


def test_every_calibrator_declares_score_kind():
    for name in bayescal.calibrators():
        assert bayescal.make_calibrator(name).score_kind in ("probability", "decision")


# ---- with_class_prior --------------------------------------------------------------------


def test_point_prior_is_bayes_odds_adjustment_and_leaves_the_original_alone():
    rng = np.random.default_rng(1)
    s, y = sample(5000, 0.4, rng)
    cal = bayescal.make_calibrator("beta").fit(s, y)
    before = cal.predict_proba(s[:100]).copy()
    shifted = cal.with_class_prior(0.1)
    assert isinstance(shifted, PriorShiftedCalibrator) and shifted is not cal
    np.testing.assert_array_equal(cal.predict_proba(s[:100]), before)
    expected = shift_odds(before[:, 1], cal.class_prior_, 0.1)
    np.testing.assert_allclose(shifted.predict_proba(s[:100])[:, 1], expected, rtol=1e-12)
    # the shifted map is the true map at the new prevalence (beta calibration is exact for beta scores)
    g = np.linspace(0.05, 0.95, 91)
    assert np.abs(shifted.predict_proba(g)[:, 1] - true_map(g, 0.1)).max() < 0.03
    # shifting to the training prevalence changes nothing; shifts do not compound
    np.testing.assert_allclose(
        cal.with_class_prior(cal.class_prior_).predict_proba(g), cal.predict_proba(g), atol=1e-12
    )
    np.testing.assert_allclose(
        shifted.with_class_prior(0.3).predict_proba(g), cal.with_class_prior(0.3).predict_proba(g)
    )
    # decisions follow the shifted map: rarer positives push the threshold up
    t_old = decision.decision_regions(cal).thresholds
    t_new = decision.decision_regions(shifted).thresholds
    assert t_new.size == t_old.size == 1 and t_new[0] > t_old[0] + 0.05


def test_class_conditional_shift_is_exact_per_draw(tiny_dpm):
    dpm, _, _ = tiny_dpm
    shifted = dpm.with_class_prior(0.05)
    assert isinstance(shifted, ClassConditional)
    g = _nodes(dpm)
    dens = shifted.density_map(g).values
    bayes = 0.05 * dens[:, :, 1] / (0.05 * dens[:, :, 1] + 0.95 * dens[:, :, 0])
    informative = dpm.idata_["sample_stats"]["informative"].values.astype(bool)
    np.testing.assert_allclose(shifted.calibration_map(g).values[informative], bayes[informative], rtol=1e-6)
    np.testing.assert_allclose(shifted.class_prior_draws().values, 0.05)
    # the mean map's largest error at these nodes is 0.08-0.16 over seeds (short chains, 800 scores),
    # with the numpy and the compiled Gibbs sweeps alike (10 seeds each)
    assert np.abs(shifted.predict_proba(g)[:, 1] - true_map(g, 0.05)).max() < 0.17


def test_beta_prior_widens_the_band_and_is_reproducible():
    rng = np.random.default_rng(2)
    s, y = sample(3000, 0.4, rng)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    point = cal.with_class_prior(0.1).credible_band(np.array([0.3, 0.5, 0.7]), ci_prob=0.95)
    assert point.attrs["degenerate"] == 1
    a = cal.with_class_prior((10, 90), random_state=0)
    b = cal.with_class_prior((10, 90), random_state=0)
    band = a.credible_band(np.array([0.3, 0.5, 0.7]), ci_prob=0.95)
    np.testing.assert_array_equal(band.values, b.credible_band(np.array([0.3, 0.5, 0.7]), ci_prob=0.95).values)
    width = (band.sel(ci_bound="upper") - band.sel(ci_bound="lower")).values
    assert np.all(width > 0.005) and width[1] > 0.05
    assert a.calibration_map(5).sizes["draw"] >= 1000
    assert a.class_prior_ == pytest.approx(0.1, abs=0.01)
    # the band is the map at the prior's quantiles (the map is monotone in the prior)
    lo_hi = stats.beta(10, 90).ppf([0.025, 0.975])
    q = cal.predict_proba([0.5])[0, 1]
    expect = shift_odds(q, cal.class_prior_, lo_hi)
    np.testing.assert_allclose(band.sel(score=0.5).values, expect, atol=0.01)


def test_prior_shifted_calibrator_is_an_estimator_and_rejects_bad_priors(tmp_path):
    rng = np.random.default_rng(3)
    s, y = sample(1000, 0.4, rng)
    est = PriorShiftedCalibrator(bayescal.make_calibrator("platt"), 0.2)
    fitted = clone(est).fit(s, y)
    direct = bayescal.make_calibrator("platt").fit(s, y).with_class_prior(0.2)
    np.testing.assert_allclose(fitted.predict_proba(s), direct.predict_proba(s))
    for bad in (0.0, 1.0, -0.2, "x", (1, -1), (1, 2, 3), True):
        with pytest.raises(ValueError, match="prior"):
            direct.calibrator_.with_class_prior(bad)
    with pytest.raises(ValueError, match=r"n_prior_draws=2.5 must be an integer"):
        direct.calibrator_.with_class_prior((2, 8), n_prior_draws=2.5)
    with pytest.raises(ValueError, match="save the original"):
        direct.save(tmp_path / "x.nc")


# ---- estimate_class_prior ----------------------------------------------------------------


def _study(name, seeds, n_cal=20_000, n_new=5000, targets=(0.1, 0.02, 0.6), bootstrap=0):
    """Calibrate at 0.4, deploy at each target: coverage of the 95 % interval and the largest error."""
    hits, errors = [], []
    for target in targets:
        for seed in seeds:
            rng = np.random.default_rng(seed)
            s, y = sample(n_cal, 0.4, rng)
            cal = bayescal.make_calibrator(name).fit(s, y)
            s_new, _ = sample(n_new, target, rng)
            out = (
                cal.estimate_class_prior(s_new, calibration=(s, y), n_bootstrap=bootstrap, random_state=seed)
                if bootstrap
                else cal.estimate_class_prior(s_new)
            )
            lo, hi = out["class_prior_ci"].values
            hits.append(lo <= target <= hi)
            errors.append(abs(float(out["class_prior_estimate"]) - target))
    return np.mean(hits), np.max(errors)


def test_prevalence_estimate_under_label_shift_fast():
    # the likelihood-ratio interval treats the map as known: 20 000 calibration scores, 5000 new
    # ones; 30 fits are too few to pin a 95 % coverage (the slow study checks >= 0.9 on 300)
    coverage, worst = _study("platt", range(10))
    assert worst < 0.03
    assert coverage >= 0.85


def test_bootstrap_interval_carries_the_maps_uncertainty():
    rng = np.random.default_rng(6)
    s, y = sample(2000, 0.4, rng)
    cal = bayescal.make_calibrator("platt").fit(s, y)
    s_new, _ = sample(5000, 0.1, rng)
    lr = cal.estimate_class_prior(s_new)
    boot = cal.estimate_class_prior(s_new, calibration=(s, y), n_bootstrap=60, random_state=0)
    again = cal.estimate_class_prior(s_new, calibration=(s, y), n_bootstrap=60, random_state=0)
    np.testing.assert_array_equal(boot["class_prior"].values, again["class_prior"].values)
    assert boot.attrs["ci_kind"] == "bootstrap" and boot["class_prior"].shape == (1, 60)
    assert float(boot["class_prior_estimate"]) == float(lr["class_prior_estimate"])
    w_lr = float(np.diff(lr["class_prior_ci"].values)[0])
    w_boot = float(np.diff(boot["class_prior_ci"].values)[0])
    assert w_boot > w_lr  # 2000 calibration rows: the map's error is not negligible next to 5000 new scores
    with pytest.raises(ValueError, match="calibration must be"):
        cal.estimate_class_prior(s_new, calibration=s)


def test_bootstrap_replicates_fit_calibrators_that_need_two_of_a_class_and_are_reproducible():
    """Replicates are redrawn until each class has the rows the calibrator needs (spline: two a
    class; with three positives in 200 a replicate often has fewer), and a calibrator that draws
    (scaling-binning's random split, random_state=None) is seeded from random_state."""
    rng = np.random.default_rng(0)
    s = rng.beta(2, 5, 200)
    y = np.zeros(200, int)
    y[np.argsort(s)[-3:]] = 1
    new = rng.beta(2, 5, 300)
    spline = bayescal.make_calibrator("spline").fit(s, y)
    out = spline.estimate_class_prior(new, calibration=(s, y), n_bootstrap=30, random_state=0)
    assert np.all(np.isfinite(out["class_prior"].values))
    s2, y2 = sample(300, 0.4, rng)
    binning = bayescal.make_calibrator("scaling_binning").fit(s2, y2)
    runs = [
        binning.estimate_class_prior(new, calibration=(s2, y2), n_bootstrap=40, random_state=0)["class_prior_ci"].values
        for _ in range(2)
    ]
    np.testing.assert_array_equal(runs[0], runs[1])
    from bayescal.data import prepare_data
    from bayescal.prior_shift import _fittable_rows

    lone = prepare_data(s, np.r_[np.zeros(199, int), 1])
    lone.w[-1] = 0.0  # the one positive without weight: no replicate can give its class a weight
    with pytest.raises(ValueError, match="1,000 bootstrap replicates in a row had too few of a class for Spline"):
        _fittable_rows(spline, lone, np.random.default_rng(0))


def test_prevalence_of_many_distinct_scores_is_robust_to_an_outlier_and_keeps_atoms(tiny_dpm):
    """Beyond 512 distinct new scores the estimate bins them: one far outlying decision value must
    not sweep the bulk into one bin (it gave 0.003 for a true 0.2), and scores at an atom of the DPM
    must stay at it (78 copies of 1.0 averaged to a value a rounding away, and took the map beside
    the atom)."""
    rng = np.random.default_rng(3)
    y = (rng.random(300) < 0.5).astype(int)
    d = np.where(y == 1, rng.normal(1, 1, 300), rng.normal(-1, 1, 300))
    dec = bayescal.make_calibrator("dpm", score_kind="decision", draws=100, tune=100, random_state=0).fit(d, y)
    y_new = (rng.random(600) < 0.2).astype(int)
    new = np.where(y_new == 1, rng.normal(1, 1, 600), rng.normal(-1, 1, 600))
    ref = float(dec.estimate_class_prior(new, random_state=0)["class_prior_estimate"])
    with_outlier = float(dec.estimate_class_prior(np.r_[new, 5e3], random_state=0)["class_prior_estimate"])
    assert abs(with_outlier - ref) < 0.02 and abs(ref - 0.2) < 0.08

    s, yy = sample(300, 0.4, rng)
    s = np.r_[s, np.zeros(20), np.ones(20)]
    yy = np.r_[yy, np.zeros(20, int), np.ones(20, int)]
    atoms = bayescal.make_calibrator("dpm", draws=100, tune=100, random_state=0).fit(s, yy)
    new_s, _ = sample(600, 0.4, rng)
    estimates = [
        float(atoms.estimate_class_prior(np.r_[new_s, np.zeros(c), np.ones(c)], random_state=0)["class_prior_estimate"])
        for c in (77, 78)
    ]
    assert abs(estimates[0] - estimates[1]) < 0.01, estimates


def test_prevalence_of_many_distinct_scores_keeps_an_interior_atom_exact(monkeypatch):
    """An atom inside the score range (60 calibration rows at 0.3, nearly all positive: the map
    jumps there) must not be binned with its neighbours when there are more than 512 distinct new
    scores: binned, 300 new scores at 0.3 took the map beside the atom (0.31 [0.26, 0.36] against
    the exact 0.43 [0.38, 0.48])."""
    from bayescal import prior_shift

    rng = np.random.default_rng(1)
    s, y = sample(300, 0.4, rng)
    s = np.r_[s, np.full(60, 0.3)]
    y = np.r_[y, (rng.random(60) < 0.95).astype(int)]
    cal = bayescal.make_calibrator("dpm", draws=100, tune=100, random_state=0).fit(s, y)
    new = np.r_[sample(3000, 0.4, rng)[0], np.full(300, 0.3)]
    binned = cal.estimate_class_prior(new, random_state=0)
    monkeypatch.setattr(prior_shift, "_MAX_POINTS", 10**6)  # every distinct score its own point
    exact = cal.estimate_class_prior(new, random_state=0)
    assert abs(float(binned.class_prior_estimate) - float(exact.class_prior_estimate)) < 0.005
    np.testing.assert_allclose(binned.class_prior_ci.values, exact.class_prior_ci.values, atol=0.005)


def test_em_fixed_point_and_result_layout():
    rng = np.random.default_rng(4)
    s, y = sample(4000, 0.4, rng)
    cal = bayescal.make_calibrator("beta").fit(s, y)
    s_new, _ = sample(3000, 0.15, rng)
    out = cal.estimate_class_prior(s_new, ci_prob=0.9)
    em = saerens_em(cal.predict_proba(s_new)[:, 1], cal.class_prior_)
    assert float(out["class_prior_estimate"]) == pytest.approx(em, abs=1e-7)
    assert out.attrs["method"] == "em" and out.attrs["ci_prob"] == 0.9
    assert out["class_prior"].dims == ("chain", "draw") and out["class_prior"].size == 1
    wide = cal.estimate_class_prior(s_new, ci_prob=0.99)["class_prior_ci"].values
    narrow = out["class_prior_ci"].values
    assert wide[0] < narrow[0] < narrow[1] < wide[1]
    # a shifted calibrator estimates the same prevalence (the densities did not change)
    same = cal.with_class_prior(0.7).estimate_class_prior(s_new)
    assert float(same["class_prior_estimate"]) == pytest.approx(float(out["class_prior_estimate"]))


def test_dpm_posterior_of_the_prevalence(tiny_dpm):
    dpm, _, _ = tiny_dpm
    rng = np.random.default_rng(5)
    s_new, _ = sample(2000, 0.1, rng)
    out = dpm.estimate_class_prior(s_new, random_state=0)
    assert out.attrs["method"] == "posterior"
    lo, hi = out["class_prior_ci"].values
    assert lo <= 0.1 <= hi and abs(float(out["class_prior_estimate"]) - 0.1) < 0.03
    draws = out["class_prior"]
    assert draws.dims == ("chain", "draw") and draws.size >= 100
    assert float(draws.mean()) == pytest.approx(float(out["class_prior_estimate"]), abs=0.01)
    again = dpm.estimate_class_prior(s_new, random_state=0)
    np.testing.assert_array_equal(again["class_prior"].values, draws.values)
    for prior in (0.5, "ab", (1, 2, 3), (1, -1)):  # a Beta prior (a, b) of the new prevalence
        with pytest.raises(ValueError, match="prior="):
            dpm.estimate_class_prior(s_new, prior=prior)
    for max_draws in (1, 3, 7, 150):  # at most that many in all, however the chains divide them
        thinned = dpm.estimate_class_prior(s_new, max_draws=max_draws, random_state=0)["class_prior"]
        assert 1 <= thinned.size <= max_draws
    with pytest.raises(ValueError, match="omit calibration"):
        dpm.estimate_class_prior(s_new, calibration=(s_new, s_new > 0.5))


def test_point_estimate_class_conditional_calibrator_takes_the_likelihood_route():
    rng = np.random.default_rng(7)
    s, y = sample(3000, 0.4, rng)
    kde = bayescal.make_calibrator("kde").fit(s, y)
    s_new, _ = sample(3000, 0.2, rng)
    out = kde.estimate_class_prior(s_new)
    assert out.attrs["method"] == "em" and out.attrs["training_prior"] == pytest.approx(kde.prior_)
    assert abs(float(out["class_prior_estimate"]) - 0.2) < 0.03


@pytest.mark.slow
@pytest.mark.parametrize("name", ["platt", "beta"])
def test_prevalence_estimate_under_label_shift_study(name):
    """100 seeds per deployment prevalence (0.1, 0.02, 0.6), 20 000 calibration and 5000 new
    scores, likelihood-ratio interval (measured: coverage 0.93-0.98 per prevalence, largest error 0.024)."""
    coverage, worst = _study(name, range(100, 200))
    assert worst < 0.03
    assert coverage >= 0.9


@pytest.mark.slow
def test_prevalence_bootstrap_study():
    """Equal calibration and new sets (5000 each), where the likelihood-ratio interval covers only
    about 0.88: the bootstrap interval (200 replicates), 30 seeds per prevalence (about 4 minutes)."""
    coverage, worst = _study("platt", range(100, 130), n_cal=5000, bootstrap=200)
    assert worst < 0.03
    assert coverage >= 0.9


@pytest.mark.slow
def test_dpm_prevalence_posterior_study():
    """20 seeds per deployment prevalence, DPM with 200 draws on 2000 calibration scores."""
    hits, errors = [], []
    for target in (0.1, 0.02, 0.6):
        for seed in range(20):
            rng = np.random.default_rng(seed)
            s, y = sample(2000, 0.4, rng)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                dpm = bayescal.make_calibrator("dpm", draws=200, n_components=8, random_state=seed).fit(s, y)
            s_new, _ = sample(2000, target, rng)
            out = dpm.estimate_class_prior(s_new, random_state=seed)
            lo, hi = out["class_prior_ci"].values
            hits.append(lo <= target <= hi)
            errors.append(abs(float(out["class_prior_estimate"]) - target))
    assert np.mean(hits) >= 0.9 and np.max(errors) < 0.04


def test_a_shift_of_a_shifted_calibrator_starts_from_each_draws_deployment_prior():
    """Shifting a calibrator already shifted to Beta(2, 8) on to 0.6 gives the map shifted to 0.6
    directly, with no spread; it started from the mean of the Beta draws (so the map was wrong and
    spread over the draws), and with a Beta prior outside too it failed with numpy's broadcast error."""
    from scipy.special import expit

    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.3).astype(int)
    s = expit(rng.normal(0, 1, 500) + 1.5 * y - 0.5)
    g = np.array([0.2, 0.5, 0.8])

    def inner():
        return PriorShiftedCalibrator(bayescal.make_calibrator("platt"), (2, 8), n_prior_draws=200, random_state=0)

    want = bayescal.make_calibrator("platt").fit(s, y).with_class_prior(0.6).predict_proba(g)[:, 1]
    nested = PriorShiftedCalibrator(inner(), 0.6).fit(s, y).calibration_map(g)
    np.testing.assert_allclose(nested.values, np.broadcast_to(want, nested.shape), atol=1e-12)
    both = PriorShiftedCalibrator(inner(), (5, 5), n_prior_draws=100, random_state=0).fit(s, y)
    direct = bayescal.make_calibrator("platt").fit(s, y).with_class_prior((5, 5), n_prior_draws=200, random_state=0)
    assert both.predict_proba(g)[:, 1] == pytest.approx(direct.predict_proba(g)[:, 1], abs=0.03)


def test_a_refit_on_an_array_forgets_the_feature_names_of_the_former_fit():
    """A shifted feature-aware calibrator fitted on a DataFrame and refitted on an array kept the
    first fit's column names, and refused new frames that the calibrator inside accepts."""
    import pandas as pd
    from scipy.special import expit

    rng = np.random.default_rng(0)
    y = (rng.random(500) < 0.3).astype(int)
    s = expit(rng.normal(0, 1, 500) + 1.5 * y - 0.5)
    X = rng.normal(size=(500, 2))
    shifted = PriorShiftedCalibrator(bayescal.make_calibrator("mbct"), 0.5).fit(
        s, y, X=pd.DataFrame(X, columns=["a", "b"])
    )
    shifted.fit(s, y, X=X)
    assert not hasattr(shifted, "feature_names_x_")
    new = pd.DataFrame(X[:3], columns=["c", "d"])
    np.testing.assert_allclose(shifted.predict_proba(s[:3], X=new), shifted.predict_proba(s[:3], X=X[:3]))


def test_a_flat_likelihood_gives_the_training_prior_with_a_warning_and_zero_weights_drop_rows():
    """Calibrated probabilities equal to the training prevalence carry no information on the new
    one: prior_mle reported 0 or 1 by the sign of a rounding error (the EM stays at the prior).
    A row of weight 0 with q = 1 made 0 log 0 = NaN and the root finder failed."""
    from bayescal.prior_shift import prior_mle

    with pytest.warns(UserWarning, match="say nothing about the new prevalence"):
        flat = prior_mle(np.full(10, 0.3), 0.3)
    assert float(flat.class_prior_estimate) == 0.3
    np.testing.assert_array_equal(flat.class_prior_ci.values, [0.0, 1.0])
    assert abs(saerens_em(np.full(10, 0.3), 0.3) - 0.3) < 1e-12
    weighted = prior_mle(np.array([1.0, 0.2, 0.2]), 0.4, weights=np.array([0.0, 1.0, 1.0]))
    dropped = prior_mle(np.array([0.2, 0.2]), 0.4)
    assert float(weighted.class_prior_estimate) == float(dropped.class_prior_estimate)
    np.testing.assert_allclose(weighted.class_prior_ci.values, dropped.class_prior_ci.values)


def test_saerens_em_warns_at_its_step_cap_and_checks_its_arguments():
    q = np.r_[np.full(50, 0.01), 0.9]
    with pytest.warns(UserWarning, match="max_iter=3"):
        capped = saerens_em(q, 0.5, max_iter=3)
    assert 0 < capped < 0.01  # the last iterate, on its way to the maximum at 0
    assert saerens_em(q, 0.5) < 1e-9  # converges without the cap
    for kwargs, name in [
        ({"base": 1.0}, "base"),
        ({"base": 0.5, "tol": 0.0}, "tol"),
        ({"base": 0.5, "max_iter": 0}, "max_iter"),
    ]:
        with pytest.raises(ValueError, match=name):
            saerens_em(q, **kwargs)
    with pytest.raises(ValueError, match=r"^q (has|is) "):
        saerens_em(np.array([0.2, np.nan]), 0.5)


def test_temperature_scaling_warns_that_a_map_off_the_base_rate_cannot_be_shifted():
    rng = np.random.default_rng(0)
    n = 20_000
    y = rng.random(n) < 0.1  # rare positives scored around 0.4: no intercept cannot follow the base rate
    s = expit(np.where(y, rng.normal(1.0, 1.0, n), rng.normal(-0.5, 1.0, n)))
    off = bayescal.make_calibrator("temperature").fit(s, y)
    assert abs(off.mean_proba_ - off.class_prior_) > 0.3
    with pytest.warns(UserWarning, match="not calibrated at the training prevalence"):
        estimate = float(off.estimate_class_prior(s)["class_prior_estimate"])
    assert abs(estimate - off.class_prior_) > 0.3  # why it warns: the calibration scores' own prevalence is missed
    with pytest.warns(UserWarning, match="make_calibrator\\('platt'\\)"):
        off.with_class_prior(0.3)
    y = rng.random(n) < 0.5  # a centred classifier: its map is calibrated at the base rate, no warning
    s = expit(np.where(y, rng.normal(1.0, 1.0, n), rng.normal(-1.0, 1.0, n)))
    centred = bayescal.make_calibrator("temperature").fit(s, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        estimate = float(centred.estimate_class_prior(s)["class_prior_estimate"])
        centred.with_class_prior(0.3)
    assert abs(estimate - centred.class_prior_) < 0.02


def test_prior_mle_checks_its_arguments_by_name():
    from bayescal.prior_shift import prior_mle

    q = np.array([0.2, 0.5, 0.9])
    cases = [
        ({"q": q, "base": 0.0}, "base"),
        ({"q": q, "base": 1.2}, "base"),
        ({"q": q[None, :], "base": 0.3}, r"^q (has|is) "),
        ({"q": np.array([]), "base": 0.3}, r"^q (has|is) "),
        ({"q": np.array([0.2, np.nan]), "base": 0.3}, r"^q (has|is) "),
        ({"q": np.array([0.2, 1.5]), "base": 0.3}, r"^q (has|is) "),
        ({"q": q, "base": 0.3, "ci_prob": 1.5}, "ci_prob"),
        ({"q": q, "base": 0.3, "weights": np.array([1.0, -1.0, 1.0])}, "weights"),
        ({"q": q, "base": 0.3, "weights": np.array([1.0, np.nan, 1.0])}, "weights"),
        ({"q": q, "base": 0.3, "weights": np.array([1.0, 1.0])}, "weights"),
    ]
    for kwargs, match in cases:
        with pytest.raises(ValueError, match=match):
            prior_mle(**kwargs)


def test_options_the_prevalence_route_does_not_use_are_refused_by_name(tiny_dpm):
    """A point estimate ignored prior=, max_draws= and n_bootstrap= (even prior=(0, 1), no
    distribution); the DPM ignored n_bootstrap=. Each is now refused by name."""
    dpm, s, y = tiny_dpm
    kde = bayescal.make_calibrator("kde").fit(s, y)
    for kwargs, name in [
        ({"prior": (0, 1)}, "prior"),
        ({"max_draws": 0}, "max_draws"),
        ({"n_bootstrap": 5}, "n_bootstrap"),
    ]:
        with pytest.raises(
            ValueError, match=rf"^{name}=.*KDECalibrator estimates the prevalence by maximum likelihood"
        ):
            kde.estimate_class_prior(s, **kwargs)
    with pytest.raises(ValueError, match=r"^n_bootstrap=5: DPMCalibrator estimates the prevalence from its posterior"):
        dpm.estimate_class_prior(s, n_bootstrap=5)
    assert (
        0
        < float(kde.estimate_class_prior(s, calibration=(s, y), n_bootstrap=20, random_state=0)["class_prior_estimate"])
        < 1
    )
    from bayescal.prior_shift import prior_posterior

    with pytest.raises(ValueError, match="ci_prob"):
        prior_posterior(dpm, np.zeros(3), dpm.class_prior_draws().values, ci_prob=1.5)


def test_a_shifted_calibrator_without_a_calibrator_names_the_argument():
    """PriorShiftedCalibrator() is a valid estimator to clone; asking its scale said
    "'NoneType' object has no attribute 'score_kind'"."""
    empty = clone(PriorShiftedCalibrator())
    for attr in ("score_kind", "feature_aware", "monotone"):
        with pytest.raises(AttributeError, match="has no calibrator: pass calibrator="):
            getattr(empty, attr)


def test_venn_abers_pairs_are_a_declared_capability_kept_by_a_shift_to_one_prevalence():
    """Calibrators declare whether they give Venn-Abers pairs (DESIGN: declared, not probed); a
    shift to one prevalence keeps the pair (each end shifted), a shift to a distribution does not."""
    rng = np.random.default_rng(0)
    s, y = sample(400, 0.4, rng)
    va = bayescal.make_calibrator("venn_abers").fit(s, y)
    assert va.gives_venn_abers_pairs and not bayescal.make_calibrator("platt").gives_venn_abers_pairs
    one = va.with_class_prior(0.2)
    assert one.gives_venn_abers_pairs
    p0, p1 = one._pairs(one._working(s[:5]))
    base0, base1 = va._pairs(va._working(s[:5]))
    np.testing.assert_allclose(p0, shift_odds(base0, va.class_prior_, 0.2))
    np.testing.assert_allclose(p1, shift_odds(base1, va.class_prior_, 0.2))
    assert not va.with_class_prior((2.0, 8.0), random_state=0).gives_venn_abers_pairs
