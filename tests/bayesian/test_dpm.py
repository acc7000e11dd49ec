"""Tests of the DPM calibrator, its Gibbs sampler, priors and mixture evaluation (tiny settings)."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy import stats
from scipy.special import expit, logsumexp

import bayescal
from bayescal import IsotonicCalibrator
from bayescal.bayesian import mixture
from bayescal.bayesian.dpm import DPMCalibrator, _present_families
from bayescal.bayesian.gibbs import fit_gibbs
from bayescal.bayesian.priors import DEFAULT_PRIOR, PRIOR_KEYS, resolve_priors
from bayescal.data import ScoreSummary

TINY = {"n_components": 8, "draws": 150, "tune": 150, "chains": 2}
# tiny chains have not converged on the map, which the calibrator rightly says; not under test here
pytestmark = pytest.mark.filterwarnings("ignore:The chains disagree on the calibration map:UserWarning")


def monotone_data(n, rng, pi=0.4):
    y = (rng.random(n) < pi).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, n), rng.beta(2, 5, n))
    return s, y


def monotone_truth(s, pi=0.4):
    a, b = pi * stats.beta(5, 2).pdf(s), (1 - pi) * stats.beta(2, 5).pdf(s)
    return a / (a + b)


@pytest.fixture(scope="module")
def fitted():
    s, y = monotone_data(600, np.random.default_rng(1))  # the contract, on one family's layout
    return DPMCalibrator(random_state=3, components="gaussian", **TINY).fit(s, y), s, y


# ---- mixture evaluation -------------------------------------------------------------
def test_log_density_matches_scipy_including_far_tails(rng):
    w = rng.dirichlet(np.ones(5), size=(3, 2))
    mu, sigma = rng.normal(size=(3, 2, 5)), np.exp(rng.normal(size=(3, 2, 5)) - 1)
    t = np.concatenate([np.linspace(-3, 3, 50), [-400.0, 250.0]])
    got = mixture.log_density(t, w, mu, sigma)
    ref = logsumexp(np.log(w)[..., None] + stats.norm.logpdf(t, mu[..., None], sigma[..., None]), axis=-2)
    assert got.shape == (3, 2, t.size)
    np.testing.assert_allclose(got, ref, rtol=1e-10)


def test_map_far_outside_the_data_is_finite_not_nan():
    pi = np.array([0.5])
    w = np.array([[[1.0, 0.0], [1.0, 0.0]]])
    mu = np.array([[[-1.0, 0.0], [1.0, 0.0]]])
    sigma = np.ones((1, 2, 2))
    p = mixture.map_draws(np.array([-1e3, 0.0, 1e3]), np.empty(0), pi, w, mu, sigma, np.zeros((1, 2, 0)))
    # log odds = 2t for unit Gaussians at -1 and 1
    np.testing.assert_allclose(p[0], [0.0, 0.5, 1.0])
    assert np.all(np.isfinite(p))


def test_log_joint_at_points_on_and_off_the_atoms(rng):
    """Off the atoms log p(t, y=c) = log pi_c + log(1 - Q_c) + log f_c(t), at an atom log pi_c + log q_ca;
    a point's value does not depend on which other points are asked for (none, or atoms among them)."""
    S, K = 4, 3
    w = rng.dirichlet(np.ones(K), size=(S, 2))
    mu, sigma = rng.normal(size=(S, 2, K)), rng.uniform(0.3, 1.0, size=(S, 2, K))
    pi, atom_prob = rng.uniform(0.2, 0.6, S), rng.uniform(0.0, 0.1, size=(S, 2, 2))
    atoms, t = np.array([-3.0, 3.0]), np.array([-3.0, 0.0, 1.0, 3.0])
    got = mixture.log_joint(t, atoms, pi, w, mu, sigma, atom_prob)
    log_prior = np.stack([np.log1p(-pi), np.log(pi)], axis=1)[..., None]
    off = log_prior + np.log1p(-atom_prob.sum(axis=-1))[..., None] + mixture.log_density(t[1:3], w, mu, sigma)
    np.testing.assert_allclose(got[:, :, 1:3], off, rtol=1e-12)
    np.testing.assert_allclose(got[:, :, [0, 3]], log_prior + np.log(atom_prob), rtol=1e-12)
    assert np.array_equal(mixture.log_joint(t[1:3], atoms, pi, w, mu, sigma, atom_prob), got[:, :, 1:3])
    assert mixture.log_joint(np.empty(0), atoms, pi, w, mu, sigma, atom_prob).shape == (S, 2, 0)


# ---- priors -------------------------------------------------------------------------
def test_priors_precedence_user_over_kde_over_default(rng):
    x0, x1 = rng.normal(-1, 1, 500), rng.normal(2, 0.5, 300)
    p = resolve_priors({1: {"mu_scale": 7.0}, 0: {"alpha_shape": 3.0}}, [x0, x1], [np.ones(500), np.ones(300)], 10)
    assert set(p[0]) == set(PRIOR_KEYS) == set(p[1])
    assert p[0]["alpha_shape"] == 3.0 and p[1]["alpha_shape"] == DEFAULT_PRIOR["alpha_shape"]  # user, then default
    assert p[1]["mu_scale"] == 7.0  # user wins over KDE
    assert p[0]["mu_scale"] == pytest.approx(x0.std())  # KDE-informed
    # the class's quantiles, centre-out: the first (heaviest) sticks at the middle, the extremes last
    levels = np.array([9, 11, 7, 13, 5, 15, 3, 17, 1, 19]) / 20
    np.testing.assert_allclose(p[1]["mu_loc"], np.quantile(x1, levels), atol=0.02)
    h = 1.06 * min(x1.std(), np.subtract(*np.quantile(x1, [0.75, 0.25])) / 1.349) * 300**-0.2  # robust spread
    assert p[1]["sigma_logmean"] == pytest.approx(np.log(h), abs=2e-3)  # quantile conventions differ a little
    both = resolve_priors({"sigma_logsd": 0.5, "mu_loc": 0.0}, [x0, x1], [np.ones(500), np.ones(300)], 4)
    assert both[0]["sigma_logsd"] == both[1]["sigma_logsd"] == 0.5
    np.testing.assert_array_equal(both[1]["mu_loc"], np.zeros(4))


def test_far_scores_do_not_widen_the_components_scale_prior(rng):
    """Half a percent of a class's scores far out (glitches of a scoring pipeline) leave the
    components' scale prior at the bulk's bandwidth, where the standard deviation they inflate
    twenty-fold would centre it; the location prior keeps the standard deviation, so a component
    can still reach them."""
    from bayescal.bayesian.priors import kde_prior

    bulk = rng.normal(0.0, 1.0, 2000)
    glitched = bulk.copy()
    glitched[:10] = rng.normal(0.0, 300.0, 10)
    ones = np.ones_like(bulk)
    clean, dirty = kde_prior(bulk, ones, 8), kde_prior(glitched, ones, 8)
    assert abs(dirty["sigma_logmean"] - clean["sigma_logmean"]) < np.log(1.05)
    np.testing.assert_allclose(dirty["init_sigma"], np.exp(dirty["sigma_logmean"]))
    assert dirty["mu_scale"] == pytest.approx(glitched.std()) and dirty["mu_scale"] > 10 * clean["mu_scale"]
    # the former rule (standard deviation in the bandwidth) is what the far scores inflate
    assert kde_prior(glitched, ones, 8, robust=False)["sigma_logmean"] - clean["sigma_logmean"] > np.log(10)


def test_beta_shape_prior_does_not_narrow_the_components_as_the_class_grows(rng):
    """A class that is one Beta density has the same shapes at 10^3 and 10^5 scores: the Beta
    components' prior centres stop following the KDE bandwidth above BETA_PRIOR_MAX_UNITS,
    while the Gaussian components' scale prior keeps it (h ~ n^(-1/5))."""
    from scipy.special import logit

    from bayescal.bayesian.priors import BETA_PRIOR_MAX_UNITS, kde_prior

    x = logit(rng.beta(2, 5, 2000))
    small, big = np.ones_like(x), np.full_like(x, 50.0)  # the same shape with 2,000 and 100,000 scores
    beta_small, beta_big = (kde_prior(x, c, 8, family="beta") for c in (small, big))
    np.testing.assert_allclose(beta_big["a_logloc"], beta_small["a_logloc"])
    np.testing.assert_allclose(beta_big["b_logloc"], beta_small["b_logloc"])
    at_cap = kde_prior(x, np.full_like(x, BETA_PRIOR_MAX_UNITS / x.size), 8, family="beta")
    spread = min(x.std(), np.subtract(*np.quantile(x, [0.75, 0.25])) / 1.349)
    h_cap = 1.06 * spread * BETA_PRIOR_MAX_UNITS**-0.2  # the prior's h is Silverman's (robust) at the cap
    np.testing.assert_allclose(at_cap["a_logloc"], beta_small["a_logloc"])
    first = np.quantile(x, 3.5 / 8)  # the first (heaviest) stick's centre: the middle quantile, centre-out
    np.testing.assert_allclose(at_cap["a_logloc"][0], np.log1p(np.exp(first)) - 2 * np.log(h_cap), atol=0.01)
    gauss_small, gauss_big = (kde_prior(x, c, 8)["sigma_logmean"] for c in (small, big))
    assert gauss_big - gauss_small == pytest.approx(-0.2 * np.log(50))


