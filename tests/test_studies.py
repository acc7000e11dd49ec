"""The research studies in ``benchmarks/`` still run against the coverage study's truths.

They are not part of the evidence pages, so nothing else would notice when a change to
``dpm_coverage.simulate`` or to the calibrator's options leaves them broken.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from _paths import benchmark_module
from scipy.stats import norm


@pytest.mark.parametrize("candidate", ["logit", "asinh", "beta", "select"])
def test_each_candidate_fits_a_replicate_and_follows_the_true_map(candidate):
    study = benchmark_module("candidate_study")
    row = study.one_replicate("monotone", 300, 0, candidate, c=2.0)
    assert all(0.0 <= row[q] <= 1.0 for q in (0.5, 0.8, 0.95))
    assert row[0.5] <= row[0.8] <= row[0.95]  # nested bands
    assert row["mae"] < 0.06, row  # every candidate follows the smooth truth (the KDE's MAE is about 0.025)


def test_the_compressed_scale_is_increasing_and_linear_near_zero():
    study = benchmark_module("candidate_study")
    to_u = study._compressed("probability", 2.0)
    s = np.linspace(1e-6, 1 - 1e-6, 101)
    assert np.all(np.diff(to_u(s)) > 0)
    assert to_u(np.array([0.5]))[0] == 0.0
    assert abs(to_u(np.array([0.51]))[0] - np.log(0.51 / 0.49)) < 1e-4


def test_the_shared_atoms_study_runs_on_every_truth_kind(capsys):
    study = benchmark_module("shared_atoms_study")
    study.coverage("heavy", 200, 1)  # decision values
    out = capsys.readouterr().out
    assert "heavy N=200 1 seeds: coverage" in out


def test_the_family_criterion_study_scores_both_families_on_one_replicate():
    study = benchmark_module("family_criterion_study")
    row = study.truth_replicate("piles", 300, 201)
    assert np.isfinite([row["label_diff"], row["joint_diff"]]).all() and row["label_se"] > 0 < row["joint_se"]
    # on scores piled near 0 and 1 the Beta family's band covers where the Gaussian one does not
    assert row["cov_beta"] > row["cov_gaussian"] + 0.2, row
    assert all(rule(row) in study.FAMILIES for rule in study.RULES.values())
    table = study.truth_table([row])
    assert "| piles | 300 | 1 |" in table


@pytest.mark.slow  # two NUTS fits, compiled in PyMC: about 50 s
@pytest.mark.filterwarnings("ignore")
def test_the_binned_likelihood_study_fits_both_ways_on_one_replicate():
    """On compressed scores (above compress_above) the study fits the default and the binned
    model with NUTS (tiny settings) on the same data; both maps follow the smooth truth."""
    study = benchmark_module("binned_likelihood_study")
    default, binned = study.run_one("monotone", 3000, 0, chains=2, tune=40, draws=30)
    assert default["fit"].startswith("default") and binned["fit"].startswith("binned likelihood")
    for row in (default, binned):
        assert 0.0 <= row["cov50"] <= row["cov95"] <= 1.0 and row["width"] > 0
        assert row["mae"] < 0.05, row
        assert np.isfinite([row["rhat_max"], row["ess_bulk_min"], row["time_s"]]).all()


def _start_rows_file(study, rows, tmp_path):
    """The start study's ``rows`` written as its CSV file, as the study writes them."""
    path = tmp_path / "start.csv"
    with open(path, "w", newline="") as fh:
        writer = study.csv.DictWriter(fh, fieldnames=study.OUT_FIELDS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def test_the_start_study_compares_the_starts_on_one_replicate(tmp_path):
    """From one component the chains of a compressed fit hold fewer components than from the
    KDE-informed start (every component occupied at first; with the concentration held near 1 the
    sweeps empty many of them, with a learnt one they kept nearly all), both maps follow the smooth
    truth, and the summary has a row per configuration."""
    study = benchmark_module("start_study")
    rows = [study.one_row(config, "monotone", 3000, 0) for config in ("prior", "single")]
    assert rows[1]["occupied"] < rows[0]["occupied"] - 1, rows
    for row in rows:
        assert 0.0 <= row["cov50"] <= row["cov95"] <= 1.0 and row["mae"] < 0.03, row
    path = _start_rows_file(study, rows, tmp_path)
    table = study.summarise(path)
    assert "| monotone | 3000 | prior | 1 |" in table and "| monotone | 3000 | single | 1 |" in table


def test_the_start_study_sets_configurations_side_by_side_on_the_same_seeds(tmp_path):
    """The paired table sets the shared KDE-informed start and the dispersed starts (each chain from
    its own prior draw) side by side on the seeds fitted in both, and counts where R-hat exceeds the former's."""
    study = benchmark_module("start_study")
    rows = [study.one_row(config, "monotone", 300, seed) for config in ("prior", "dispersed") for seed in (0, 1)]
    path = _start_rows_file(study, rows, tmp_path)
    table = study.paired_summary(path)
    assert "| monotone | 300 | prior | 2 |" in table and "| monotone | 300 | dispersed | 2 |" in table
    above = sum(r2["rhat_max"] > r1["rhat_max"] for r1, r2 in zip(rows[:2], rows[2:], strict=True))
    assert f"| {above} of 2 |" in table


def test_a_studys_file_from_before_a_column_is_rewritten_before_rows_are_appended(tmp_path):
    """A results file written before a column was added keeps its rows under the current columns
    (the new one empty), so that rows appended after them line up with the header (the start
    study's file, appended through the candidate studies' shared writer)."""
    import csv

    study, files = benchmark_module("start_study"), benchmark_module("_study_files")
    old_fields = [f for f in study.OUT_FIELDS if f != "family"]
    path = tmp_path / "start.csv"
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=old_fields)
        writer.writeheader()
        writer.writerow({f: f"{f}-value" for f in old_fields})
    with files.appending(path, study.OUT_FIELDS):
        pass
    with open(path) as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert reader.fieldnames == study.OUT_FIELDS
    assert rows == [{f: ("" if f == "family" else f"{f}-value") for f in study.OUT_FIELDS}]
    before = path.read_text()
    with files.appending(path, study.OUT_FIELDS):  # already current: left as it is
        pass
    assert path.read_text() == before


def test_the_repulsive_prior_vanishes_for_equal_components_and_fades_with_their_distance():
    """h(d) = d^2 / (g + d^2) per pair: log h is -inf for two equal components, near 0 for far ones."""
    study = benchmark_module("repulsion_study")
    comps = object.__new__(study.RepulsiveBeta)
    comps.tau, comps.g = 1.0, 1.0
    comps.la = np.array([[0.0, 0.0, 30.0]])
    comps.lb = np.array([[1.0, 1.0, 30.0]])
    assert study.RepulsiveBeta.log_repulsion(comps, comps.la[:, 0], comps.lb[:, 0], 0)[0] == -np.inf
    far = study.RepulsiveBeta.log_repulsion(comps, comps.la[:, 2], comps.lb[:, 2], 2)[0]
    assert -1e-2 < far < 0.0
    d2 = 2.0**2 + 1.0**2  # component 0 moved to (2, 2): squared distances 5 to component 1
    moved = study.RepulsiveBeta.log_repulsion(comps, np.array([2.0]), np.array([2.0]), 0)[0]
    far_pair = np.log((28.0**2 + 28.0**2) / (1.0 + 28.0**2 + 28.0**2))
    assert moved == pytest.approx(np.log(d2 / (1.0 + d2)) + far_pair)


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
def test_the_repulsion_study_fits_a_replicate_and_restores_the_samplers_components():
    """A fit with repelling components follows the smooth truth with nested bands, and the
    sampler's Beta components are the calibrator's own again afterwards."""
    from bayescal.bayesian import gibbs

    study = benchmark_module("repulsion_study")
    row = study.one_row("k2_repulsive", "monotone", 300, 0, 10.0)
    assert 0.0 <= row["cov50"] <= row["cov80"] <= row["cov95"] <= 1.0 and row["mae"] < 0.05, row
    assert row["route"] == "k2_repulsive (g = 10)" and row["occupied"] > 0
    assert gibbs._FAMILIES["beta"] is gibbs._Beta


