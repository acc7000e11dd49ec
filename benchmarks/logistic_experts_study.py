r"""A Dirichlet-process mixture of logistic experts, as a candidate model for the core issue.

Why. The calibrator models each class's score density by its own Dirichlet-process mixture
and turns the two into a map by Bayes' rule. Its band fails where the map has kinks (the
plateau truth of ``benchmarks/dpm_coverage.py``): each density is smooth, so their ratio rounds
and rings at the kinks, and the posterior is sure of that shape. The item-1 candidates measured
so far change the class densities' kernels or priors. This one changes what the mixture
components carry: each component of one Dirichlet-process mixture of the scores carries its
own logistic map, so the labels decide where the partition of the score axis falls, and a map
that is logistic-linear on the working scale (as it is exactly for two Beta class densities,
and for Platt-calibratable classifiers) is one expert.

**Model** (the DP-GLM of Hannah, Blei & Powell 2011; Shahbaba & Neal 2009 for classification).
On the working scale t, with :math:`z = (t - \bar t)/s_t`,

.. math::
    v_k &\sim \mathrm{Beta}(1, \alpha),\quad \alpha \sim \mathrm{Gamma}(a_\alpha, b_\alpha),
    \quad w_k = v_k \textstyle\prod_{j<k} (1 - v_j) \\
    \mu_k &\sim \mathcal N(m_k, s^2), \quad \sigma_k \sim \mathrm{LogNormal}(\log h, \tau^2) \\
    \beta_k = (a_k, b_k) &\sim \mathcal N(\beta_0, \operatorname{diag}(\omega_a^2, \omega_b^2)),
    \quad \beta_0 \sim \mathcal N(\hat\beta, 2^2 I), \quad \omega_j \sim \mathrm{HalfNormal}(1) \\
    t_i \mid k_i = k &\sim \mathcal N(\mu_k, \sigma_k^2), \quad
    y_i \mid t_i, k_i = k \sim \mathrm{Bernoulli}(\operatorname{expit}(a_k + b_k z_i))

with :math:`K = 20` sticks, the score part's hyperparameters those the calibrator gives one
class (:func:`bayescal.bayesian.priors.resolve_priors`: KDE-informed anchors :math:`m_k`, spread
:math:`s`, bandwidth :math:`h`, :math:`\tau = 1`, concentration prior), here from the pooled
scores, and :math:`\hat\beta` the logistic fit of y on z (Platt scaling on the working scale).
The experts shrink towards one line by an amount :math:`\omega` the data set: one expert is
Platt scaling, many are a local-linear map. The map of a draw is

.. math::
    m(t) = \frac{\sum_k w_k \phi_k(t)\, \operatorname{expit}(a_k + b_k z(t))}{\sum_k w_k \phi_k(t)},

the conditional probability of the joint model, so every draw of the parameters is a map draw,
as in the calibrator.

**Sampler.** Blocked Gibbs (Ishwaran & James 2001): allocations given everything (the score's
density and the label's probability under each component); sticks; the concentration given
the sticks; means conjugate; log-scales by random-walk Metropolis; each expert by an
independence Metropolis step whose proposal is the Laplace approximation of its conditional (a
logistic regression with a Gaussian prior: log-concave, so the proposal is close); empty
components from the prior; :math:`\beta_0` conjugate; :math:`\omega` by random-walk Metropolis
on its log. Two chains, 500 warm-up sweeps, 500 kept draws each one sweep in
:func:`bayescal.bayesian.gibbs.default_thin` (the calibrator's budget), numpy on the rows
(no binning), so the study runs at N <= 10^4.

**Not the calibrator's model.** The class densities here are
:math:`f_c(t) \propto \sum_k w_k \phi_k(t)\, p_k(c \mid t)`: mixtures over shared components whose
class weights vary with t, not independent Dirichlet-process mixtures. Adopting it would change
the model the architecture states, which is the owners' decision; this script measures whether
it would be worth proposing.

**Measured** (2026-11-27, 2-core machine, 4 seeds a cell, seven design truths at N = 300 and
10^3; ``benchmarks/results/logistic_experts_study.md``): rejected. The band is honest in neither
direction. Where the map is not logistic it is too narrow: plateau 0.71 / 0.70 (the default
calibrator 0.89 / 0.93 on the same seeds), piles 0.58 / 0.65 (0.92 / 0.88), heavy-tailed
decision values 0.87 at 300 (0.89); the error on the plateau is higher too (MAE 0.059 / 0.046
against 0.046 / 0.033). Where the map is logistic its error is lower than the calibrator's
(monotone MAE 0.015 / 0.0088 against 0.021 / 0.012), but the band is not honest there either:
on the monotone and overconfident truths it covers 0.999-1.00 (monotone's 80 % bands 0.95 /
0.97), and on the rare truth (also logistic) one fit of four at 10^3 covers 0.14 while the
other three cover 1.00. Fit by fit the coverage swings between about 1 and below 0.6 (standard
errors of the cells up to 0.2): whether the experts collapse onto one line decides the band. The chains mix
no better (lowest bulk ESS 26-141 at 10^3; no fit there meets R-hat <= 1.01 and ESS >= 400).

Run::

    python benchmarks/logistic_experts_study.py --truths plateau monotone --n 300 1000 --seeds 12

It appends one row per (truth, N, seed) to ``--out`` (CSV, the coverage study's columns) and
writes the table of means, paired with the default calibrator's rows of
``benchmarks/results/dpm_coverage.csv`` on the same seeds, to the same name with ``.md``.

References
----------
Hannah, L. A., Blei, D. M. & Powell, W. B. (2011). Dirichlet process mixtures of generalized
linear models. JMLR 12, 1923-1953.
Shahbaba, B. & Neal, R. M. (2009). Nonlinear models using Dirichlet process mixtures. JMLR 10,
1829-1850.
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96, 161-173.
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.special import expit, log_expit, logsumexp

sys.path.insert(0, str(Path(__file__).parent))
from _study_files import CONVERGENCE_COLUMNS, paired_table, replicate, run_study, scored_row, study_parser

ROUTE = "logistic experts"
BETA0_SD = 2.0
"""Prior standard deviation of the experts' common line around the logistic fit (z units)."""
OMEGA_SD = 1.0
"""Scale of the half-normal prior of the experts' spread around their common line (z units)."""
NEWTON_STEPS = 5
"""Newton steps from the common line towards the mode of an expert's conditional, for its proposal
(started from the common line, not from the expert's current value, so that the proposal does not
depend on the current value and the step is an independence sampler)."""


