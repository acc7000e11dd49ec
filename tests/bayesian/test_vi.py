"""The variational route ``inference="vi"`` (:mod:`bayescal.bayesian.vi`), on tiny settings.

K = 3 throughout, so each compiled piece is built once in the test process; a few hundred
points; short optimisations.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

from bayescal import DPMCalibrator
from bayescal.bayesian import pymc_model, vi
from bayescal.bayesian.priors import DEFAULT_PRIOR, kde_prior
from bayescal.bayesian.routes import get_route

K = 3
FAST = {"num_paths": 2, "n_fixed_draws": 10}


def _scores(rng, n):
    y = rng.random(n) < 0.4
    return np.where(y, rng.beta(5, 2, n), rng.beta(2, 5, n)), y.astype(int)


def _class_data(rng, n=200):
    z = rng.uniform(size=n) < 0.4
    x = np.where(z, rng.normal(-2.0, 0.7, n), rng.normal(1.5, 1.0, n))
    return x, np.ones(n), {**DEFAULT_PRIOR, **kde_prior(x, np.ones(n), K)}


def test_vi_module_import_stays_light():
    code = (
        "import sys, bayescal.bayesian.routes as r; r.get_route('vi'); "
        "assert not any(m in sys.modules for m in ('pymc', 'pytensor', 'pymc_extras'))"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_vi_and_gibbs_agree_and_khat_warnings_match_diagnostics():
    """The posterior-mean maps of the DADVI route and the sampler agree within the tolerance
    the route documents (mean absolute difference <= 0.03, largest <= 0.08 over the central
    90 % of the scores), and a k-hat warning is raised for exactly the classes whose k-hat
    exceeds 0.7."""
    s, y = _scores(np.random.default_rng(3), 400)
    grid = np.quantile(s, np.linspace(0.05, 0.95, 60))
    gibbs = DPMCalibrator(n_components=K, draws=300, tune=200, random_state=1, components="gaussian").fit(s, y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = DPMCalibrator(
            n_components=K, draws=300, inference="vi", route_options=FAST, random_state=1, components="gaussian"
        ).fit(s, y)
    diff = np.abs(fit.predict_proba(grid)[:, 1] - gibbs.predict_proba(grid)[:, 1])
    assert diff.mean() <= 0.03 and diff.max() <= 0.08, (diff.mean(), diff.max())
    ks = [fit.diagnostics_["gaussian"][f"class_{c}"]["pareto_k"] for c in (0, 1)]
    assert all(np.isfinite(ks))
    khat_warnings = [w for w in caught if "Pareto k-hat" in str(w.message)]
    assert len(khat_warnings) == sum(k > vi.KHAT_WARN for k in ks)
    for w in khat_warnings:
        assert issubclass(w.category, UserWarning) and "inference='gibbs'" in str(w.message)
    # a second fit with the same K compiles nothing
    built = dict(pymc_model.N_COMPILATIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        DPMCalibrator(
            n_components=K, draws=200, inference="vi", route_options=FAST, random_state=2, components="gaussian"
        ).fit(s, y)
    assert pymc_model.N_COMPILATIONS == built


def test_selection_warns_only_about_the_family_it_keeps():
    """components="select" fits both families and keeps one: the k-hat warnings are those of the
    kept family's classes (it warned about the dropped family's too, four warnings for two)."""
    s, y = _scores(np.random.default_rng(3), 400)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = DPMCalibrator(n_components=K, draws=200, inference="vi", route_options=FAST, random_state=1).fit(s, y)
    kept = fit.diagnostics_["family_selection"]["chosen"]
    ks = [fit.diagnostics_[kept][f"class_{c}"]["pareto_k"] for c in (0, 1)]
    assert len([w for w in caught if "Pareto k-hat" in str(w.message)]) == sum(k > vi.KHAT_WARN for k in ks)


@pytest.mark.filterwarnings("ignore:The variational fit")
def test_dadvi_layout_diagnostics_and_seed():
    x, c, prior = _class_data(np.random.default_rng(0))
    route = get_route("vi")
    fit = route(x, c, prior, n_components=K, draws=150, random_seed=5, linear_response=True, **FAST)
    post = fit.posterior
    assert post["mu"].shape == (1, 150, K) and post["alpha"].shape == (1, 150)
    np.testing.assert_allclose(post["weight"].sum("component"), 1.0, atol=1e-10)
    assert np.all(post["sigma"].values > 0)
    d = fit.diagnostics
    assert d["route"] == "vi" and d["method"] == "dadvi" and d["n_paths"] == 2
    assert d["converged"] is True and d["linear_response"] is True and d["hessian_min_eig"] > 0
    assert np.isfinite(d["pareto_k"]) and 1.0 <= d["ess_importance"] <= 150
    assert d["elbo_spread"] >= 0 and np.isfinite(d["elbo_final"])
    assert all(isinstance(v, (bool, int, float, str)) for v in d.values())
    # the fitted mixture's mean is the data's mean
    mixture_mean = (post["weight"].values[0] * post["mu"].values[0]).sum(axis=1)
    assert abs(mixture_mean.mean() - x.mean()) < 0.25
    again = route(x, c, prior, n_components=K, draws=150, random_seed=5, linear_response=True, **FAST)
    np.testing.assert_array_equal(again.posterior["mu"].values, post["mu"].values)
    other = route(x, c, prior, n_components=K, draws=150, random_seed=6, linear_response=True, **FAST)
    assert not np.array_equal(other.posterior["mu"].values, post["mu"].values)
    assert d["importance_resampled"] is False  # none asked for
    few = route(x, c, prior, n_components=K, draws=50, random_seed=5, importance_sampling="psir", **FAST)
    assert np.isnan(few.diagnostics["pareto_k"]) and few.diagnostics["importance_resampled"] is False  # PSIS: >= 100


def test_linear_response_recovers_a_correlated_gaussian():
    """On a Gaussian target with correlation 0.9 the mean-field optimum understates the
    marginal variances by the factor 1 - rho^2; the linear-response covariance of the same
    optimum recovers the target's covariance (Giordano, Broderick & Jordan 2018)."""
    cov = np.array([[1.0, 0.9], [0.9, 1.0]]) * 4.0
    prec = np.linalg.inv(cov)

    def fg(eta, z):  # DADVI objective of log p(theta) = -theta' prec theta / 2, and its gradient
        m, log_s = eta[:2], eta[2:]
        theta = m + np.exp(log_s) * z
        lam = theta @ prec
        f = 0.5 * np.mean(np.sum(theta * lam, axis=1)) - np.sum(log_s)
        return f, np.concatenate([lam.mean(axis=0), np.mean(lam * np.exp(log_s) * z, axis=0) - 1.0])

    gaussian = vi._Flat(size=2, point_fn=None, dadvi_fg=fg)
    start = np.array([1.0, -1.0])
    lr = vi._dadvi_path(gaussian, start, np.random.default_rng(0), 500, True, 500, 0.1)
    mf = vi._dadvi_path(gaussian, start, np.random.default_rng(0), 500, False, 500, 0.1)
    assert lr["converged"] and lr["lr_applied"] and not mf["lr_applied"]
    np.testing.assert_allclose(lr["mean"], 0.0, atol=0.15)  # DADVI's fixed draws shift it by s * mean(z)
    np.testing.assert_allclose(np.diag(mf["cov"]), 4.0 * (1 - 0.9**2), rtol=0.1)
    np.testing.assert_allclose(lr["cov"], cov, rtol=0.1, atol=0.2)


