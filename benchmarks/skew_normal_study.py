r"""Skew-normal components in the DPM, on the coverage study's truths.

The core issue names skewed components (skew-normal) among the candidates for the class
densities, beside the Student-t ones of ``benchmarks/student_t_study.py``. A symmetric Gaussian
component on the logit scale that must cover a class piled against one end spills its other
flank where the class has no scores (the piles truth, the skewed truth's hard edge); a
skew-normal component can be steep on one side and spread on the other. This study fits them in
the calibrator's own pipeline (data preparation, KDE-informed priors, class prior, null-model
stacking, map draws and their convergence check), changing only the component kernel, and
scores them on the replicates of ``benchmarks/dpm_coverage.py`` beside the default calibrator's
rows on the same seeds (``_study_files.paired_table``).

**Model.** Per class, the truncated stick-breaking mixture of the calibrator with each
component a skew-normal (Azzalini 1985) written by its mean :math:`\mu_k`, standard deviation
:math:`\sigma_k` and skewness direction :math:`\delta_k \in (-1, 1)`:

.. math::
    f_k(x) = \frac{2}{\omega_k}\,\phi\!\left(\frac{x - \xi_k}{\omega_k}\right)
    \Phi\!\left(\lambda_k \frac{x - \xi_k}{\omega_k}\right), \quad
    \omega_k = \frac{\sigma_k}{\sqrt{1 - b^2\delta_k^2}}, \quad
    \xi_k = \mu_k - \omega_k b\,\delta_k, \quad \lambda_k = \frac{\delta_k}{\sqrt{1 - \delta_k^2}},

with :math:`b = \sqrt{2/\pi}`. The calibrator's priors stay what they are, now on the
component's mean and standard deviation (:math:`\mu_k \sim \mathcal N(m_k, s^2)`,
:math:`\log\sigma_k \sim \mathcal N(\ell, \tau^2)` above the floor for binned data), and
:math:`\delta_k \sim \mathrm U(-1, 1)`, the uniform law on the identifiable skewness direction
(|delta| <= tanh 5, so lambda <= 74: a half-normal edge for practical purposes). At
:math:`\delta = 0` the component is the calibrator's Gaussian one, so the model nests it.

**Sampler.** Blocked Gibbs (Ishwaran & James 2001): allocations of each point's units by
binomial splits as in the calibrator, sticks and concentration as there; each occupied
component's :math:`\mu`, :math:`\log\sigma` and :math:`\eta = \operatorname{artanh}\delta` by
random-walk Metropolis steps (step 2.4 posterior standard deviations of a Gaussian component
with as many units, times a factor per component and parameter adapted towards 44 % acceptance
during the warm-up only; ``n_mh`` steps each per sweep) on the likelihood of the units it holds;
empty components are drawn from the prior. The latent-variable form of Frühwirth-Schnatter &
Pyne (2010) would give conjugate updates but needs a truncated-normal latent per unit, which
binned data (many units a bin) make costly. Thinning, warm-up and chains are the calibrator's;
compiled with numba, one generator per chain from ``random_seed``. Like the Student-t study it
is meant for N <= 10^4, where the Gaussian sampler runs plain sweeps.

**Evaluation.** The skewness rides along as the imaginary part of the posterior variable
``mu`` (so the calibrator's two-parameter layout carries it unchanged), and while a fit is
scored :func:`bayescal.bayesian.mixture.log_density` is replaced by the skew-normal mixture's
(:func:`skew_normal_kernels`), so every density and map the calibrator computes from the draws
is this model's. Nothing of this is part of the package.

Run::

    python benchmarks/skew_normal_study.py --truths monotone piles plateau heavy overconfident \
        skewed mixed_piles boosted bimodal --n 300 1000 10000 --seeds 6

It appends one row per (truth, N, seed) to ``--out`` (CSV, the coverage study's columns) and
writes the table beside the default calibrator's rows on the same seeds to the same name with
``.md``, with the command of every run that wrote rows. The measured table is in
``benchmarks/results/skew_normal_study.md`` and on the documentation's page of candidate models
(``docs/evidence/candidates.md``): the band is the Gaussian components' within its standard
error on most cells, piled scores still under-cover, and the chains mix no better.

References
----------
Azzalini, A. (1985). A class of distributions which includes the normal ones. Scand. J.
Statist. 12, 171-178.
Frühwirth-Schnatter, S. & Pyne, S. (2010). Bayesian inference for finite mixtures of
univariate and multivariate skew-normal and skew-t distributions. Biostatistics 11, 317-336.
Ishwaran, H. & James, L. F. (2001). Gibbs sampling methods for stick-breaking priors.
JASA 96, 161-173.
"""

from __future__ import annotations

import contextlib
import math
import sys
import time
from pathlib import Path

import numpy as np
from numba import njit
from scipy.special import log_ndtr

