"""A posterior bootstrap of the class mixture's mode, as a candidate band for the variational issue.

The weighted likelihood bootstrap (Newton & Raftery 1994; the "posterior bootstrap" of
Fong, Lyddon & Holmes 2019 with its prior pseudo-data left out): each draw re-weights the
class's points by a Bayesian bootstrap (a point with count :math:`c_i` gets weight
:math:`\\mathrm{Gamma}(c_i, 1)`, rescaled to the class's total) and takes the mode of the
mixture's log posterior under those weights, found by the sampler's start search
(:func:`bayescal.bayesian.mode_start.mode_start`, L-BFGS) from the full-data mode. The draws' maps
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

from bayescal.bayesian.class_fit import ClassFit
from bayescal.bayesian.mode_start import mode_start


def fit_bootstrap(
    x: np.ndarray,
    counts: np.ndarray,
    prior: dict,
    *,
    n_components: int,
    random_seed: int | None,
    draws: int = 200,
    chains: int = 2,
) -> ClassFit:
    """``draws`` bootstrap modes of one class's Gaussian mixture, split into ``chains`` halves."""
    t0 = time.perf_counter()
    x, counts = np.asarray(x, dtype=float), np.asarray(counts, dtype=float)
    keep = counts > 0
    x, counts = x[keep], counts[keep]
    at_mode = mode_start(x, counts, prior, "gaussian")  # every draw's search starts here
    rng = np.random.default_rng(random_seed)
    found = []
    for _ in range(draws):
        g = rng.gamma(counts)
        found.append(mode_start(x, g * (counts.sum() / g.sum()), at_mode, "gaussian"))
    per, K = draws // chains, int(n_components)
    dims = ("chain", "draw", "component")
    posterior = xr.Dataset(
        {
            name: (dims, np.array([f[key] for f in found[: chains * per]]).reshape(chains, per, K))
            for name, key in (("weight", "init_weight"), ("mu", "init_mu"), ("sigma", "init_sigma"))
        }
        | {"alpha": (("chain", "draw"), np.ones((chains, per)))},
        coords={"chain": np.arange(chains), "draw": np.arange(per), "component": np.arange(K)},
    )
    return ClassFit(posterior=posterior, diagnostics={"route": "bootstrap", "runtime_s": time.perf_counter() - t0})


def register() -> None:
    """Make ``inference="bootstrap"`` fit with :func:`fit_bootstrap` in this process."""
    from bayescal.bayesian import routes

    routes.ROUTES["bootstrap"] = fit_bootstrap
