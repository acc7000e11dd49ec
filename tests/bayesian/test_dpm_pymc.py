"""The PyMC model of one class's Dirichlet-process mixture and its ADVI / NUTS routes.

Tiny settings throughout (K = 3 everywhere, so one model is compiled per route; a few
hundred points; short runs) so the whole file, compilation included, stays within budget.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from scipy.stats import norm

from bayescal.bayesian import pymc_model
from bayescal.bayesian.class_fit import ClassFit
from bayescal.bayesian.mixture import log_density
from bayescal.bayesian.priors import DEFAULT_PRIOR, kde_prior
from bayescal.bayesian.routes import get_route


def _prior(x, counts, K):
    return {**DEFAULT_PRIOR, **kde_prior(x, counts, K)}


def _two_gaussians(rng, n):
    """0.4 N(-2, 0.7) + 0.6 N(1.5, 1)."""
    z = rng.uniform(size=n) < 0.4
    return np.where(z, rng.normal(-2.0, 0.7, n), rng.normal(1.5, 1.0, n))


def _true_density(g):
    return 0.4 * norm.pdf(g, -2.0, 0.7) + 0.6 * norm.pdf(g, 1.5, 1.0)


def _check_layout(fit: ClassFit, chains: int, draws: int, K: int):
    post = fit.posterior
    for name in ("weight", "mu", "sigma"):
        assert post[name].dims == ("chain", "draw", "component")
        assert post[name].shape == (chains, draws, K)
        assert np.all(np.isfinite(post[name].values))
    assert post["alpha"].dims == ("chain", "draw")
    np.testing.assert_allclose(post["weight"].sum("component"), 1.0, atol=1e-10)
    assert np.all(post["weight"].values >= 0)
    assert np.all(post["sigma"].values > 0) and np.all(post["alpha"].values > 0)
    assert all(isinstance(v, (bool, int, float, str)) for v in fit.diagnostics.values())


def test_routes_registry_does_not_import_pymc():
    code = (
        "import sys, bayescal.bayesian.routes as r; "
        "assert set(r.ROUTES) == {'advi', 'nuts', 'gibbs', 'vi'}; r.get_route('gibbs'); "
        "assert 'pymc' not in sys.modules and 'pytensor' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.filterwarnings("ignore:ADVI did not converge", "ignore:PSIS k-hat")
def test_advi_layout_seed_and_psis(rng):
    x = _two_gaussians(rng, 200)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    kw = {"n_components": K, "draws": 200, "max_iterations": 1500, "window": 100, "tol": 1e-3}
    fit = get_route("advi")(x, np.ones(x.size), prior, random_seed=5, psis=True, **kw)
    _check_layout(fit, 1, 200, K)
    d = fit.diagnostics
    assert d["route"] == "advi" and 0 < d["n_iterations"] <= 1500 and np.isfinite(d["elbo_final"])
    assert np.isfinite(d["pareto_k"]) and 1.0 <= d["ess_importance"] <= 200
    again = get_route("advi")(x, np.ones(x.size), prior, random_seed=5, psis=True, **kw)
    np.testing.assert_array_equal(again.posterior["mu"].values, fit.posterior["mu"].values)
    other = get_route("advi")(x, np.ones(x.size), prior, random_seed=6, psis=True, **kw)
    assert not np.array_equal(other.posterior["mu"].values, fit.posterior["mu"].values)
    # PSIS only reweights and resamples the same variational draws
    raw = get_route("advi")(x, np.ones(x.size), prior, random_seed=5, **kw)
    assert not raw.diagnostics["psis_resampled"] and fit.diagnostics["psis_resampled"]
    raw_mu = {tuple(row) for row in raw.posterior["mu"].values[0]}
    assert all(tuple(row) in raw_mu for row in fit.posterior["mu"].values[0])
    assert len({tuple(row) for row in fit.posterior["mu"].values[0]}) < 200  # resampling repeats draws
    # restarts pool independent runs (the first one is the single run above): same layout, iterations summed
    pooled = get_route("advi")(x, np.ones(x.size), prior, random_seed=5, restarts=2, **kw)
    _check_layout(pooled, 1, 200, K)
    d2 = pooled.diagnostics
    assert d2["restarts"] == 2 and d2["elbo_spread"] >= 0 and d2["n_iterations"] > raw.diagnostics["n_iterations"]


def test_advi_recovers_two_gaussian_density(rng):
    x = _two_gaussians(rng, 600)
    K = 3
    fit = get_route("advi")(x, np.ones(x.size), _prior(x, np.ones(x.size), K), n_components=K, draws=300, random_seed=1)
    assert fit.diagnostics["converged"] and fit.diagnostics["n_iterations"] < 10_000
    g = np.linspace(-5.0, 5.0, 401)
    post = fit.posterior
    dens = np.exp(log_density(g, post["weight"].values[0], post["mu"].values[0], post["sigma"].values[0])).mean(0)
    l1 = np.trapezoid(np.abs(dens - _true_density(g)), g)
    assert l1 < 0.15, l1


def test_weighted_likelihood_equals_repeated_points(rng):
    """counts multiply each point's log-likelihood: x with counts 2 equals x listed twice."""
    x = _two_gaussians(rng, 50)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    with pymc_model._borrow(K) as slot:
        point_fn = pymc_model._advi_parts(slot).point_fn
        theta = pymc_model._flat_start(slot.model, prior) + 0.1
        pymc_model._set_data(slot.model, prior, x=x, counts=np.full(x.size, 2.0))
        weighted = point_fn(theta)[0]
        pymc_model._set_data(slot.model, prior, x=np.concatenate([x, x]), counts=np.ones(2 * x.size))
        repeated = point_fn(theta)[0]
        pymc_model._set_data(slot.model, prior, x=x, counts=np.ones(x.size))
        single = point_fn(theta)[0]
    np.testing.assert_allclose(weighted, repeated, rtol=1e-12)
    assert weighted < single  # the extra copy adds a negative log-likelihood