@pytest.mark.parametrize(
    "priors, match",
    [
        ({"alpha": 1.0}, "unknown key"),
        ({0: {"mu_sd": 1.0}}, "unknown key"),
        ({0: {"alpha_rate": 2.0}, "alpha_shape": 2.0}, r"mixes class keys \(0, 1\) with hyperparameter names"),
        ({"mu_loc": [1.0, 2.0]}, "shape"),
        ({"alpha_rate": -1.0}, "positive"),
        ({"alpha_shape": True}, r"alpha_shape'\]=True must be a number"),
        ({"mu_scale": "x"}, r"mu_scale'\]='x' must be a number"),
        ({"mu_scale": 1e200}, r"mu_scale'\]=1e\+200 lies outside \[1e-100, 1e\+100\]"),
        ({"sigma_logsd": 1e-200}, r"sigma_logsd'\]=1e-200 lies outside \[0.001, 20\]"),
        # a location beyond 1e100, or a log-scale beyond log(1e100), gave a numpy error or a flat map
        ({"mu_loc": 1e200}, r"mu_loc'\]=1e\+200 lies outside \[-1e\+100, 1e\+100\]"),
        ({"sigma_logmean": -800}, r"sigma_logmean'\]=-800 lies outside \[-230, 230\]"),
        ({"sigma_logmean": 800}, r"sigma_logmean'\]=800 lies outside"),
        ({"b_logloc": -800}, r"b_logloc'\]=-800 lies outside"),
        ("strong", "pass None"),
    ],
)
def test_bad_priors_raise(priors, match):
    s, y = monotone_data(100, np.random.default_rng(0))
    with pytest.raises(ValueError, match=match):
        DPMCalibrator(priors=priors, **TINY).fit(s, y)


@pytest.mark.parametrize(
    "params, match",
    [
        ({"n_components": 1}, "n_components"),
        ({"inference": "laplace"}, "inference"),
        ({"draws": 0}, "draws"),
        ({"draws": 3}, "draws=3 must be an integer of at least 4"),  # each chain split in halves of 2
        ({"atom_min_count": 1}, "atom_min_count=1 must be an integer of at least 2"),
        ({"grid_size": 3_000_000}, "grid_size=3000000 must be an integer from 16 to 65536"),
        ({"n_bins": 10**9}, "n_bins=1000000000 must be an integer from 2 to 65536"),
        ({"draws": 10**9}, r"chains=2 x draws=1000000000 x grid_size=1024 .*lower grid_size or draws"),
        ({"atom_threshold": 0.0}, "atom_threshold"),
        ({"route_options": {"learning_rate": 0.1}}, "route_options"),
        ({"null_stacking": "yes"}, "null_stacking"),
        ({"atom_threshold": "a"}, "atom_threshold='a' must be a real number"),
        ({"route_options": {"n_components": 3}}, r"route_options\['n_components'\].*pass n_components="),
        ({"route_options": {"random_seed": 3}}, r"route_options\['random_seed'\].*pass random_state="),
        ({"route_options": {"family": "beta"}}, r"route_options\['family'\].*pass components="),
        ({"route_options": {"tune": 10}}, r"route_options\['tune'\].*pass tune="),
        ({"route_options": {"merge_split": 20}, "components": "beta"}, "merge_split=20.*set components='gaussian'"),
    ],
)
def test_bad_parameters_raise(params, match):
    s, y = monotone_data(100, np.random.default_rng(0))
    with pytest.raises(ValueError, match=match):
        DPMCalibrator(**(TINY | params)).fit(s, y)


def test_a_refit_with_a_mistyped_option_keeps_the_former_fit():
    """The Jupyter workflow: a refit with a typo in route_options raises, and the calibrator
    still answers as its former fit (it answered 0.9 where it had said 0.03: the new data's
    atoms and grid beside the former map)."""
    s, y = monotone_data(300, np.random.default_rng(0))
    model = DPMCalibrator(**TINY, random_state=0).fit(s, y)
    grid = np.array([0.1, 0.3, 0.5])
    before = model.predict_proba(grid)
    model.set_params(route_options={"hmc_step": 20})
    with pytest.raises(ValueError, match="route_options"):
        model.fit(s**3, y)
    np.testing.assert_array_equal(model.set_params(route_options=None).predict_proba(grid), before)


def test_hamiltonian_moves_run_on_raw_and_compressed_scores():
    """route_options={"hmc_steps": L}: the fit runs the moves (their acceptance is reported) and
    is reproducible from the seed; on compressed scores every component stays at least as wide
    as the narrowest bin (the floor that bounds the bin-centre likelihood, recorded with the
    priors), so the moves find no spike."""
    s, y = monotone_data(300, np.random.default_rng(2))
    kw = TINY | {"random_state": 4, "components": "gaussian", "route_options": {"hmc_steps": 5}}
    a, b = DPMCalibrator(**kw).fit(s, y), DPMCalibrator(**kw).fit(s, y)
    np.testing.assert_array_equal(a.predict_proba(s), b.predict_proba(s))
    assert 0.0 < a.diagnostics_["gaussian"]["class_1"]["hmc_acceptance"] <= 1.0
    plain = DPMCalibrator(**TINY, random_state=4, components="gaussian").fit(s, y)
    assert not np.array_equal(a.predict_proba(s), plain.predict_proba(s))
    binned = DPMCalibrator(**(kw | {"compress_above": 100})).fit(s, y)
    floor = json.loads(binned.idata_.attrs["priors"])[0]["scale_floor"]
    assert floor == pytest.approx(np.diff(binned.idata_["observed_data"]["bin"].values).min())
    assert binned.idata_["posterior"]["sigma"].values.min() >= floor * (1 - 1e-12)
    assert 0.0 < binned.diagnostics_["gaussian"]["class_1"]["hmc_acceptance"] <= 1.0


@pytest.mark.parametrize(("n_jobs", "components"), [(1, "select"), (2, "select"), (2, "gaussian")])
def test_the_inference_route_runs_on_one_blas_thread_and_the_process_setting_is_restored(
    monkeypatch, n_jobs, components
):
    """The routes' BLAS calls are on a class's parameters (L-BFGS-B's updates of 3K numbers,
    PyTensor's small products): with more BLAS threads than free cores each call waits for a
    descheduled thread (under another process's load a fit of 10^6 scores took 9 s instead of
    2 s; benchmarks/dpm_speed.py --load). The user's own setting is theirs again after the fit."""
    from threadpoolctl import threadpool_info

    from bayescal.bayesian.gibbs import GibbsChains

    def blas_threads():
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    seen, init, advance = [], GibbsChains.__init__, GibbsChains.advance

    def recording(method):
        def run(self, *args, **kwargs):
            seen.append(blas_threads())
            return method(self, *args, **kwargs)

        return run

    monkeypatch.setattr(GibbsChains, "__init__", recording(init))  # the start search runs here
    monkeypatch.setattr(GibbsChains, "advance", recording(advance))
    before = blas_threads()
    s, y = monotone_data(200, np.random.default_rng(0))
    DPMCalibrator(**TINY, random_state=0, n_jobs=n_jobs, components=components).fit(s, y)
    # both classes of each family: started, run to the comparison and (the kept one) on
    assert len(seen) == (10 if components == "select" else 4) and all(threads == {1} for threads in seen)
    assert blas_threads() == before


# ---- Gibbs sampler ------------------------------------------------------------------
def test_gibbs_recovers_a_known_density_and_is_seeded(rng):
    x = np.concatenate([rng.normal(-2, 0.5, 350), rng.normal(1.5, 1.0, 650)])
    prior = resolve_priors(None, [x, x], [np.ones(x.size)] * 2, 10)[0]
    fit = fit_gibbs(x, np.ones(x.size), prior, n_components=10, draws=200, random_seed=5, tune=200)
    post = fit.posterior
    assert post["weight"].dims == ("chain", "draw", "component") and post["alpha"].dims == ("chain", "draw")
    np.testing.assert_allclose(post["weight"].sum("component"), 1.0)
    grid = np.linspace(-3.5, 4, 60)
    dens = np.exp(mixture.log_density(grid, post["weight"].values, post["mu"].values, post["sigma"].values))
    true = 0.35 * stats.norm.pdf(grid, -2, 0.5) + 0.65 * stats.norm.pdf(grid, 1.5, 1.0)
    assert np.abs(dens.mean(axis=(0, 1)) - true).max() < 0.05
    again = fit_gibbs(x, np.ones(x.size), prior, n_components=10, draws=200, random_seed=5, tune=200)
    np.testing.assert_array_equal(again.posterior["mu"], post["mu"])


def test_gibbs_uses_counts_as_repeated_points(rng):
    """Counts weight the likelihood: binned data recover the density, not the spread of the bin values."""
    x = np.round(rng.normal(0, 1, 3000), 1)
    vals, cnt = np.unique(x, return_counts=True)
    prior = resolve_priors(None, [vals, vals], [cnt.astype(float)] * 2, 6)[0]
    # Seed 2: on lattice values with counts (ties not spread, as the calibrator's preparation
    # would) a chain can fall into a spike mode, a component of vanishing scale on one value;
    # about 1 chain in 10 does within 400 sweeps, with the numpy and the compiled sweeps alike
    # (so the sweeps are fixed at 400: thin=1).
    post = fit_gibbs(
        vals, cnt.astype(float), prior, n_components=6, draws=200, tune=200, thin=1, random_seed=2
    ).posterior
    grid = np.linspace(-2, 2, 21)
    dens = np.exp(mixture.log_density(grid, post["weight"].values, post["mu"].values, post["sigma"].values))
    assert np.abs(dens.mean(axis=(0, 1)) - stats.norm.pdf(grid)).max() < 0.04


