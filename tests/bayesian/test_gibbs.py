"""Tests of the compiled Gibbs sweeps: same posterior as the numpy sweeps, seeded, thread-independent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from arviz_stats.base import array_stats
from scipy.special import logit

from bayescal.bayesian import mixture
from bayescal.bayesian.gibbs import default_thin, fit_gibbs
from bayescal.bayesian.priors import resolve_priors

REPO = Path(__file__).resolve().parents[2]


def _density_draws(fit, grid, family):
    p1, p2 = mixture.PARAMS[family]
    post = fit.posterior
    return np.exp(mixture.log_density(grid, post["weight"].values, post[p1].values, post[p2].values, family))


def _summaries(fit, grid, family):
    """Posterior mean and 2.5 % / 97.5 % quantiles of the density at ``grid``, with their Monte Carlo
    standard errors: the larger of Vehtari et al.'s (2021) estimate from the chains' draws and the
    spread of the chains' own estimates (chains are independent; for a tail quantile of a
    density where components rarely go, the autocorrelation-based estimate from 500-1000 draws a
    chain is up to 3 times too small, measured over seeds of either implementation)."""
    d = np.moveaxis(_density_draws(fit, grid, family), -1, 0)  # (point, chain, draw)
    n_chains = d.shape[1]

    def between(per_chain):
        return per_chain.std(axis=1, ddof=1) / np.sqrt(n_chains)

    out = {
        "mean": (
            d.mean(axis=(1, 2)),
            np.maximum(array_stats.mcse(d, chain_axis=1, draw_axis=2, method="mean"), between(d.mean(axis=2))),
        )
    }
    for q in (0.025, 0.975):
        est = np.quantile(d, q, axis=(1, 2))
        se = array_stats.mcse(d, chain_axis=1, draw_axis=2, method="quantile", prob=q)
        out[q] = (est, np.maximum(se, between(np.quantile(d, q, axis=2))))
    return out


def _cases():
    rng = np.random.default_rng(11)
    raw = np.concatenate([rng.normal(-1.5, 0.6, 150), rng.normal(1.0, 0.9, 250)])
    s = rng.beta(2, 5, 20000)
    counts, edges = np.histogram(logit(s), 48)  # binned: large counts, the binomial path
    centres = 0.5 * (edges[1:] + edges[:-1])
    frac = rng.normal(0.5, 1.0, 300)
    return {
        "raw": (raw, np.ones(raw.size), "gaussian"),
        "binned": (centres, counts.astype(float), "gaussian"),
        "fractional": (frac, rng.uniform(0.2, 2.5, frac.size), "gaussian"),
        "beta": (logit(rng.beta(0.6, 3.0, 300).clip(1e-6, 1 - 1e-6)), np.ones(300), "beta"),
    }


CASES = _cases()


MOVES = {
    "plain": {},
    "label-swaps": {"label_swaps": True},
    "hamiltonian": {"hmc_steps": 10},
    "merge-split": {"merge_split": 5},
    "collapsed-alpha": {"alpha_update": "collapsed"},
}


@pytest.mark.parametrize(
    ("case", "moves"),
    [
        pytest.param(case, MOVES[name], id=f"{name}-{case}")
        for name in MOVES
        for case in sorted(CASES)
        if name != "merge-split" or CASES[case][2] == "gaussian"
    ],
)
def test_compiled_and_numpy_sweeps_sample_the_same_posterior(case, moves):
    """Posterior mean density and its 95 % band limits agree within Monte Carlo error at every grid point.

    The two implementations draw different random numbers, so the comparison is statistical:
    |difference| <= 4.5 combined Monte Carlo standard errors (plus 2 % of the value, for the
    error of the error estimates). A wrong conditional (e.g. sticks drawn without the tail
    counts) moves the mean density by many standard errors.
    """
    x, counts, family = CASES[case]
    K = 6
    prior = resolve_priors(None, [x, x], [counts, counts], K, family)[0]
    if case == "binned":  # as the calibrator's compressed data: no component narrower than a bin
        prior["scale_floor"] = np.diff(x).min()
    kw = {"n_components": K, "draws": 500, "tune": 300, "thin": 1, "chains": 8, "family": family, "start": "prior"}
    ref = fit_gibbs(x, counts, prior, random_seed=1, backend="numpy", **kw)
    new = fit_gibbs(x, counts, prior, random_seed=2, backend="numba", **kw, **moves)
    grid = np.quantile(x, np.linspace(0.05, 0.95, 9))
    a, b = _summaries(ref, grid, family), _summaries(new, grid, family)
    for key in ("mean", 0.025, 0.975):
        (ea, sa), (eb, sb) = a[key], b[key]
        tol = 4.5 * np.hypot(sa, sb) + 0.02 * np.abs(ea)
        assert np.all(np.abs(ea - eb) <= tol), (key, ea, eb, tol)


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_few_sweeps_from_one_start_have_the_same_distribution(case):
    """The transition itself, free of any question of mixing: 2000 independent chains of each
    implementation run 8 sweeps from the same start, and every parameter's mean over the chains
    agrees (|z| < 4.5 for each of the ~19 statistics, with the chains' own standard errors)."""
    x, counts, family = CASES[case]
    K, C = 6, 2000
    prior = resolve_priors(None, [x, x], [counts, counts], K, family)[0]
    kw = {"n_components": K, "draws": 1, "tune": 7, "chains": C, "family": family, "start": "prior"}
    a = fit_gibbs(x, counts, prior, random_seed=1, backend="numpy", **kw).posterior
    b = fit_gibbs(x, counts, prior, random_seed=2, backend="numba", **kw).posterior
    for name in ("alpha", "weight", *mixture.PARAMS[family]):
        va, vb = a[name].values[:, 0], b[name].values[:, 0]
        z = (va.mean(axis=0) - vb.mean(axis=0)) / np.sqrt((va.var(axis=0) + vb.var(axis=0)) / C)
        assert np.all(np.abs(z) < 4.5), (name, z)


@pytest.mark.parametrize(
    "counts",
    [np.zeros(6), np.array([120.0, 0.0, 35.0, 3.0, 0.0, 0.0]), np.array([2.0, 1.0, 0.0, 0.0, 1.0, 0.0])],
    ids=["no-data", "three-occupied", "few-units"],
)
def test_collapsed_concentration_draws_follow_its_conditional_given_the_counts(counts):
    """The slice sampler of the concentration given the components' counts (sticks integrated out)
    leaves that conditional invariant: 20,000 steps of it, thinned to 2,000, match the density
    Gamma(alpha; 2, 1) prod_k B(1 + n_k, alpha + T_k) / B(1, alpha), normalised on a grid
    (Kolmogorov-Smirnov p > 0.001). Without data it is the prior."""
    from scipy import stats
    from scipy.special import betaln

    from bayescal.bayesian._gibbs_kernels import draw_concentration

    a0, b0 = 2.0, 1.0
    suff = np.zeros((counts.size, 3))
    suff[:, 0] = counts
    tail = counts.sum() - np.cumsum(counts)
    grid = np.linspace(1e-6, 40.0, 400_001)
    logp = stats.gamma(a0, scale=1 / b0).logpdf(grid)
    for n_k, t_k in zip(counts[:-1], tail[:-1], strict=True):
        if n_k + t_k > 0:
            logp += betaln(1.0 + n_k, grid + t_k) + np.log(grid)
    cdf = np.cumsum(np.exp(logp - logp.max()))
    cdf /= cdf[-1]
    gen = np.random.default_rng(5)
    alpha, draws = 1.0, []
    for i in range(20_000):
        alpha = draw_concentration(suff, alpha, a0, b0, gen)
        if i % 10 == 9:
            draws.append(alpha)
    assert stats.kstest(draws, lambda q: np.interp(q, grid, cdf)).pvalue > 1e-3


def test_merge_split_moves_keep_the_prior_without_data():
    """Without data the posterior is the prior, which the merge-split moves must keep while
    accepting many proposals. The compiled chains run with every count set to zero, so each sweep
    draws every component and stick from the prior and the moves then act on that draw: the
    components' means and log scales keep their prior means and spreads, and the weights the
    means of the plain sweeps' (|z| < 4.5). A wrong Jacobian of the split (without its sigma
    factor) moves the log scales' means by 10-15 standard errors."""
    from bayescal.bayesian.gibbs import _CompiledChains

    K, n_keep = 5, 20000
    x = np.linspace(-2.0, 2.0, 40)
    prior = {
        "mu_loc": np.linspace(-1.0, 1.0, K), "mu_scale": 1.0, "sigma_logmean": -2.0, "sigma_logsd": 0.5,
        "alpha_shape": 2.0, "alpha_rate": 2.0, "init_mu": np.linspace(-1.0, 1.0, K), "init_sigma": np.full(K, 0.6),
        "init_weight": np.full(K, 1.0 / K),
    }  # fmt: skip

    def prior_draws(merge_split, seed):
        chains = _CompiledChains(
            x, np.ones(x.size), prior, K, 2, 10, 1, n_keep, 2, False, "gaussian", seed, None, 0, merge_split
        )
        chains.c_int[:] = 0
        chains.c_frac[:] = 0
        chains.counts[:] = 0
        chains.advance(n_keep)
        out, _, _, occupied, extra = chains.draws(n_keep)
        assert occupied.max() == 0
        return {k: val.reshape(-1, K) for k, val in out.items()}, extra

    moved, extra = prior_draws(3, 7)
    assert extra["merge_split_acceptance"] > 0.05
    plain, _ = prior_draws(0, 8)
    n = moved["mu"].shape[0]
    for draws, mean, sd in ((moved["mu"], np.linspace(-1.0, 1.0, K), 1.0), (np.log(moved["sigma"]), -2.0, 0.5)):
        assert np.all(np.abs(draws.mean(axis=0) - mean) / (sd / np.sqrt(n)) < 4.5)
        assert np.all(np.abs(draws.std(axis=0) / sd - 1.0) < 0.03)
    w, w_ref = moved["weight"], plain["weight"]
    z = (w.mean(axis=0) - w_ref.mean(axis=0)) / np.sqrt((w.var(axis=0) + w_ref.var(axis=0)) / n)
    assert np.all(np.abs(z) < 4.5), z


def test_same_seed_same_draws_whatever_the_threads_other_seed_differs():
    x, counts, _ = CASES["binned"]
    prior = resolve_priors(None, [x, x], [counts, counts], 5)[0]
    kw = {"n_components": 5, "draws": 50, "tune": 20, "chains": 3, "label_swaps": True}
    one = fit_gibbs(x, counts, prior, random_seed=7, n_threads=1, **kw).posterior
    many = fit_gibbs(x, counts, prior, random_seed=7, n_threads=3, **kw).posterior
    other = fit_gibbs(x, counts, prior, random_seed=8, n_threads=1, **kw).posterior
    for name in ("weight", "mu", "sigma", "alpha"):
        np.testing.assert_array_equal(one[name].values, many[name].values)
    assert not np.array_equal(one["mu"].values, other["mu"].values)
    # every chain is its own stream: no two chains repeat each other
    assert not np.array_equal(one["mu"].values[0], one["mu"].values[1])


@pytest.mark.parametrize("family", ["gaussian", "beta"])
@pytest.mark.parametrize("hmc_steps", [0, 3])
def test_chains_run_in_stretches_are_the_chains_run_at_once(family, hmc_steps):
    """GibbsChains.advance in stretches (as components="select" runs the kept family's chains on
    after comparing the families on their first draws) gives the draws, log-likelihoods and
    acceptance of one fit_gibbs call with the same seed, and the draws so far are the first of
    them; also with Hamiltonian moves, whose step size and mass the warm-up sets."""
    from bayescal.bayesian.gibbs import GibbsChains

    x, counts, _ = CASES["binned"]
    prior = resolve_priors(None, [x, x], [counts, counts], 5, family)[0]
    kw = {"n_components": 5, "draws": 60, "tune": 30, "thin": 3, "family": family, "label_swaps": True}
    kw["hmc_steps"] = hmc_steps
    whole = fit_gibbs(x, counts, prior, random_seed=7, **kw)
    chains = GibbsChains(x, counts, prior, random_seed=7, **kw)
    chains.advance(25)
    first = chains.class_fit()
    chains.advance(10)  # already there: nothing runs
    chains.advance(60)
    staged = chains.class_fit()
    assert first.posterior.sizes["draw"] == 25 and staged.diagnostics["n_iterations"] == 30 + 60 * 3
    for name in whole.posterior.data_vars:
        np.testing.assert_array_equal(staged.posterior[name].values, whole.posterior[name].values)
        np.testing.assert_array_equal(first.posterior[name].values, whole.posterior[name].values[:, :25])
    np.testing.assert_array_equal(
        staged.sample_stats["class_log_likelihood"].values, whole.sample_stats["class_log_likelihood"].values
    )
    for key in ("mh_acceptance", "swap_acceptance") + (("hmc_acceptance",) if hmc_steps else ()):
        assert staged.diagnostics[key] == whole.diagnostics[key]


def test_generator_seed_is_accepted_and_not_reused():
    x, counts, _ = CASES["raw"]
    prior = resolve_priors(None, [x, x], [counts, counts], 4)[0]
    kw = {"n_components": 4, "draws": 20, "tune": 5}
    gen = np.random.default_rng(3)
    first = fit_gibbs(x, counts, prior, random_seed=gen, **kw).posterior["mu"].values
    second = fit_gibbs(x, counts, prior, random_seed=gen, **kw).posterior["mu"].values
    assert not np.array_equal(first, second)
    again = fit_gibbs(x, counts, prior, random_seed=np.random.default_rng(3), **kw).posterior["mu"].values
    np.testing.assert_array_equal(first, again)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"backend": "cuda"}, "backend="),
        ({"n_threads": 0}, "n_threads=0"),
        ({"backend": "numpy", "label_swaps": True}, "plain blocked sweeps"),
        ({"backend": "numpy", "hmc_steps": 5}, "plain blocked sweeps"),
        ({"hmc_steps": -1}, "hmc_steps=-1"),
        ({"hmc_steps": 2.5}, "hmc_steps=2.5"),
        ({"hmc_steps": "always"}, "must be 'auto' or an integer"),
        ({"merge_split": -1}, "merge_split=-1"),
        ({"thin": "a"}, "thin='a' must be an integer >= 1"),  # was int()'s "invalid literal"
        ({"thin": float("nan")}, "thin=nan must be an integer >= 1"),
        ({"backend": "numpy", "merge_split": 2}, "plain blocked sweeps"),
        ({"family": "beta", "merge_split": 2}, "Gaussian components"),
        ({"alpha_update": "marginal"}, "alpha_update='marginal' is not one of"),
        ({"backend": "numpy", "alpha_update": "collapsed"}, "set backend='numba'"),
    ],
)
def test_bad_options_raise(options, match):
    x, counts, _ = CASES["raw"]
    prior = resolve_priors(None, [x, x], [counts, counts], 4)[0]
    with pytest.raises(ValueError, match=match):
        fit_gibbs(x, counts, prior, n_components=4, draws=5, tune=0, random_seed=0, **options)