@pytest.mark.filterwarnings("ignore:ADVI did not converge", "ignore:PSIS k-hat")
def test_advi_second_fit_does_not_recompile(rng, monkeypatch):
    import pytensor

    x = _two_gaussians(rng, 100)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    get_route("advi")(x, np.ones(x.size), prior, n_components=K, draws=100, random_seed=0, max_iterations=250)
    built = dict(pymc_model.N_COMPILATIONS)
    calls = []
    original = pytensor.function
    monkeypatch.setattr(pytensor, "function", lambda *a, **k: calls.append(1) or original(*a, **k))
    y = _two_gaussians(rng, 300)  # other data, other length: shared variables resize without recompiling
    fit = get_route("advi")(
        y, np.ones(y.size), _prior(y, np.ones(y.size), K), n_components=K, draws=100, random_seed=0, max_iterations=250
    )
    assert calls == [] and pymc_model.N_COMPILATIONS == built
    assert fit.diagnostics["runtime_s"] < 5.0


def test_advi_warns_when_not_converged(rng):
    x = _two_gaussians(rng, 100)
    K = 3
    with pytest.warns(UserWarning, match=r"did not converge in 500 iterations.*tol=1e-12"):
        fit = get_route("advi")(
            x,
            np.ones(x.size),
            _prior(x, np.ones(x.size), K),
            n_components=K,
            draws=50,
            random_seed=0,
            max_iterations=500,
            window=100,
            tol=1e-12,
        )
    assert not fit.diagnostics["converged"] and fit.diagnostics["n_iterations"] == 500


def test_advi_nan_elbo_retries_then_raises(rng, monkeypatch):
    x = _two_gaussians(rng, 100)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    with pymc_model._borrow(K) as slot:  # the slot the next fit of this K will borrow
        engine = pymc_model._advi_parts(slot)
    real_step = engine.step
    # a NaN in the first run only: the retry (other seed, learning rate / 10) succeeds
    calls = {"n": 0}

    def nan_once():
        calls["n"] += 1
        return np.nan if calls["n"] == 3 else real_step()

    monkeypatch.setattr(engine, "step", nan_once)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        fit = get_route("advi")(x, np.ones(x.size), prior, n_components=K, draws=50, random_seed=0, max_iterations=300)
    assert fit.diagnostics["retried"] and fit.diagnostics["learning_rate"] == pytest.approx(0.001)
    # NaN every time: one retry, then a clear error
    monkeypatch.setattr(engine, "step", lambda: np.nan)
    with pytest.raises(RuntimeError, match=r"NaN \(or infinite\) ELBO.*retry.*learning rate 0.001"):
        get_route("advi")(x, np.ones(x.size), prior, n_components=K, draws=50, random_seed=0)