sys.path.insert(0, str(Path(__file__).parent))
from _mixture_sweeps import (
    chunked_mixture_logsumexp,
    class_chains_setup,
    class_posterior,
    exp_normalise,
    pick_component,
    prior_location_scale,
    run_chains,
    split_units,
    stick_log_weights,
    stick_weights,
    sticks_and_concentration,
)
from _study_files import CONVERGENCE_COLUMNS, RESULTS, paired_table, run_study, study_parser
from dpm_coverage import FIELDS, LEARNT_CONCENTRATION, TRUTHS, _label, _rows, cell_summary, run_one

from bayescal.bayesian.class_fit import ClassFit

ROUTE = "skew_normal"
ETA_MAX = 5.0
"""|artanh delta| <= 5: the prior's support (|delta| <= 0.99991)."""
_DELTA_MAX = math.tanh(ETA_MAX)
_B = math.sqrt(2.0 / math.pi)
_LOG2 = math.log(2.0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, nogil=True)
def _log_ndtr(y):
    """log Phi(y), stable in the lower tail."""
    if y > -20.0:
        return math.log(0.5 * math.erfc(-y / math.sqrt(2.0)))
    return -0.5 * y * y - math.log(-y) - _HALF_LOG_2PI + math.log1p(-1.0 / (y * y))


@njit(cache=True, nogil=True)
def _sn_parts(mu, u, eta):
    """(xi, log omega, lambda) of the skew-normal with mean mu, log sd u, delta = tanh(eta)."""
    d = math.tanh(eta)
    log_omega = u - 0.5 * math.log1p(-_B * _B * d * d)
    xi = mu - math.exp(log_omega) * _B * d
    return xi, log_omega, d / math.sqrt(1.0 - d * d)


@njit(cache=True, nogil=True)
def _sn_logpdf(x, xi, log_omega, lam):
    z = (x - xi) * math.exp(-log_omega)
    return _LOG2 - log_omega - _HALF_LOG_2PI - 0.5 * z * z + _log_ndtr(lam * z)


@njit(cache=True, nogil=True)
def _comp_loglik(x, wts, idx, mu, u, eta):
    xi, lo, lam = _sn_parts(mu, u, eta)
    tot = 0.0
    for j in range(idx.size):
        i = idx[j]
        tot += wts[j] * _sn_logpdf(x[i], xi, lo, lam)
    return tot


@njit(cache=True, nogil=True)
def _log_prior_eta(eta):
    """log density of eta = artanh(delta), delta ~ U(-1, 1): log(sech^2(eta) / 2)."""
    a = abs(eta)
    return _LOG2 - 2.0 * a - 2.0 * math.log1p(math.exp(-2.0 * a))