def test_gibbs_fractional_weights_scale_like_counts(rng):
    """Weights 0.5 on doubled data give about the same density as weights 1 (fractional handling)."""
    x = rng.normal(1.0, 2.0, 400)
    prior = resolve_priors(None, [x, x], [np.ones(x.size)] * 2, 5)[0]
    half = fit_gibbs(
        np.r_[x, x], np.full(2 * x.size, 0.5), prior, n_components=5, draws=200, tune=200, random_seed=2
    ).posterior
    grid = np.linspace(-3, 5, 17)
    dens = np.exp(mixture.log_density(grid, half["weight"].values, half["mu"].values, half["sigma"].values))
    assert np.abs(dens.mean(axis=(0, 1)) - stats.norm.pdf(grid, 1.0, 2.0)).max() < 0.03


# ---- calibrator contract ------------------------------------------------------------
def test_contract_shapes_and_posterior_layout(fitted):
    model, s, _ = fitted
    post = model.idata_["posterior"]
    assert post["pi"].dims == ("chain", "draw")
    assert model.idata_.attrs["components"] == "gaussian"
    assert "beta_a" not in post and "family" not in model.idata_["sample_stats"]
    for name in ("weight", "mu", "sigma"):
        assert post[name].dims == ("chain", "draw", "class", "component")
        assert post[name].shape == (2, 150, 2, 8)
    assert post["alpha"].dims == ("chain", "draw", "class")
    assert "atom_prob" not in post and "atom" not in post.dims  # no atoms: no empty dimension
    assert "observed_data" in model.idata_.children and "sample_stats" in model.idata_.children
    assert model.idata_.attrs["inference"] == "gibbs" and model.idata_.attrs["compressed"] == 0
    conv = model.diagnostics_["map"]
    assert conv["rhat_max"] >= 1.0 and 0 < conv["ess_bulk_min"] <= conv["ess_bulk_median"] <= 2 * 150 * 1.5
    assert model.diagnostics_["divergences"] == 0
    proba = model.predict_proba(s)
    assert proba.shape == (s.size, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    cmap = model.calibration_map(50)
    assert cmap.dims == ("chain", "draw", "score") and cmap.shape == (2, 150, 50)
    band = model.credible_band(np.linspace(0.05, 0.95, 40), ci_prob=0.9)
    mean = model.predict_proba(np.linspace(0.05, 0.95, 40))[:, 1]
    assert band.dims == ("score", "ci_bound")
    assert np.all(band.sel(ci_bound="lower").values <= mean + 1e-12)
    assert np.all(mean <= band.sel(ci_bound="upper").values + 1e-12)
    post_pred = model.predict_posterior(s[:7])
    assert post_pred.dims == ("chain", "draw", "obs_id") and post_pred.shape == (2, 150, 7)
    dens = model.density_map(np.linspace(0, 1, 801))
    assert dens.dims == ("chain", "draw", "class", "score")
    # no atoms: each class density integrates to about one over [0, 1]
    np.testing.assert_allclose(np.trapezoid(dens.mean(("chain", "draw")).values, dens["score"].values), 1.0, atol=0.02)
    ppc = model.sample_posterior_predictive(s[:5], random_state=0)
    assert ppc["posterior_predictive"]["y"].shape == (2, 150, 5)


def test_auto_components_posterior_layout(fitted, tmp_path):
    """components="auto": both families' parameters, each draw one family's (the other's NaN),
    each family holding its averaging weight's share of the draws."""
    _, s, y = fitted
    model = DPMCalibrator(random_state=3, components="auto", **TINY).fit(s, y)
    post = model.idata_["posterior"]
    assert model.idata_.attrs["components"] == "auto"
    for name in ("weight", "mu", "sigma", "beta_a", "beta_b"):
        assert post[name].dims == ("chain", "draw", "class", "component")
        assert post[name].shape == (2, 150, 2, 8)
    # both families fitted: each draw is one family's, whose parameters are set and the other's NaN
    family = model.idata_["sample_stats"]["family"].values
    gauss = family == 0
    assert set(np.unique(family)) <= {0, 1}
    assert np.isfinite(post["mu"].values[gauss]).all() and np.isnan(post["mu"].values[~gauss]).all()
    assert np.isfinite(post["beta_a"].values[~gauss]).all() and np.isnan(post["beta_a"].values[gauss]).all()
    weights = model.diagnostics_["model_averaging"]
    shares = {"gaussian": gauss.mean(), "beta": (~gauss).mean()}
    informative = model.idata_["sample_stats"]["informative"].values.astype(bool)
    for name, code in (("gaussian", 0), ("beta", 1)):
        assert abs((informative & (family == code)).mean() - weights[f"weight_{name}"]) <= 1 / family.size
    assert shares["gaussian"] + shares["beta"] == 1.0
    path = tmp_path / "auto.nc"
    model.save(path)
    loaded = DPMCalibrator.load(path)
    np.testing.assert_array_equal(loaded.calibration_map(20).values, model.calibration_map(20).values)
    np.testing.assert_array_equal(loaded.density_map(20).values, model.density_map(20).values)


def test_interpolated_prediction_matches_direct_evaluation(fitted):
    model, s, _ = fitted
    t = np.log(s / (1 - s))
    direct = model._with_constant_draws(model._mixture_map(t, np.empty(0))).mean(axis=0)
    # linear interpolation on 1024 points: error well below the Monte Carlo error of the mean (~5e-3)
    np.testing.assert_allclose(model.predict_proba(s)[:, 1], direct, atol=2e-3)


def test_known_truth_accuracy_and_band_coverage():
    s, y = monotone_data(3000, np.random.default_rng(7))
    model = DPMCalibrator(random_state=0, draws=200, tune=200, compress_above=1000).fit(s, y)
    grid = np.linspace(*np.quantile(s, [0.025, 0.975]), 100)
    truth = monotone_truth(grid)
    assert np.abs(model.predict_proba(grid)[:, 1] - truth).mean() < 0.02
    band = model.credible_band(grid, ci_prob=0.95)
    inside = (band.sel(ci_bound="lower").values <= truth) & (truth <= band.sel(ci_bound="upper").values)
    assert inside.mean() >= 0.8


def test_same_seed_same_map_other_seed_differs():
    s, y = monotone_data(300, np.random.default_rng(2))
    a = DPMCalibrator(random_state=11, **TINY).fit(s, y).calibration_map(30)
    b = DPMCalibrator(random_state=11, **TINY).fit(s, y).calibration_map(30)
    c = DPMCalibrator(random_state=12, **TINY).fit(s, y).calibration_map(30)
    np.testing.assert_array_equal(a.values, b.values)
    assert not np.array_equal(a.values, c.values)


def test_inputs_not_modified():
    s, y = monotone_data(200, np.random.default_rng(3))
    s0, y0 = s.copy(), y.copy()
    DPMCalibrator(random_state=0, **TINY).fit(s, y)
    np.testing.assert_array_equal(s, s0)
    np.testing.assert_array_equal(y, y0)


# ---- atoms ----------------------------------------------------------------------------
def test_exact_zero_and_one_are_point_masses():
    rng = np.random.default_rng(4)
    s, y = monotone_data(1000, rng)
    s[(y == 0) & (rng.random(s.size) < 0.15)] = 0.0  # 15 % of negatives at exactly 0
    s[(y == 1) & (rng.random(s.size) < 0.05)] = 1.0
    zeros_pos = np.flatnonzero((y == 1) & (s > 0) & (s < 1))[:3]
    s[zeros_pos] = 0.0  # a few positives at 0 too
    s[np.flatnonzero((y == 0) & (s > 0))[:20]] = 1e-30  # underflowed scores pile up with the exact zeros
    model = DPMCalibrator(random_state=1, **TINY).fit(s, y)
    np.testing.assert_array_equal(model.atoms_, [0.0, 1.0])
    assert model.predict_proba([1e-30])[0, 1] == model.predict_proba([0.0])[0, 1]
    post = model.idata_["posterior"]
    np.testing.assert_array_equal(post["atom"].values, [0.0, 1.0])
    pi, q = post["pi"].values, post["atom_prob"].values
    informative = model.idata_["sample_stats"]["informative"].values
    at_zero = pi * q[..., 1, 0] / (pi * q[..., 1, 0] + (1 - pi) * q[..., 0, 0])
    expected = np.where(informative == 1, at_zero, pi).mean()  # constant-map draws (null model) give pi
    p0 = model.predict_proba([0.0])[0, 1]
    assert p0 == pytest.approx(expected, rel=1e-12)
    n0_at0, n1_at0 = ((s < 1e-12) & (y == 0)).sum(), ((s < 1e-12) & (y == 1)).sum()
    assert p0 == pytest.approx(n1_at0 / (n0_at0 + n1_at0), abs=0.05)  # close to the empirical share
    # mass of the atom within each class: posterior mean near the observed share
    share0 = n0_at0 / (y == 0).sum()
    assert q[..., 0, 0].mean() == pytest.approx(share0, abs=0.02)
    # the atoms do not leak into the continuous fit: the map near 0 is from the densities
    assert model.predict_proba([1e-3])[0, 1] < 0.05
    draws = model.predict_posterior([0.0, 1.0]).values
    assert draws[..., 1].mean() > 0.9  # only positives sit at 1


def test_repeated_value_with_a_noticeable_share_is_an_atom():
    rng = np.random.default_rng(5)
    s, y = monotone_data(800, rng)
    s[rng.random(s.size) < 0.1] = 0.3
    model = DPMCalibrator(random_state=1, **TINY).fit(s, y)
    np.testing.assert_array_equal(model.atoms_, [0.3])


def test_an_atom_whose_logit_does_not_round_trip_is_matched_to_its_scores():
    """0.998 comes back from the logit scale 1 ulp off (expit(logit(0.998)) != 0.998): the atom's
    input-scale value is the scores' own, so the scores at it get the atom's map and the model
    comparison scores them as the atom. Before, those 40 rows (37 positive) were scored by the
    continuous densities, the constant map won the averaging, and the map was the overall share
    of positives (0.44) at every score, the atom included."""
    from bayescal.data import from_working, to_working

    assert from_working(to_working(np.array([0.998]), "probability"), "probability")[0] != 0.998
    rng = np.random.default_rng(0)
    s = np.r_[rng.beta(2, 5, 300), np.full(40, 0.998), np.full(40, 0.3)]
    y = np.r_[rng.random(300) < 0.3, rng.random(40) < 0.95, rng.random(40) < 0.9].astype(int)
    model = DPMCalibrator(random_state=0, draws=200, tune=200).fit(s, y)
    np.testing.assert_array_equal(model.atoms_, [0.3, 0.998])
    p = model.predict_proba([0.998, 0.998 * (1 - 1e-9), 0.3, 0.5])[:, 1]
    assert p[0] > 0.8 and p[2] > 0.8  # the atoms' own shares of positives (0.95, 0.9)
    assert p[1] < 0.5 and p[3] < 0.5  # beside them, the continuous map (0.3)
    assert model.diagnostics_["model_averaging"]["weight_constant"] < 0.5


def lattice_truth(v, step, pi=0.4):
    """P(y = 1 | score rounded to v) for the monotone truth rounded to a lattice of ``step``."""
    lo, hi = np.clip(v - step / 2, 0, 1), np.clip(v + step / 2, 0, 1)
    a = pi * (stats.beta(5, 2).cdf(hi) - stats.beta(5, 2).cdf(lo))
    b = (1 - pi) * (stats.beta(2, 5).cdf(hi) - stats.beta(2, 5).cdf(lo))
    return a / (a + b)


def test_lattice_scores_are_a_rounded_continuous_score_not_atoms():
    # vote-share-like scores on a 1/40 lattice: every value repeats ~37 times per class. They
    # used to be atoms (and the fit refused: no continuous scores left); now only the ends
    # are, the ties are spread over their rounding cells, and the map follows the truth
    # (without spreading: MAE 0.022 on this seed, spikes on the tied values)
    step = 1 / 40
    s, y = monotone_data(1500, np.random.default_rng(1))
    s = np.round(s / step) * step
    model = DPMCalibrator(random_state=1, n_components=8, draws=200, tune=200, components="gaussian").fit(s, y)
    np.testing.assert_array_equal(model.atoms_, [0.0, 1.0])
    v = np.unique(s)
    v = v[(v >= np.quantile(s, 0.025)) & (v <= np.quantile(s, 0.975))]
    assert np.abs(model.predict_proba(v)[:, 1] - lattice_truth(v, step)).mean() < 0.015


def test_a_value_standing_out_of_a_lattice_is_an_atom():
    step = 1 / 40
    rng = np.random.default_rng(8)
    s, y = monotone_data(1500, rng)
    s = np.round(s / step) * step
    s[rng.random(s.size) < 0.1] = 0.5  # a point mass on top of the lattice
    model = DPMCalibrator(random_state=1, **TINY).fit(s, y)
    ends = [a for a in (0.0, 1.0) if np.any(s == a)]  # exact 0 and 1 are always atoms
    np.testing.assert_array_equal(model.atoms_, sorted([*ends, 0.5]))


# ---- compression -----------------------------------------------------------------------
def test_compressed_fit_agrees_with_raw_fit():
    s, y = monotone_data(1500, np.random.default_rng(6))
    kw = {"random_state": 2, "n_components": 8, "draws": 500, "tune": 200}
    raw = DPMCalibrator(compress_above=10_000, **kw).fit(s, y)
    comp = DPMCalibrator(compress_above=1000, **kw).fit(s, y)
    assert comp.idata_.attrs["compressed"] == 1
    assert comp.idata_["observed_data"]["counts"].dims == ("class", "bin")
    assert comp.idata_["observed_data"]["counts"].sum().item() == pytest.approx(1500)
    grid = np.linspace(*np.quantile(s, [0.025, 0.975]), 50)
    diff = np.abs(raw.predict_proba(grid)[:, 1] - comp.predict_proba(grid)[:, 1])
    # the Monte Carlo error of two separate runs dominates the binning error
    assert diff.mean() < 5e-3 and diff.max() < 0.03
    # a ScoreSummary keeps its own (equal-width) bins: another binning of the same likelihood
    summary = ScoreSummary.from_arrays(s, y, n_bins=1024)
    from_summary = DPMCalibrator(**kw).fit(summary)
    diff = np.abs(raw.predict_proba(grid)[:, 1] - from_summary.predict_proba(grid)[:, 1])
    assert diff.mean() < 5e-3 and diff.max() < 0.03


def test_weighted_rows_lay_out_the_compressed_bins_as_repeated_rows():
    """A row of weight k acts as k rows also when the scores are compressed: 100 rows of weight
    100 in a narrow band among 2,900 spread rows of weight 1. The bins' centre and scale came from
    the unweighted rows, so the band holding 78 % of the weight fell into one bin and the map was
    flat there (0.52 throughout, where the repeated rows give 0.01 to 1.0)."""
    rng = np.random.default_rng(0)
    narrow, wide = rng.normal(0, 0.01, 100), rng.normal(0, 10, 2900)
    s = np.r_[narrow, wide]
    y = np.r_[(rng.random(100) < expit(narrow / 0.004)), rng.random(2900) < 0.5].astype(int)
    w = np.r_[np.full(100, 100.0), np.ones(2900)]
    kw = {"random_state": 0, "score_kind": "decision", "draws": 200, "tune": 200, "null_stacking": False}
    weighted = DPMCalibrator(**kw).fit(s, y, sample_weight=w)
    rows = np.repeat(np.arange(s.size), w.astype(int))
    repeated = DPMCalibrator(**kw).fit(s[rows], y[rows])
    assert weighted.idata_.attrs["compressed"] == 1 and repeated.idata_.attrs["compressed"] == 1
    np.testing.assert_allclose(
        np.diff(weighted.idata_["observed_data"]["bin"].values).min(),
        np.diff(repeated.idata_["observed_data"]["bin"].values).min(),
        rtol=0.5,
    )
    g = np.array([-0.02, -0.01, 0.0, 0.01, 0.02])
    truth = expit(g / 0.004)  # the narrow band's rows outweigh the wide ones there by about 3,000 to 1
    assert np.max(np.abs(weighted.predict_proba(g)[:, 1] - truth)) < 0.2


def test_a_few_outlying_decision_values_do_not_blur_the_compressed_fit():
    """Heavy-tailed decision values (Student t, 2 degrees of freedom) with one score at 250:
    equal-width bins over the whole range left about 30 bins for the bulk of the data and the
    map missed the truth by 0.3; the compressed fit must stay as accurate as the raw one."""
    from scipy import stats

    rng = np.random.default_rng(3)
    n = 6000
    y = (rng.random(n) < 0.5).astype(int)
    s = stats.t.rvs(2, size=n, random_state=rng) + np.where(y == 1, 1.0, -1.0)
    s[np.argmax(s)] = 250.0  # one outlying positive
    grid = np.linspace(*np.quantile(s, [0.025, 0.975]), 100)
    f1, f0 = stats.t.pdf(grid - 1.0, 2), stats.t.pdf(grid + 1.0, 2)
    truth = f1 / (f1 + f0)
    kw = {"random_state": 0, "score_kind": "decision"}
    comp = DPMCalibrator(**kw).fit(s, y)
    raw = DPMCalibrator(compress_above=10_000, **kw).fit(s, y)
    assert comp.idata_.attrs["compressed"] == 1 and raw.idata_.attrs["compressed"] == 0
    err_comp = np.abs(comp.predict_proba(grid)[:, 1] - truth).mean()
    err_raw = np.abs(raw.predict_proba(grid)[:, 1] - truth).mean()
    assert err_comp < err_raw + 0.01 and err_comp < 0.05  # equal-width bins: 0.31 (raw 0.02)


def test_a_far_outlier_does_not_turn_the_map_into_straight_lines():
    """Student-t (2 degrees of freedom) decision values with one score at 10^4: an equally spaced
    prediction grid over that range put no grid point inside the bulk of the data, so the map
    and its band were interpolated as one straight line across it (error 0.26, the 95 % band
    covering 0.35 of the truth); the grid must keep the bulk finely resolved."""
    rng = np.random.default_rng(5)
    n = 3000
    y = (rng.random(n) < 0.5).astype(int)
    s = stats.t.rvs(2, size=n, random_state=rng) + np.where(y == 1, 1.0, -1.0)
    s[np.argmax(s)] = 1e4
    region = np.quantile(s, [0.025, 0.975])
    grid = np.linspace(*region, 100)
    f1, f0 = stats.t.pdf(grid - 1.0, 2), stats.t.pdf(grid + 1.0, 2)
    truth = f1 / (f1 + f0)
    model = DPMCalibrator(random_state=0, score_kind="decision", **TINY).fit(s, y)
    inside = (model.grid_ >= region[0]) & (model.grid_ <= region[1])
    assert inside.sum() >= 50 and model.grid_[[0, -1]] @ [-1, 1] > 1e4  # the bulk resolved, the outlier covered
    assert np.abs(model.predict_proba(grid)[:, 1] - truth).mean() < 0.03
    lo, hi = np.quantile(model.calibration_map(grid).values.reshape(-1, grid.size), [0.025, 0.975], axis=0)
    assert np.mean((lo <= truth) & (truth <= hi)) > 0.8
    # scores without outliers keep the equally spaced grid
    plain = DPMCalibrator(random_state=0, score_kind="decision", **TINY).fit(np.clip(s, -20, 20), y)
    np.testing.assert_allclose(np.diff(plain.grid_), np.diff(plain.grid_)[0], rtol=1e-9)


# ---- averaging with the constant map -------------------------------------------------------
def test_psis_leave_one_out_of_the_labels_is_exact_on_a_conjugate_model():
    """With f1 = f0 fixed the model's label predictive is pi, whose leave-one-out is known exactly.

    The importance ratios come from the joint likelihood p(t, y | theta) while the predicted
    quantity is p(y | t, theta): the PSIS estimate must match n_y / (n + 1) per point."""
    from bayescal.bayesian.averaging import model_weights

    rng = np.random.default_rng(0)
    y = (rng.random(60) < 0.3).astype(int)
    n1, n0 = y.sum(), y.size - y.sum()
    pi = rng.beta(1 + n1, 1 + n0, size=4000)
    log_f = rng.normal(size=y.size)  # the same density value for both classes at each point
    log_joint = np.stack([np.log1p(-pi), np.log(pi)], axis=1)[..., None] + log_f
    result = model_weights({"gaussian": log_joint}, y, {"gaussian": 1.0})
    exact = np.sum(np.log(np.where(y == 1, n1, n0) / (y.size + 1.0)))
    assert result["elpd_constant"] == pytest.approx(exact, rel=1e-12)
    assert result["elpd_gaussian"] == pytest.approx(exact, abs=0.05)
    assert result["pareto_k_max"] < 0.5


def test_leave_one_out_log_scores_match_the_exact_ones_of_a_conjugate_model():
    """With pi ~ Beta(1 + n1, 1 + n0) and a density value f(t_i) shared by both classes,
    p(t_i, y_i | D_-i) = f(t_i) n_{y_i} / (n + 1) exactly; the PSIS terms must match point by point."""
    from bayescal.bayesian.averaging import loo_log_scores

    rng = np.random.default_rng(0)
    y = (rng.random(60) < 0.3).astype(int)
    n1, n0 = y.sum(), y.size - y.sum()
    pi = rng.beta(1 + n1, 1 + n0, size=4000)
    log_f = rng.normal(size=y.size)
    log_joint = np.stack([np.log1p(-pi), np.log(pi)], axis=1)[..., None] + log_f
    label, terms, k_max = loo_log_scores(log_joint, y, 1.0)
    exact = log_f + np.log(np.where(y == 1, n1, n0) / (y.size + 1.0))
    np.testing.assert_allclose(terms, exact, atol=0.01)
    np.testing.assert_allclose(label, exact - log_f, atol=0.01)  # the label's term: the same without f(t_i)
    assert k_max < 0.5


@pytest.mark.parametrize("r_eff", [1.0, 0.3, 0.05])
def test_psis_log_weights_equal_arviz_stats_psislw_column_by_column(r_eff):
    """The vectorised smoothing gives ArviZ's weights and k-hat, on light and heavy tails."""
    import xarray as xr

    from bayescal.bayesian.averaging import psis_log_weights

    rng = np.random.default_rng(1)
    S = 1000
    ll = np.column_stack(
        [rng.normal(scale=s, size=S) for s in (0.01, 0.5, 2.0)]
        + [-np.log(rng.pareto(a, size=S) + 1.0) for a in (0.5, 1.5, 3.0)]
        + [rng.standard_t(2, size=S)]
    )
    lw, k = psis_log_weights(-ll, r_eff)
    ref_lw, ref_k = xr.DataArray(ll, dims=("draw", "obs_id")).azstats.psislw(r_eff=r_eff, dim="draw")
    np.testing.assert_allclose(k, ref_k.values, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lw, ref_lw.transpose("draw", "obs_id").values, rtol=1e-10, atol=1e-10)
    assert k[3] > 0.7 > k[0]  # the Pareto(0.5) ratios have an infinite-variance tail, the near-constant ones none


def test_null_model_gets_no_weight_when_it_loses_by_many_nats_despite_a_few_bad_labels(monkeypatch):
    """Stacking weights keep a few % on the constant to insure badly predicted labels, and
    those constant draws would stretch the band; the pseudo-BMA+ weight is 1 here."""
    import arviz_stats

    from bayescal.bayesian import averaging

    rng = np.random.default_rng(0)
    n, S = 200, 2000
    y = (rng.random(n) < 0.5).astype(int)
    p_true_label = np.where(np.arange(n) < 5, 1e-3, 0.95)  # 5 labels predicted very badly
    log_f = rng.normal(scale=0.01, size=(S, n))  # p(t_i | theta): nearly fixed, so PSIS is easy
    log_joint = np.empty((S, 2, n))
    log_joint[:, 1] = np.where(y == 1, np.log(p_true_label), np.log1p(-p_true_label)) + log_f
    log_joint[:, 0] = np.where(y == 0, np.log(p_true_label), np.log1p(-p_true_label)) + log_f
    result = averaging.model_weights({"gaussian": log_joint}, y, {"gaussian": 1.0})
    assert result["elpd_gaussian"] > result["elpd_constant"] + 50
    assert result["weight_gaussian"] > 1 - 1e-9
    real_compare = arviz_stats.compare  # the same leave-one-out terms under stacking weights
    monkeypatch.setattr(
        arviz_stats, "compare", lambda models, **kw: real_compare(models, **(kw | {"method": "stacking"}))
    )
    assert averaging.model_weights({"gaussian": log_joint}, y, {"gaussian": 1.0})["weight_gaussian"] < 0.99


def test_null_stacking_flattens_the_map_where_scores_carry_no_signal():
    weights = []
    for seed in range(8):
        rng = np.random.default_rng(seed)
        s, y = rng.beta(2, 2, 300), (rng.random(300) < 0.4).astype(int)
        grid = np.linspace(*np.quantile(s, [0.025, 0.975]), 50)
        stacked = DPMCalibrator(random_state=seed, **TINY).fit(s, y)
        alone = DPMCalibrator(random_state=seed, null_stacking=False, **TINY).fit(s, y)
        weights.append(1.0 - stacked.diagnostics_["model_averaging"]["weight_constant"])
        spread = np.ptp(stacked.predict_proba(grid)[:, 1])
        assert spread <= np.ptp(alone.predict_proba(grid)[:, 1])
        if weights[-1] < 0.1:  # mostly the constant map: near the label share, nearly flat
            assert spread < 0.05
            assert np.abs(stacked.predict_proba(grid)[:, 1] - y.mean()).max() < 0.05
    # pseudo-BMA+ weights: the constant wins on most null data sets, not always (chance structure);
    # over 16 seeds about 70 % of the weights fall below 0.25, with a mean near 0.25
    assert sum(w < 0.25 for w in weights) >= 5 and np.mean(weights) < 0.4


def test_null_stacking_keeps_the_mixtures_draws_where_scores_carry_signal(fitted):
    _, s, y = fitted
    model = DPMCalibrator(random_state=3, components="gaussian", **TINY).fit(s, y)
    result = model.diagnostics_["model_averaging"]
    assert result["elpd_gaussian"] > result["elpd_constant"] + 100
    # pseudo-BMA+ puts no weight on a model that loses by 100 nats: no constant draw stretches the band
    assert result["weight_constant"] < 1e-9 and model.idata_["sample_stats"]["informative"].values.all()
    assert result["n_points"] == s.size and 0.0 <= result["pareto_k_high"] <= 1.0
    informative = model.idata_["sample_stats"]["informative"].values.astype(bool)
    assert (~informative).sum() == round(result["weight_constant"] * informative.size)
    alone = DPMCalibrator(random_state=3, null_stacking=False, components="gaussian", **TINY).fit(s, y)
    assert "informative" not in alone.idata_["sample_stats"]
    grid = np.linspace(0.05, 0.95, 30)
    stacked_draws, alone_draws = model.calibration_map(grid).values, alone.calibration_map(grid).values
    # the mixtures' draws are untouched; the constant-map draws are pi at every score
    np.testing.assert_array_equal(stacked_draws[informative], alone_draws[informative])
    pi = model.idata_["posterior"]["pi"].values
    np.testing.assert_array_equal(stacked_draws[~informative], np.repeat(pi[~informative][:, None], grid.size, 1))


def test_the_averaging_weighs_the_evidence_of_as_many_points_as_the_data_hold_rows():
    """Pseudo-BMA weights grow with the number of points: atoms (counted rows), a weight of 1.5
    or weights of 0.5 once made it 1000 points for 120 rows and the constant map's weight 0.99-1.0
    (0.68 on the plain rows), which collapsed the band."""
    rng = np.random.default_rng(7)
    n = 120
    y = (rng.random(n) < 0.5).astype(int)
    s = rng.random(n) * 0.9 + 0.05  # no signal
    params = TINY | {"components": "gaussian"}
    s_atom = s.copy()
    s_atom[:8] = 0.0  # an atom counting 8 rows
    one_heavier = np.ones(n)
    one_heavier[0] = 1.5
    for scores, w, rows in ((s, None, n), (s_atom, None, n), (s, one_heavier, n), (s, np.full(n, 0.5), n // 2)):
        model = DPMCalibrator(random_state=0, **params).fit(scores, y, sample_weight=w)
        assert model.diagnostics_["model_averaging"]["n_points"] == rows
    # integer weights are the rows they count, in the averaging too
    twice = DPMCalibrator(random_state=0, **params).fit(s[:60], y[:60], sample_weight=np.full(60, 2.0))
    assert twice.diagnostics_["model_averaging"]["n_points"] == n


def test_null_stacking_with_too_few_draws_warns_and_is_skipped():
    s, y = monotone_data(200, np.random.default_rng(5))
    with pytest.warns(UserWarning, match="needs at least 100 posterior draws"):
        model = DPMCalibrator(random_state=0, components="auto", **(TINY | {"draws": 20})).fit(s, y)
    assert "informative" not in model.idata_["sample_stats"] and "model_averaging" not in model.diagnostics_
    assert (model.idata_["sample_stats"]["family"].values == 0).mean() == 0.5  # both families, equal parts


def test_select_with_too_few_draws_warns_and_keeps_the_first_family():
    s, y = monotone_data(200, np.random.default_rng(5))
    with pytest.warns(UserWarning, match="components='select' needs at least 100 posterior draws"):
        model = DPMCalibrator(random_state=0, components="select", null_stacking=False, **(TINY | {"draws": 20}))
        model.fit(s, y)
    assert model.diagnostics_["family_selection"] == {"chosen": "gaussian", "pilot_draws": 20}
    assert _present_families(model.idata_["posterior"]) == ["gaussian"] and "beta" not in model.diagnostics_


def test_every_warning_of_a_fit_points_at_the_callers_line(monkeypatch):
    """A warning attributed to the user's line is shown by default (a DeprecationWarning only
    then) and tells a notebook user which call it is about."""
    from bayescal.bayesian import convergence

    monkeypatch.setattr(convergence, "MAP_RHAT_WARN", 0.0)  # every fit's chains "disagree"
    s, y = monotone_data(200, np.random.default_rng(5))
    with pytest.warns(Warning) as record:
        DPMCalibrator(random_seed=0, **(TINY | {"draws": 20})).fit(s, y)  # select and averaging too few draws
        DPMCalibrator(random_state=0, components="gaussian", **TINY).fit(s, y)
    messages = [str(w.message) for w in record]
    assert any("random_seed is deprecated" in m for m in messages)
    assert any("needs at least 100 posterior draws" in m for m in messages)
    assert any("The chains disagree" in m for m in messages)
    assert {w.filename for w in record} == {__file__}, [(w.filename, m[:60]) for w, m in zip(record, messages)]


# ---- persistence ---------------------------------------------------------------------
def test_save_load_round_trip(fitted, tmp_path):
    model, s, _ = fitted
    path = tmp_path / "dpm.nc"
    model.save(path)
    loaded = DPMCalibrator.load(path)
    np.testing.assert_array_equal(loaded.predict_proba(s), model.predict_proba(s))
    np.testing.assert_array_equal(loaded.calibration_map(20).values, model.calibration_map(20).values)
    assert loaded.get_params() == model.get_params()


def test_slot_models_give_each_model_its_rounded_share_of_the_draws():
    from bayescal.bayesian.assembly import slot_models

    rng = np.random.default_rng(0)
    for weights in (
        {"gaussian": 0.5, "beta": 0.5},
        {"gaussian": 0.2371, "beta": 0.7, "constant": 0.0629},
        {"beta": 1.0},
    ):
        slots = slot_models(weights, 301, rng)
        counts = {m: int((slots == m).sum()) for m in weights}
        assert sum(counts.values()) == 301
        assert all(abs(counts[m] - w * 301) < 1 for m, w in weights.items())
    a, b = (slot_models({"gaussian": 0.5, "beta": 0.5}, 1000, np.random.default_rng(3)) for _ in range(2))
    np.testing.assert_array_equal(a, b)  # reproducible from the generator
    assert 0.3 < (a[:500] == "gaussian").mean() < 0.7  # at random positions, not in blocks


def test_loading_both_families_without_the_family_of_each_draw_is_refused(fitted, tmp_path):
    """A posterior with both families' parameters must say which family each draw is; and a
    draw's own family's parameters must not be NaN (forged files with consistent hashes)."""
    import xarray as xr

    import bayescal
    from bayescal import io

    _, s, y = fitted
    model = DPMCalibrator(random_state=3, components="auto", **TINY).fit(s, y)
    path = tmp_path / "dpm.nc"
    model.save(path)
    with xr.open_datatree(path, engine="h5netcdf") as opened:
        tree = opened.load().copy()
    family = tree["idata_/sample_stats"]["family"].values

    def forge(stats, name):
        forged = tree.copy()
        forged["idata_/sample_stats"] = stats
        forged.attrs["content_hash"] = io._hash(forged)
        out = tmp_path / name
        forged.to_netcdf(out, engine="h5netcdf")
        return out

    stats = tree["idata_/sample_stats"].to_dataset()
    with pytest.raises(ValueError, match=r"sample_stats\.family does not say which family"):
        bayescal.load(forge(stats.drop_vars("family"), "no_family.nc"))
    flipped = stats.assign(family=(("chain", "draw"), (1 - family).astype(family.dtype)))
    with pytest.raises(ValueError, match="is NaN at a draw of the"):
        bayescal.load(forge(flipped, "flipped.nc"))


def test_save_load_with_atoms_and_decision_scores(tmp_path):
    rng = np.random.default_rng(8)
    y = (rng.random(400) < 0.5).astype(int)
    d = rng.normal(2 * y - 1, 1.0)
    d[:60] = 0.0  # a clipped decision value
    model = DPMCalibrator(score_kind="decision", random_state=0, **TINY).fit(d, y)
    assert model.atoms_.tolist() == [0.0]
    model.save(tmp_path / "d.nc")
    loaded = DPMCalibrator.load(tmp_path / "d.nc")
    grid = np.array([-5.0, 0.0, 0.3, 9.0])
    np.testing.assert_array_equal(loaded.predict_proba(grid), model.predict_proba(grid))


# ---- routes against each other ---------------------------------------------------------
def test_gibbs_and_nuts_agree_on_small_data(tmp_path):
    """... and the NUTS-fitted model saves and loads (its sampler statistics were booleans, which
    the file format refuses, so the file it wrote could not be read)."""
    s, y = monotone_data(200, np.random.default_rng(9))
    kw = {
        "n_components": 3,
        "draws": 150,
        "tune": 200,
        "chains": 2,
        "random_state": 4,  # K = 3 as in test_dpm_pymc
        "components": "gaussian",
    }  # the model the PyMC routes state
    gibbs = DPMCalibrator(inference="gibbs", **kw).fit(s, y)
    nuts = DPMCalibrator(inference="nuts", **kw).fit(s, y)
    grid = np.linspace(*np.quantile(s, [0.05, 0.95]), 40)
    assert np.abs(gibbs.predict_proba(grid)[:, 1] - nuts.predict_proba(grid)[:, 1]).max() < 0.05
    bg, bn = gibbs.credible_band(grid, ci_prob=0.9), nuts.credible_band(grid, ci_prob=0.9)
    overlap = np.minimum(bg.sel(ci_bound="upper"), bn.sel(ci_bound="upper")) - np.maximum(
        bg.sel(ci_bound="lower"), bn.sel(ci_bound="lower")
    )
    assert np.all(overlap.values > 0)
    nuts.save(tmp_path / "nuts.nc")
    loaded = bayescal.load(tmp_path / "nuts.nc")
    np.testing.assert_array_equal(loaded.predict_proba(grid), nuts.predict_proba(grid))


def test_import_and_gibbs_fit_do_not_import_pymc():
    code = (
        "import sys, numpy as np, bayescal\n"
        "from bayescal.bayesian.dpm import DPMCalibrator, _present_families\n"
        "rng = np.random.default_rng(0); y = np.r_[np.zeros(50), np.ones(50)]\n"
        "DPMCalibrator(n_components=4, draws=50, tune=5).fit(rng.random(100), y)\n"
        "assert 'pymc' not in sys.modules and 'pytensor' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# ---- published values ---------------------------------------------------------------------
def test_naeini_simulated_svm_scores_meet_the_papers_dpm(reference_dir):
    """Naeini et al. (2014) Table 1, their DPM: linear SVM ECE 0.07 and AUC 0.85; quadratic SVM ECE 0.00."""
    import pandas as pd

    from bayescal import metrics
    from bayescal.datasets import svm_scores

    data = pd.read_csv(reference_dir / "naeini2014_simulated.csv")
    train, test = data[data["split"] == "train"], data[data["split"] == "test"]
    s_train, s_test = svm_scores(train, test, kernel="linear")
    p = DPMCalibrator(random_state=0).fit(s_train, train["y"].to_numpy()).predict_proba(s_test)[:, 1]
    y_test = test["y"].to_numpy()
    assert metrics.ece(y_test, p, n_bins=10, strategy="papers") <= 0.07
    assert metrics.roc_auc(y_test, p) >= 0.84
    quad = pd.read_csv(reference_dir / "naeini_quadratic_svm_scores.csv")  # the authors' quadratic-SVM scores
    qtr, qte = quad[quad["split"] == "train"], quad[quad["split"] == "test"]
    p = (
        DPMCalibrator(random_state=0)
        .fit(qtr["score"].to_numpy(), qtr["label"].to_numpy())
        .predict_proba(qte["score"].to_numpy())[:, 1]
    )
    assert metrics.ece(qte["label"].to_numpy(), p, n_bins=10, strategy="papers") <= 0.02


def test_a_few_rows_at_an_end_atom_follow_the_continuous_map_not_the_class_prior():
    """Two negatives at exactly 0 and no positive: the map there stays near the continuous map's
    low end (about 0), not near 1/4 as a uniform prior on the atom masses made it."""
    rng = np.random.default_rng(7)
    s, y = monotone_data(600, rng)
    s[np.flatnonzero(y == 0)[:2]] = 0.0
    model = DPMCalibrator(random_state=0, **TINY).fit(s, y)
    assert 0.0 in model.atoms_ or np.any(model.atoms_ == 0.0)
    p0 = model.predict_proba([0.0])[0, 1]
    low_end = model.predict_proba([np.sort(s[s > 0])[0]])[0, 1]
    assert p0 < 0.05, p0
    assert p0 <= low_end + 0.05


@pytest.mark.parametrize("case", ["one_class_all_atoms", "both_saturated", "one_value_left"])
def test_classes_without_a_continuous_part_are_fitted_not_refused(case):
    """Naive-Bayes scores saturated at 0 and 1: whatever isotonic regression accepts, the DPM fits,
    and the map at the atoms follows the labels there."""
    rng = np.random.default_rng(3)
    s, y = monotone_data(400, rng)
    if case == "one_class_all_atoms":  # every positive at exactly 1
        s[y == 1] = 1.0
    elif case == "both_saturated":  # every score is 0 or 1
        s = np.where(s > 0.5, 1.0, 0.0)
    else:  # the positives' continuous scores take one value
        s[y == 1] = np.where(rng.random((y == 1).sum()) < 0.9, 1.0, 0.7)
    model = DPMCalibrator(random_state=0, **TINY).fit(s, y)
    p = model.predict_proba(np.array([0.0, 0.3, 0.7, 1.0]))[:, 1]
    assert np.all(np.isfinite(p)) and np.all((p >= 0) & (p <= 1))
    at_one = y[s == 1.0].mean()
    assert p[-1] == pytest.approx(at_one, abs=0.1)
    if case == "both_saturated":
        assert p[0] == pytest.approx(y[s == 0.0].mean(), abs=0.1)


@pytest.mark.parametrize("case", ["one_positive", "two_rows", "one_positive_at_an_atom"])
def test_a_class_of_one_score_is_fitted_as_isotonic_regression_fits_it(case):
    """The smallest data isotonic regression accepts (one score of a class, two rows in all) are
    fitted, not refused, and the band says how little they tell: with one positive among 300
    negatives the map stays low below the positive, and with two rows the band spans most of
    [0, 1]."""
    rng = np.random.default_rng(5)
    if case == "two_rows":
        s, y = np.array([0.2, 0.8]), np.array([0, 1])
    else:
        s = rng.beta(2, 5, 300)
        y = np.zeros(300, dtype=int)
        if case == "one_positive":
            y[np.argmax(s)] = 1
        else:
            s, y = np.append(s, 1.0), np.append(y, 1)
    IsotonicCalibrator().fit(s, y)
    model = DPMCalibrator(random_state=0, **TINY).fit(s, y)
    grid = np.array([0.1, 0.3, 0.5, 0.8])
    p = model.predict_proba(grid)[:, 1]
    band = model.credible_band(grid, ci_prob=0.95).values
    assert np.all(np.isfinite(band)) and np.all((band >= 0) & (band <= 1))
    if case == "two_rows":
        assert np.all(band[:, 0] < 0.2) and np.all(band[:, 1] > 0.8)
    else:
        assert np.all(p[:2] < 0.05), p


def test_one_far_outlying_score_leaves_the_map_of_the_bulk_alone():
    """A decision value 10^12 spreads from the bulk (a pipeline glitch) flattened the whole map to
    the base rate with a narrow band, and 10^30 crashed the fit: the sampler's sums of squares
    lost the bulk to rounding. Such a point is fitted at 10^9 spreads, with a warning."""
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.4).astype(int)
    d = np.where(y == 1, rng.normal(1, 1, y.size), rng.normal(-1, 1, y.size))
    grid = np.array([-2.0, 0.0, 2.0])
    clean = DPMCalibrator(random_state=0, score_kind="decision").fit(d, y).predict_proba(grid)[:, 1]
    for far in (1e12, 1e30):
        glitched = d.copy()
        glitched[0] = far
        with pytest.warns(UserWarning, match=r"1 continuous working-scale score\(s\) of class 0 lie more than 1e\+09"):
            model = DPMCalibrator(random_state=0, score_kind="decision").fit(glitched, y)
        np.testing.assert_allclose(model.predict_proba(grid)[:, 1], clean, atol=0.02)
        assert np.ptp(model.predict_proba(grid)[:, 1]) > 0.9


def test_decision_values_too_small_for_the_sampler_are_announced():
    rng = np.random.default_rng(0)
    y = (rng.random(300) < 0.4).astype(int)
    d = np.where(y == 1, rng.normal(1, 1, y.size), rng.normal(-1, 1, y.size))
    with pytest.warns(UserWarning, match=r"robust spread of .* below 1e-18.*multiply the decision values"):
        DPMCalibrator(score_kind="decision", **TINY).fit(d * 1e-30, y)


def test_map_beyond_the_observed_scores_is_held_at_the_most_extreme_one():
    """Positives all at exactly 1, negatives Beta(2, 5): below every observed score the map stays
    at its value at the lowest negative (the mixtures' tails there come from the positives'
    borrowed density and once rose to 0.9 at s = 0), and the band is held with it."""
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.4).astype(int)
    s = np.where(y == 1, 1.0, rng.beta(2, 5, y.size))
    model = DPMCalibrator(random_state=0, **TINY).fit(s, y)
    lowest, highest = s[y == 0].min(), s[y == 0].max()
    below = np.array([0.0, 1e-8, 1e-4, lowest / 2])
    p = model.predict_proba(np.concatenate([below, [lowest]]))[:, 1]
    np.testing.assert_allclose(p[:-1], p[-1], rtol=1e-9)
    assert p[-1] < 0.1
    band = model.credible_band(np.array([1e-6, lowest, 0.5 * (highest + 1), highest]))
    np.testing.assert_allclose(band.isel(score=0).values, band.isel(score=1).values, rtol=1e-9)
    np.testing.assert_allclose(band.isel(score=2).values, band.isel(score=3).values, rtol=1e-9)
    assert model.predict_proba(np.array([1.0]))[0, 1] > 0.9  # the positives' atom keeps its own mass


def _quickstart_calibration_scores():
    from scipy.special import expit
    from sklearn.datasets import load_breast_cancer
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, target = load_breast_cancer(return_X_y=True)
    y = 1 - target
    X_train, X_rest, y_train, y_rest = train_test_split(X, y, train_size=0.4, stratify=y, random_state=0)
    X_cal, _, y_cal, _ = train_test_split(X_rest, y_rest, train_size=0.5, stratify=y_rest, random_state=0)
    svm = make_pipeline(StandardScaler(), SVC(kernel="linear", C=0.01)).fit(X_train, y_train)
    s_cal = expit(svm.decision_function(X_cal))
    assert y_cal[s_cal < 0.2].sum() == 0
    return s_cal, y_cal


@pytest.mark.parametrize(
    "components",
    [
        pytest.param(
            "auto",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "measured: the averaged map is 0.028-0.041 at the lowest score (seeds 0-5; median of seeds 0-2 "
                    "0.035), as the Gaussian fit keeps 0.29-0.35 of the weight: its tail spills as below"
                ),
            ),
        ),
        "beta",
        # measured: Beta kept on seeds 0-5 by joint elpd margins of +1.0 to +1.7 (about one standard error;
        # +0.07 to +1.9 with this test's shorter chains), map 0.010-0.017 at the lowest scores
        "select",
        pytest.param(
            "gaussian",
            marks=pytest.mark.xfail(
                strict=True,
                reason=(
                    "model limit, measured: the positives' widest Gaussian component spills into the negatives' tail on "
                    "the logit scale (map 0.070-0.086 at the ten lowest scores, seeds 0-5); Beta components fit "
                    "that tail"
                ),
            ),
        ),
    ],
)
def test_map_stays_low_below_every_positive_on_the_quickstart_data(components):
    """None of the 50 calibration cases below 0.2 is positive: the map at the ten lowest scores
    stays below 0.03 (the median over three seeds of its largest value there, so that one
    seed's luck does not decide)."""
    s_cal, y_cal = _quickstart_calibration_scores()
    lowest = np.sort(s_cal)[:10]
    largest = [
        DPMCalibrator(random_state=seed, draws=300, tune=300, components=components)
        .fit(s_cal, y_cal)
        .predict_proba(lowest)[:, 1]
        .max()
        for seed in range(3)
    ]
    assert np.median(largest) < 0.03, largest


