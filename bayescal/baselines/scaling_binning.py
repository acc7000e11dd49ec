"""The scaling-binning calibrator (Kumar, Liang & Ma 2019)."""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal._interp import search_sorted
from bayescal._validation import check_integer, check_number, random_generator
from bayescal.base import Calibrator
from bayescal.baselines._extremes import ExactExtremes
from bayescal.baselines._logistic import platt_fit
from bayescal.baselines.histogram import equal_mass_bins
from bayescal.data import ScoreData

__all__ = ["ScalingBinning"]


class ScalingBinning(ExactExtremes, Calibrator):
    r"""Scaling-binning: Platt scaling, then equal-mass binning of its outputs.

    Algorithm (the method of Kumar et al. 2019, section 4). The data are split in two parts:
    :math:`T_1` fits the scaling step, :math:`T_2` both places the bin edges and gives the bin
    values. That split is this package's choice: the authors' code
    (``PlattBinnerCalibrator.train_calibration`` in p-lambda/verified_calibration) fits all
    three steps on the same data.

    1. Split the calibration data at random, stratified by class, into a scaling part
       :math:`T_1` (a fraction ``split`` of each class, rounded) and a binning part
       :math:`T_2` (the rest). Each row draws one uniform key from ``random_state`` and
       the rows of each class with the smallest keys form :math:`T_1`, so relabelling the
       classes (``pos_label``) keeps the same split. Rows of weight 0 are in neither part
       (each part holds at least one row of positive weight of each class).
    2. Fit Platt scaling :math:`g(t) = \sigma(\alpha t + \beta)` on :math:`T_1` by weighted
       maximum likelihood on the 0/1 labels: the model and estimate of
       :class:`~bayescal.baselines.platt.PlattScaling` with ``smooth_targets=False``, as the
       authors' code fits an essentially unpenalised logistic regression (Platt's smoothed
       targets would cap :math:`g` near :math:`(N_+ + 1)/(N_+ + 2)` and, on a nearly
       separable problem, leave the bins visibly under-confident). Both compute it with
       :func:`~bayescal.baselines._logistic.platt_fit` (Newton's method on the centred and
       scaled score, tiny ridge :math:`10^{-10}` on the slope), so a common offset of the
       decision values does not change :math:`g`.
    3. Cut the values :math:`g(t_i), i \in T_2`, into ``n_bins`` equal-mass bins
       :math:`I_1, \dots, I_B` (weighted; tied values never split, see
       :func:`~bayescal.baselines.histogram.equal_mass_bins`); a bin boundary is the midpoint
       between the largest value of one bin and the smallest of the next. When the bins
       cannot all hold the same number of samples, the larger ones are not always the first
       (as with the authors' ``np.array_split``), so a boundary can sit one sample away from
       theirs, which moves the predictions of the scores between the two places.
    4. Each bin predicts the weighted mean of the scaled values of its :math:`T_2` samples,
       :math:`\hat p_b = \sum_{i \in T_2, g_i \in I_b} w_i g_i / \sum w_i` (not the label
       mean: averaging the smooth :math:`g` gives lower variance, which is why the method's
       calibration error can be measured). A new score :math:`t` gets :math:`\hat p_b` for the
       bin containing :math:`g(t)`.

    The output takes at most ``n_bins`` values. When the Platt slope is positive (the usual
    case) the map is non-decreasing; a negative slope (scores that rank backwards, or no
    trend at all) makes it non-increasing, so the class does not promise monotonicity
    (``monotone = False``). Weights enter the Platt fit and the bins; the random split
    acts on rows, so an integer weight is not exactly the same as a repeated row (the copies
    of a repeated row could land in both parts). A :class:`~bayescal.data.ScoreSummary`,
    whose rows are score bins, is split by weight instead: every bin gives the fraction
    ``split`` of its weight to the scaling part and the rest to the binning part (the
    expected split of its rows), so no bin lands wholly in one part.

    Parameters
    ----------
    n_bins : int, default 10
    split : float, default 0.5
        Fraction of each class used to fit the scaling step, in (0, 1); at least one sample
        of each class must be left for each part.
    random_state : None, int or numpy Generator
        Seed of the split.
    score_kind : {"probability", "decision"}, default "probability"

    Attributes
    ----------
    platt_coef_, platt_intercept_ : float
        The scaling step :math:`g(t) = \sigma(\alpha t + \beta)`.
    edges_ : ndarray, one edge between each two bins
        Interior boundaries of the bins on the scale of :math:`g`.
    bin_values_ : ndarray, one value per bin
    n_bins_ : int
        Bins actually used (fewer than ``n_bins`` when the binning part has ties or few
        distinct values).
    t_limits_ : ndarray of shape (2,)
        Working-scale levels of exact 0 and 1 probability scores, next to the observed ones
        (:mod:`bayescal.baselines._extremes`; infinite without exact 0 or 1).

    References
    ----------
    Kumar, A., Liang, P. & Ma, T. (2019). Verified uncertainty calibration. NeurIPS 32.
    """

    weight_scale_matters = False  # an unpenalised logistic fit and weighted bin means
    monotone = False
    _fitted_schema = {
        "platt_coef_": schema.scalar("f"),
        "platt_intercept_": schema.scalar("f"),
        "edges_": schema.array(
            "f", ("k-1",), low=0.0, high=1.0, order="nondecreasing", max_size=schema.int_param("n_bins")
        ),
        "bin_values_": schema.array("f", ("k",), low=0.0, high=1.0, max_size=schema.int_param("n_bins")),
        "n_bins_": schema.scalar("i", low=1, dim="k"),
    }
    _min_samples = 4
    _min_per_class = 2

    def __init__(
        self,
        *,
        n_bins: int = 10,
        split: float = 0.5,
        random_state: int | np.random.Generator | None = None,
        score_kind: str = "probability",
    ):
        self.n_bins = n_bins
        self.split = split
        self.random_state = random_state
        self.score_kind = score_kind

    def _check_params(self) -> tuple[int, float]:
        """Check the parameters; return ``n_bins`` and ``split``."""
        n_bins = check_integer(self.n_bins, "n_bins", 1)
        split = check_number(self.split, "split", low=0.0, high=1.0, inclusive=False)
        return n_bins, split

    def _fit(self, data: ScoreData, X=None) -> None:
        n_bins, split = self._check_params()
        if data.bin_edges is None:
            # one random key per row; in each class the rows with the smallest keys fit the
            # scaling step, so the split does not depend on which class is called positive
            key = random_generator(self.random_state, where=self._name).random(data.n)
            in_scaling = np.zeros(data.n, dtype=bool)
            for label in (0, 1):
                idx = np.flatnonzero((data.y == label) & (data.w > 0))  # a row of weight 0 is in neither part
                k = min(max(int(round(split * idx.size)), 1), idx.size - 1)
                in_scaling[idx[np.argsort(key[idx], kind="stable")[:k]]] = True
            w_scaling = np.where(in_scaling, data.w, 0.0)
            w_binning = np.where(in_scaling, 0.0, data.w)
        else:  # the bins of a ScoreSummary: every bin's weight split in the ratio split : 1 - split
            w_scaling, w_binning = split * data.w, (1.0 - split) * data.w
        for name, part_w in (("scaling", w_scaling), ("binning", w_binning)):
            if part_w.sum() <= 0:
                raise ValueError(
                    f"The {name} part of the split has zero total weight: give more samples positive weight."
                )
        fit_rows = w_scaling > 0
        t = self._fit_limits(data)
        coef, intercept = platt_fit(t[fit_rows], data.y[fit_rows].astype(np.float64), w_scaling[fit_rows])
        part = w_binning > 0  # zero-weight rows carry no information
        g = expit(coef * t[part] + intercept)
        w = w_binning[part]
        uniq, bin_of_uniq, inverse = equal_mass_bins(g, w, n_bins)
        n_used = int(bin_of_uniq[-1]) + 1
        first = np.searchsorted(bin_of_uniq, np.arange(1, n_used))
        bins = bin_of_uniq[inverse]
        weight = np.bincount(bins, weights=w, minlength=n_used)
        total = np.bincount(bins, weights=w * g, minlength=n_used)
        self.platt_coef_ = coef
        self.platt_intercept_ = intercept
        self.edges_ = 0.5 * (uniq[first - 1] + uniq[first])
        self.bin_values_ = total / weight
        self.n_bins_ = n_used

    def _calibrate(self, t, X=None):
        g = expit(self.platt_coef_ * self._limited(t) + self.platt_intercept_)
        return self.bin_values_[search_sorted(self.edges_, g, side="right")]
