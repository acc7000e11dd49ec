"""Posterior predictive checks and calibration tests (issue 5, item 2).

Truths come from :mod:`bayescal.datasets`: a calibrated classifier is the class-conditional
model f1 = Beta(3, 2), f0 = Beta(2, 3), pi = 0.5, whose true map is exactly the identity
(pi f1(s) / (pi f1(s) + (1 - pi) f0(s)) = s); miscalibrated ones are the issue-B presets.
"""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.special import expit

import bayescal
from bayescal import diagnostics as D
from bayescal.base import Calibrator, ClassConditional
from bayescal.baselines.platt import PlattScaling
from bayescal.datasets import TRUTHS, ScoreTruth, simulate_scores

CALIBRATED = ScoreTruth(stats.beta(2, 3), stats.beta(3, 2), 0.5)
DPM_SMALL = {"draws": 200, "chains": 1, "tune": 200}
# one short chain: its map is noisy, which the calibrator rightly says; not under test here
pytestmark = pytest.mark.filterwarnings("ignore:One chain cannot show:UserWarning")


def _dpm(scores, y, seed=0, **kw):
    from bayescal.bayesian.dpm import DPMCalibrator

    return DPMCalibrator(random_state=seed, **{**DPM_SMALL, **kw}).fit(scores, y)


class TrueMap(Calibrator):
    """A 'calibrator' that returns a known truth's exact map (probability scores)."""

    def __init__(self, *, truth=None):
        self.truth = truth

    def _fit(self, data, X=None):
        self.fitted_ = True

    def _calibrate(self, t, X=None):
        return self.truth.calibration_map(expit(t))


class TrueDensities(ClassConditional, TrueMap):
    """The truth's exact class densities and prior as a one-draw class-conditional 'calibrator'."""

    def class_prior_draws(self):
        return xr.DataArray([[self.truth.pi]], dims=("chain", "draw"))

    def density_map(self, grid=None):
        g = np.asarray(grid, dtype=float)
        dens = np.stack([self.truth.f0.pdf(g), self.truth.f1.pdf(g)])[None, None]
        return xr.DataArray(dens, dims=("chain", "draw", "class", "score"), coords={"class": [0, 1], "score": g})


def true_errors(truth: ScoreTruth) -> dict[str, float]:
    """Population ECE and Brier reliability E|q(s) - s|, E(q(s) - s)^2 under the truth's scores."""
    g = np.linspace(1e-7, 1 - 1e-7, 400_001)
    dens = truth.pi * truth.f1.pdf(g) + (1 - truth.pi) * truth.f0.pdf(g)
    gap = truth.calibration_map(g) - g
    return {"ece": np.trapezoid(np.abs(gap) * dens, g), "reliability": np.trapezoid(gap**2 * dens, g)}


@pytest.fixture(scope="module")
def skewed():
    d = simulate_scores("beta_skewed", 500, random_state=3)
    return d, _dpm(d.scores, d.y)


@pytest.fixture(scope="module")
def bimodal():
    d = simulate_scores("beta_bimodal", 500, random_state=4)
    return d, _dpm(d.scores, d.y)


# ----------------------------------------------------------------------------- identity map


def test_calibrated_truth_is_the_identity():
    s = np.linspace(0.01, 0.99, 50)
    np.testing.assert_allclose(CALIBRATED.calibration_map(s), s, atol=1e-12)


def test_simulate_scores_refuses_a_truth_it_cannot_sample():
    from scipy import stats

    for truth, message in (
        (ScoreTruth(stats.beta(2, 5), stats.beta(5, 2), None), "truth.pi=None must be a real number"),
        (ScoreTruth(3, stats.beta(5, 2), 0.4), "truth.f0=3 is not a distribution"),
        (ScoreTruth(stats.beta(2, 5), stats.beta(5, 2), 0.4, "decison"), "score_kind='decison' is not one of"),
    ):
        with pytest.raises(ValueError, match=message):
            simulate_scores(truth, 10)


def test_already_calibrated_p_value_is_roughly_uniform():
    """50 calibrated classifiers: at most 10 % of the p-values below 0.05 (issue check)."""
    pvals = []
    for r in range(50):
        d = simulate_scores(CALIBRATED, 300, random_state=1000 + r)
        out = D.consistency_check(d.scores, d.y, n_replicates=200, band=False, random_state=r)
        pvals.append(out["p_value"].values)
    pvals = np.array(pvals)  # (50, statistic)
    assert np.all(np.mean(pvals < 0.05, axis=0) <= 0.10)
    # roughly uniform, not piled up at 1 either: the median sits in the middle
    assert np.all(np.abs(np.median(pvals, axis=0) - 0.5) < 0.2)
    assert stats.kstest(pvals[:, 0], "uniform").pvalue > 0.01