def test_beta_components_layout_and_piled_scores():
    """Beta components: their own posterior variables, a map that follows scores piled near 0
    and 1 (f0 = Beta(0.4, 4), f1 = Beta(4, 0.4)), and a clear error where they do not apply."""
    rng = np.random.default_rng(5)
    y = (rng.random(1000) < 0.3).astype(int)
    s = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    model = DPMCalibrator(random_state=0, components="beta", **TINY).fit(s, y)
    post = model.idata_["posterior"]
    assert model.idata_.attrs["components"] == "beta" and "beta_a" in post and "mu" not in post
    assert np.all(post["beta_a"].values > 0) and np.all(post["beta_b"].values > 0)
    g = np.quantile(s[(s > 0) & (s < 1)], np.linspace(0.05, 0.95, 19))
    f0, f1 = stats.beta(0.4, 4).pdf(g), stats.beta(4, 0.4).pdf(g)
    truth = 0.3 * f1 / (0.3 * f1 + 0.7 * f0)
    assert np.abs(model.predict_proba(g)[:, 1] - truth).mean() < 0.05
    with pytest.raises(ValueError, match="components='beta' needs"):
        DPMCalibrator(components="beta", score_kind="decision", **TINY).fit(np.log(s / (1 - s)), y)


@pytest.mark.parametrize("seed", [0, 1])
def test_auto_components_weigh_each_family_by_how_well_it_predicts_the_labels(seed):
    """components="auto" fits both families and averages their maps: Beta components carry more
    weight where scores pile near 0 and 1, Gaussian ones where scores are logit-normal; each
    draw is the draw of its family's own fit, position for position."""
    rng = np.random.default_rng(seed)
    y = (rng.random(1000) < 0.3).astype(int)
    piles = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    logit_normal = expit(np.where(y == 1, rng.normal(1, 1, y.size), rng.normal(-1, 1, y.size)))
    on_piles = DPMCalibrator(random_state=seed, components="auto", **TINY).fit(piles, y)
    assert on_piles.diagnostics_["model_averaging"]["weight_beta"] > 0.5
    on_normal = DPMCalibrator(random_state=seed, components="auto", **TINY).fit(logit_normal, y)
    assert on_normal.diagnostics_["model_averaging"]["weight_gaussian"] > 0.5
    grid = np.linspace(0.05, 0.95, 20)
    mixed = DPMCalibrator(random_state=seed, null_stacking=False, components="auto", **TINY).fit(piles, y)
    family = mixed.idata_["sample_stats"]["family"].values
    for code, name in enumerate(("gaussian", "beta")):
        alone = DPMCalibrator(random_state=seed, null_stacking=False, components=name, **TINY).fit(piles, y)
        np.testing.assert_array_equal(
            mixed.calibration_map(grid).values[family == code], alone.calibration_map(grid).values[family == code]
        )


