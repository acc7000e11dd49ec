"""Scores on the working scale, and compressed sufficient statistics for large data.

Two scales appear throughout bayescal:

* the **input scale**: what the user passes, either probabilities in [0, 1]
  (``score_kind="probability"``) or raw decision values (``score_kind="decision"``);
* the **working scale** ``t``: the logit of a probability, or the decision value as is.
  Probabilities are clipped to ``[PROB_EPS, 1 - PROB_EPS]`` before the logit, so ``t`` is
  always finite (``|t| <= logit(1 - PROB_EPS)`` ~ 27.6): exact 0 and 1, and every probability
  within PROB_EPS of them, which become one value there (:func:`warn_merged_extremes` says when
  that hides labels).

Every calibrator is a function of the working scale; monotone calibrators give the same
fit on either scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import expit, logit

from bayescal._stats import quantile_sketch, sketch_quantile, weighted_quantile
from bayescal._typing import ArrayLike
from bayescal._validation import (
    _WEIGHT_MAX_TINY,
    _WEIGHT_TOTAL_MAX,
    MAX_ABS_DECISION,
    RowValueError,
    _as_1d_float,
    check_class_weights,
    check_consistent_length,
    check_integer,
    check_labels,
    check_labels_present,
    check_number,
    check_sample_weight,
    check_score_kind,
    check_scores,
    distinct_labels,
    is_dask_collection,
    whole_data_error,
)
from bayescal._warnings import warn

__all__ = [
    "PROB_EPS",
    "to_working",
    "from_working",
    "at_atoms",
    "spread_ties",
    "spread_counts",
    "ScoreData",
    "prepare_data",
    "ScoreSummary",
    "dask_partitions",
    "class_bin_counts",
    "asinh_bins",
    "asinh_edges",
    "ASINH_SPREAD",
    "ASINH_MAX_BIN_FACTOR",
    "ASINH_BINS_PER_IQR",
    "WORKING_ENDS",
    "SUMMARY_MIN_MIDDLE_BINS",
]

PROB_EPS = 1e-12
"""Probabilities are clipped to [PROB_EPS, 1 - PROB_EPS] before taking the logit."""

SUMMARY_MIN_MIDDLE_BINS = 6.0
"""Fewest equal-width bins across the middle half of a summary's continuous scores (about 4.4 bins
per robust standard deviation): below it a :class:`ScoreSummary` whose range is left to the data
puts its bins on an asinh scale, and one with ``lo``/``hi`` given warns (the measurements behind
it: ``benchmarks/summary_resolution.py``)."""

ASINH_MAX_BIN_FACTOR = 4
"""Most times :func:`asinh_bins` multiplies its bins to resolve the data region of the rows."""

ASINH_BINS_PER_IQR = 32
"""The resolution the asinh layouts keep over the data region, the DPM's compression of rows
(``bins_per_iqr`` of :func:`asinh_bins`) and a :class:`ScoreSummary` on the asinh scale alike: no
bin between the scores' 2.5 % and 97.5 % quantiles wider than their interquartile range over this
many. When far outlying scores stretch the asinh scale so that the bins leave one wider, the scale
narrows and (rows only) the bins are doubled, up to :data:`ASINH_MAX_BIN_FACTOR` times. The
binning error of the map does not shrink with N while the band does, so the data region needs
this resolution at large N; scores without far outliers have it at 512 bins with room to spare
(``benchmarks/results/compression_resolution.md``)."""

_QUARTILE_ROWS = 100_000
"""Rows a layout's quantiles are read from (every k-th row of more)."""

_SKETCH_SIZE = 1000
"""Points of each Dask chunk's quantile sketch (:func:`bayescal._stats.quantile_sketch`)."""

ASINH_SPREAD = 4.0
"""Scale of the asinh layout of :func:`asinh_bins` in robust standard deviations of the scores: within
about this many of their median the bins are nearly equal in width, beyond it they widen in proportion
to the distance."""


def to_working(scores: np.ndarray, score_kind: str) -> np.ndarray:
    """Map validated scores from the input scale to the working scale ``t``.

    ``t = logit(clip(p, PROB_EPS, 1 - PROB_EPS))`` for probabilities, ``t = s`` for decision values.

    Parameters
    ----------
    scores : ndarray of shape (n,)
        Validated scores on the input scale.
    score_kind : {"probability", "decision"}
        Kind of the scores.

    Returns
    -------
    ndarray of shape (n,)
    """
    check_score_kind(score_kind)
    scores = np.asarray(scores, dtype=np.float64)
    if score_kind == "probability":
        t = np.empty_like(scores)

        def run(a: int, b: int) -> None:
            np.clip(scores[a:b], PROB_EPS, 1.0 - PROB_EPS, out=t[a:b])
            logit(t[a:b], out=t[a:b])

        _in_row_halves(t.size, run)
        return t
    return scores.copy()


def distinguishable(scores: np.ndarray, score_kind: str) -> np.ndarray:
    """The scores as the working scale tells them apart: probabilities clipped to
    ``[PROB_EPS, 1 - PROB_EPS]`` (as :func:`to_working` clips them), decision values as they are.

    Two scores equal here have the same working-scale value, so a calibrator that predicts
    from ``t`` cannot tell them apart: one that fits on input-scale scores (bins, knots)
    must treat them as ties.
    """
    scores = np.asarray(scores, dtype=np.float64)
    return np.clip(scores, PROB_EPS, 1.0 - PROB_EPS) if score_kind == "probability" else scores


THREADED_ROWS = 1_000_000
"""Passes over more rows than this run on two halves in two threads (numpy's ufuncs and the
compiled kernels release the GIL); the result is the same as one pass."""


def _in_row_halves(n: int, run: Any) -> list:
    """``run(start, stop)`` on rows ``0 .. n``: whole, or on two halves in two threads above
    :data:`THREADED_ROWS` rows; the results in row order."""
    if n <= THREADED_ROWS:
        return [run(0, n)]
    from concurrent.futures import ThreadPoolExecutor

    half = n // 2
    with ThreadPoolExecutor(max_workers=2) as pool:
        return list(pool.map(run, (0, half), (half, n)))


WORKING_ENDS: tuple[float, float] = (float(logit(PROB_EPS)), float(logit(1.0 - PROB_EPS)))
"""The working-scale values of the probabilities 0 and 1 (the logit's clip, about -27.6 and 27.6),
where exact 0 and 1 sit."""


def from_working(t: np.ndarray, score_kind: str) -> np.ndarray:
    """Inverse of :func:`to_working` (up to the clipping of probabilities within PROB_EPS of 0 and 1).

    Parameters
    ----------
    t : ndarray of shape (n,)
        Scores on the working scale.
    score_kind : {"probability", "decision"}
        Kind of the scores.

    Returns
    -------
    ndarray of shape (n,)
    """
    check_score_kind(score_kind)
    t = np.asarray(t, dtype=np.float64)
    return expit(t) if score_kind == "probability" else t.copy()


def at_atoms(scores: np.ndarray, atoms: np.ndarray, score_kind: str) -> np.ndarray:
    """Whether each of ``scores`` is one of ``atoms`` (both on the input scale), compared on the
    working scale, as calibrators match them (a probability within PROB_EPS of 0 or 1 is that end).

    Parameters
    ----------
    scores : array-like of float
        Scores on the input scale, any shape.
    atoms : array-like of float
        A calibrator's atoms on the input scale (``base.atom_scores``); may be empty.
    score_kind : {"probability", "decision"}
        Kind of both, as ``to_working`` takes it.

    Returns
    -------
    ndarray of bool, the shape of ``scores``
    """
    scores = np.asarray(scores, dtype=np.float64)
    if not np.size(atoms):
        return np.zeros(scores.shape, dtype=bool)
    return np.isin(to_working(scores, score_kind), to_working(np.asarray(atoms, dtype=np.float64), score_kind))