def test_the_band_dispersion_study_measures_both_densities_and_their_ratio():
    """One small replicate per seed: posterior means, spreads and coverage at the nine score
    quantiles for each class density and the map's log-odds, summarised in three table rows."""
    study = benchmark_module("band_dispersion_study")
    rows = [study.replicate("monotone", 400, seed, {"draws": 60, "tune": 60}) for seed in (0, 1)]
    for row in rows:
        for name in ("f0", "f1", "ratio"):
            assert row[f"{name}_err"].shape == row[f"{name}_sd"].shape == (9,)
            assert np.all(row[f"{name}_sd"] > 0) and np.all(np.isfinite(row[f"{name}_err"]))
            assert 0.0 <= row[f"{name}_cov50"] <= row[f"{name}_cov95"] <= 1.0
    table = study.summarise("monotone", 400, rows).splitlines()
    assert len(table) == 3 and all(line.startswith("| monotone | 400 | 2 |") for line in table)


def test_the_select_pilot_study_pairs_the_default_with_the_short_pilots_choice(tmp_path):
    """On scores piled near 0 and 1 the short pilot keeps Beta components, as the default does,
    and the two rules then give the very same map; the short rule's time counts the pilot; the
    summary has the cell's row."""
    study = benchmark_module("select_pilot_study")
    default, short = study.replicate_rows("piles", 300, 0)
    assert default["family"] == short["family"] == "beta"
    assert (short["cov95"], short["mae"]) == (default["cov95"], default["mae"])
    assert short["time_s"] > short["pilot_s"] > 0.0
    path = tmp_path / "pilot.csv"
    with open(path, "w", newline="") as fh:
        writer = study.csv.DictWriter(fh, fieldnames=study.OUT_FIELDS)
        writer.writeheader()
        writer.writerows([default, short])
    assert "| piles | 300 | 1 | 1.00 | 1.00 / 1.00 |" in study.summarise(path)


def test_the_convergence_remedy_study_refits_a_fit_that_misses_the_target(monkeypatch, capsys):
    """A default fit of 10^3 scores misses R-hat <= 1.01 and ESS >= 400; the study refits it with
    the remedy given (here a tiny one, for speed) and reports both fits and the cell's summary."""
    study = benchmark_module("convergence_remedy")
    argv = ["convergence_remedy.py", "--truths", "monotone", "--n", "1000", "--seeds", "1"]
    argv += ["--remedy-options", '{"thin": 2}', "--remedy-params", '{"draws": 60, "tune": 60}']
    monkeypatch.setattr(study.sys, "argv", argv)
    study.main()
    out = capsys.readouterr().out
    assert "| monotone | 1000 | 0 | " in out and '| {"thin": 2} {"draws": 60, "tune": 60} | ' in out
    assert "| monotone | 1000 | 0 / 1 | " in out and "(1 run)" in out


@pytest.mark.parametrize("knots", ["equal", "quantile"])
def test_the_logspline_study_draws_nested_bands_that_follow_the_smooth_truth(knots):
    """The P-spline candidate's independent draws give nested bands around a mean map that follows
    the smooth monotone truth (the KDE calibrator's MAE is about 0.016 at 10^3); the summary pairs
    the cell with the DPM's row of the coverage study on the same seed when that row exists."""
    study = benchmark_module("logspline_study")
    row = study.replicate("monotone", 1000, 0, 40, 400, knots) | {"seed": 0}
    assert row["cov50"] <= row["cov80"] <= row["cov95"] <= 1.0 and row["cov95"] > 0.5, row
    assert row["mae"] < 0.04, row
    dpm = {("monotone", 1000, 0): {"cov95": "0.9", "mae": "0.01", "others": '{"kde": 0.02}'}}
    line = study.summarise("monotone", 1000, [row], dpm)
    assert line.startswith("| monotone | 1000 | 1 | ") and "| 0.900 | 0.0100 | 0.0200 | 1 |" in line


@pytest.mark.parametrize("penalty", ["rw2", "curvature"])
def test_the_logspline_candidates_density_integrates_the_bins_it_was_fitted_to(penalty):
    """On counts drawn from a known density the posterior-mean bin probabilities match it (the
    Laplace draws are centred where the likelihood is), under either smoothness penalty."""
    study = benchmark_module("logspline_study")
    rng = np.random.default_rng(0)
    edges = np.linspace(-4.0, 4.0, 201)
    centres = 0.5 * (edges[1:] + edges[:-1])
    counts = np.histogram(rng.normal(size=20_000), edges)[0].astype(float)
    inner = study.inner_knots(centres, -4.0, 4.0, 30, "equal")
    design = study.bspline_design(centres, inner)
    beta = study.class_draws(counts, design, rng, 400, study.penalty_matrix(inner, penalty))
    g = beta @ design.T
    p = np.exp(g - g.max(axis=1, keepdims=True))
    p = (p / p.sum(axis=1, keepdims=True)).mean(axis=0)
    mass = np.diff(norm.cdf(edges))
    truth = mass / mass.sum()
    assert np.abs(p - truth).max() < 0.002


