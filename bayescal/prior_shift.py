r"""Prevalence of new, unlabelled scores under label shift.

Under label shift the class score densities :math:`f_0, f_1` stay and the prevalence moves
from the calibration data's :math:`\pi` to an unknown :math:`\pi'`. A map :math:`q` fitted at
:math:`\pi` gives the likelihood ratio :math:`f_1/f_0 = [q/(1-q)]\,[(1-\pi)/\pi]`, so the
new scores :math:`s_1..s_n` have, up to a term free of :math:`\pi'`, the log-likelihood

.. math::

    \ell(\pi') = \sum_i \log\big(\pi' A_i + (1 - \pi') B_i\big), \qquad
    A_i = q(s_i)(1 - \pi), \quad B_i = (1 - q(s_i))\,\pi,

concave in :math:`\pi'`. :func:`prior_mle` maximises it (the fixed point of the EM of
Saerens, Latinne & Decaestecker 2002) with a likelihood-ratio interval;
:func:`prior_posterior` gives the posterior of :math:`\pi'` per posterior draw of a
class-conditional calibrator and mixes the draws. Both are reached through
:meth:`bayescal.base.Calibrator.estimate_class_prior`.

References
----------
Saerens, M., Latinne, P. & Decaestecker, C. (2002). Adjusting the outputs of a classifier to
new a priori probabilities: a simple procedure. Neural Computation 14(1), 21-41.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr
from scipy.optimize import brentq
from scipy.stats import beta as beta_dist
from scipy.stats import chi2
from sklearn.base import clone

from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import (
    check_ci_prob,
    check_integer,
    check_number,
    check_probabilities,
    check_sample_weight,
    random_generator,
)
from bayescal._warnings import warn
from bayescal.base import atom_scores
from bayescal.data import to_working

if TYPE_CHECKING:
    from bayescal.base import Calibrator

__all__ = ["bootstrap_interval", "prior_mle", "prior_posterior", "saerens_em"]

_MAX_REDRAWS = 1000  # bootstrap replicates drawn in a row before giving up (_fittable_rows)
_MAX_POINTS = 512  # scores binned to at most twice this many points for the grid posterior (_compress)
_GRID = 401


def _ab(q: np.ndarray, base: Any) -> tuple[np.ndarray, np.ndarray]:
    return q * (1.0 - base), (1.0 - q) * base


def _check_q_base(q: Any, base: Any) -> tuple[np.ndarray, float]:
    """``q`` as a new 1-d float64 array of probabilities and ``base`` as a float in (0, 1), or a
    ValueError naming them."""
    return check_probabilities(q, name="q"), check_number(base, "base", low=0.0, high=1.0, inclusive=False)


def saerens_em(q: np.ndarray, base: float, *, tol: float = 1e-10, max_iter: int = 100_000) -> float:
    r"""Prevalence of new scores by the EM of Saerens, Latinne & Decaestecker (2002).

    Iterates :math:`\pi'_{k+1} = \frac1n \sum_i q_i^{(k)}`, where :math:`q_i^{(k)}` is
    :math:`q_i` moved from the class prior ``base`` to :math:`\pi'_k` (the odds multiplied by
    :math:`\frac{\pi'_k/(1-\pi'_k)}{\pi/(1-\pi)}`), from :math:`\pi'_0 = \pi` until two
    iterates differ by less than ``tol``. Each step raises the likelihood of the module
    docstring; the steps shrink where the maximum is near 0 or 1, where
    :func:`prior_mle` finds the same fixed point directly.

    Parameters
    ----------
    q : ndarray of shape (n,)
        Calibrated P(y=1) at the new scores, fitted at class prior ``base``.
    base : float
        The calibration data's prevalence :math:`\pi`, in (0, 1).
    tol : float, default=1e-10
        Stop when two iterates differ by less than this.
    max_iter : int, default=100000
        At most this many steps; reaching it warns and returns the last iterate.

    Returns
    -------
    float
        The last iterate :math:`\pi'_k`.
    """
    from bayescal.base import shift_odds

    q, base = _check_q_base(q, base)
    tol = check_number(tol, "tol", low=0.0, inclusive=False)
    max_iter = check_integer(max_iter, "max_iter")
    p = base
    for _ in range(max_iter):
        new = float(np.mean(shift_odds(q, base, p)))
        if abs(new - p) < tol:
            return new
        p = new
    warn(
        f"saerens_em stopped after max_iter={max_iter} steps with the last step still above tol={tol:g}: "
        "the estimate may be short of the maximum. Raise max_iter, or use prior_mle, which finds the "
        "maximum directly."
    )
    return p


def prior_mle(q: np.ndarray, base: float, *, ci_prob: float = 0.95, weights: np.ndarray | None = None) -> xr.Dataset:
    r"""Maximum-likelihood prevalence of new scores with a likelihood-ratio interval.

    Parameters
    ----------
    q : ndarray of shape (n,)
        Calibrated P(y=1) at the new scores, fitted at class prior ``base``.
    base : float
        The calibration data's prevalence :math:`\pi`.
    ci_prob : float
    weights : ndarray of shape (n,), optional
        Multiplicities of the scores.

    Returns
    -------
    xarray.Dataset
        As :meth:`bayescal.base.Calibrator.estimate_class_prior` (``method="em"``).
    """
    q, base = _check_q_base(q, base)
    ci_prob = check_ci_prob(ci_prob)
    w = check_sample_weight(weights, q.size, name="weights")
    n = float(w.sum())
    q, w = q[w > 0], w[w > 0]  # a row of weight 0 is no row (0 log 0 would be NaN at q = 0 or 1)
    A, B = _ab(q, base)
    if np.all(np.abs(A - B) <= 1e-12 * (A + B)):  # q is the training prior at every score
        warn(
            "The calibrated probabilities equal the training prevalence at every new score: they say "
            "nothing about the new prevalence, so the estimate is the training prevalence and the interval [0, 1]."
        )
        return _result(np.array([[base]]), base, 0.0, 1.0, method="em", ci_prob=ci_prob,
                       ci_kind="likelihood_ratio", training_prior=base, n=n)  # fmt: skip

    def loglik(p: float) -> float:
        with np.errstate(divide="ignore"):
            return float(w @ np.log(p * A + (1.0 - p) * B))

    def score(p: float) -> float:
        return float(w @ ((A - B) / (p * A + (1.0 - p) * B)))

    eps = 1e-12
    if score(eps) <= 0:
        mle = 0.0
    elif score(1.0 - eps) >= 0:
        mle = 1.0
    else:
        mle = brentq(score, eps, 1.0 - eps, xtol=1e-14)
    top = loglik(mle)
    drop = 0.5 * chi2.ppf(ci_prob, 1)

    def excess(p: float) -> float:
        return top - loglik(p) - drop

    lower = 0.0 if mle <= 0 or excess(0.0) <= 0 else brentq(excess, 0.0, mle, xtol=1e-12)
    upper = 1.0 if mle >= 1 or excess(1.0) <= 0 else brentq(excess, mle, 1.0, xtol=1e-12)
    return _result(
        np.array([[mle]]),
        mle,
        lower,
        upper,
        method="em",
        ci_prob=ci_prob,
        ci_kind="likelihood_ratio",
        training_prior=float(base),
        n=n,
    )


def bootstrap_interval(
    calibrator: Calibrator,
    estimate: xr.Dataset,
    t: np.ndarray,
    calibration: tuple[ArrayLike, ArrayLike] | tuple[ArrayLike, ArrayLike, ArrayLike | None],
    *,
    n_bootstrap: int | None = None,
    ci_prob: float = 0.95,
    random_state: RandomStateLike = None,
) -> xr.Dataset:
    r"""Percentile bootstrap interval of the maximum-likelihood prevalence.

    Each replicate resamples the calibration rows and the new working-scale scores ``t``
    with replacement, refits a clone of ``calibrator`` and recomputes :func:`prior_mle`'s
    estimate (with the replicate's own share of positives as :math:`\pi`), so the
    uncertainty of the fitted map enters the interval. ``estimate`` (the result of
    :func:`prior_mle`) keeps its estimate; its interval and draws are replaced.
    """
    from bayescal.data import from_working, prepare_data

    n_bootstrap = check_integer(200 if n_bootstrap is None else n_bootstrap, "n_bootstrap", 2)
    if not isinstance(calibration, (tuple, list)) or len(calibration) not in (2, 3):
        raise ValueError(
            "calibration must be (scores, y) or (scores, y, sample_weight): the data the calibrator was fitted on."
        )
    data = prepare_data(
        calibration[0],
        calibration[1],
        calibration[2] if len(calibration) == 3 else None,
        score_kind=calibrator.score_kind,
        pos_label=calibrator.classes_[1],
    )
    rng = random_generator(random_state)
    new_scores = from_working(t, calibrator.score_kind)
    reps = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        rows = _fittable_rows(calibrator, data, rng)
        w = data.w[rows]
        fitted = clone(calibrator)
        if fitted.get_params().get("random_state", 0) is None:  # a calibrator that draws: seeded from rng
            fitted.set_params(random_state=int(rng.integers(2**32)))
        fitted.fit(data.scores[rows], data.y[rows], None if not data.weighted else w)
        q = fitted.predict_proba(new_scores[rng.integers(0, t.size, t.size)])[:, 1]
        reps[b] = float(prior_mle(q, fitted.class_prior_, ci_prob=ci_prob)["class_prior_estimate"])
    lower, upper = np.quantile(reps, [(1 - ci_prob) / 2, (1 + ci_prob) / 2])
    return _result(
        reps[None, :],
        float(estimate["class_prior_estimate"]),
        float(lower),
        float(upper),
        method="em",
        ci_prob=ci_prob,
        ci_kind="bootstrap",
        training_prior=estimate.attrs["training_prior"],
        n=estimate.attrs["n_scores"],
    )


def _fittable_rows(calibrator: Calibrator, data: Any, rng: np.random.Generator) -> np.ndarray:
    """Rows of one bootstrap replicate of the calibration data that ``calibrator`` can fit: each
    class with at least the calibrator's least number of rows and a positive weight (redrawn
    otherwise, at most ``_MAX_REDRAWS`` times)."""
    per_class = max(1, calibrator._min_per_class)
    for _ in range(_MAX_REDRAWS):
        rows = rng.integers(0, data.n, data.n)
        y, w = data.y[rows], data.w[rows]
        if all(np.sum(y == c) >= per_class and np.sum(w[y == c]) > 0 for c in (0, 1)):
            return rows
    n1 = int(np.sum(data.y == 1))
    raise ValueError(
        f"The calibration data hold {data.n - n1} negatives and {n1} positives: {_MAX_REDRAWS:,} bootstrap "
        f"replicates in a row had too few of a class for {type(calibrator).__name__} (at least {per_class} each, "
        "with a positive weight). Pass more calibration data, or leave out calibration= for an interval from the "
        "fitted map alone."
    )


def _compress(t: np.ndarray, exact: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct working-scale scores with their counts; more than ``_MAX_POINTS`` are binned.

    The scores in ``exact`` (the calibrator's atoms, whose map differs from its neighbours')
    stay points of their own with their counts. Of the others, more than ``_MAX_POINTS``
    distinct ones are binned: the bins' edges are those of ``_MAX_POINTS`` equal-width bins
    and of ``_MAX_POINTS`` bins of equal numbers of distinct scores, together, so a bin is
    either narrow or holds few distinct scores, and one far outlying score can neither sweep
    the bulk into one bin (equal widths alone) nor be averaged with it (equal counts alone).
    A bin is represented by the mean of its scores; a bin of one distinct score by that score.
    """
    vals, counts = np.unique(t, return_counts=True)
    at_atom = np.isin(vals, exact)
    if vals.size - np.count_nonzero(at_atom) <= _MAX_POINTS:
        return vals, counts.astype(np.float64)
    atoms, atom_counts = vals[at_atom], counts[at_atom]
    vals, counts = vals[~at_atom], counts[~at_atom]
    by_width = np.linspace(vals[0], vals[-1], _MAX_POINTS + 1)[1:-1]
    by_count = vals[np.linspace(0, vals.size, _MAX_POINTS + 1).astype(np.int64)[1:-1]]
    edges = np.union1d(by_width, by_count)
    which = np.searchsorted(edges, vals, side="right")  # bin of each distinct score
    size = edges.size + 1
    n = np.bincount(which, weights=counts, minlength=size)
    s = np.bincount(which, weights=counts * vals, minlength=size)
    distinct = np.bincount(which, minlength=size)
    keep = n > 0
    points = np.where(
        distinct == 1, vals[np.minimum(np.searchsorted(which, np.arange(size)), vals.size - 1)], s / np.maximum(n, 1)
    )
    return np.concatenate([points[keep], atoms]), np.concatenate([n[keep], atom_counts.astype(np.float64)])


