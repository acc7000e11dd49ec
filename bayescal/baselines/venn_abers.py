"""Inductive and cross Venn-Abers predictors (Vovk & Petej 2014; Vovk, Petej & Fedorova 2015)."""

from __future__ import annotations

import numpy as np
import xarray as xr
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted

from bayescal import _schema as schema
from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import check_integer, resolve_random_state
from bayescal.base import Calibrator
from bayescal.data import ScoreData

__all__ = ["VennAbers", "venn_abers_tables"]


def _pava_stacks(
    sums: np.ndarray, weights: np.ndarray, reverse: bool
) -> tuple[list[int], list[float], list[float], list[int]]:
    """Persistent pool-adjacent-violators stacks of every prefix (or, ``reverse``, every suffix).

    Returns ``(tops, S, W, link)``: node ``n`` is a pooled block with label sum ``S[n]`` and
    weight ``W[n]``, ``link[n]`` the next block towards the far end (-1 for none);
    ``tops[i]`` is the block next to the cut of the prefix of ``i`` groups (``reverse``:
    the suffix from group ``i``). Blocks are never changed once made, so all ``k + 1``
    solutions share them: O(k) nodes in all.
    """
    k = sums.size
    S: list[float] = []
    W: list[float] = []
    link: list[int] = []
    tops = [-1] * (k + 1)
    top = -1
    order = range(k - 1, -1, -1) if reverse else range(k)
    for j in order:
        s, w, p = float(sums[j]), float(weights[j]), top
        # increasing fit: pool while the block before (after, for a suffix) violates the order
        while p >= 0 and ((S[p] / W[p] <= s / w) if reverse else (S[p] / W[p] >= s / w)):
            s, w, p = s + S[p], w + W[p], link[p]
        S.append(s)
        W.append(w)
        link.append(p)
        top = len(S) - 1
        tops[j if reverse else j + 1] = top
    return tops, S, W, link