def test_the_student_t_mixtures_log_density_is_the_weighted_sum_of_student_t_densities():
    """The study's kernel, which replaces the Gaussian one while a Student-t fit is scored, is
    log sum_k w_k t_nu(t | mu_k, sigma_k) for each mixture of the leading axes."""
    from scipy.stats import t as student_t

    study = benchmark_module("student_t_study")
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(5), size=(3, 2))
    mu, sigma = rng.normal(size=(3, 2, 5)), rng.uniform(0.2, 2.0, size=(3, 2, 5))
    pts = np.linspace(-30.0, 30.0, 41)
    got = study.t_log_density(pts, w, mu, sigma, 4.0)
    want = np.log((w[..., None] * student_t.pdf(pts, 4.0, mu[..., None], sigma[..., None])).sum(axis=-2))
    assert got.shape == (3, 2, 41)
    np.testing.assert_allclose(got, want, rtol=1e-10)


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
def test_the_student_t_sampler_with_many_degrees_of_freedom_samples_the_gaussian_model():
    """With nu = 10^6 a Student-t component is a Gaussian one, so the study's sampler must give the
    package's Gaussian sampler's posterior: the two posterior-mean densities of one class agree
    within Monte Carlo error, and both follow the true density. With nu = 4 the same data give a
    density that still follows it (the two models differ only in their tails)."""
    from bayescal.bayesian.gibbs import fit_gibbs
    from bayescal.bayesian.mixture import log_density
    from bayescal.bayesian.priors import resolve_priors

    study = benchmark_module("student_t_study")
    x = np.random.default_rng(2).normal(size=300)
    counts = np.ones_like(x)
    prior = resolve_priors(None, [x, x], [counts, counts], 20)[0]
    pts = np.linspace(-2.0, 2.0, 9)
    truth = norm.pdf(pts)

    def mean_density(fit, kernel):
        post = fit.posterior
        flat = [post[v].values.reshape(-1, post.sizes["component"]) for v in ("weight", "mu", "sigma")]
        return np.exp(kernel(pts, *flat)).mean(axis=0)

    gauss = mean_density(fit_gibbs(x, counts, prior, n_components=20, random_seed=0, draws=300), log_density)
    big_nu = study.fit_student_t(x, counts, prior, n_components=20, random_seed=0, draws=300, nu=1e6)
    t_big = mean_density(big_nu, lambda t, w, m, s: study.t_log_density(t, w, m, s, 1e6))
    assert big_nu.posterior["weight"].shape == (2, 300, 20)
    np.testing.assert_allclose(big_nu.posterior["weight"].sum("component"), 1.0, rtol=1e-9)
    assert np.abs(t_big - gauss).max() < 0.02, (t_big, gauss)
    assert np.abs(t_big - truth).max() < 0.06 and np.abs(gauss - truth).max() < 0.06
    nu4 = study.fit_student_t(x, counts, prior, n_components=20, random_seed=0, draws=300, nu=4.0)
    t4 = mean_density(nu4, lambda t, w, m, s: study.t_log_density(t, w, m, s, 4.0))
    assert np.abs(t4 - truth).max() < 0.06, t4


def test_the_skew_normal_mixtures_log_density_is_the_weighted_sum_of_skew_normal_densities():
    """The study's kernel, which replaces the Gaussian one while a skew-normal fit is scored, is
    log sum_k w_k SN(t | xi_k, omega_k, lambda_k) with each component's mean and standard
    deviation those the sampler draws (mu_k, sigma_k); at delta = 0 it is the Gaussian mixture."""
    from scipy.stats import skewnorm

    from bayescal.bayesian.mixture import log_density

    study = benchmark_module("skew_normal_study")
    rng = np.random.default_rng(3)
    w = rng.dirichlet(np.ones(4), size=(3, 2))
    mean, sd = rng.normal(size=(3, 2, 4)), rng.uniform(0.2, 2.0, size=(3, 2, 4))
    eta = rng.uniform(-4.0, 4.0, size=(3, 2, 4))
    pts = np.linspace(-25.0, 25.0, 51)
    got = study.sn_log_density(pts, w, mean + 1j * eta, sd)
    d = np.tanh(eta)
    lam = d / np.sqrt(1 - d**2)
    b = np.sqrt(2 / np.pi)
    omega = sd / np.sqrt(1 - (b * d) ** 2)
    xi = mean - omega * b * d
    comp = skewnorm.pdf(pts, lam[..., None], xi[..., None], omega[..., None])
    want = np.log((w[..., None] * comp).sum(axis=-2))
    assert got.shape == (3, 2, 51)
    finite = np.isfinite(want)
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-8)
    m_sn, v_sn = skewnorm.stats(lam, xi, omega, moments="mv")
    np.testing.assert_allclose(m_sn, mean, atol=1e-10)
    np.testing.assert_allclose(np.sqrt(v_sn), sd, rtol=1e-10)
    np.testing.assert_allclose(study.sn_log_density(pts, w, mean + 0j, sd), log_density(pts, w, mean, sd), rtol=1e-10)


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
def test_the_skew_normal_sampler_draws_one_components_posterior():
    """With one component the study's sampler draws the posterior of (mean, log sd, eta) of a
    skew-normal given the data; its posterior means and standard deviations of the three match
    those computed on a grid (within a few Monte Carlo standard errors, ESS taken as a quarter of
    the draws)."""
    study = benchmark_module("skew_normal_study")
    rng = np.random.default_rng(4)
    from scipy.stats import skewnorm

    x = skewnorm.rvs(6.0, size=40, random_state=rng)
    prior = {
        "mu_loc": np.array([0.5]), "mu_scale": 2.0, "sigma_logmean": 0.0, "sigma_logsd": 1.0,
        "scale_floor": 0.0, "alpha_shape": 1.0, "alpha_rate": 1.0,
        "init_mu": np.array([x.mean()]), "init_sigma": np.array([x.std()]), "init_weight": np.array([1.0]),
    }  # fmt: skip
    fit = study.fit_skew_normal(x, np.ones_like(x), prior, n_components=1, random_seed=0, draws=2000, n_mh=3)
    post = fit.posterior
    draws = {
        "mean": post["mu"].values.real.ravel(),
        "log_sd": np.log(post["sigma"].values.ravel()),
        "eta": post["mu"].values.imag.ravel(),
    }
    g_mu, g_u, g_eta = np.linspace(-0.5, 1.6, 71), np.linspace(-1.6, 0.4, 71), np.linspace(-5.0, 5.0, 161)
    M, U, E = np.meshgrid(g_mu, g_u, g_eta, indexing="ij")
    w1 = np.ones((1, 1))
    logp = -0.5 * ((M - 0.5) / 2.0) ** 2 - 0.5 * U**2 + np.log(1 - np.tanh(E) ** 2)
    flat_mu = (M + 1j * E).reshape(-1, 1)
    ll = study.sn_log_density(x, np.ones((flat_mu.shape[0], 1)) * w1, flat_mu, np.exp(U).reshape(-1, 1))
    logp = logp + ll.sum(axis=1).reshape(M.shape)
    p = np.exp(logp - logp.max())
    p /= p.sum()
    for name, grid_values in (("mean", M), ("log_sd", U), ("eta", E)):
        g_mean = (p * grid_values).sum()
        g_sd = np.sqrt((p * (grid_values - g_mean) ** 2).sum())
        d = draws[name]
        se = d.std() / np.sqrt(d.size / 4)
        assert abs(d.mean() - g_mean) < 4 * se + 0.02 * g_sd, (name, d.mean(), g_mean, se)
        assert abs(d.std() / g_sd - 1) < 0.15, (name, d.std(), g_sd)
    assert 0.2 < fit.diagnostics["mh_acceptance"] < 0.7


def test_the_logistic_expert_step_samples_the_experts_conditional_posterior():
    """The study's expert update (an independence Metropolis step from a Laplace proposal) leaves
    the expert's conditional posterior, a logistic regression with a Gaussian prior, invariant:
    its draws' mean and standard deviation match those of that posterior integrated on a grid."""
    from scipy.special import log_expit

    study = benchmark_module("logistic_experts_study")
    rng = np.random.default_rng(3)
    z = rng.normal(size=40)
    y = (rng.random(40) < 1 / (1 + np.exp(-(0.3 + 1.5 * z)))).astype(float)
    k = np.zeros(40, dtype=int)
    beta0, omega = np.array([0.0, 0.5]), np.array([1.0, 0.8])
    beta = np.zeros((1, 2))
    draws = []
    for _ in range(4000):
        study._update_experts(rng, z, y, k, beta, beta0, omega, 1)
        draws.append(beta[0].copy())
    draws = np.array(draws[200:])
    a, b = np.meshgrid(np.linspace(-3, 3.5, 261), np.linspace(-2, 5, 281), indexing="ij")
    eta = a[..., None] + b[..., None] * z
    logp = (y * log_expit(eta) + (1 - y) * log_expit(-eta)).sum(-1)
    logp += -0.5 * ((a - beta0[0]) / omega[0]) ** 2 - 0.5 * ((b - beta0[1]) / omega[1]) ** 2
    p = np.exp(logp - logp.max())
    p /= p.sum()
    mean = np.array([(p * a).sum(), (p * b).sum()])
    sd = np.sqrt(np.array([(p * a**2).sum(), (p * b**2).sum()]) - mean**2)
    np.testing.assert_allclose(draws.mean(0), mean, atol=0.06)
    np.testing.assert_allclose(draws.std(0), sd, rtol=0.1)