def _correlated_gaussian_objective(finite_region=np.inf):
    """DADVI objective of a correlated Gaussian target, and its gradient; not finite (NaN) where a
    coordinate of the variational parameters is farther than ``finite_region`` from 0."""
    prec = np.linalg.inv(np.array([[1.0, 0.9], [0.9, 1.0]]) * 4.0)

    def fg(eta, z):
        if np.any(np.abs(eta) > finite_region):
            return np.nan, np.full(eta.size, np.nan)
        m, log_s = eta[:2], eta[2:]
        theta = m + np.exp(log_s) * z
        lam = theta @ prec
        f = 0.5 * np.mean(np.sum(theta * lam, axis=1)) - np.sum(log_s)
        return f, np.concatenate([lam.mean(axis=0), np.mean(lam * np.exp(log_s) * z, axis=0) - 1.0])

    return vi._Flat(size=2, point_fn=None, dadvi_fg=fg)


def test_dadvi_path_from_a_start_where_the_objective_is_not_finite_has_not_converged():
    """L-BFGS-B reports success, without an iteration, from a start where the objective is not
    finite (the zero gradient returned there); the path must say it has not converged."""
    flat = _correlated_gaussian_objective(finite_region=2.0)
    path = vi._dadvi_path(flat, np.array([1.0, -1.0]), np.random.default_rng(0), 200, False, 500, 0.01)
    assert path["converged"] is False and path["optimality_gap"] == np.inf
    ok = vi._dadvi_path(flat, np.array([1.0, -1.0]), np.random.default_rng(0), 200, False, 500, 0.5)
    assert ok["converged"] is True and ok["optimality_gap"] <= vi.DADVI_GAP and ok["n_restarts"] == 0