def test_bad_inputs_raise_clear_errors(rng):
    x = _two_gaussians(rng, 30)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    with pytest.raises(ValueError, match=r"prior\['mu_loc'\] must have shape \(3,\)"):
        get_route("advi")(x, np.ones(x.size), dict(prior, mu_loc=np.zeros(4)), n_components=K, draws=10, random_seed=0)
    with pytest.raises(ValueError, match="missing keys.*alpha_rate"):
        get_route("nuts")(
            x,
            np.ones(x.size),
            {k: v for k, v in prior.items() if k != "alpha_rate"},
            n_components=K,
            draws=10,
            random_seed=0,
        )
    with pytest.raises(ValueError, match="non-negative"):
        get_route("advi")(x, -np.ones(x.size), prior, n_components=K, draws=10, random_seed=0)
    with pytest.raises(ValueError, match="equal length"):
        get_route("advi")(x, np.ones(x.size + 1), prior, n_components=K, draws=10, random_seed=0)
    with pytest.raises(ValueError, match="target_accept"):
        get_route("nuts")(x, np.ones(x.size), prior, n_components=K, draws=10, random_seed=0, target_accept=1.5)


def test_route_warnings_of_classes_fitted_in_threads_name_the_callers_line(rng):
    """With n_jobs=2 the classes are fitted in two threads; the route's warnings still point at
    the line that called fit, one per class."""
    from bayescal import DPMCalibrator

    s = np.clip(np.concatenate([rng.beta(2, 5, 120), rng.beta(5, 2, 80)]), 1e-6, 1 - 1e-6)
    y = np.repeat([0, 1], [120, 80])
    options = {"max_iterations": 500, "window": 100, "tol": 1e-12}
    cal = DPMCalibrator(inference="advi", components="gaussian", n_components=3, n_jobs=2, draws=50,
                        route_options=options, null_stacking=False, random_state=0)  # fmt: skip
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        cal.fit(s, y)
    ours = [r for r in record if "did not converge" in str(r.message)]
    assert len(ours) == 2 and [r.filename for r in ours] == [__file__] * 2


def test_parallel_fits_of_one_k_do_not_share_state(rng):
    """Two threads fitting the same K (as DPMCalibrator(n_jobs=2) does) give the serial results."""
    from concurrent.futures import ThreadPoolExecutor

    K = 3
    xs = [_two_gaussians(rng, 150), _two_gaussians(rng, 250) + 1.0]
    kw = {"n_components": K, "draws": 100, "max_iterations": 600, "window": 100, "tol": 1e-3}

    def run(x):
        return get_route("advi")(x, np.ones(x.size), _prior(x, np.ones(x.size), K), random_seed=2, **kw)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        serial = [run(x) for x in xs]
        with ThreadPoolExecutor(max_workers=2) as pool:
            parallel = list(pool.map(run, xs))
    for a, b in zip(serial, parallel):
        np.testing.assert_array_equal(a.posterior["mu"].values, b.posterior["mu"].values)


def test_nuts_layout_seed_and_no_recompile(rng):
    x = _two_gaussians(rng, 80)
    K = 3
    prior = _prior(x, np.ones(x.size), K)
    kw = {"n_components": K, "draws": 25, "tune": 25, "chains": 2}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = get_route("nuts")(x, np.ones(x.size), prior, random_seed=3, **kw)
        built = pymc_model.N_COMPILATIONS["nuts"]
        again = get_route("nuts")(x, np.ones(x.size), prior, random_seed=3, **kw)
    _check_layout(fit, 2, 25, K)
    assert pymc_model.N_COMPILATIONS["nuts"] == built
    np.testing.assert_array_equal(again.posterior["mu"].values, fit.posterior["mu"].values)
    assert fit.sample_stats["diverging"].dims == ("chain", "draw")
    assert fit.diagnostics["divergences"] == int(fit.sample_stats["diverging"].values.sum())
    # both chains describe the data: the posterior-mean density puts its mass where the data are
    g = np.linspace(-5.0, 5.0, 401)
    post = fit.posterior.stack(sample=("chain", "draw")).transpose("sample", "component")
    dens = np.exp(log_density(g, post["weight"].values, post["mu"].values, post["sigma"].values)).mean(0)
    assert np.trapezoid(np.abs(dens - _true_density(g)), g) < 0.4