def test_select_components_keep_the_family_whose_densities_fit_better(tmp_path):
    """components="select", the default: Beta components on scores piled near 0 and 1, Gaussian ones on
    logit-normal scores (each by a leave-one-out margin of about two standard errors), each the
    very posterior of that family fitted alone with the same seed (map and its convergence check);
    decision values take
    Gaussian components without a comparison; the model saves and loads."""
    rng = np.random.default_rng(0)
    y = (rng.random(1000) < 0.3).astype(int)
    piles = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    logit_normal = expit(np.where(y == 1, rng.normal(1, 1, y.size), rng.normal(-1, 1, y.size)))
    grid = np.linspace(0.05, 0.95, 20)
    for s, family in ((piles, "beta"), (logit_normal, "gaussian")):
        chosen = DPMCalibrator(random_state=1, **TINY).fit(s, y)
        assert chosen.components == "select"
        selection = chosen.diagnostics_["family_selection"]
        assert selection["chosen"] == family, selection
        assert selection["elpd_joint_diff"] > 1.5 * selection["elpd_joint_diff_se"], selection
        assert "beta" not in chosen.diagnostics_ or "gaussian" not in chosen.diagnostics_
        assert _present_families(chosen.idata_["posterior"]) == [family]
        alone = DPMCalibrator(random_state=1, components=family, **TINY).fit(s, y)
        np.testing.assert_array_equal(chosen.calibration_map(grid).values, alone.calibration_map(grid).values)
        assert chosen.diagnostics_["map"] == alone.diagnostics_["map"]  # checked on the kept draws, as alone
    decision = DPMCalibrator(random_state=1, components="select", score_kind="decision", **TINY)
    decision.fit(np.log(piles / (1 - piles)), y)
    assert "family_selection" not in decision.diagnostics_
    assert _present_families(decision.idata_["posterior"]) == ["gaussian"]
    chosen.save(tmp_path / "select.nc")
    loaded = DPMCalibrator.load(tmp_path / "select.nc")
    np.testing.assert_array_equal(loaded.predict_proba(grid), chosen.predict_proba(grid))
    assert loaded.get_params() == chosen.get_params()