def test_dadvi_path_resumes_an_optimiser_that_stopped_early(monkeypatch):
    """When L-BFGS-B stops short of the optimum (here: its first run cut to 3 iterations), the
    path restarts it from where it stopped and reaches the optimum of an uninterrupted run."""
    import scipy.optimize

    flat = _correlated_gaussian_objective()
    start = np.array([1.0, -1.0])
    whole = vi._dadvi_path(flat, start, np.random.default_rng(0), 200, False, 500, 0.1)
    original, calls = scipy.optimize.minimize, []

    def first_run_cut_short(*args, options, **kwargs):
        calls.append(options["maxiter"])
        return original(*args, options=options | ({"maxiter": 3} if len(calls) == 1 else {}), **kwargs)

    monkeypatch.setattr(scipy.optimize, "minimize", first_run_cut_short)
    resumed = vi._dadvi_path(flat, start, np.random.default_rng(0), 200, False, 500, 0.1)
    assert len(calls) >= 2 and resumed["n_restarts"] >= 1 and calls[1] == 500 - 3
    assert resumed["converged"] is True and resumed["optimality_gap"] <= vi.DADVI_GAP
    np.testing.assert_allclose(resumed["mean"], whole["mean"], atol=1e-3)
    np.testing.assert_allclose(np.diag(resumed["cov"]), np.diag(whole["cov"]), rtol=1e-3)
    assert abs(resumed["elbo"] - whole["elbo"]) < 1e-4


@pytest.mark.filterwarnings("ignore:The variational fit")
def test_vi_draws_are_in_a_random_order_and_an_unconverged_fit_warns():
    """Two DADVI paths at different optima give draws in blocks; in the fit they are shuffled, so
    the one chain's effective sample size of a quantity that differs between the paths is that of
    independent draws. A fit whose optimiser stops short says so and names the remedies."""
    import arviz_stats

    x, c, prior = _class_data(np.random.default_rng(0))
    route = get_route("vi")
    fit = route(x, c, prior, n_components=K, draws=400, random_seed=5, jitter=3.0, **FAST)
    alpha = fit.posterior["alpha"].values[0]
    first, second = alpha[:200], alpha[200:]
    assert abs(np.mean(first) - np.mean(second)) < 4 * np.std(alpha) / np.sqrt(200)  # no block per path
    assert float(arviz_stats.ess(fit.posterior["alpha"].values, method="bulk")) > 200
    with pytest.warns(UserWarning, match=r"did not converge.*max_iterations.*inference='gibbs'"):
        short = route(x, c, prior, n_components=K, draws=100, random_seed=5, max_iterations=2, **FAST)
    assert short.diagnostics["converged"] is False and short.diagnostics["optimality_gap"] > vi.DADVI_GAP


def test_khat_warning_on_a_crude_approximation():
    """Two fixed draws and no correction give a poor approximation: k-hat is large and the
    warning names the sampler route."""
    x, c, prior = _class_data(np.random.default_rng(2))
    with pytest.warns(UserWarning, match=r"Pareto k-hat .* > 0.7.*inference='gibbs'") as record:
        fit = get_route("vi")(x, c, prior, n_components=K, draws=200, random_seed=0, num_paths=1, n_fixed_draws=2)
    assert fit.diagnostics["pareto_k"] > vi.KHAT_WARN
    assert f"{fit.diagnostics['pareto_k']:.2f}" in str(record[0].message)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"method": "laplace"}, r"route_options\['method'\]='laplace' is not one of"),
        ({"num_paths": 0}, r"route_options\['num_paths'\]"),
        ({"importance_sampling": "psis"}, r"route_options\['importance_sampling'\]"),
        ({"n_fixed_draws": 1}, r"route_options\['n_fixed_draws'\]"),
        ({"jitter": -1.0}, r"route_options\['jitter'\]"),
        ({"no_such_option": 1}, r"route_options .* do not fit inference='vi'"),
        ({"init_std": 0.0}, r"route_options\['init_std'\]=0.0 must lie in \(0, inf\)"),  # was a fit at the start
        ({"jitter": None}, r"route_options\['jitter'\]=None must be a real number"),
        ({"max_iterations": 0}, r"route_options\['max_iterations'\]=0 must be an integer"),  # was the default
        ({"linear_response": "no"}, r"route_options\['linear_response'\]='no' must be True or False"),
        ({"draws": 2}, r"route_options\['draws'\]=2 must be an integer of at least 4"),
        ({"draws": 300}, r"draws=100 and route_options\['draws'\]=300 both set the vi route's draws"),  # was ignored
        # an option of another method was accepted and did nothing
        ({"method": "pathfinder", "n_fixed_draws": 7}, r"route_options\['n_fixed_draws'\] does nothing with method="),
        ({"method": "dadvi", "learning_rate": 5.0}, r"route_options\['learning_rate'\] does nothing.*takes init_std"),
    ],
)
def test_bad_route_options_name_the_argument(options, match):
    s, y = _scores(np.random.default_rng(0), 60)
    with pytest.raises(ValueError, match=match):
        DPMCalibrator(n_components=K, draws=100, inference="vi", route_options=options).fit(s, y)