def test_the_logistic_experts_map_follows_a_logistic_truth_with_nested_bands():
    """On scores whose map is logistic on the working scale (one expert suffices) the study's
    posterior-mean map follows the truth over the central scores, and its bands are nested."""
    from scipy.special import expit, logit

    study = benchmark_module("logistic_experts_study")
    rng = np.random.default_rng(4)
    s = rng.beta(2, 2, 400)
    y = (rng.random(400) < expit(2 * logit(s))).astype(float)
    post = study.fit_logistic_experts(logit(s), y, tune=100, draws=100, thin=1, random_seed=0)
    assert post["weight"].shape == (2, 100, 20)
    grid = logit(np.linspace(0.2, 0.8, 13))
    draws = study.map_draws(post, grid)
    assert np.abs(draws.mean(0) - expit(2 * grid)).max() < 0.08
    lo50, hi50 = np.quantile(draws, [0.25, 0.75], axis=0)
    lo95, hi95 = np.quantile(draws, [0.025, 0.975], axis=0)
    assert np.all(lo95 <= lo50) and np.all(hi50 <= hi95)


def test_the_splines_curvature_penalty_is_the_integrated_squared_second_derivative():
    """With unequal (quantile) knots the curvature penalty leaves constants and lines
    unpenalised (rank J - 2) and gives t^2 on [-4, 4] its integral of 2^2, 32."""
    study = benchmark_module("logspline_study")
    inner = study.inner_knots(np.random.default_rng(0).normal(size=1000), -4.0, 4.0, 12, "quantile")
    omega = study.penalty_matrix(inner, "curvature")
    x = np.linspace(-4.0, 4.0, 200)
    design = study.bspline_design(x, inner)

    def penalty_of(f):
        beta = np.linalg.lstsq(design, f(x), rcond=None)[0]
        return beta @ omega @ beta

    assert abs(penalty_of(lambda t: 1.0 + 0.0 * t)) < 1e-9 and abs(penalty_of(lambda t: 2.0 * t - 1.0)) < 1e-9
    assert penalty_of(lambda t: t**2) == pytest.approx(32.0, rel=1e-9)
    assert np.linalg.matrix_rank(omega) == omega.shape[0] - 2


def test_a_studys_rows_and_run_lines_accumulate_until_its_csv_is_started_afresh(tmp_path):
    """The candidate studies append rows to their CSV and stamp each run's command in the .md
    beside it; a run that starts a new CSV drops the run lines of rows that are gone."""
    import csv

    files = benchmark_module("_study_files")
    out = tmp_path / "study.csv"
    for run in ("first", "second"):
        with files.appending(out) as write:
            write({"truth": run, "n": 1, "seed": 0, "cov95": 0.9, "not a column": 1})
        files.stamp_runs(out, "T", "intro", f"cmd {run}", "| table |")
    rows = list(csv.DictReader(out.open()))
    assert [r["truth"] for r in rows] == ["first", "second"] and rows[0]["cov50"] == ""
    md = out.with_suffix(".md").read_text()
    assert md.startswith("# T\n\nintro\n\n- ") and "`cmd first`" in md and "`cmd second`" in md
    assert md.endswith("| table |\n")
    files.stamp_runs(out, "T", "intro", None, "| new table |")  # a rewrite of the table alone
    assert out.with_suffix(".md").read_text().count("`cmd") == 2
    out.unlink()
    with files.appending(out) as write:
        write({"truth": "third"})
    files.stamp_runs(out, "T", "intro", "cmd third", "| t |")
    md = out.with_suffix(".md").read_text()
    assert "`cmd third`" in md and "`cmd first`" not in md


def test_a_studys_table_pairs_its_rows_with_the_default_calibrators_on_the_same_seeds(tmp_path):
    """A candidate study's table averages its rows per cell, adds its own columns, and pairs
    the cell with the default calibrator's rows of the coverage study on the same seeds."""
    import csv

    files = benchmark_module("_study_files")
    out = tmp_path / "study.csv"
    base = {"truth": "monotone", "n": 300, "route": "cand", "cov50": 0.5, "cov80": 0.8, "cov95_data": 1.0}
    base |= {"mae": 0.02, "width": 0.1, "time_s": 1.0, "others": "{}", "extra": 3.0}
    with files.appending(out, files.FIELDS + ["extra"]) as write:
        write(base | {"seed": 0, "cov95": 0.9})
        write(base | {"seed": 1, "cov95": 1.0})
        write(base | {"seed": 10**6, "cov95": 0.95, "n": 1000})  # a seed the coverage study never ran
    table = files.paired_table(out, (("extra", lambda c, sel: f"{c['extra']:.1f} of {len(sel)}"),))
    head, _, first, second = table.splitlines()
    assert head.count("|") == first.count("|") == second.count("|")
    assert first.startswith(
        "| cand | monotone | 300 | 2 | 0.950 (0.050) | 0.800 | 0.500 | 1.000 | 0.0200 | 0.100 | 3.0 of 2 |"
    )
    former = benchmark_module("dpm_coverage").FORMER_DEFAULT  # the default of the time the candidate studies ran
    dpm = {r["seed"]: r for r in csv.DictReader(open(files.RESULTS / "dpm_coverage.csv"))
           if r["route"] == former and r["truth"] == "monotone" and r["n"] == "300" and r["seed"] in ("0", "1")}  # fmt: skip
    expected = (float(dpm["0"]["cov95"]) + float(dpm["1"]["cov95"])) / 2
    assert f"| 1.00 | {expected:.3f} |" in first and first.endswith("| 2 |")
    assert second.endswith("| - | - | - | - | - | - | - | 0 |")


@pytest.mark.parametrize("precision", ["global", "node"])
def test_the_polya_trees_marginal_likelihood_averages_its_likelihood_over_the_prior(precision):
    """The closed-form marginal likelihood of the Pólya-tree study (the product over nodes of
    Beta-function ratios, with the precision averaged once per tree or once per node) equals a
    Monte Carlo average of the likelihood over draws of the node probabilities from the prior."""
    study = benchmark_module("polya_tree_study")
    rng = np.random.default_rng(5)
    t, depth, theta = np.array([-1.2, -0.3, 0.1, 0.2, 1.7]), 2, np.array([0.1, 0.2])
    cdf, logpdf = study.base_cdf_logpdf("normal", theta, t)
    counts = study.level_counts(cdf, depth)
    closed = logpdf.sum() + t.size * depth * np.log(2) + study.tree_log_ml(study.node_log_factors(counts), precision)
    m, C = 400_000, study.PRECISIONS
    leaf = np.minimum((cdf * 4).astype(int), 3)
    c = rng.choice(C, size=(m, 1)) if precision == "global" else rng.choice(C, size=(m, 3))
    y_root = rng.beta(c[:, 0], c[:, 0])  # level 1: alpha = c * 1^2
    c_left, c_right = (c[:, 0], c[:, 0]) if precision == "global" else (c[:, 1], c[:, 2])
    y_kids = np.stack([rng.beta(4 * c_left, 4 * c_left), rng.beta(4 * c_right, 4 * c_right)], 1)
    lik = np.ones(m)
    for leaf_k in leaf:
        half, side = leaf_k >> 1, leaf_k & 1
        p1 = y_root if half == 0 else 1 - y_root
        p2 = y_kids[:, half] if side == 0 else 1 - y_kids[:, half]
        lik *= 4 * p1 * p2
    mc = logpdf.sum() + np.log(lik.mean())
    assert abs(closed - mc) < 0.03, (closed, mc)


