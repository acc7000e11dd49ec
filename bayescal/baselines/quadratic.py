"""Quadratic scaling: logistic regression on the logit and its square."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal._stats import weighted_mean_std
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.baselines._logistic import logistic_fit
from bayescal.data import ScoreData

__all__ = ["QuadraticScaling"]


class QuadraticScaling(ExactExtremes, Calibrator):
    r"""Quadratic scaling: a logistic curve in the logit and its square.

    .. math:: \operatorname{logit} P(y=1 \mid t) = c + a\,t + b\,t^2,

    with :math:`t` the working scale (the logit of a probability score, or the decision
    value), fitted by weighted maximum likelihood (:func:`~bayescal.baselines._logistic.logistic_fit`,
    a ridge of :math:`10^{-10}` on the mean log-loss; on standardised :math:`t` for
    conditioning, mapped back). Platt scaling is the case :math:`b = 0`; the square lets the
    map bend where the classifier is over- or under-confident on one side only. The map need
    not be monotone. A parabola turns back beyond its vertex, so queries are clamped to the
    range of the calibration scores: outside it the map keeps its value at the nearest
    observed score.

    Parameters
    ----------
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    coef_ : ndarray of shape (2,)
        :math:`(a, b)`.
    intercept_ : float
        :math:`c`.
    t_range_ : ndarray of shape (2,)
        The working-scale range of the calibration scores (queries are clamped to it).
    standardised_ : ndarray of shape (5,)
        :math:`(\mu, s, c_z, a_z, b_z)`: the fit on :math:`z = (t - \mu)/s` (the weighted mean
        and standard deviation), which the map is evaluated from: expanded in :math:`t` the terms
        cancel where the scores sit far from 0 against their spread (decision values of
        :math:`10^8 \pm 1` lost all precision). Absent from files written before it, whose maps
        are evaluated from ``coef_`` and ``intercept_``.
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    References
    ----------
    Berta, E., Holzmüller, D., Bach, F. & Jordan, M. I. (2026). The CalArena benchmark of
    post-hoc calibration on tabular data, where quadratic scaling is among the leading methods.
    """

    weight_scale_matters = False  # the weights enter the mean log loss, normalised
    monotone = False

    _fitted_schema = {
        "t_range_": schema.array("f", (2,), order="nondecreasing"),
        "coef_": schema.array("f", (2,)),
        "intercept_": schema.scalar("f"),
        "standardised_": schema.array("f", (5,), optional=True),
    }

    def __init__(self, *, score_kind: str = "probability"):
        self.score_kind = score_kind

    def _fit(self, data: ScoreData, X=None) -> None:
        keep = data.w > 0  # zero weight drops the row, as repeating it zero times would
        t, y, w = self._fit_limits(data)[keep], data.y[keep].astype(np.float64), data.w[keep]
        self.t_range_ = np.array([t.min(), t.max()])
        mu, sd = weighted_mean_std(t, w)
        if not t.max() > t.min() or not sd > 0:  # one distinct score: only the intercept is identified
            (c,) = logistic_fit(np.ones((1, t.size)), y, w, intercept=True)
            self.coef_, self.intercept_ = np.zeros(2), float(c)
            self.standardised_ = np.array([mu, 1.0, c, 0.0, 0.0])
            return
        z = (t - mu) / sd
        a, b, c = logistic_fit(np.vstack([z, z * z, np.ones_like(z)]), y, w, intercept=True)
        self.standardised_ = np.array([mu, sd, c, a, b])
        # c + a z + b z^2 with z = (t - mu)/sd, expanded in t (reported; the map is evaluated in z)
        self.coef_ = np.array([a / sd - 2.0 * b * mu / sd**2, b / sd**2])
        self.intercept_ = float(c - a * mu / sd + b * mu**2 / sd**2)

    def _calibrate(self, t, X=None):
        t = np.clip(t, *self.t_range_)
        if getattr(self, "standardised_", None) is None:  # a file written before standardised_
            return expit(self.intercept_ + self.coef_[0] * t + self.coef_[1] * t * t)
        mu, sd, c, a, b = self.standardised_
        z = (t - mu) / sd
        return expit(c + a * z + b * z * z)
