"""Beta calibration (Kull, Silva Filho & Flach 2017)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq, minimize
from scipy.special import expit, log_expit, logit

from bayescal.base import Calibrator
from bayescal.data import PROB_EPS, ScoreData

__all__ = ["BetaCalibration"]

_T_MAX = float(logit(1.0 - PROB_EPS))
_RIDGE = 1e-10


def _logistic_fit(Z: np.ndarray, y: np.ndarray, w: np.ndarray, intercept: bool) -> np.ndarray:
    """Weighted logistic regression by Newton's method (trust region), tiny ridge on the slopes.

    Minimises :math:`\\sum_i w_i \\ell(y_i, z_i^\\top\\beta + \\beta_0) / \\sum_i w_i
    + \\tfrac{\\lambda}{2} \\lVert\\beta\\rVert^2` with :math:`\\lambda = 10^{-10}`; returns
    ``[beta..., beta_0]`` (``beta_0 = 0`` without intercept).
    """
    A = np.column_stack([Z, np.ones(len(y))]) if intercept else Z
    k = A.shape[1]
    ridge = np.full(k, _RIDGE)
    if intercept:
        ridge[-1] = 0.0
    wn = w / w.sum()

    def fun(beta):
        eta = A @ beta
        return float(-(wn * (y * log_expit(eta) + (1 - y) * log_expit(-eta))).sum() + 0.5 * (ridge * beta**2).sum())

    def jac(beta):
        return A.T @ (wn * (expit(A @ beta) - y)) + ridge * beta

    def hess(beta):
        p = expit(A @ beta)
        return (A * (wn * p * (1 - p))[:, None]).T @ A + np.diag(ridge)

    res = minimize(fun, np.zeros(k), jac=jac, hess=hess, method="trust-exact", options={"gtol": 1e-10})
    return res.x if intercept else np.append(res.x, 0.0)


class BetaCalibration(Calibrator):
    r"""Beta calibration: a logistic map in :math:`\ln p` and :math:`\ln(1-p)`.

    The three-parameter family (``parameters="abm"``) is

    .. math::

        P(y=1 \mid p) = \frac{1}{1 + 1 / \left(e^{c} \, p^{a} / (1-p)^{b}\right)},
        \qquad \operatorname{logit} P = a \ln p - b \ln(1-p) + c,

    i.e. logistic regression on the features :math:`(\ln p, -\ln(1-p))` with an intercept
    (:math:`m`, the score mapped to 1/2, solves :math:`a \ln m - b \ln(1-m) + c = 0`). The
    sub-families, as in the authors' ``betacal`` package:

    * ``"am"`` (:math:`a = b`): one feature :math:`\ln(p/(1-p))` with an intercept, i.e.
      logistic calibration on the logit (Platt scaling of the logit, without smoothed targets);
    * ``"ab"`` (:math:`m = 1/2`): features :math:`\ln 2p` and :math:`\ln 2(1-p)` without an
      intercept, :math:`a` and :math:`-b` being their coefficients.

    Monotonicity: the map is non-decreasing exactly when :math:`a, b \ge 0`. As in the
    authors' code for ``"abm"``, when the fit gives :math:`a < 0` the model is refitted with
    :math:`a = 0` (the :math:`\ln p` term dropped), otherwise when :math:`b < 0` it is refitted
    with :math:`b = 0`. Here the same rule also applies to ``"ab"`` (drop the term whose
    coefficient is negative) and to ``"am"`` (:math:`a < 0` leaves the intercept only, a
    constant map), which the authors' package does not constrain; so every fitted map is
    non-decreasing.

    Fitting: weighted maximum likelihood by Newton's method (``scipy.optimize.minimize``,
    ``trust-exact``) with a ridge of :math:`10^{-10}` on the slopes of the mean log-loss (not
    on the intercept), which keeps separable data finite and is otherwise negligible
    (the authors use scikit-learn's ``LogisticRegression(C=99999999999)``, the same
    idea).

    Scores: the features come from the working scale :math:`t` as
    :math:`\ln p = -\ln(1+e^{-t})` and :math:`\ln(1-p) = -\ln(1+e^{t})`, computed without
    rounding :math:`p` to 0 or 1. For probabilities :math:`t` is the logit of the score
    clipped to :math:`[10^{-12}, 1-10^{-12}]` (:data:`bayescal.data.PROB_EPS`), so exact 0
    and 1 stay finite; the authors clip at the machine epsilon :math:`2.2 \cdot 10^{-16}`
    instead, which differs only for scores within :math:`10^{-12}` of 0 or 1. Decision values
    :math:`d` are mapped through the logistic function, :math:`p = \sigma(d)`, i.e.
    :math:`t = d`.

    Parameters
    ----------
    parameters : {"abm", "am", "ab"}, default "abm"
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    a_, b_, c_ : float
        Fitted :math:`a, b \ge 0` and intercept :math:`c` (0 for ``"ab"``).
    m_ : float
        The score (on the probability scale) mapped to 1/2; NaN when the map never crosses 1/2.

    References
    ----------
    Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beta calibration: a well-founded and
    easily implemented improvement on logistic calibration for binary classifiers.
    AISTATS, PMLR 54, 623-631.
    Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beyond sigmoids: how to obtain
    well-calibrated probabilities from binary classifiers with beta calibration.
    Electronic Journal of Statistics 11(2), 5052-5080.
    """

    monotone = True

    def __init__(self, *, parameters: str = "abm", score_kind: str = "probability"):
        self.parameters = parameters
        self.score_kind = score_kind

    def _fit(self, data: ScoreData, X=None) -> None:
        if self.parameters not in ("abm", "am", "ab"):
            raise ValueError(f"parameters={self.parameters!r} must be 'abm', 'am' or 'ab'.")
        lp, l1p = log_expit(data.t), log_expit(-data.t)
        y, w = data.y.astype(np.float64), data.w
        intercept = self.parameters != "ab"
        shift = np.log(2.0) if self.parameters == "ab" else 0.0  # "ab" uses ln 2p and ln 2(1-p)
        if self.parameters == "am":
            Z = (lp - l1p)[:, None]
        else:
            Z = np.column_stack([lp + shift, -(l1p + shift)])
        active = list(range(Z.shape[1]))
        while True:  # drop the first negative slope (a before b) and refit, until none is left
            beta = _logistic_fit(Z[:, active], y, w, intercept)
            negative = [j for j, coef in zip(active, beta[:-1]) if coef < 0]
            if not negative:
                break
            active.remove(negative[0])
        coef = np.zeros(Z.shape[1])
        coef[active] = beta[:-1]
        a, b = (coef[0], coef[0]) if self.parameters == "am" else (coef[0], coef[1])
        self.a_, self.b_ = float(a), float(b)
        self.c_ = float(beta[-1] + (a - b) * shift)  # fold the ln 2 shifts into the intercept
        self.m_ = self._midpoint()

    def _midpoint(self) -> float:
        def eta(t):
            return self.a_ * log_expit(t) - self.b_ * log_expit(-t) + self.c_

        lo, hi = -_T_MAX, _T_MAX
        if eta(lo) * eta(hi) > 0:
            return float("nan")
        return float(expit(brentq(eta, lo, hi, xtol=1e-12)))

    def _calibrate(self, t, X=None):
        return expit(self.a_ * log_expit(t) - self.b_ * log_expit(-t) + self.c_)