@pytest.mark.parametrize("truth", ["beta_skewed", "beta_bimodal"])
def test_miscalibrated_classifier_is_rejected(truth):
    d = simulate_scores(truth, 500, random_state=5)
    out = D.consistency_check(d.scores, d.y, n_replicates=300, band=False, random_state=0)
    assert np.all(out["p_value"].values < 0.01)


def test_consistency_band_is_centred_on_the_bin_predictions(rng):
    d = simulate_scores(CALIBRATED, 2000, random_state=7)
    out = D.consistency_check(d.scores, d.y, n_bins=8, n_replicates=400, ci_prob=0.9, random_state=1)
    band = out["band"]
    assert band.dims == ("bin", "ci_bound")
    lower, upper = band.sel(ci_bound="lower").values, band.sel(ci_bound="upper").values
    assert np.all(lower < out["mean_predicted"].values) and np.all(out["mean_predicted"].values < upper)
    # binomial half-width of a bin of 250: 1.645 sqrt(p(1-p)/250) <= 0.052
    centre = (lower + upper) / 2
    np.testing.assert_allclose(centre, out["mean_predicted"].values, atol=0.02)
    assert np.all(upper - lower < 0.12)
    assert out.attrs["ci_prob"] == 0.9


def test_consistency_check_observed_values_are_the_metrics():
    from bayescal import metrics

    d = simulate_scores("beta_skewed", 400, random_state=2)
    out = D.consistency_check(d.scores, d.y, n_bins=7, n_replicates=20, band=False, random_state=0)
    assert out["observed"].sel(statistic="ece") == pytest.approx(metrics.ece(d.y, d.scores, n_bins=7))
    assert out["observed"].sel(statistic="mcb") == pytest.approx(metrics.corp_decomposition(d.y, d.scores).mcb)
    np.testing.assert_allclose(out["count"].values, metrics.reliability_curve(d.y, d.scores, n_bins=7)["count"])


def test_consistency_check_of_text_labels_scores_the_class_pos_label_names():
    """Calibrated scores of "fraud" with labels in words: consistent with pos_label="fraud" (the
    greater word, "ok", was taken silently, which made them look miscalibrated)."""
    d = simulate_scores("beta_skewed", 400, random_state=2)
    words = np.where(d.y == 1, "fraud", "ok")
    by_word = D.consistency_check(d.scores, words, n_replicates=50, band=False, random_state=0, pos_label="fraud")
    by_code = D.consistency_check(d.scores, d.y, n_replicates=50, band=False, random_state=0)
    np.testing.assert_allclose(by_word["p_value"], by_code["p_value"])
    with pytest.raises(ValueError, match=r"text labels.*pos_label="):
        D.consistency_check(d.scores, words, n_replicates=50)


def test_consistency_check_says_it_holds_the_scores_fixed():
    """It redraws the labels only, at the observed scores; its docstrings cited Broecker & Smith's
    consistency resampling, which also redraws the forecasts, as what it computes."""
    for doc in (D.consistency_check.__doc__, D.__doc__):
        text = " ".join(doc.split())
        assert "Broecker & Smith" in text and "also redraw" in text and "fixed" in text
    assert "the consistency resampling of Broecker & Smith (2007), which also gives" not in " ".join(D.__doc__.split())


def test_consistency_check_refuses_a_band_that_is_not_a_bool():
    d = simulate_scores(CALIBRATED, 100, random_state=0)
    for band in ("no", 0, None):
        with pytest.raises(ValueError, match=f"band={band!r} must be True or False"):
            D.consistency_check(d.scores, d.y, n_replicates=5, band=band)
    assert "band" not in D.consistency_check(d.scores, d.y, n_replicates=5, band=np.False_, random_state=0)


# ----------------------------------------------------------------------------- PPC of the fit


def test_ppc_accepts_the_dpm_fit_and_rejects_platt_on_a_non_monotone_map(bimodal):
    d, dpm = bimodal
    good = D.ppc_calibration(dpm, d.scores, d.y, random_state=0)
    assert good["observed"].dims == ("statistic", "chain", "draw")
    assert np.all(good["p_value"].values > 0.05)
    # Platt's monotone logistic cannot follow the U-shaped map: its replicates are far more
    # reliable than the observed labels
    bad = D.ppc_calibration(PlattScaling().fit(d.scores, d.y), d.scores, d.y, random_state=0)
    assert np.all(bad["p_value"].values < 0.01)
    assert bad.attrs["replicates_per_draw"] == D.MIN_REPLICATES  # one draw, replicated


