"""Spline calibration: logistic regression on a natural cubic spline basis of the logit."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy.special import expit, log_expit
from sklearn.model_selection import StratifiedKFold

from bayescal import _schema as schema
from bayescal._stats import robust_spread, weighted_quantile
from bayescal._typing import RandomStateLike
from bayescal._validation import check_integer, check_number, random_generator
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.data import ScoreData

__all__ = ["SplineCalibration", "natural_cubic_basis", "penalised_logistic"]

_MAX_CV_ROWS = 10_000  # cross-validation runs on a random subsample of at most this many rows
_Z_REACH = 1e4
"""In the fit a score counts as at most this many robust spreads from the median (see ``_fit``)."""


def natural_cubic_basis(t: np.ndarray, knots: np.ndarray) -> np.ndarray:
    r"""The truncated-power basis of natural cubic splines with the given knots, without the constant.

    For knots :math:`\xi_1 < \dots < \xi_K` the columns are :math:`t` and, for
    :math:`k = 1, \dots, K-2`, :math:`d_k(t) - d_{K-1}(t)` with
    :math:`d_k(t) = [(t - \xi_k)_+^3 - (t - \xi_K)_+^3] / (\xi_K - \xi_k)` (Hastie, Tibshirani
    & Friedman 2009, eq. 5.4-5.5). With a constant they span the cubic splines with these
    knots that are linear beyond :math:`\xi_1` and :math:`\xi_K`. Beyond them the columns are
    evaluated as that line, from their value and slope (:func:`_boundary_slopes`) at the
    boundary knot: the difference of two cubes of a far score would lose every digit.

    Parameters
    ----------
    t : array-like of shape (n,)
    knots : array-like of shape (K,)
        Strictly increasing finite knots, ``K >= 2``.

    Returns
    -------
    ndarray of shape (n, K - 1)
    """
    t = np.asarray(t, dtype=np.float64)
    knots = np.asarray(knots, dtype=np.float64)
    if knots.ndim != 1 or knots.size < 2 or not np.all(np.isfinite(knots)) or np.any(np.diff(knots) <= 0):
        raise ValueError(
            f"knots={knots.tolist()!r:.80} must be at least 2 finite, strictly increasing values: "
            "sort them and drop duplicates."
        )
    last = knots[-1]
    inside = np.clip(t, knots[0], last)  # where (t - xi_K)_+ = 0

    def d(k: int) -> np.ndarray:
        return np.maximum(inside - knots[k], 0.0) ** 3 / (last - knots[k])

    d_last = d(knots.size - 2)
    basis = np.column_stack([t] + [d(k) - d_last for k in range(knots.size - 2)])
    above = t > last  # below the first knot the columns after the first are 0, as at the knot
    basis[above, 1:] += (t[above] - last)[:, None] * _boundary_slopes(knots)[1][1:]
    return basis


def _boundary_slopes(knots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""Slopes of the columns of :func:`natural_cubic_basis` below the first knot and beyond the last.

    Below :math:`\xi_1` only the column :math:`t` varies (slope 1); beyond :math:`\xi_K` the
    column :math:`d_k - d_{K-1}` has slope :math:`3(\xi_{K-1} - \xi_k)`.
    """
    left = np.zeros(knots.size - 1)
    left[0] = 1.0
    return left, np.concatenate([[1.0], 3.0 * (knots[-2] - knots[:-2])])