@pytest.mark.parametrize(
    ("inference", "options", "match"),
    [
        ("advi", {"window": 0}, r"route_options\['window'\]=0 must be an integer"),  # was a ZeroDivisionError
        ("advi", {"psis": "no"}, r"route_options\['psis'\]='no' must be True or False"),
        ("advi", {"learning_rate": -0.01}, r"route_options\['learning_rate'\]=-0.01 must lie in \(0, inf\)"),
        ("nuts", {"target_accept": "0.9"}, r"route_options\['target_accept'\]='0.9' must be a real number"),
    ],
)
def test_bad_options_of_the_pymc_routes_name_the_argument(inference, options, match):
    s, y = _scores(np.random.default_rng(0), 60)
    with pytest.raises(ValueError, match=match):
        DPMCalibrator(n_components=K, draws=100, inference=inference, route_options=options).fit(s, y)


def _mixture_mean_inside_data(fit, x):
    mean_mu = np.average(fit.posterior["mu"].values[0], axis=1, weights=fit.posterior["weight"].values[0])
    return np.all((mean_mu > x.min()) & (mean_mu < x.max()))


@pytest.mark.filterwarnings("ignore:The variational fit", "ignore::DeprecationWarning")
def test_pathfinder_method_runs():
    pytest.importorskip("pymc_extras", reason="Pathfinder needs pymc-extras (pip install bayescal[vi])")
    x, c, prior = _class_data(np.random.default_rng(4))
    pf = get_route("vi")(x, c, prior, n_components=K, draws=100, random_seed=0, method="pathfinder", num_paths=2)
    d = pf.diagnostics
    assert d["method"] == "pathfinder" and d["importance_resampled"] and d["n_successful_paths"] == 2
    assert np.isfinite(d["pareto_k"]) and np.isfinite(d["elbo_spread"]) and pf.posterior["mu"].shape == (1, 100, K)
    assert _mixture_mean_inside_data(pf, x)
    with pytest.warns(UserWarning, match=r"did not converge.*raise route_options\['max_iterations'\]"):
        short = get_route("vi")(
            x, c, prior, n_components=K, draws=100, random_seed=0, method="pathfinder", num_paths=2, max_iterations=3
        )
    assert short.diagnostics["n_iterations"] <= 2 * 3 and not short.diagnostics["converged"]  # was ignored


def _fullrank(x, c, prior, max_iterations):
    """One full-rank ADVI path on tiny settings."""
    return get_route("vi")(
        x,
        c,
        prior,
        n_components=K,
        draws=100,
        random_seed=0,
        method="fullrank_advi",
        num_paths=1,
        max_iterations=max_iterations,
        window=250,
        tol=1e-3,
    )


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:The variational fit")
def test_fullrank_method_runs():
    x, c, prior = _class_data(np.random.default_rng(4))
    fr = _fullrank(x, c, prior, max_iterations=3000)
    assert fr.diagnostics["method"] == "fullrank_advi" and 0 < fr.diagnostics["n_iterations"] <= 3000
    assert np.all(np.isfinite(fr.posterior["mu"].values))
    assert _mixture_mean_inside_data(fr, x)


@pytest.mark.filterwarnings("ignore:The variational fit")
def test_dadvi_fits_beta_components_like_the_sampler():
    """With Beta components (scores piled near 0 and 1) the DADVI route returns the Beta layout
    and a posterior-mean map within the same tolerance of the sampler's."""
    rng = np.random.default_rng(6)
    y = (rng.random(400) < 0.3).astype(int)
    s = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    grid = np.quantile(s, np.linspace(0.05, 0.95, 60))
    kw = {"n_components": K, "draws": 300, "components": "beta", "random_state": 1}
    gibbs = DPMCalibrator(tune=200, **kw).fit(s, y)
    fit = DPMCalibrator(inference="vi", route_options=FAST, **kw).fit(s, y)
    post = fit.idata_["posterior"]
    assert "beta_a" in post and "mu" not in post and np.all(post["beta_b"].values > 0)
    diff = np.abs(fit.predict_proba(grid)[:, 1] - gibbs.predict_proba(grid)[:, 1])
    assert diff.mean() <= 0.03 and diff.max() <= 0.08, (diff.mean(), diff.max())