def test_select_averages_the_families_above_its_class_size_as_auto_does(monkeypatch):
    """Above SELECT_AVERAGE_UNITS scores in a class, components="select" does not keep one family:
    its posterior is that of components="auto" with the same seed, draw for draw, and the
    diagnostics say so; at or below it, select keeps one family."""
    from bayescal.bayesian import dpm

    rng = np.random.default_rng(3)
    y = (rng.random(600) < 0.3).astype(int)
    piles = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    grid = np.linspace(0.05, 0.95, 15)
    largest = int(max(y.sum(), (1 - y).sum()))
    monkeypatch.setattr(dpm, "SELECT_AVERAGE_UNITS", largest - 1)
    averaged = DPMCalibrator(random_state=2, **TINY).fit(piles, y)
    auto = DPMCalibrator(random_state=2, components="auto", **TINY).fit(piles, y)
    np.testing.assert_array_equal(averaged.calibration_map(grid).values, auto.calibration_map(grid).values)
    assert averaged.diagnostics_["family_selection"] == {"chosen": "averaged", "class_units": [largest, 600 - largest]}
    assert averaged.diagnostics_["model_averaging"] == auto.diagnostics_["model_averaging"]
    assert sorted(_present_families(averaged.idata_["posterior"])) == ["beta", "gaussian"]
    monkeypatch.setattr(dpm, "SELECT_AVERAGE_UNITS", largest)
    kept = DPMCalibrator(random_state=2, **TINY).fit(piles, y)
    assert kept.diagnostics_["family_selection"]["chosen"] in ("gaussian", "beta")
    assert len(_present_families(kept.idata_["posterior"])) == 1


