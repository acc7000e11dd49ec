"""Histogram binning (Zadrozny & Elkan 2001; Naeini et al. 2014)."""

from __future__ import annotations

import numpy as np

from bayescal import _schema as schema
from bayescal._interp import search_sorted
from bayescal.base import Calibrator
from bayescal.data import ScoreData, distinguishable, to_working

__all__ = ["HistogramBinning", "equal_mass_bins"]


def equal_mass_bins(x: np.ndarray, w: np.ndarray, n_bins: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Equal-mass bins of a weighted sample that never split tied values.

    The distinct values :math:`u_1 < \dots < u_J` carry the summed weights :math:`W_j`;
    with :math:`C_j = \sum_{i \le j} W_i` and :math:`W = C_J`, value :math:`u_j` goes to bin
    :math:`\min(B-1, \lfloor B (C_{j-1} + C_j) / (2W) \rfloor)`, the bin holding the middle
    of its weight. Without ties and with unit weights this is the plain split of the sorted
    sample into :math:`B` consecutive chunks whose sizes differ by at most one. A tie
    block heavier than :math:`W/B` may swallow a whole bin: bins that end up with no
    value are dropped, so fewer than ``n_bins`` bins can come back.

    Parameters
    ----------
    x : ndarray of shape (n,)
    w : ndarray of shape (n,)
        Non-negative weights with a positive sum.
    n_bins : int

    Returns
    -------
    uniq : ndarray of shape (J,)
        The distinct values of ``x``, sorted.
    bin_of_uniq : ndarray of shape (J,)
        Bin index (0 .. K-1, consecutive) of each distinct value.
    inverse : ndarray of shape (n,)
        Index into ``uniq`` of each sample.
    """
    uniq, inverse = np.unique(x, return_inverse=True)
    wu = np.bincount(inverse, weights=w, minlength=uniq.size)
    cum = np.cumsum(wu)
    mid = (cum - 0.5 * wu) / cum[-1]
    raw = np.minimum(n_bins - 1, np.floor(n_bins * mid)).astype(np.int64)
    # renumber the occupied bins 0 .. K-1 (raw is non-decreasing)
    bin_of_uniq = np.concatenate([[0], np.cumsum(np.diff(raw) > 0)])
    return uniq, bin_of_uniq, inverse


class HistogramBinning(Calibrator):
    r"""Histogram binning: the fraction of positives in the score's bin.

    The score axis is cut into bins :math:`I_1, \dots, I_B`; a score in bin :math:`I_b`
    gets

    .. math:: \hat p_b = \frac{\sum_{i: s_i \in I_b} w_i y_i}{\sum_{i: s_i \in I_b} w_i}.

    Bins:

    * ``strategy="quantile"`` (equal frequency, the default): bins of equal training weight
      from the sorted scores (see :func:`equal_mass_bins`). Tied scores always share a bin
      (each distinct value goes to the bin holding the middle of its weight), so heavy ties
      can leave fewer bins than asked for. The boundary between two bins is the midpoint,
      on the input scale, between the largest training score of the lower bin and the
      smallest of the upper bin.
    * ``strategy="uniform"`` (equal width): bins :math:`[k/B, (k+1)/B)` of the probability
      (the last closed at 1) for ``score_kind="probability"``; for decision values, equal
      widths between the smallest and largest training score. An empty bin predicts the
      value of the non-empty bin with the nearest centre (the lower one on a tie), so the
      map stays a step function of the observed data and never falls back to an arbitrary
      constant.

    Scores outside the training range fall in the first or last bin. ``n_bins="auto"``
    takes :math:`\lceil N^{1/3} \rceil` bins (Naeini et al. 2014), :math:`N` being the total
    weight. Sample weights are frequency weights: an integer weight equals repeating the
    row. The map is a step function and need not be monotone.

    Parameters
    ----------
    n_bins : int or "auto", default 10
    strategy : {"quantile", "uniform"}, default "quantile"
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    edges_ : ndarray, one edge between each two bins
        Interior bin boundaries on the working scale (a score exactly on a boundary goes to
        the upper bin).
    bin_values_ : ndarray, one value per bin
        Calibrated probability of each bin.
    bin_weights_ : ndarray, one value per bin
        Training weight in each bin (0 for an empty bin).
    n_bins_ : int
        Number of bins actually used.

    References
    ----------
    Zadrozny, B. & Elkan, C. (2001). Obtaining calibrated probability estimates from decision
    trees and naive Bayesian classifiers. ICML, 609-616.
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
    Bayesian non-parametric approach. arXiv:1401.3390 (the ``"auto"`` rule, Table 1).
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2015). Obtaining well calibrated
    probabilities using Bayesian binning. AAAI, 2901-2907.
    """

    monotone = False
    _fitted_schema = {
        "edges_": schema.array("f", ("k-1",), order="nondecreasing", max_size=schema.int_param("n_bins")),
        "bin_values_": schema.array("f", ("k",), low=0.0, high=1.0, max_size=schema.int_param("n_bins")),
        "bin_weights_": schema.array("f", ("k",), low=0.0, max_size=schema.int_param("n_bins")),
        "n_bins_": schema.scalar("i", low=1, dim="k"),
    }

    def __init__(self, *, n_bins: int | str = 10, strategy: str = "quantile", score_kind: str = "probability"):
        self.n_bins = n_bins
        self.strategy = strategy
        self.score_kind = score_kind

    @property
    def weight_scale_matters(self) -> bool:  # type: ignore[override]
        """Only ``n_bins="auto"`` reads the weights' scale (the number of bins grows with their
        total); fixed bins hold weighted fractions of positives, free of it."""
        return isinstance(self.n_bins, str) and self.n_bins == "auto"

    def _n_bins(self, total_weight: float) -> int:
        if isinstance(self.n_bins, str):
            if self.n_bins != "auto":
                raise ValueError(f"n_bins={self.n_bins!r} is not understood: pass a positive integer or 'auto'.")
            return max(1, int(np.ceil(total_weight ** (1.0 / 3.0) - 1e-9)))
        if isinstance(self.n_bins, bool) or not isinstance(self.n_bins, (int, np.integer)) or self.n_bins < 1:
            raise ValueError(f"n_bins={self.n_bins!r} must be a positive integer or 'auto'.")
        return int(self.n_bins)

    def _check_params(self) -> None:
        if self.strategy not in ("quantile", "uniform"):
            raise ValueError(
                f"strategy={self.strategy!r} must be 'quantile' (equal frequency) or 'uniform' (equal width)."
            )
        self._n_bins(1.0)

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        keep = data.w > 0  # zero-weight rows carry no information: a zero weight drops the row
        # scores within PROB_EPS of 0 or 1 are one value to the prediction, so one tie here
        scores = distinguishable(data.scores[keep], self.score_kind)
        t, y, w = data.t[keep], data.y[keep], data.w[keep]
        n_bins = self._n_bins(float(w.sum()))
        if self.strategy == "quantile":
            uniq, bin_of_uniq, inverse = equal_mass_bins(scores, w, n_bins)
            n_used = int(bin_of_uniq[-1]) + 1
            first = np.searchsorted(bin_of_uniq, np.arange(1, n_used))  # first distinct value of bins 1..K-1
            edges_input = 0.5 * (uniq[first - 1] + uniq[first])
            edges = to_working(edges_input, self.score_kind)
            bins = bin_of_uniq[inverse]
        else:
            if self.score_kind == "probability":
                lo, hi = 0.0, 1.0
            else:
                lo, hi = float(scores.min()), float(scores.max())
            edges_input = lo + (hi - lo) * (np.arange(1, n_bins) / n_bins)  # exactly k/B for probabilities
            edges = to_working(edges_input, self.score_kind)
            n_used = n_bins
            bins = np.searchsorted(edges, t, side="right")
        weight = np.bincount(bins, weights=w, minlength=n_used)
        pos = np.bincount(bins, weights=w * y, minlength=n_used)
        filled = weight > 0
        values = np.divide(pos, weight, out=np.zeros(n_used), where=filled)
        if not filled.all():
            centres = np.arange(n_used, dtype=np.float64)  # bins have equal width: compare indices
            donors = np.flatnonzero(filled)
            nearest = donors[np.argmin(np.abs(centres[:, None] - donors[None, :]), axis=1)]
            values = values[nearest]
        self.edges_ = np.asarray(edges, dtype=np.float64)
        self.bin_values_ = values
        self.bin_weights_ = weight
        self.n_bins_ = n_used

    def _calibrate(self, t, X=None):
        return self.bin_values_[search_sorted(self.edges_, t, side="right")]