def test_ppc_of_the_true_map_gives_uniform_p_values():
    """With the exact map the observed and replicated labels are exchangeable: p ~ U(0, 1)."""
    truth = TRUTHS["beta_bimodal"]
    pvals = []
    for r in range(40):
        d = simulate_scores(truth, 300, random_state=2000 + r)
        exact = TrueMap(truth=truth).fit(d.scores, d.y)
        pvals.append(
            float(
                D.ppc_calibration(exact, d.scores, d.y, statistics="ece", min_replicates=200, random_state=r)[
                    "p_value"
                ].squeeze()
            )
        )
    assert np.mean(np.array(pvals) < 0.05) <= 0.125
    assert stats.kstest(pvals, "uniform").pvalue > 0.01


def test_ppc_is_reproducible_and_leaves_inputs_alone(skewed):
    d, dpm = skewed
    s, y = d.scores.copy(), d.y.copy()
    a = D.ppc_calibration(dpm, s, y, statistics="ece", random_state=11)
    b = D.ppc_calibration(dpm, s, y, statistics="ece", random_state=11)
    np.testing.assert_array_equal(a["replicated"].values, b["replicated"].values)
    np.testing.assert_array_equal(s, d.scores)
    np.testing.assert_array_equal(y, d.y)


def test_ppc_checks_the_ece_binning_even_for_a_statistic_without_bins(skewed):
    """statistics="mcb" has no bins, so n_bins=-3 and strategy="bogus" went unchecked into attrs."""
    d, _ = skewed
    platt = PlattScaling().fit(d.scores, d.y)
    with pytest.raises(ValueError, match=r"n_bins=-3 is not a positive integer"):
        D.ppc_calibration(platt, d.scores, d.y, statistics="mcb", n_bins=-3, random_state=0)
    with pytest.raises(ValueError, match=r"strategy='bogus' is not one of \('quantile', 'uniform', 'papers'\)"):
        D.ppc_calibration(platt, d.scores, d.y, statistics="mcb", strategy="bogus", random_state=0)


def test_a_point_estimate_s_p_value_is_the_monte_carlo_one_and_never_zero():
    """One Platt draw replicated 500 times is a parametric bootstrap: its p-value was the bare share
    of replicates, exactly 0 for a misfit, beside consistency_check's (1 + #)/(1 + R)."""
    d = simulate_scores("beta_skewed", 400, random_state=0)
    flipped = 1 - d.y
    platt = PlattScaling().fit(d.scores, d.y)
    out = D.ppc_calibration(platt, d.scores, flipped, random_state=0)
    R = out.sizes["chain"] * out.sizes["draw"]
    assert R == D.MIN_REPLICATES
    hits = (out["replicated"] >= out["observed"]).sum(("chain", "draw"))
    np.testing.assert_allclose(out["p_value"], (1 + hits) / (1 + R))
    np.testing.assert_allclose(out["p_value"], 1 / (1 + R))  # a misfit: never exactly 0
    cons = D.consistency_check(d.scores, flipped, n_replicates=R, band=False, random_state=0)
    np.testing.assert_allclose(cons["p_value"], 1 / (1 + R))
    # the one-draw KDE's density check follows the same convention
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    dens = D.score_density_check(kde, d.scores, flipped, bins=[0.0, 0.5, 1.0], random_state=0)
    assert np.all(dens["p_value"].values >= 1 / (1 + D.MIN_REPLICATES))


def test_a_posterior_s_p_value_is_the_posterior_share(skewed):
    d, dpm = skewed
    out = D.ppc_calibration(dpm, d.scores, d.y, statistics="ece", random_state=0)
    np.testing.assert_allclose(out["p_value"], (out["replicated"] >= out["observed"]).mean(("chain", "draw")))


# ----------------------------------------------------------------------------- true calibration error


def test_true_map_gives_the_exact_empirical_error():
    truth = TRUTHS["beta_skewed"]
    d = simulate_scores(truth, 3000, random_state=8)
    exact = TrueMap(truth=truth).fit(d.scores, d.y)
    out = D.calibration_error_posterior(exact, d.scores, tolerance=0.05)
    gap = truth.calibration_map(d.scores) - d.scores
    assert float(out["ece"].squeeze()) == pytest.approx(np.mean(np.abs(gap)), rel=1e-12)
    assert float(out["reliability"].squeeze()) == pytest.approx(np.mean(gap**2), rel=1e-12)
    assert float(out["l2"].squeeze()) == pytest.approx(np.sqrt(np.mean(gap**2)), rel=1e-12)
    # and it estimates the population value (sampling error of 3000 scores)
    assert float(out["ece"].squeeze()) == pytest.approx(true_errors(truth)["ece"], abs=0.01)
    assert out.attrs["score_distribution"] == "empirical"
    assert out["prob_below_tolerance"].sel(measure="ece") == 0.0


