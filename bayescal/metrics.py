r"""Calibration and discrimination metrics for binary classifiers.

Every function takes ``y_true`` (binary labels; {0, 1}, booleans or {-1, 1}) and
``y_prob`` (the predicted :math:`P(y = 1)`), plus optional ``sample_weight``; inputs are
validated by :mod:`bayescal._validation` and never modified. The literature disagrees on
several definitions, so each docstring states the formula and its conventions, and the
name or a parameter says which variant is computed (the Metrics page of the API reference lists them).

Notation: sample :math:`i` has label :math:`y_i`, prediction :math:`p_i` and weight
:math:`w_i` (1 without weights), :math:`W = \sum_i w_i`. A binning puts the samples into
bins :math:`b`; :math:`n_b = \sum_{i \in b} w_i` is the bin's (weighted) count,
:math:`e_b` its mean prediction and :math:`o_b` its fraction of positives. Empty bins are
dropped everywhere.

Binnings (``strategy``), shared by :func:`ece`, :func:`mce`, :func:`calibration_error`,
:func:`ece_sweep`, :func:`confidence_ece`, :func:`brier_decomposition` and
:func:`reliability_curve`:

``"uniform"``
    :math:`B` bins of equal width, :math:`[k/B, (k+1)/B)`, the last one closed at 1
    (so :math:`p = 1` does not open a phantom bin): bin index
    :math:`\min(\lfloor B p \rfloor, B - 1)`.
``"quantile"``
    Equal-mass bins: the inner edge :math:`k` is the weighted :math:`k/B` quantile of the
    predictions, :math:`q_k = \min\{x : F_w(x) \ge k/B\}` with :math:`F_w` the weighted
    empirical CDF, and bin :math:`k` holds :math:`q_{k} < p \le q_{k+1}` (:math:`q_0 = -\infty`,
    :math:`q_B = 1`). Bin :math:`k` ends after sample :math:`\lceil kN/B \rceil` of the sorted
    predictions when they are distinct and unweighted, so when :math:`B` divides :math:`N`
    the bins are those of ``"papers"``; integer weights act exactly as repeated rows, and the
    same weight on every row (such as 1/N) gives the unweighted bins: :math:`F_w(x) \ge k/B`
    is tested on running sums of the weights corrected for rounding, allowing for the bound on
    their remaining error, so float sums do not move an edge. Equal predictions always
    share a bin, so heavy ties give fewer (non-empty) bins. (scikit-learn's
    ``calibration_curve`` interpolates its quantile edges instead, which can move samples
    sitting at an edge.)
``"papers"``
    The seed authors' MATLAB code (Naeini et al.): sort by prediction, ties by label
    ascending (MATLAB's ``sortrows`` on ``[p, y]``), and cut the sorted list into :math:`B` groups of consecutive samples whose
    sizes differ by at most one, the first :math:`N \bmod B` groups one larger. Group sizes
    count samples; weights enter only the within-group averages.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import xlogy
from scipy.stats import norm as _normal

from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import (
    check_bool,
    check_class_weights,
    check_consistent_length,
    check_probabilities,
    check_sample_weight,
    check_scored_labels,
    random_generator,
)

__all__ = [
    "ece",
    "mce",
    "confidence_ece",
    "calibration_error",
    "ece_sweep",
    "smooth_ece",
    "mvce",
    "brier_score",
    "rmse",
    "log_loss",
    "roc_auc",
    "accuracy",
    "BrierDecomposition",
    "brier_decomposition",
    "CORPDecomposition",
    "corp_decomposition",
    "BayesErrorBounds",
    "bayes_error_bounds",
    "reliability_curve",
]

STRATEGIES = ("quantile", "uniform", "papers")
NORMS = ("l1", "l2", "max")
_EPS = float(np.finfo(np.float64).eps)


# ----------------------------------------------------------------------------- validation


def _check_inputs(
    y_true: Any,
    y_prob: Any,
    sample_weight: Any,
    pos_label: Any = None,
    *,
    require_both: bool = False,
    purpose: str = "calibration",
    relative: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return labels (float 0/1, :func:`~bayescal._validation.check_scored_labels`), probabilities
    and weights as new float64 arrays.

    ``require_both`` refuses labels of one class, naming ``purpose`` as what needs both. With
    ``relative`` (for results that depend only on the ratios of the weights) the weights are
    divided by their largest value, silently; otherwise their scale is kept, except where a sum
    would overflow (:func:`~bayescal._validation.check_sample_weight`).
    """
    y = check_scored_labels(y_true, pos_label=pos_label, name="y_true", require_both=require_both, purpose=purpose)
    p = check_probabilities(y_prob, name="y_prob")
    n = check_consistent_length(y_true=y, y_prob=p)
    w = check_sample_weight(sample_weight, n, relative=relative)
    return y.astype(np.float64), p, w


_MAX_COUNT = 10**7
"""Largest n_bins / n_shuffles accepted (beyond it the arrays alone would fill memory or time)."""


def _check_positive_int(value: Any, name: str = "n_bins") -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name}={value!r} is not a positive integer: pass a whole number >= 1, e.g. 10.")
    if value > _MAX_COUNT:
        raise ValueError(
            f"{name}={value!r} is more than {_MAX_COUNT}: pass a smaller number (bins beyond the "
            "number of samples are empty anyway)."
        )
    return int(value)