def test_the_polya_tree_map_follows_a_smooth_truth():
    """On the monotone truth at N = 10^3 the study's posterior-mean map stays within 0.06 of
    the truth over the data region, and its 95 % band covers most of it."""
    study = benchmark_module("polya_tree_study")
    row = study.run_polya_tree("monotone", 1000, 0, "auto", "global", draws=400)
    assert row["mae"] < 0.02, row
    assert row["cov95"] > 0.8, row
    assert row["is_ess"] >= 1.0


def test_the_change_point_recursion_gives_the_exact_posterior_of_the_partitions():
    """The change-point study's backward recursion gives the marginal likelihood summed over every
    partition of the bins, and its forward draws follow each partition's posterior probability
    (enumerated here over the 16 partitions of five bins)."""
    import itertools

    from scipy.special import logsumexp

    study = benchmark_module("change_point_study")
    rng = np.random.default_rng(6)
    B, q = 5, 0.3
    log_ml = np.full((B + 1, B + 1), -np.inf)
    for i in range(B):
        for j in range(i + 1, B + 1):
            log_ml[i, j] = rng.normal(-2.0 * (j - i), 1.0)
    log_post = {}
    for breaks in itertools.product([0, 1], repeat=B - 1):
        ends = [b + 1 for b in range(B - 1) if breaks[b]] + [B]
        starts = [0] + ends[:-1]
        pieces = tuple(zip(starts, ends, strict=True))
        log_post[pieces] = (
            sum(log_ml[i, j] for i, j in pieces) + sum(breaks) * np.log(q) + (B - 1 - sum(breaks)) * np.log1p(-q)
        )
    Q = study.backward(log_ml, q)
    assert np.isclose(Q[0], logsumexp(list(log_post.values())))
    draws = 40_000
    counts: dict = {}
    for _ in range(draws):
        key = tuple(study.sample_partition(log_ml, Q, q, rng))
        counts[key] = counts.get(key, 0) + 1
    for pieces, lp in log_post.items():
        p = np.exp(lp - Q[0])
        assert abs(counts.get(pieces, 0) / draws - p) < 4 * np.sqrt(p * (1 - p) / draws) + 1e-3, (pieces, p)


def test_the_change_point_map_follows_a_logistic_truth():
    """On the monotone truth at N = 10^3 (a map logistic-linear on the working scale, one piece)
    the study's posterior-mean map is close to the truth and its band covers most of it."""
    study = benchmark_module("change_point_study")
    row = study.run_change_points("monotone", 1000, 0, draws=300)
    assert row["mae"] < 0.02, row
    assert row["cov95"] > 0.8, row
    assert 1.0 <= row["pieces"] < 4.0, row


def test_the_pooled_change_point_band_mixes_the_model_with_the_default_calibrator():
    """``pool=True`` scores an equal mixture of the change-point posterior and the default DPM
    calibrator's, whose mean map follows a smooth truth."""
    study = benchmark_module("change_point_study")
    row = study.run_change_points("monotone", 300, 0, pool=True)
    assert row["route"] == "change points + DPM, pooled"
    assert row["mae"] < 0.04 and row["cov95"] > 0.8, row


def test_a_change_point_pieces_laplace_marginal_likelihood_matches_its_integral():
    """The change-point study's Laplace approximation of a piece's log marginal likelihood (the
    binomial likelihood of its bins times the normal prior of its line, integrated over the line)
    is within 0.05 nats of the integral computed on a grid, for a piece of 100 scores."""
    from scipy.special import log_expit, logsumexp

    study = benchmark_module("change_point_study")
    n = np.full(5, 20.0)
    mean = np.linspace(-1.0, 1.0, 5)
    k = np.array([3.0, 6.0, 9.0, 14.0, 16.0])
    post = study.piece_posteriors(n, k, mean)
    laplace = post["log_ml"][0, 5]
    a0, b0 = study.common_line(n, k, mean)
    centre = mean.mean()
    a, b = np.meshgrid(np.linspace(-4, 4, 801), np.linspace(-4, 6, 1001), indexing="ij")
    eta = a[..., None] + b[..., None] * (mean - centre)
    log_lik = (k * log_expit(eta) + (n - k) * log_expit(-eta)).sum(-1)
    sd = study.PIECE_SD
    log_prior = -0.5 * (((a - a0 - b0 * centre) / sd) ** 2 + ((b - b0) / sd) ** 2) - np.log(2 * np.pi * sd**2)
    integral = logsumexp(log_lik + log_prior) + np.log(0.01 * 0.01)
    assert abs(laplace - integral) < 0.05, (laplace, integral)


def test_the_gp_studys_laplace_marginal_likelihood_matches_its_integral():
    """The GP-map study's Laplace approximation (Rasmussen & Williams, algorithm 3.1) of the log
    marginal likelihood of two bins of 40 scores, the binomial likelihood integrated over the
    latent log-odds' normal prior, is within 0.05 nats of the integral on a grid, and its mode
    is the fixed point f = K grad log p(k | f)."""
    from scipy.special import log_expit, logsumexp
    from scipy.stats import multivariate_normal

    study = benchmark_module("gp_map_study")
    n, k, u = np.array([40.0, 40.0]), np.array([10.0, 31.0]), np.array([-0.5, 0.8])
    K = study.kernel(u, u, 0.7, 1.0) + study.JITTER * np.eye(2)
    fit = study.laplace(n, k, K, np.zeros(2))
    assert np.allclose(fit["f"], K @ fit["grad"], atol=1e-8)
    sd = np.sqrt(np.diag(K))
    f1, f2 = np.meshgrid(np.linspace(-6 * sd[0], 6 * sd[0], 1201), np.linspace(-6 * sd[1], 6 * sd[1], 1201))
    f = np.stack([f1, f2], axis=-1)
    log_lik = (k * log_expit(f) + (n - k) * log_expit(-f)).sum(-1)
    log_prior = multivariate_normal(np.zeros(2), K).logpdf(f)
    cell = (12 * sd[0] / 1200) * (12 * sd[1] / 1200)
    integral = logsumexp(log_lik + log_prior) + np.log(cell)
    assert abs(fit["log_ml"] - integral) < 0.05, (fit["log_ml"], integral)


def test_the_gp_map_follows_a_logistic_truth():
    """On the monotone truth at N = 10^3 (a map logistic-linear on the working scale, which the
    GP's line holds) the study's posterior-mean map is close to the truth and its band covers
    most of it."""
    study = benchmark_module("gp_map_study")
    row = study.run_gp("monotone", 1000, 0, draws=300)
    assert row["mae"] < 0.02, row
    assert row["cov95"] > 0.8, row


