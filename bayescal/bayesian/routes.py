"""Inference routes for the per-class Dirichlet-process mixture, by name.

Every route fits the truncated stick-breaking mixture of ONE class and has the signature::

    fit_<route>(x, counts, prior, *, n_components, random_seed, draws=<its default>, **options) -> ClassFit

where ``x`` are the class's points on the working scale (raw scores or bin centres),
``counts`` their weights (ones for raw data), ``draws`` the kept draws per chain (passed
when the calibrator sets them; each route's default suits it) and ``prior`` the hyperparameter dict
(:data:`bayescal.bayesian.priors.PRIOR_KEYS`). The returned
:class:`~bayescal.bayesian.class_fit.ClassFit` is the one posterior layout the DPM
assembles, whichever route made it.

``ROUTES`` maps the ``inference`` name to ``"module:function"`` (or to the function itself,
for a route registered at run time); :func:`get_route` imports the module on first use, so
naming a route does not import PyMC, and no route module imports this one. A new route is
one module plus one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

__all__ = ["BETA_ROUTES", "ROUTES", "SAMPLING_ROUTES", "get_route"]

ROUTES: dict[str, str | Callable] = {
    "gibbs": "bayescal.bayesian.gibbs:fit_gibbs",
    "advi": "bayescal.bayesian.pymc_model:fit_advi",
    "nuts": "bayescal.bayesian.pymc_model:fit_nuts",
    "vi": "bayescal.bayesian.vi:fit_vi",
}
SAMPLING_ROUTES = ("gibbs", "nuts")
"""Routes with chains and a warm-up (``chains`` and ``tune`` are passed to them)."""
BETA_ROUTES = ("gibbs", "advi", "nuts", "vi")
"""Routes that fit Beta components too (they take ``family="beta"``); the others fit Gaussian ones."""


def get_route(name: str) -> Callable:
    """The fitting function of route ``name`` (a key of :data:`ROUTES`)."""
    try:
        target = ROUTES[name]
    except KeyError:
        raise ValueError(f"inference={name!r} is not one of {tuple(ROUTES)}.") from None
    if callable(target):
        return target
    module, func = target.split(":")
    return getattr(import_module(module), func)
