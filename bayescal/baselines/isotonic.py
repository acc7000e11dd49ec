"""Isotonic regression calibration (Zadrozny & Elkan 2002)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import isotonic_regression

from bayescal import _schema as schema
from bayescal._interp import interp_sorted, search_sorted
from bayescal.base import Calibrator
from bayescal.data import ScoreData, distinguishable, from_working

__all__ = ["IsotonicCalibrator"]


class IsotonicCalibrator(Calibrator):
    r"""Isotonic calibration: the non-decreasing map closest to the labels.

    Algorithm:

    1. Collapse ties: the distinct training scores :math:`u_1 < \dots < u_J` get the
       summed weights :math:`W_j = \sum_{s_i = u_j} w_i` and the weighted label means
       :math:`\bar y_j`.
    2. Pool adjacent violators (``scipy.optimize.isotonic_regression``) solves

       .. math:: \min_{f_1 \le \dots \le f_J} \sum_j W_j (\bar y_j - f_j)^2,

       which equals the weighted least-squares isotonic fit to the raw labels.
    3. Interpolate between the knots :math:`(u_j, f_j)` on the input scale (probability or
       decision value, as scikit-learn's ``IsotonicRegression`` does): ``"linear"`` joins
       them by straight lines; ``"step"`` gives each score the value of the nearest knot
       (a jump midway between two knots of different level). Outside
       :math:`[u_1, u_J]` the map is constant (:math:`f_1` below, :math:`f_J` above).

    Only the knots where the fitted level changes (the first and last distinct score of each
    PAV block) are kept: both interpolations are unchanged by dropping the others.

    Parameters
    ----------
    interpolation : {"linear", "step"}, default "linear"
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    knots_ : ndarray of shape (k,)
        Knot positions on the input scale.
    values_ : ndarray of shape (k,)
        Fitted probability at each knot.

    References
    ----------
    Zadrozny, B. & Elkan, C. (2002). Transforming classifier scores into accurate multiclass
    probability estimates. KDD, 694-699.
    Ayer, M., Brunk, H. D., Ewing, G. M., Reid, W. T. & Silverman, E. (1955). An empirical
    distribution function for sampling with incomplete information. Ann. Math. Statist. 26,
    641-647.
    """

    weight_scale_matters = False  # weighted means of labels over pooled blocks
    monotone = True
    _predict_params = ("score_kind", "interpolation")  # prediction reads them as fitted
    _fitted_schema = {
        "knots_": schema.array("f", ("k",), order="increasing"),
        "values_": schema.array("f", ("k",), low=0.0, high=1.0, order="nondecreasing"),
    }

    def __init__(self, *, interpolation: str = "linear", score_kind: str = "probability"):
        self.interpolation = interpolation
        self.score_kind = score_kind

    def _check_params(self) -> None:
        if self.interpolation not in ("linear", "step"):
            raise ValueError(f"interpolation={self.interpolation!r} must be 'linear' or 'step'.")

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        # scores the working scale cannot tell apart (probabilities within 1e-12 of 0 or 1) are ties:
        # prediction reads them at one point, so a knot between them could never be reached
        uniq, inverse = np.unique(distinguishable(data.scores, self.score_kind), return_inverse=True)
        wu = np.bincount(inverse, weights=data.w, minlength=uniq.size)
        pos = np.bincount(inverse, weights=data.w * data.y, minlength=uniq.size)
        # zero-weight distinct scores carry no information: leave them out of the fit
        keep = wu > 0
        uniq, wu, pos = uniq[keep], wu[keep], pos[keep]
        fitted = isotonic_regression(pos / wu, weights=wu, increasing=True).x
        # keep the first and last knot of every constant run
        change = np.diff(fitted) != 0
        knot = np.ones(uniq.size, dtype=bool)
        knot[1:-1] = change[:-1] | change[1:]
        self.knots_ = uniq[knot]
        self.values_ = np.clip(fitted[knot], 0.0, 1.0)

    def _calibrate(self, t, X=None):
        s = from_working(t, self.score_kind)
        if self.interpolation == "linear":
            return interp_sorted(s, self.knots_, self.values_)
        mids = 0.5 * (self.knots_[1:] + self.knots_[:-1])
        return self.values_[search_sorted(mids, s, side="right")]
