"""The one posterior layout every inference route returns for one class's mixture."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import xarray as xr

__all__ = ["ClassFit"]


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