@pytest.mark.filterwarnings("ignore:The variational fit")
def test_dadvi_on_compressed_scores_survives_steps_that_overflow_a_beta_shape():
    """On 10^4 scores (compressed to bin counts) the first L-BFGS steps of DADVI can be so long that a
    Beta component's shape under- or overflows, which PyMC refuses with ParameterValueError; the
    route shortens the step instead and returns a sane map (this replicate raised before)."""
    from scipy import stats

    rng = np.random.default_rng(2)
    s, y = _scores(rng, 10_000)
    fit = DPMCalibrator(
        inference="vi", components="beta", n_components=K, draws=200, random_state=0, route_options=FAST
    ).fit(s, y)
    grid = np.linspace(0.1, 0.9, 41)
    f1, f0 = 0.4 * stats.beta(5, 2).pdf(grid), 0.6 * stats.beta(2, 5).pdf(grid)
    assert np.mean(np.abs(fit.predict_proba(grid)[:, 1] - f1 / (f1 + f0))) < 0.03


def test_dadvi_converges_on_compressed_scores_with_gaussian_components():
    """On 10^4 scores (compressed to bin counts, so the components' scales have a floor) DADVI
    reaches its optimum: the floor is the transform of the scales' truncated prior, not a wall of
    -inf that fixed draws hit (there every path stalled, optimality gaps 1-51 nats, and warned)."""
    rng = np.random.default_rng(0)
    s, y = _scores(rng, 10_000)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The variational fit .* Pareto k-hat")
        warnings.filterwarnings("error", message="The variational fit .* did not converge")
        fit = DPMCalibrator(
            inference="vi", components="gaussian", n_components=8, draws=200, random_state=0, route_options=FAST
        ).fit(s, y)
    for c in ("class_0", "class_1"):
        d = fit.diagnostics_["gaussian"][c]
        assert d["converged"] and d["optimality_gap"] <= vi.DADVI_GAP, d


@pytest.mark.slow
def test_fullrank_undoes_steps_whose_draw_has_no_finite_density(monkeypatch):
    """A full-rank ADVI step whose draw gives a non-finite ELBO is undone (parameters and adam's state
    restored) and counted; the path still converges to finite parameters."""
    x, c, prior = _class_data(np.random.default_rng(4))
    real = vi._fullrank_parts

    def flaky(slot):
        parts = real(slot)
        calls = {"n": 0}

        def step():
            calls["n"] += 1
            loss = parts.step()
            return np.nan if calls["n"] % 50 == 0 else loss  # every 50th draw "has no finite density"

        return vi._FullRank(step, parts.learning_rate, parts.opt_state, parts.rngs, parts.mean, parts.l_tril)

    monkeypatch.setattr(vi, "_fullrank_parts", flaky)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = _fullrank(x, c, prior, max_iterations=1000)
    assert fit.diagnostics["n_rejected"] == 20
    assert np.all(np.isfinite(fit.posterior["mu"].values)) and _mixture_mean_inside_data(fit, x)


def test_non_convergence_names_the_iterations_when_one_path_ran_out(monkeypatch):
    """One path converged early, the other used its whole budget without converging: the remedy is
    more iterations, though the paths' iterations in all stay below paths x budget."""
    from bayescal.bayesian import vi

    real = vi._dadvi_path
    calls = []

    def second_runs_out(*args):
        path = real(*args)
        calls.append(path)
        if len(calls) == 2:
            path = dict(path, converged=False, n_iterations=args[5], optimality_gap=1.0)  # max_iterations
        return path

    monkeypatch.setattr(vi, "_dadvi_path", second_runs_out)
    x, c, prior = _class_data(np.random.default_rng(4))
    with pytest.warns(UserWarning, match=r"did not converge.*raise route_options\['max_iterations'\]"):
        fit = get_route("vi")(
            x, c, prior, n_components=K, draws=100, random_seed=0, num_paths=2, n_fixed_draws=10, max_iterations=300
        )
    assert calls[0]["converged"] and fit.diagnostics["n_iterations"] < 2 * 300