def _logistic_fit(z: np.ndarray, y: np.ndarray, ridge: float = 1e-3) -> np.ndarray:
    """Maximum-likelihood (a, b) of y ~ Bernoulli(expit(a + b z)), with a small ridge for separable data."""
    beta = np.zeros(2)
    X = np.column_stack([np.ones_like(z), z])
    for _ in range(50):
        p = expit(X @ beta)
        g = X.T @ (y - p) - ridge * beta
        H = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
        step = np.linalg.solve(H, g)
        beta += step
        if np.abs(step).max() < 1e-10:
            break
    return beta


def _expert_sums(z, y, k, beta, K):
    """Per component: the log-likelihood of its labels, the gradient and the 2x2 Hessian entries at ``beta`` (K, 2)."""
    eta = beta[k, 0] + beta[k, 1] * z
    p = expit(eta)
    ll = np.bincount(k, y * eta + log_expit(-eta), minlength=K)
    r = y - p
    g = np.stack([np.bincount(k, r, minlength=K), np.bincount(k, r * z, minlength=K)], 1)
    w = p * (1 - p)
    h = np.stack(
        [np.bincount(k, w, minlength=K), np.bincount(k, w * z, minlength=K), np.bincount(k, w * z * z, minlength=K)], 1
    )
    return ll, g, h


def _quad_form(d, prec):
    """d' H d for K 2-vectors ``d`` and 2x2 precisions (K, 3: h11, h12, h22)."""
    return prec[:, 0] * d[:, 0] ** 2 + 2 * prec[:, 1] * d[:, 0] * d[:, 1] + prec[:, 2] * d[:, 1] ** 2


def _update_experts(rng, z, y, k, beta, beta0, omega, K):
    """One independence Metropolis step per expert from the Laplace approximation of its conditional."""
    lam = 1.0 / omega**2
    mode = np.tile(beta0, (K, 1))
    for _ in range(NEWTON_STEPS):
        _, g, h = _expert_sums(z, y, k, mode, K)
        g = g - lam * (mode - beta0)
        H = h + np.array([lam[0], 0.0, lam[1]])
        det = H[:, 0] * H[:, 2] - H[:, 1] ** 2
        step = np.stack(
            [(H[:, 2] * g[:, 0] - H[:, 1] * g[:, 1]) / det, (H[:, 0] * g[:, 1] - H[:, 1] * g[:, 0]) / det], 1
        )
        mode = mode + step
    mode[~np.isfinite(mode).all(1)] = beta0  # a diverged search: propose around the common line
    _, _, h = _expert_sums(z, y, k, mode, K)
    H = h + np.array([lam[0], 0.0, lam[1]])
    # draw from N(mode, H^-1): Cholesky of H^-1 for a 2x2
    det = H[:, 0] * H[:, 2] - H[:, 1] ** 2
    c11, c12, c22 = H[:, 2] / det, -H[:, 1] / det, H[:, 0] / det
    l11 = np.sqrt(c11)
    l21 = c12 / l11
    l22 = np.sqrt(np.maximum(c22 - l21**2, 1e-300))
    e = rng.standard_normal((K, 2))
    prop = mode + np.stack([l11 * e[:, 0], l21 * e[:, 0] + l22 * e[:, 1]], 1)

    def log_target(b):
        ll, _, _ = _expert_sums(z, y, k, b, K)
        return ll - 0.5 * (lam * (b - beta0) ** 2).sum(1)

    # the proposal's log density ratio q(beta) / q(prop): its normalising constants cancel
    log_r = log_target(prop) - log_target(beta) + 0.5 * (_quad_form(prop - mode, H) - _quad_form(beta - mode, H))
    accept = np.log(rng.random(K)) < log_r
    beta[accept] = prop[accept]


