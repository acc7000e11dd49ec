"""A posterior bootstrap of the class mixture's mode, as a candidate band for the variational issue.

The weighted likelihood bootstrap (Newton & Raftery 1994; the "posterior bootstrap" of
Fong, Lyddon & Holmes 2019 with its prior pseudo-data left out): each draw re-weights the
class's points by a Bayesian bootstrap (a point with count :math:`c_i` gets weight
:math:`\\mathrm{Gamma}(c_i, 1)`, rescaled to the class's total) and takes the mode of the
mixture's log posterior under those weights, found by L-BFGS from the full-data mode
(:mod:`bayescal.bayesian.mode_start`, the objective of the sampler's start). The draws' maps
give the band. It is registered as an inference route at run time (``register()``), so
``benchmarks/vi_study.py --candidates bootstrap`` scores it beside the others; it is not a
route of the package (``docs/evidence/vi.md`` says why).

References
----------
Newton, M. A. & Raftery, A. E. (1994). Approximate Bayesian inference with the weighted
likelihood bootstrap. JRSS B 56, 3-48.
Fong, E., Lyddon, S. & Holmes, C. (2019). Scalable nonparametric sampling from multimodal
posteriors with the posterior bootstrap. ICML.
"""

from __future__ import annotations

import time

import numpy as np
import xarray as xr
from scipy.optimize import minimize

from bayescal.bayesian.class_fit import ClassFit
from bayescal.bayesian.mode_start import log_posterior, mode_start


def fit_bootstrap(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 200,
    chains: int = 2,
    max_iter: int = 200,
) -> ClassFit:
    """``draws`` bootstrap modes of one class's Gaussian mixture, split into ``chains`` halves."""
    t0 = time.perf_counter()
    x, counts = np.asarray(x, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    x, counts = x[keep], counts[keep]
    K = int(n_components)
    prior = mode_start(x, counts, prior, "gaussian")
    _, theta_hat, shift = log_posterior(x, counts, prior, "gaussian")
    rng = np.random.default_rng(random_seed)
    weight, mu, sigma = (np.empty((draws, K)) for _ in range(3))
    iterations = []
    for d in range(draws):
        g = rng.gamma(counts)
        negative, _, _ = log_posterior(x, g * (counts.sum() / g.sum()), prior, "gaussian")
        with np.errstate(all="ignore"):
            res = minimize(negative, theta_hat, jac=True, method="L-BFGS-B", options={"maxiter": max_iter})
        iterations.append(res.nit)
        eta = res.x[:K]
        w = np.exp(eta - eta.max())
        weight[d], mu[d], sigma[d] = w / w.sum(), res.x[K : 2 * K] + shift, np.exp(res.x[2 * K :])
    per = draws // chains
    dims = ("chain", "draw", "component")
    posterior = xr.Dataset(
        {
            name: (dims, v[: chains * per].reshape(chains, per, K))
            for name, v in (("weight", weight), ("mu", mu), ("sigma", sigma))
        }
        | {"alpha": (("chain", "draw"), np.ones((chains, per)))},
        coords={"chain": np.arange(chains), "draw": np.arange(per), "component": np.arange(K)},
    )
    diagnostics = {
        "route": "bootstrap",
        "runtime_s": time.perf_counter() - t0,
        "mean_iterations": float(np.mean(iterations)),
    }
    return ClassFit(posterior=posterior, diagnostics=diagnostics)


def register() -> None:
    """Make ``inference="bootstrap"`` fit with :func:`fit_bootstrap` in this process."""
    from bayescal.bayesian import routes

    routes.ROUTES["bootstrap"] = fit_bootstrap