def test_priors_of_another_size_and_infinite_counts_are_refused():
    """Priors resolved for K = 4 with n_components=6 (or 6 with 4) once ran: the sweeps took K from
    the priors' vectors, the outputs n_components, and the weights came back as uninitialised
    memory (or the process crashed); an infinite count gave NaN means silently."""
    x, counts, _ = CASES["raw"]
    for k_prior, k_fit in ((4, 6), (6, 4)):
        prior = resolve_priors(None, [x, x], [counts, counts], k_prior)[0]
        with pytest.raises(ValueError, match=rf"prior\['mu_loc'\] has shape \({k_prior},\), not \({k_fit},\)"):
            fit_gibbs(x, counts, prior, n_components=k_fit, draws=5, tune=0, random_seed=0)
    prior = resolve_priors(None, [x, x], [counts, counts], 4)[0]
    bad = np.asarray(counts, dtype=float).copy()
    bad[0] = np.inf
    for backend in ("numba", "numpy"):
        with pytest.raises(ValueError, match="counts must be finite"):
            fit_gibbs(x, bad, prior, n_components=4, draws=5, tune=0, random_seed=0, backend=backend)


@pytest.mark.slow
def test_kernels_compile_without_a_writable_cache(tmp_path):
    """Where neither the package directory nor any numba cache directory can be written, the
    kernels (the sampler's, the mixture's and the map interpolation's) compile in memory and
    give the same draws as the cached ones."""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "bayescal", pkg / "bayescal", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory would have to be")
    for package in (pkg / "bayescal", pkg / "bayescal" / "bayesian"):
        (package / "__pycache__").write_text("not a directory")
    env = os.environ | {
        "PYTHONPATH": str(pkg),
        "PYTHONDONTWRITEBYTECODE": "1",
        "NUMBA_CACHE_DIR": str(blocker / "numba"),
        "XDG_CACHE_HOME": str(blocker / "cache"),
        "HOME": str(blocker),
    }
    code = (
        "import numpy as np; from bayescal.bayesian.gibbs import fit_gibbs; "
        "from bayescal.bayesian.priors import resolve_priors; import bayescal; print(bayescal.__file__); "
        "x = np.linspace(-2, 2, 50); c = np.ones(50); p = resolve_priors(None, [x, x], [c, c], 3)[0]; "
        "f = fit_gibbs(x, c, p, n_components=3, draws=5, tune=2, random_seed=4); "
        "print(repr(float(f.posterior['mu'].values.sum())))\n"
        "from bayescal.bayesian import mixture; "
        "assert np.isfinite(mixture.log_density(x, np.full((2, 3), 1 / 3), np.zeros((2, 3)), np.ones((2, 3)))).all()\n"
        "from bayescal._interp import interp_regular, interp_sorted; "
        "assert np.allclose(interp_regular(x, -2.0, 0.5, np.arange(9.0)), 2 * x + 4); "
        "k = np.linspace(0, 1, 9); q = np.linspace(0, 1, 200); "
        "assert np.allclose(interp_sorted(q, k, k), q)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    where, value = out.stdout.split()
    assert where.startswith(str(pkg))
    x, c = np.linspace(-2, 2, 50), np.ones(50)
    p = resolve_priors(None, [x, x], [c, c], 3)[0]
    here = fit_gibbs(x, c, p, n_components=3, draws=5, tune=2, random_seed=4)
    assert float(value) == float(here.posterior["mu"].values.sum())


def test_cached_kernels_give_the_draws_of_freshly_compiled_ones(tmp_path):
    """Two new processes share an empty numba cache: the first compiles the sweeps (with the
    Hamiltonian moves) and writes the cache, the second loads it; the draws are the same.
    (With the moves as separately compiled functions, the cached kernel gave other draws.)"""
    pkg = tmp_path / "pkg"
    shutil.copytree(REPO / "bayescal", pkg / "bayescal", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    env = os.environ | {"PYTHONPATH": str(pkg), "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    code = (
        "import numpy as np; from bayescal.bayesian.gibbs import fit_gibbs; "
        "from bayescal.bayesian.priors import resolve_priors; "
        "x = np.linspace(-2, 2, 50); c = np.ones(50); p = resolve_priors(None, [x, x], [c, c], 3)[0]; "
        "f = fit_gibbs(x, c, p, n_components=3, draws=20, tune=60, random_seed=4, hmc_steps=5); "
        "print(repr(float(f.posterior['mu'].values.sum())), f.diagnostics['hmc_acceptance'])"
    )

    def run() -> str:
        return subprocess.run(
            [sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
        ).stdout

    fresh = run()
    assert any(tmp_path.joinpath("numba").rglob("*.nbi"))  # the second process loads this cache
    assert run() == fresh


def test_calibration_map_and_band_agree_between_backends():
    """The calibrator's posterior-mean map and 90 % band limits from the compiled and the numpy sweeps
    agree within Monte Carlo error (4.5 combined standard errors plus 0.01) over the data region.

    Both fits use Beta components: left to ``components="select"``, each fit's pilot picks a family,
    and on these data the two families' predictive scores are within their standard error, so
    the two fits could pick different models and the test would compare those, not the backends."""
    from bayescal.bayesian.dpm import DPMCalibrator

    rng = np.random.default_rng(5)
    y = (rng.random(400) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(5, 2, y.size), rng.beta(2, 5, y.size))
    grid = np.quantile(s, np.linspace(0.05, 0.95, 7))
    kw = {"components": "beta", "n_components": 8, "draws": 1000, "tune": 300, "chains": 4, "null_stacking": False}
    fits = [
        DPMCalibrator(random_state=seed, route_options={"backend": backend, "thin": 12}, **kw).fit(s, y)
        for seed, backend in ((1, "numpy"), (2, "numba"))
    ]
    stats = []
    for cal in fits:
        d = np.moveaxis(cal.calibration_map(grid).values, -1, 0)  # (point, chain, draw)
        row = {"mean": (d.mean(axis=(1, 2)), array_stats.mcse(d, chain_axis=1, draw_axis=2, method="mean"))}
        for q in (0.05, 0.95):
            se = array_stats.mcse(d, chain_axis=1, draw_axis=2, method="quantile", prob=q)
            row[q] = (np.quantile(d, q, axis=(1, 2)), se)
        stats.append(row)
    for key in ("mean", 0.05, 0.95):
        (ea, sa), (eb, sb) = stats[0][key], stats[1][key]
        assert np.all(np.abs(ea - eb) <= 4.5 * np.hypot(sa, sb) + 0.01), (key, ea, eb)


def test_default_thinning_follows_the_class_size_and_is_an_explicit_thin():
    """One sweep in 40 is kept up to 180 units, fewer as the class grows (one budget of units per
    kept draw), 2 from 3,600 on; the default is exactly the explicit ``thin`` it names (same
    draws from the same seed)."""
    assert [default_thin(n) for n in (5, 180, 300, 600, 2400, 4000, 10**7)] == [40, 40, 24, 12, 3, 2, 2]
    rng = np.random.default_rng(3)
    x = rng.normal(0.0, 1.0, 300)
    counts = np.ones(x.size)
    prior = resolve_priors(None, [x, x], [counts, counts], 6, "gaussian")[0]
    kw = {"n_components": 6, "draws": 50, "tune": 20, "random_seed": 4}
    auto = fit_gibbs(x, counts, prior, **kw)
    assert auto.diagnostics["thin"] == 24 and auto.diagnostics["n_iterations"] == 20 + 50 * 24
    assert auto.posterior.sizes["draw"] == 50
    explicit = fit_gibbs(x, counts, prior, thin=24, **kw)
    np.testing.assert_array_equal(auto.posterior["mu"].values, explicit.posterior["mu"].values)
    unthinned = fit_gibbs(x, counts, prior, thin=1, **kw)
    assert not np.array_equal(auto.posterior["mu"].values, unthinned.posterior["mu"].values)


def test_thinned_default_draws_are_less_autocorrelated_at_the_same_number_kept():
    """What the thinning buys: the map's lowest bulk ESS of the default fit (500 draws a chain, one
    sweep in 12 or 18 for its two classes) is well above that of 500 unthinned draws from the same seed, on the README's
    monotone truth at N = 1000 (median over three seeds, to keep the check off one chain's luck)."""
    import bayescal

    rng = np.random.default_rng(5)
    ess = {"default": [], "unthinned": []}
    for seed in range(3):
        y = (rng.random(1000) < 0.4).astype(int)
        s = np.where(y == 1, rng.beta(5, 2, 1000), rng.beta(2, 5, 1000))
        for name, opts in (("default", None), ("unthinned", {"thin": 1})):
            cal = bayescal.make_calibrator("dpm", random_state=seed, route_options=opts).fit(s, y)
            assert cal.idata_["posterior"].sizes["draw"] == 500
            ess[name].append(cal.diagnostics_["map"]["ess_bulk_min"])
    assert np.median(ess["default"]) > 2 * np.median(ess["unthinned"]), ess


def _marginal(family, x, counts, q, alpha, prior_arrays):
    """The compiled marginal log posterior and its gradient at ``q`` (working arrays allocated here)."""
    from bayescal.bayesian import _gibbs_kernels as kern

    K = (q.size + 1) // 3
    n = x.size
    if family == "gaussian":
        xa, xb, code = x, np.zeros(n), kern.GAUSSIAN
    else:
        xa, xb, code = -np.logaddexp(0.0, -x), -np.logaddexp(0.0, x), kern.BETA
    grad, R = np.empty(q.size), np.empty(K)
    work = (np.empty((K, n)), np.empty(n), np.empty(n), np.empty(K * n, dtype=np.int64))
    value = kern.marginal_logpost(code, xa, xb, counts, q, alpha, *prior_arrays, -np.inf, grad, *work, R)
    return value, grad, R


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_marginal_log_posterior_of_the_hamiltonian_moves_and_its_gradient(family):
    """The target of the Hamiltonian moves is the mixture's weighted log-likelihood plus the
    sticks' Beta(1, alpha) prior on the logit scale (with its Jacobian) plus the components'
    priors: checked against mixture.log_density at two states (the difference, as the value
    drops constants), and its gradient against central differences."""
    from scipy.special import expit
    from scipy.stats import beta as beta_dist
    from scipy.stats import norm

    rng = np.random.default_rng(4)
    K, n = 5, 40
    x = rng.normal(0.0, 1.5, n)
    counts = rng.integers(1, 5, n).astype(float)
    m, loc1, loc2 = rng.normal(0, 1, K), rng.normal(0, 0.3, K), rng.normal(0, 0.3, K)
    s2, ell, tau, alpha = 2.0, -0.2, 0.8, 1.3
    arrays = (m, s2, ell, tau, loc1, loc2)

    def reference(q):
        v = expit(q[: K - 1])
        w = np.append(v, 1.0) * np.concatenate([[1.0], np.cumprod(1.0 - v)])
        t1, t2 = q[K - 1 : 2 * K - 1], q[2 * K - 1 :]
        if family == "gaussian":
            p1, p2 = t1, np.exp(t2)
            prior = norm.logpdf(t1, m, np.sqrt(s2)).sum() + norm.logpdf(t2, ell, tau).sum()
        else:
            p1, p2 = np.exp(t1), np.exp(t2)
            prior = norm.logpdf(t1, loc1, tau).sum() + norm.logpdf(t2, loc2, tau).sum()
        loglik = counts @ mixture.log_density(x, w, p1, p2, family)
        sticks = (beta_dist.logpdf(v, 1.0, alpha) + np.log(v) + np.log1p(-v)).sum()
        return loglik + sticks + prior

    q_a, q_b = rng.normal(0.0, 0.5, 3 * K - 1), rng.normal(0.0, 0.5, 3 * K - 1)
    (va, ga, Ra), (vb, _, _) = (_marginal(family, x, counts, q, alpha, arrays) for q in (q_a, q_b))
    assert va - vb == pytest.approx(reference(q_a) - reference(q_b), abs=1e-8)
    assert Ra.sum() == pytest.approx(counts.sum())  # responsibilities share out every unit
    h = 1e-6
    numeric = np.array(
        [
            (
                _marginal(family, x, counts, q_a + e, alpha, arrays)[0]
                - _marginal(family, x, counts, q_a - e, alpha, arrays)[0]
            )
            / (2 * h)
            for e in np.eye(q_a.size) * h
        ]
    )
    np.testing.assert_allclose(ga, numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("family", ["gaussian", "beta"])
def test_the_scale_floor_keeps_the_hamiltonian_moves_off_the_spikes_of_binned_counts(family):
    """Why compressed data need the floor on the components' spread (``scale_floor``, the
    narrowest bin): at bin centres with large counts the likelihood grows without bound as a
    component narrows onto one bin, and without the floor the Hamiltonian moves find those
    spikes (a Gaussian component of weight > 1 % narrower than a tenth of a bin, in at least half
    of the chains), where the plain sweeps stay with components wider than a bin. With the floor
    no draw of either family has a component narrower than it (sigma, or sqrt(1/a + 1/b), the
    spread of a Beta component's logit)."""
    x, counts, _ = CASES["binned"]
    K = 6
    prior = resolve_priors(None, [x, x], [counts, counts], K, family)[0]
    kw = {"n_components": K, "draws": 200, "tune": 300, "thin": 1, "chains": 4, "family": family, "random_seed": 2}
    width = np.diff(x).min()

    def spreads(post):
        if family == "gaussian":
            return post["sigma"].values
        return np.sqrt(1 / post["beta_a"].values + 1 / post["beta_b"].values)

    if family == "gaussian":
        for steps, spiky in ((0, False), (10, True)):
            post = fit_gibbs(x, counts, prior, hmc_steps=steps, **kw).posterior
            heavy = post["weight"].values > 0.01
            narrowest = [spreads(post)[c][heavy[c]].min() for c in range(4)]
            n_spiky = sum(s < 0.1 * width for s in narrowest)
            assert n_spiky >= 2 if spiky else n_spiky == 0, (steps, narrowest, width)
    for backend, steps in (("numba", 10), ("numba", 0), ("numpy", 0)):
        fit = fit_gibbs(x, counts, prior | {"scale_floor": width}, hmc_steps=steps, backend=backend, **kw)
        assert spreads(fit.posterior).min() >= width * (1 - 1e-12), (backend, steps)
        if steps:
            assert fit.diagnostics["hmc_acceptance"] > 0.3


def test_hamiltonian_moves_run_by_default_on_large_classes_only():
    """hmc_steps="auto": a class of more than HMC_AUTO_UNITS units gets the moves (their
    acceptance is reported, and the draws are those of hmc_steps=HMC_AUTO_STEPS); a smaller one
    runs the plain sweeps, as does the numpy backend."""
    from bayescal.bayesian.gibbs import HMC_AUTO_STEPS, HMC_AUTO_UNITS

    x, counts, _ = CASES["binned"]
    kw = {"n_components": 5, "draws": 20, "tune": 20, "thin": 1, "random_seed": 3}
    for scale, moves in ((1.0, False), (2 * HMC_AUTO_UNITS / counts.sum(), True)):
        c = np.round(counts * scale)
        assert (c.sum() > HMC_AUTO_UNITS) == moves
        prior = resolve_priors(None, [x, x], [c, c], 5)[0] | {"scale_floor": np.diff(x).min()}
        auto = fit_gibbs(x, c, prior, **kw)
        explicit = fit_gibbs(x, c, prior, hmc_steps=HMC_AUTO_STEPS if moves else 0, **kw)
        assert ("hmc_acceptance" in auto.diagnostics) == moves
        np.testing.assert_array_equal(auto.posterior["mu"].values, explicit.posterior["mu"].values)
        assert "hmc_acceptance" not in fit_gibbs(x, c, prior, backend="numpy", **kw).diagnostics


@pytest.mark.parametrize(
    ("n", "p"),
    [(1000, 0.3), (10**7, 0.4), (10**5, 0.7), (37, 0.9), (25, 0.45), (5000, 0.002), (1000, 0.005), (12, 0.95)],
)
def test_binomial_draws_of_the_sweeps_follow_the_binomial_distribution(n, p):
    """The sweeps' binomial sampler (BTRS where n min(p, 1 - p) >= 10, numpy's below; both
    cases, and p on both sides of 1/2): 100,000 draws against the Binomial(n, p) pmf by a
    chi-square test over the cells with at least 5 expected draws, and their mean and variance."""
    import numba
    from scipy import stats

    from bayescal.bayesian._gibbs_kernels import binomial

    @numba.njit
    def draws(gen, n, p, size):
        out = np.empty(size, np.int64)
        for i in range(size):
            out[i] = binomial(gen, n, p)
        return out

    size = 100_000
    x = draws(np.random.default_rng(7), n, p, size)
    assert x.min() >= 0 and x.max() <= n
    lo, hi = (int(v) for v in stats.binom.ppf([1e-5, 1 - 1e-5], n, p))
    ks = np.arange(lo, hi + 1)
    inside = np.bincount(x[(x >= lo) & (x <= hi)] - lo, minlength=ks.size)
    observed = np.concatenate([[np.sum(x < lo)], inside, [np.sum(x > hi)]])
    probs = np.concatenate([[stats.binom.cdf(lo - 1, n, p)], stats.binom.pmf(ks, n, p), [stats.binom.sf(hi, n, p)]])
    expected = probs * size
    cells = expected >= 5
    chi2 = float(np.sum((observed[cells] - expected[cells]) ** 2 / expected[cells]))
    assert stats.chi2.sf(chi2, cells.sum() - 1) > 1e-3
    var = n * p * (1 - p)
    assert abs(x.mean() - n * p) < 4 * np.sqrt(var / size)
    assert abs(x.var() / var - 1) < 0.03


def test_counts_give_the_posterior_of_the_repeated_points():
    """Counts of 3 to 32 units (allocated with the most likely component first) and larger ones
    (conditional binomials) sample the posterior that the same points repeated one by one give:
    two bimodal classes' posterior mean densities and occupied components agree within the
    chains' Monte Carlo error."""
    rng = np.random.default_rng(4)
    x = np.sort(np.concatenate([rng.normal(-1.5, 0.6, 30), rng.normal(1.0, 0.9, 30)]))
    counts = np.concatenate([rng.integers(3, 33, 50), rng.integers(33, 120, 10)]).astype(float)
    rng.shuffle(counts)
    raw = np.repeat(x, counts.astype(int))
    prior = resolve_priors(None, [x, x], [counts, counts], 8)[0]
    kw = {"n_components": 8, "draws": 400, "tune": 300, "thin": 5, "chains": 4, "random_seed": 11}
    grid = np.linspace(-3, 3, 13)
    means, occupied = [], []
    for points, weights in ((x, counts), (raw, np.ones(raw.size))):
        fit = fit_gibbs(points, weights, prior, **kw)
        post = fit.posterior
        dens = np.exp(mixture.log_density(grid, post["weight"].values, post["mu"].values, post["sigma"].values))
        means.append(dens.reshape(-1, grid.size))
        occupied.append(fit.sample_stats["n_occupied"].values.ravel())
    diff = means[0].mean(axis=0) - means[1].mean(axis=0)
    se = np.sqrt(
        sum(
            m.var(axis=0) / array_stats.ess(m.reshape(4, -1, grid.size), chain_axis=0, draw_axis=1, method="mean")
            for m in means
        )
    )
    assert np.all(np.abs(diff) < 4 * se + 1e-3), (diff, se)
    assert abs(occupied[0].mean() - occupied[1].mean()) < 0.5, [o.mean() for o in occupied]


def test_the_sweeps_log_beta_function_holds_its_precision_for_large_shapes():
    """Beta components of scores within 1e-10 of 1 reach shapes of 1e10-1e12, where
    lgamma(a) + lgamma(b) - lgamma(a + b) loses 1e-16 a log a (0.05 at 1e13, 5 at 1e15), and the
    Metropolis step multiplies that by the component's count. Checked against scipy's betaln and,
    for one tiny shape, against the asymptotic log B(a, b) = lgamma(a) - a log b + a (1 - a) / (2 b)."""
    import math

    import numba
    from scipy.special import betaln

    from bayescal.bayesian._gibbs_kernels import lbeta

    compiled = numba.njit(lambda a, b: lbeta(a, b))
    shapes = [1e-3, 0.5, 1.0, 3.0, 19.9, 20.0, 21.0, 50.0, 400.0, 1e4, 1e6, 1e10, 1e11, 1e13, 1e15]
    for a in shapes:
        for b in shapes:
            want = betaln(a, b)
            assert abs(compiled(a, b) - want) <= 1e-8 * max(1.0, abs(want)), (a, b)
            assert compiled(a, b) == compiled(b, a)
    for a in (1e-3, 0.5, 3.0):
        for b in (1e10, 1e13, 1e15):
            assert abs(compiled(a, b) - (math.lgamma(a) - a * math.log(b) + a * (1 - a) / (2 * b))) < 1e-12


def test_a_draw_with_all_its_mass_on_the_atoms_still_gives_a_map_off_them():
    """Atom masses that sum to 1 in float (a continuous share below 1e-16) in both classes once
    gave log(0) - log(0) = NaN at every continuous score; the share counts as 1e-16 instead."""
    weight = np.array([[[0.5, 0.5], [0.5, 0.5]]])  # (draws, class, K)
    mu = np.array([[[-1.0, 1.0], [0.0, 2.0]]])
    sigma = np.ones_like(mu)
    atom_prob = np.array([[[1.0], [1.0]]])  # (draws, class, atoms)
    p = mixture.map_draws(np.array([-1.0, 0.5, 3.0]), np.array([5.0]), np.array([0.4]), weight, mu, sigma, atom_prob)
    assert np.all(np.isfinite(p)) and np.all((p > 0) & (p < 1))