def _chain(t, z, y, prior, beta_hat, K, tune, draws, thin, rng):
    """One chain's kept draws of what the map reads: weights, means, scales and experts (K, 2)."""
    n = t.size
    a_alpha, b_alpha = float(prior["alpha_shape"]), float(prior["alpha_rate"])
    m, s2 = np.asarray(prior["mu_loc"], float), float(prior["mu_scale"]) ** 2
    ell, tau = float(prior["sigma_logmean"]), float(prior["sigma_logsd"])
    mu = np.asarray(prior["init_mu"], float).copy()
    sigma = np.asarray(prior["init_sigma"], float).copy()
    w = np.asarray(prior["init_weight"], float).copy()
    w = w / w.sum()
    beta = np.tile(beta_hat, (K, 1))
    beta0 = beta_hat.copy()
    omega = np.array([0.5, 0.5])
    alpha = a_alpha / b_alpha
    step_sigma = np.full(K, 0.3)
    out = {"weight": [], "mu": [], "sigma": [], "beta": []}
    for it in range(tune + draws * thin):
        # 1. allocations
        eta = beta[:, 0][None, :] + z[:, None] * beta[:, 1][None, :]
        logp = (
            np.log(np.maximum(w, 1e-300))[None, :]
            - np.log(sigma)[None, :]
            - 0.5 * ((t[:, None] - mu[None, :]) / sigma[None, :]) ** 2
            + np.where(y[:, None] == 1, log_expit(eta), log_expit(-eta))
        )
        logp -= logsumexp(logp, axis=1, keepdims=True)
        cum = np.cumsum(np.exp(logp), axis=1)
        k = np.minimum((cum < rng.random(n)[:, None] * cum[:, -1:]).sum(1), K - 1)
        nk = np.bincount(k, minlength=K).astype(float)
        # 2. sticks and 3. concentration
        rest = np.concatenate([np.cumsum(nk[::-1])[::-1][1:], [0.0]])
        v = rng.beta(1.0 + nk, alpha + rest)
        v[-1] = 1.0
        v = np.clip(v, 1e-12, 1.0)
        w = v * np.concatenate([[1.0], np.cumprod(1.0 - v[:-1])])
        alpha = rng.gamma(a_alpha + K - 1, 1.0 / (b_alpha - np.log1p(-np.minimum(v[:-1], 1 - 1e-12)).sum()))
        # 4. means, conjugate given the scales
        sums = np.bincount(k, t, minlength=K)
        prec = 1.0 / s2 + nk / sigma**2
        mu = (m / s2 + sums / sigma**2) / prec + rng.standard_normal(K) / np.sqrt(prec)
        # 5. log-scales, random-walk Metropolis (three steps)
        ss = np.bincount(k, (t - mu[k]) ** 2, minlength=K)
        for _ in range(3):
            prop = np.log(sigma) + step_sigma / np.sqrt(1.0 + nk) * rng.standard_normal(K)
            sp = np.exp(prop)

            def lp(s_, ls):
                return -nk * ls - ss / (2 * s_**2) - 0.5 * ((ls - ell) / tau) ** 2

            acc = np.log(rng.random(K)) < lp(sp, prop) - lp(sigma, np.log(sigma))
            sigma = np.where(acc, sp, sigma)
        # 6. experts: occupied by Laplace-proposal Metropolis, empty from the prior
        _update_experts(rng, z, y, k, beta, beta0, omega, K)
        empty = nk == 0
        beta[empty] = beta0 + omega * rng.standard_normal((int(empty.sum()), 2))
        # 7. common line, conjugate; 8. spread, random-walk Metropolis on its log
        prec0 = 1.0 / BETA0_SD**2 + K / omega**2
        beta0 = (beta_hat / BETA0_SD**2 + beta.sum(0) / omega**2) / prec0 + rng.standard_normal(2) / np.sqrt(prec0)
        dev2 = ((beta - beta0) ** 2).sum(0)
        for _ in range(3):
            lo = np.log(omega) + 0.3 * rng.standard_normal(2)
            om = np.exp(lo)

            def lpo(o, lgo):
                return -K * lgo - dev2 / (2 * o**2) - 0.5 * (o / OMEGA_SD) ** 2 + lgo

            acc = np.log(rng.random(2)) < lpo(om, lo) - lpo(omega, np.log(omega))
            omega = np.where(acc, om, omega)
        if it >= tune and (it - tune) % thin == thin - 1:
            for key, val in (("weight", w), ("mu", mu), ("sigma", sigma), ("beta", beta)):
                out[key].append(val.copy())
    return {key: np.array(val) for key, val in out.items()}