def _covers(truth_name, reps, seed0):
    truth = TRUTHS[truth_name]
    target = true_errors(truth)
    hits = []
    for r in range(reps):
        d = simulate_scores(truth, 500, random_state=seed0 + r)
        out = D.calibration_error_posterior(_dpm(d.scores, d.y, seed=r), ci_prob=0.95)
        assert out.attrs["score_distribution"] == "model"  # the default without scores
        hits.append(
            [
                out[f"{m}_ci"].sel(ci_bound="lower") <= target[m] <= out[f"{m}_ci"].sel(ci_bound="upper")
                for m in ("ece", "reliability")
            ]
        )
    return np.mean(hits, axis=0)


@pytest.mark.parametrize("truth", ["beta_skewed", "beta_bimodal"])
def test_true_calibration_error_interval_covers_fast(truth):
    """Fast subset of the coverage study: at least 4 of 5 repetitions covered (a 95 % interval
    fails this with probability 0.02)."""
    assert np.all(_covers(truth, 5, seed0=500) >= 0.8)


@pytest.mark.slow
@pytest.mark.parametrize("truth", ["beta_skewed", "beta_bimodal"])
def test_true_calibration_error_interval_covers_in_90_percent_of_20(truth):
    """Issue check: the 95 % interval covers the true error in at least 18 of 20 repetitions."""
    assert np.all(_covers(truth, 20, seed0=100) >= 0.9)


def test_tolerance_probability_separates_calibrated_from_miscalibrated(skewed):
    _d, dpm = skewed
    out = D.calibration_error_posterior(dpm, tolerance=0.05)
    assert float(out["prob_below_tolerance"].sel(measure="ece")) == 0.0  # true ECE 0.16
    c = simulate_scores(CALIBRATED, 1500, random_state=9)
    near = D.calibration_error_posterior(_dpm(c.scores, c.y), tolerance=0.1)
    assert float(near["prob_below_tolerance"].sel(measure="ece")) > 0.9


def test_model_and_empirical_score_distributions_agree(skewed):
    d, dpm = skewed
    model = D.calibration_error_posterior(dpm, score_distribution="model")
    emp = D.calibration_error_posterior(dpm, d.scores, score_distribution="empirical")
    assert float(model["ece_mean"]) == pytest.approx(float(emp["ece_mean"]), abs=0.01)
    assert model["ece"].dims == ("chain", "draw")
    assert model["ece_ci"].dims == ("ci_bound",)


def test_model_error_and_density_check_on_scores_piled_near_zero():
    """A confident classifier: an eighth of the negatives' scores below 1e-3. The model's score
    density grows like 1 / s there; integrated on a probability-scale grid it put nearly all the
    weight on the smallest score (ECE 0.0003 against a true 0.09, and bin probabilities summing to
    70). On the logit scale the model's ECE interval holds the true error and each class's bin
    probabilities sum to at most 1."""
    truth = ScoreTruth(stats.beta(0.4, 8), stats.beta(4, 1.2), 0.3)
    d = simulate_scores(truth, 400, random_state=0)
    dpm = _dpm(d.scores, d.y)
    true_ece = true_errors(truth)["ece"]
    out = D.calibration_error_posterior(dpm, score_distribution="model")
    assert float(out["ece_ci"].sel(ci_bound="lower")) <= true_ece <= float(out["ece_ci"].sel(ci_bound="upper"))
    emp = D.calibration_error_posterior(dpm, d.scores, score_distribution="empirical")
    assert float(out["ece_mean"]) == pytest.approx(float(emp["ece_mean"]), abs=0.02)
    check = D.score_density_check(dpm, d.scores, d.y, random_state=0)
    mass = (check["density"] * (check["bin_upper"] - check["bin_lower"])).sum("bin")
    assert np.all(mass.values <= 1.0 + 1e-6) and np.all(mass.mean(("chain", "draw")).values > 0.97)
    assert np.all(check["p_value"].values > 0.05)  # the model fits its own data


