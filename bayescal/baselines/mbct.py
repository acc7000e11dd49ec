"""MBCT: Multiple Boosting Calibration Trees, the feature-aware calibrator."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import expit

from bayescal import _schema as schema
from bayescal._stats import quantile_sketch, sketch_quantile, weighted_quantile
from bayescal._typing import RandomStateLike
from bayescal._validation import (
    _WEIGHT_MAX_TINY,
    _WEIGHT_TOTAL_MAX,
    RowValueError,
    check_class_weights,
    check_consistent_length,
    check_features,
    check_integer,
    check_labels,
    check_number,
    check_sample_weight,
    check_scores,
    random_generator,
    whole_data_error,
)
from bayescal.base import Calibrator
from bayescal.data import WORKING_ENDS, ScoreData, dask_partitions, to_working

__all__ = ["MBCT"]

_LEAF = -1
_STAY, _LEFT, _RIGHT = 0, 1, 2
_MAX_KEY = 2**62  # mixed-radix keys of the feature combinations must stay below this
_SCORE_TAIL = 0.005  # the score bins span the working scale between these weighted quantiles
_SKETCH_SIZE = 1000  # points per partition and column of the quantile sketches of the Dask route
_SUMS = ("yt", "ft", "wt", "w2t", "yv", "fv", "wv", "w2v")


def _score_range_rows(t: np.ndarray, w: np.ndarray, score_kind: str) -> np.ndarray:
    """Rows whose scores set the range of the score bins: those of positive weight and, for
    probability scores, strictly inside (0, 1). An exact 0 or 1 sits at the working scale's clip
    (about -27.6 or 27.6, far from the other scores); it falls in an end bin."""
    rows = w > 0
    if score_kind == "probability":
        rows &= (t > WORKING_ENDS[0]) & (t < WORKING_ENDS[1])
    return rows


def _as_numbers(col: np.ndarray) -> np.ndarray | None:
    """A feature column's values as floats when it holds numbers (a numeric dtype, or objects that
    are all numbers); None when it holds text, which is categorical even where it reads as numbers
    ("01", "001" and "1" are three levels; zip codes are not quantities)."""
    if col.dtype.kind in "biuf":
        return col.astype(np.float64)
    if col.dtype.kind in "USa" or any(isinstance(v, (str, bytes)) for v in col.ravel().tolist()):
        return None
    try:
        return col.astype(np.float64)
    except (TypeError, ValueError):
        return None


class MBCT(Calibrator):
    r"""Multiple Boosting Calibration Trees (Huang et al., WWW 2022): feature-aware binning.

    Histogram binning puts samples with similar scores in one bin. MBCT lets the bins
    follow the features as well: a tree over discrete features and the binned score
    partitions the samples into leaves, and each leaf rescales the prediction linearly,

    .. math:: g_\ell(f) = k_\ell\, f, \qquad
              k_\ell = \frac{\sum_{i \in \ell} w_i y_i}{\sum_{i \in \ell} w_i f_i},

    so that the mean calibrated prediction of a leaf equals its fraction of positives while
    samples inside a leaf keep their order ("individual" calibration). Trees are grown
    greedily to reduce the multi-view calibration error (MVCE) and boosted: tree
    :math:`m` calibrates the output of trees :math:`1..m-1`, so the final map is

    .. math:: \hat p(s, x) = \operatorname{clip}\Big(f_0(s) \prod_{m=1}^{M} k^{(m)}_{\ell_m(s, x)},
              0, 1\Big), \qquad f_0(s) = \sigma(t(s)),

    with :math:`t` the working scale (:math:`f_0` is the probability score itself, or the
    logistic of a decision value). The map is not monotone in the score: samples with the
    same score but different features may be reordered, which is how MBCT can raise AUC.

    Algorithm. The authors published no code, and only the paper's abstract and summaries
    could be consulted while writing this one; what follows implements the description
    above (trees over discrete features and the binned score, leaves :math:`k f`, greedy
    splits on the MVCE, boosting), and every detail that had to be decided here is marked
    *choice*:

    1. **Features.** Each column of ``X`` is encoded as integer levels. A numeric column
       with more than ``n_feature_bins`` distinct values is *continuous*: it is cut at its
       weighted quantiles into at most ``n_feature_bins`` ordered levels (duplicate edges
       merged; values beyond the training range fall in the end levels). Any other column
       (fewer distinct numbers, strings, booleans) is *categorical*: one level per
       distinct training value, plus one "unseen" level for values met only at predict
       time. *Choice*: the score is one more ordered feature, cut into
       ``n_score_bins`` equal-width bins of the working scale :math:`t` (the logit of a
       probability) between the weighted 0.5% and 99.5% quantiles of the scores strictly
       inside (0, 1) (of all decision values), the end bins open, so exact 0 and 1
       probabilities fall in the end bins (with no score inside (0, 1), the bins span the
       working scale's values of 0 and 1). Equal width in :math:`t` rather than in
       :math:`f_0` resolves small probabilities (click-through-like data), where a per-leaf
       :math:`k f` needs narrow bins; the quantiles keep a few extreme scores from
       stretching the grid, and leaving out the exact 0 and 1 (at the working scale's clip,
       :math:`\pm 27.6`) keeps them from doing so however many there are. The score feature is
       that of the original score in every tree, so the trees work on aggregates (step 2).
    2. **Aggregation.** Rows with the same combination of levels (features and score bin)
       always share a leaf, so they are replaced by their sums :math:`\sum w y`,
       :math:`\sum w f_0`, :math:`\sum w` (separately for the training and validation
       parts of step 3). Because every tree multiplies the prediction by a per-leaf
       factor, the current prediction sum of a combination is its :math:`\sum w f_0`
       times the product of the factors so far: exact, and every split evaluation costs
       the number of combinations, not of rows. Combinations are found by a mixed-radix
       integer key and ``numpy.unique`` (``numpy.unique(..., axis=0)`` when the key would
       overflow).
    3. **Split criterion** (*choice*). The rows are split at random into a training part
       and a validation part (``validation_fraction``). Leaf factors of a candidate split
       are computed on the training part; the split is judged on the validation part by
       the local MVCE of the node with :math:`p = 2`, in squared form: over
       :math:`R` = ``mvce_shuffles`` random orders of the node's combinations, cut into
       ``mvce_bins`` bins of (about) equal validation weight :math:`n_b`,

       .. math:: Q = \frac{1}{R} \sum_{r=1}^{R} \sum_b \frac{n_b}{N}
                 \Big(\frac{\sum_{i\in b} w_i \hat p_i - \sum_{i \in b} w_i y_i}{n_b}\Big)^2 .

       Shuffled are combinations, not rows (the rows of one combination share a bin);
       this is what makes the criterion computable on aggregates. The parent (one factor
       for the node) and all candidates at a node are scored on the same shuffles, so
       their difference is not blurred by the randomness of the binning. *Choice*: by
       default (``mvce_bins=None``) the bins are as fine as the aggregation allows, one
       per combination, so no shuffle is needed and the criterion is exact. Coarse random
       bins mix the segments a split separates, which cancels the signal; how the number of
       bins trades error against time is measured by ``benchmarks/bench_mbct.py``.
       *Choice*, "no local improvement": the decrease :math:`\Delta Q` of the best
       candidate must exceed ``min_gain_z`` standard errors, the standard error of
       :math:`\Delta Q` under the hypothesis that the parent's factor is right
       (Bernoulli variance :math:`\sum w_i^2 \bar p (1 - \bar p)` of each bin's label
       sum, with :math:`\bar p` the combination's mean parent prediction). Without such a
       margin the best of many noisy candidates nearly always "improves" and the trees
       split on noise features; a plain :math:`\Delta Q > 0` is ``min_gain_z=0``.
    4. **Candidate splits** (*choice*: binary). For an ordered feature (a continuous
       feature or the score) every cut between consecutive levels present in the node's
       training part; for a categorical feature the levels are first ordered by their
       training ratio :math:`\sum y / \sum \hat p` in the node (Fisher's ordering, as in
       CART and LightGBM) and then cut the same way. Both children need training weight
       at least ``min_samples_leaf``.
    5. **Stopping.** A node becomes a leaf at depth ``max_depth``, when it holds less
       than ``2 * min_samples_leaf`` training weight, or when no candidate lowers the
       node's MVCE significantly (step 3).
    6. **Boosting.** Up to ``n_estimators`` trees are grown, each on the predictions of
       the previous ones; the boosting stops early once a tree finds no split (it would
       only rescale by its root factor, which the previous trees already matched on the
       training part).
    7. **Refit** (*choice*). Once all tree structures are fixed, every node factor is
       recomputed, tree after tree, on all rows (training and validation parts), so no
       data is wasted on the final factors.

    Prediction routes each row down every tree. *Choice*: a row whose level at a split
    was not seen in that node's training part (in particular a categorical value never
    seen in ``fit``) stops at that node and takes the node's own factor (every node, not
    only the leaves, keeps :math:`\sum y / \sum \hat p` over all rows through it). A
    factor is 1 when its node has no prediction mass. *Choice*: factors are not clipped
    while fitting (so the aggregates stay exact); the product :math:`f_0 \prod k` is
    clipped to [0, 1] at prediction. A leaf without positives has factor 0.

    Dask. ``fit`` also takes Dask collections, e.g. ``MBCT().fit(ddf["score"], ddf["label"],
    X=ddf[["a", "b"]])`` (Dask dataframe columns, or Dask arrays with the same row chunks;
    all inputs Dask), and never collects the rows. Pass 1 validates each partition with
    the checks (and messages) of the in-memory route, whose figures (first index, count,
    min, max) are then the partition's; it returns the partition's label values and
    counts, score range, at most ``n_feature_bins + 1`` distinct values per column, and
    quantile sketches (:func:`~bayescal._stats.quantile_sketch`, 1000 points per partition
    and column). Exact: the label checks, the class counts, the kind of every column and
    the levels of categorical ones (a column mixing strings with more than
    ``n_feature_bins`` distinct numbers across partitions is refused). Approximate: the
    edges of continuous columns and the 0.5 % / 99.5 % score quantiles come from the
    merged sketches (of the scores strictly inside (0, 1), as in memory), whose weighted
    rank is within about 0.15 % of the target, so an edge may move past a few rows' values.
    Pass 2 encodes each partition (the same :meth:`_encode`) and draws its
    training/validation split from
    ``SeedSequence([base, partition number])``, ``base`` drawn first from the generator of
    ``random_state`` (which then grows the trees): a fit is reproducible from
    ``random_state`` on any scheduler for the same partitioning, but differs from the
    in-memory fit and from another partitioning. Each partition's sums per level
    combination (step 2) are added by a Dask group-by; only that table is computed, and
    the trees are grown on it exactly as in memory.

    Parameters
    ----------
    score_kind : {"probability", "decision"}
    n_estimators : int, default 10
        Most trees to boost.
    max_depth : int, default 4
        Depth of each tree (the root has depth 0).
    min_samples_leaf : float, default 100
        Least weight of the training part (its number of rows when unweighted; the
        training part is ``1 - validation_fraction`` of the rows) in each child of a split.
    n_score_bins : int, default 20
        Equal-width bins of the score (working scale), the trees' score feature.
    n_feature_bins : int, default 10
        Quantile levels of a continuous feature; numeric columns with at most this many
        distinct values are categorical.
    validation_fraction : float, default 0.3
        Share of rows on which splits are judged (step 3). A row of integer weight k is k
        repeated rows, split one by one: a binomial share of them goes to the validation
        part, so weights and repeated rows give trees of the same distribution. A row of
        non-integer weight goes to one part whole, with its weight.
    mvce_bins : int or None, default None
        Random equal-weight bins of the local MVCE; ``None`` (or at least as many as the
        node has combinations) makes every combination its own bin (step 3).
    mvce_shuffles : int, default 8
        Random orders of the local MVCE (used only with random bins).
    min_gain_z : float, default 1.0
        Standard errors by which a split must lower the node's MVCE (step 3).
    random_state : int, numpy Generator or None
        Seeds the training/validation split and the shuffles.

    Attributes
    ----------
    feature_names_x_ : ndarray of str
        The columns' names when ``X`` was a frame with string column names in ``fit``; a frame
        at prediction must have the same columns in the same order (features are matched by
        position). Absent when ``X`` had no names.
    feature_kinds_ : list of str
        "continuous" or "categorical" per column of ``X``.
    feature_edges_ : list of ndarray
        Inner quantile edges of each continuous column (empty for categorical ones).
    feature_levels_ : list of ndarray
        Training values of each categorical column (empty for continuous ones).
    score_edges_ : ndarray
        Inner edges of the score bins (working scale).
    n_codes_ : ndarray of int
        Number of levels of each column of ``X`` and, last, of the score.
    tree_roots_ : ndarray of int
        Node index of each tree's root.
    node_feature_, node_left_, node_right_ : ndarray of int
        Split column (``n_features_x_`` for the score) and children; -1 at leaves.
    node_route_ : ndarray of int8, shape (n_nodes, max levels)
        Where a level goes at a node: 1 left, 2 right, 0 stay.
    node_factor_ : ndarray of float
        The factor :math:`k` of each node.
    n_combinations_ : int
        Distinct level combinations in the training data (the aggregated rows).

    References
    ----------
    Huang, S., Wang, Y., Mou, L., Zhang, H., Zhu, H., Yu, C. & Zheng, B. (2022). MBCT:
    Tree-based feature-aware binning for individual uncertainty calibration. Proceedings
    of the ACM Web Conference (WWW '22), 2236-2246. arXiv:2202.04348.

    Fisher, W. D. (1958). On grouping for maximum homogeneity. JASA 53, 789-798.
    """

    feature_aware = True
    monotone = False
    _fitted_schema = {
        "score_edges_": schema.array("f", ("e",), order="increasing"),
        "feature_kinds_": schema.mapping(),
        "feature_edges_": schema.array_list("f", ("fe",), length="d", order="nondecreasing"),
        "feature_levels_": schema.array_list("fibU", ("fl",), length="d"),
        "n_codes_": schema.array("i", ("d+1",), low=1),
        "n_combinations_": schema.scalar("i", low=0),
        "n_features_x_": schema.scalar("i", low=1, dim="d"),
        "tree_roots_": schema.array("i", ("T",), low=0, order="increasing", max_size=schema.int_param("n_estimators")),
        "node_feature_": schema.array("i", ("N",), low=_LEAF),
        "node_left_": schema.array("i", ("N",), low=_LEAF),
        "node_right_": schema.array("i", ("N",), low=_LEAF),
        "node_route_": schema.array("i", ("N", "c"), choices=(_STAY, _LEFT, _RIGHT)),
        "node_factor_": schema.array("f", ("N",), low=0.0),
    }
    _min_samples = 2

    def __init__(
        self,
        *,
        score_kind: str = "probability",
        n_estimators: int = 10,
        max_depth: int = 4,
        min_samples_leaf: float = 100,
        n_score_bins: int = 20,
        n_feature_bins: int = 10,
        validation_fraction: float = 0.3,
        mvce_bins: int | None = None,
        mvce_shuffles: int = 8,
        min_gain_z: float = 1.0,
        random_state: RandomStateLike = None,
    ):
        self.score_kind = score_kind
        self.n_estimators = n_estimators
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.n_score_bins = n_score_bins
        self.n_feature_bins = n_feature_bins
        self.validation_fraction = validation_fraction
        self.mvce_bins = mvce_bins
        self.mvce_shuffles = mvce_shuffles
        self.min_gain_z = min_gain_z
        self.random_state = random_state

    # ---- parameters -------------------------------------------------------------------
    def _check_params(self) -> None:
        for name, low in (
            ("n_estimators", 1),
            ("max_depth", 0),
            ("n_score_bins", 1),
            ("n_feature_bins", 2),
            ("mvce_shuffles", 1),
        ):
            check_integer(getattr(self, name), name, low)
        if self.mvce_bins is not None:
            check_integer(self.mvce_bins, "mvce_bins")
        check_number(self.min_samples_leaf, "min_samples_leaf", low=0.0, inclusive=False)
        check_number(self.validation_fraction, "validation_fraction", low=0.0, high=1.0, inclusive=False)
        check_number(self.min_gain_z, "min_gain_z", low=0.0)

    # ---- encoding ---------------------------------------------------------------------
    def _learn_encoding(self, X: np.ndarray, t: np.ndarray, w: np.ndarray) -> None:
        kinds, edges, levels = [], [], []
        held = w > 0  # rows of weight 0 are absent: they set no level, edge or kind
        for j in range(X.shape[1]):
            col = X[held, j]
            values = _as_numbers(col)
            distinct = np.unique(values if values is not None else col.astype(str))
            if values is not None and distinct.size > self.n_feature_bins:
                kinds.append("continuous")
                edges.append(np.unique(weighted_quantile(values, self._feature_quantiles(), w[held])))
                levels.append(np.empty(0))
            else:
                kinds.append("categorical")
                edges.append(np.empty(0))
                levels.append(distinct)
        rows = _score_range_rows(t, w, self.score_kind)
        if rows.any():
            lo, hi = weighted_quantile(t[rows], np.array([_SCORE_TAIL, 1.0 - _SCORE_TAIL]), w[rows])
        else:  # every score an exact 0 or 1
            lo, hi = WORKING_ENDS
        self._set_encoding(kinds, edges, levels, lo, hi)

    def _feature_quantiles(self) -> np.ndarray:
        """Probabilities of the inner edges of a continuous column."""
        return np.arange(1, self.n_feature_bins) / self.n_feature_bins

    def _set_encoding(self, kinds: list, edges: list, levels: list, lo: float, hi: float) -> None:
        """Store the encoding: per column its kind, inner edges and levels; the score bins span [lo, hi]."""
        self.score_edges_ = np.unique(np.linspace(lo, hi, self.n_score_bins + 1)[1:-1]) if hi > lo else np.empty(0)
        n_codes = [
            e.size + 1 if kind == "continuous" else lev.size + 1  # + the "unseen" level
            for kind, e, lev in zip(kinds, edges, levels)
        ]
        n_codes.append(self.score_edges_.size + 1)
        self.feature_kinds_, self.feature_edges_, self.feature_levels_ = kinds, edges, levels
        self.n_codes_ = np.array(n_codes, dtype=np.int64)

    def _encode(self, X: np.ndarray, t: np.ndarray) -> np.ndarray:
        """Integer levels of every column of ``X`` and of the score: array ``(n, d + 1)``."""
        codes = np.empty((X.shape[0], X.shape[1] + 1), dtype=np.int32)
        for j, kind in enumerate(self.feature_kinds_):
            col = X[:, j]
            if kind == "continuous" or self.feature_levels_[j].dtype.kind in "fiub":
                col = _as_numbers(col)
                if col is None:
                    raise ValueError(
                        f"X column {j} was numeric in fit but has non-numeric values now: "
                        "pass the same kind of features as in fit."
                    )
            if kind == "continuous":
                codes[:, j] = np.searchsorted(self.feature_edges_[j], col, side="right")
            else:
                lev = self.feature_levels_[j]
                col = col if lev.dtype.kind in "fiub" else col.astype(str)
                pos = np.minimum(np.searchsorted(lev, col), lev.size - 1)
                codes[:, j] = np.where(lev[pos] == col, pos, lev.size)
        codes[:, -1] = np.searchsorted(self.score_edges_, t, side="right")
        return codes

    def _combinations(self, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Distinct rows of ``codes`` and, for each row, the index of its combination."""
        if np.prod(self.n_codes_.astype(float)) < _MAX_KEY:
            strides = np.concatenate([np.cumprod(self.n_codes_[::-1])[::-1][1:], [1]])
            key = codes.astype(np.int64) @ strides
            _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
            return codes[first], inverse
        uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
        return uniq, inverse.ravel()

    # ---- fitting ----------------------------------------------------------------------
    def _fit(self, data: ScoreData, X: np.ndarray | None = None) -> None:
        self._check_params()
        rng = random_generator(self.random_state, where=self._name)
        self._learn_encoding(X, data.t, data.w)
        codes = self._encode(X, data.t)
        parts = _split_weights(data.w, rng.random(data.n), self.validation_fraction)
        combos, sums = self._aggregate(codes, data.y, expit(data.t), parts)
        self._fit_sums(combos, sums, rng)

    def _aggregate(
        self, codes: np.ndarray, y: np.ndarray, f0: np.ndarray, parts: dict[str, tuple[np.ndarray, np.ndarray]]
    ) -> tuple[np.ndarray, dict]:
        """Distinct level combinations of ``codes`` and their sums (step 2).

        ``parts`` holds each row's weight and sum of squared unit weights in the training
        (``"t"``) and validation (``"v"``) parts (:func:`_split_weights`). ``sums`` maps
        ``"y"``, ``"f"``, ``"w"``, ``"w2"`` (sums of w y, w f0, w and the squared unit
        weights) followed by the part's letter to one array per combination.
        """
        combos, inverse = self._combinations(codes)
        g = combos.shape[0]
        y = y.astype(np.float64)
        sums = {}
        for part, (wm, sq) in parts.items():
            sums["y" + part] = np.bincount(inverse, wm * y, minlength=g)
            sums["f" + part] = np.bincount(inverse, wm * f0, minlength=g)
            sums["w" + part] = np.bincount(inverse, wm, minlength=g)
            sums["w2" + part] = np.bincount(inverse, sq, minlength=g)
        return combos, sums

    def _fit_sums(self, combos: np.ndarray, sums: dict, rng: np.random.Generator) -> None:
        """Grow the boosted trees on the aggregates of :meth:`_aggregate` and refit their factors (steps 3-7)."""
        self.n_combinations_ = int(combos.shape[0])
        g = combos.shape[0]
        cols = np.ascontiguousarray(combos.T, dtype=np.intp)  # one row per feature: fast gathers and bincounts
        nodes: list[list] = []  # [feature, left, right, factor, route, parent] per node
        roots, terminals = [], []
        factor = np.ones(g)
        for _ in range(self.n_estimators):
            root = len(nodes)
            terminal = self._grow(nodes, cols, sums, factor, rng)
            roots.append(root)
            terminals.append(terminal)
            factor = factor * np.array([n[3] for n in nodes])[terminal]
            if len(nodes) == root + 1:  # no split: boosting has nothing left to add
                break
        self.tree_roots_ = np.array(roots, dtype=np.int64)
        self.node_feature_ = np.array([n[0] for n in nodes], dtype=np.int64)
        self.node_left_ = np.array([n[1] for n in nodes], dtype=np.int64)
        self.node_right_ = np.array([n[2] for n in nodes], dtype=np.int64)
        self.node_route_ = np.array([n[4] for n in nodes], dtype=np.int8)
        self._refit(terminals, [n[5] for n in nodes], sums["yt"] + sums["yv"], sums["ft"] + sums["fv"])

    # ---- fitting on Dask collections ---------------------------------------------------
    def _fit_dask(
        self, scores: Any, y: Any, sample_weight: Any = None, *, X: Any = None, pos_label: Any = None
    ) -> "MBCT":
        """Fit on Dask collections in two passes over the partitions; only reductions travel.

        Pass 1 validates every partition and returns its label values and counts, score
        range, the distinct values of each column (at most ``n_feature_bins + 1``) and
        quantile sketches; the encoding is learnt from their union. Pass 2 encodes each
        partition, splits it into training and validation rows and sums per level
        combination; a Dask group-by adds the partitions' sums.
        """
        import dask
        import dask.dataframe as dd
        import pandas as pd

        self._check_params()
        if X is None:
            check_features(None, 0)  # raises: the features are required
        blocks = dask_partitions(scores, y, sample_weight, X)
        cap = self.n_feature_bins
        stats = dask.compute(
            *[dask.delayed(_partition_stats)(s, yb, w, xb, self.score_kind, pos_label, cap) for s, yb, w, xb in blocks]
        )
        stats = [st for st in stats if st is not None]  # empty partitions
        if not stats:
            raise ValueError("scores is empty: pass at least one value.")
        spans = [(st["n"], st["error"], None if st["error"] else (st["min"], st["max"])) for st in stats]
        error = whole_data_error(spans, ("scores", "y", "sample_weight"))
        if error is not None:  # as the checks on the whole data say it
            raise error
        values = np.concatenate([st["labels"] for st in stats])
        counts = np.concatenate([st["counts"] for st in stats])
        _, classes = check_labels(values, pos_label=pos_label)  # the partitions' label values
        n1 = int(counts[values == classes[1]].sum())
        top = max(st["top"] for st in stats)
        if not top > 0:  # weights are non-negative: their sum is positive iff their largest is
            raise ValueError("sample_weight sums to zero: at least one sample needs a positive weight.")
        if sum(st["relative"] * (st["top"] / top) for st in stats) > _WEIGHT_TOTAL_MAX / top or top < _WEIGHT_MAX_TINY:
            raise ValueError(
                f"sample_weight has largest value {top:.3g}: on Dask data MBCT takes weights as counts only in the "
                "range where their sums stay exact (total at most 1e15, largest at least 1e-100); divide them by "
                "their largest value first."
            )
        label_weights = np.concatenate([st["label_weights"] for st in stats])
        check_class_weights(
            np.array([0, 1]),
            np.array([label_weights[values != classes[1]].sum(), label_weights[values == classes[1]].sum()]),
            classes,
        )
        n_features = len(stats[0]["columns"])
        self._start_fit(
            classes,
            min(st["min"] for st in stats),
            max(st["max"] for st in stats),
            int(counts.sum()) - n1,
            n1,
            n_features,
        )
        self._learn_encoding_from_stats(stats, n_features)

        rng = random_generator(self.random_state, where=self._name)
        base = int(rng.integers(2**63))
        meta = pd.DataFrame(
            {
                **{f"c{j}": pd.Series(dtype=np.int32) for j in range(n_features + 1)},
                **{k: pd.Series(dtype=np.float64) for k in _SUMS},
            }
        )
        tables = [
            dask.delayed(self._partition_sums)(s, yb, w, xb, classes, base, number)
            for number, (s, yb, w, xb) in enumerate(blocks)
        ]
        levels = [f"c{j}" for j in range(n_features + 1)]
        reduced = dd.from_delayed(tables, meta=meta, verify_meta=False).groupby(levels, sort=False).sum()
        table = reduced.compute().reset_index().sort_values(levels, kind="stable")
        combos = table[levels].to_numpy(dtype=np.int32)
        self._fit_sums(combos, {k: table[k].to_numpy(dtype=np.float64) for k in _SUMS}, rng)
        return self

    def _learn_encoding_from_stats(self, stats: list, n_features: int) -> None:
        """The encoding of :meth:`_learn_encoding`, from the partitions' statistics (pass 1)."""
        kinds, edges, levels = [], [], []
        for j in range(n_features):
            cols = [st["columns"][j] for st in stats]
            if all(c["numeric"] for c in cols):
                distinct = np.unique(np.concatenate([c["distinct"] for c in cols]))
                if any(c["many"] for c in cols) or distinct.size > self.n_feature_bins:
                    kinds.append("continuous")
                    edges.append(np.unique(sketch_quantile([c["sketch"] for c in cols], self._feature_quantiles())))
                    levels.append(np.empty(0))
                    continue
            else:  # strings somewhere: every value is a level, numbers included (as in fit on arrays)
                if any(c["numeric"] and c["many"] for c in cols):
                    raise ValueError(
                        f"X column {j} has strings in some partitions and more than "
                        f"{self.n_feature_bins} distinct numbers in others: give the column one type."
                    )
                distinct = np.unique(
                    np.concatenate([c["distinct"] if not c["numeric"] else c["raw"].astype(str) for c in cols])
                )
            kinds.append("categorical")
            edges.append(np.empty(0))
            levels.append(distinct)
        sketches = [st["sketch"] for st in stats]
        if any(points.size for points, _ in sketches):
            lo, hi = sketch_quantile(sketches, np.array([_SCORE_TAIL, 1.0 - _SCORE_TAIL]))
        else:  # every score an exact 0 or 1
            lo, hi = WORKING_ENDS
        self._set_encoding(kinds, edges, levels, lo, hi)

    def _partition_sums(self, s: Any, y: Any, w: Any, X: Any, classes: np.ndarray, base: int, number: int) -> Any:
        """Pass 2 on one partition: its level combinations and their sums, as a pandas DataFrame."""
        import pandas as pd

        arrays = _partition_arrays(s, y, w, X, self.score_kind, classes[1])
        if arrays is None:
            codes, sums = np.empty((0, len(self.n_codes_)), dtype=np.int32), {k: np.empty(0) for k in _SUMS}
        else:
            s, y01, w, X = arrays
            t = to_working(s, self.score_kind)
            split_rng = np.random.default_rng(np.random.SeedSequence([base, number]))
            parts = _split_weights(w, split_rng.random(t.size), self.validation_fraction)
            codes, sums = self._aggregate(self._encode(X, t), y01, expit(t), parts)
        return pd.DataFrame({**{f"c{j}": codes[:, j] for j in range(codes.shape[1])}, **sums})

    def _grow(
        self, nodes: list, cols: np.ndarray, sums: dict, factor: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Grow one tree on the training part, appending to ``nodes``; return each combination's terminal node.

        ``cols`` holds the combinations' levels, one row per feature. A combination stops
        where a split does not route its level (the same rule as :meth:`_route`).
        """
        yt, ft, wt = sums["yt"], sums["ft"] * factor, sums["wt"]
        terminal = np.empty(cols.shape[1], dtype=np.int64)
        stack = [(np.arange(cols.shape[1]), 0, None)]  # (combinations, depth, (parent, side))
        while stack:
            idx, depth, link = stack.pop()
            node = len(nodes)
            fsum = ft[idx].sum()
            k = float(yt[idx].sum() / fsum) if fsum > 0 else 1.0
            split = None
            if depth < self.max_depth and wt[idx].sum() >= 2 * self.min_samples_leaf:
                split = self._best_split(idx, cols, sums, factor, k, rng)
            route = np.zeros(int(self.n_codes_.max()), dtype=np.int8)
            nodes.append([_LEAF, _LEAF, _LEAF, k, route, _LEAF if link is None else link[0]])
            if link is not None:
                nodes[link[0]][link[1]] = node
            terminal[idx] = node
            if split is None:
                continue
            feature, route[:] = split
            nodes[node][0] = feature
            direction = route[cols[feature][idx]]
            stack.append((idx[direction == _RIGHT], depth + 1, (node, 2)))
            stack.append((idx[direction == _LEFT], depth + 1, (node, 1)))
        return terminal

    def _best_split(self, idx, cols, sums, factor, k, rng) -> tuple[int, np.ndarray] | None:
        """The binary split of a node that lowers its validation MVCE most, if significantly; else None."""
        # validation sums of the node's combinations (all zero for those without validation rows)
        yv, pv, wv = sums["yv"][idx], sums["fv"][idx] * factor[idx], sums["wv"][idx]
        sel = np.flatnonzero(wv > 0)
        if sel.size < 2:
            return None
        total = wv.sum()
        safe_w = np.where(wv > 0, wv, 1.0)
        mean_p = np.clip(k * pv / safe_w, 0.0, 1.0)
        var_v = sums["w2v"][idx] * mean_p * (1.0 - mean_p)  # Bernoulli variance of each label sum
        finest = self.mvce_bins is None or self.mvce_bins >= sel.size
        if finest:  # every combination is its own bin: one view, no shuffling needed
            scale = 1.0 / (safe_w * total)
            terms = (2.0 * (k * pv - yv) * pv * scale, pv**2 * scale, 4.0 * pv**2 * var_v * scale**2)
        else:
            yv, pv, wv, var_v = yv[sel], pv[sel], wv[sel], var_v[sel]
            n_shuffles, n_bins = self.mvce_shuffles, self.mvce_bins
            size = n_shuffles * n_bins
            # bin of each (shuffle, combination): random order, cut by cumulative validation weight
            bins = np.empty((n_shuffles, sel.size), dtype=np.int64)
            for r in range(n_shuffles):
                perm = rng.permutation(sel.size)
                mid = np.cumsum(wv[perm]) - 0.5 * wv[perm]
                bins[r, perm] = r * n_bins + np.minimum((mid / total * n_bins).astype(np.int64), n_bins - 1)
            bins = bins.ravel()
            pv_tiled = np.tile(pv, n_shuffles)
            wbin = np.bincount(bins, np.tile(wv, n_shuffles), minlength=size)
            scale = 1.0 / (np.where(wbin > 0, wbin, 1.0) * total * n_shuffles)  # 1 / (n_b N R)
            gap = k * np.bincount(bins, pv_tiled, minlength=size) - np.bincount(
                bins, np.tile(yv, n_shuffles), minlength=size
            )
            var = np.bincount(bins, np.tile(var_v, n_shuffles), minlength=size)

        best_gain, best = 0.0, None
        yt, ft, wt = sums["yt"][idx], sums["ft"][idx] * factor[idx], sums["wt"][idx]
        d = cols.shape[0] - 1
        for j in range(d + 1):
            nc = int(self.n_codes_[j])
            c = cols[j][idx]
            ylev = np.bincount(c, yt, minlength=nc)
            flev = np.bincount(c, ft, minlength=nc)
            wlev = np.bincount(c, wt, minlength=nc)
            present = np.flatnonzero(wlev > 0)
            if present.size < 2:
                continue
            if j < d and self.feature_kinds_[j] == "categorical":
                ratio = np.where(flev[present] > 0, ylev[present] / np.where(flev[present] > 0, flev[present], 1), 0.0)
                order = present[np.argsort(ratio, kind="stable")]
            else:
                order = present
            m = order.size
            cy, cf, cw = np.cumsum(ylev[order])[:-1], np.cumsum(flev[order])[:-1], np.cumsum(wlev[order])[:-1]
            fy, ff, fw = ylev[order].sum(), flev[order].sum(), wlev[order].sum()
            ok = (cw >= self.min_samples_leaf) & (fw - cw >= self.min_samples_leaf) & (cf > 0) & (ff - cf > 0)
            if not ok.any():
                continue
            d_left = np.where(ok, cy / np.where(cf > 0, cf, 1.0), k) - k  # change of the factor, per cut
            d_right = np.where(ok, (fy - cy) / np.where(ff - cf > 0, ff - cf, 1.0), k) - k
            # levels absent from the node's training part are not in ``order``: their
            # combinations stay at the node and do not change
            if finest:
                # per-level sums of the three terms; a cut moves whole levels
                a, b, s2 = (np.cumsum(np.bincount(c, t, minlength=nc)[order]) for t in terms)
                a_l, b_l, s_l = a[:-1], b[:-1], s2[:-1]
                a_r, b_r, s_r = a[-1] - a_l, b[-1] - b_l, s2[-1] - s_l
                g = -(d_left * a_l + d_left**2 * b_l + d_right * a_r + d_right**2 * b_r)
                se = np.sqrt(d_left**2 * s_l + d_right**2 * s_r)
            else:
                rank = np.full(nc, -1, dtype=np.int64)
                rank[order] = np.arange(m)
                slot = rank[c[sel]] + 1  # 0: the level is absent from training
                mass = np.bincount(
                    bins * (m + 1) + np.tile(slot, n_shuffles), pv_tiled, minlength=size * (m + 1)
                ).reshape(size, m + 1)[:, 1:]
                left = np.cumsum(mass, axis=1)[:, :-1]
                delta = d_left * left + d_right * (mass.sum(axis=1)[:, None] - left)
                g = -((2.0 * gap[:, None] + delta) * delta * scale[:, None]).sum(axis=0)
                se = np.sqrt((4.0 * delta**2 * (var * scale**2 * n_shuffles)[:, None]).sum(axis=0))
            g = np.where(ok & (g > self.min_gain_z * se), g, -np.inf)
            cut = int(np.argmax(g))
            if g[cut] > best_gain:
                route = np.zeros(int(self.n_codes_.max()), dtype=np.int8)
                route[order[: cut + 1]] = _LEFT
                route[order[cut + 1 :]] = _RIGHT
                best_gain, best = float(g[cut]), (j, route)
        return best

    def _route(self, combos: np.ndarray, root: int) -> np.ndarray:
        """Terminal node of each combination in the tree at ``root``."""
        node = np.full(combos.shape[0], root, dtype=np.int64)
        active = np.flatnonzero(self.node_feature_[node] != _LEAF)
        while active.size:
            at = node[active]
            direction = self.node_route_[at, combos[active, self.node_feature_[at]]]
            nxt = np.where(
                direction == _LEFT, self.node_left_[at], np.where(direction == _RIGHT, self.node_right_[at], at)
            )
            node[active] = nxt
            active = active[(direction != _STAY) & (self.node_feature_[nxt] != _LEAF)]
        return node

    def _refit(self, terminals: list, parents: list, y: np.ndarray, f: np.ndarray) -> None:
        """Recompute every node's factor on all rows, tree after tree (step 7)."""
        n_nodes = len(parents)
        self.node_factor_ = np.ones(n_nodes)
        factor = np.ones(y.size)
        ends = [*self.tree_roots_[1:].tolist(), n_nodes]
        for root, end, terminal in zip(self.tree_roots_.tolist(), ends, terminals):
            ysum = np.bincount(terminal, y, minlength=n_nodes)
            fsum = np.bincount(terminal, f * factor, minlength=n_nodes)
            for node in range(end - 1, root, -1):  # children come after their parent
                ysum[parents[node]] += ysum[node]
                fsum[parents[node]] += fsum[node]
            span = np.arange(root, end)
            has_mass = span[fsum[span] > 0]
            self.node_factor_[has_mass] = ysum[has_mass] / fsum[has_mass]
            factor = factor * self.node_factor_[terminal]

    def _check_fitted(self) -> None:
        """The encoding matches the features and every tree is a tree: children after their
        parent, features and levels in range, one route per level."""
        super()._check_fitted()
        d = self.n_features_x_
        if not (
            isinstance(self.feature_kinds_, list)
            and len(self.feature_kinds_) == d
            and all(k in ("continuous", "categorical") for k in self.feature_kinds_)
        ):
            raise ValueError(f"feature_kinds_ must list 'continuous' or 'categorical' for each of the {d} features.")
        codes = [
            e.size + 1 if k == "continuous" else lev.size + 1
            for k, e, lev in zip(self.feature_kinds_, self.feature_edges_, self.feature_levels_)
        ]
        if self.n_codes_.tolist() != [*codes, self.score_edges_.size + 1]:
            raise ValueError("n_codes_ does not match the feature and score bins.")
        n = self.node_feature_.size
        if (
            self.node_route_.shape[1] < int(self.n_codes_.max())
            or self.tree_roots_.size == 0
            or self.tree_roots_[0] != 0
            or self.tree_roots_[-1] >= n
        ):
            raise ValueError("the trees' roots or routes do not match the nodes.")
        index = np.arange(n)
        inner = self.node_feature_ != _LEAF
        if (self.node_feature_ > d).any():
            raise ValueError("node_feature_ names a column beyond the features and the score.")
        for child in (self.node_left_, self.node_right_):
            if (inner & ((child <= index) | (child >= n))).any() or (~inner & (child != _LEAF)).any():
                raise ValueError("a tree node points to a child that is not after it.")
        parents = np.bincount(np.concatenate([self.node_left_[inner], self.node_right_[inner]]), minlength=n)
        is_root = np.zeros(n, dtype=bool)
        is_root[self.tree_roots_] = True
        if (parents[is_root] != 0).any() or (parents[~is_root] != 1).any():
            raise ValueError("the nodes do not form the listed trees (every node but a root has one parent).")

    def _calibrate(self, t: np.ndarray, X: np.ndarray | None = None) -> np.ndarray:
        f0 = expit(t)
        combos, inverse = self._combinations(self._encode(X, t))
        factor = np.ones(combos.shape[0])
        for root in self.tree_roots_:
            factor *= self.node_factor_[self._route(combos, int(root))]
        return f0 * factor[inverse]


# ---- helpers of the Dask route (module level, so the tasks pickle small) -----------------
def _partition_arrays(
    s: Any, y: Any, w: Any, X: Any, score_kind: str, pos_label: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """One partition validated as :meth:`Calibrator.fit` validates arrays: scores, 0/1 labels, weights, X.

    ``None`` for an empty partition. A partition may hold one class only or zero weights
    only; the totals are checked on the reductions.
    """
    n = check_consistent_length(scores=s, y=y, **({} if w is None or np.isscalar(w) else {"sample_weight": w}))
    if n == 0:
        check_features(X, 0)
        return None
    s = check_scores(s, score_kind=score_kind)
    y01, _ = check_labels(y, pos_label=pos_label, require_both=False)
    raw_w = None if w is None or np.isscalar(w) else np.asarray(w.to_numpy() if hasattr(w, "to_numpy") else w)
    w = (
        np.zeros(n)
        if raw_w is not None and raw_w.dtype.kind in "iuf" and not raw_w.any()
        else check_sample_weight(w, n, rescale=False)
    )  # the scale is checked over all partitions
    return s, y01, w, check_features(X, n)


def _partition_stats(s: Any, y: Any, w: Any, X: Any, score_kind: str, pos_label: Any, cap: int) -> dict | None:
    """Pass 1 on one partition: what the encoding and the checks on the totals need (``None`` if
    empty); a check failing on rows of the partition comes back as ``error``, to be restated for
    the whole data."""
    try:
        arrays = _partition_arrays(s, y, w, X, score_kind, pos_label)
    except RowValueError as exc:
        return {"error": exc, "n": len(s)}
    if arrays is None:
        return None
    s, _, w, X = arrays
    raw_y = y.to_numpy() if hasattr(y, "to_numpy") else np.asarray(y)
    labels, inverse, counts = np.unique(raw_y.ravel(), return_inverse=True, return_counts=True)
    label_weights = np.bincount(inverse.ravel(), weights=w, minlength=labels.size)
    columns = []
    held = w > 0  # rows of weight 0 are absent, as in memory (MBCT._learn_encoding)
    for j in range(X.shape[1]):
        col = X[held, j]
        values = _as_numbers(col)
        if values is None:
            columns.append({"numeric": False, "distinct": np.unique(col.astype(str))})
            continue
        distinct, first = np.unique(values, return_index=True)
        many = distinct.size > cap
        columns.append(
            {
                "numeric": True,
                "many": many,
                "distinct": distinct[:0] if many else distinct,
                "raw": col[first[:0] if many else first],
                "sketch": quantile_sketch(values, w[held], _SKETCH_SIZE),
            }
        )
    top = float(w.max())
    t = to_working(s, score_kind)
    in_range = _score_range_rows(t, w, score_kind)
    return {
        "error": None,
        "n": s.size,
        "labels": labels,
        "counts": counts,
        "label_weights": label_weights,
        "top": top,
        "relative": float((w / top).sum()) if top > 0 else 0.0,
        "min": float(s.min()),
        "max": float(s.max()),
        "sketch": quantile_sketch(t[in_range], w[in_range], _SKETCH_SIZE),  # empty when no row is in range
        "columns": columns,
    }


def _split_weights(w: np.ndarray, u: np.ndarray, fraction: float) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    r"""Each row's weight and sum of squared unit weights in the training (``"t"``) and
    validation (``"v"``) parts, from one uniform draw ``u`` per row.

    A row of integer weight :math:`k` is :math:`k` unit rows, of which
    :math:`V \sim \mathrm{Binomial}(k, \mathrm{fraction})` are validation rows, drawn by
    inversion, :math:`V = F^{-1}_{k}(1 - u)`, so a row of weight 1 is a validation row
    exactly when :math:`u < \mathrm{fraction}`; its squared unit weights sum to :math:`V`
    (one per unit row, as for repeated rows). A row of non-integer weight :math:`w` goes to
    the validation part whole when :math:`u < \mathrm{fraction}`, with squared weight
    :math:`w^2`.
    """
    from scipy.stats import binom

    whole = u < fraction
    units = (w == np.round(w)) & (w > 1)
    wv = np.where(whole, w, 0.0)
    if np.any(units):
        wv[units] = binom.ppf(1.0 - u[units], w[units], fraction)
    wt = w - wv
    sq_v = np.where(units, wv, wv * w)
    sq_t = np.where(units, wt, wt * w)
    return {"t": (wt, sq_t), "v": (wv, sq_v)}