def fit_logistic_experts(
    t: np.ndarray, y: np.ndarray, *, K: int = 20, chains: int = 2, tune: int = 500, draws: int = 500,
    thin: int | None = None, random_seed: int = 0,
) -> dict:  # fmt: skip
    """Posterior draws of the model (module docstring) on working-scale scores ``t`` and labels ``y``:
    a dict of arrays with leading axes (chain, draw), and ``centre`` / ``scale`` of z."""
    from bayescal.bayesian.gibbs import default_thin
    from bayescal.bayesian.priors import resolve_priors

    t, y = np.asarray(t, float), np.asarray(y, float)
    ones = np.ones_like(t)
    prior = resolve_priors(None, [t, t], [ones, ones], K)[0]
    centre, scale = float(t.mean()), float(t.std()) or 1.0
    z = (t - centre) / scale
    beta_hat = _logistic_fit(z, y)
    thin = default_thin(t.size) if thin is None else int(thin)
    streams = np.random.SeedSequence(random_seed).spawn(chains)
    runs = [_chain(t, z, y, prior, beta_hat, K, tune, draws, thin, np.random.default_rng(s)) for s in streams]
    post = {key: np.stack([r[key] for r in runs]) for key in runs[0]}
    post["centre"], post["scale"] = centre, scale
    return post


def map_draws(post: dict, grid: np.ndarray) -> np.ndarray:
    """The map at working-scale ``grid`` for every draw, shape (chains * draws, grid)."""
    w = post["weight"].reshape(-1, post["weight"].shape[-1])
    mu, sigma = post["mu"].reshape(w.shape), post["sigma"].reshape(w.shape)
    beta = post["beta"].reshape(*w.shape, 2)
    z = (grid - post["centre"]) / post["scale"]
    logphi = (
        np.log(np.maximum(w, 1e-300))[:, None, :]
        - np.log(sigma)[:, None, :]
        - 0.5 * ((grid[None, :, None] - mu[:, None, :]) / sigma[:, None, :]) ** 2
    )
    r = np.exp(logphi - logsumexp(logphi, axis=2, keepdims=True))
    p = expit(beta[:, None, :, 0] + beta[:, None, :, 1] * z[None, :, None])
    return (r * p).sum(2)


def run_experts(truth: str, n: int, seed: int) -> dict:
    """One replicate scored as ``dpm_coverage.run_one`` scores the calibrator (no other calibrators)."""
    from bayescal.bayesian.convergence import map_convergence
    from bayescal.data import from_working, to_working

    rep = replicate(truth, n, seed)
    t0 = time.perf_counter()
    t = to_working(rep.s, rep.kind)
    post = fit_logistic_experts(t, rep.y, random_seed=seed)
    maps = map_draws(post, to_working(rep.points, rep.kind))
    row = scored_row(rep, ROUTE, maps, time.perf_counter() - t0, others="{}")
    g_t = to_working(rep.grid, rep.kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        conv = map_convergence(
            maps[:, : rep.grid.size], post["weight"].shape[:2], g_t, np.quantile(t, [0.025, 0.975]),
            lambda v: from_working(v, rep.kind),
        )  # fmt: skip
    row |= {k: conv[k] for k in ("rhat_max", "ess_bulk_min", "ess_tail_min")}
    return row


def summarise(path: Path) -> str:
    """The table of the study's rows beside the default calibrator's on the same seeds
    (:func:`_study_files.paired_table`), with the map's worst R-hat, lowest bulk ESS and the fits
    meeting R-hat <= 1.01 and ESS >= 400."""
    return paired_table(path, CONVERGENCE_COLUMNS)


def main() -> None:
    ap = study_parser(__doc__, "logistic_experts_study.py", seeds=12)
    args = ap.parse_args()
    if any(n > 10_000 for n in args.n):
        ap.error("--n above 10000: the sampler runs on the rows, without binning (module docstring)")
    run_study(
        args, "logistic_experts_study.py", "A Dirichlet-process mixture of logistic experts against the DPM", run_experts,
        summarise,
    )  # fmt: skip


if __name__ == "__main__":
    main()