@njit(cache=True, nogil=True)
def _sn_chain(
    x, c_int, c_frac, m, s2, ell, tau, log_floor, a_alpha, b_alpha, mu, u, eta, v, tune, thin, n_keep, n_mh, gen
):
    """One chain of the skew-normal mixture's blocked Gibbs sampler (module docstring); returns the
    kept weights, means, standard deviations, skewness (eta) and concentrations, and the share of
    accepted Metropolis steps."""
    n, K = x.size, mu.size
    alpha = a_alpha / b_alpha
    out_w, out_mu, out_sd, out_eta = (
        np.empty((n_keep, K)),
        np.empty((n_keep, K)),
        np.empty((n_keep, K)),
        np.empty((n_keep, K)),
    )
    out_alpha = np.empty(n_keep)
    logw, p, nk = np.empty(K), np.empty(K), np.empty(K)
    xi, lo, lam = np.empty(K), np.empty(K), np.empty(K)
    nik = np.empty(K, np.int64)
    alloc = np.empty((n, K))  # units (or the fractional weight) of point i held by component k
    order_i = np.empty(n * K, np.int64)  # the points each component holds, grouped by component
    order_w = np.empty(n * K)
    start = np.empty(K + 1, np.int64)
    log_scale = np.zeros((K, 3))  # per component and parameter: the steps' adapted log factor
    accepted = proposed = 0
    for it in range(tune + n_keep * thin):
        stick_log_weights(v, logw)
        for k in range(K):
            xi[k], lo[k], lam[k] = _sn_parts(mu[k], u[k], eta[k])
        alloc[:] = 0.0
        for i in range(n):  # 1. allocations
            for k in range(K):
                p[k] = logw[k] + _sn_logpdf(x[i], xi[k], lo[k], lam[k])
            tot = exp_normalise(p)
            split_units(gen, c_int[i], p, tot, nik)
            for k in range(K):
                alloc[i, k] = nik[k]
            if c_frac[i] > 0.0:  # a fractional weight: one unit of weight f, power likelihood
                alloc[i, pick_component(gen, p, tot)] += c_frac[i]
        a = 0
        for k in range(K):
            start[k] = a
            nk[k] = 0.0
            for i in range(n):
                if alloc[i, k] > 0.0:
                    order_i[a], order_w[a] = i, alloc[i, k]
                    nk[k] += alloc[i, k]
                    a += 1
        start[K] = a
        alpha = sticks_and_concentration(v, nk, alpha, a_alpha, b_alpha, gen)  # 2-3. sticks, concentration
        for k in range(K):  # 4. each component's mean, log sd and skewness
            if nk[k] == 0.0:
                mu[k], u[k] = prior_location_scale(m[k], s2, ell, tau, log_floor, gen)
                eta[k] = math.atanh(min(max(2.0 * gen.random() - 1.0, -_DELTA_MAX), _DELTA_MAX))
                continue
            idx, wts = order_i[start[k] : start[k + 1]], order_w[start[k] : start[k + 1]]
            ll = _comp_loglik(x, wts, idx, mu[k], u[k], eta[k])
            sd_units = 1.0 / math.sqrt(nk[k])
            steps = (2.4 * math.exp(u[k]) * sd_units, 2.4 * sd_units / math.sqrt(2.0), 2.4 * sd_units)
            for _ in range(n_mh):
                for c in range(3):
                    prop = gen.standard_normal() * steps[c] * math.exp(log_scale[k, c])
                    mu_p, u_p, eta_p = mu[k], u[k], eta[k]
                    if c == 0:
                        mu_p += prop
                        lp_diff = (-0.5 * (mu_p - m[k]) ** 2 + 0.5 * (mu[k] - m[k]) ** 2) / s2
                    elif c == 1:
                        u_p += prop
                        if u_p < log_floor:
                            proposed += 1
                            continue
                        lp_diff = (-0.5 * (u_p - ell) ** 2 + 0.5 * (u[k] - ell) ** 2) / tau**2
                    else:
                        eta_p += prop
                        if abs(eta_p) > ETA_MAX:
                            proposed += 1
                            continue
                        lp_diff = _log_prior_eta(eta_p) - _log_prior_eta(eta[k])
                    ll_p = _comp_loglik(x, wts, idx, mu_p, u_p, eta_p)
                    proposed += 1
                    ok = math.log(gen.random()) < ll_p - ll + lp_diff
                    if ok:
                        mu[k], u[k], eta[k], ll = mu_p, u_p, eta_p, ll_p
                        accepted += 1
                    if it < tune:  # Robbins-Monro scaling towards 44 % acceptance, warm-up only
                        log_scale[k, c] = min(
                            max(log_scale[k, c] + ((1.0 if ok else 0.0) - 0.44) / math.sqrt(it + 1.0), -4.0), 4.0
                        )
        if it >= tune and (it - tune) % thin == 0:
            j = (it - tune) // thin
            stick_weights(v, out_w[j])
            out_mu[j] = mu
            out_sd[j] = np.exp(u)
            out_eta[j] = eta
            out_alpha[j] = alpha
    return out_w, out_mu, out_sd, out_eta, out_alpha, accepted / max(proposed, 1)


def fit_skew_normal(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 500,
    tune: int = 500,
    chains: int = 2,
    n_mh: int = 2,
) -> ClassFit:
    """One class's skew-normal mixture (module docstring) in the route layout, the skewness
    eta = artanh(delta) as the imaginary part of ``mu``; the calibrator's Gaussian prior
    (``mu_loc``, ``mu_scale``, ``sigma_logmean``, ``sigma_logsd``, the ``init_*`` start and
    ``scale_floor``) is taken as it is, every chain starting at delta = 0."""
    t0 = time.perf_counter()
    K = int(n_components)
    c = class_chains_setup(x, counts, prior, tune, draws, n_mh)
    hyper = (c["s2"], c["ell"], c["tau"], c["log_floor"], c["a_alpha"], c["b_alpha"])

    def chain(gen):  # the start's arrays are copied: the sweeps update them in place
        return _sn_chain(
            *c["data"], *hyper, c["mu0"].copy(), c["u0"].copy(), np.zeros(K), c["v0"].copy(), *c["run"], gen
        )

    results = run_chains(chain, chains, random_seed)
    stack = [np.stack([r[j] for r in results]) for j in range(5)]
    posterior = class_posterior(stack[0], (stack[1] + c["shift"]) + 1j * stack[3], stack[2], stack[4])
    eta = stack[3]
    diagnostics = {
        "route": ROUTE,
        "mh_acceptance": float(np.mean([r[5] for r in results])),
        "mean_abs_delta": float(np.average(np.abs(np.tanh(eta)), weights=stack[0])),
        "n_iterations": c["n_iterations"],
        "runtime_s": time.perf_counter() - t0,
    }
    return ClassFit(posterior=posterior, diagnostics=diagnostics)