def _binned_loglik(prior, K, lower, upper, counts, start):
    """The binned model's log-likelihood at the parameters ``start`` (constrained scale)."""
    model = pymc_model.build_model(K, "gaussian", binned=True)
    pymc_model._set_data(model, prior, lower=lower, upper=upper, counts=counts)
    point = pymc_model._unconstrained(start)
    fn = model.compile_fn(model.replace_rvs_by_values([model["loglik"]])[0])
    return float(fn({k: v for k, v in point.items() if k != "alpha_log__"}))


def test_binned_likelihood_is_the_probability_of_the_bin_counts(rng):
    """The binned model's likelihood is that of counts on a partition of the line: one bin
    holding the whole line has probability one; on fine bins it is the point likelihood at the
    bin centres plus each count times the log of its bin's width; and it stays at most zero
    however narrow a component grows on a bin of many scores, where the point likelihood at the
    centre grows without bound."""
    from bayescal.bayesian.priors import resolve_priors

    x = rng.normal(size=200)
    ones = np.ones(x.size)
    K = 3
    prior = resolve_priors(None, [x, x], [ones, ones], K, "gaussian")[0]
    start = pymc_model._initial_values(prior)
    w = np.append(start["v"], 1.0) * np.concatenate([[1.0], np.cumprod(1.0 - start["v"])])
    assert _binned_loglik(prior, K, np.array([-1e4]), np.array([1e4]), np.array([7.0]), start) == pytest.approx(
        0, abs=1e-12
    )

    h = 1e-4
    centres = np.sort(x)
    counts = rng.integers(1, 5, centres.size).astype(float)
    fine = _binned_loglik(prior, K, centres - h / 2, centres + h / 2, counts, start)
    points = counts @ log_density(centres, w, start["mu"], start["sigma"])
    np.testing.assert_allclose(fine, points + counts.sum() * np.log(h), rtol=1e-6)

    edges = np.linspace(-6, 6, 41)
    many = np.full(40, 1.0)
    many[19] = 1e6
    narrow = dict(
        start, mu=np.array([edges[19:21].mean(), *start["mu"][1:]]), sigma=np.array([1e-6, *start["sigma"][1:]])
    )
    assert _binned_loglik(prior, K, edges[:-1], edges[1:], many, narrow) <= 0.0
    assert many @ log_density(0.5 * (edges[:-1] + edges[1:]), w, narrow["mu"], narrow["sigma"]) > 1e6


def test_beta_model_truncates_the_components_spread_at_the_scale_floor(rng):
    """For Beta components the potential ``floor`` of the PyMC model is 0 while every
    component's spread sqrt(1/a + 1/b) is at least ``scale_floor`` and -inf once one is below
    it, as in the sampler (the floor of compressed scores); without a floor it is 0."""
    from bayescal.bayesian.priors import resolve_priors

    x = _piled(rng, 50)
    ones = np.ones(x.size)
    K = 3
    prior = resolve_priors(None, [x, x], [ones, ones], K, "beta")[0]
    model = pymc_model.build_model(K, "beta")
    start = pymc_model._initial_values(prior)
    spread = np.sqrt(1 / start["beta_a"] + 1 / start["beta_b"])
    fn = model.compile_fn(model.replace_rvs_by_values([model["floor"]])[0])
    point = {k: v for k, v in pymc_model._unconstrained(start).items() if k in ("beta_a_log__", "beta_b_log__")}
    for floor, expected in ((0.0, 0.0), (0.99 * spread.min(), 0.0), (1.01 * spread.min(), -np.inf)):
        pymc_model._set_data(model, prior | {"scale_floor": floor}, x=x, counts=ones)
        assert float(fn(point)) == expected, floor