def _grid_posterior(
    A: np.ndarray, B: np.ndarray, w: np.ndarray, grid: np.ndarray, prior: tuple[float, float]
) -> np.ndarray:
    """Per-draw posterior densities of pi' on ``grid`` (normalised by the trapezoid rule), (S, G)."""
    with np.errstate(divide="ignore"):
        ll = np.stack([np.log(g * A + (1.0 - g) * B) @ w for g in grid], axis=1)  # (S, G)
        ll = ll + beta_dist.logpdf(grid, *prior)[None, :]
    ll -= ll.max(axis=1, keepdims=True)
    dens = np.exp(ll)
    return dens / np.trapezoid(dens, grid, axis=1)[:, None]


def _cdf(dens: np.ndarray, grid: np.ndarray) -> np.ndarray:
    cells = 0.5 * (dens[..., 1:] + dens[..., :-1]) * np.diff(grid)
    cdf = np.concatenate([np.zeros(dens.shape[:-1] + (1,)), np.cumsum(cells, axis=-1)], axis=-1)
    return cdf / cdf[..., -1:]


def prior_posterior(
    calibrator: Calibrator,
    t: np.ndarray,
    base: np.ndarray,
    *,
    ci_prob: float = 0.95,
    prior: tuple[float, float] | None = None,
    max_draws: int | None = None,
    random_state: RandomStateLike = None,
) -> xr.Dataset:
    r"""Posterior of the prevalence of new scores, mixed over a calibrator's posterior draws.

    Per posterior draw :math:`d` (``max_draws`` of them, thinned evenly within each chain)
    the posterior :math:`p_d(\pi') \propto \mathrm{Beta}(\pi'; a, b)\, e^{\ell_d(\pi')}` is
    evaluated on a grid of 401 points (a first pass over [0, 1], a second over the region
    holding all but :math:`10^{-9}` of the mixture), and the posterior of :math:`\pi'` is
    the mixture :math:`\frac1D \sum_d p_d`: its mean is the estimate, its quantiles the
    equal-tailed interval (exact on the grid, linear within cells), and one draw per used
    posterior draw is taken by inverse CDF.

    Parameters
    ----------
    calibrator : fitted calibrator
        Its ``_map_draws`` gives the map draws at the working-scale ``t``.
    t : ndarray of shape (n,)
        Working-scale new scores.
    base : ndarray of shape (chain, draw)
        The class prior of each map draw.
    ci_prob, prior, max_draws, random_state
        As in :meth:`bayescal.base.Calibrator.estimate_class_prior`.
    """
    ci_prob = check_ci_prob(ci_prob)
    max_draws = check_integer(200 if max_draws is None else max_draws, "max_draws")
    prior = (1.0, 1.0) if prior is None else prior
    if isinstance(prior, (str, bytes)) or np.ndim(prior) != 1 or len(prior) != 2:
        raise ValueError(
            f"prior={prior!r} must be the two Beta parameters (a, b) of the new prevalence's prior, e.g. "
            "(1, 1) for a uniform one (a single prevalence is what with_class_prior takes)."
        )
    a, b = (check_number(v, "prior", low=0.0, inclusive=False) for v in prior)
    atoms = to_working(atom_scores(calibrator), calibrator.score_kind)
    pts, w = _compress(np.asarray(t, dtype=np.float64), atoms)
    q = np.clip(calibrator._map_draws(pts), 0.0, 1.0)  # (C, D, m)
    C, D = q.shape[:2]
    chains = min(C, max_draws)  # at most max_draws in all: fewer chains if it is below their number
    step = max(1, int(np.ceil(D / (max_draws // chains))))
    q, base = q[:chains, ::step], np.asarray(base)[:chains, ::step]
    shape = q.shape[:2]
    A, B = _ab(q.reshape(-1, q.shape[-1]), base.reshape(-1, 1))
    eps = 1e-9
    grid = np.linspace(eps, 1.0 - eps, _GRID)
    cdf = _cdf(_grid_posterior(A, B, w, grid, (a, b)).mean(axis=0), grid)
    i_lo = max(0, int(np.searchsorted(cdf, 1e-9)) - 2)
    i_hi = min(grid.size - 1, int(np.searchsorted(cdf, 1.0 - 1e-9)) + 2)
    grid = np.linspace(grid[i_lo], grid[i_hi], _GRID)
    dens = _grid_posterior(A, B, w, grid, (a, b))
    mix = dens.mean(axis=0)
    mix_cdf = _cdf(mix, grid)
    estimate = float(np.trapezoid(grid * mix, grid) / np.trapezoid(mix, grid))
    lower, upper = np.interp([(1 - ci_prob) / 2, (1 + ci_prob) / 2], mix_cdf, grid)
    rng = random_generator(random_state)
    cdfs = _cdf(dens, grid)
    u = np.asarray(rng.random(cdfs.shape[0]))
    draws = np.array([np.interp(u[i], cdfs[i], grid) for i in range(cdfs.shape[0])]).reshape(shape)
    return _result(
        draws,
        estimate,
        float(lower),
        float(upper),
        method="posterior",
        ci_prob=ci_prob,
        ci_kind="eti",
        training_prior=float(np.mean(base)),
        n=float(w.sum()),
    )


def _result(
    draws: np.ndarray,
    estimate: float,
    lower: float,
    upper: float,
    *,
    method: str,
    ci_prob: float,
    ci_kind: str,
    training_prior: float,
    n: float,
) -> xr.Dataset:
    return xr.Dataset(
        {
            "class_prior": (("chain", "draw"), draws),
            "class_prior_estimate": float(estimate),
            "class_prior_ci": ("ci_bound", [float(lower), float(upper)]),
        },
        coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1]), "ci_bound": ["lower", "upper"]},
        attrs={
            "method": method,
            "ci_prob": float(ci_prob),
            "ci_kind": ci_kind,
            "training_prior": training_prior,
            "n_scores": n,
        },
    )
