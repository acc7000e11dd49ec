"""Platt scaling."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal._validation import check_bool
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.baselines._logistic import platt_fit
from bayescal.data import ScoreData

__all__ = ["PlattScaling"]


class PlattScaling(ExactExtremes, Calibrator):
    r"""Platt scaling: a logistic curve on the working scale.

    .. math:: P(y=1 \mid t) = \sigma(a t + b)

    fitted by weighted maximum likelihood (Newton's method on the centred and scaled score,
    :func:`~bayescal.baselines._logistic.platt_fit`) against Platt's smoothed targets
    :math:`t_+ = (N_+ + 1)/(N_+ + 2)` for positives and :math:`t_- = 1/(N_- + 2)` for
    negatives (``smooth_targets=True``), which keeps the fit finite on separable data.
    The working scale is the logit of probability scores, or the decision value itself.

    Parameters
    ----------
    score_kind : {"probability", "decision"}
    smooth_targets : bool, default True
        Use Platt's smoothed targets; ``False`` fits the 0/1 labels.

    Attributes
    ----------
    coef_, intercept_ : float
        :math:`a` and :math:`b` of the map on the working scale.
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    References
    ----------
    Platt, J. (1999). Probabilistic outputs for support vector machines and comparisons to
    regularized likelihood methods. Advances in Large Margin Classifiers, 61-74.
    """

    monotone = False  # monotone, but decreasing when the fitted slope is negative
    _fitted_schema = {"coef_": schema.scalar("f"), "intercept_": schema.scalar("f")}

    def __init__(self, *, score_kind: str = "probability", smooth_targets: bool = True):
        self.score_kind = score_kind
        self.smooth_targets = smooth_targets

    def _fit(self, data: ScoreData, X=None) -> None:
        check_bool(self.smooth_targets, "smooth_targets")
        t, y, w = self._fit_limits(data), data.y, data.w
        n1 = w[y == 1].sum()
        n0 = w[y == 0].sum()
        if self.smooth_targets:
            target = np.where(y == 1, (n1 + 1.0) / (n1 + 2.0), 1.0 / (n0 + 2.0))
        else:
            target = y.astype(np.float64)
        self.coef_, self.intercept_ = platt_fit(t, target, w)

    def _calibrate(self, t, X=None):
        return expit(self.coef_ * self._limited(t) + self.intercept_)