def sn_log_density(t: np.ndarray, weight: np.ndarray, mu: np.ndarray, sigma: np.ndarray) -> np.ndarray:
    r"""Log density (..., n) of skew-normal mixtures at points ``t``: :math:`\log \sum_k w_k f_k(t)`
    (module docstring), ``mu`` the components' means plus i times eta = artanh(delta)."""
    t = np.asarray(t, dtype=np.float64)
    lead, K = weight.shape[:-1], weight.shape[-1]
    mu = np.asarray(mu).reshape(-1, K)
    w2, s2 = (np.asarray(a, dtype=np.float64).reshape(-1, K) for a in (weight, sigma))
    d = np.tanh(mu.imag)
    log_omega = np.log(s2) - 0.5 * np.log1p(-((_B * d) ** 2))
    xi = mu.real - np.exp(log_omega) * _B * d
    lam = d / np.sqrt(1.0 - d * d)

    def log_terms(sl):
        z = (t[None, None, :] - xi[sl, :, None]) * np.exp(-log_omega[sl, :, None])
        terms = (np.log(w2[sl]) - log_omega[sl] + _LOG2 - _HALF_LOG_2PI)[:, :, None]
        return terms - 0.5 * z * z + log_ndtr(lam[sl, :, None] * z)

    return chunked_mixture_logsumexp(w2.shape[0], K, t.size, log_terms).reshape(*lead, t.size)


@contextlib.contextmanager
def skew_normal_kernels():
    """Within the block, the calibrator evaluates its Gaussian-family draws as skew-normal mixtures."""
    from bayescal.bayesian import mixture

    original = mixture.log_density

    def log_density(t, weight, p1, p2, family="gaussian"):
        if family != "gaussian":
            return original(t, weight, p1, p2, family)
        return sn_log_density(np.clip(np.asarray(t, dtype=np.float64), -1e150, 1e150), weight, p1, p2)

    mixture.log_density = log_density
    try:
        yield
    finally:
        mixture.log_density = original


def run_skew_normal(truth: str, n: int, seed: int) -> dict:
    """One replicate scored as in ``dpm_coverage.run_one``, with skew-normal components, and the
    weight-averaged |delta| of the components over the two classes' draws (``mean_abs_delta``)."""
    from bayescal.bayesian import routes

    deltas: list[float] = []

    def fit(*args, **kwargs) -> ClassFit:
        out = fit_skew_normal(*args, **kwargs)
        deltas.append(out.diagnostics["mean_abs_delta"])
        return out

    routes.ROUTES[ROUTE] = fit
    with skew_normal_kernels():
        row = run_one(truth, n, seed, ROUTE, {"components": "gaussian"}, [])
    return row | {"route": ROUTE, "mean_abs_delta": float(np.mean(deltas))}


def summarise(path: Path) -> str:
    """The table of the study's rows beside the default calibrator's on the same seeds
    (:func:`_study_files.paired_table`), with the map's convergence, the components' mean |delta|
    and Gaussian components' 95 % coverage and MAE on the same seeds: the coverage study's rows of
    ``components="gaussian"`` (the default's own rows for decision values, which it fits with
    Gaussian components), under the learnt concentration the study ran with
    (:data:`dpm_coverage.LEARNT_CONCENTRATION`)."""
    coverage = _rows(RESULTS / "dpm_coverage.csv")

    def gaussian(c: dict, sel: list[dict]) -> str:
        truth, n = sel[0]["truth"], int(sel[0]["n"])
        family = {} if TRUTHS[truth][2] == "decision" else {"components": "gaussian"}
        route = _label("gibbs", family | {"priors": LEARNT_CONCENTRATION})
        seeds = {int(r["seed"]) for r in sel}
        rows = [
            r
            for r in coverage
            if r["route"] == route and r["truth"] == truth and int(r["n"]) == n and int(r["seed"]) in seeds
        ]
        if not rows:
            return "-"
        g = cell_summary(rows)
        return f"{g['cov95']:.3f} / {g['mae']:.4f} ({len(rows)})"

    return paired_table(
        path,
        CONVERGENCE_COLUMNS
        + (
            ("mean abs delta", lambda c, sel: f"{c['mean_abs_delta']:.2f}"),
            ("Gaussian 95 % cov / MAE (seeds)", gaussian),
        ),
    )


def main() -> None:
    ap = study_parser(__doc__, "skew_normal_study.py", n=(300, 1000, 10000))
    args = ap.parse_args()
    if any(n > 10_000 for n in args.n):
        ap.error("--n above 10000: the Gaussian sampler then adds moves this one lacks (module docstring)")
    run_study(
        args,
        "skew_normal_study.py",
        "Skew-normal components against the default",
        run_skew_normal,
        summarise,
        FIELDS + ["mean_abs_delta"],
    )


if __name__ == "__main__":
    main()
