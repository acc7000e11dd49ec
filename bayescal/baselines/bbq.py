"""BBQ: Bayesian Binning into Quantiles."""

from __future__ import annotations

import numpy as np
from scipy.special import expit, gammaln

from bayescal import _schema as schema
from bayescal._interp import step_sorted
from bayescal._validation import check_number
from bayescal.base import Calibrator
from bayescal.data import ScoreData

__all__ = ["BBQ"]

_SELECTIONS = ("average", "best")
_PRIOR_CLIP = 0.005
_MAX_BINS = 2 * 10**7
"""Most bins, over all candidate binnings, that a fit scores (about 140 bytes each: 2.8 GB); an
unweighted fit reaches it near 2.5e8 rows (10 N^(1/3) = 6,300 bins at most)."""


def _binnings(score: "_Spread", n_bins: np.ndarray) -> tuple[np.ndarray, ...]:
    """The bins of every equal-frequency binning, all models at once.

    The samples lie sorted along the cumulative-weight axis (total ``W``); ``score`` gives the
    score at any position of that axis. Binning ``m`` cuts the weight into chunks of
    ``c = floor(W / n_bins[m])`` (the last takes the remainder); chunk ``i+1`` joins the
    current bin when its last score equals the bin's first score. A chunk can only do so
    when it and the chunk before are entirely tied at one value, so chunk ``i+1`` is absorbed
    exactly when the first score of chunk ``i`` equals the last score of chunk ``i+1``. With
    unit weights these are the authors' index chunks.

    Returns
    -------
    model, start, at_start, before_start : ndarray
        For every bin (sorted by model, then position): the index of its binning in
        ``n_bins``, its start on the cumulative-weight axis, the sample holding the start and
        the sample holding the weight just below it (-1 for a first bin).
    """
    cw = score.cw
    total = cw[-1]
    c = np.floor(total / n_bins)
    model = np.repeat(np.arange(n_bins.shape[0]), n_bins)
    k = np.arange(model.shape[0]) - np.repeat(np.cumsum(n_bins) - n_bins, n_bins)  # chunk number
    first = k * c[model]
    end = np.where(k == n_bins[model] - 1, total, first + c[model])
    at_first = _first_at(cw, first)
    before_end = _last_before(cw, end)
    absorbed = np.zeros(model.shape[0], dtype=bool)
    absorbed[1:] = (k[1:] > 0) & (score.at(at_first[:-1], first[:-1]) == score.at(before_end[1:], end[1:]))
    before_first = np.where(k > 0, np.roll(before_end, 1), -1)  # a chunk starts where the last ended
    keep = ~absorbed
    return model[keep], first[keep], at_first[keep], before_first[keep]


class _Spread:
    """Samples along the cumulative-weight axis, each spread evenly over a score interval.

    Sample ``j`` holds the weight ``cw[j]`` to ``cw[j + 1]`` and spreads it evenly over the
    scores ``[a[j], b[j]]`` (a point, ``a = b``, for a row of data; its bin for a bin of a
    :class:`~bayescal.data.ScoreSummary`), so the score at position ``q`` inside sample ``j``
    is ``a[j] + (q - cw[j]) / w[j] * (b[j] - a[j])``.
    """

    def __init__(self, a: np.ndarray, b: np.ndarray, w: np.ndarray):
        self.a, self.b = a, b
        self.cw = np.concatenate([[0.0], np.cumsum(w)])
        self.w = w
        self.spread = bool(np.any(b > a))

    def at(self, j: np.ndarray, q: np.ndarray) -> np.ndarray:
        """Score at position ``q`` of the axis, inside sample ``j``."""
        if not self.spread:
            return self.a[j]
        frac = np.clip((q - self.cw[j]) / np.where(self.w[j] > 0, self.w[j], 1.0), 0.0, 1.0)
        return self.a[j] + frac * (self.b[j] - self.a[j])