def test_calibration_error_posterior_averages_over_the_scores_it_is_given(skewed):
    """Given scores, the error is the one on those scores; without, the model's score distribution.
    A DPM ignored (and did not check) the scores passed, and a KDE shifted to a Beta prior did too,
    while one shifted to a fixed prior used them."""
    d, dpm = skewed
    other = simulate_scores("beta_bimodal", 300, random_state=2).scores
    given = D.calibration_error_posterior(dpm, other)
    assert given.attrs["score_distribution"] == "empirical"
    explicit = D.calibration_error_posterior(dpm, other, score_distribution="empirical")
    np.testing.assert_array_equal(given["ece"].values, explicit["ece"].values)
    assert D.calibration_error_posterior(dpm).attrs["score_distribution"] == "model"
    with pytest.raises(ValueError, match="scores"):
        D.calibration_error_posterior(dpm, ["junk", None])
    # the rule does not depend on the number of prior draws
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    for shifted in (kde.with_class_prior(0.3), kde.with_class_prior((3, 7), random_state=0)):
        on_other = D.calibration_error_posterior(shifted, other)
        assert on_other.attrs["score_distribution"] == "empirical"
        q = shifted.predict_posterior(other).values
        assert float(on_other["ece_mean"]) == pytest.approx(np.mean(np.abs(q - other)), rel=1e-9)
        assert D.calibration_error_posterior(shifted).attrs["score_distribution"] == "model"
    # a calibrator without a model of the scores needs them, and says so
    with pytest.raises(ValueError, match=r"needs the scores to average the error over: pass scores="):
        D.calibration_error_posterior(PlattScaling().fit(d.scores, d.y))


