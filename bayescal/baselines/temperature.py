"""Binary temperature scaling (Guo et al. 2017)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal.base import Calibrator
from bayescal.baselines._logistic import logistic_fit
from bayescal.data import ScoreData

__all__ = ["TemperatureScaling"]


class TemperatureScaling(Calibrator):
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
    }

    def __init__(self, *, score_kind: str = "probability"):
        self.score_kind = score_kind

    def _fit(self, data: ScoreData, X=None) -> None:
        t, y, w = data.t, data.y.astype(np.float64), data.w
        scale = float(np.sqrt(np.average(t * t, weights=w))) if np.any(t != 0) else 1.0
        (a,) = logistic_fit(np.ascontiguousarray((t / scale)[None, :]), y, w, intercept=False)
        self.coef_ = float(max(a, 0.0) / scale)
        self.temperature_ = float(np.inf) if self.coef_ == 0 else 1.0 / self.coef_

    def _calibrate(self, t, X=None):
        return expit(self.coef_ * t)