def _merge_ties(t: np.ndarray, y: np.ndarray, w: np.ndarray, edges: np.ndarray | None = None) -> tuple:
    """The samples BBQ bins: one per distinct probability-scale score ``expit(t)``, the score
    prediction reads (decision values beyond about 37 all have probability 1.0, and many beyond
    about 20 share one: prediction cannot tell them apart, so neither may the bins).

    Each sample holds the total weight of the rows at its score and, as its label, their
    weighted fraction of positives. For rows of data (``edges`` is None) a sample is a point
    on the probability scale; for the rows of a :class:`~bayescal.data.ScoreSummary` (bin
    centres per class, and exact atoms) it is spread evenly over its bin, while atoms
    (outside the grid) stay points. The rows are first put in a canonical order (by score,
    label, weight), so the sums, and the fit, do not depend on the order of the rows.

    Returns
    -------
    s, frac, weight : ndarray
        Probability-scale score (the centre of a summary bin), label and weight of each sample.
    score : _Spread
        The samples along the cumulative-weight axis.
    """
    order = np.lexsort((w, y, t))
    t, y, w = t[order], y[order], w[order]
    p = expit(t)
    start = np.flatnonzero(np.concatenate([[True], p[1:] != p[:-1]]))
    weight = np.add.reduceat(w, start)
    frac = np.add.reduceat(w * y, start) / weight
    s = p[start]
    if edges is None:
        return s, frac, weight, _Spread(s, s, weight)
    first, last = t[start], t[np.concatenate([start[1:], [t.size]]) - 1]  # a sample's lowest and highest centre
    k_first = np.clip(np.searchsorted(edges, first, side="right") - 1, 0, edges.size - 2)
    k_last = np.clip(np.searchsorted(edges, last, side="right") - 1, 0, edges.size - 2)
    inside = (first > edges[0]) & (last < edges[-1])
    a = np.where(inside, expit(edges[k_first]), s)
    b = np.where(inside, expit(edges[k_last + 1]), s)
    return s, frac, weight, _Spread(a, b, weight)


