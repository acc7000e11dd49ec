"""Tests of the chains' starts: the posterior mode and one component (:mod:`bayescal.bayesian.mode_start`),
and each chain from its own prior draw (``start="dispersed"``)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from scipy.special import logit

from bayescal.bayesian import mixture
from bayescal.bayesian.gibbs import GibbsChains, fit_gibbs
from bayescal.bayesian.mode_start import log_posterior, mode_start, single_start
from bayescal.bayesian.priors import resolve_priors


def _class(family, n=2000, seed=0):
    rng = np.random.default_rng(seed)
    if family == "gaussian":
        x = np.concatenate([rng.normal(-1.0, 0.4, int(0.7 * n)), rng.normal(1.5, 0.8, n - int(0.7 * n))])
    else:
        x = logit(np.clip(rng.beta(0.5, 4.0, n), 1e-9, 1 - 1e-9))
    counts, edges = np.histogram(x, 256)
    keep = counts > 0
    return (0.5 * (edges[1:] + edges[:-1]))[keep], counts[keep].astype(float)


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_gradient_of_the_objective_matches_finite_differences(family):
    x, c = _class(family)
    prior = resolve_priors(None, [x, x], [c, c], 6, family)[0]
    negative, theta0, _ = log_posterior(x, c, prior, family)
    theta = theta0 + np.random.default_rng(1).normal(0.0, 0.3, theta0.size)
    grad = negative(theta)[1]
    numeric = approx_fprime(theta, lambda t: negative(t)[0], 1e-6)
    assert np.max(np.abs(grad - numeric)) <= 1e-4 * np.max(np.abs(grad))


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_mode_fits_the_class_density_better_than_the_kde_start(family):
    """The start found has a higher objective than the KDE-informed one and a mixture density
    close to the data's histogram (total variation below 0.05 on the bins)."""
    x, c = _class(family, n=20000)
    prior = resolve_priors(None, [x, x], [c, c], 20, family)[0]
    moved = mode_start(x, c, prior, family)
    p1, p2 = ("init_mu", "init_sigma") if family == "gaussian" else ("init_a", "init_b")
    for key in ("init_weight", p1, p2):
        assert not np.allclose(moved[key], prior[key])
    dens = np.exp(mixture.log_density(x, moved["init_weight"], moved[p1], moved[p2], family))
    width = np.diff(x).min()
    tv = 0.5 * np.abs(dens * width - c / c.sum()).sum()
    assert tv < 0.05
    start = np.exp(
        mixture.log_density(x, np.asarray(prior["init_weight"]), np.asarray(prior[p1]), np.asarray(prior[p2]), family)
    )
    assert (c * np.log(dens)).sum() > (c * np.log(start)).sum()


def test_start_option_validated_and_recorded():
    x, c = _class("gaussian", n=500)
    prior = resolve_priors(None, [x, x], [c, c], 4)[0]
    kw = {"n_components": 4, "draws": 5, "tune": 0, "random_seed": 0}
    with pytest.raises(ValueError, match="start='best'"):
        fit_gibbs(x, c, prior, start="best", **kw)
    assert fit_gibbs(x, c, prior, **kw).diagnostics["start"] == "prior"  # 500 units: "auto" keeps the KDE start
    assert fit_gibbs(x, c, prior, start="mode", **kw).diagnostics["start"] == "mode"
    assert fit_gibbs(x, c, prior, start="single", **kw).diagnostics["start"] == "single"
    assert fit_gibbs(x, c, prior, start="dispersed", **kw).diagnostics["start"] == "dispersed"
    assert fit_gibbs(x, c * 1000, prior, **kw).diagnostics["start"] == "mode"
    with pytest.raises(ValueError, match=r"start='dispersed'.*backend='numba'"):
        fit_gibbs(x, c, prior, start="dispersed", backend="numpy", **kw)