def _cells(centres: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rounding cells of sorted distinct ``centres``: from the midpoint with the previous one to
    the midpoint with the next (mirrored at the two ends)."""
    mid = 0.5 * (centres[1:] + centres[:-1])
    return (np.concatenate([[2.0 * centres[0] - mid[0]], mid]), np.concatenate([mid, [2.0 * centres[-1] - mid[-1]]]))


def spread_ties(
    t: np.ndarray, y: np.ndarray, w: np.ndarray, bounds: tuple[float, float] = (-np.inf, np.inf)
) -> np.ndarray:
    r"""Spread tied working-scale scores evenly over their rounding cells (deterministic dequantisation).

    Scores that take few distinct values (random-forest vote shares ``k / n_trees``, rounded
    or boosted scores) are a rounded version of a continuous score. A continuous density
    fitted to them can put a spike on each tied value, and the ratio of two such densities
    then jumps between and at the values. The likelihood of a rounded value is the density's
    integral over its rounding cell, approximated here by spreading the value's rows over
    the cell: the cell of value :math:`v_j` (distinct values sorted, pooled over the
    classes) runs from :math:`(v_{j-1} + v_j)/2` to :math:`(v_j + v_{j+1})/2` (mirrored at
    the ends), and within each class the rows at :math:`v_j` take the positions
    :math:`\mathrm{lo} + (W_{<r} + w_r / 2)/W\,(\mathrm{hi} - \mathrm{lo})` in the order
    they come, :math:`W` the class's weight at :math:`v_j`. Untied values do not move, nor do
    tied rows of a class whose weight at the value is 0 (they carry no data). With ``bounds``
    (the ends of the scale, such as 0 and 1 for probabilities) a mirrored end cell reaches at
    most halfway from its value to the bound, so no row is spread onto or past the bound.

    Returns the spread copy of ``t``; ``y`` and ``w`` are unchanged.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale scores.
    y : ndarray of shape (n,)
        0/1 labels.
    w : ndarray of shape (n,)
        Sample weights.
    bounds : tuple of float, default (-inf, inf)
        The ends of the scale ``t`` lies on.
    """
    t = np.asarray(t, dtype=np.float64)
    vals, inv, mult = np.unique(t, return_inverse=True, return_counts=True)
    if vals.size == t.size or vals.size < 2:
        return t.copy()
    lo, hi = _cells(vals)
    lo[0] = max(lo[0], 0.5 * (vals[0] + bounds[0]))
    hi[-1] = min(hi[-1], 0.5 * (vals[-1] + bounds[1]))
    key = 2 * inv + np.asarray(y)  # (value, class) groups
    tied = np.flatnonzero(mult[inv] > 1)
    order = tied[np.argsort(key[tied], kind="stable")]
    g, wo = key[order], np.asarray(w, dtype=np.float64)[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.r_[starts, wo.size])
    cum = np.cumsum(wo)
    before_group = np.repeat(cum[starts] - wo[starts], sizes)
    group_weight = np.repeat(np.add.reduceat(wo, starts), sizes)
    moved = group_weight > 0  # a group of zero weight has no positions to share: it stays
    frac = (cum - before_group - 0.5 * wo)[moved] / group_weight[moved]
    v = inv[order[moved]]
    out = t.copy()
    out[order[moved]] = lo[v] + frac * (hi[v] - lo[v])
    return out


def spread_counts(counts: np.ndarray) -> np.ndarray:
    """:func:`spread_ties` for binned counts: each occupied bin's counts, shape (classes, bins),
    spread evenly over its cell (midpoints to the neighbouring occupied bins, mirrored at the
    ends, within the binned range); adjacent occupied bins do not move.

    Parameters
    ----------
    counts : ndarray of shape (2, n_bins)
        Per-class weights on the bins of a summary.

    Returns
    -------
    ndarray of shape (2, n_bins)
    """
    counts = np.asarray(counts, dtype=np.float64)
    n_bins = counts.shape[1]
    occ = np.flatnonzero(counts.sum(axis=0) > 0)
    if occ.size < 2 or occ[-1] - occ[0] == occ.size - 1:
        return counts.copy()
    lo, hi = (np.clip(e, 0.0, n_bins) for e in _cells(occ + 0.5))  # bin j spans [j, j + 1]
    out = np.zeros_like(counts)
    for j, a, b in zip(occ, lo, hi):
        k = np.arange(int(np.floor(a)), int(np.ceil(b)))
        share = (np.minimum(b, k + 1) - np.maximum(a, k)) / (b - a)
        out[:, k] += counts[:, j, None] * share[None, :]
    return out


@dataclass(frozen=True)
class ScoreData:
    """Validated calibration data.

    Attributes
    ----------
    scores : ndarray of shape (n,)
        Scores on the input scale (a copy of what the user passed).
    t : ndarray of shape (n,)
        Scores on the working scale.
    y : ndarray of shape (n,)
        Labels as 0/1 (int8).
    w : ndarray of shape (n,)
        Sample weights (ones when none were given).
    score_kind : {"probability", "decision"}
    classes : ndarray of shape (2,)
        The original label values, ``[negative, positive]``.
    bin_edges : ndarray or None
        Working-scale bin edges when the rows are the bins of a :class:`ScoreSummary`
        (:meth:`ScoreSummary.to_data`): the continuous rows are bin centres weighted by counts.
    """

    scores: np.ndarray
    t: np.ndarray
    y: np.ndarray
    w: np.ndarray
    score_kind: str
    classes: np.ndarray
    bin_edges: np.ndarray | None = None

    @property
    def n(self) -> int:
        """Number of rows."""
        return int(self.t.shape[0])

    @property
    def weighted(self) -> bool:
        """Whether any row's weight differs from 1."""
        return bool(np.any(self.w != 1.0))

    def take(self, rows: np.ndarray, w: np.ndarray | None = None) -> "ScoreData":
        """Some of the rows, as new validated data (without a summary's ``bin_edges``).

        Parameters
        ----------
        rows : ndarray
            Row indices (repeats allowed) or a boolean mask.
        w : ndarray, optional
            The weights of the rows taken; their own weights when None.

        Returns
        -------
        ScoreData
        """
        return ScoreData(
            scores=self.scores[rows],
            t=self.t[rows],
            y=self.y[rows],
            w=self.w[rows] if w is None else w,
            score_kind=self.score_kind,
            classes=self.classes,
        )


def prepare_data(
    scores: ArrayLike,
    y: ArrayLike | None,
    sample_weight: ArrayLike | None = None,
    *,
    score_kind: str = "probability",
    pos_label: Any = None,
) -> ScoreData:
    """Validate user input and return a :class:`ScoreData` (inputs are not modified).

    The checks every fit shares: finite scores (probabilities in [0, 1]; decision values of
    magnitude at most :data:`~bayescal._validation.MAX_ABS_DECISION`), two classes, one
    label and one non-negative weight per score, and positive total weight on each class.
    Masked arrays with masked entries are refused rather than read (see
    :func:`~bayescal._validation.check_scores`).

    Parameters
    ----------
    scores : array-like of shape (n,) or (n, 1)
        Scores on the input scale.
    y : array-like of shape (n,)
        Binary labels.
    sample_weight : array-like of shape (n,), optional
        Non-negative weights.
    score_kind : {"probability", "decision"}, default "probability"
        Kind of the scores.
    pos_label : optional
        The positive label when it is not the greater value.

    Returns
    -------
    ScoreData
    """
    return _validated(scores, y, sample_weight, score_kind=score_kind, pos_label=pos_label, shard=False)


def _validated(
    scores: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None, *, score_kind: str, pos_label: Any, shard: bool
) -> ScoreData:
    """:func:`prepare_data`, or with ``shard`` the rows of one shard of the data, which may hold
    (or weigh) a single class when the other's label is known (:func:`_shard_labels`)."""
    s = check_scores(scores, score_kind=score_kind, max_abs=MAX_ABS_DECISION)
    y01, classes = _shard_labels(y, pos_label) if shard else check_labels(y, pos_label=pos_label)
    check_consistent_length(scores=s, y=y01)
    w = check_sample_weight(sample_weight, s.shape[0])
    if not shard:
        check_class_weights(y01, w, classes)
    if score_kind == "probability":
        warn_merged_extremes(s, y01, w)
    return ScoreData(scores=s, t=to_working(s, score_kind), y=y01, w=w, score_kind=score_kind, classes=classes)


def _shard_labels(y: ArrayLike, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(y01, classes)`` of one shard's labels, as :func:`~bayescal._validation.check_labels` gives
    them, but labels of one class are accepted when the other class's label is known: the shard
    holds only negatives and ``pos_label`` names the positive class, or the labels are booleans,
    or numbers 0 or -1 alone (the positive class 1 by the convention of ``check_labels``)."""
    y01, classes = check_labels(y, pos_label=pos_label, require_both=False)
    if classes.size == 2:
        return y01, classes
    value = classes.tolist()[0]
    positive = bool(y01[0])
    if not positive and pos_label is not None:
        pair = [value, pos_label]
    elif classes.dtype.kind == "b":
        pair = [not value, value] if positive else [value, not value]
    elif not positive and classes.dtype.kind in "iuf" and value in (0, -1):
        pair = [value, 1]
    elif positive:
        raise ValueError(
            f"y holds only the positive class ({value!r}), so the label of the negative class is unknown and the "
            "summary could not be added to those of other shards. Summarise this shard together with one holding "
            "negatives, or code the labels of every shard as booleans (y == positive label)."
        )
    else:
        raise ValueError(
            f"y has a single class ({value!r}) and the label of the positive class is unknown: pass pos_label= "
            "the positive class's label (as for every other shard), so that this shard counts as negatives."
        )
    ordered = np.array(pair, dtype=None if classes.dtype.kind in "US" else classes.dtype)
    if ordered[1] != pair[1]:
        raise ValueError(
            f"pos_label={pos_label!r} cannot be a label of y, whose values are {classes.dtype} ({value!r}): pass "
            "the positive class's label as a value of that type."
        )
    return y01, ordered


def merged_extremes(s: np.ndarray, y: np.ndarray, w: np.ndarray) -> dict[str, tuple[int, np.ndarray]]:
    """Per end (``"below"`` PROB_EPS, ``"above"`` 1 - PROB_EPS): how many probability scores the
    logit clip merges there (exact 0 and 1 aside) and the labels of those with positive weight;
    what :func:`warn_merged_extremes` reads, computable chunk by chunk and pooled."""
    # a pass for the minimum and one for the maximum first: most scores come nowhere near the clip
    out = {}
    for end, near, merged in (
        ("below", s.min() < PROB_EPS, lambda: (s > 0.0) & (s < PROB_EPS)),
        ("above", s.max() > 1.0 - PROB_EPS, lambda: (s < 1.0) & (s > 1.0 - PROB_EPS)),
    ):
        mask = merged() if s.size and near else np.zeros(s.shape, dtype=bool)
        out[end] = (int(mask.sum()), np.unique(y[mask & (w > 0)]))
    return out


def warn_merged_extremes(s: np.ndarray, y01: np.ndarray, w: np.ndarray) -> None:
    """Warn when the logit clip at :data:`PROB_EPS` hides labels: the working scale clips
    probabilities strictly between 0 and PROB_EPS (or 1 - PROB_EPS and 1) there, so they become
    one value with each other and with exact 0 (1), and a calibrator cannot tell 1e-200 from
    1e-13 (naive Bayes gives such scores). That loses what the labels say only where the scores
    so merged at one end (exact 0 and 1 aside) hold both classes; a classifier's most confident
    scores, all of one class, lose nothing."""
    _warn_merged(merged_extremes(s, y01, w))


def _warn_merged(ends: dict[str, tuple[int, np.ndarray]]) -> None:
    """The warning of :func:`warn_merged_extremes` from the merged scores' counts and labels."""
    below, above = (ends[e][0] if np.unique(ends[e][1]).size == 2 else 0 for e in ("below", "above"))
    if below + above:
        warn(
            f"{below + above} probability score(s) of both classes lie strictly within {PROB_EPS:g} of 0 or 1 "
            f"({below} below {PROB_EPS:g}, {above} above 1 - {PROB_EPS:g}): bayescal's logit scale clips "
            "probabilities there, so they count as one value (with exact 0 or 1) and their labels cannot be told "
            "apart by score. Pass the classifier's log-odds instead, with score_kind='decision' (for scikit-learn: "
            "predict_log_proba(X) @ [-1, 1])."
        )


def _same_labels(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two summaries code their labels alike: the same values, text where text."""
    mine, theirs = a.tolist(), b.tolist()
    return mine == theirs and [type(v) is str for v in mine] == [type(v) is str for v in theirs]


@dataclass(eq=False)
class ScoreSummary:
    r"""Per-class weighted counts of working-scale scores on a fixed grid (sufficient statistics).

    A 1-D calibrator needs only how much weight of each class sits at each score. The
    summary keeps it on ``n_bins`` bins of the working scale between ``lo`` and ``hi``
    (which must enclose every continuous score of positive weight), plus exact probability 0
    and 1 as atoms.
    The bins are equal-width unless the range is left to the data and a few far outlying
    scores stretch it so that equal-width bins would put the middle half of the continuous
    scores in fewer than :data:`SUMMARY_MIN_MIDDLE_BINS` bins; then they are equal-width on
    :math:`\operatorname{asinh}((t - m) / s)`, :math:`m` the median (nearly equal-width over
    the bulk, wider in proportion to the distance beyond), with the scale :math:`s` chosen by
    the rule of the DPM's compression of rows (:func:`asinh_bins` with ``bins_per_iqr`` =
    :data:`ASINH_BINS_PER_IQR`, ``n_bins`` kept): the one that best resolves the data region,
    the scores between their 2.5 % and 97.5 % quantiles. Summaries with the same grid (the
    same edges, exactly) add (``a + b``, or ``sum`` of a list), so shards can be summarised
    where they live and merged (give them the same ``n_bins``, ``lo`` and ``hi``, which keeps
    the bins equal-width). Fitting on a summary treats every
    score as sitting at its bin centre: the approximation error of a calibration map is at most
    its change over half a bin width, ``(hi - lo) / (2 n_bins)`` on the working scale for
    equal-width bins.

    Attributes
    ----------
    edges : ndarray of shape (n_bins + 1,)
    counts : ndarray of shape (2, n_bins)
        Weighted counts per class (row 0: negatives, row 1: positives).
    atoms : ndarray of shape (n_atoms,)
        Input-scale values kept exactly (0.0 and 1.0 for probabilities; none for decisions).
    atom_counts : ndarray of shape (2, n_atoms)
    score_kind : str
    classes : ndarray of shape (2,)
    """

    edges: np.ndarray
    counts: np.ndarray
    atoms: np.ndarray
    atom_counts: np.ndarray
    score_kind: str
    classes: np.ndarray = field(default_factory=lambda: np.array([0, 1]))

    @classmethod
    def from_arrays(
        cls,
        scores: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        *,
        score_kind: str = "probability",
        pos_label: Any = None,
        n_bins: int = 1024,
        lo: float | None = None,
        hi: float | None = None,
    ) -> "ScoreSummary":
        """Summarise scores and labels (see the class docstring); Dask inputs go to :meth:`from_dask`.

        The rows may be one shard of the data: a shard may hold (or give positive weight to) a
        single class when the other class's label is known (``pos_label`` given for a shard of
        negatives, boolean labels, or labels 0 or -1 alone, whose positive class is 1). Fitting
        needs both classes, so a one-class summary is added to the other shards' first.

        Parameters
        ----------
        scores : array-like of shape (n,)
            Scores on the input scale.
        y : array-like of shape (n,)
            Binary labels.
        sample_weight : array-like of shape (n,), optional
            Non-negative weights; rows of weight 0 are left out of the counts and of the range.
        score_kind : {"probability", "decision"}, default "probability"
            Kind of the scores.
        pos_label : optional
            The positive label when it is not the greater value.
        n_bins : int, default 1024
            Number of bins on the working scale.
        lo, hi : float, optional
            Working-scale range of the bins; the data's range when None.

        Returns
        -------
        ScoreSummary

        Warns
        -----
        UserWarning
            When ``lo``/``hi`` are given and the equal-width bins between them put the middle
            half of the continuous scores in fewer than :data:`SUMMARY_MIN_MIDDLE_BINS` bins.
        """
        if any(is_dask_collection(v) for v in (scores, y, sample_weight)):
            return cls.from_dask(
                scores, y, sample_weight, score_kind=score_kind, pos_label=pos_label, n_bins=n_bins, lo=lo, hi=hi
            )
        data = _validated(scores, y, sample_weight, score_kind=score_kind, pos_label=pos_label, shard=True)
        return cls.from_data(data, n_bins=n_bins, lo=lo, hi=hi)

    @classmethod
    def from_data(
        cls, data: ScoreData, *, n_bins: int = 1024, lo: float | None = None, hi: float | None = None
    ) -> "ScoreSummary":
        """Summarise validated :class:`ScoreData`; ``lo``/``hi`` default to the data's working-scale range.

        ``lo`` and ``hi`` are on the working scale (logits for probabilities) and must enclose
        every non-atom score of positive weight: a narrower grid would pile the scores beyond it
        into the end bins, so it is refused. Rows of weight 0 count for nothing: they set neither
        the range nor the layout of the bins.

        Parameters
        ----------
        data : ScoreData
            Validated data.
        n_bins : int, default 1024
            Number of bins on the working scale.
        lo, hi : float, optional
            Working-scale range of the bins; the data's range when None.

        Returns
        -------
        ScoreSummary
        """
        n_bins = _check_n_bins(n_bins)
        lo, hi = _check_bounds(lo, hi)
        atoms = _atoms(data.score_kind)
        is_atom = np.isin(data.scores, atoms)
        laid = ~is_atom & (data.w > 0)  # the continuous scores of positive weight set the grid
        t_cont, w_cont = (data.t, data.w) if laid.all() else (data.t[laid], data.w[laid])
        given = lo is not None or hi is not None
        lo, hi = _bounds_around(lo, hi, t_cont)
        step = max(1, t_cont.size // _QUARTILE_ROWS)  # every k-th row: the layout costs one pass
        quantiles = _layout_quantiles([(t_cont[::step], w_cont[::step])])
        asinh = _summary_layout(quantiles, n_bins, lo, hi, lo_hi_given=given)
        return _summarise(data, n_bins, lo, hi, asinh, atoms, is_atom)

    @classmethod
    def from_dask(
        cls,
        scores: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        *,
        score_kind: str = "probability",
        pos_label: Any = None,
        n_bins: int = 1024,
        lo: float | None = None,
        hi: float | None = None,
    ) -> "ScoreSummary":
        r"""Summarise Dask arrays or Dask dataframe columns where the data lives.

        Each chunk is validated and summarised by its own task (on whatever scheduler is
        active: threads, processes, or a ``dask.distributed`` cluster), and the per-chunk
        summaries are added in a tree; only ``2 x n_bins`` numbers per chunk travel. Two
        passes: the first finds the label values and (unless ``lo``/``hi`` are given) the
        working-scale range, the second counts.

        Parameters
        ----------
        scores : Dask array or Dask dataframe column
            Scores on the input scale.
        y : Dask array or column
            Binary labels, partitioned like ``scores``.
        sample_weight : Dask array or column, optional
            Non-negative weights; rows of weight 0 are left out of the counts and of the range.
        score_kind : {"probability", "decision"}, default "probability"
            Kind of the scores.
        pos_label : optional
            The positive label when it is not the greater value.
        n_bins : int, default 1024
            Number of bins on the working scale.
        lo, hi : float, optional
            Working-scale range of the bins; found in a first pass when None.

        Returns
        -------
        ScoreSummary

        Warns
        -----
        UserWarning
            As :meth:`from_arrays`.

        Notes
        -----
        The first pass also keeps a quantile sketch of each chunk's continuous scores
        (:func:`bayescal._stats.quantile_sketch`, 1,000 points, of every k-th score of a chunk
        of more than 100,000), whose merged quantiles choose
        the bins' layout as in :meth:`from_arrays` (see the class docstring): with far outlying
        scores (heavy-tailed decision values) and ``lo``/``hi`` left None, the bins go on an
        asinh scale so that the bulk of the data is not left in a handful of bins.

        As with :meth:`from_arrays`, the data may be one shard holding a single class when the
        other class's label is known.
        """
        return cls._from_dask(
            scores,
            y,
            sample_weight,
            score_kind=score_kind,
            pos_label=pos_label,
            n_bins=n_bins,
            lo=lo,
            hi=hi,
            shard=True,
        )

    @classmethod
    def _from_dask(
        cls,
        scores: ArrayLike,
        y: ArrayLike,
        sample_weight: ArrayLike | None = None,
        *,
        score_kind: str = "probability",
        pos_label: Any = None,
        n_bins: int = 1024,
        lo: float | None = None,
        hi: float | None = None,
        shard: bool,
    ) -> "ScoreSummary":
        """:meth:`from_dask`; with ``shard=False`` (a fit's summary) both classes must have weight."""
        import dask

        check_score_kind(score_kind)
        if sample_weight is not None and np.isscalar(sample_weight):
            check_number(sample_weight, "sample_weight", low=0.0)
        n_bins = _check_n_bins(n_bins)
        lo, hi = _check_bounds(lo, hi)
        blocks = [b[:3] for b in dask_partitions(scores, y, sample_weight)]
        stats = dask.compute(*[dask.delayed(_block_stats)(sb, yb, wb, score_kind) for sb, yb, wb in blocks])
        _raise_chunk_errors(stats)
        # the label values of the chunks with rows (an empty chunk's would turn integers into floats)
        values = distinct_labels(np.concatenate([st["labels"] for st in stats if st["n"]] or [np.empty(0)]))
        _, classes = _shard_labels(values, pos_label) if shard else check_labels(values, pos_label=pos_label)
        merged = [st["merged"] for st in stats if st["merged"] is not None]
        if merged:  # pooled over the chunks, as warn_merged_extremes on the rows
            _warn_merged(
                {
                    end: (sum(m[end][0] for m in merged), np.unique(np.concatenate([m[end][1] for m in merged])))
                    for end in ("below", "above")
                }
            )
        if sum(st["weight"] for st in stats) <= 0:
            raise ValueError(
                "sample_weight sums to zero over the whole Dask data: at least one sample needs a positive weight."
            )
        top = max(st["top"] for st in stats)
        relative = sum(st["relative"] * (st["top"] / top) for st in stats)
        scale = 1.0
        if relative > _WEIGHT_TOTAL_MAX / top or top < _WEIGHT_MAX_TINY:  # the rule of check_sample_weight
            warn(
                f"sample_weight totals {relative:.6g} x {top:.3g} (its largest value): outside the range "
                "where weights can act as counts, so they are divided by their largest value."
            )
            scale = top
        seen = np.array([v for st in stats for v in (st["lo"], st["hi"]) if np.isfinite(v)])
        given = lo is not None or hi is not None
        lo, hi = _bounds_around(lo, hi, seen)
        # each chunk's sketch carries weights relative to its largest: back to a common scale
        quantiles = _layout_quantiles([(st["sketch"][0], st["sketch"][1] * (st["top"] / top)) for st in stats])
        asinh = _summary_layout(quantiles, n_bins, lo, hi, lo_hi_given=given)
        parts = [
            dask.delayed(_block_summary)(sb, yb, wb, score_kind, classes, n_bins, lo, hi, asinh, scale)
            for sb, yb, wb in blocks
        ]
        while len(parts) > 1:  # tree reduction: pairs of summaries add
            parts = [
                dask.delayed(sum_pair)(*parts[i : i + 2]) if i + 1 < len(parts) else parts[i]
                for i in range(0, len(parts), 2)
            ]
        (summary,) = dask.compute(parts[0])
        if not shard:
            check_class_weights(np.array([0, 1]), summary.total, classes)  # one row per class: its total
        return summary

    @property
    def centers(self) -> np.ndarray:
        """Midpoints of the bins on the working scale, shape ``(n_bins,)``."""
        return 0.5 * (self.edges[1:] + self.edges[:-1])

    def bins_across_middle_half(self) -> float:
        """How many bins the middle half of the continuous weight (both classes, atoms aside) spans:
        the distance, in bins, between the points where the pooled counts' cumulative share reaches
        1/4 and 3/4 (linear within a bin). ``nan`` without continuous weight. A calibrator fitted
        on the summary resolves the bulk of the data no finer than this."""
        pooled = self.counts.sum(axis=0)
        total = pooled.sum()
        if not total > 0:
            return float("nan")
        cum = np.concatenate([[0.0], np.cumsum(pooled) / total])
        q1, q3 = np.interp([0.25, 0.75], cum, np.arange(cum.size, dtype=np.float64))
        return float(q3 - q1)

    @property
    def n_bins(self) -> int:
        """Number of bins of the continuous scores."""
        return int(self.counts.shape[1])

    @property
    def total(self) -> np.ndarray:
        """Total weight per class, ``[n0, n1]``, atoms included."""
        return self.counts.sum(axis=1) + self.atom_counts.sum(axis=1)

    def __post_init__(self) -> None:
        check_score_kind(self.score_kind)
        # copies: a caller's array changed later must not change (or un-check) the summary
        edges = np.array(self.edges, dtype=np.float64)
        counts = np.array(self.counts, dtype=np.float64)
        atoms = np.array(self.atoms, dtype=np.float64)
        atom_counts = np.array(self.atom_counts, dtype=np.float64)
        if edges.ndim != 1 or edges.size < 3 or not np.isfinite(edges).all() or np.any(np.diff(edges) <= 0):
            if edges.ndim == 1 and edges.size >= 3 and np.isfinite(edges).all():
                span = float(np.max(np.abs(edges[[0, -1]])))
                raise ValueError(
                    f"ScoreSummary edges from {edges[0]:.6g} to {edges[-1]:.6g} cannot be {edges.size - 1} distinct "
                    f"bins in floating point: the bins are narrower than the spacing of numbers near {span:.3g}. "
                    "Centre and scale the decision values (subtract their median, divide by their spread), "
                    "or give lo and hi nearer the data, or fewer n_bins."
                )
            raise ValueError(
                "ScoreSummary edges must be a finite, strictly increasing 1-D array of at least "
                "3 values (2 bins): build summaries with ScoreSummary.from_arrays."
            )
        if counts.shape != (2, edges.size - 1) or atom_counts.shape != (2, atoms.size) or atoms.ndim != 1:
            raise ValueError(
                f"ScoreSummary counts must have shape (2, {edges.size - 1}) and atom_counts "
                f"(2, {atoms.size}); got {counts.shape} and {atom_counts.shape}."
            )
        for name, values in (("counts", counts), ("atom_counts", atom_counts)):
            if not np.isfinite(values).all() or (values < 0).any():
                raise ValueError(f"ScoreSummary {name} must be finite and non-negative.")
        classes = np.array(self.classes)
        if classes.shape != (2,) or classes[0] == classes[1]:
            raise ValueError(
                f"ScoreSummary classes must hold two different labels [negative, positive]; got {classes.tolist()!r}."
            )
        if not np.isfinite(atoms).all() or np.unique(atoms).size != atoms.size:
            raise ValueError(f"ScoreSummary atoms must be distinct finite scores; got {atoms.tolist()!r}.")
        if atoms.size and (self.score_kind == "decision" or not set(atoms.tolist()) <= {0.0, 1.0}):
            raise ValueError(
                f"ScoreSummary atoms {atoms.tolist()!r} with score_kind={self.score_kind!r}: atoms are the exact "
                "probabilities 0 and 1 (decision values have none); build summaries with ScoreSummary.from_arrays."
            )
        self.edges, self.counts, self.atoms, self.atom_counts, self.classes = edges, counts, atoms, atom_counts, classes

    def __eq__(self, other: object) -> bool:
        """Equal grids, counts, score kind and labels (of the same types)."""
        if not isinstance(other, ScoreSummary):
            return NotImplemented
        return (
            self.score_kind == other.score_kind
            and _same_labels(self.classes, other.classes)
            and all(
                np.array_equal(a, b)
                for a, b in (
                    (self.edges, other.edges),
                    (self.counts, other.counts),
                    (self.atoms, other.atoms),
                    (self.atom_counts, other.atom_counts),
                )
            )
        )

    def __add__(self, other: "ScoreSummary") -> "ScoreSummary":
        if not isinstance(other, ScoreSummary):
            return NotImplemented
        if (
            self.score_kind != other.score_kind
            or not np.array_equal(self.edges, other.edges)
            or not np.array_equal(self.atoms, other.atoms)
        ):
            raise ValueError(
                "ScoreSummary objects have different grids: build them with the same n_bins, lo and hi (given, "
                "not left None: each summary then takes its own data's range)."
            )
        if not _same_labels(self.classes, other.classes):
            mine, theirs = self.classes.tolist(), other.classes.tolist()
            raise ValueError(
                f"ScoreSummary objects code their labels differently: classes (negative, positive) {mine!r} vs "
                f"{theirs!r}. Adding them would count one shard's classes as the other's: build every shard from "
                "the same label values with the same pos_label."
            )
        return ScoreSummary(
            self.edges,
            self.counts + other.counts,
            self.atoms,
            self.atom_counts + other.atom_counts,
            self.score_kind,
            self.classes,
        )

    def __radd__(self, other: object) -> "ScoreSummary":
        """``0 + summary`` (where ``sum`` of a list of summaries starts): a copy of the summary."""
        if type(other) is not int or other != 0:
            return NotImplemented
        return ScoreSummary(self.edges, self.counts, self.atoms, self.atom_counts, self.score_kind, self.classes)

    def to_data(self) -> ScoreData:
        """Weighted pseudo-data: one row per non-empty (bin or atom, class), weight = its count."""
        t_all = np.concatenate(
            [self.centers, to_working(self.atoms, self.score_kind) if self.atoms.size else np.empty(0)]
        )
        s_all = np.concatenate([from_working(self.centers, self.score_kind), self.atoms])
        ts, ss, ys, ws = [], [], [], []
        for c in (0, 1):
            cnt = np.concatenate([self.counts[c], self.atom_counts[c]])
            keep = cnt > 0
            ts.append(t_all[keep])
            ss.append(s_all[keep])
            ws.append(cnt[keep])
            ys.append(np.full(keep.sum(), c, dtype=np.int8))
        t, s, y, w = (np.concatenate(v) for v in (ts, ss, ys, ws))
        if y.min() == y.max():
            raise ValueError(
                "The ScoreSummary passed as scores holds weight of a single class: calibration needs "
                "samples of both classes (summarise data with both, or add the other shards)."
            )
        order = np.argsort(t, kind="stable")
        return ScoreData(
            scores=s[order],
            t=t[order],
            y=y[order],
            w=w[order],
            score_kind=self.score_kind,
            classes=self.classes,
            bin_edges=self.edges,
        )


_MAX_SUMMARY_BINS = 10**7
"""Largest grid a ScoreSummary accepts (two float64 counts per bin: 160 MB)."""


def _check_n_bins(n_bins: Any) -> int:
    """``n_bins`` as an integer in [2, 10^7] (a float such as 2.7 is refused, not truncated)."""
    n_bins = check_integer(n_bins, "n_bins", minimum=2)
    if n_bins > _MAX_SUMMARY_BINS:
        raise ValueError(
            f"n_bins={n_bins} exceeds {_MAX_SUMMARY_BINS}: a summary that fine holds more numbers "
            "than most data sets; use at most that many bins (1024 by default)."
        )
    return n_bins


def _check_bounds(lo: Any, hi: Any) -> tuple[float | None, float | None]:
    """``lo`` and ``hi`` as finite floats with ``lo < hi`` (either may be None)."""
    lo = None if lo is None else check_number(lo, "lo")
    hi = None if hi is None else check_number(hi, "hi")
    if lo is not None and hi is not None and not hi > lo:
        raise ValueError(f"lo={lo!r} must be below hi={hi!r}: pass lo < hi on the working scale.")
    if lo is not None and hi is not None and not np.isfinite(hi - lo):
        raise ValueError(
            f"lo={lo!r} and hi={hi!r} are too far apart to cut into bins (hi - lo overflows): "
            "give bounds near the data's working-scale range, or leave them None."
        )
    return lo, hi


def _bounds_around(lo: float | None, hi: float | None, t: np.ndarray) -> tuple[float, float]:
    """``lo`` and ``hi`` (checked by :func:`_check_bounds`) with the data's padded range where None,
    refused unless they enclose the working-scale scores ``t``; the message names what was given."""
    lo_, hi_ = _range(t)
    given = {k: v for k, v in (("lo", lo), ("hi", hi)) if v is not None}
    lo, hi = (lo_ if lo is None else lo), (hi_ if hi is None else hi)
    if t.size and (t.min() < lo or t.max() > hi):
        named = ", ".join(f"{k}={v:.6g}" for k, v in given.items())
        raise ValueError(
            f"{named} {'do' if len(given) > 1 else 'does'} not enclose the data, whose working-scale scores run "
            f"from {t.min():.6g} to {t.max():.6g}: widen {'/'.join(given)} (on the working scale: logits for "
            "probabilities), or leave them None to use the data's range."
        )
    if t.size and len(given) < 2 and not hi > lo:  # equal scores so large that the range's padding rounds away
        raise ValueError(
            f"The continuous scores all equal {t.min():.6g} on the working scale, where floating point cannot "
            "tell a range of bins around them from the value itself. Centre the decision values (subtract "
            "a constant such as their median) before summarising."
        )
    _check_bounds(lo, hi)
    return lo, hi


def _atoms(score_kind: str) -> np.ndarray:
    """Values kept exactly by a summary: probability 0 and 1 (none for decision values)."""
    return np.array([0.0, 1.0]) if score_kind == "probability" else np.empty(0)


def _range(t: np.ndarray) -> tuple[float, float]:
    """Working-scale range of the data, padded so the extremes fall inside the end bins."""
    lo, hi = (float(t.min()), float(t.max())) if t.size else (-1.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    pad = 1e-9 * (hi - lo)
    return lo - pad, hi + pad


def class_bin_counts(
    data: ScoreData,
    lo: float,
    width: float,
    n_bins: int,
    skip: np.ndarray | None = None,
    asinh: tuple[float, float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Rows and weights per (class, bin) of equal-width bins, in one compiled pass over the rows
    (two passes over its halves in two threads above :data:`THREADED_ROWS` rows).

    Row i goes to bin :math:`\lfloor (u_i - \mathrm{lo}) / \mathrm{width} \rfloor`, clipped to
    ``0 .. n_bins - 1`` (the outer bins take anything beyond), with :math:`u_i = t_i` the
    working-scale score or, with ``asinh=(m, s)``, :math:`u_i = \operatorname{asinh}((t_i - m) / s)`.

    Parameters
    ----------
    data : ScoreData
        Validated rows.
    lo : float
        Left edge of the first bin (on the scale of :math:`u`).
    width : float
        Width of every bin.
    n_bins : int
        Number of bins.
    skip : ndarray of bool of shape (n,), optional
        Rows to leave out (atoms).
    asinh : (float, float), optional
        Centre :math:`m` and scale :math:`s` of the asinh scale; the working scale when None.

    Returns
    -------
    rows : ndarray of int of shape (2, n_bins)
        Number of rows of each class in each bin.
    weights : ndarray of shape (2, n_bins)
        Their summed weights.
    """
    from bayescal._kernels import bin_rows

    mask = np.zeros(0, dtype=np.bool_) if skip is None else np.ascontiguousarray(skip, dtype=np.bool_)
    centre, inv_scale = (0.0, 0.0) if asinh is None else (float(asinh[0]), 1.0 / float(asinh[1]))

    def run(a: int, b: int) -> tuple[np.ndarray, np.ndarray]:
        counts, weights = np.zeros((2, n_bins), dtype=np.int64), np.zeros((2, n_bins))
        rows = slice(a, b)
        part_mask = mask[rows] if mask.size else mask
        bin_rows(
            data.t[rows], data.y[rows], data.w[rows], part_mask, centre, inv_scale, float(lo), float(width),
            int(n_bins), counts, weights,
        )  # fmt: skip
        return counts, weights

    parts = _in_row_halves(data.t.size, run)
    return np.sum([p[0] for p in parts], axis=0), np.sum([p[1] for p in parts], axis=0)


def asinh_bins(
    data: ScoreData, n_bins: int, spread: float = ASINH_SPREAD, bins_per_iqr: float = 0.0
) -> tuple[np.ndarray, np.ndarray]:
    r"""Per-class weights of the rows on ``n_bins`` bins that are equal-width on
    :math:`u = \operatorname{asinh}((t - m) / s)`, and the bins' centres on the working scale.

    :math:`m` is the median of the working-scale scores and :math:`s` ``spread`` robust standard
    deviations (interquartile range / 1.349), both of the rows weighted by their weights (a row
    of weight k as k rows; every k-th row above 100,000, so that they cost one pass). Within about :math:`s` of the median the bins are nearly equal in
    width; beyond, their width grows in proportion to the distance, so a few outlying scores
    (heavy-tailed decision values) stretch the range logarithmically instead of leaving the
    bulk of the data in a handful of equal-width bins.

    With ``bins_per_iqr`` the bins must resolve the data region, the rows between their 2.5 % and
    97.5 % quantiles: where the widest bin there, the one at the region's end farther from
    :math:`m`, is wider than the interquartile range over ``bins_per_iqr``, far outlying scores
    have stretched the range, and the layout adapts in two steps. First :math:`s` takes the value
    among ``spread`` robust standard deviations times :math:`2^{-k/4}`, :math:`k = 0, \dots, 24`,
    that makes that bin narrowest (a bin at distance :math:`d` from :math:`m` is about
    :math:`\sqrt{s^2 + d^2}\,U / n_{bins}` wide, :math:`U` the range of the scores on the asinh
    scale, which a smaller :math:`s` lengthens only logarithmically: with far outliers the width
    falls as :math:`s` does, down to about :math:`d`); then ``n_bins`` is doubled, up to
    :data:`ASINH_MAX_BIN_FACTOR` times, until that bin is narrow enough. Scores whose data region
    is resolved at ``n_bins`` keep :math:`s` and ``n_bins``.

    Parameters
    ----------
    data : ScoreData
        Validated rows (continuous: no atoms).
    n_bins : int
        Number of bins.
    spread : float, default :data:`ASINH_SPREAD`
        :math:`s` in robust standard deviations.
    bins_per_iqr : float, default 0
        The resolution the data region needs: its widest bin at most the interquartile range
        over this many (0: any).

    Returns
    -------
    counts : ndarray of shape (2, n_bins')
        Weight of each class in each bin (``n_bins'`` the bins used).
    centres : ndarray of shape (n_bins',)
        :math:`m + s \sinh(u_j)` at the bins' midpoints :math:`u_j`.
    """
    m, s, lo, width, n_bins = _asinh_layout(data.t, n_bins, spread, bins_per_iqr, data.w)
    _, counts = class_bin_counts(data, lo, width, n_bins, asinh=(m, s))
    return counts, m + s * np.sinh(lo + width * (np.arange(n_bins) + 0.5))


def asinh_edges(t: np.ndarray, n_bins: int, spread: float = ASINH_SPREAD, bins_per_iqr: float = 0.0) -> np.ndarray:
    r"""The edges of the bins that :func:`asinh_bins` counts the rows on.

    Parameters
    ----------
    t : ndarray of shape (n,)
        Working-scale scores of all rows (both classes, no atoms), as ``ScoreData.t``.
    n_bins : int
        Number of bins.
    spread : float, default :data:`ASINH_SPREAD`
        :math:`s` in robust standard deviations, as in :func:`asinh_bins`.
    bins_per_iqr : float, default 0
        As in :func:`asinh_bins`.

    Returns
    -------
    ndarray of shape (n_bins' + 1,)
        :math:`m + s \sinh(u)` at the ends of the equal-width bins on
        :math:`u = \operatorname{asinh}((t - m) / s)`; numpy's histogram of a class's scores on
        them gives that class's counts of :func:`asinh_bins`.
    """
    m, s, lo, width, n_bins = _asinh_layout(np.asarray(t, dtype=np.float64), n_bins, spread, bins_per_iqr)
    return m + s * np.sinh(lo + width * np.arange(n_bins + 1))


_ASINH_SCALE_STEPS = 25
"""Scales :func:`asinh_bins` tries when far outlying scores stretch its range: ``spread`` robust
standard deviations times :math:`2^{-k/4}`, :math:`k` below this (down to a 64th)."""


def _asinh_layout(
    t: np.ndarray, n_bins: int, spread: float, bins_per_iqr: float, w: np.ndarray | None = None
) -> tuple[float, float, float, float, int]:
    """``(m, s, lo, width, n_bins')`` of :func:`asinh_bins`: the centre and scale of the transform,
    the first edge and the width of the bins on the transformed scale, and their number. The
    quantiles are those of the rows weighted by ``w`` (a row of weight k as k rows), as a
    :class:`ScoreSummary` lays out its bins; rows of equal weights are as unweighted rows."""
    step = max(1, t.size // _QUARTILE_ROWS)
    if w is None or w.size == 0 or np.all(w == w[0]):
        quantiles = np.quantile(t[::step], _LAYOUT_QUANTILES)
    else:
        quantiles = weighted_quantile(t[::step], _LAYOUT_QUANTILES, w[::step])
    ends = (float(t.min()), float(t.max()))
    m, s, n_bins = _region_scale(quantiles, ends, n_bins, spread, bins_per_iqr, ASINH_MAX_BIN_FACTOR)
    lo, hi = _range(np.arcsinh((np.array(ends) - m) / s))
    return m, s, lo, (hi - lo) / n_bins, n_bins


_LAYOUT_QUANTILES = np.array([0.025, 0.25, 0.5, 0.75, 0.975])
"""The quantiles an asinh layout reads: the data region's ends, the quartiles and the median."""


def _region_scale(
    quantiles: np.ndarray,
    ends: tuple[float, float],
    n_bins: int,
    spread: float,
    bins_per_iqr: float,
    max_factor: int,
) -> tuple[float, float, int]:
    """``(m, s, n_bins')`` of an asinh layout of scores with ``quantiles`` (at
    :data:`_LAYOUT_QUANTILES`) over ``ends``: :math:`s` is ``spread`` robust standard deviations
    unless the data region's widest bin is wider than the interquartile range over
    ``bins_per_iqr``; then the scale that makes it narrowest, and the bins doubled up to
    ``max_factor`` times until it is narrow enough (:func:`asinh_bins` states the rule)."""
    q025, q1, m, q3, q975 = (float(q) for q in quantiles)
    s = _asinh_scale(q1, q3, spread)
    if not s > 0:  # more than half the rows on one value: the range sets the scale
        s = max(ends[1] - ends[0], 1e-12)
    reach = max(m - q025, q975 - m)  # the data region's end farther from m, where its widest bin is
    needed = (q3 - q1) / bins_per_iqr if bins_per_iqr > 0 and q3 > q1 else np.inf

    def widest(scale: float, bins: int) -> float:
        lo, hi = _range(np.arcsinh((np.array(ends) - m) / scale))
        return float(np.hypot(scale, reach) * (hi - lo) / bins)

    factor = 1
    if widest(s, n_bins) > needed:
        scales = s * 2.0 ** (-np.arange(_ASINH_SCALE_STEPS) / 4)
        s = float(scales[np.argmin([widest(c, n_bins) for c in scales])])
        while widest(s, n_bins * factor) > needed and factor < max_factor:
            factor *= 2
    return m, s, n_bins * factor


def _asinh_scale(q1: float, q3: float, spread: float) -> float:
    """:math:`s` of the asinh layouts: ``spread`` robust standard deviations (interquartile range / 1.349)."""
    return float(spread * (q3 - q1) / 1.349)


def _layout_quantiles(samples: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """Weighted quantiles :data:`_LAYOUT_QUANTILES` of the pooled ``(values, weights)`` samples
    (quantile sketches, or rows) of the continuous scores of positive weight; empty when there
    are none. Values without weight mean the samples missed the weighted scores: refused."""
    if not any(v.size for v, _ in samples):
        return np.empty(0)
    if not sum(w.sum() for _, w in samples) > 0:
        raise RuntimeError(
            "The sample of scores that lays out a ScoreSummary's bins holds no weight, though the data does: "
            "please report this bug."
        )
    return sketch_quantile(samples, _LAYOUT_QUANTILES)


def _summary_layout(
    quantiles: np.ndarray, n_bins: int, lo: float, hi: float, *, lo_hi_given: bool
) -> tuple[float, float] | None:
    r"""The layout of a summary's bins over ``[lo, hi]``: None for equal-width bins, or the centre
    :math:`m` and scale :math:`s` of bins equal-width on :math:`\operatorname{asinh}((t - m) / s)`.

    Equal-width bins put the middle half of the continuous weight (between its quartiles
    :math:`q_1, q_3`) in :math:`(q_3 - q_1)\,n_{bins} / (hi - lo)` bins. Below
    :data:`SUMMARY_MIN_MIDDLE_BINS` a few far outlying scores stretch the range: with the range
    left to the data the bins go on the asinh scale, laid out by the rule of the DPM's own
    compression (:func:`asinh_bins` with ``bins_per_iqr`` = :data:`ASINH_BINS_PER_IQR`, but
    ``n_bins`` kept):
    :math:`m` the median, :math:`s` the scale that resolves the data region (the scores between
    their 2.5 % and 97.5 % quantiles) best; with ``lo``/``hi`` given they stay equal-width, so
    that summaries of shards add, and a warning names the remedy.
    """
    if not len(quantiles):  # no continuous weight: nothing to resolve
        return None
    q1, q3 = float(quantiles[1]), float(quantiles[3])
    middle = (q3 - q1) * n_bins / (hi - lo)
    if not 0.0 < middle < SUMMARY_MIN_MIDDLE_BINS:  # resolved, or half the weight on one score
        return None
    if not lo_hi_given:
        m, s, _ = _region_scale(quantiles, (lo, hi), n_bins, ASINH_SPREAD, ASINH_BINS_PER_IQR, 1)
        return m, s
    warn(
        f"The summary's {n_bins} equal-width bins over lo={lo:.4g}, hi={hi:.4g} put the middle half of the "
        f"continuous scores (working scale {q1:.4g} to {q3:.4g}) in {middle:.1f} bins, so a calibrator fitted on "
        "this summary sees the bulk of the data that coarsely (on simulated heavy-tailed decision values the "
        "DPM's band then missed most of the true map). Leave lo and hi None (the bins then go on an asinh "
        "scale of the scores, fine in the bulk and wide in the tails), narrow lo/hi, or raise n_bins."
    )
    return None


def _summarise(
    data: ScoreData,
    n_bins: int,
    lo: float,
    hi: float,
    asinh: tuple[float, float] | None,
    atoms: np.ndarray,
    is_atom: np.ndarray,
) -> "ScoreSummary":
    """The :class:`ScoreSummary` of ``data`` on ``n_bins`` bins over ``[lo, hi]``, equal-width on
    the working scale, or on its asinh scale with ``asinh=(m, s)`` (:func:`_summary_layout`)."""
    if asinh is None:
        u_lo, u_hi = lo, hi
    else:
        m, s = asinh
        u_lo, u_hi = np.arcsinh((lo - m) / s), np.arcsinh((hi - m) / s)
    width = (u_hi - u_lo) / n_bins
    any_atom = bool(is_atom.any())
    # atoms are counted apart; rows of weight 0 count nothing, and may lie far beyond the bins
    skip = is_atom | (data.w == 0)
    _, counts = class_bin_counts(data, u_lo, width, n_bins, skip=skip if skip.any() else None, asinh=asinh)
    atom_counts = np.zeros((2, atoms.size))
    if any_atom:
        for j, a in enumerate(atoms):
            at = data.scores == a
            atom_counts[:, j] = np.bincount(data.y[at], weights=data.w[at], minlength=2)
    edges = u_lo + width * np.arange(n_bins + 1)
    if asinh is not None:
        edges = asinh[0] + asinh[1] * np.sinh(edges)
    edges[0], edges[-1] = lo, hi  # exact ends, whatever the rounding of sinh(arcsinh(.))
    return ScoreSummary(
        edges=edges,
        counts=counts,
        atoms=atoms,
        atom_counts=atom_counts,
        score_kind=data.score_kind,
        classes=np.asarray(data.classes),
    )


def dask_partitions(
    scores: ArrayLike, y: ArrayLike, sample_weight: ArrayLike | None = None, X: ArrayLike | None = None
) -> list[tuple]:
    """``(scores, y, sample_weight, X)`` of every partition, as Delayed objects.

    Dask dataframe columns give their partitions; Dask arrays are rechunked to the row
    chunks of ``scores`` (2-D ones whole across columns). Nothing is computed: no pass over
    the data to learn partition lengths. A scalar or ``None`` weight, and a ``None`` ``X``,
    are repeated as they are.

    Parameters
    ----------
    scores : Dask array or Dask dataframe column
        Scores.
    y : Dask array or column
        Labels, partitioned like ``scores``.
    sample_weight : Dask array or column, scalar or None, optional
        Weights.
    X : Dask dataframe or 2-D Dask array, optional
        Features.

    Returns
    -------
    list of tuple
    """
    import dask.array as da

    named = {"scores": scores, "y": y} | ({} if X is None else {"X": X})
    if sample_weight is not None and not np.isscalar(sample_weight):
        named["sample_weight"] = sample_weight
    # an xarray object backed by a Dask array is read through that array
    named = {k: (v.data if hasattr(v, "variable") and is_dask_collection(v) else v) for k, v in named.items()}
    for name, v in named.items():
        if not is_dask_collection(v):
            raise ValueError(
                f"{name} is in memory while other inputs are Dask collections: pass scores, y, "
                "sample_weight and X all as Dask collections (e.g. columns of one Dask dataframe), "
                "or all in memory."
            )
    check_dask_scores_shape(named["scores"])
    for name in ("y", "sample_weight"):
        if name in named:
            _check_dask_column_shape(named[name], name)
    arrays = {k: v for k, v in named.items() if isinstance(v, da.Array)}
    lengths = {k: v.shape[0] for k, v in arrays.items()}
    if len(arrays) == len(named) and not any(np.isnan(n) for n in lengths.values()):
        # all Dask arrays of known lengths: align the row chunks on those of the scores (arrays
        # of unknown chunk sizes, such as those taken by a Dask mask, are paired chunk by chunk
        # and each pair's lengths checked when it is computed)
        if len(set(lengths.values())) > 1:
            desc = ", ".join(f"{k} has {v}" for k, v in lengths.items())
            raise ValueError(f"Mismatched lengths: {desc}. Pass one value per sample in each.")
        named = {k: v.rechunk({0: named["scores"].chunks[0]}) for k, v in named.items()}

    def pieces(optimize: bool) -> dict[str, list]:
        return {
            name: list((v.rechunk({1: -1}) if v.ndim == 2 else v).to_delayed().ravel())
            if isinstance(v, da.Array)
            else list(v.to_delayed(optimize_graph=optimize))
            for name, v in named.items()
        }

    parts = pieces(True)
    if len({len(v) for v in parts.values()}) > 1:
        # the optimiser fuses a frame's small partitions by the columns selected (a column and a
        # slice of columns of one Parquet frame can come in different numbers of pieces): unfused
        parts = pieces(False)
    sizes = {k: len(v) for k, v in parts.items()}
    if len(set(sizes.values())) > 1:
        desc = ", ".join(f"{k} has {v}" for k, v in sizes.items())
        raise ValueError(
            f"Mismatched partitions: {desc}. Pass columns of one Dask dataframe, or Dask arrays "
            "with the same row chunks."
        )
    weights = parts.get("sample_weight", [sample_weight] * sizes["scores"])
    return list(zip(parts["scores"], parts["y"], weights, parts.get("X", [None] * sizes["scores"])))


def check_dask_scores_shape(scores: Any) -> None:
    """Refuse Dask scores that are a scalar or of more than one column by their whole shape
    (each chunk, checked alone, would report its own)."""
    shape = getattr(scores, "shape", (0,))
    if len(shape) == 0:
        _as_1d_float(np.zeros(()), "scores")  # the in-memory message
    if len(shape) > 2 or (len(shape) == 2 and shape[1] != 1):
        raise ValueError(
            f"scores has shape {tuple(shape)}: pass one score per sample, shape (n,) or (n, 1) "
            "(for a classifier's predict_proba output, its positive-class column)."
        )


def _check_dask_column_shape(values: Any, name: str) -> None:
    """Refuse Dask labels or weights that are not one value per row, shape (n,) or (n, 1), by their
    whole shape, with the message the in-memory check gives (read off a zero-stride array of that
    shape, which holds no data)."""
    shape = getattr(values, "shape", (0,))  # a dataframe column is 1-D
    if len(shape) == 1 or (len(shape) == 2 and shape[1] == 1):
        return
    stand_in = np.broadcast_to(np.zeros(()), tuple(0 if np.isnan(d) else int(d) for d in shape))
    if name == "y":
        check_labels(stand_in, name=name)
    else:
        _as_1d_float(stand_in, name)


def _block_stats(s: Any, y: Any, w: Any, score_kind: str) -> dict:
    """One chunk's row count, working-scale min and max (atoms excluded), label values and
    number of positively weighted rows. A check that fails in the chunk comes back as
    ``error`` (a :class:`~bayescal._validation.RowValueError`), and the chunk's lengths as
    ``lengths``, so that the caller can state the error for the whole data (counts, first
    row, range); ``range`` is the scores' min and max."""
    n = int(np.shape(s)[0]) if np.ndim(s) else 0
    out = {
        "n": n,
        "lengths": (n, len(y) if np.ndim(y) else 0, None if w is None or np.isscalar(w) else len(w)),
        "lo": np.nan,
        "hi": np.nan,
        "range": (np.nan, np.nan),
        "labels": np.empty(0),
        "weight": 0.0,
        "sketch": (np.empty(0), np.empty(0)),
        "top": 0.0,
        "relative": 0.0,
        "merged": None,
        "error": None,
    }
    if n == 0:  # an empty partition
        return out
    try:
        s = check_scores(s, score_kind=score_kind, max_abs=MAX_ABS_DECISION)
    except RowValueError as exc:
        out["error"] = exc
        return out
    out["range"] = (float(s.min()), float(s.max()))
    y = np.asarray(y)
    try:
        check_labels_present(y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y, "y")
    except RowValueError as exc:
        out["error"] = exc
        return out
    if _lengths_differ(out):  # reported by the caller over all chunks
        return out
    try:
        w = np.full(n, 1.0 if w is None else float(w)) if w is None or np.isscalar(w) else _chunk_weights(w, s)
    except RowValueError as exc:
        out["error"] = exc
        return out
    laid = ~np.isin(s, _atoms(score_kind)) & (w > 0)  # the continuous scores of positive weight set the grid
    t = to_working(s[laid], score_kind)
    top = float(w.max()) if w.size else 0.0
    step = max(1, t.size // _QUARTILE_ROWS)
    out.update(
        lo=float(t.min()) if t.size else np.nan,
        hi=float(t.max()) if t.size else np.nan,
        labels=distinct_labels(y),
        merged=merged_extremes(s, y, w) if score_kind == "probability" else None,
        weight=float(np.sum(w > 0)),
        # every k-th row (cheap), weights relative to the chunk's largest (no overflow near 1e308)
        sketch=quantile_sketch(t[::step], w[laid][::step] / top if top > 0 else w[laid][::step], _SKETCH_SIZE),
        top=top,
        relative=float((w / top).sum()) if top > 0 else 0.0,
    )
    return out


def _raise_chunk_errors(stats: list[dict]) -> None:
    """Raise the error the checks give on the whole data, from the chunks' (:func:`_block_stats`):
    the first failing check (scores, then labels, then lengths, then weights, as in memory), its
    rows counted over all chunks and named by their row in the whole (:func:`whole_data_error`);
    lengths that differ, added up over the chunks."""
    order = ("scores", "y", "sample_weight")
    error = whole_data_error([(st["n"], st["error"], st["range"] if st["n"] else None) for st in stats], order)
    differ = any(_lengths_differ(st) for st in stats)
    if error is not None and (error.rank(order)[0] < 2 or not differ):
        raise error
    if differ:
        names = {"scores": 0, "y": 1} | ({} if stats[0]["lengths"][2] is None else {"sample_weight": 2})
        totals = {k: sum(st["lengths"][i] for st in stats) for k, i in names.items()}
        if len(set(totals.values())) > 1:
            check_consistent_length(**{k: range(v) for k, v in totals.items()})
        raise ValueError(
            f"{', '.join(totals)} are partitioned differently (their partitions hold different numbers of rows): "
            "take them as columns of one Dask dataframe, or rechunk them alike."
        )


def _lengths_differ(st: dict) -> bool:
    """Whether a chunk's scores, labels and weights (:func:`_block_stats`) differ in length."""
    return len({k for k in st["lengths"] if k is not None}) > 1


def _chunk_weights(w: Any, s: np.ndarray) -> np.ndarray:
    """One chunk's weights as a 1-D float64 array: real, finite and non-negative (a chunk may hold
    only zero weights)."""
    check_consistent_length(scores=s, sample_weight=w)
    w = _as_1d_float(w, "sample_weight")
    if not np.isfinite(w).all() or (w < 0).any():
        raise ValueError("sample_weight has NaN, infinite or negative values: pass finite non-negative weights.")
    return w


def _block_summary(s, y, w, score_kind, classes, n_bins, lo, hi, asinh, scale=1.0) -> "ScoreSummary | None":
    if np.ndim(s) == 0 or np.shape(s)[0] == 0:  # an empty partition adds nothing
        return None
    s = check_scores(s, score_kind=score_kind)
    y01, _ = check_labels(y, pos_label=classes[1], require_both=False)
    if w is None or np.isscalar(w):
        w = np.full(s.shape[0], 1.0 if w is None else float(w))
    else:  # a chunk may legitimately hold only zero weights, so only finiteness and sign are checked
        w = _chunk_weights(w, s)
    w = w / scale
    data = ScoreData(scores=s, t=to_working(s, score_kind), y=y01, w=w, score_kind=score_kind, classes=classes)
    atoms = _atoms(score_kind)
    return _summarise(data, n_bins, lo, hi, asinh, atoms, np.isin(s, atoms))


def sum_pair(a: "ScoreSummary | None", b: "ScoreSummary | None") -> "ScoreSummary | None":
    return b if a is None else a if b is None else a + b