def test_tolerance_compares_the_reliability_with_its_square(skewed):
    """REL is in squared units: its probability is P(REL < tol**2), the same as P(l2 error < tol).
    It was P(REL < tol): 1 at a tolerance equal to the median l2 error, which half the draws exceed."""
    _d, dpm = skewed
    l2 = np.sort(D.calibration_error_posterior(dpm)["l2"].values.ravel())
    tol = float((l2[len(l2) // 2 - 1] + l2[len(l2) // 2]) / 2)  # between two draws: half below
    out = D.calibration_error_posterior(dpm, tolerance=tol)["prob_below_tolerance"]
    assert float(out.sel(measure="l2")) == pytest.approx(0.5)
    assert float(out.sel(measure="reliability")) == float(out.sel(measure="l2"))


# ----------------------------------------------------------------------------- score densities


def test_score_density_check_fits_its_own_data_and_flags_other_data(skewed):
    d, dpm = skewed
    out = D.score_density_check(dpm, d.scores, d.y, bins=15, random_state=0)
    np.testing.assert_array_equal(out["observed_count"].sum("bin").values, [np.sum(d.y == 0), np.sum(d.y == 1)])
    assert np.all(out["p_value"].values > 0.05)
    # the bins cover the observed range, so each class's posterior mass there is close to 1
    width = out["bin_upper"] - out["bin_lower"]
    mass = (out["density"] * width).sum("bin").mean(("chain", "draw"))
    assert np.all(mass.values > 0.97) and np.all(mass.values <= 1.0 + 1e-9)
    lo, hi = out["density_band"].sel(ci_bound="lower"), out["density_band"].sel(ci_bound="upper")
    assert bool(((lo <= out["density"].mean(("chain", "draw"))) & (out["density"].mean(("chain", "draw")) <= hi)).all())
    # scores from another truth do not look like the fitted densities
    other = simulate_scores("beta_bimodal", 500, random_state=1)
    assert np.all(D.score_density_check(dpm, other.scores, other.y, random_state=0)["p_value"].values < 0.01)


def test_score_density_check_p_value_is_calibrated_under_the_exact_model_with_two_bins():
    """Each replicate's counts were independent binomials per bin: right marginals, but the bins of a
    replicated data set of n_c scores are negatively correlated (a multinomial). With 2 bins the
    replicated X^2 was 0.5 chi2_2 instead of chi2_1, and the exact model was rejected at 0.05 in 8-9 %
    of data sets (4 % at 0.01). As one multinomial per replicate the rates are nominal."""
    truth = CALIBRATED
    edges = [0.0, float(truth.f0.ppf(0.5)), 1.0]  # 2 bins of equal class-0 mass
    rng = np.random.default_rng(1)
    pvals = []
    for r in range(600):
        y = (rng.random(300) < truth.pi).astype(int)
        s = np.where(y == 1, truth.f1.rvs(300, random_state=rng), truth.f0.rvs(300, random_state=rng))
        exact = TrueDensities(truth=truth).fit(s, y)
        out = D.score_density_check(exact, s, y, bins=edges, min_replicates=200, random_state=r)
        pvals.append(out["p_value"].values)
    p = np.ravel(pvals)  # 1200 p-values, both classes
    tolerance = 3 * np.sqrt(0.05 * 0.95 / p.size)  # 0.019
    assert abs(np.mean(p <= 0.05) - 0.05) < tolerance
    assert np.mean(p <= 0.01) < 0.01 + 3 * np.sqrt(0.01 * 0.99 / p.size)


def test_score_density_check_replicates_each_class_as_one_multinomial(skewed):
    """A replicate's bin counts sum to at most n_c (the rest fall outside the bins) and covary
    negatively, as Multinomial(n_c, P) counts do: cov = -n_c P_a P_b."""
    d, _ = skewed
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    out = D.score_density_check(kde, d.scores, d.y, bins=[0.2, 0.5, 0.8], min_replicates=4000, random_state=0)
    rep = out["replicated_count"].isel(chain=0, draw=0)  # (replicate, class, bin)
    n_c = np.array([np.sum(d.y == 0), np.sum(d.y == 1)])
    assert np.all(rep.sum("bin").values <= n_c)
    prob = (out["density"] * (out["bin_upper"] - out["bin_lower"])).isel(chain=0, draw=0).values  # (class, bin)
    assert np.all(prob.sum(axis=-1) < 0.95)  # some of each class lies outside [0.2, 0.8]
    for c in (0, 1):
        cov = np.cov(rep.values[:, c].T)[0, 1]
        expected = -n_c[c] * prob[c, 0] * prob[c, 1]
        assert cov < 0 and cov == pytest.approx(expected, rel=0.2)


def test_score_density_check_of_a_point_estimate_replicates_its_one_draw(skewed):
    # one draw (KDE): without replicates the p-value could only be 0 or 1
    d, _ = skewed
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    out = D.score_density_check(kde, d.scores, d.y, random_state=0)
    assert out.attrs["replicates_per_draw"] == 500 and out.sizes["replicate"] == 500
    assert out["replicated_count"].dims == ("chain", "draw", "replicate", "class", "bin")
    # the density holds the KDE's one draw, as density_map does, not 500 copies of it
    assert out["density"].sizes["draw"] == kde.density_map(5).sizes["draw"] == 1
    assert "density_band" not in out and "count_band" in out
    p = out["p_value"].values
    assert np.all((p > 0.0) & (p < 1.0))
    np.testing.assert_array_equal(D.score_density_check(kde, d.scores, d.y, random_state=0)["p_value"].values, p)


def test_score_density_check_counts_the_atoms_at_the_ends_of_the_bins():
    """Confident negatives below 1e-12 (none exactly 0) and positives clipped at 0.998: the DPM puts
    the negatives in its atom at 0.0, outside [min(scores), max(scores)] on the input scale. Its
    mass was dropped while its rows were counted, so a model that fits was rejected (bin 0 of
    class 0: 49 observed, 7 expected). On the working scale, where the model puts them, they fall
    in the end bin; the atom at 0.998 (the scores' own value) in the last."""
    rng = np.random.default_rng(11)
    y = (rng.random(600) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(4, 2, 600), rng.beta(2, 4, 600))
    s[np.flatnonzero(y == 0)[:40]] = 10.0 ** rng.uniform(-18, -13, 40)
    s = np.where(y == 1, np.minimum(s, 0.998), s)
    s[np.flatnonzero(y == 1)[:30]] = 0.998
    dpm = _dpm(s, y)
    atoms = dpm.score_atoms()["atom"].values
    assert atoms.min() < s.min() and atoms.max() == s.max()  # the case of the fix
    out = D.score_density_check(dpm, s, y, random_state=0)
    n_c = out["observed_count"].sum("bin")
    expected = n_c * (out["density"] * (out["bin_upper"] - out["bin_lower"])).mean(("chain", "draw"))
    ends = {0: 0, 1: -1}  # class -> its end bin
    for c, b in ends.items():
        obs = float(out["observed_count"].sel({"class": c}).isel(bin=b))
        exp = float(expected.sel({"class": c}).isel(bin=b))
        assert abs(obs - exp) < 4 * np.sqrt(exp), (c, obs, exp)
    assert np.all(expected.sum("bin") / n_c > 0.97)
    assert np.all(out["p_value"].values > 0.01)


def test_score_density_check_names_bins_outside_0_1(skewed):
    """Edges outside [0, 1] were refused with the scores' message, which told the user to set a
    score_kind the function does not take."""
    d, _ = skewed
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    with pytest.raises(ValueError, match=r"bins has edges outside \[0, 1\].*bins=np\.linspace\(0, 1, 11\)") as raised:
        D.score_density_check(kde, d.scores, d.y, bins=[-0.1, 0.5, 1.1])
    assert "score_kind" not in str(raised.value)


# ----------------------------------------------------------------------------- ArviZ tree


def test_posterior_predictive_tree_feeds_arviz_pava(skewed):
    from arviz_stats.helper_stats import isotonic_fit

    d, dpm = skewed
    tree = D.posterior_predictive_tree(dpm, d.scores, d.y, random_state=0)
    pp = tree["posterior_predictive"]["y"]
    assert pp.dims == ("chain", "draw", "obs_id") and pp.shape == (1, 600, 500)
    assert tree["posterior_predictive"].attrs["replicates_per_draw"] == 3  # 200 draws, >= 500 replicates
    p = dpm.predict_posterior(d.scores).values
    assert abs(float(pp.mean()) - p.mean()) < 0.01
    cal = isotonic_fit(tree, ["y"], "posterior_predictive", 0.9)
    assert cal["y"].sizes["plot_axis"] == 4


def test_posterior_predictive_tree_of_a_point_estimate_gives_arviz_forecasts():
    """ArviZ's PAV check forecasts with the mean of the replicated labels over the draws: with
    Platt's one draw every forecast was 0 or 1 and the band had no width (plot_ppc_pava drew that
    silently). Replicated 500 times, the forecasts are Platt's probabilities and the band opens."""
    from arviz_stats.helper_stats import isotonic_fit

    rng = np.random.default_rng(0)
    s = rng.beta(2, 2, 300)
    y = (rng.random(300) < s**2).astype(int)
    platt = PlattScaling().fit(s, y)
    tree = D.posterior_predictive_tree(platt, s, y, random_state=0)
    forecast, _cep, lower, upper = isotonic_fit(tree, ["y"], "posterior_predictive", 0.9)["y"].values
    p = platt.predict_proba(s)[:, 1]
    np.testing.assert_allclose(np.sort(forecast), np.sort(p), atol=0.1)
    assert np.max(upper - lower) > 0.1
    assert tree["posterior_predictive"].attrs["replicates_per_draw"] == D.MIN_REPLICATES


# ----------------------------------------------------------------------------- bad input


def test_bad_input_raises_clear_errors(skewed):
    d, dpm = skewed
    with pytest.raises(ValueError, match="statistics"):
        D.ppc_calibration(dpm, d.scores, d.y, statistics="brier")
    with pytest.raises(ValueError, match="n_replicates"):
        D.consistency_check(d.scores, d.y, n_replicates=0)
    with pytest.raises(ValueError, match="scores"):
        D.consistency_check(d.scores * 2, d.y)
    with pytest.raises(ValueError, match="ci_prob"):
        D.consistency_check(d.scores, d.y, ci_prob=1.5)
    with pytest.raises(ValueError, match="score_distribution"):
        D.calibration_error_posterior(dpm, d.scores, score_distribution="kde")
    with pytest.raises(ValueError, match="tolerance"):
        D.calibration_error_posterior(dpm, d.scores, tolerance=-0.1)
    with pytest.raises(ValueError, match=r"tolerance=\[0\.1\] must be one positive number"):
        D.calibration_error_posterior(dpm, d.scores, tolerance=[0.1])
    with pytest.raises(ValueError, match="tolerance='a' must be a real number"):
        D.calibration_error_posterior(dpm, d.scores, tolerance="a")
    for statistics in (None, 3, ["ece", 1]):
        with pytest.raises(ValueError, match=r"statistics=.*use one or more of"):
            D.consistency_check(d.scores, d.y, statistics=statistics)
    with pytest.raises(ValueError, match=r"outside \[0, 1\].*pass predicted probabilities") as raised:
        D.consistency_check(d.scores * 2, d.y)
    assert "set score_kind" not in str(raised.value)  # consistency_check has no score_kind
    with pytest.raises(ValueError, match="pass scores"):
        D.calibration_error_posterior(dpm, score_distribution="empirical")
    platt = PlattScaling().fit(d.scores, d.y)
    with pytest.raises(ValueError, match="density_map"):
        D.calibration_error_posterior(platt, score_distribution="model")
    with pytest.raises(ValueError, match="density_map"):
        D.score_density_check(platt, d.scores, d.y)
    decision = PlattScaling(score_kind="decision").fit(d.scores * 4 - 2, d.y)
    with pytest.raises(ValueError, match="probability"):
        D.calibration_error_posterior(decision, d.scores)
    with pytest.raises(ValueError, match="increasing"):
        D.score_density_check(dpm, d.scores, d.y, bins=[0.5, 0.2, 0.9])
    same = np.full(6, 0.3)  # no range to split into bins: an error naming bins, not infinite densities
    with pytest.raises(ValueError, match=r"Every score equals 0\.3.*pass bins as edges"):
        D.score_density_check(dpm, same, np.array([0, 1, 0, 1, 0, 1]))
    checked = D.score_density_check(dpm, same, np.array([0, 1, 0, 1, 0, 1]), bins=[0.0, 0.5, 1.0], random_state=0)
    assert np.isfinite(checked["observed_density"]).all() and np.isfinite(checked["density"]).all()


def test_absurd_replicate_and_grid_counts_are_refused_by_name(skewed):
    """min_replicates=10**9 raised numpy's MemoryError (2.9 TiB), n_replicates=10**9 looped for
    hours, grid_size=10**9 was killed for memory: now a ValueError naming the argument, before any
    work. Counts within MAX_REPLICATES / MAX_GRID_SIZE are refused as well when their arrays would
    pass MAX_WORK_ELEMENTS, with the largest value that fits."""
    d, dpm = skewed
    platt = PlattScaling().fit(d.scores, d.y)
    kde = bayescal.make_calibrator("kde").fit(d.scores, d.y)
    huge = r"=1000000000 is more than 1000000 replicates: pass a smaller number"
    for name, call in (
        ("min_replicates", lambda: D.ppc_calibration(platt, d.scores, d.y, min_replicates=10**9)),
        ("min_replicates", lambda: D.posterior_predictive_tree(platt, d.scores, d.y, min_replicates=10**9)),
        ("min_replicates", lambda: D.score_density_check(kde, d.scores, d.y, min_replicates=10**9)),
        ("n_replicates", lambda: D.consistency_check(d.scores, d.y, n_replicates=10**9, band=False)),
    ):
        with pytest.raises(ValueError, match=name + huge):
            call()
    with pytest.raises(ValueError, match=r"grid_size=1000000000 is more than 10000000 points"):
        D.calibration_error_posterior(dpm, grid_size=10**9)
    # within the counts' bounds, but the arrays would hold more than 10**8 values: 500 rows x 10**6
    n_fit = D.MAX_WORK_ELEMENTS // d.scores.size
    for call in (
        lambda: D.ppc_calibration(platt, d.scores, d.y, min_replicates=10**6),
        lambda: D.posterior_predictive_tree(platt, d.scores, d.y, min_replicates=10**6),
    ):
        with pytest.raises(ValueError, match=rf"^min_replicates=1000000 would need .*min_replicates={n_fit} or less"):
            call()
    from bayescal.metrics import reliability_curve

    n_band = reliability_curve(d.y, d.scores, n_bins=400).sizes["bin"]  # > 100 bins: > 10**8 fractions
    assert n_band > 100
    fits = D.MAX_WORK_ELEMENTS // n_band
    with pytest.raises(ValueError, match=rf"^n_replicates=1000000 would .*n_replicates={fits} or less, or band=False"):
        D.consistency_check(d.scores, d.y, n_replicates=10**6, n_bins=400)
    draws = dpm.class_prior_draws().size  # 200: 10**8 / 200 grid points at most
    with pytest.raises(
        ValueError, match=rf"^grid_size=1000000 would need .*grid_size={D.MAX_WORK_ELEMENTS // draws} or"
    ):
        D.calibration_error_posterior(dpm, grid_size=10**6)
    with pytest.raises(ValueError, match=r"^bins=100000000 with points_per_bin=16 would need .*pass fewer bins or a"):
        D.score_density_check(kde, d.scores, d.y, bins=10**8)
    with pytest.raises(ValueError, match=r"^bins=20 with points_per_bin=1000000 would need .*smaller points_per_bin"):
        D.score_density_check(dpm, d.scores, d.y, points_per_bin=10**6)
    with pytest.raises(ValueError, match=r"^min_replicates=100000 would need .* replicated counts .*min_replicates="):
        D.score_density_check(kde, d.scores, d.y, bins=10**3, min_replicates=10**5)


# ----------------------------------------------------------------------------- properties


@settings(max_examples=25, deadline=None)
@given(
    n=st.integers(5, 120),
    seed=st.integers(0, 10_000),
    n_bins=st.integers(1, 12),
    strategy=st.sampled_from(["quantile", "uniform", "papers"]),
)
def test_consistency_check_invariants(n, seed, n_bins, strategy):
    rng = np.random.default_rng(seed)
    s = rng.random(n)
    y = (rng.random(n) < s).astype(int)
    s0, y0 = s.copy(), y.copy()
    out = D.consistency_check(s, y, n_bins=n_bins, strategy=strategy, n_replicates=20, random_state=seed)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)
    assert np.all((out["p_value"] >= 1 / 21) & (out["p_value"] <= 1))
    assert float(out["count"].sum()) == n
    band = out["band"]
    assert np.all(band.sel(ci_bound="lower") <= band.sel(ci_bound="upper"))
    assert np.all((band >= 0) & (band <= 1))
    assert np.all(out["replicated"] >= 0)
