"""Convergence check of the calibration map's posterior draws (the last step of the DPM pipeline).

The component parameters of a mixture switch labels between chains; the calibration map does
not, so the map's draws are what say whether the band can be trusted. The check computes, at
up to 64 points of the data region, rank-normalised split R-hat and bulk and tail effective
sample sizes (Vehtari et al. 2021). It records whether they meet Vehtari et al.'s target
(R-hat <= :data:`RHAT_TARGET`, bulk and tail ESS >= :data:`ESS_TARGET`: ``meets_target``) and
warns only where the chains clearly disagree (R-hat above :data:`MAP_RHAT_WARN`, or one chain's
bulk ESS below :data:`MAP_ESS_WARN`), since most default fits above a few hundred scores miss
the target (:data:`MAP_RHAT_WARN` says why). The diagnostics are those
of :mod:`arviz_stats` (``array_stats.rhat`` with ``method="rank"``, ``array_stats.ess`` with
``method="bulk"`` and ``"tail"``), computed for all points at once, where arviz_stats evaluates
one point at a time in Python. They agree with it to 1e-10.

References
----------
Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. & Buerkner, P.-C. (2021). Rank-normalization,
folding, and localization: an improved R-hat for assessing convergence of MCMC. Bayesian
Analysis 16, 667-718.
"""

from __future__ import annotations

from functools import cache

import numpy as np

from bayescal._warnings import warn

__all__ = [
    "CHECK_POINTS",
    "ESS_TARGET",
    "MAP_ESS_WARN",
    "MAP_RHAT_WARN",
    "REMEDY_DRAWS",
    "REMEDY_HMC_STEPS",
    "RHAT_TARGET",
    "check_points",
    "ess_bulk",
    "ess_tail",
    "map_convergence",
    "mcse_mean",
    "meets_target",
    "remedy",
    "rhat_rank",
    "warn_convergence",
]

RHAT_TARGET = 1.01
"""Largest R-hat of a converged posterior (Vehtari et al. 2021)."""
ESS_TARGET = 400
"""Fewest bulk and tail effective draws of a converged posterior (Vehtari et al. 2021)."""

MAP_ESS_WARN = 100
"""Fewest bulk effective draws of the map (at the worst of its check points) that fit silently
when R-hat is undefined: one chain of a sampling route, which cannot show chains disagreeing
(Vehtari et al. 2021 ask for a bulk ESS of at least 100 per chain)."""

MAP_RHAT_WARN = 1.2
"""Largest R-hat of the map draws (at the worst of 64 points of the data region) that fits silently.

Vehtari et al. (2021) ask for R-hat <= :data:`RHAT_TARGET` and ESS >= :data:`ESS_TARGET` before a
posterior is trusted; the default Gibbs route mostly does not reach that on the map, least
with many scores (the default's R-hat and ESS per truth: ``docs/evidence/coverage.md``; their
history: ``docs/evidence/sampler_history.md``).
:attr:`DPMCalibrator.diagnostics_` records whether a fit meets the target (``meets_target``).
The warning marks fits whose chains clearly disagree rather than every default fit."""


CHECK_POINTS = 64
"""Most grid points of the data region at which :func:`map_convergence` checks the map's draws."""


def _split_chains(draws: np.ndarray) -> np.ndarray:
    """(P, C, D) draws to (P, 2C, D // 2): each chain's first and last halves as two chains."""
    half = draws.shape[2] // 2
    return np.concatenate([draws[:, :, :half], draws[:, :, -half:]], axis=1)