def penalised_logistic(
    D: np.ndarray, y: np.ndarray, w: np.ndarray, C: float, start: np.ndarray | None = None
) -> tuple[np.ndarray, float]:
    r"""Ridge logistic regression with an unpenalised intercept, scikit-learn's objective.

    Minimises :math:`C \sum_i w_i \ell(y_i, \eta_i) + \tfrac12 \lVert\beta\rVert^2`,
    :math:`\eta = D\beta + \beta_0`, :math:`\ell` the log-loss (as
    ``sklearn.linear_model.LogisticRegression(C=C)`` with ``sample_weight=w``), by Newton's
    method with backtracking (Armijo) line search until the Newton decrement is below
    :math:`10^{-12}`; the objective is strictly convex in :math:`\beta`. ``start`` (the
    coefficients followed by the intercept) warm-starts it.

    Returns
    -------
    coef : ndarray of shape (p,)
    intercept : float
    """
    C = check_number(C, "C", low=0.0, inclusive=False)
    n, p = D.shape
    W = float(w.sum())
    positive = float(w @ (y == 1)) / W if W > 0 else np.nan
    if not 0.0 < positive < 1.0:  # the intercept's optimum would be infinite
        raise ValueError("penalised_logistic needs weight on both classes: got a single class or zero weight.")
    X = np.column_stack([D, np.ones(n)])
    wn = w / W
    lam = np.full(p + 1, 1.0 / (C * W))
    lam[-1] = 0.0
    yf = y.astype(np.float64)

    def objective(b: np.ndarray) -> float:
        eta = X @ b
        return float(-(wn @ (yf * log_expit(eta) + (1.0 - yf) * log_expit(-eta))) + 0.5 * (lam * b * b).sum())

    if start is None:
        b = np.zeros(p + 1)
        b[-1] = float(np.log((wn @ yf) / (1.0 - wn @ yf)))
    else:
        b = np.array(start, dtype=np.float64)
    f = objective(b)
    for _ in range(100):
        mu = expit(X @ b)
        g = X.T @ (wn * (mu - yf)) + lam * b
        H = (X * (wn * mu * (1.0 - mu))[:, None]).T @ X + np.diag(lam) + 1e-12 * np.eye(p + 1)
        step = np.linalg.solve(H, g)
        decrement = float(g @ step)
        if decrement < 1e-12:
            break
        size = 1.0
        f_new = objective(b - step)
        while f_new > f - 1e-4 * size * decrement and size > 1e-8:
            size /= 2
            f_new = objective(b - size * step)
        if f_new > f:  # no decrease along the Newton direction: at the optimum to rounding
            break
        b, f = b - size * step, f_new
    return b[:-1], float(b[-1])