def test_a_studys_command_line_names_its_options_and_set_flags_only():
    """The command stamped beside a study's rows reruns it: the replicates' options, each named
    option with its value, and a flag only when it is set."""
    import argparse

    files = benchmark_module("_study_files")
    args = argparse.Namespace(
        truths=["plateau"], n=[300, 1000], seeds=2, first_seed=5, degree=2, pool=True, quiet=False
    )
    assert files.command_line("x.py", args, ("degree", "pool", "quiet")) == (
        "python benchmarks/x.py --truths plateau --n 300 1000 --seeds 2 --first-seed 5 --degree 2 --pool"
    )


def test_the_scaled_band_is_the_calibrators_at_one_and_widens_with_the_factor():
    """The band-scaling study's band at factor 1 is the equal-tailed band the coverage study scores
    (same coverage), its coverage never falls as the factor grows, a true map of 0 is outside it at
    every factor, and the factor needed for 0.95 is read off the mean curve by interpolation."""
    study = benchmark_module("band_scaling_study")
    coverage = benchmark_module("dpm_coverage")
    rng = np.random.default_rng(5)
    centre = np.linspace(-3.0, 3.0, 40)
    draws = 1 / (1 + np.exp(-(centre + rng.normal(scale=0.5, size=(400, 40)))))
    truth = 1 / (1 + np.exp(-(centre + rng.normal(scale=0.6, size=40))))
    truth[0] = 0.0
    curves = {q: study.scaled_coverage(draws, truth, q) for q in (0.5, 0.8, 0.95)}
    one = int(np.argmin(np.abs(study.SCALES - 1.0)))
    scores = coverage.band_scores(draws, draws.mean(0), truth, draws, truth)
    for q, name in ((0.5, "cov50"), (0.8, "cov80"), (0.95, "cov95")):
        assert curves[q][one] == pytest.approx(scores[name])
        assert np.all(np.diff(curves[q]) >= 0)
    assert curves[0.95][-1] <= 39 / 40
    curve = np.interp(np.log(study.SCALES), np.log([0.25, 4.0]), [0.5, 1.0])
    c_star = study.needed_scale(curve)
    assert np.interp(np.log(c_star), np.log(study.SCALES), curve) == pytest.approx(0.95, abs=1e-9)
    assert study.needed_scale(np.full(study.SCALES.size, 0.97)) == 0.0
    assert study.needed_scale(np.full(study.SCALES.size, 0.5)) == np.inf


@pytest.fixture(scope="module")
def hmc_only_study():
    """``benchmarks/hmc_only_study.py``, imported once: its compiled chain is compiled once."""
    return benchmark_module("hmc_only_study")


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
@pytest.mark.parametrize(("dense", "ridge"), [(False, 0), (True, 0), (False, 2)])
def test_the_hamiltonian_only_chains_keep_the_prior_without_data(hmc_only_study, dense, ridge):
    """With every count 0 the target is the prior: sticks Beta(1, alpha) (logits with their
    Jacobian), means N(m_k, s^2), log scales N(ell, tau^2); a chain with either mass samples it,
    and so does one with the weight-share slice updates."""
    study = hmc_only_study
    from bayescal.bayesian import _gibbs_kernels as kern

    K, draws = 3, 4000
    m, s2, ell, tau = np.array([0.0, 1.0, 2.0]), 1.0, 0.0, 0.5
    x = np.linspace(-1.0, 1.0, 5)
    out = np.empty((draws, 3 * K - 1))
    eps, accept, _ = study.hmc_chain(
        kern.GAUSSIAN, x, x, np.zeros(5), np.zeros(3 * K - 1), 1.0, m, s2, ell, tau, np.zeros(K), np.zeros(K),
        -np.inf, 400, draws, 10, dense, np.random.default_rng(3), out, ridge,
    )  # fmt: skip
    assert eps > 0 and 0.4 < accept <= 1.0
    from bayescal.bayesian.convergence import ess_bulk, mcse_mean

    draws_ = np.column_stack([1.0 / (1.0 + np.exp(-out[:, : K - 1])), out[:, K - 1 :]])  # sticks, means, log scales
    mean = np.concatenate([np.full(K - 1, 0.5), m, np.full(K, ell)])  # Beta(1, 1), N(m_k, s^2), N(ell, tau^2)
    sd = np.concatenate([np.full(K - 1, np.sqrt(1 / 12)), np.full(K, np.sqrt(s2)), np.full(K, tau)])
    per_point = draws_.T[:, None, :]  # (points, one chain, draws)
    assert np.all(ess_bulk(per_point) > 200)  # the chain moves: the check below has power
    assert np.all(np.abs(draws_.mean(0) - mean) < 4 * mcse_mean(per_point))
    assert np.allclose(draws_.std(0), sd, rtol=0.15)


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
def test_the_hamiltonian_only_route_returns_one_posterior_layout(hmc_only_study):
    """The study's route gives each chain's draws as the calibrator's posterior: weights that sum
    to one, positive scales, the concentration held at the prior's mean, Beta components too."""
    study = hmc_only_study
    from bayescal.bayesian.priors import DEFAULT_PRIOR

    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 1.0, 200)
    prior = DEFAULT_PRIOR | {
        "mu_loc": np.quantile(x, np.linspace(0.05, 0.95, 4)), "mu_scale": 2.0, "sigma_logmean": np.log(0.4),
        "init_mu": np.quantile(x, np.linspace(0.05, 0.95, 4)), "init_sigma": np.full(4, 0.4),
        "init_weight": np.full(4, 0.25), "a_logloc": np.zeros(4), "b_logloc": np.zeros(4),
        "init_a": np.full(4, 2.0), "init_b": np.full(4, 2.0),
    }  # fmt: skip
    for family, names in (("gaussian", ("mu", "sigma")), ("beta", ("beta_a", "beta_b"))):
        fit = study.fit_hmc(
            x, np.ones(200), prior, n_components=4, random_seed=1, draws=20, tune=60, chains=2, steps=3, family=family
        )
        post = fit.posterior
        assert dict(post.sizes) == {"chain": 2, "draw": 20, "component": 4}
        assert np.allclose(post["weight"].sum("component"), 1.0)
        assert float(post[names[1]].min()) > 0 and np.all(post["alpha"] == 1.0)
        assert fit.diagnostics["gradients"] == 2 * 80 * 4


def test_the_miss_profile_places_the_bands_misses_along_the_data(tmp_path):
    """A replicate's rows split the 200 region points over tenths of the data, count the true map
    below and above the band within them, and the summary gives one line per tenth."""
    study = benchmark_module("miss_profile")
    rows = study.profile_rows("monotone", 300, 0, {"draws": 60, "tune": 60})
    assert sum(r["points"] for r in rows) == 200
    assert [r["tenth"] for r in rows] == sorted({r["tenth"] for r in rows}) and rows[0]["tenth"] <= 1
    for r in rows:
        assert 0 <= r["below"] + r["above"] <= r["points"] and 0.0 <= r["lower"] <= r["upper"] <= 1.0
        for c in (0, 1):  # the class densities' columns: the Beta(2, 5) / Beta(5, 2) fitted closely
            assert 0 <= r[f"f{c}_below"] + r[f"f{c}_above"] <= r["points"]
        assert all(0.3 < r[f"f{c}_ratio"] < 3.0 for c in (0, 1) for r in rows[2:-2])
    path = tmp_path / "miss.csv"
    with study.appending(path, study.FIELDS) as write:
        for r in rows:
            write(r)
    table = study.summarise(path)
    assert "monotone, N = 300, 1 seeds" in table and table.count("\n| ") == len(rows) + 1
    assert "f1 truth below / above its band" in table