def test_posterior_is_arviz_clean(fitted):
    """ArviZ reads the posterior without warnings, and arviz.loo refuses it (there is no
    pointwise log-likelihood) instead of treating the two classes as two observations."""
    import arviz as az

    model, _, _ = fitted
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = az.summary(model.idata_)
    assert "pi" in summary.index
    assert "log_likelihood" not in model.idata_.children
    assert "log_likelihood" not in model.idata_["sample_stats"]
    with pytest.raises(Exception, match=r"(?i)log.?likelihood"):
        az.loo(model.idata_)


def test_random_seed_is_a_deprecated_alias_of_random_state():
    s, y = monotone_data(200, np.random.default_rng(6))
    with pytest.warns(DeprecationWarning, match="random_seed"):
        old = DPMCalibrator(random_seed=5, **TINY).fit(s, y)
    new = DPMCalibrator(random_state=5, **TINY).fit(s, y)
    np.testing.assert_array_equal(old.calibration_map(20).values, new.calibration_map(20).values)
    with pytest.raises(ValueError, match="random_state only"):
        DPMCalibrator(random_seed=5, random_state=5, **TINY).fit(s, y)


def test_every_draws_densities_give_its_map_also_on_the_constant_map_draws():
    """Without signal most draws are the null model's constant map pi; their class densities and
    atom masses are the pooled ones, so Bayes' rule on each draw's densities gives its map."""
    rng = np.random.default_rng(0)
    s, y = rng.beta(2, 3, 300), rng.integers(0, 2, 300)
    s[:15] = 0.0  # an atom
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = DPMCalibrator(random_state=0, draws=100, tune=100, n_components=6, components="gaussian").fit(s, y)
    informative = m.idata_["sample_stats"]["informative"].values.reshape(-1).astype(bool)
    assert 0.2 < (~informative).mean() < 1.0  # both kinds of draws present
    grid = np.linspace(s[s > 0].min(), s.max(), 40)  # the data region: beyond it the map is held
    dens = m.density_map(grid).values.reshape(-1, 2, grid.size)
    pi = m.class_prior_draws().values.reshape(-1, 1)
    by_bayes = pi * dens[:, 1] / (pi * dens[:, 1] + (1 - pi) * dens[:, 0])
    np.testing.assert_allclose(by_bayes, m.calibration_map(grid).values.reshape(-1, grid.size), atol=0.01)
    np.testing.assert_array_equal(dens[~informative, 0], dens[~informative, 1])
    masses = m.score_atoms().values.reshape(-1, 2)
    at_atom = pi[:, 0] * masses[:, 1] / (pi[:, 0] * masses[:, 1] + (1 - pi[:, 0]) * masses[:, 0])
    np.testing.assert_allclose(at_atom, m.calibration_map(np.array([0.0])).values.reshape(-1), atol=1e-12)


