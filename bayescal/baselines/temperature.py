"""Binary temperature scaling (Guo et al. 2017)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.baselines._logistic import logistic_fit
from bayescal.data import ScoreData

__all__ = ["TemperatureScaling"]


class TemperatureScaling(ExactExtremes, Calibrator):
    r"""Temperature scaling of the logit: one parameter, no intercept.

    .. math:: P(y=1 \mid t) = \sigma(t / T), \qquad T > 0,

    with :math:`t` the working scale (the logit of a probability score, or the decision value
    itself), fitted by weighted maximum likelihood (:func:`~bayescal.baselines._logistic.logistic_fit`
    on the single feature :math:`t`, no intercept). The map keeps the classifier's decision
    threshold (:math:`t = 0` stays at 1/2) and only sharpens (:math:`T < 1`) or softens
    (:math:`T > 1`) it. When the likelihood prefers a non-positive slope the map is the
    constant 1/2 (:math:`T = \infty`). Without an intercept it cannot move the base rate:
    where the classifier's scores are far from the prevalence (rare positives scored around
    0.2) Platt or beta calibration is the better choice.

    This is the binary case of scikit-learn's ``CalibratedClassifierCV(method="temperature")``:
    for a decision value :math:`d`, scikit-learn's softmax of the logits :math:`(-d, d)` at
    inverse temperature :math:`\beta` is :math:`\sigma(2\beta d)`, i.e. :math:`T = 1/(2\beta)`;
    for probabilities its logits :math:`(\ln(1-p), \ln p)` give :math:`\sigma(\beta\,\mathrm{logit}\,p)`.

    Parameters
    ----------
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    temperature_ : float
        :math:`T` (``inf`` for the constant map).
    coef_ : float
        :math:`1/T`.
    mean_proba_ : float
        Weighted mean of the fitted map over the calibration scores. A map calibrated at the
        share of positives :math:`\pi` (``class_prior_``) has mean :math:`\pi`; the score
        equation of the slope alone, :math:`\sum_i w_i t_i (y_i - q_i) = 0`, does not ask
        for it.
    class_prior_se_ : float
        Standard error of ``class_prior_``, :math:`\sqrt{\pi(1-\pi)/n_\mathrm{eff}}` with
        Kish's effective size :math:`n_\mathrm{eff} = (\sum w)^2 / \sum w^2`.
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    Notes
    -----
    :meth:`with_class_prior` and :meth:`estimate_class_prior` assume a map calibrated at
    ``class_prior_``; where ``mean_proba_`` is more than three standard errors from it the
    fitted map is not, and both warn: on such data their results can be far off (the
    prevalence estimated on the calibration scores themselves need not be near
    ``class_prior_``), and Platt or beta calibration, whose intercept matches the base rate,
    is the one to shift.

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern neural
    networks. ICML, PMLR 70, 1321-1330.
    """

    weight_scale_matters = False  # the weights enter the mean log loss, normalised
    monotone = True
    fixed_midpoint = True

    _fitted_schema = {
        "coef_": schema.scalar("f", low=0.0),
        "temperature_": schema.scalar("f", low=0.0, finite=False),
        "mean_proba_": schema.scalar("f", low=0.0, high=1.0, optional=True),
        "class_prior_se_": schema.scalar("f", low=0.0, optional=True),
    }

    _BASE_RATE_Z = 3.0  # standard errors of class_prior_ beyond which the map is off the base rate

    def __init__(self, *, score_kind: str = "probability"):
        self.score_kind = score_kind

    def _fit(self, data: ScoreData, X=None) -> None:
        keep = data.w > 0  # a row of weight 0 is no row (its score could make the scale 0 below)
        t, y, w = self._fit_limits(data)[keep], data.y[keep].astype(np.float64), data.w[keep]
        scale = float(np.sqrt(np.average(t * t, weights=w))) if np.any(t != 0) else 1.0
        (a,) = logistic_fit(np.ascontiguousarray((t / scale)[None, :]), y, w, intercept=False)
        self.coef_ = float(max(a, 0.0) / scale)
        self.temperature_ = float(np.inf) if self.coef_ == 0 else 1.0 / self.coef_
        self.mean_proba_ = float(np.average(expit(self.coef_ * t), weights=w))
        share = self.class_prior_  # the weighted share of positives, set before _fit
        self.class_prior_se_ = float(np.sqrt(share * (1.0 - share) * np.sum(w * w)) / np.sum(w))

    def _prior_shift_caveat(self) -> str | None:
        mean = getattr(self, "mean_proba_", None)  # absent from files saved before it was kept
        if mean is None or abs(mean - self.class_prior_) <= self._BASE_RATE_Z * self.class_prior_se_:
            return None
        return (
            f"TemperatureScaling's map averages {mean:.3g} over the calibration scores, but "
            f"{self.class_prior_:.3g} of them are positive (standard error {self.class_prior_se_:.2g}): "
            "with no intercept it is not calibrated at the training prevalence, which the prior shift "
            "and the prevalence estimate assume, so their results can be far off. Use "
            "make_calibrator('platt') or make_calibrator('beta'), which match the base rate."
        )

    def _calibrate(self, t, X=None):
        return expit(self.coef_ * self._limited(t))