def venn_abers_tables(
    t: np.ndarray, y: np.ndarray, w: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The isotonic-regression tables of an inductive Venn-Abers predictor.

    For the distinct calibration scores :math:`c_0 < \dots < c_{k-1}` (tied rows pooled,
    weights as frequencies) and each slot :math:`i = 0, \dots, k` of a test score between
    :math:`c_{i-1}` and :math:`c_i`, :math:`p_0[i]` (:math:`p_1[i]`) is the value at the test
    point of the weighted isotonic regression of the labels with the test point added with
    label 0 (1) and weight 1. Rows of weight 0 are left out.

    Computation: the isotonic regression of a concatenation is obtained from those of its
    parts by pooling adjacent violators at the junction. So the prefix solutions (groups
    before slot :math:`i`) and suffix solutions (groups from :math:`i`) are built once, as
    persistent stacks (:func:`_pava_stacks`), and for each slot the test point's block
    absorbs the neighbouring blocks while they violate the order: O(k) in all plus the
    number of blocks absorbed.

    Returns
    -------
    values : ndarray of shape (k,)
    p0, p1 : ndarray of shape (k + 1,)
    """
    w = np.ones_like(t, dtype=np.float64) if w is None else np.asarray(w, dtype=np.float64)
    keep = w > 0  # a row of weight 0 is no row (a score held only by such rows would pool 0 / 0)
    t, y, w = np.asarray(t)[keep], np.asarray(y)[keep], w[keep]
    values, inverse = np.unique(t, return_inverse=True)
    weight = np.bincount(inverse, weights=w)
    positive = np.bincount(inverse, weights=w * y)
    k = values.size
    left, LS, LW, Lprev = _pava_stacks(positive, weight, reverse=False)
    right, RS, RW, Rnext = _pava_stacks(positive, weight, reverse=True)
    tables = np.empty((2, k + 1))
    for i in range(k + 1):
        for label in (0, 1):
            s, n, lo, hi = float(label), 1.0, left[i], right[i]
            while True:
                if hi >= 0 and RS[hi] / RW[hi] < s / n:
                    s, n, hi = s + RS[hi], n + RW[hi], Rnext[hi]
                elif lo >= 0 and LS[lo] / LW[lo] > s / n:
                    s, n, lo = s + LS[lo], n + LW[lo], Lprev[lo]
                else:
                    break
            tables[label, i] = s / n
    return values, tables[0], tables[1]


class VennAbers(Calibrator):
    r"""Inductive Venn-Abers predictor (IVAP), or cross Venn-Abers (CVAP) with ``n_splits``.

    For a test score :math:`s`, isotonic regression of the calibration labels on the scores
    with :math:`(s, 0)` added gives :math:`p_0` at :math:`s`, with :math:`(s, 1)` added
    :math:`p_1` (:func:`venn_abers_tables`; both precomputed for every slot between the
    distinct calibration scores). The pair :math:`[p_0, p_1]` is a multiprobability
    prediction, valid in the sense of Vovk & Petej (2014); :meth:`predict_interval` returns
    it. The calibrated probability is the log-loss merge

    .. math:: p = \frac{p_1}{1 - p_0 + p_1}.

    A test score equal to a calibration score takes, as in the ``venn-abers`` package, the
    slot after the tied calibration scores for :math:`p_0` and the slot before them for
    :math:`p_1`.

    ``n_splits=K`` (cross Venn-Abers on the scores): the calibration data are split into
    :math:`K` stratified folds, an IVAP is built on each, and the :math:`K` pairs are merged
    as Vovk, Petej & Fedorova (2015) do for the log-loss,
    :math:`p = G(p_1) / (G(1 - p_0) + G(p_1))` with :math:`G` the geometric mean over folds;
    the interval is :math:`[1 - G(1 - p_0), G(p_1)]`. (Refitting the classifier per fold, the
    full CVAP, is :class:`~bayescal.classifier.CalibratedClassifier` with
    ``method="venn_abers"`` and ``ensemble=True``, which merges its folds' pairs the same way.)

    Building the tables takes one pass over the :math:`k` distinct calibration scores
    (:func:`venn_abers_tables`); prediction is a binary search.

    Parameters
    ----------
    n_splits : int or None, default None
        ``None`` for the inductive predictor on all calibration data; at least 2 for cross
        Venn-Abers.
    score_kind : {"probability", "decision"}, default "probability"
    random_state : None, int or numpy Generator
        Shuffles the folds of cross Venn-Abers.

    Attributes
    ----------
    values_ : list of ndarray
        Per fold (one for IVAP), the distinct working-scale calibration scores.
    p0_, p1_ : list of ndarray
        Per fold, the tables :math:`p_0, p_1` over the slots: one more than the fold's
        ``values_`` (below the first value, between each two, above the last).

    References
    ----------
    Vovk, V. & Petej, I. (2014). Venn-Abers predictors. UAI, 829-838.
    Vovk, V., Petej, I. & Fedorova, V. (2015). Large-scale probabilistic predictors with and
    without guarantees of validity. NeurIPS 28.
    """

    monotone = True
    gives_venn_abers_pairs = True
    _min_per_class = 1

    _fitted_schema = {
        "values_": schema.array_list("f", ("v",), order="increasing", length="folds"),
        "p0_": schema.array_list("f", ("v+1",), low=0.0, high=1.0, length="folds"),
        "p1_": schema.array_list("f", ("v+1",), low=0.0, high=1.0, length="folds"),
    }

    def __init__(
        self, *, n_splits: int | None = None, score_kind: str = "probability", random_state: RandomStateLike = None
    ):
        self.n_splits = n_splits
        self.score_kind = score_kind
        self.random_state = random_state

    def _fit(self, data: ScoreData, X=None) -> None:
        keep = data.w > 0
        t, y, w = data.t[keep], data.y[keep], data.w[keep]
        seed = resolve_random_state(self.random_state, where=self._name)  # checked also where unused
        if self.n_splits is None:
            folds = [np.arange(t.size)]
        else:
            n_splits = check_integer(self.n_splits, "n_splits", 2)
            if np.bincount(y, minlength=2).min() < n_splits:
                raise ValueError(
                    f"n_splits={n_splits} needs at least {n_splits} calibration scores of each class: "
                    "lower n_splits or use n_splits=None (inductive Venn-Abers)."
                )
            if isinstance(seed, np.random.Generator):
                seed = int(seed.integers(2**31 - 1))
            # the folds are drawn over the rows in a canonical order (label, score, weight), so the
            # same rows in another order give the same folds, and the same fit
            order = np.lexsort((w, t, y))
            t, y, w = t[order], y[order], w[order]
            folds = [test for _, test in StratifiedKFold(n_splits, shuffle=True, random_state=seed).split(t, y)]
        tables = [venn_abers_tables(t[f], y[f], w[f]) for f in folds]
        self.values_ = [v for v, _, _ in tables]
        self.p0_ = [p0 for _, p0, _ in tables]
        self.p1_ = [p1 for _, _, p1 in tables]

    def _pairs(self, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Merged (p0, p1) at working-scale ``t`` (for one fold, the IVAP pair)."""
        t = np.asarray(t, dtype=np.float64)
        p0 = np.stack([p0[np.searchsorted(v, t, side="right")] for v, p0 in zip(self.values_, self.p0_)])
        p1 = np.stack([p1[np.searchsorted(v, t, side="left")] for v, p1 in zip(self.values_, self.p1_)])
        return merge_pairs(p0, p1)

    def _calibrate(self, t, X=None):
        return merged_probability(*self._pairs(t))

    def predict_interval(
        self, scores: ArrayLike, ci_prob: float | None = None, *, X: ArrayLike | None = None
    ) -> xr.DataArray:
        """The Venn-Abers multiprobability pair ``[p0, p1]`` per score, dims ``(obs_id, ci_bound)``.

        ``p0`` (``p1``) is the isotonic calibration at the score with the score added to the
        calibration data with label 0 (1); with ``n_splits`` folds (cross Venn-Abers) the
        folds' pairs are merged into ``[1 - G(1 - p0), G(p1)]``, ``G`` the geometric mean
        over folds (see the class docstring). ``ci_prob`` is not used (the pair has no nominal probability; attr
        ``ci_kind`` is ``"venn_abers"``); it is accepted so that every calibrator answers
        the same call.

        Parameters
        ----------
        scores : array-like of shape (n,) or (n, 1)
            Scores on the input scale.
        ci_prob : float, optional
            Ignored (see above).
        X : None
            Venn-Abers uses scores only; passing features raises ``ValueError``.

        Returns
        -------
        xarray.DataArray
            Named ``p_interval``, dims ``(obs_id, ci_bound)`` with ``ci_bound = ["lower",
            "upper"]`` holding ``p0`` and ``p1``; attrs ``ci_kind="venn_abers"``,
            ``degenerate=0``.
        """
        check_is_fitted(self)
        t = self._working(scores)
        self._check_X(X, t.shape[0], fitting=False)
        return pair_interval(*self._pairs(t))


def merge_pairs(p0: np.ndarray, p1: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""The cross Venn-Abers merge of K folds' pairs, arrays of shape ``(K, n)``:
    :math:`[1 - G(1 - p_0), G(p_1)]`, :math:`G` the geometric mean over the folds (one fold: its pair)."""
    if p0.shape[0] == 1:
        return p0[0], p1[0]
    with np.errstate(divide="ignore"):
        g1 = np.exp(np.log(p1).mean(axis=0))
        g0 = np.exp(np.log1p(-p0).mean(axis=0))
    return 1.0 - g0, g1


def merged_probability(p0: np.ndarray, p1: np.ndarray) -> np.ndarray:
    """The single probability of a Venn-Abers pair for the log-loss, :math:`p_1 / (1 - p_0 + p_1)`."""
    return p1 / (1.0 - p0 + p1)


def pair_interval(p0: np.ndarray, p1: np.ndarray) -> xr.DataArray:
    """The pairs as ``predict_interval`` returns them: ``p_interval`` over ``(obs_id, ci_bound)``."""
    return xr.DataArray(
        np.column_stack([p0, p1]),
        dims=("obs_id", "ci_bound"),
        coords={"obs_id": np.arange(np.size(p0)), "ci_bound": ["lower", "upper"]},
        name="p_interval",
        attrs={"ci_kind": "venn_abers", "degenerate": 0},
    )
