r"""Exact 0 and 1 probabilities for calibrators whose map is a smooth function of the working scale.

The working scale clips probabilities to :math:`[\epsilon, 1 - \epsilon]` with
:math:`\epsilon` = :data:`~bayescal.data.PROB_EPS` (1e-12) before the logit, so an exact 0 or 1
sits at :math:`\mathrm{logit}\,\epsilon \approx -27.6` (or :math:`+27.6`). Classifiers whose
probabilities are fractions of votes (k nearest neighbours, trees, forests) give exact 0 and 1
to many rows of both classes, while their other scores lie within a few units of 0: to Platt,
temperature, beta, quadratic or spline calibration those rows are points of enormous leverage,
the fitted slope flattens and the whole map is pulled towards the base rate.

:class:`ExactExtremes` puts them next to the observed scores instead: an exact 0 at half the
smallest score above 0, an exact 1 at half the distance from the largest score below 1 to 1
(with no score strictly inside (0, 1), at 1/4 and 3/4), on the probability scale, and clips
every score to those levels when fitting and predicting, so the map stays monotone in the
score, and a new score below the level of an exact 0 (half the smallest score above 0) is read
as an exact 0 is (a score between that level and the smallest observed one keeps its own value). Scores
within :data:`~bayescal.data.PROB_EPS` of 0 or 1 count as exact, as the working scale already
makes them one value. Without exact 0 or 1 in the fitted data nothing changes.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, logit

from bayescal import _schema as schema
from bayescal.data import WORKING_ENDS, ScoreData

__all__ = ["ExactExtremes", "extreme_limits"]

_T_ZERO, _T_ONE = WORKING_ENDS
"""The working-scale values of an exact 0 and an exact 1."""


def extreme_limits(t: np.ndarray, w: np.ndarray) -> np.ndarray:
    r"""Working-scale levels of exact 0 and exact 1 probability scores, ``[lower, upper]``.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale probability scores (:func:`~bayescal.data.to_working`).
    w : ndarray of shape (n,)
        Their weights; rows of weight 0 are ignored.

    Returns
    -------
    ndarray of shape (2,)
        ``lower`` is :math:`\mathrm{logit}(m/2)` with :math:`m` the smallest probability
        strictly inside (0, 1) (at most 1/2), when some score is an exact 0, else
        :math:`-\infty`; ``upper`` likewise, :math:`\mathrm{logit}(1 - m'/2)` with
        :math:`1 - m'` the largest probability below 1.
    """
    t = t[w > 0]
    inner = t[(t > _T_ZERO) & (t < _T_ONE)]
    lowest = min(expit(inner.min()), 0.5) if inner.size else 0.5  # smallest probability above 0
    highest = min(expit(-inner.max()), 0.5) if inner.size else 0.5  # smallest distance below 1
    lower = float(logit(lowest / 2.0)) if np.any(t <= _T_ZERO) else -np.inf
    upper = float(-logit(highest / 2.0)) if np.any(t >= _T_ONE) else np.inf
    return np.array([lower, upper])


class ExactExtremes:
    """Mixin for a calibrator that fits a smooth map of the working scale: exact 0 and 1
    probability scores at :func:`extreme_limits`' levels (module docstring).

    The calibrator calls :meth:`_fit_limits` on its data at the start of ``_fit`` and fits on
    the working-scale scores it returns, and reads its scores through :meth:`_limited` in
    ``_calibrate``.
    """

    score_kind: str
    _fitted_schema = {
        # absent from files saved before it was kept: no limits then
        "t_limits_": schema.array("f", (2,), finite=False, allow_nan=False, order="nondecreasing", optional=True),
    }

    def _fit_limits(self, data: ScoreData) -> np.ndarray:
        """Set ``t_limits_`` from the fitted data and return its working-scale scores clipped to them."""
        if self.score_kind != "probability":
            self.t_limits_ = np.array([-np.inf, np.inf])
            return data.t
        self.t_limits_ = extreme_limits(data.t, data.w)
        return self._limited(data.t)

    def _limited(self, t: np.ndarray) -> np.ndarray:
        """Working-scale scores clipped to ``t_limits_``."""
        limits = getattr(self, "t_limits_", None)
        if limits is None or not np.isfinite(limits).any():
            return t
        return np.clip(t, limits[0], limits[1])