@pytest.mark.parametrize(
    ("scale", "options", "floor", "expected"),
    [
        (4.0, {}, 0.01, "prior"),  # 2,000 units: the shared KDE start
        (4.1, {}, 0.01, "dispersed"),  # above 2,048, on floored data: each chain from its own prior draw
        (40, {}, 0.01, "dispersed"),  # 20,000 units: no Hamiltonian moves yet
        (40.1, {}, 0.01, "prior"),  # the Hamiltonian moves run: the shared start
        (4.1, {"hmc_steps": 300}, 0.01, "prior"),  # the remedy's moves keep the shared start
        (4.1, {"backend": "numpy"}, 0.01, "prior"),  # the numpy sweeps draw no starts
        (4.1, {}, 0.0, "prior"),  # no floor: a prior draw could start on a spike
        (201, {}, 0.01, "mode"),
    ],
)
def test_auto_start_by_units_moves_and_floor(scale, options, floor, expected):
    """``start="auto"``: chains start apart, each at its own prior draw, on classes of more than
    2,048 units that the plain compiled sweeps run with a floor on the components' spread (the
    calibrator's compressed scores), at the shared KDE start otherwise, and at the posterior mode
    above 100,000 units."""
    x, c = _class("gaussian", n=500)
    prior = resolve_priors(None, [x, x], [c, c], 4)[0] | {"scale_floor": floor}
    fit = fit_gibbs(x, c * scale, prior, n_components=4, draws=2, tune=0, random_seed=0, **options)
    assert fit.diagnostics["start"] == expected


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_dispersed_starts_are_prior_draws_one_per_chain(family):
    """With ``start="dispersed"`` each chain starts from its own draw from the prior: over 4,000
    chains the components' starting parameters have the prior's means (within 5 standard errors)
    and standard deviations (within 6 %), the concentration's mean is a / b and every stick is
    inside (0, 1); a scale floor lifts the draws below it onto it; the starts differ between
    chains and come from the seed alone."""
    x, c = _class(family)
    prior = resolve_priors(None, [x, x], [c, c], 4, family)[0]

    def starts(seed, floor=0.0):
        chains = GibbsChains(
            x, c, prior | {"scale_floor": floor}, n_components=4, random_seed=seed, draws=1, tune=0, chains=4000,
            family=family, start="dispersed", hmc_steps=0,
        )  # fmt: skip
        comp = chains.compiled
        v, th1, th2, alpha = (np.array([chain[i] for chain in comp.state]) for i in range(4))
        return comp, v, th1, th2, alpha

    comp, v, th1, th2, alpha = starts(0)
    if family == "gaussian":
        priors = [(th1, comp.m, np.sqrt(comp.s2)), (th2, comp.ell, comp.tau)]
    else:
        priors = [(th1, comp.loc1, comp.tau), (th2, comp.loc2, comp.tau)]
    for draws, loc, sd in priors:
        np.testing.assert_allclose(draws.mean(axis=0), loc, atol=5 * sd / np.sqrt(4000))
        np.testing.assert_allclose(draws.std(axis=0) / sd, 1.0, atol=0.06)
    assert abs(alpha.mean() - prior["alpha_shape"] / prior["alpha_rate"]) < 5 * alpha.std() / np.sqrt(4000)
    assert np.all((v > 0) & (v < 1)) and len({tuple(row) for row in th1}) == 4000
    np.testing.assert_array_equal(th1, starts(0)[2])
    assert not np.allclose(th1, starts(1)[2])
    if family == "gaussian":  # a floor at the prior's median scale lifts about half the scales onto it
        lifted = starts(0, floor=float(np.exp(comp.ell)))[3]
        assert lifted.min() >= comp.ell - 1e-12 and 0.4 < np.mean(lifted <= comp.ell + 1e-12) < 0.6


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_single_start_is_one_component_with_the_class_mean_and_spread(family):
    """The first component holds all the weight, with the class's weighted mean and variance on
    the working scale (for Beta components: log(a / b) and 1/a + 1/b, the logit's mean and variance
    to first order); the others keep their start, and the prior passed in is not modified."""
    x, c = _class(family)
    prior = resolve_priors(None, [x, x], [c, c], 6, family)[0]
    before = {k: np.copy(v) for k, v in prior.items()}
    start = single_start(x, c, prior, family)
    for key, value in before.items():
        np.testing.assert_array_equal(prior[key], value)
    np.testing.assert_array_equal(start["init_weight"], [1.0, 0, 0, 0, 0, 0])
    mean = np.average(x, weights=c)
    var = np.average((x - mean) ** 2, weights=c)
    if family == "gaussian":
        np.testing.assert_allclose([start["init_mu"][0], start["init_sigma"][0] ** 2], [mean, var], rtol=1e-12)
        keys = ("init_mu", "init_sigma")
    else:
        a, b = start["init_a"][0], start["init_b"][0]
        np.testing.assert_allclose([np.log(a / b), 1 / a + 1 / b], [mean, var], rtol=1e-12)
        keys = ("init_a", "init_b")
    for key in keys:
        np.testing.assert_array_equal(start[key][1:], prior[key][1:])


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_chains_from_one_component_add_components_rather_than_empty_them(family):
    """After one sweep from the single start the chains hold a few components, where from the
    KDE-informed start (every component at a quantile) they hold nearly all of them; and the
    single start is reproducible from the seed."""
    x, c = _class(family, n=5000)
    prior = resolve_priors(None, [x, x], [c, c], 20, family)[0]
    kw = {"n_components": 20, "draws": 1, "tune": 0, "thin": 1, "chains": 4, "family": family, "hmc_steps": 0}

    def occupied(start, seed=0):
        fit = fit_gibbs(x, c, prior, start=start, random_seed=seed, **kw)
        return fit.sample_stats["n_occupied"].values, fit.posterior

    single, post = occupied("single")
    assert single.max() <= 3
    assert occupied("prior")[0].min() >= 15
    again = occupied("single")[1]
    for name in ("weight", *mixture.PARAMS[family]):
        np.testing.assert_array_equal(post[name].values, again[name].values)


def test_chains_from_the_mode_start_where_the_long_warm_up_ends():
    """With a million units, 50 plain sweeps from the mode reach a class log-likelihood that 50
    from the KDE start do not reach (the blocked sweeps approach it slowly at large N); 2,000
    sweeps from the KDE start end within a few nats of the mode start's level. (Without the
    Hamiltonian moves, which run by default on a class this large.)"""
    x, c = _class("gaussian", n=1_000_000, seed=3)
    prior = resolve_priors(None, [x, x], [c, c], 20)[0]
    kw = {"n_components": 20, "draws": 1, "chains": 2, "random_seed": 5, "hmc_steps": 0}

    def loglik(**options):
        return fit_gibbs(x, c, prior, **kw, **options).sample_stats["class_log_likelihood"].values.min()

    from_mode = loglik(tune=50)  # "auto": a million units start at the mode
    assert from_mode > loglik(tune=50, start="prior") + 50.0
    assert loglik(tune=2000, start="prior") < from_mode + 20.0