class SplineCalibration(ExactExtremes, Calibrator):
    r"""Spline calibration: a penalised logistic regression on a natural cubic spline of the logit.

    .. math:: \operatorname{logit} P(y=1 \mid t) = c + \sum_j \beta_j N_j(t),

    :math:`N_j` the natural cubic spline basis (:func:`natural_cubic_basis`) of the working
    scale :math:`t` with :math:`K` knots at the 5 %, ..., 95 % quantiles of the calibration
    scores (evenly spaced in probability), so the map is smooth, follows bends of the
    classifier's miscalibration, and is linear in :math:`t` (a Platt curve) beyond the outer
    knots. The basis is built on the standardised score :math:`z = (t - m)/a`, with :math:`m`
    the weighted median and :math:`a = \min(\hat\sigma, \mathrm{IQR}/1.349)` the robust
    spread of :math:`t` (a few far scores move neither), and each basis column is centred and
    scaled by its mean and standard deviation over :math:`z` clipped to the boundary knots
    (beyond them the basis is linear). Their coefficients are penalised by
    :math:`\lVert\beta\rVert^2 / 2` against :math:`C` times the weighted log-loss
    (:func:`penalised_logistic`, scikit-learn's ``LogisticRegression(C)`` objective; intercept
    not penalised), so a far score, even one far beyond the others, leaves the penalty's
    meaning, and with it the map of the other scores, unchanged. In the fit a score more than
    :math:`10^4` robust spreads from the median counts as at that distance (the map is
    evaluated at its true position). Sample weights enter the log-loss, of the fit and of the
    cross-validation; the knots and the basis's standardisation are of the scores alone, so
    integer weights are not the same as repeated rows (nor are the folds). :math:`K`
    (``n_knots``) and :math:`C` (``Cs``) are chosen together by stratified cross-validation of
    the weighted log-loss (on a random subsample of 10 000 rows when there are more, drawn
    within each class so that each keeps at least ``cv`` rows, its rows' weights divided by
    their class's sampling rate), with ``cv`` folds, or as many as the smaller class has rows
    (of positive weight) when that is fewer; the chosen pair is refitted on all data. When
    the smaller class has a single row of positive weight, or the scores fewer than three
    distinct values, there is no cross-validation: the fewest knots with ``C = 1``. The map
    need not be monotone.

    Parameters
    ----------
    n_knots : sequence of int, default (3, 4, 5, 7)
        Candidate numbers of knots (at least 3; fewer when the scores have fewer distinct values).
    Cs : sequence of float, default (0.01, 0.1, 1, 10, 100, 1000, 10000)
        Candidate inverse penalties.
    cv : int, default 5
    score_kind : {"probability", "decision"}, default "probability"
    random_state : None, int or numpy Generator
        Shuffles the cross-validation folds (and draws the subsample).

    Attributes
    ----------
    knots_ : ndarray of shape (K,)
        Working-scale knots of the chosen basis.
    z_centre_scale_ : ndarray of shape (2,)
        Weighted median and robust spread of the working-scale scores; the basis is built
        on :math:`z = (t - \text{median}) / \text{spread}`.
    z_knots_ : ndarray of shape (K,)
        The knots on the :math:`z` scale.
    C_ : float
        The chosen inverse penalty.
    cv_scores_ : ndarray of shape (len(n_knots), len(Cs))
        Mean held-out log-loss of each pair (NaN when not cross-validated).
    coef_ : ndarray of shape (K - 1,)
        Coefficients of :func:`natural_cubic_basis` of :math:`z` with ``z_knots_`` (with at
        most two distinct scores, no knots: the coefficient of :math:`z`, or none).
    intercept_ : float
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    References
    ----------
    Hastie, T., Tibshirani, R. & Friedman, J. (2009). The Elements of Statistical Learning,
    2nd ed., section 5.2.1 (natural cubic splines). Springer.
    Berta, E., Holzmüller, D., Bach, F. & Jordan, M. I. (2026). The CalArena benchmark of
    post-hoc calibration on tabular data, where spline calibration is among the leading methods.
    """

    monotone = False
    _min_samples = 4
    _min_per_class = 2

    _fitted_schema = {
        "coef_": schema.array("f", ("c",)),
        "intercept_": schema.scalar("f"),
        "knots_": schema.array("f", ("k",), order="increasing"),
        "z_knots_": schema.array("f", ("k",), order="increasing"),
        "z_centre_scale_": schema.array("f", (2,)),
        "C_": schema.scalar("f", low=0.0),
        "cv_scores_": schema.array("f", ("i", "j"), allow_nan=True),
    }

    def __init__(
        self,
        *,
        n_knots: int | Sequence[int] = (3, 4, 5, 7),
        Cs: float | Sequence[float] = (0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 10000.0),
        cv: int = 5,
        score_kind: str = "probability",
        random_state: RandomStateLike = None,
    ):
        self.n_knots = n_knots
        self.Cs = Cs
        self.cv = cv
        self.score_kind = score_kind
        self.random_state = random_state

    def _check_params(self) -> tuple[list[int], list[float], int]:
        knots = [check_integer(k, "n_knots", 3) for k in np.atleast_1d(self.n_knots).tolist()]
        message = f"Cs={self.Cs!r} must be a sequence of positive numbers, e.g. (0.1, 1, 10)."
        try:
            candidates = np.atleast_1d(np.asarray(self.Cs, dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(message) from None
        if candidates.ndim != 1 or not candidates.size or not np.all(np.isfinite(candidates) & (candidates > 0)):
            raise ValueError(message)
        Cs = [float(c) for c in candidates]
        if not knots:
            raise ValueError("n_knots must hold at least one number of knots, e.g. (3, 5).")
        return knots, Cs, check_integer(self.cv, "cv", 2)

    def _check_fitted(self) -> None:
        """``cv_scores_`` is the grid of ``n_knots`` x ``Cs``, a row all NaN (knots not tried) or
        all finite, and ``C_`` the penalty of its smallest score (1 when none was scored)."""
        super()._check_fitted()
        n_knots, Cs, _ = self._check_params()
        scores = self.cv_scores_
        if scores.shape != (len(n_knots), len(Cs)):
            raise ValueError(
                f"cv_scores_ has shape {scores.shape}, not (len(n_knots), len(Cs)) = {(len(n_knots), len(Cs))}."
            )
        nan = np.isnan(scores)
        if np.any(nan.any(axis=1) & ~nan.all(axis=1)):
            raise ValueError("cv_scores_ has a row with NaN beside scores: each number of knots is scored for every C.")
        chosen = self._select(scores, n_knots, Cs)[1]
        if self.C_ != chosen:
            raise ValueError(f"C_={self.C_} is not the penalty {chosen} that cv_scores_ selects.")

    @staticmethod
    def _cv_rows(y: np.ndarray, n_splits: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Rows of the cross-validation sample (sorted) and each class's sampling rate.

        All rows when there are at most ``_MAX_CV_ROWS``; else a sample drawn within each class,
        of the class's share of ``_MAX_CV_ROWS`` but never fewer than ``n_splits`` rows (or all of
        the class), so that every training fold holds both classes. Dividing a sampled row's
        weight by its class's rate keeps the classes' balance, and the loss, that of all rows.
        """
        counts = np.bincount(y, minlength=2)
        if y.size <= _MAX_CV_ROWS:
            return np.arange(y.size), np.ones(2)
        take = np.minimum(counts, np.maximum(n_splits, np.round(_MAX_CV_ROWS * counts / y.size).astype(int)))
        sub = np.concatenate([rng.choice(np.flatnonzero(y == c), take[c], replace=False) for c in (0, 1)])
        return np.sort(sub), take / counts

    @staticmethod
    def _select(scores: np.ndarray, n_knots, Cs) -> tuple[int, float]:
        """The number of knots and the penalty of the smallest cross-validated loss in ``scores``
        (``n_knots`` x ``Cs``, NaN where not scored); the fewest knots and C = 1 when none was scored."""
        if np.all(np.isnan(scores)):
            return int(min(n_knots)), 1.0
        i, j = (int(v) for v in np.unravel_index(np.nanargmin(scores), scores.shape))
        return int(n_knots[i]), float(Cs[j])

    @staticmethod
    def _knots(t: np.ndarray, k: int) -> np.ndarray:
        knots = np.unique(np.quantile(t, np.linspace(0.05, 0.95, k)))
        if knots.size < 3:  # few distinct values: spread the knots over them
            u = np.unique(t)
            knots = u[np.unique(np.linspace(0, u.size - 1, min(k, u.size)).round().astype(int))]
        return knots

    @staticmethod
    def _design(t: np.ndarray, knots: np.ndarray, centre=None, scale=None):
        """The basis of ``t``, each column centred and scaled by its mean and standard deviation
        over ``t`` clipped to the boundary knots (given, or computed here), so that a far score,
        on the line beyond a boundary knot, changes neither."""
        basis = natural_cubic_basis(t, knots)
        if centre is None:
            clipped = natural_cubic_basis(np.clip(t, knots[0], knots[-1]), knots)
            centre = clipped.mean(axis=0)
            scale = clipped.std(axis=0)
            scale[scale == 0] = 1.0
        return (basis - centre) / scale, centre, scale

    @staticmethod
    def _centre_scale(t: np.ndarray, w: np.ndarray) -> tuple[float, float]:
        r"""Weighted median and robust spread :math:`\min(\hat\sigma, \mathrm{IQR}/1.349)` of ``t``
        (:func:`~bayescal._stats.robust_spread`; 1 when ``t`` has no spread)."""
        spread = robust_spread(t, w)
        return float(weighted_quantile(t, 0.5, w)), spread if spread > 0 else 1.0

    def _fit(self, data: ScoreData, X=None) -> None:
        n_knots, Cs, cv = self._check_params()
        keep = data.w > 0
        t, y, w = self._fit_limits(data)[keep], data.y[keep], data.w[keep]
        mu, sd = self._centre_scale(t, w)
        # knots and basis on a standardised scale, for conditioning; a score farther than _Z_REACH
        # robust spreads counts as at that distance, where the line beyond the boundary knots has
        # long saturated (such a score adds no loss when its label is the one the line points to),
        # so that however far it lies the Newton steps stay well conditioned
        z = np.clip((t - mu) / sd, -_Z_REACH, _Z_REACH)
        n_splits = min(cv, int(np.bincount(y, minlength=2).min()))
        scores = np.full((len(n_knots), len(Cs)), np.nan)
        if n_splits >= 2 and np.unique(z).size >= 3:
            rng = random_generator(self.random_state, where=self._name)
            sub, rate = self._cv_rows(y, n_splits, rng)
            zs, ys, ws = z[sub], y[sub], w[sub] / rate[y[sub]]
            folds = list(
                StratifiedKFold(n_splits, shuffle=True, random_state=int(rng.integers(2**31 - 1))).split(zs, ys)
            )
            order = np.argsort(Cs)  # strongest penalty first, each fit warm-started from the previous one
            totals = np.zeros_like(scores)
            for i, k in enumerate(n_knots):
                knots = self._knots(z, k)
                if knots.size < 3:
                    continue
                for train, test in folds:
                    D, c0, s0 = self._design(zs[train], knots)
                    Dt, _, _ = self._design(zs[test], knots, c0, s0)
                    start = None
                    for j in order:
                        beta, b0 = penalised_logistic(D, ys[train], ws[train], Cs[j], start)
                        start = np.append(beta, b0)
                        p = np.clip(expit(Dt @ beta + b0), 1e-15, 1 - 1e-15)
                        loss = -np.sum(ws[test] * (ys[test] * np.log(p) + (1 - ys[test]) * np.log1p(-p)))
                        totals[i, j] += loss / ws.sum()
                scores[i] = totals[i]  # a number of knots is scored once all its folds are in
        k, C = self._select(scores, n_knots, Cs)
        knots = self._knots(z, k)
        if knots.size < 3:  # at most two distinct scores: a line in t (Platt's family), or a constant
            knots = np.empty(0)
            D = z[:, None] if np.unique(z).size == 2 else np.empty((z.size, 0))
            coef, b0 = penalised_logistic(D, y, w, C)
            self.coef_, self.intercept_ = coef, float(b0)
        else:
            D, centre, scale = self._design(z, knots)
            coef, b0 = penalised_logistic(D, y, w, C)
            # fold the standardisations into raw-basis coefficients on the z scale
            self.coef_ = coef / scale
            self.intercept_ = float(b0 - self.coef_ @ centre)
        self.knots_ = knots * sd + mu
        self.z_knots_ = knots
        self.z_centre_scale_ = np.array([mu, sd])
        self.C_ = float(C)
        self.cv_scores_ = scores

    def _calibrate(self, t, X=None):
        mu, sd = self.z_centre_scale_
        z = (self._limited(np.asarray(t, dtype=np.float64)) - mu) / sd
        knots = self.z_knots_
        if knots.size < 3:
            return expit(self.intercept_ + (self.coef_[0] * z if self.coef_.size else 0.0 * z))
        # linear beyond the boundary knots: evaluate at the knots and extend with the slopes of
        # eta there (a far score's product with a basis column could overflow)
        zc = np.clip(z, knots[0], knots[-1])
        eta = self.intercept_ + natural_cubic_basis(zc, knots) @ self.coef_
        left, right = (slopes @ self.coef_ for slopes in _boundary_slopes(knots))
        with np.errstate(invalid="ignore", over="ignore"):
            ext = np.where(z < zc, left * (z - zc), np.where(z > zc, right * (z - zc), 0.0))
        return expit(eta + np.nan_to_num(ext, nan=0.0))
