"""Inference routes for the per-class Dirichlet-process mixture.

Every route fits the truncated stick-breaking mixture of ONE class and has the
signature::

    fit_<route>(x, counts, prior, *, n_components, draws, random_seed, **options) -> ClassFit

where ``x`` are the class's points on the working scale (raw scores or bin centres),
``counts`` their weights (ones for raw data) and ``prior`` the hyperparameter dict
(keys ``alpha_shape``, ``alpha_rate``, ``mu_loc`` (K,), ``mu_scale``, ``sigma_logmean``,
``sigma_logsd``, ``init_mu`` (K,), ``init_sigma`` (K,), ``init_weight`` (K,)).

``ROUTES`` maps the ``inference`` name to its function. The functions import their
implementation module on call, so importing this module does not import PyMC.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

__all__ = ["ROUTES", "ClassFit", "fit_advi", "fit_gibbs", "fit_nuts"]


@dataclass
class ClassFit:
    """Posterior draws of one class's mixture density.

    Attributes
    ----------
    posterior : xarray.Dataset
        Variables ``weight``, ``mu``, ``sigma`` with dims ``(chain, draw, component)``
        (weights sum to one over ``component``) and ``alpha`` with dims ``(chain, draw)``.
    diagnostics : dict
        Plain numbers and strings describing the fit (e.g. ``converged``,
        ``n_iterations``, ``elbo_final``, ``pareto_k``, ``divergences``, ``runtime_s``).
    sample_stats : xarray.Dataset or None
        Sampler statistics when the route provides them.
    """

    posterior: xr.Dataset
    diagnostics: dict[str, Any] = field(default_factory=dict)
    sample_stats: xr.Dataset | None = None


def fit_advi(x: np.ndarray, counts: np.ndarray, prior: dict, *, n_components: int, draws: int,
             random_seed: int | None, **options) -> ClassFit:
    """Mean-field ADVI in PyMC; see :func:`bayescal.bayesian.pymc_model.fit_advi`."""
    from bayescal.bayesian import pymc_model

    return pymc_model.fit_advi(x, counts, prior, n_components=n_components, draws=draws,
                               random_seed=random_seed, **options)


def fit_nuts(x: np.ndarray, counts: np.ndarray, prior: dict, *, n_components: int, draws: int,
             random_seed: int | None, **options) -> ClassFit:
    """NUTS in PyMC; see :func:`bayescal.bayesian.pymc_model.fit_nuts`."""
    from bayescal.bayesian import pymc_model

    return pymc_model.fit_nuts(x, counts, prior, n_components=n_components, draws=draws,
                               random_seed=random_seed, **options)


def fit_gibbs(x: np.ndarray, counts: np.ndarray, prior: dict, *, n_components: int, draws: int,
              random_seed: int | None, **options) -> ClassFit:
    """Blocked Gibbs sampler; see :func:`bayescal.bayesian.gibbs.fit_gibbs`."""
    from bayescal.bayesian import gibbs

    return gibbs.fit_gibbs(x, counts, prior, n_components=n_components, draws=draws,
                           random_seed=random_seed, **options)


ROUTES = {"advi": fit_advi, "nuts": fit_nuts, "gibbs": fit_gibbs}
