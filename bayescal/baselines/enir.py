"""ENIR: an ensemble of near-isotonic regressions."""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

from bayescal import _schema as schema
from bayescal._interp import interp_sorted
from bayescal._validation import check_integer
from bayescal.base import Calibrator
from bayescal.baselines.neariso import neariso_path
from bayescal.data import ScoreData, distinguishable, from_working

__all__ = ["ENIR"]

_LOGLIK_CLIP = 1e-15
_SELECTIONS = ("average", "best")


class ENIR(Calibrator):
    r"""Ensemble of Near-Isotonic Regressions (Naeini & Cooper 2016).

    Parameters
    ----------
    score_kind : {"probability", "decision"}
        Scale of the scores; ENIR interpolates on that scale.
    max_models : int, default 100
        Largest number of path breakpoints used as ensemble members.
    selection : {"average", "best"}, default "average"
        Average the models with relative-likelihood weights, or keep the best one.

    Attributes
    ----------
    knots_ : ndarray of shape (k,)
        Distinct training scores (input scale) where the calibration curve starts or ends a
        constant stretch (interior knots of a stretch are dropped: same interpolant).
    values_ : ndarray of shape (k,)
        Calibrated probability at each knot (the weighted ensemble, or the best model).
    lambdas_, bic_, df_, weights_ : ndarray of shape (m,)
        Penalty, BIC, degrees of freedom and normalised weight of each ensemble member.

    Notes
    -----
    The algorithm:

    1. Sort the training scores :math:`s` (on the input scale: probabilities, or decision
       values) and collapse ties: each distinct score :math:`u_i` gets the total weight
       :math:`w_i` of its samples and their weighted mean label :math:`z_i`.
    2. Compute the exact nearly-isotonic regression path of :math:`z` with weights
       :math:`w` (:func:`bayescal.baselines.neariso.neariso_path`, Tibshirani, Hoefling &
       Tibshirani 2011): fits :math:`\beta(\lambda)` from the data (:math:`\lambda = 0`)
       to the isotonic regression, with breakpoints :math:`0 = \lambda_0 < \dots < \lambda_K`.
       Neighbours with equal :math:`z` stay fused along the whole path, so the path is
       computed on those runs (weights summed), which gives the same fits.
    3. Candidate models are the fits at the breakpoints :math:`\lambda_1, \dots, \lambda_K`
       (the interpolating :math:`\lambda_0` fit is dropped as in the authors' code, unless it
       is the only one), evenly thinned to at most ``max_models`` (both ends kept).
    4. Each fit is clipped to [0, 1] and scored by the authors' BIC

       .. math:: \mathrm{BIC} = -2 \sum_i \left[ n_{1i} \log\beta_i + n_{0i} \log(1 - \beta_i) \right]
                 + \mathrm{df} \, (\log N + \log 2\pi),

       with :math:`n_{1i}, n_{0i}` the weights of positives and negatives at :math:`u_i`,
       :math:`N` the total weight (the :math:`\log 2\pi` term is the authors' code's), and
       df the number of fitted levels of the clipped fit, counted as runs of equal adjacent
       values as in the authors' code (the number of fused pieces, Tibshirani et al.'s
       estimate of the degrees of freedom). Models of infinite BIC
       (a fitted 0 or 1 contradicted by a label) are dropped.
    5. Models are weighted by relative likelihood :math:`\exp(-(\mathrm{BIC}_m - \min \mathrm{BIC}) / 2)`;
       ``selection="best"`` keeps only the lowest BIC.
    6. A new score is mapped by linear interpolation of each model between the two
       neighbouring training scores (constant beyond the training range), and the models
       are averaged with their weights. Interpolation is linear in the fitted values, so
       the ensemble is stored as one averaged curve on the knots :math:`u`.

    The map is not monotone in general (``monotone = False``). Unlike the authors' MATLAB
    code, fitted values are not further smoothed towards the bin's mean score, and no elbow
    pruning is applied (their ``predict`` uses the unpruned ensemble as well).

    References
    ----------
    Naeini, M. P. & Cooper, G. F. (2016). Binary classifier calibration using an ensemble
    of near isotonic regression models. IEEE ICDM, 360-369.
    Tibshirani, R. J., Hoefling, H. & Tibshirani, R. (2011). Nearly-isotonic regression.
    Technometrics, 53(1), 54-61.
    """

    monotone = False
    _fitted_schema = {
        "knots_": schema.array("f", ("k",), order="increasing"),
        "values_": schema.array("f", ("k",), low=0.0, high=1.0),
        "lambdas_": schema.array("f", ("m",), low=0.0, max_size=schema.int_param("max_models")),
        "bic_": schema.array("f", ("m",), max_size=schema.int_param("max_models")),
        "df_": schema.array("i", ("m",), low=1, max_size=schema.int_param("max_models")),
        "weights_": schema.array(
            "f", ("m",), low=0.0, high=1.0, sums_to_one=True, max_size=schema.int_param("max_models")
        ),
    }

    def __init__(self, *, score_kind: str = "probability", max_models: int = 100, selection: str = "average"):
        self.score_kind = score_kind
        self.max_models = max_models
        self.selection = selection

    def _check_params(self) -> None:
        if self.selection not in _SELECTIONS:
            raise ValueError(f"selection={self.selection!r} must be one of {_SELECTIONS}.")
        check_integer(self.max_models, "max_models", 1)

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        keep = data.w > 0
        # the scores as _calibrate reads them: ties there are ties here
        s = distinguishable(data.scores[keep], self.score_kind)
        knots, inverse = np.unique(s, return_inverse=True)
        w1 = np.bincount(inverse, weights=data.w[keep] * data.y[keep], minlength=knots.shape[0])
        wt = np.bincount(inverse, weights=data.w[keep], minlength=knots.shape[0])
        # neighbours with equal mean labels are fused along the whole path: fit on those runs
        z = w1 / wt
        run = np.concatenate([[0], np.cumsum(z[1:] != z[:-1])])
        run_w1 = np.bincount(run, weights=w1)
        run_wt = np.bincount(run, weights=wt)
        path = neariso_path(run_w1 / run_wt, run_wt)

        lambdas = path.lambdas[1:] if path.lambdas.shape[0] > 1 else path.lambdas
        if lambdas.shape[0] > self.max_models:
            lambdas = lambdas[np.unique(np.round(np.linspace(0, lambdas.shape[0] - 1, self.max_models)).astype(int))]
        penalty = np.log(wt.sum()) + np.log(2 * np.pi)

        scored = []  # (lambda, BIC, df) of every model of finite BIC
        for lam in lambdas:
            starts, value = path.groups(lam)
            fit = np.clip(value, 0.0, 1.0)
            g1 = np.add.reduceat(run_w1, starts)  # sums within groups: no cancellation of light ones
            g0 = np.add.reduceat(run_wt - run_w1, starts)
            # the clip keeps a fit rounded to 0 or 1 beside a class of tiny weight finite (weights of
            # 1e-220 beside 1 made every model's likelihood 0); exact 0/1 fits of one-class groups
            # are unaffected (xlogy(0, .) = 0)
            q = np.clip(fit, _LOGLIK_CLIP, 1.0 - _LOGLIK_CLIP)
            loglik = float(np.sum(xlogy(g1, q) + xlogy(g0, 1.0 - q)))
            df = 1 + int(np.count_nonzero(np.diff(fit)))
            bic = -2.0 * loglik + df * penalty
            if np.isfinite(bic):
                scored.append((lam, bic, df))
        # never empty: the path ends without violations, on the runs' means (finite likelihood)
        lams, bics, dfs = (np.array(v) for v in zip(*scored))
        if self.selection == "best":
            weights = (np.arange(bics.shape[0]) == np.argmin(bics)).astype(np.float64)
        else:
            weights = np.exp(-(bics - bics.min()) / 2.0)
            weights /= weights.sum()
        curve = np.zeros(run_wt.shape[0])
        for lam, weight in zip(lams[weights > 0], weights[weights > 0]):
            curve += weight * np.clip(path.fitted(lam), 0.0, 1.0)
        values = curve[run]
        # keep the ends of every constant stretch: the same interpolant on fewer knots
        changes = values[1:] != values[:-1]
        keep = np.concatenate([[True], changes]) | np.concatenate([changes, [True]])
        self.knots_ = knots[keep]
        self.values_ = values[keep]
        self.lambdas_ = lams
        self.bic_ = bics
        self.df_ = dfs.astype(np.int64)
        self.weights_ = weights

    def _calibrate(self, t, X=None):
        return interp_sorted(from_working(t, self.score_kind), self.knots_, self.values_)