def _check_choice(value: Any, name: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {choices}: pick one of those.")
    return value


# ----------------------------------------------------------------------------- binning


@dataclass(frozen=True)
class _Sorted:
    """Samples sorted by prediction, ties by label ascending (every binning is contiguous here)."""

    p: np.ndarray
    y: np.ndarray
    w: np.ndarray


def _sort(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> _Sorted:
    # by prediction, ties by label, then by weight: a group cut inside a tie ("papers") takes
    # the same rows whatever their input order
    order = np.lexsort((w, y, p))
    return _Sorted(p[order], y[order], w[order])


def _running_sum(v: np.ndarray) -> tuple[np.ndarray, float]:
    r"""Running sums of the non-negative ``v`` by compensated summation, and a bound on their error.

    Returns ``(cumulative, error)``. ``cumulative[j]`` is :math:`C_j = \sum_{i \le j} v_i`:
    numpy's running sum :math:`s_j` plus the running sum of the exact rounding error :math:`e_i`
    of each of its additions (Knuth's TwoSum). With :math:`V` the total, :math:`E = \sum_i |e_i|`
    and :math:`\varepsilon` the machine epsilon, every :math:`C_j` is within
    ``error`` :math:`= \varepsilon (V + nE)/2` of the exact sum: about one rounding of :math:`V`,
    where the error of the plain running sum grows with :math:`n`. When every addition was exact
    (:math:`E = 0`, as for integer weights) the sums are exact and ``error`` is 0.
    """
    partial = np.cumsum(v)
    previous = np.concatenate([[0.0], partial[:-1]])
    # TwoSum: partial = previous + v - lost exactly, as partial is that sum rounded
    added = partial - previous
    lost = (previous - (partial - added)) + (v - added)
    cumulative = partial + np.cumsum(lost)
    spread = float(np.sum(np.abs(lost)))
    error = 0.0 if spread == 0.0 else 0.5 * _EPS * (float(cumulative[-1]) + v.size * spread)
    return cumulative, error


def _running_weight(w: np.ndarray) -> tuple[np.ndarray, float, float]:
    r"""Running sums of the sorted weights for the equal-mass edges: ``(cumulative, total, slack)``.

    ``cumulative`` is :func:`_running_sum` of ``w`` and ``total`` its last value, :math:`W`. Bin
    :math:`k` of :math:`B` ends where ``cumulative * B >= k * total - B * slack`` first holds
    (:func:`_bin_ends`, and the sweep of :func:`ece_sweep`). With :math:`\delta` the sums'
    ``error``, the computed :math:`B C_j - kW` is within :math:`B(2\delta + 1.5\varepsilon W)`
    = ``B * slack`` of the exact one, so an edge that the exact sums reach is never missed
    (weights :math:`c` on every row give the unweighted bins). When the sums are exact, ``slack``
    is 0: rounding the two products cannot reverse their order. Otherwise a shortfall below
    ``B * slack`` is taken for rounding; integer weights divided by their largest value :math:`m`
    still act exactly as repeated rows, since their shortfalls are at least :math:`1/m` and
    ``B * slack`` is below that while :math:`B` times their integer total is below about
    :math:`10^{15}`.
    """
    cumulative, error = _running_sum(w)
    total = float(cumulative[-1])
    slack = 0.0 if error == 0.0 else 2.0 * error + 1.5 * _EPS * total
    return cumulative, total, slack


def _bin_ends(s: _Sorted, n_bins: int, strategy: str):
    """End position (in sorted order) of each of the ``n_bins`` bins, and their lower / upper edges.

    Every strategy cuts the sorted samples into consecutive runs. For "uniform" and
    "quantile" the edges are the bin boundaries (0 and 1 outside); for "papers" they are
    the smallest and largest prediction of each group (NaN if empty).
    """
    n = s.p.size
    if strategy == "uniform":
        # bin k is [k/B, (k+1)/B) with the edges k/B as floats: p = 0.29 is in bin 29 of 100,
        # where floor(0.29 * 100) = floor(28.999999999999996) would put it in bin 28
        edges = np.arange(n_bins + 1) / n_bins
        ends = np.searchsorted(s.p, edges[1:-1], side="left")
        return np.append(ends, n), edges[:-1], edges[1:]
    if strategy == "quantile":
        # first position where the weighted ECDF reaches k / n_bins, compared as
        # C_j * n_bins >= k * W up to the bound of the sums' rounding error (_running_weight)
        cumulative, total, slack = _running_weight(s.w)
        cut = np.searchsorted(cumulative * n_bins, np.arange(1, n_bins) * total - n_bins * slack, side="left")
        inner = s.p[np.minimum(cut, n - 1)]
        ends = np.append(np.searchsorted(s.p, inner, side="right"), n)
        edges = np.concatenate([[0.0], inner, [1.0]])
        return ends, edges[:-1], edges[1:]
    # "papers": equal-count groups, the first n mod n_bins one larger
    sizes = np.full(n_bins, n // n_bins)
    sizes[: n % n_bins] += 1
    ends = np.cumsum(sizes)
    filled = sizes > 0
    lower = np.full(n_bins, np.nan)
    upper = np.full(n_bins, np.nan)
    lower[filled] = s.p[ends[filled] - sizes[filled]]
    upper[filled] = s.p[ends[filled] - 1]
    return ends, lower, upper


@dataclass(frozen=True)
class _Bins:
    """Per-bin statistics of the non-empty bins (weighted)."""

    index: np.ndarray  # bin number in [0, n_bins)
    weight: np.ndarray  # n_b: sum of weights
    n_eff: np.ndarray  # effective sample size (sum w)^2 / sum w^2
    mean_predicted: np.ndarray  # e_b
    fraction_positive: np.ndarray  # o_b
    lower: np.ndarray
    upper: np.ndarray

    @property
    def gap(self) -> np.ndarray:
        return self.fraction_positive - self.mean_predicted

    @property
    def share(self) -> np.ndarray:
        return self.weight / self.weight.sum()


def _sorted_bin_stats(s: _Sorted, n_bins: int, strategy: str, value=None) -> _Bins:
    """Statistics of the non-empty bins of the sorted samples; ``mean_predicted`` is the mean of
    ``value(s.p)`` (of the predictions themselves when ``value`` is None)."""
    ends, lower, upper = _bin_ends(s, n_bins, strategy)
    starts = np.concatenate([[0], ends[:-1]])
    index = np.flatnonzero(ends > starts)
    first = starts[index]  # bins are consecutive runs, so reduceat sums each run exactly
    weight = np.add.reduceat(s.w, first)
    keep = weight > 0  # drop bins whose samples all have weight 0
    index, first, weight = index[keep], first[keep], weight[keep]
    return _Bins(
        index=index,
        weight=weight,
        n_eff=weight**2 / np.add.reduceat(s.w**2, first),
        mean_predicted=np.add.reduceat(s.w * (s.p if value is None else value(s.p)), first) / weight,
        fraction_positive=np.add.reduceat(s.w * s.y, first) / weight,
        lower=lower[index],
        upper=upper[index],
    )


def _bin_stats(p: np.ndarray, y: np.ndarray, w: np.ndarray, n_bins: int, strategy: str, value=None) -> _Bins:
    """The one binning of this module: statistics of the non-empty bins of ``strategy``."""
    return _sorted_bin_stats(_sort(p, y, w), n_bins, strategy, value)


def _combine(gap: np.ndarray, share: np.ndarray, norm: str) -> float:
    """Combine per-bin gaps: l1 = sum share |gap|, l2 = sqrt(sum share gap^2), max = max |gap|."""
    if norm == "l1":
        return float(np.sum(share * np.abs(gap)))
    if norm == "l2":
        return float(np.sqrt(np.sum(share * gap**2)))
    return float(np.max(np.abs(gap)))


# ----------------------------------------------------------------------------- binned errors


def ece(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    norm: str = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Class-1 expected calibration error (Naeini et al. 2015; scikit-learn's curve).

    .. math::

        \mathrm{ECE} = \sum_b \frac{n_b}{W}\, |o_b - e_b|, \qquad
        \mathrm{ECE}_{\ell_2} = \Big(\sum_b \frac{n_b}{W}\,(o_b - e_b)^2\Big)^{1/2}, \qquad
        \mathrm{MCE} = \max_b |o_b - e_b|

    over the non-empty bins, with :math:`o_b` the (weighted) fraction of positives and
    :math:`e_b` the mean predicted :math:`P(y=1)` in bin :math:`b`. This compares the
    probability of class 1, not the confidence of the predicted label: that is
    :func:`confidence_ece`, a different number.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels; one class alone is allowed.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    n_bins : int, default 10
    strategy : {"quantile", "uniform", "papers"}, default "quantile"
        Binning, see the module docstring. ``"papers"`` reproduces the ECE and MCE the
        seed authors publish (10 equal-count groups of the sorted predictions).
    norm : {"l1", "l2", "max"}, default "l1"
    sample_weight : array-like of shape (n,), optional
    pos_label : optional
        The value of ``y_true`` that is the positive class. Needed for text labels (as in
        scikit-learn's metrics) and for labels of one value other than -1, 0 and 1; otherwise
        the greater of the two values (1 for {0, 1} and {-1, 1}, True for booleans).

    Returns
    -------
    float

    References
    ----------
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2015). Obtaining well calibrated
    probabilities using Bayesian binning. AAAI, 2901-2907.
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    n_bins = _check_positive_int(n_bins)
    _check_choice(strategy, "strategy", STRATEGIES)
    _check_choice(norm, "norm", NORMS)
    bins = _bin_stats(p, y, w, n_bins, strategy)
    return _combine(bins.gap, bins.share, norm)


def mce(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Maximum calibration error: :math:`\max_b |o_b - e_b|` over the non-empty bins.

    Same as ``ece(..., norm="max")``; see :func:`ece` for the binning conventions.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    n_bins : int, default 10
        Number of bins.
    strategy : {"quantile", "uniform", "papers"}, default "quantile"
        Binning, as in :func:`ece`.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    return ece(
        y_true, y_prob, n_bins=n_bins, strategy=strategy, norm="max", sample_weight=sample_weight, pos_label=pos_label
    )


def confidence_ece(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "uniform",
    norm: str = "l1",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
    bin_on: str = "confidence",
) -> float:
    r"""Top-label (confidence) expected calibration error (Guo et al. 2017).

    Each sample is predicted as class 1 when :math:`p_i > 0.5` (as
    :meth:`bayescal.base.Calibrator.predict` does), with confidence
    :math:`c_i = \max(p_i, 1 - p_i)` and correctness :math:`a_i = [\hat y_i = y_i]`.
    Binning the confidences (equal-width bins over [0, 1] by default, so only bins above
    0.5 are ever filled),

    .. math:: \mathrm{ECE}_{conf} = \sum_b \frac{n_b}{W}\,|\mathrm{acc}_b - \mathrm{conf}_b|

    with :math:`\mathrm{acc}_b` the (weighted) accuracy and :math:`\mathrm{conf}_b` the
    mean confidence in bin :math:`b`. This is not the class-1 :func:`ece`: the two
    coincide only in special cases.

    With ``bin_on="probability"`` the bins are those of :math:`p_i` instead (the binning of
    the note "Calculating Expected Calibration Error for Binary Classification", whose
    100-item example gives 0.1571): a bin below 0.5 and its mirror image above are then two
    bins, where binning the confidences makes them one. The note also predicts class 1 at
    :math:`p_i = 0.5`; here such a sample is predicted as class 0 either way.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        As in :func:`ece`.
    n_bins : int, default 10
    strategy : {"uniform", "quantile", "papers"}, default "uniform"
        Binning (of the confidences or the probabilities, see ``bin_on``).
    norm : {"l1", "l2", "max"}, default "l1"
    pos_label : optional
        As in :func:`ece`.
    bin_on : {"confidence", "probability"}, default "confidence"
        Bin :math:`c_i` (Guo et al.) or :math:`p_i` (the note).

    References
    ----------
    Guo, C., Pleiss, G., Sun, Y. & Weinberger, K. Q. (2017). On calibration of modern
    neural networks. ICML, 1321-1330.
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    n_bins = _check_positive_int(n_bins)
    _check_choice(strategy, "strategy", STRATEGIES)
    _check_choice(norm, "norm", NORMS)
    _check_choice(bin_on, "bin_on", ("confidence", "probability"))
    correct = ((p > 0.5) == (y == 1)).astype(np.float64)
    if bin_on == "probability":
        bins = _bin_stats(p, correct, w, n_bins, strategy, value=_confidence)
    else:
        bins = _bin_stats(_confidence(p), correct, w, n_bins, strategy)
    return _combine(bins.gap, bins.share, norm)


def _confidence(p: np.ndarray) -> np.ndarray:
    r"""The confidence of the predicted label, :math:`\max(p, 1 - p)`."""
    return np.maximum(p, 1.0 - p)


def calibration_error(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 15,
    strategy: str = "quantile",
    norm: str = "l1",
    debias: bool = False,
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Binned calibration error, optionally Kumar et al.'s debiased :math:`\ell_2` estimate.

    With ``debias=False`` this is :func:`ece` with 15 bins. With ``debias=True`` (only
    for ``norm="l2"``) it is the debiased estimator of Kumar, Liang & Ma (2019):

    .. math::

        \widehat{\mathrm{CE}}_{\ell_2} = \Big(\max\Big(0,\ \sum_b \frac{n_b}{W}
            \Big[(e_b - o_b)^2 - \frac{o_b (1 - o_b)}{m_b - 1}\Big]\Big)\Big)^{1/2}

    The plug-in :math:`(e_b - o_b)^2` overestimates the squared bin error by the
    variance of :math:`o_b`, estimated by :math:`o_b(1-o_b)/(m_b - 1)`; :math:`m_b` is the
    number of samples in the bin, or under weights the effective size
    :math:`m_b = (\sum_{i \in b} w_i)^2 / \sum_{i \in b} w_i^2`. Bins with :math:`m_b \le 1`
    contribute 0, as in the authors' code.

    Here, unlike elsewhere in this module, a weight of 2 is not two repeated rows: the
    variance of a weighted mean of :math:`N` rows is :math:`o(1-o) \sum w^2 / (\sum w)^2`,
    whatever the scale of the weights, so the effective size is the number of independent rows
    the bin is worth (importance or survey weights), not the bin's weight :math:`n_b`. It
    depends only on the ratios of the weights: weights normalised to sum to 1 give the same
    estimate as unit weights, where with :math:`n_b` every bin would have :math:`m_b < 1`,
    contribute 0, and the estimate would silently be 0. For frequency weights (a weight :math:`k` for
    :math:`k` identical rows) repeat the rows instead. The estimate targets the binned error; with continuous
    predictions the binning itself still underestimates the true calibration error.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        As in :func:`ece`.
    n_bins : int, default 15
    strategy : {"quantile", "uniform", "papers"}, default "quantile"
    norm : {"l1", "l2", "max"}, default "l1"
    debias : bool, default False
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Kumar, A., Liang, P. & Ma, T. (2019). Verified uncertainty calibration. NeurIPS 32.
    """
    check_bool(debias, "debias")
    if debias and norm != "l2":
        raise ValueError(
            f"debias=True needs norm='l2' (got norm={norm!r}): Kumar et al.'s correction is for the squared error."
        )
    if not debias:
        return ece(
            y_true,
            y_prob,
            n_bins=n_bins,
            strategy=strategy,
            norm=norm,
            sample_weight=sample_weight,
            pos_label=pos_label,
        )
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    n_bins = _check_positive_int(n_bins)
    _check_choice(strategy, "strategy", STRATEGIES)
    bins = _bin_stats(p, y, w, n_bins, strategy)
    o = bins.fraction_positive
    usable = bins.n_eff > 1.0 + 1e-12
    correction = np.zeros_like(o)
    correction[usable] = o[usable] * (1.0 - o[usable]) / (bins.n_eff[usable] - 1.0)
    per_bin = np.where(usable, bins.gap**2 - correction, 0.0)
    return float(np.sqrt(max(0.0, np.sum(bins.share * per_bin))))


def ece_sweep(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    norm: str = "l1",
    strategy: str = "quantile",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""ECE with the monotonic sweep binning of Roelofs et al. (2020).

    The number of bins is the largest :math:`b^*` such that, for every :math:`b \le b^*`,
    the bin label means :math:`o_1 \le o_2 \le \dots` of the :math:`b`-bin binning are
    non-decreasing (the sweep stops at the first :math:`b` that breaks monotonicity), with
    :math:`b` running from 1 up to the number of samples: the rows of positive weight, each
    one sample whatever its weight (a row of weight k is not k samples here, so where every
    binning is monotone, as when the classes are separated by the predictions, rows of integer
    weight k can stop the sweep earlier than the same rows repeated k times). The error is
    then the binned error of :func:`ece` with :math:`b^*` bins:

    .. math:: \mathrm{ECE}_{sweep} = \Big(\sum_{k=1}^{b^*} \frac{n_k}{W} |o_k - e_k|^q\Big)^{1/q}

    with :math:`q = 1` for ``norm="l1"`` and :math:`q = 2` for ``"l2"`` (``"max"`` gives
    the largest gap). Equal-mass bins (``"quantile"``) are the paper's ECE_EM^sweep;
    ``"uniform"`` its equal-width variant. Monotonicity is judged over non-empty bins, as exact
    arithmetic on the weights would judge it: fractions closer than the bound on their rounding
    error count as equal, so weights :math:`c k` (:math:`k` integers) give the sweep of weights :math:`k`.

    After the sort, each binning :math:`b \le b^* + 1` is read off running sums of the sorted
    samples, each bin's end found by a search from the last one's, so the sweep's cost grows
    with :math:`b^{*2}` (up to a logarithm) and not with n: small unless the classes are
    nearly separable, where :math:`b^*` reaches thousands (then :func:`ece` with a fixed
    number of bins is the cheaper choice).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    norm : {"l1", "l2", "max"}, default "l1"
        Norm of the binned gaps.
    strategy : {"quantile", "uniform"}, default "quantile"
        Equal-mass or equal-width bins.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float

    References
    ----------
    Roelofs, R., Cain, N., Shlens, J. & Mozer, M. C. (2022). Mitigating bias in calibration
    error estimation. AISTATS (arXiv:2012.08668, 2020).
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    _check_choice(norm, "norm", NORMS)
    _check_choice(strategy, "strategy", ("quantile", "uniform"))
    keep = w > 0  # a row of weight 0 is no sample: it neither bins nor raises the sweep's limit
    y, p, w = y[keep], p[keep], w[keep]
    s = _sort(p, y, w)
    if np.all(np.diff(s.y) >= 0):
        # labels already sorted: every binning into consecutive runs is monotone
        best = _sorted_bin_stats(s, p.size, strategy)
        return _combine(best.gap, best.share, norm)
    from bayescal._kernels import largest_monotone_bins

    positive, positive_error = _running_sum(s.w * s.y)
    negative, negative_error = _running_sum(s.w * (1 - s.y))
    cumulative, total, slack = _running_weight(s.w)
    b_star = largest_monotone_bins(
        s.p,
        cumulative,
        total,
        slack,
        np.concatenate([[0.0], positive]),
        np.concatenate([[0.0], negative]),
        2.0 * (positive_error + negative_error),
        strategy == "quantile",
    )
    best = _sorted_bin_stats(s, int(b_star), strategy)
    return _combine(best.gap, best.share, norm)


# ----------------------------------------------------------------------------- smooth ECE


_KERNEL_IMAGES = 4
"""Periods (of length 2) of the Gaussian summed on each side when it is wrapped: at the largest
bandwidth, 1, the first one left out lies 2 * 4 + 1 = 9 standard deviations away (e^-40)."""


_SIGMA_MIN = 2e-5
"""Smallest bandwidth of :func:`smooth_ece`: its grid of ceil(20 / sigma) + 1 points reaches 10^6 + 1
here (and the FFT works on a circle of twice that), the most that stays quick and small in memory;
a narrower kernel would smooth nothing anyway unless the predictions were closer than 1e-5."""


def _smooth_ece_at(grid_mass: np.ndarray, sigma: float) -> float:
    r""":math:`\int_0^1 |\hat r_\sigma(t)|\,dt` from residual masses on a uniform grid of [0, 1].

    The reflected kernel is the density of :math:`\pi(p + \sigma Z)`, where :math:`\pi` folds the
    line onto [0, 1]: unfolded once, [0, 1] and its mirror image make a circle of length 2 on
    which each mass sits at :math:`p` and at :math:`2 - p` (twice, so, at 0 and at 1, its own
    mirror images) and the Gaussian is wrapped; a circular convolution (FFT) then smooths all
    the masses at once, and the first half of the circle is :math:`\hat r_\sigma` on [0, 1]."""
    m = grid_mass.size
    h = 1.0 / (m - 1)
    period = 2 * (m - 1)
    circle = np.zeros(period)
    circle[:m] += grid_mass
    circle[(period - np.arange(m)) % period] += grid_mass  # mirror images: 2 - t, and 0 and 1 onto themselves
    offsets = np.arange(period) * h
    wrapped = np.zeros(period)
    for shift in 2.0 * np.arange(-_KERNEL_IMAGES, _KERNEL_IMAGES + 1):  # one image at a time: O(M) memory
        wrapped += _normal.pdf(offsets - shift, scale=sigma)
    smoothed = np.fft.irfft(np.fft.rfft(circle) * np.fft.rfft(wrapped), n=period)[:m]
    return float(np.trapezoid(np.abs(smoothed), dx=h))


def _grid_mass(p: np.ndarray, r: np.ndarray, m: int) -> np.ndarray:
    """Spread each value ``r_i`` linearly onto the two grid points around ``p_i``."""
    pos = p * (m - 1)
    left = np.minimum(np.floor(pos).astype(np.intp), m - 2)
    frac = pos - left
    return np.bincount(left, weights=(1 - frac) * r, minlength=m) + np.bincount(left + 1, weights=frac * r, minlength=m)


def smooth_ece(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    sigma: float | None = None,
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Smooth ECE (Blasiok & Nakkiran 2023).

    The residuals :math:`r_i = y_i - p_i` are smoothed with a Gaussian kernel reflected
    at 0 and 1 (the density at :math:`t` of :math:`\pi(p + \sigma Z)`, where :math:`\pi`
    folds the real line onto [0, 1] by reflection at every integer),

    .. math::

        \hat r_\sigma(t) = \frac{1}{W}\sum_i w_i r_i\, \tilde K_\sigma(t, p_i), \qquad
        \tilde K_\sigma(t, p) = \sum_{k \in \mathbb{Z}}
            \big[\varphi_\sigma(t - p - 2k) + \varphi_\sigma(t + p - 2k)\big],

    and :math:`\mathrm{smECE}_\sigma = \int_0^1 |\hat r_\sigma(t)|\,dt`. Each
    :math:`\tilde K_\sigma(\cdot, p)` integrates to 1 over [0, 1], so residuals of one sign
    give their weighted mean absolute value at every bandwidth. With ``sigma=None`` the
    bandwidth is the fixed point :math:`\sigma^* = \mathrm{smECE}_{\sigma^*}` (unique, as
    :math:`\mathrm{smECE}_\sigma` decreases in :math:`\sigma`), found by bisection on
    [0.001, 1] to a width of 1e-4 as in the authors' ``relplot`` package (which stops at width
    1e-3); the value at the upper end of the final interval is returned. Numerically, as in
    ``relplot``, the weighted residuals are spread linearly onto a uniform grid of
    :math:`M = \max(1001, \lceil 20/\sigma \rceil + 1)` points, the kernel is applied by FFT
    convolution (with every reflection, where ``relplot`` keeps one at each end and divides by
    the smoothed density's integral instead; the two agree when the residuals have one sign
    and differ by little unless :math:`\sigma` is large) and the integral is taken by the
    trapezoidal rule.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        As in :func:`ece`.
    sigma : float in [2e-5, 1], optional
        Fixed kernel bandwidth; ``None`` uses the fixed point. The grid has
        :math:`\lceil 20/\sigma \rceil + 1` points, :math:`10^6 + 1` at the smallest bandwidth
        accepted, 2e-5.
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Blasiok, J. & Nakkiran, P. (2024). Smooth ECE: principled reliability diagrams via
    kernel smoothing. ICLR (arXiv:2309.12236, 2023).
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    if sigma is not None and (
        isinstance(sigma, (bool, np.bool_))
        or not isinstance(sigma, (int, float, np.integer, np.floating))
        or not _SIGMA_MIN <= sigma <= 1.0
    ):
        raise ValueError(
            f"sigma={sigma!r} must be a number in [{_SIGMA_MIN:g}, 1] (the grid has ceil(20 / sigma) + 1 points, "
            f"10^6 + 1 at sigma={_SIGMA_MIN:g}): pass a bandwidth in that range, or sigma=None for the fixed-point "
            "bandwidth."
        )
    r = w * (y - p) / w.sum()
    masses: dict[int, np.ndarray] = {}

    def at(s: float) -> float:
        m = max(1001, int(np.ceil(20.0 / s)) + 1)
        if m not in masses:
            masses[m] = _grid_mass(p, r, m)
        return _smooth_ece_at(masses[m], s)

    if sigma is not None:
        return at(float(sigma))
    lo, hi = 1e-3, 1.0
    if at(lo) <= lo:
        return at(lo)
    while hi - lo > 1e-4:
        mid = 0.5 * (lo + hi)
        if at(mid) > mid:
            lo = mid
        else:
            hi = mid
    return at(hi)


# ----------------------------------------------------------------------------- MVCE


def mvce(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    n_shuffles: int = 100,
    p: float = 1,
    random_state: RandomStateLike = None,
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Multi-view calibration error (Huang et al. 2022, the MBCT paper).

    For each of :math:`R` = ``n_shuffles`` random permutations of the rows, the permuted
    rows are cut into :math:`B` = ``n_bins`` consecutive chunks of equal size (sizes
    count rows and differ by at most one, the first :math:`N \bmod B` chunks one larger;
    weights enter the chunk means and shares); then

    .. math::

        \mathrm{MVCE}_p = \frac{1}{R}\sum_{r=1}^{R}\Big(\sum_{b=1}^{B}
            \frac{n_b^{(r)}}{W}\,\big|e_b^{(r)} - o_b^{(r)}\big|^p\Big)^{1/p}

    with :math:`e_b^{(r)}` the mean prediction and :math:`o_b^{(r)}` the fraction of
    positives (both weighted) of chunk :math:`b` of shuffle :math:`r`. Random chunks
    (rather than bins of sorted predictions) are the "views"; the metric rewards
    predictors that are calibrated on every random subpopulation, so it penalises both
    global bias and individual-level noise. With ``n_bins=1`` it is
    :math:`|\bar p - \bar y|` whatever the shuffles.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        As in :func:`ece`.
    n_bins : int, default 10
        Number of chunks per shuffle.
    n_shuffles : int, default 100
    p : float >= 1, default 1
    random_state : None, int or numpy Generator
        Seed of ``numpy.random.default_rng``; shuffle :math:`r` is the
        :math:`r`-th ``rng.permutation(n)``.
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Huang, S., Wang, Y., Mou, L., Zhang, H., Zhu, H., Yu, C. & Zheng, B. (2022). MBCT:
    tree-based feature-aware binning for individual uncertainty calibration. WWW '22,
    2236-2246.
    """
    y, prob, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    n_bins = _check_positive_int(n_bins)
    n_shuffles = _check_positive_int(n_shuffles, "n_shuffles")
    if isinstance(p, (bool, np.bool_)) or not (
        isinstance(p, (int, float, np.integer, np.floating)) and np.isfinite(p) and p >= 1
    ):
        raise ValueError(f"p={p!r} must be a finite number >= 1 (1 for the mean absolute gap, 2 for RMS).")
    if n_bins > prob.size:
        raise ValueError(f"n_bins={n_bins} exceeds the {prob.size} samples: pass n_bins <= number of samples.")
    rng = random_generator(random_state)
    sizes = np.full(n_bins, prob.size // n_bins)
    sizes[: prob.size % n_bins] += 1
    chunk = np.repeat(np.arange(n_bins), sizes)
    total = 0.0
    for _ in range(n_shuffles):
        perm = rng.permutation(prob.size)
        wp, yp, pp = w[perm], y[perm], prob[perm]
        n_b = np.bincount(chunk, weights=wp, minlength=n_bins)
        keep = n_b > 0
        gap = (
            np.bincount(chunk, weights=wp * pp, minlength=n_bins)[keep]
            - np.bincount(chunk, weights=wp * yp, minlength=n_bins)[keep]
        ) / n_b[keep]
        total += np.sum(n_b[keep] / w.sum() * np.abs(gap) ** p) ** (1.0 / p)
    return float(total / n_shuffles)


# ----------------------------------------------------------------------------- scores


def brier_score(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> float:
    r"""Brier score :math:`\frac{1}{W}\sum_i w_i (y_i - p_i)^2` (scikit-learn's ``brier_score_loss``).

    This is the one-class form in [0, 1], not the two-class sum (which is twice as large).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    from sklearn.metrics import brier_score_loss

    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return float(brier_score_loss(y, p, sample_weight=w, labels=[0.0, 1.0]))


def rmse(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> float:
    r"""Root mean squared error :math:`\sqrt{\mathrm{Brier}}` of the probabilities against the labels.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    return float(np.sqrt(brier_score(y_true, y_prob, sample_weight=sample_weight, pos_label=pos_label)))


def log_loss(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> float:
    r"""Mean negative log-likelihood :math:`-\frac{1}{W}\sum_i w_i[y_i \log p_i + (1-y_i)\log(1-p_i)]`.

    Computed by scikit-learn's ``log_loss``, which clips the probabilities to
    :math:`[\epsilon, 1 - \epsilon]` with :math:`\epsilon` the float64 machine epsilon
    (about 2.2e-16), so a confident wrong prediction costs about 36 nats instead of
    infinity.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    from sklearn.metrics import log_loss as _sk_log_loss

    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return float(_sk_log_loss(y, p, sample_weight=w, labels=[0.0, 1.0]))


def roc_auc(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> float:
    """Area under the ROC curve (scikit-learn's ``roc_auc_score``; ties count one half).

    Needs both classes in ``y_true``.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    from sklearn.metrics import roc_auc_score

    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label, require_both=True, purpose="ROC AUC")
    if sample_weight is not None:
        check_class_weights(y.astype(np.int8), w, name="sample_weight", purpose="ROC AUC")
    return float(roc_auc_score(y, p, sample_weight=w))


def accuracy(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> float:
    r"""Accuracy of the rule :math:`\hat y = [p > 0.5]` (a tie at 0.5 predicts class 0).

    The same rule as :meth:`bayescal.base.Calibrator.predict` with its default threshold.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    float
    """
    from sklearn.metrics import accuracy_score

    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    return float(accuracy_score(y, (p > 0.5).astype(np.float64), sample_weight=w))


# ----------------------------------------------------------------------------- decompositions


@dataclass(frozen=True)
class BrierDecomposition:
    r"""Murphy's and Cohen & Goldszmidt's decompositions of the Brier score.

    Attributes
    ----------
    brier : float
        The Brier score of the forecasts.
    reliability : float
        REL :math:`= \sum_k \frac{n_k}{W}(f_k - o_k)^2`.
    resolution : float
        RES :math:`= \sum_k \frac{n_k}{W}(o_k - \bar o)^2`.
    uncertainty : float
        UNC :math:`= \bar o (1 - \bar o)`.
    calibration : float
        Cohen & Goldszmidt's calibration term (= REL).
    refinement : float
        Cohen & Goldszmidt's refinement term (= UNC - RES).
    n_groups : int
        Number of groups (distinct forecast values, or non-empty bins).
    binned : bool
        False when the groups are the distinct forecast values, where
        ``brier == reliability - resolution + uncertainty`` exactly; True for bins, where
        the identity is off by the within-bin variation of the forecasts.
    """

    brier: float
    reliability: float
    resolution: float
    uncertainty: float
    calibration: float
    refinement: float
    n_groups: int
    binned: bool


def brier_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int | None = None,
    strategy: str = "uniform",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> BrierDecomposition:
    r"""Murphy's (1973) decomposition Brier = REL - RES + UNC, and Cohen & Goldszmidt's.

    Group the samples by forecast: with ``n_bins=None`` each distinct value of
    :math:`p` is a group :math:`k` with forecast :math:`f_k = p`; otherwise the groups are
    the non-empty bins of ``strategy`` and :math:`f_k` is the bin's mean forecast (the
    binned decomposition, flagged ``binned=True``). With :math:`n_k` the group weight,
    :math:`o_k` its fraction of positives and :math:`\bar o` the overall one,

    .. math::

        \mathrm{REL} = \sum_k \tfrac{n_k}{W}(f_k - o_k)^2,\quad
        \mathrm{RES} = \sum_k \tfrac{n_k}{W}(o_k - \bar o)^2,\quad
        \mathrm{UNC} = \bar o(1 - \bar o).

    Over distinct values Brier = REL - RES + UNC exactly. Cohen & Goldszmidt (2004) call
    REL the calibration and UNC - RES the refinement, so Brier = calibration + refinement.
    With continuous forecasts every distinct value is its own group, REL = Brier and the
    refinement is 0; use bins (or :func:`corp_decomposition`) for a useful split.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    n_bins : int, optional
        Group the forecasts into this many bins (a binned decomposition); None groups by
        distinct forecast value (the exact one).
    strategy : {"uniform", "quantile", "papers"}, default "uniform"
        Binning when ``n_bins`` is given, as in :func:`ece`.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Murphy, A. H. (1973). A new vector partition of the probability score. J. Appl.
    Meteorol. 12, 595-600. Cohen, I. & Goldszmidt, M. (2004). Properties and benefits of
    calibrated classifiers. PKDD, LNCS 3202, 125-136.
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    _check_choice(strategy, "strategy", STRATEGIES)  # checked even when n_bins=None does not use it
    W = w.sum()
    if n_bins is None:
        values, ids = np.unique(p, return_inverse=True)
        n_k = np.bincount(ids, weights=w)
        keep = n_k > 0  # a forecast value whose rows all have weight 0 is no group
        n_k, f_k = n_k[keep], values[keep]
        o_k = np.bincount(ids, weights=w * y)[keep] / n_k
    else:
        n_bins = _check_positive_int(n_bins)
        _check_choice(strategy, "strategy", STRATEGIES)
        bins = _bin_stats(p, y, w, n_bins, strategy)
        n_k, f_k, o_k = bins.weight, bins.mean_predicted, bins.fraction_positive
    o_bar = float(np.sum(w * y) / W)
    rel = float(np.sum(n_k * (f_k - o_k) ** 2) / W)
    res = float(np.sum(n_k * (o_k - o_bar) ** 2) / W)
    unc = o_bar * (1.0 - o_bar)
    return BrierDecomposition(
        brier=float(np.sum(w * (y - p) ** 2) / W),
        reliability=rel,
        resolution=res,
        uncertainty=unc,
        calibration=rel,
        refinement=unc - res,
        n_groups=int(n_k.size),
        binned=n_bins is not None,
    )


@dataclass(frozen=True)
class CORPDecomposition:
    """CORP decomposition ``score = mcb - dsc + unc`` of a proper score.

    Attributes
    ----------
    score : float
        Mean score of the forecasts, S(p).
    mcb : float
        Miscalibration S(p) - S(PAV-recalibrated p), >= 0.
    dsc : float
        Discrimination UNC - S(PAV-recalibrated p), >= 0.
    unc : float
        Uncertainty: the score of the climatological forecast (the mean label).
    score_name : str
        "brier" or "log".
    """

    score: float
    mcb: float
    dsc: float
    unc: float
    score_name: str


def _mean_score(y: np.ndarray, q: np.ndarray, w: np.ndarray, score: str) -> float:
    if score == "brier":
        s = (y - q) ** 2
    else:
        s = -(xlogy(y, q) + xlogy(1.0 - y, 1.0 - q))
    return float(np.sum(w * s) / w.sum())


def corp_decomposition(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    score: str = "brier",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> CORPDecomposition:
    r"""CORP score decomposition (Dimitriadis, Gneiting & Jordan 2021).

    The forecasts are recalibrated by the pool-adjacent-violators algorithm: equal
    forecast values are first pooled into one block (weight :math:`n_k`, event rate
    :math:`o_k`), so the order of tied samples never matters, then
    ``scipy.optimize.isotonic_regression`` fits the non-decreasing :math:`\hat p` to the
    blocks. With :math:`S` the mean score and :math:`\bar y` the (weighted) event rate,

    .. math::

        \mathrm{MCB} = S(p) - S(\hat p),\qquad \mathrm{DSC} = S(\bar y) - S(\hat p),\qquad
        \mathrm{UNC} = S(\bar y),\qquad S(p) = \mathrm{MCB} - \mathrm{DSC} + \mathrm{UNC}.

    Both components are non-negative for any proper score, because the PAV fit is
    optimal among monotone recalibrations for all of them at once.

    Parameters
    ----------
    y_true, y_prob, sample_weight
        As in :func:`ece`.
    score : {"brier", "log"}, default "brier"
        Brier score :math:`(y - p)^2` or logarithmic score
        :math:`-y\log p - (1-y)\log(1-p)` (not clipped: a forecast of exactly 0 or 1
        that misses gives an infinite score).
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Dimitriadis, T., Gneiting, T. & Jordan, A. I. (2021). Stable reliability diagrams for
    probabilistic classifiers. PNAS 118(8), e2016191118.
    """
    from scipy.optimize import isotonic_regression

    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    _check_choice(score, "score", ("brier", "log"))
    positive = w > 0  # zero-weight samples play no part (and would give 0 * inf under "log")
    y, p, w = y[positive], p[positive], w[positive]
    values, ids = np.unique(p, return_inverse=True)
    n_k = np.bincount(ids, weights=w, minlength=values.size)
    keep = n_k > 0
    o_k = np.zeros_like(n_k)
    o_k[keep] = np.bincount(ids, weights=w * y, minlength=values.size)[keep] / n_k[keep]
    fitted = np.zeros_like(n_k)
    fitted[keep] = isotonic_regression(o_k[keep], weights=n_k[keep], increasing=True).x
    recalibrated = np.clip(fitted[ids], 0.0, 1.0)
    climatology = np.full_like(p, np.sum(w * y) / w.sum())
    s_p = _mean_score(y, p, w, score)
    s_pav = _mean_score(y, recalibrated, w, score)
    unc = _mean_score(y, climatology, w, score)
    # both are >= 0 in exact arithmetic (PAV minimises the score over maps of p, climatology among them)
    return CORPDecomposition(score=s_p, mcb=max(s_p - s_pav, 0.0), dsc=max(unc - s_pav, 0.0), unc=unc, score_name=score)


@dataclass(frozen=True)
class BayesErrorBounds:
    r"""Bounds on the error of the 0.5-threshold rule from a calibrated forecast.

    Attributes
    ----------
    refinement : float
        :math:`R = \frac{1}{W}\sum_i w_i p_i(1 - p_i)`, the refinement of a calibrated
        forecast.
    error_rate : float
        Observed error rate :math:`e_t` of the rule :math:`\hat y = [p > 0.5]`; an upper
        bound on the Bayes error :math:`e^*`.
    expected_error_rate : float
        :math:`\frac{1}{W}\sum_i w_i \min(p_i, 1 - p_i)`: the error rate :math:`e_t` the
        forecast itself predicts when it is calibrated.
    lower : float
        :math:`(1 - \sqrt{1 - 4R})/2 \ (\ge R)`: lower bound on :math:`e_t`.
    upper : float
        :math:`2R`: upper bound on :math:`e_t` (and so on :math:`e^*`).
    """

    refinement: float
    error_rate: float
    expected_error_rate: float
    lower: float
    upper: float


def bayes_error_bounds(
    y_true: ArrayLike, y_prob: ArrayLike, *, sample_weight: ArrayLike | None = None, pos_label: Any = None
) -> BayesErrorBounds:
    r"""Cohen & Goldszmidt's (2004, Theorem 1) bounds for calibrated predictions.

    For a calibrated forecast :math:`p` (:math:`P(y=1 \mid p) = p`) the refinement term
    of the Brier score is :math:`R = E[p(1-p)]` and the error of the threshold rule
    :math:`\hat y = [p > 0.5]` is :math:`e_t = E[\min(p, 1-p)]`. Since
    :math:`p(1-p) \le \min(p, 1-p) \le 2p(1-p)` pointwise and the Bayes classifier is the
    best rule,

    .. math:: e^* \le e_t \le 2R,

    which is the theorem as the issue states it. Because
    :math:`\min(p,1-p) = (1 - \sqrt{1 - 4p(1-p)})/2` is convex in :math:`p(1-p)`, Jensen's
    inequality also gives the lower bound :math:`e_t \ge (1 - \sqrt{1 - 4R})/2 \ge R`
    (our addition, not in the paper). The bounds hold for the population quantities when
    the forecast is calibrated; the returned ``error_rate`` is the observed error, which
    fluctuates around :math:`e_t` with sampling noise, and nothing checks calibration
    here (use :func:`ece` or :func:`corp_decomposition` for that).

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    References
    ----------
    Cohen, I. & Goldszmidt, M. (2004). Properties and benefits of calibrated classifiers.
    PKDD, LNCS 3202, 125-136.
    """
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label)
    W = w.sum()
    refinement = float(np.sum(w * p * (1.0 - p)) / W)
    error_rate = float(np.sum(w * ((p > 0.5) != (y == 1.0))) / W)
    expected = float(np.sum(w * np.minimum(p, 1.0 - p)) / W)
    lower = float((1.0 - np.sqrt(max(0.0, 1.0 - 4.0 * refinement))) / 2.0)
    return BayesErrorBounds(
        refinement=refinement,
        error_rate=error_rate,
        expected_error_rate=expected,
        lower=lower,
        upper=2.0 * refinement,
    )


# ----------------------------------------------------------------------------- curve


def reliability_curve(
    y_true: ArrayLike,
    y_prob: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
):
    r"""Binned reliability curve as an ``xarray.Dataset`` over the dimension ``bin``.

    Variables (non-empty bins only, in increasing order of prediction):

    - ``count``: :math:`n_b`, the summed weight (the number of samples without weights);
    - ``mean_predicted``: :math:`e_b`; ``fraction_positive``: :math:`o_b`;
    - ``bin_lower``, ``bin_upper``: the bin's edges (for ``"papers"``, the smallest and
      largest prediction of the group).

    The ``bin`` coordinate is the bin's number among the ``n_bins``. The same binning as
    :func:`ece`, so ``ece(...) == sum(count / count.sum() * |fraction_positive -
    mean_predicted|)`` on the same arguments.

    Parameters
    ----------
    y_true : array-like of shape (n,)
        Binary labels.
    y_prob : array-like of shape (n,)
        Predicted probabilities of the positive class, in [0, 1].
    n_bins : int, default 10
        Number of bins.
    strategy : {"quantile", "uniform", "papers"}, default "quantile"
        Binning, as in :func:`ece`.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights; :math:`W` is their sum (the number of samples without).
    pos_label : optional
        As in :func:`ece`.

    Returns
    -------
    xarray.Dataset
        Over ``bin``, the variables above.
    """
    import xarray as xr

    # count is the weight itself, not a ratio: the weights keep their scale
    y, p, w = _check_inputs(y_true, y_prob, sample_weight, pos_label, relative=False)
    n_bins = _check_positive_int(n_bins)
    _check_choice(strategy, "strategy", STRATEGIES)
    bins = _bin_stats(p, y, w, n_bins, strategy)
    return xr.Dataset(
        {
            "count": ("bin", bins.weight),
            "mean_predicted": ("bin", bins.mean_predicted),
            "fraction_positive": ("bin", bins.fraction_positive),
            "bin_lower": ("bin", bins.lower),
            "bin_upper": ("bin", bins.upper),
        },
        coords={"bin": bins.index},
        attrs={"n_bins": n_bins, "strategy": strategy},
    )