def _one_component_prior() -> dict:
    """The calibrator's prior for one Gaussian component, made vague (mean N(0, 10^2), log scale
    N(0, 10^2)), so the posterior of many scores is the large-sample one."""
    from bayescal.bayesian.priors import DEFAULT_PRIOR

    return DEFAULT_PRIOR | {
        "mu_loc": np.array([0.0]), "mu_scale": 10.0, "sigma_logmean": 0.0, "sigma_logsd": 10.0,
        "init_mu": np.array([0.0]), "init_sigma": np.array([1.0]), "init_weight": np.array([1.0]),
    }  # fmt: skip


def _assert_one_component_posterior(posterior, x: np.ndarray, centre: float, spread: float) -> None:
    """The draws of one Gaussian component's mean and log scale given the scores ``x`` have the
    large-sample posterior: centres at the sample mean and log standard deviation, within ``centre``
    of their posterior spreads, and spreads s / sqrt(n) and 1 / sqrt(2 n), within relative ``spread``."""
    mu, log_sigma = posterior["mu"].values.ravel(), np.log(posterior["sigma"].values.ravel())
    n, s = x.size, x.std()
    assert abs(mu.mean() - x.mean()) < centre * s / np.sqrt(n)
    assert abs(log_sigma.mean() - np.log(s)) < centre / np.sqrt(2 * n)
    assert mu.std() == pytest.approx(s / np.sqrt(n), rel=spread)
    assert log_sigma.std() == pytest.approx(1 / np.sqrt(2 * n), rel=spread)


@pytest.mark.slow  # compiles the study's own chain: 6-50 s on a cold numba cache (`make test-all` runs it)
def test_the_laplace_draws_of_one_gaussian_component_have_its_large_sample_posterior():
    """With one component and many scores the Laplace route's draws of the mean and log scale
    have the sample mean and log standard deviation as centre and the asymptotic posterior
    standard deviations s / sqrt(n) and 1 / sqrt(2 n); with spread 0 every draw is the mode."""
    study = benchmark_module("laplace_study")
    rng = np.random.default_rng(3)
    n = 4000
    x = rng.normal(0.3, 0.5, n)
    prior = _one_component_prior()
    fit = study.fit_laplace(x, np.ones(n), prior, n_components=1, random_seed=0, draws=2000, chains=2)
    _assert_one_component_posterior(fit.posterior, x, centre=0.1, spread=0.06)
    at_mode = study.fit_laplace(x, np.ones(n), prior, n_components=1, random_seed=0, draws=5, chains=2, spread=0.0)
    assert np.ptp(at_mode.posterior["mu"].values) == 0.0


def test_the_tempering_ladders_counts_are_nested_thinnings_down_to_the_bottom_units():
    """Each rung's counts are at most the next rung's, bin by bin; the top rung is the class's
    counts and the rungs' totals fall geometrically to about the bottom's units (within binomial noise)."""
    study = benchmark_module("tempering_study")
    rng = np.random.default_rng(0)
    counts = rng.poisson(40.0, 500).astype(float) + np.where(np.arange(500) < 20, 0.25, 0.0)
    rungs = study.ladder_counts(counts, 6, 300.0, np.random.default_rng(1))
    assert len(rungs) == 6 and np.array_equal(rungs[-1], counts)
    assert all(np.all(lower <= upper) for lower, upper in itertools.pairwise(rungs))
    totals = np.array([r.sum() for r in rungs])
    expected = 300.0 * (counts.sum() / 300.0) ** (np.arange(6) / 5)
    assert np.all(np.abs(totals - expected) < 4 * np.sqrt(expected))  # binomial noise
    assert len(study.ladder_counts(counts[:10], 6, 300.0, rng)) == 1  # too few units for a ladder


def test_the_tempering_routes_top_rung_samples_one_components_posterior():
    """With one Gaussian component and 3,000 scores, the kept draws of the top rung have the known
    large-sample posterior (mean at the sample mean with spread s / sqrt(n), log scale at the log
    sample standard deviation with spread 1 / sqrt(2 n)), while states are exchanged along the ladder."""
    study = benchmark_module("tempering_study")
    rng = np.random.default_rng(5)
    n = 3000
    x = rng.normal(0.3, 0.5, n)
    prior = _one_component_prior()
    fit = study.fit_tempering(
        x, np.ones(n), prior, n_components=1, random_seed=0, draws=1500, chains=2, tune=300, levels=4,
        bottom_units=300.0,
    )  # fmt: skip
    post = fit.posterior
    assert dict(post.sizes) == {"chain": 2, "draw": 1500, "component": 1}
    rates = [float(a) for a in fit.diagnostics["swap_acceptance"].split()]
    assert len(rates) == 3 and min(rates) > 0.05
    _assert_one_component_posterior(post, x, centre=0.15, spread=0.12)


def _ecm_objective(x, g, state, m, s2, ell, tau2):
    """The weighted log posterior that ``posterior_bootstrap.weighted_ecm`` climbs (up to a constant)."""
    w, mu, sigma = state
    log_phi = np.log(w)[:, None] - np.log(sigma)[:, None] - 0.5 * ((x[None, :] - mu[:, None]) / sigma[:, None]) ** 2
    top = log_phi.max(axis=0)
    loglik = g @ (top + np.log(np.exp(log_phi - top).sum(axis=0)))
    return loglik - 0.5 * (((mu - m) ** 2 / s2).sum() + ((np.log(sigma) - ell) ** 2 / tau2).sum())


def test_the_bootstrap_ecm_finds_one_components_weighted_mode_and_never_lowers_the_objective():
    """With one component and nearly flat priors the search ends at the weighted mean and standard
    deviation; with three components on a two-bump sample every iteration keeps or raises the
    weighted log posterior, and the weights stay a distribution."""
    study = benchmark_module("posterior_bootstrap")
    rng = np.random.default_rng(0)
    x = rng.normal(1.5, 0.7, 2000)
    g = rng.gamma(1.0, size=x.size)
    flat = (np.zeros(1), np.full(1, 1e8), np.zeros(1), 1e8)
    out = np.empty((3, 1))
    study.weighted_ecm(x, g, np.array([[1.0], [0.0], [3.0]]), *flat, -np.inf, 50, out)
    mean = np.average(x, weights=g)
    assert out[1, 0] == pytest.approx(mean, abs=1e-6)
    assert out[2, 0] == pytest.approx(np.sqrt(np.average((x - mean) ** 2, weights=g)), rel=1e-5)

    x = np.concatenate([rng.normal(-1.0, 0.5, 600), rng.normal(2.0, 1.0, 400)])
    g = rng.gamma(1.0, size=x.size)
    prior = (np.array([-2.0, 0.0, 2.0]), np.full(3, 4.0), np.zeros(3), 1.0)
    state = np.array([[0.3, 0.3, 0.4], [-2.0, 0.0, 2.0], [1.0, 1.0, 1.0]])
    values = [_ecm_objective(x, g, state, *prior)]
    for _ in range(20):
        nxt = np.empty_like(state)
        study.weighted_ecm(x, g, state, *prior, -np.inf, 1, nxt)
        state = nxt
        values.append(_ecm_objective(x, g, state, *prior))
    assert np.all(np.diff(values) >= -1e-9 * np.abs(values[0]))
    assert values[-1] > values[0] + 10.0  # it climbs
    assert state[0].sum() == pytest.approx(1.0) and np.all(state[0] >= 0)
    end = np.empty_like(state)
    study.weighted_ecm(x, g, state, *prior, -np.inf, 2000, end)
    w, mu, sigma = end
    dens = w[:, None] * norm.pdf(x[None, :], mu[:, None], sigma[:, None])
    shares = (dens / dens.sum(axis=0)) @ g / g.sum()
    np.testing.assert_allclose(w, shares, atol=1e-6)  # at the mode each weight is its responsibilities' share


