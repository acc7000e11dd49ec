"""Beta calibration (Kull, Silva Filho & Flach 2017)."""

from __future__ import annotations

import numpy as np
from scipy.optimize import brentq
from scipy.special import expit, log_expit, logit

from bayescal import _schema as schema
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.baselines._logistic import centred_fit, logistic_fit
from bayescal.data import PROB_EPS, ScoreData

__all__ = ["BetaCalibration"]

_T_MAX = float(logit(1.0 - PROB_EPS))


class BetaCalibration(ExactExtremes, Calibrator):
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
    with :math:`b = 0`. The authors keep the refit's remaining slope whatever its sign; here a
    slope still negative after the refit is dropped too (leaving the constant map at the
    weighted positive rate). Here the same rule also applies to ``"ab"``
    (with both terms dropped it is the constant 1/2) and to ``"am"`` (:math:`a < 0` leaves
    the intercept only), which the authors' package does not constrain; so every fitted
    map is non-decreasing. On data whose true map bends back down (e.g. the linear SVM of
    Naeini et al.) the unconstrained fit can be much better calibrated; monotone by design,
    this class gives it up.

    Fitting: weighted maximum likelihood by Newton's method (:func:`logistic_fit`: scipy's
    ``trust-exact``, warm-started above 20 000 rows) with a ridge of :math:`10^{-10}` on
    the slopes of the mean log-loss (not on the intercept), which keeps separable data
    finite and is otherwise negligible (the authors use scikit-learn's
    ``LogisticRegression(C=99999999999)``, the same idea).

    Scores: the features come from the working scale :math:`t` as
    :math:`\ln p = -\ln(1+e^{-t})` and :math:`\ln(1-p) = -\ln(1+e^{t})`, computed without
    rounding :math:`p` to 0 or 1. For probabilities :math:`t` is the logit of the score
    clipped to :math:`[10^{-12}, 1-10^{-12}]` (:data:`bayescal.data.PROB_EPS`), so exact 0
    and 1 stay finite; the authors clip at the machine epsilon :math:`2.2 \cdot 10^{-16}`
    instead. The two agree on scores at least :math:`10^{-12}` from 0 and 1. A score of exactly
    0 or 1 in the calibration data is first moved next to the observed scores
    (:mod:`~bayescal.baselines._extremes`: an exact 0 to half the smallest score above 0), so
    its feature is that score's, where the authors' has :math:`\ln(2.2 \cdot 10^{-16}) = -36.0`,
    which moves their fitted :math:`a, b, c` and so the map at every score, not only near 0
    and 1. Decision values
    :math:`d` are mapped through the logistic function, :math:`p = \sigma(d)`, i.e.
    :math:`t = d`.

    Parameters
    ----------
    parameters : {"abm", "am", "ab"}, default "abm"
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    a_, b_, c_ : float
        Fitted :math:`a, b \ge 0` and :math:`c` in
        :math:`\operatorname{logit} P = a \ln p - b \ln(1-p) + c` (for ``"ab"``,
        :math:`c = (a - b) \ln 2`).
    m_ : float
        The score (on the probability scale) mapped to 1/2; NaN when the map never crosses 1/2.
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    References
    ----------
    Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beta calibration: a well-founded and
    easily implemented improvement on logistic calibration for binary classifiers.
    AISTATS, PMLR 54, 623-631.
    Kull, M., Silva Filho, T. M. & Flach, P. (2017). Beyond sigmoids: how to obtain
    well-calibrated probabilities from binary classifiers with beta calibration.
    Electronic Journal of Statistics 11(2), 5052-5080.
    """

    weight_scale_matters = False  # the weights enter the mean log loss, normalised
    monotone = True
    _fitted_schema = {
        "a_": schema.scalar("f", low=0.0),
        "b_": schema.scalar("f", low=0.0),
        "c_": schema.scalar("f"),
        "m_": schema.scalar("f", low=0.0, high=1.0, allow_nan=True),
    }

    def __init__(self, *, parameters: str = "abm", score_kind: str = "probability"):
        self.parameters = parameters
        self.score_kind = score_kind

    def _check_params(self) -> None:
        if self.parameters not in ("abm", "am", "ab"):
            raise ValueError(f"parameters={self.parameters!r} must be 'abm', 'am' or 'ab'.")

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        t, y, w = self._fit_limits(data), data.y.astype(np.float64), data.w
        # slope rows: ln(p/(1-p)) = t for "am"; ln p and -ln(1-p) = t - ln p otherwise
        # (ln(1-p) = ln p - t has an absolute error ~1e-16 where p ~ 1); "ab" shifts both by ln 2
        if self.parameters == "am":
            rows = [t]
        else:
            lp = log_expit(t)
            shift = np.log(2.0) if self.parameters == "ab" else 0.0
            rows = [lp + shift, t - lp - shift]
        intercept = self.parameters != "ab"
        slopes = list(range(len(rows)))
        while True:  # drop the first negative slope (a before b) and refit, until none is left
            if intercept:  # centred rows, so a common offset of the scores does not move the fit
                kept, c = centred_fit([rows[j] for j in slopes], y, w)
            elif slopes:
                kept, c = logistic_fit(np.vstack([rows[j] for j in slopes]), y, w, intercept=False), 0.0
            else:  # "ab" with both slopes dropped: the constant map 1/2
                kept, c = np.empty(0), 0.0
            negative = [j for j, coef in zip(slopes, kept) if coef < 0]
            if not negative:
                break
            slopes.remove(negative[0])
        coef = np.zeros(len(rows))
        coef[slopes] = kept
        a, b = (coef[0], coef[0]) if self.parameters == "am" else (coef[0], coef[1])
        self.a_, self.b_ = float(a), float(b)
        # fold the ln 2 shifts of "ab" into the intercept: a (ln p + ln 2) - b (ln(1-p) + ln 2)
        self.c_ = float(c + (a - b) * np.log(2.0)) if self.parameters == "ab" else float(c)
        self.m_ = self._midpoint()

    def _midpoint(self) -> float:
        def eta(t):
            return self.a_ * log_expit(t) - self.b_ * log_expit(-t) + self.c_

        lo, hi = -_T_MAX, _T_MAX
        if eta(lo) * eta(hi) > 0:
            return float("nan")
        return float(expit(brentq(eta, lo, hi, xtol=1e-12)))

    def _calibrate(self, t, X=None):
        t = self._limited(t)
        lp = log_expit(t)
        return expit((self.a_ - self.b_) * lp + self.b_ * t + self.c_)  # a ln p - b (ln p - t) + c