def _z_scale(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised draws per point: normal quantiles of the average ranks over all chains and
    draws, back-transformed with Blom's offset 3/8."""
    from scipy.special import ndtri
    from scipy.stats import rankdata

    P = draws.shape[0]
    ranks = rankdata(draws.reshape(P, -1), method="average", axis=1)
    return ndtri((ranks - 0.375) / (ranks.shape[1] + 0.25)).reshape(draws.shape)


def _rhat(draws: np.ndarray) -> np.ndarray:
    """Potential scale reduction of (P, C, D) draws, per point."""
    D = draws.shape[2]
    between = D * draws.mean(axis=2).var(axis=1, ddof=1)
    within = draws.var(axis=2, ddof=1).mean(axis=1)
    return np.sqrt((between / within + D - 1) / D)


def rhat_rank(draws: np.ndarray) -> np.ndarray:
    """Rank-normalised split R-hat per point: the larger of the bulk and the folded (tail) R-hat.

    Parameters
    ----------
    draws : ndarray of shape (P, chains, draws)

    Returns
    -------
    ndarray of shape (P,)
        As ``arviz_stats`` ``array_stats.rhat(..., method="rank")`` per point (NaN for points with
        NaN draws, fewer than 2 chains or 4 draws).
    """
    split = _split_chains(draws)
    folded = np.abs(split - np.median(split.reshape(split.shape[0], -1), axis=1)[:, None, None])
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.maximum(_rhat(_z_scale(split)), _rhat(_z_scale(folded)))
    bad = np.isnan(draws).any(axis=(1, 2)) | (draws.shape[1] < 2) | (draws.shape[2] < 4)
    return np.where(bad, np.nan, out)


@cache
def _geyer_kernel():
    """Compiled :func:`_geyer_tau` kernel (compiled on first use, so importing stays light)."""
    from bayescal._numba import njit

    @njit
    def geyer_tau(rho):  # pragma: no cover - compiled
        """Integrated autocorrelation time per row of autocorrelations ``rho`` (P, D), by Geyer's
        initial positive and initial monotone sequences, as arviz_stats computes it."""
        P, n_draw = rho.shape
        out = np.empty(P)
        r = np.empty(n_draw)
        for p in range(P):
            for t in range(n_draw):
                r[t] = 0.0
            even = 1.0
            r[0] = even
            odd = rho[p, 1]
            r[1] = odd
            t = 1
            while t < n_draw - 3 and even + odd > 0.0:
                even = rho[p, t + 1]
                odd = rho[p, t + 2]
                if even + odd >= 0:
                    r[t + 1] = even
                    r[t + 2] = odd
                t += 2
            max_t = t - 2
            if even > 0:
                r[max_t + 1] = even
            t = 1
            while t <= max_t - 2:
                if r[t + 1] + r[t + 2] > r[t - 1] + r[t]:
                    r[t + 1] = (r[t - 1] + r[t]) / 2.0
                    r[t + 2] = r[t + 1]
                t += 2
            tau = -1.0
            for j in range(max_t + 1):
                tau += 2.0 * r[j]
            if max_t + 1 < n_draw:
                tau += r[max_t + 1]
            out[p] = tau
        return out

    return geyer_tau


def _ess(draws: np.ndarray) -> np.ndarray:
    """Effective sample size of (P, C, D) draws per point: autocovariances by FFT, combined over
    chains, and Geyer's initial monotone sequence (Vehtari et al. 2021, eq. 10-11)."""
    from scipy.fft import irfft, next_fast_len, rfft

    P, C, D = draws.shape
    total = C * D
    flat = draws.reshape(P, -1)
    constant = flat.max(axis=1) - flat.min(axis=1) < np.finfo(float).resolution
    centred = draws - draws.mean(axis=2, keepdims=True)
    m = next_fast_len(2 * D)
    f = rfft(centred, n=m, axis=2)
    acov = irfft(f * np.conjugate(f), n=m, axis=2)[:, :, :D] / D
    mean_var = acov[:, :, 0].mean(axis=1) * D / (D - 1.0)
    var_plus = mean_var * (D - 1.0) / D
    if C > 1:
        var_plus = var_plus + draws.mean(axis=2).var(axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    tau = np.maximum(_geyer_kernel()(np.ascontiguousarray(rho)), 1.0 / np.log10(total))
    out = np.where(np.isnan(rho).any(axis=1), np.nan, total / tau)
    return np.where(constant, float(total), out)


def _valid_ess(draws: np.ndarray, out: np.ndarray) -> np.ndarray:
    return np.where(np.isnan(draws).any(axis=(1, 2)) | (draws.shape[2] < 4), np.nan, out)


def ess_bulk(draws: np.ndarray) -> np.ndarray:
    """Bulk effective sample size, shape (P,), of ``draws`` (P, chains, draws) per point: the ESS of
    the rank-normalised split chains, as ``arviz_stats`` ``array_stats.ess(..., method="bulk")``."""
    return _valid_ess(draws, _ess(_z_scale(_split_chains(draws))))


def ess_tail(draws: np.ndarray, prob: tuple[float, float] = (0.05, 0.95)) -> np.ndarray:
    """Tail effective sample size, shape (P,), of ``draws`` (P, chains, draws) per point: the smaller
    ESS of the indicators of the draws falling below their ``prob`` quantiles (split chains), as
    ``arviz_stats`` ``array_stats.ess(..., method="tail", prob=prob)``."""
    P = draws.shape[0]
    q = np.quantile(draws.reshape(P, -1), prob, axis=1)  # (2, P)
    split = _split_chains(draws)
    low, high = (_ess((split <= qq[:, None, None]).astype(np.float64)) for qq in q)
    return _valid_ess(draws, np.minimum(low, high))


def mcse_mean(draws: np.ndarray) -> np.ndarray:
    r"""Monte Carlo standard error of the posterior mean, shape (P,), of ``draws`` (P, chains, draws)
    per point: :math:`s / \sqrt{\mathrm{ESS}}`, with :math:`s` the standard deviation of all draws
    and the ESS of the split chains' raw values, as ``arviz_stats`` ``array_stats.mcse(...,
    method="mean")`` (Vehtari et al. 2021). It is how far the mean of these draws may lie from
    the posterior mean it estimates: the Monte Carlo part of the posterior-mean map's error."""
    P = draws.shape[0]
    sd = np.std(draws.reshape(P, -1), axis=1, ddof=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return sd / np.sqrt(_valid_ess(draws, _ess(_split_chains(draws))))


def check_points(grid: np.ndarray, region: np.ndarray) -> np.ndarray:
    """Indices of the grid points :func:`map_convergence` checks: up to :data:`CHECK_POINTS`
    evenly spaced ones of those inside ``region`` (all of them when none is), so that the
    points chosen from these points are these points again."""
    inside = np.flatnonzero((grid >= region[0]) & (grid <= region[1]))
    if inside.size == 0:
        inside = np.arange(grid.size)
    return inside[np.unique(np.linspace(0, inside.size - 1, min(CHECK_POINTS, inside.size)).round().astype(int))]


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
        ``chain_gap_at_rhat_max`` (spread of the chains' means there),
        ``band_width_at_rhat_max`` (the 95 % band's width there), ``mcse_mean_max`` and
        ``mcse_mean_max_score`` (the largest Monte Carlo standard error of the posterior-mean map,
        :func:`mcse_mean`, and where it is) and ``meets_target`` (R-hat <= :data:`RHAT_TARGET`
        and both ESS >= :data:`ESS_TARGET` at every point checked).
    """
    pick = check_points(grid, region)
    draws = np.moveaxis(grid_draws[:, pick].reshape(*shape, pick.size), -1, 0)
    bulk, tail, mcse = ess_bulk(draws), ess_tail(draws), mcse_mean(draws)
    noisiest = int(np.nanargmax(mcse)) if np.any(np.isfinite(mcse)) else 0
    out = {
        "ess_bulk_min": float(np.nanmin(bulk)),
        "ess_bulk_median": float(np.nanmedian(bulk)),
        "ess_tail_min": float(np.nanmin(tail)),
        "rhat_max": float("nan"),
        "rhat_max_score": float("nan"),
        "chain_gap_at_rhat_max": float("nan"),
        "band_width_at_rhat_max": float("nan"),
        "mcse_mean_max": float(mcse[noisiest]),
        "mcse_mean_max_score": float(to_input(grid[pick[noisiest]])),
    }
    rhat = rhat_rank(draws) if shape[0] > 1 else np.full(pick.size, np.nan)
    if np.any(np.isfinite(rhat)):  # undefined with one chain, or where every draw is the same
        worst = int(np.nanargmax(rhat))
        chain_means = draws[worst].mean(axis=1)
        out["rhat_max"] = float(rhat[worst])
        out["rhat_max_score"] = float(to_input(grid[pick[worst]]))
        out["chain_gap_at_rhat_max"] = float(chain_means.max() - chain_means.min())
        lo, hi = np.quantile(draws[worst], [0.025, 0.975])
        out["band_width_at_rhat_max"] = float(hi - lo)
    out["meets_target"] = meets_target(out)
    return out


def meets_target(conv: dict) -> bool:
    """Whether a convergence summary (``rhat_max``, ``ess_bulk_min``, ``ess_tail_min``, numbers or
    numeric strings) meets R-hat <= :data:`RHAT_TARGET` and bulk and tail ESS >= :data:`ESS_TARGET`
    (False when R-hat is undefined, with one chain)."""
    rhat, bulk, tail = (float(conv[k]) for k in ("rhat_max", "ess_bulk_min", "ess_tail_min"))
    return bool(rhat <= RHAT_TARGET and min(bulk, tail) >= ESS_TARGET)


REMEDY_HMC_STEPS = 300
"""Leapfrog steps of the Hamiltonian moves that the convergence warning names as its remedy."""
REMEDY_DRAWS = 1000
"""Kept draws per chain that the convergence warning names with them (a move precedes each)."""


def remedy() -> tuple[dict, dict]:
    """The refit the convergence warning names for the Gibbs route, as (``route_options``, other
    calibrator parameters): Hamiltonian moves of :data:`REMEDY_HMC_STEPS` leapfrog steps, with
    the allocations summed out, before each of :data:`REMEDY_DRAWS` kept draws per chain.

    The sweeps move the map by small steps (given the allocations the parameters are nearly
    fixed, and vice versa), so more of them raise its effective sample size little, least on
    compressed scores, where the counts are large; the default's short Hamiltonian moves (20
    steps, from 20,000 scores a class) do not change that. Long trajectories cross the posterior
    in a few moves, as NUTS does on the same model at hundreds of times the cost. Shorter
    trajectories, run for more draws, are no cheaper way to the target. Where the chains
    converge the band is the model's: it does not cover where the model misses. A refit takes
    many times the default fit's time.

    Measurements: ``docs/evidence/coverage.md`` (the rows with ``route_options={"hmc_steps": 300}``
    beside the default's) and ``docs/user_guide/bands.md``; the measured history of the remedy is
    on ``docs/evidence/sampler_history.md``.
    """
    return {"hmc_steps": REMEDY_HMC_STEPS}, {"draws": REMEDY_DRAWS}


def warn_convergence(diagnostics: dict, inference: str, route_options: dict | None = None) -> None:
    """Warn when the map's chains disagree (:data:`MAP_RHAT_WARN`), a single sampling chain holds
    few effective draws (:data:`MAP_ESS_WARN`) or a sampler diverged.

    The warning names a remedy and what it achieved on simulated truths
    (``benchmarks/convergence_remedy.py``): for the Gibbs route the long Hamiltonian
    trajectories of :func:`remedy`, added to the fit's own ``route_options`` (the moves run on
    the compiled backend, so ``backend="numpy"`` is dropped); for other routes more draws.
    """
    conv, n_div = diagnostics["map"], diagnostics["divergences"]
    if np.isnan(conv["rhat_max"]) and inference in ("gibbs", "nuts") and conv["ess_bulk_min"] < MAP_ESS_WARN:
        warn(
            f"One chain cannot show whether chains disagree on the calibration map, and its draws hold "
            f"a bulk ESS of only {conv['ess_bulk_min']:.0f} (below {MAP_ESS_WARN}) at some score: the credible "
            "band is not reliable. Refit with chains=2 or more (R-hat then checks them) and more draws."
        )
    if conv["rhat_max"] > MAP_RHAT_WARN:
        if inference == "gibbs":
            options, params = remedy()
            # the fit's own options with the remedy's; the Hamiltonian moves need the compiled backend
            kept = {k: v for k, v in (route_options or {}).items() if not (k == "backend" and v == "numpy")}
            advice = (
                f"draws={params['draws']}, route_options={kept | options!r} runs Hamiltonian "
                f"moves of {options['hmc_steps']} leapfrog steps (the allocations summed out) before each of "
                f"{params['draws']} draws per chain; on simulated truths that met R-hat <= {RHAT_TARGET} and ESS >= "
                f"{ESS_TARGET} in 32 of 32 fits of up to 10^3 scores, 17 of 26 at 10^4 (13 of 26 from chains started "
                "apart) and 5 of 24 from 10^5 to 10^7, where most reached R-hat 1.01-1.07 and some chains "
                "stayed in separate modes, at 8-29 s a fit (benchmarks/convergence_remedy.py); either way"
            )
        else:
            advice = "More draws, tune and chains raise the ESS"
        warn(
            f"The chains disagree on the calibration map: R-hat {conv['rhat_max']:.2f} at score "
            f"{conv['rhat_max_score']:.4g}, where their means differ by {conv['chain_gap_at_rhat_max']:.3g} "
            f"against a 95% band {conv['band_width_at_rhat_max']:.3g} wide (bulk ESS down to "
            f"{conv['ess_bulk_min']:.0f}); the credible band is not reliable there. {advice}, refit with another "
            "random_state and compare the maps there before acting on the band."
        )
    if n_div > 0:
        per_class = ", ".join(
            f"{family} class {c}: {fits[f'class_{c}'].get('divergences', 0)}"
            for family, fits in diagnostics.items()
            if isinstance(fits, dict) and "class_0" in fits
            for c in (0, 1)
        )
        warn(
            f"{n_div} divergent transitions in the {inference} sampler ({per_class}) after tuning: the "
            "posterior may be biased; raise target_accept through route_options, or use inference='gibbs'."
        )