def test_gaussian_model_truncates_sigma_at_the_scale_floor_by_its_transform(rng):
    """For Gaussian components the prior of sigma is the log-normal truncated at ``scale_floor``,
    and the unconstrained coordinate log(sigma - floor) maps the whole line onto the support: the
    log density (with the transform's Jacobian) is finite however far a coordinate goes, and
    equals the truncated log-normal's. A wall of -inf there stalled the variational optimiser on
    compressed scores."""
    from scipy import stats

    from bayescal.bayesian.priors import resolve_priors

    x = rng.normal(size=50)
    ones = np.ones(x.size)
    K = 3
    prior = resolve_priors(None, [x, x], [ones, ones], K, "gaussian")[0]
    model = pymc_model.build_model(K, "gaussian")
    assert "floor" not in model.named_vars
    sigma_logp = model.compile_fn(model.logp(vars=[model["sigma"]], jacobian=True))
    sigma_of = model.compile_fn(model.replace_rvs_by_values([model["sigma"]])[0])
    prior_sigma = stats.lognorm(float(prior["sigma_logsd"]), scale=np.exp(float(prior["sigma_logmean"])))
    for floor in (0.0, 0.05):
        pymc_model._set_data(model, prior | {"scale_floor": floor}, x=x, counts=ones)
        for u in (np.array([-40.0, 0.0, 3.0]), np.array([-1.0, -2.0, -700.0])):
            sigma = np.asarray(sigma_of({"sigma_interval__": u}))
            assert np.all(sigma >= floor) and np.all(sigma > 0)
            expected = np.sum(prior_sigma.logpdf(floor + np.exp(u)) - prior_sigma.logsf(floor) + u)
            value = float(sigma_logp({"sigma_interval__": u}))
            assert np.isfinite(value)
            np.testing.assert_allclose(value, expected, rtol=1e-7)
        start = pymc_model._unconstrained(pymc_model._initial_values(prior | {"scale_floor": floor}), floor)
        assert np.all(np.isfinite(start["sigma_interval__"]))


def test_binned_likelihood_refuses_beta_components():
    with pytest.raises(ValueError, match="binned=True is written for Gaussian components"):
        pymc_model.build_model(3, "beta", binned=True)


def _piled(rng, n):
    """Logits of probability scores piled near 0: Beta(0.4, 4)."""
    s = np.clip(rng.beta(0.4, 4.0, n), 1e-12, 1 - 1e-12)
    return np.log(s) - np.log1p(-s)


def test_beta_model_in_pymc_is_the_mixture_the_sampler_and_the_map_use(rng):
    """The Beta-component model written in PyMC has, at any point, the weighted log-likelihood
    that the numpy mixture evaluation (which the Gibbs route and the map use) gives."""
    from bayescal.bayesian.priors import resolve_priors

    x = _piled(rng, 60)
    counts = rng.integers(1, 4, x.size).astype(float)
    K = 3
    prior = resolve_priors(None, [x, x], [counts, counts], K, "beta")[0]
    model = pymc_model.build_model(K, "beta")
    pymc_model._set_data(model, prior, x=x, counts=counts)
    start = pymc_model._initial_values(prior)
    start["beta_a"] = start["beta_a"] * np.array([0.5, 1.0, 2.0])
    point = pymc_model._unconstrained(start)
    fn = model.compile_fn(model.replace_rvs_by_values([model["loglik"]])[0])
    loglik = fn({k: v for k, v in point.items() if k != "alpha_log__"})  # alpha does not enter the likelihood
    w = np.append(start["v"], 1.0) * np.concatenate([[1.0], np.cumprod(1.0 - start["v"])])
    expected = counts @ log_density(x, w, start["beta_a"], start["beta_b"], "beta")
    np.testing.assert_allclose(loglik, expected, rtol=1e-10)
    with pytest.raises(ValueError, match="hyperparameters of 'beta' components but family='gaussian'"):
        get_route("nuts")(x, counts, prior, n_components=K, draws=5, random_seed=0)


@pytest.mark.filterwarnings("ignore")
def test_nuts_samples_beta_components_like_the_gibbs_sampler(rng):
    """NUTS on the PyMC model and the blocked Gibbs sampler give the same posterior-mean
    density of scores piled near 0 (Beta components, tiny settings)."""
    from bayescal.bayesian.priors import resolve_priors

    x = _piled(rng, 150)
    ones = np.ones(x.size)
    K = 3
    prior = resolve_priors(None, [x, x], [ones, ones], K, "beta")[0]
    kw = {"n_components": K, "draws": 150, "tune": 150, "chains": 2, "family": "beta"}
    nuts = get_route("nuts")(x, ones, prior, random_seed=1, **kw)
    gibbs = get_route("gibbs")(x, ones, prior, random_seed=1, **kw)
    assert set(nuts.posterior.data_vars) == set(gibbs.posterior.data_vars)
    g = np.linspace(np.quantile(x, 0.05), np.quantile(x, 0.95), 50)

    def mean_density(fit):
        post = fit.posterior.stack(sample=("chain", "draw")).transpose("sample", "component")
        return np.exp(log_density(g, post["weight"].values, post["beta_a"].values, post["beta_b"].values, "beta")).mean(
            0
        )

    d_nuts, d_gibbs = mean_density(nuts), mean_density(gibbs)
    assert np.trapezoid(np.abs(d_nuts - d_gibbs), g) < 0.1