def _first_at(cw: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Index of the sample that holds cumulative-weight position ``q`` (the first at ``q``)."""
    return np.searchsorted(cw, q, side="right") - 1


def _last_before(cw: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Index of the sample that holds the weight just below position ``q``."""
    return np.searchsorted(cw, q, side="left") - 1


def _elbow(rel: np.ndarray, alpha: float) -> np.ndarray:
    """Indices of the models kept by the authors' elbow rule, best first.

    Sort the relative likelihoods in decreasing order (stable), skip leading ties, then step
    down while each drop exceeds ``alpha`` times their (population) variance; keep the models
    before the step where it stopped (at least the best). A single model, or weights with no
    variance (every model equally likely), keeps every model.
    """
    order = np.argsort(-rel, kind="stable")
    r = rel[order]
    if r[0] == r[-1]:  # one model, or all equally likely (zero variance)
        return order
    var = float(np.var(rel))
    k = 0
    while k < r.shape[0] - 1 and r[k] == r[k + 1]:
        k += 1
    while k < r.shape[0] - 1 and (r[k] - r[k + 1]) / var > alpha:
        k += 1
    return order[: max(k, 1)]


class BBQ(Calibrator):
    r"""Bayesian Binning into Quantiles (Naeini, Cooper & Hauskrecht 2015).

    BBQ averages histogram-binning calibrators over a space of equal-frequency binnings,
    each weighted by its Bayesian score. It works on the probability scale
    :math:`p = \sigma(t)`: the probabilities themselves, or for decision values their
    logistic transform (as in the authors' demo).

    Parameters
    ----------
    score_kind : {"probability", "decision"}
        Scale of the scores; decision values are mapped through the logistic function.
    alpha : float, default 0.001
        Threshold of the elbow rule that prunes models.
    selection : {"average", "best"}, default "average"
        Average the kept models with relative-likelihood weights, or use the best model.

    Attributes
    ----------
    n_bins_ : ndarray of shape (n_models,)
        Requested number of bins of each candidate binning.
    log_marginal_likelihood_ : ndarray of shape (n_models,)
        BDeu log marginal likelihood of each candidate.
    kept_ : ndarray of shape (n_kept,)
        Indices of the models used for prediction, best first.
    weights_ : ndarray of shape (n_kept,)
        Relative likelihoods of the kept models (not normalised).
    bin_edges_ : list of ndarray
        Edges ``[0, inner..., 1]`` of each kept binning.
    bin_proba_ : list of ndarray
        Calibrated probability :math:`P_b` of each bin of each kept binning.

    Notes
    -----
    The algorithm, as in the authors' MATLAB ``build.m`` and ``predict.m``:

    1. Sort the :math:`N` training probabilities, merging tied scores into one sample with
       their total count and, as its label, their fraction of positives. For every number
       of bins :math:`B = \max(1, \lfloor N^{1/3}/10 \rfloor), \dots,
       \min(\lceil N/5 \rceil, \lceil 10 N^{1/3} \rceil, D)`, with :math:`D` the number of
       distinct scores: cut the sorted scores into chunks of :math:`c = \lfloor N/B \rfloor`
       (the last chunk takes the remainder); a chunk is absorbed into the current bin when
       it is entirely tied with that bin's first score. A cut inside a tie shares the tie
       between the two bins in proportion, positives and negatives alike, so the fit does
       not depend on the order of the rows. The authors' code keeps tied scores in input
       order (a stable sort) instead, so there which labels of a tie fall in which bin
       depends on the order of the rows (rows sorted by label gave badly wrong
       probabilities); without ties the two are the same. The cap :math:`D` (the lower end
       too is lowered to :math:`D`) is not the authors': it binds only when :math:`N > 5D`
       (heavily tied scores, or large weights), where a binning with more bins than
       distinct scores can only cut ties further and the number of binnings would
       otherwise grow with the total weight rather than with the data. A
       :class:`~bayescal.data.ScoreSummary` has no such cap: its bins are spread over
       their score ranges (see below), so finer binnings cut them at new scores.
    2. Inner bin edges are the midpoints between the last score of a bin and the first of
       the next; the outer edges are 0 and 1. Bin :math:`b` spans :math:`[a_b, c_b]`.
    3. Score the binning by the BDeu marginal likelihood with 2 pseudo-counts per bin and
       prior mean :math:`\pi_b = \operatorname{clip}((a_b + c_b)/2, 0.005, 0.995)`:

       .. math:: \log P(D \mid M) = \sum_b \log\Gamma(2) - \log\Gamma(n_b + 2)
           + \log\Gamma(m_b + 2\pi_b) - \log\Gamma(2\pi_b)
           + \log\Gamma(n_b - m_b + 2(1-\pi_b)) - \log\Gamma(2(1-\pi_b)),

       with :math:`n_b` samples and :math:`m_b` positives in bin :math:`b`.
    4. Weight each binning by its relative likelihood
       :math:`r_M = P(D \mid M) / \max_{M'} P(D \mid M')` and keep the models chosen by the
       authors' elbow rule with threshold ``alpha`` (sort :math:`r` decreasingly; after
       leading ties, step down while each drop exceeds ``alpha`` times the variance of
       :math:`r`; keep the models before the step where it stops, at least the best).
    5. Each bin predicts :math:`P_b = (m_b + p_{0b}) / (n_b + 1)`, where
       :math:`p_{0b} = (\sum_{i \in b,\, y_i = 1} p_i + (a_b + c_b)/2) / (m_b + 1)` is the
       smoothed mean score of the bin's positives.
    6. A new score falls in the bin whose edges enclose it (on an edge: the bin above);
       the prediction is :math:`\sum_M r_M P_{b(M)} / \sum_M r_M` over kept models, or the
       best model's alone with ``selection="best"``.

    Cases the original code does not handle: when all scores are equal every binning
    collapses to one bin over [0, 1]; a score equal to the value of bins that hold a single
    tied value (zero width) gets the mean of those bins (the authors' "odd case"); one model,
    or relative likelihoods with zero variance, keep every model.

    ``sample_weight`` acts as frequency weights: :math:`N`, :math:`n_b` and :math:`m_b` are
    sums of weights and the chunks are cut on the cumulative weight (a sample whose weight
    straddles a cut is shared between the two bins in proportion), so integer weights give
    the fit on the data with each row repeated that many times. Their scale therefore
    matters, as for any count-based score. A :class:`~bayescal.data.ScoreSummary` bin
    spreads its weight evenly over the bin's probability range, so a cut inside it falls
    at the interpolated score. The averaged map is not monotone in general
    (``monotone = False``).

    References
    ----------
    Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2015). Obtaining well calibrated
    probabilities using Bayesian binning. AAAI, 2901-2907.
    """

    monotone = False
    _fitted_schema = {
        "n_bins_": schema.array("i", ("m",), low=1),
        "log_marginal_likelihood_": schema.array("f", ("m",), finite=False),
        "kept_": schema.array("i", ("r",), low=0),
        "weights_": schema.array("f", ("r",), low=0.0, high=1.0),
        "bin_edges_": schema.array_list("f", ("b+1",), length="r", low=0.0, high=1.0, order="nondecreasing"),
        "bin_proba_": schema.array_list("f", ("b",), length="r", low=0.0, high=1.0),
    }

    def __init__(self, *, score_kind: str = "probability", alpha: float = 0.001, selection: str = "average"):
        self.score_kind = score_kind
        self.alpha = alpha
        self.selection = selection

    def _check_params(self) -> None:
        if self.selection not in _SELECTIONS:
            raise ValueError(f"selection={self.selection!r} must be one of {_SELECTIONS}.")
        try:  # a real number: not a string or a bool, finite, at least 0
            check_number(self.alpha, "alpha", low=0.0)
        except ValueError:
            raise ValueError(f"alpha={self.alpha!r} must be a non-negative number (0.001 by default).") from None

    def _fit(self, data: ScoreData, X=None) -> None:
        self._check_params()
        alpha = float(self.alpha)
        keep = data.w > 0
        # one sample per distinct score (rows: a point; bins of a ScoreSummary: spread over the bin)
        s, y, w, score = _merge_ties(data.t[keep], data.y[keep].astype(np.float64), data.w[keep], data.bin_edges)
        cw = score.cw
        n = cw[-1]
        cum_y = np.concatenate([[0.0], np.cumsum(w * y)])
        cum_sy = np.concatenate([[0.0], np.cumsum(w * s * y)])
        b_min = max(1, int(np.floor(n ** (1 / 3) / 10)))
        b_max = min(int(np.ceil(n / 5)), int(np.ceil(10 * n ** (1 / 3))))
        if not score.spread:  # no more bins than distinct scores (Notes, step 1)
            b_min, b_max = min(b_min, s.shape[0]), min(b_max, s.shape[0])
        n_bins = np.arange(b_min, max(b_min, b_max) + 1)
        if n_bins.sum() > _MAX_BINS:
            raise ValueError(
                f"BBQ would score {n_bins.size} binnings of up to {n_bins[-1]} bins ({n_bins.sum():.3g} bins, more "
                f"than {_MAX_BINS:.0e}): the number of bins grows as 10 N^(1/3) with the total weight N = {n:.3g}. "
                "If sample_weight holds relative weights (importance or survey weights), rescale them to average 1."
            )

        # every bin of every binning in flat arrays, sorted by model then position
        model, start, j_start, j_before = _binnings(score, n_bins)
        first_bin = np.concatenate([[True], model[1:] != model[:-1]])
        last_bin = np.append(first_bin[1:], True)
        end = np.where(last_bin, n, np.roll(start, -1))
        j_end = np.where(last_bin, s.shape[0] - 1, np.roll(j_start, -1))  # the total sits at the last sample's end

        def below(cum: np.ndarray, per_unit: np.ndarray, j: np.ndarray, q: np.ndarray) -> np.ndarray:
            # cumulative sum up to position q inside sample j: a sample's weight is spread
            # evenly over its stretch of the cumulative-weight axis
            return cum[j] + (q - cw[j]) * per_unit[j]

        nb = end - start
        mb = below(cum_y, y, j_end, end) - below(cum_y, y, j_start, start)
        sy = s * y
        sum_sy = below(cum_sy, sy, j_end, end) - below(cum_sy, sy, j_start, start)
        # a bin starts between the score just below its start and the score at it
        lo = np.where(first_bin, 0.0, 0.5 * (score.at(np.maximum(j_before, 0), start) + score.at(j_start, start)))
        hi = np.where(last_bin, 1.0, np.roll(lo, -1))
        mid = 0.5 * (lo + hi)
        prior = np.clip(mid, _PRIOR_CLIP, 1.0 - _PRIOR_CLIP)
        terms = (
            gammaln(2.0)
            - gammaln(nb + 2.0)
            + gammaln(mb + 2.0 * prior)
            - gammaln(2.0 * prior)
            + gammaln(nb - mb + 2.0 * (1.0 - prior))
            - gammaln(2.0 * (1.0 - prior))
        )
        log_ml = np.bincount(model, weights=terms, minlength=n_bins.shape[0])
        p0 = (sum_sy + mid) / (mb + 1.0)
        proba = (mb + p0) / (nb + 1.0)

        rel = np.exp(log_ml - log_ml.max())
        kept = _elbow(rel, alpha)
        if self.selection == "best":
            kept = kept[:1]
        self.n_bins_ = n_bins
        self.log_marginal_likelihood_ = log_ml
        self.kept_ = kept
        self.weights_ = rel[kept]
        bounds = [np.searchsorted(model, [k, k + 1]) for k in kept]
        self.bin_edges_ = [np.append(lo[i:j], 1.0) for i, j in bounds]
        self.bin_proba_ = [proba[i:j] for i, j in bounds]
        self._restore()

    @staticmethod
    def _bin_predict(s: np.ndarray, edges: np.ndarray, proba: np.ndarray) -> np.ndarray:
        """Bin probability at ``s``; on an edge the bin above, on zero-width bins their mean."""
        inner = edges[1:-1]
        hi = np.searchsorted(inner, s, side="right")
        if not np.any(inner[1:] == inner[:-1]):
            return proba[hi]
        lo = np.searchsorted(inner, s, side="left")
        csum = np.concatenate([[0.0], np.cumsum(proba)])
        n_zero_width = hi - lo - 1  # bins [v, v] when s equals v on two or more edges
        zero_width_mean = (csum[hi] - csum[np.minimum(lo + 1, hi)]) / np.maximum(n_zero_width, 1)
        return np.where(n_zero_width > 0, zero_width_mean, proba[hi])

    def _average(self, s: np.ndarray) -> np.ndarray:
        """The weighted average over the kept models at probability scores ``s``."""
        out = np.zeros(s.shape[0])
        for w, edges, proba in zip(self.weights_, self.bin_edges_, self.bin_proba_):
            out += w * self._bin_predict(s, edges, proba)
        return out / self.weights_.sum()

    def _check_fitted(self) -> None:
        super()._check_fitted()
        if (self.kept_ >= self.n_bins_.size).any() or not self.weights_.sum() > 0:
            raise ValueError("kept_ names a model that does not exist, or the kept models have no weight.")
        if any(e[0] != 0.0 or e[-1] != 1.0 for e in self.bin_edges_):
            raise ValueError("bin_edges_ must run from 0 to 1.")

    def _restore(self) -> None:
        # The average is constant between consecutive edges of all models (no model has an
        # edge inside) and takes its own value on each edge, so it is tabulated once on the
        # union of the edges: prediction is then one binary search instead of one per model.
        edges = np.unique(np.concatenate([e[1:-1] for e in self.bin_edges_]))
        inside = (
            np.concatenate([[edges[0] - 1.0], 0.5 * (edges[1:] + edges[:-1]), [edges[-1] + 1.0]])
            if edges.size
            else np.array([0.5])
        )
        self._union_edges = edges
        self._on_edge = self._average(edges)
        self._between = self._average(inside)

    def _calibrate(self, t, X=None):
        return step_sorted(expit(t), self._union_edges, self._between, self._on_edge)