def test_select_averages_the_families_as_auto_does_where_the_lead_is_within_the_margin(monkeypatch):
    """With SELECT_AVERAGE_WITHIN above the better family's lead (in its standard errors),
    components="select" keeps both families and its fit is components="auto"'s, draw for draw (the
    sampler's chains run in stretches are the chains run at once); with the default 0 it keeps one."""
    from bayescal.bayesian import dpm

    rng = np.random.default_rng(3)
    y = (rng.random(400) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    grid = np.linspace(0.02, 0.98, 25)
    kept = DPMCalibrator(random_state=1, **TINY).fit(s, y)
    assert kept.diagnostics_["family_selection"]["chosen"] in ("gaussian", "beta")
    monkeypatch.setattr(dpm, "SELECT_AVERAGE_WITHIN", 1e6)
    averaged = DPMCalibrator(random_state=1, **TINY).fit(s, y)
    assert averaged.diagnostics_["family_selection"]["chosen"] == "averaged"
    assert sorted(_present_families(averaged.idata_["posterior"])) == ["beta", "gaussian"]
    auto = DPMCalibrator(random_state=1, components="auto", **TINY).fit(s, y)
    np.testing.assert_array_equal(averaged.calibration_map(grid).values, auto.calibration_map(grid).values)
    assert averaged.diagnostics_["model_averaging"] == auto.diagnostics_["model_averaging"]