def test_the_bootstrap_ecm_route_returns_independent_draws_in_the_posterior_layout():
    """The route's draws have the layout every route returns and differ from draw to draw (each
    re-weighting moves the mode), within the floor on the scales."""
    study = benchmark_module("posterior_bootstrap")
    rng = np.random.default_rng(1)
    x = np.linspace(-3.0, 3.0, 61)
    counts = np.round(400 * norm.pdf(x)) + 1.0
    K = 4
    prior = {
        "init_weight": np.full(K, 1 / K), "init_mu": np.linspace(-2, 2, K), "init_sigma": np.ones(K),
        "mu_loc": np.linspace(-2, 2, K), "mu_scale": 2.0, "sigma_logmean": 0.0, "sigma_logsd": 1.0,
        "scale_floor": 0.1,
    }  # fmt: skip
    fit = study.fit_bootstrap_ecm(x, counts, prior, n_components=K, random_seed=int(rng.integers(100)), draws=20)
    post = fit.posterior
    assert post["weight"].shape == (2, 20, K) and post["alpha"].shape == (2, 20)
    np.testing.assert_allclose(post["weight"].sum("component"), 1.0)
    assert float(post["sigma"].min()) >= 0.1
    assert float(post["mu"].std(("chain", "draw")).min()) > 0  # every component's location varies


def test_the_ece_posterior_study_compares_with_the_population_error():
    """The population ECE and REL the coverage of calibration_error_posterior is judged against
    are those of a large sample of the truth's scores."""
    from bayescal.datasets import simulate_scores

    study = benchmark_module("ece_posterior_coverage")
    for name in ("beta_skewed", "beta_bimodal", "rare", "confident"):
        exact = study.population(name)
        d = simulate_scores(name, 400_000, random_state=0)
        gap = d.true_map(d.scores) - d.scores
        assert exact["ECE"] == pytest.approx(np.abs(gap).mean(), rel=0.01)
        assert exact["REL"] == pytest.approx((gap**2).mean(), rel=0.01)


@pytest.mark.parametrize("family", ["logit_mixture", "beta_mixture"])
def test_the_random_truths_study_draws_an_exact_truth_and_scores_one_fit(family, tmp_path):
    """Each family's truth is a pair of class densities with an exact map (a large sample's
    positive share in each bin of scores agrees with the map's mean there), and one replicate
    gives nested bands."""
    study = benchmark_module("random_truths_study")
    truth = study.FAMILIES[family](3)
    s, y = truth.simulate(200_000)
    inside = (s > 0.05) & (s < 0.95)
    edges = np.quantile(s[inside], np.linspace(0, 1, 11))
    which = np.digitize(s[inside], edges[1:-1])
    for b in range(10):  # within a bin the positive share estimates the mean of the true map there
        rows = which == b
        share, expected = y[inside][rows].mean(), truth.true_map(s[inside][rows]).mean()
        assert abs(share - expected) < 4 * np.sqrt(expected * (1 - expected) / rows.sum()) + 1e-3
    row = study.run_one(family, 300, 3)
    assert not row.get("error"), row.get("error")
    assert 0.0 <= row["cov50"] <= row["cov80"] <= row["cov95"] <= 1.0
    assert row["mae"] < 0.15 and row["mae_kde"] > 0


def test_the_select_by_study_option_compares_the_families_by_the_labels_and_restores_the_library():
    """``select_by="labels"`` (a study option) makes ``components="select"`` keep the family of
    the larger leave-one-out log score of the labels, recorded beside it; the library compares by
    the points' again after the fit, and an unknown value is refused by name."""
    from bayescal.bayesian import dpm

    coverage = benchmark_module("dpm_coverage")
    rng = np.random.default_rng(2)
    y = (rng.random(300) < 0.4).astype(int)
    s = np.where(y == 1, rng.beta(4, 0.4, y.size), rng.beta(0.4, 4, y.size))
    by_labels = coverage.fit_dpm(s, y, "probability", 1, select_by="labels", draws=200, tune=100)
    selection = by_labels.diagnostics_["family_selection"]
    assert not any(key.startswith("elpd_joint") for key in selection), selection
    elpd = {f: selection[f"elpd_label_{f}"] for f in ("gaussian", "beta")}
    assert selection["chosen"] == max(elpd, key=elpd.get)
    assert selection["elpd_label_diff"] == pytest.approx(abs(elpd["gaussian"] - elpd["beta"]))
    assert dpm.SELECT_SCORE == "points"
    by_points = coverage.fit_dpm(s, y, "probability", 1, draws=200, tune=100).diagnostics_["family_selection"]
    assert "elpd_joint_diff" in by_points and "elpd_label_diff" not in by_points
    with pytest.raises(ValueError, match="select_by='votes' is not one of"):
        coverage.fit_dpm(s, y, "probability", 1, select_by="votes")


def test_a_preregistered_rule_holds_only_where_the_candidate_does_what_it_asks():
    """Checks (1)-(3) of a rule written before a candidate's fits: a candidate that lifts the Beta
    mixtures' coverage by far more than its standard error and leaves the logit mixtures alone
    passes (1)-(3); the same rows with the Beta mixtures' gain removed fail (1), and a 10 % higher
    error fails (3)."""
    study = benchmark_module("random_truths_study")
    option = {"select_by": "labels"}
    label = '{"select_by": "labels"}'
    rng = np.random.default_rng(0)

    def rows(gain: float, error_factor: float) -> list[dict]:
        out = []
        for family in ("logit_mixture", "beta_mixture"):
            for n in ("300", "1000"):
                for seed in range(30):
                    cov = 0.9 + 0.05 * rng.random()
                    lift = gain if family == "beta_mixture" else 0.0
                    common = {"n": n, "seed": str(seed), "error": ""}
                    out.append(common | {"family": family, "options": "", "cov95": str(cov), "mae": "0.02"})
                    out.append(
                        common
                        | {
                            "family": f"{family} {label}",
                            "options": label,
                            "cov95": str(cov + lift + 0.002 * rng.standard_normal()),
                            "mae": str(0.02 * error_factor),
                        }
                    )
        return out

    good = study.preregistered_verdict(rows(0.05, 1.0), option)
    assert [check.holds for check in good] == [True, True, True], good
    no_gain = study.preregistered_verdict(rows(0.0, 1.0), option)
    assert not no_gain[0].holds and no_gain[2].holds, no_gain
    worse = study.preregistered_verdict(rows(0.05, 1.1), option)
    assert not worse[2].holds, worse
