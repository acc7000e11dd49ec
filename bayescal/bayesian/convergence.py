"""Convergence check of the calibration map's posterior draws (the last step of the DPM pipeline).

The component parameters of a mixture switch labels between chains; the calibration map does
not, so the map's draws are what say whether the band can be trusted. The check computes, at
up to 64 points of the data region, split R-hat and bulk and tail effective sample sizes
(Vehtari et al. 2021, via :mod:`arviz_stats`), and warns when they fall short.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Buerkner, P.-C. (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC. Bayesian
Analysis 16, 667-718.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["MAP_RHAT_WARN", "map_convergence", "warn_convergence"]

MAP_RHAT_WARN = 1.2
"""Largest R-hat of the map draws (at the worst of 64 points of the data region) that fits silently.

Vehtari et al. (2021) ask for R-hat <= 1.01 and ESS >= 400 before a posterior is trusted;
the default Gibbs route does not reach that on the map (typically R-hat 1.05-1.3 and bulk ESS
of 1-3 % of the draws at the worst point), which :attr:`DPMCalibrator.diagnostics_` records.
The warning marks fits whose chains clearly disagree rather than every default fit."""


def map_convergence(
    grid_draws: np.ndarray, shape: tuple[int, int], grid: np.ndarray, region: np.ndarray, to_input
) -> dict[str, float]:
    """R-hat and bulk / tail ESS of the map draws at up to 64 grid points of the data region.

    Parameters
    ----------
    grid_draws : ndarray of shape (chains * draws, n_grid)
        Map draws on the working-scale ``grid``.
    shape : (int, int)
        Chains and draws.
    grid : ndarray of shape (n_grid,)
    region : ndarray of shape (2,)
        The data region on the working scale (e.g. the 2.5 % and 97.5 % weighted quantiles).
    to_input : callable
        Maps a working-scale value to the input scale (for the reported score).

    Returns
    -------
    dict
        ``ess_bulk_min``, ``ess_bulk_median``, ``ess_tail_min``, ``rhat_max``, ``rhat_max_score``,
        ``chain_gap_at_rhat_max`` (spread of the chains' means there) and
        ``band_width_at_rhat_max`` (the 95 % band's width there).
    """
    from arviz_stats.base import array_stats

    inside = np.flatnonzero((grid >= region[0]) & (grid <= region[1]))
    if inside.size == 0:
        inside = np.arange(grid.size)
    pick = inside[np.unique(np.linspace(0, inside.size - 1, min(64, inside.size)).round().astype(int))]
    draws = np.moveaxis(grid_draws[:, pick].reshape(*shape, pick.size), -1, 0)
    ess = array_stats.ess(draws, chain_axis=1, draw_axis=2, method="bulk")
    ess_tail = array_stats.ess(draws, chain_axis=1, draw_axis=2, method="tail", prob=(0.05, 0.95))
    out = {
        "ess_bulk_min": float(np.nanmin(ess)),
        "ess_bulk_median": float(np.nanmedian(ess)),
        "ess_tail_min": float(np.nanmin(ess_tail)),
        "rhat_max": float("nan"),
        "rhat_max_score": float("nan"),
        "chain_gap_at_rhat_max": float("nan"),
        "band_width_at_rhat_max": float("nan"),
    }
    if shape[0] > 1:
        rhat = array_stats.rhat(draws, chain_axis=1, draw_axis=2)
        worst = int(np.nanargmax(rhat))
        chain_means = draws[worst].mean(axis=1)
        out["rhat_max"] = float(rhat[worst])
        out["rhat_max_score"] = float(to_input(grid[pick[worst]]))
        out["chain_gap_at_rhat_max"] = float(chain_means.max() - chain_means.min())
        lo, hi = np.quantile(draws[worst], [0.025, 0.975])
        out["band_width_at_rhat_max"] = float(hi - lo)
    return out


def warn_convergence(diagnostics: dict, inference: str, stacklevel: int = 5) -> None:
    """Warn when the map's chains disagree (:data:`MAP_RHAT_WARN`) or a sampler diverged."""
    conv, n_div = diagnostics["map"], diagnostics["divergences"]
    if conv["rhat_max"] > MAP_RHAT_WARN:
        warnings.warn(
            f"The chains disagree on the calibration map: R-hat {conv['rhat_max']:.2f} at score "
            f"{conv['rhat_max_score']:.4g}, where their means differ by {conv['chain_gap_at_rhat_max']:.3g} "
            f"against a 95% band {conv['band_width_at_rhat_max']:.3g} wide (bulk ESS down to "
            f"{conv['ess_bulk_min']:.0f}); the credible band is not reliable there. Longer runs (draws, tune, "
            "chains, or route_options={'thin': k}) raise the ESS, but on the coverage study's truths they did not "
            "bring R-hat to 1.01 at N >= 10^4 (docs/evidence/coverage.md); refit with another random_state and "
            "compare the maps there before acting on the band.",
            UserWarning,
            stacklevel=stacklevel,
        )
    if n_div > 0:
        per_class = ", ".join(f"class {c}: {diagnostics[f'class_{c}'].get('divergences', 0)}" for c in (0, 1))
        warnings.warn(
            f"{n_div} divergent transitions in the {inference} sampler ({per_class}) after tuning: the "
            "posterior may be biased; raise target_accept through route_options, or use inference='gibbs'.",
            UserWarning,
            stacklevel=stacklevel,
        )
