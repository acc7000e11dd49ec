r"""Where the sampler's chains start: the mode of one class's mixture posterior, found by L-BFGS,
or a single component holding the whole class.

The blocked Gibbs sampler moves the components by small steps once the data are many: given
the parameters the allocations are nearly determined and given the allocations the
parameters are, so its sweeps approach the high-posterior region about as slowly as EM does
along the ridges where overlapping components trade mass. Started from the KDE-informed
values (components at the class's quantiles, all as wide as the KDE bandwidth) the default
warm-up ends far from that region at N >= 10^6 (:mod:`bayescal.bayesian.gibbs`, "Start";
measured history: ``docs/evidence/sampler_history.md``). A quasi-Newton search handles those
ridges: this module maximises over the weights, locations and scales

.. math::
    \sum_i c_i \log \sum_k w_k \phi(x_i \mid \theta_k) + \sum_k \log p(\theta_k),
    \qquad w = \operatorname{softmax}(\eta),

the class's weighted log-likelihood (points :math:`x_i` with counts :math:`c_i`: raw scores
or bin centres) plus the components' own priors (:mod:`bayescal.bayesian.priors`: normal
:math:`\mu_k`, log-normal :math:`\sigma_k`; or log-normal Beta shapes), with analytic
gradients, from the KDE-informed start. The stick-breaking prior of the weights is left out
of the objective: the result only sets where the chains begin (``init_*``), and the warm-up
sweeps that follow sample the full model. A component that the search empties keeps a tiny
weight and goes on as the sampler's empty components do, drawn from its prior.

**One component** (:func:`single_start`). The customary start of a Dirichlet-process-mixture
sampler puts every point in one cluster (Neal 2000): here component 1 holds all the weight,
with the class's weighted mean and standard deviation on the working scale (for Beta
components, the shapes whose logit has that mean and variance,
:math:`a = (1 + e^{m})/v`, :math:`b = (1 + e^{-m})/v`, as in :mod:`bayescal.bayesian.priors`),
and the other components are empty at their prior's ``init_*`` values. The sweeps then add
components as the data ask for them, where from the KDE-informed start (every component
occupied) they must empty the ones the posterior does not hold, which at thousands of scores
takes them far longer than the warm-up. Comparing fits from the two starts shows how much of
a fit is its start rather than its posterior.

References
----------
Liu, D. C. & Nocedal, J. (1989). On the limited memory BFGS method for large scale
optimization. Mathematical Programming 45, 503-528.
Neal, R. M. (2000). Markov chain sampling methods for Dirichlet process mixture models.
Journal of Computational and Graphical Statistics 9, 249-265.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import betaln, digamma, log_expit, logsumexp

__all__ = ["MODE_MAX_ITER", "log_posterior", "mode_start", "single_start"]

MODE_MAX_ITER = 500
"""Most L-BFGS iterations of the search (each one pass over the class's points)."""

_W_FLOOR = 1e-8  # start weights below this are raised to it, so that their logs are finite


def _gaussian_terms(x: np.ndarray, th1: np.ndarray, th2: np.ndarray):
    """log phi (K, n) and its derivatives in (mu, log sigma) for Gaussian components."""
    inv = np.exp(-th2)[:, None]
    z = (x[None, :] - th1[:, None]) * inv
    log_phi = -th2[:, None] - 0.5 * z * z
    return log_phi, z * inv, z * z - 1.0


def _beta_terms(xa: np.ndarray, xb: np.ndarray, th1: np.ndarray, th2: np.ndarray):
    """log phi (K, n) and its derivatives in (log a, log b) for Beta components on the logit scale."""
    a, b = np.exp(th1), np.exp(th2)
    psi_ab = digamma(a + b)
    log_b = betaln(a, b)
    log_phi = a[:, None] * xa[None, :] + b[:, None] * xb[None, :] - log_b[:, None]
    d1 = a[:, None] * (xa[None, :] - (digamma(a) - psi_ab)[:, None])
    d2 = b[:, None] * (xb[None, :] - (digamma(b) - psi_ab)[:, None])
    return log_phi, d1, d2


def log_posterior(x: np.ndarray, counts: np.ndarray, prior: dict, family: str = "gaussian"):
    r"""The search's objective as a function of :math:`\theta = (\eta, \theta_1, \theta_2)` (module docstring).

    Parameters
    ----------
    x, counts, prior, family
        As :func:`mode_start`.

    Returns
    -------
    negative : callable
        :math:`\theta \mapsto` (minus the objective, minus its gradient), with
        :math:`\theta_1, \theta_2` the centred locations and log scales (Gaussian) or the
        log shapes (Beta) of the K components.
    theta0 : ndarray of shape (3K,)
        The start, from ``init_*``.
    shift : float
        The centre subtracted from Gaussian locations (0 for Beta components).
    """
    x = np.asarray(x, dtype=np.float64)
    c = np.asarray(counts, dtype=np.float64)
    total = float(c.sum())
    w0 = np.clip(np.asarray(prior["init_weight"], dtype=np.float64), _W_FLOOR, None)
    K = w0.size
    if family == "gaussian":
        shift = float(np.average(x, weights=c))  # centred points: a better-conditioned search
        xc = x - shift
        th1_0 = np.asarray(prior["init_mu"], dtype=np.float64) - shift
        th2_0 = np.log(np.asarray(prior["init_sigma"], dtype=np.float64))
        loc1 = np.asarray(prior["mu_loc"], dtype=np.float64) - shift
        sd1 = np.full(K, float(prior["mu_scale"]))
        loc2, sd2 = np.full(K, float(prior["sigma_logmean"])), np.full(K, float(prior["sigma_logsd"]))

        def terms(t1, t2):
            return _gaussian_terms(xc, t1, t2)
    else:
        shift = 0.0
        xa, xb = log_expit(x), log_expit(-x)
        th1_0 = np.log(np.asarray(prior["init_a"], dtype=np.float64))
        th2_0 = np.log(np.asarray(prior["init_b"], dtype=np.float64))
        loc1 = np.asarray(prior["a_logloc"], dtype=np.float64)
        loc2 = np.asarray(prior["b_logloc"], dtype=np.float64)
        sd1 = sd2 = np.full(K, float(prior["ab_logsd"]))

        def terms(t1, t2):
            return _beta_terms(xa, xb, t1, t2)

    def negative(theta: np.ndarray) -> tuple[float, np.ndarray]:
        eta, t1, t2 = theta[:K], theta[K : 2 * K], theta[2 * K :]
        top_eta = eta.max()
        log_w = eta - (top_eta + np.log(np.exp(eta - top_eta).sum()))  # scipy's logsumexp costs 50x more here
        log_phi, d1, d2 = terms(t1, t2)
        lp = log_w[:, None] + log_phi
        top = lp.max(axis=0)
        e = np.exp(lp - top)  # one exp serves the log-sum-exp and the responsibilities
        tot = e.sum(axis=0)
        lse = top + np.log(tot)
        r = e * (c / tot)  # weighted responsibilities (K, n)
        value = float(c @ lse) - 0.5 * float((((t1 - loc1) / sd1) ** 2).sum() + (((t2 - loc2) / sd2) ** 2).sum())
        grad = np.concatenate(
            [
                r.sum(axis=1) - total * np.exp(log_w),
                (r * d1).sum(axis=1) - (t1 - loc1) / sd1**2,
                (r * d2).sum(axis=1) - (t2 - loc2) / sd2**2,
            ]
        )
        return -value, -grad

    return negative, np.concatenate([np.log(w0 / w0.sum()), th1_0, th2_0]), shift


def mode_start(
    x: np.ndarray, counts: np.ndarray, prior: dict, family: str = "gaussian", max_iter: int = MODE_MAX_ITER
) -> dict:
    r"""The class's hyperparameters with ``init_*`` moved to the posterior mode (module docstring).

    Parameters
    ----------
    x : ndarray of shape (n,)
        Working-scale points (raw scores or bin centres).
    counts : ndarray of shape (n,)
        Their positive frequency weights.
    prior : dict
        The class's hyperparameters (:func:`bayescal.bayesian.priors.prior_keys`); its
        ``init_*`` values are the search's start.
    family : {"gaussian", "beta"}, default "gaussian"
        Component family.
    max_iter : int, default :data:`MODE_MAX_ITER`
        Most L-BFGS iterations.

    Returns
    -------
    dict
        A copy of ``prior`` with ``init_weight`` and ``init_mu``, ``init_sigma`` (or
        ``init_a``, ``init_b``) at the mode found; ``prior`` itself when the search does not
        improve on its start.
    """
    negative, theta0, shift = log_posterior(x, counts, prior, family)
    K = theta0.size // 3
    with np.errstate(all="ignore"):
        result = minimize(negative, theta0, jac=True, method="L-BFGS-B", options={"maxiter": int(max_iter)})
        start_value = negative(theta0)[0]
    theta = result.x
    if not (np.all(np.isfinite(theta)) and np.isfinite(result.fun) and result.fun < start_value):
        return prior
    out = dict(prior, init_weight=np.exp(theta[:K] - logsumexp(theta[:K])))  # the sampler floors tiny weights
    if family == "gaussian":
        return out | {"init_mu": theta[K : 2 * K] + shift, "init_sigma": np.exp(theta[2 * K :])}
    return out | {"init_a": np.exp(theta[K : 2 * K]), "init_b": np.exp(theta[2 * K :])}


def single_start(x: np.ndarray, counts: np.ndarray, prior: dict, family: str = "gaussian") -> dict:
    r"""The class's hyperparameters with ``init_*`` set to one component holding the whole class
    (module docstring, "One component").

    Parameters
    ----------
    x : ndarray of shape (n,)
        Working-scale points (raw scores or bin centres).
    counts : ndarray of shape (n,)
        Their positive frequency weights.
    prior : dict
        The class's hyperparameters (:func:`bayescal.bayesian.priors.prior_keys`).
    family : {"gaussian", "beta"}, default "gaussian"
        Component family.

    Returns
    -------
    dict
        A copy of ``prior`` whose ``init_weight`` is 1 on the first component and 0 elsewhere,
        and whose first ``init_mu``, ``init_sigma`` (or ``init_a``, ``init_b``) match the
        class's weighted mean and variance; the other components keep their ``init_*`` values.
    """
    x = np.asarray(x, dtype=np.float64)
    counts = np.asarray(counts, dtype=np.float64)
    mean = float(np.average(x, weights=counts))
    var = float(np.average((x - mean) ** 2, weights=counts))
    if not var > 0:  # one distinct point: as narrow as the KDE-informed start's components
        spread = (
            np.square(prior["init_sigma"])
            if family == "gaussian"
            else 1.0 / np.asarray(prior["init_a"]) + 1.0 / np.asarray(prior["init_b"])
        )
        var = float(np.min(spread))
    weight = np.zeros(np.asarray(prior["init_weight"]).size)
    weight[0] = 1.0
    out = dict(prior, init_weight=weight)
    if family == "gaussian":
        mu, sigma = np.array(prior["init_mu"], dtype=np.float64), np.array(prior["init_sigma"], dtype=np.float64)
        mu[0], sigma[0] = mean, np.sqrt(var)
        return out | {"init_mu": mu, "init_sigma": sigma}
    a, b = np.array(prior["init_a"], dtype=np.float64), np.array(prior["init_b"], dtype=np.float64)
    a[0] = (1.0 + np.exp(min(mean, 700.0))) / var
    b[0] = (1.0 + np.exp(min(-mean, 700.0))) / var
    return out | {"init_a": a, "init_b": b}
