r"""Decisions read off a calibration map (Cohen & Goldszmidt 2004).

With costs :math:`c_{FP}` of a false positive and :math:`c_{FN}` of a false negative, the
expected cost of predicting 1 at a score with calibrated probability :math:`p` is
:math:`(1-p)\,c_{FP}` and of predicting 0 is :math:`p\,c_{FN}`, so the optimal rule predicts
1 exactly where

.. math:: p(s) > c^* = \frac{c_{FP}}{c_{FP} + c_{FN}}.

The decision regions are the score intervals where the calibration map lies above
:math:`c^*`; there is one threshold when the map crosses :math:`c^*` once (Theorem 2 of
the paper, for a monotone map) and several when it crosses more often. Under a posterior,
each draw of the map gives its own regions, and since expected cost is linear in
:math:`p`, the rule minimising posterior expected cost thresholds the posterior-mean map.

Every function takes any calibrator: a point estimate is a posterior with one draw.
To plug a fitted calibrator into scikit-learn's threshold tools, freeze it (their ``fit``
refits the estimator otherwise) and pass a one-column score matrix:
``FixedThresholdClassifier(FrozenEstimator(cal), threshold=c_star, response_method="predict_proba")``
is this module's rule except where the map equals :math:`c^*` exactly (scikit-learn predicts 1
where the probability is at least the threshold, this module where it exceeds it; the expected
cost is the same either way); ``TunedThresholdClassifierCV(cal)`` searches the threshold instead.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import xarray as xr

from bayescal._typing import ArrayLike
from bayescal._validation import (
    check_calibrator,
    check_ci_prob,
    check_consistent_length,
    check_labels,
    check_labels_as,
    check_number,
    check_sample_weight,
    check_scored_labels,
    check_scores,
)
from bayescal.data import at_atoms, to_working

if TYPE_CHECKING:
    from bayescal.base import Calibrator

__all__ = [
    "cost_cutoff",
    "DecisionRegions",
    "decision_regions",
    "realized_cost",
    "expected_profit",
    "expected_cost",
    "roc_from_map",
    "bayes_error_posterior",
]


def cost_cutoff(cost_fp: float = 1.0, cost_fn: float = 1.0) -> float:
    r"""The probability cut-off :math:`c^* = c_{FP} / (c_{FP} + c_{FN})` of the optimal rule.

    Predicting 1 where :math:`P(y=1 \mid s) > c^*` minimises the expected cost.

    Parameters
    ----------
    cost_fp : float, default 1.0
        Cost of a false positive, >= 0.
    cost_fn : float, default 1.0
        Cost of a false negative, >= 0 (not both zero).

    Returns
    -------
    float
        :math:`c^*` in [0, 1].

    Examples
    --------
    >>> from bayescal.decision import cost_cutoff
    >>> cost_cutoff(cost_fp=1.0, cost_fn=4.0)
    0.2
    """
    cost_fp = check_number(cost_fp, "cost_fp", low=0.0)
    cost_fn = check_number(cost_fn, "cost_fn", low=0.0)
    if cost_fp + cost_fn == 0:
        raise ValueError("cost_fp and cost_fn are both zero: at least one error must cost something.")
    scale = max(cost_fp, cost_fn)  # so that the sum cannot overflow (costs near the largest float)
    return (cost_fp / scale) / (cost_fp / scale + cost_fn / scale)


def _labels_pair(y_true: Any, y_pred: Any, pos_label: Any) -> tuple[np.ndarray, np.ndarray]:
    """``y_true`` and ``y_pred`` as 0/1 under one coding: the classes are the values of both together
    (at most two), the positive one ``pos_label`` or, by default, the greater (the rule of ``fit``),
    except that text labels, and labels of one value other than -1, 0 and 1, need ``pos_label``
    (:func:`~bayescal._validation.check_scored_labels`: the costs of the two errors differ, and a
    guessed positive class would swap them)."""
    for values, name in ((y_true, "y_true"), (y_pred, "y_pred")):  # each on its own: shape, missing values
        check_labels(values, require_both=False, name=name, pos_label=pos_label)
    true, pred = _plain(y_true), _plain(y_pred)
    n = check_consistent_length(y_true=true, y_pred=pred)
    is_text = [a.dtype.kind in "USO" and any(isinstance(v, str) for v in a.tolist()) for a in (true, pred)]
    if is_text[0] != is_text[1]:
        raise ValueError(
            "y_true and y_pred code the classes differently (one with strings, the other with "
            "numbers): pass both with the same labels, e.g. the values predict() returns."
        )
    both = np.concatenate([true.astype(object), pred.astype(object)]) if is_text[0] else np.concatenate([true, pred])
    joint = check_scored_labels(both, pos_label=pos_label, name="y_true and y_pred together")
    return joint[:n], joint[n:]


def _plain(values: Any) -> np.ndarray:
    """A 1-D numpy view of labels (pandas / xarray unwrapped, (n, 1) flattened)."""
    if hasattr(values, "to_numpy") and not isinstance(values, np.ndarray):
        values = values.to_numpy()
    arr = np.asarray(values)
    return arr[:, 0] if arr.ndim == 2 and arr.shape[1] == 1 else arr


def _crossings(grid: np.ndarray, values: np.ndarray, level: float) -> np.ndarray:
    """Scores where ``values - level`` changes sign along ``grid`` (linear interpolation)."""
    d = values - level
    above = d > 0
    idx = np.flatnonzero(above[1:] != above[:-1])
    x0, x1, d0, d1 = grid[idx], grid[idx + 1], d[idx], d[idx + 1]
    return x0 - d0 / (d1 - d0) * (x1 - x0)  # d1 != d0 at a change of sign


def _intervals(grid: np.ndarray, values: np.ndarray, level: float) -> list[tuple[float, float]]:
    """Maximal score intervals (within the grid) where ``values > level``."""
    cuts = _crossings(grid, values, level)
    edges = np.concatenate([[grid[0]], cuts, [grid[-1]]])
    out = []
    starts_above = values[0] > level
    for k in range(edges.size - 1):
        if (k % 2 == 0) == starts_above:
            out.append((float(edges[k]), float(edges[k + 1])))
    return out


@dataclass(frozen=True)
class DecisionRegions:
    """The cost-optimal decision rule read off a calibration map.

    Attributes
    ----------
    cutoff : float
        :math:`c^*`; predict 1 where the map exceeds it.
    thresholds : ndarray
        Scores where the posterior-mean map crosses :math:`c^*` (sorted).
    intervals : list of (float, float)
        Score intervals (within the grid) where the rule predicts 1.
    rule : xarray.DataArray
        Over ``score``: 1 where the rule predicts 1.
    prob_optimal : xarray.DataArray
        Over ``score``: posterior probability that predicting 1 is optimal (0/1 for a point estimate).
    n_crossings : xarray.DataArray
        Over ``(chain, draw)``: how many thresholds each posterior draw of the map has.
    score_kind : str
    classes : ndarray of shape (2,)
        The calibrator's ``classes_``: :meth:`predict` returns ``classes[1]`` where the rule
        predicts 1, as the calibrator's own ``predict`` does.
    calibrator : Calibrator
        A copy of the fitted calibrator the regions were read from; :meth:`predict` asks it for
        the map at scores beyond the grid and at its atoms (a later refit of the original does
        not change the regions).
    atoms : ndarray
        Scores the calibrator models as point masses (a DPM's exact 0 and 1, a heavily repeated
        score; :meth:`~bayescal.base.ClassConditional.score_atoms`), whose map is not the map
        next to them: they are left out of the thresholds and intervals and decided alone.
    atom_rule : ndarray
        1 where the posterior-mean map at the atom exceeds :math:`c^*`.
    """

    cutoff: float
    thresholds: np.ndarray
    intervals: list
    rule: xr.DataArray
    prob_optimal: xr.DataArray
    n_crossings: xr.DataArray
    score_kind: str
    classes: np.ndarray
    calibrator: Any = field(repr=False, compare=False)
    atoms: np.ndarray = field(default_factory=lambda: np.empty(0))
    atom_rule: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int8))

    def predict(self, scores: ArrayLike) -> np.ndarray:
        """Apply the rule to scores on the input scale: ``classes[1]`` inside an interval, else ``classes[0]``.

        Within the grid the rule is the intervals'. Beyond it, where the map may keep changing
        (a parametric map such as Platt's rises or falls past the fitted scores), and at the
        calibrator's atoms, whose map is not the map beside them, a score is decided by the
        calibrator's own posterior-mean map: ``classes[1]`` where ``predict_proba`` exceeds
        :math:`c^*`. Scores are matched to atoms on the working scale, as the calibrator
        matches them (a probability within ``1e-12`` of 0 or 1 is that end).

        Parameters
        ----------
        scores : array-like of shape (n,)
            Scores on the input scale of the calibrator the regions came from.

        Returns
        -------
        ndarray of shape (n,)
            Class labels (values of ``classes``), as the calibrator's ``predict`` returns.
        """
        s = check_scores(scores, score_kind=self.score_kind)
        g = self.rule["score"].values
        at_atom = at_atoms(s, self.atoms, self.score_kind)
        ends = g[~at_atoms(g, self.atoms, self.score_kind)]  # the intervals' grid
        own = at_atom | (s < ends[0]) | (s > ends[-1])
        inside = np.zeros(s.shape, dtype=bool)
        for lo, hi in self.intervals:
            inside |= (s >= lo) & (s <= hi)
        if own.any():
            inside[own] = self.calibrator.predict_proba(s[own])[:, 1] > self.cutoff
        return np.asarray(self.classes)[inside.astype(np.intp)]


def decision_regions(
    calibrator: Calibrator, cost_fp: float = 1.0, cost_fn: float = 1.0, *, grid: ArrayLike = 2001
) -> DecisionRegions:
    """The score regions where predicting 1 minimises expected cost (see the module docstring).

    Parameters
    ----------
    calibrator : fitted Calibrator
    cost_fp, cost_fn : float
        Costs of a false positive and a false negative.
    grid : int or array-like
        Scores (input scale) on which the map is evaluated; an integer gives that many points
        over the range of the scores the calibrator was fitted on (``score_range_``), evenly
        spaced on the input scale.

    Returns
    -------
    DecisionRegions
        The cut-off, the thresholds and intervals of the posterior-mean map, the rule on the
        grid, the posterior probability that predicting 1 is optimal and the number of
        crossings per draw. A threshold is where the map, linear between neighbouring grid
        points, crosses :math:`c^*`: exact to the grid's spacing, so where the scores crowd
        into a small part of the range (probabilities piled near 0 or 1) a finer ``grid``, or
        an array of scores there, places it more closely.
    """
    from bayescal.base import atom_scores

    c = cost_cutoff(cost_fp, cost_fn)
    check_calibrator(calibrator, scores_only="decision_regions")
    cmap = calibrator.calibration_map(grid).sortby("score")  # crossings run along a sorted grid
    g = cmap["score"].values
    atoms = atom_scores(calibrator)  # point masses: their map is not the map beside them
    between = ~at_atoms(g, atoms, calibrator.score_kind)
    if np.count_nonzero(between) < 2:
        raise ValueError(
            f"grid holds {np.count_nonzero(between)} score(s) other than the calibrator's atoms {atoms.tolist()}: "
            "pass a grid of at least two other scores, or an integer."
        )
    mean = cmap.mean(("chain", "draw")).values
    draws = cmap.values.reshape(-1, g.size)[:, between]
    gb = g[between]
    n_cross = np.array([_crossings(gb, d, c).size for d in draws]).reshape(cmap.sizes["chain"], cmap.sizes["draw"])
    atom_rule = np.empty(0, dtype=np.int8)
    if atoms.size:
        atom_rule = (calibrator.calibration_map(atoms).mean(("chain", "draw")).values > c).astype(np.int8)
    return DecisionRegions(
        cutoff=c,
        thresholds=np.sort(_crossings(gb, mean[between], c)),
        intervals=_intervals(gb, mean[between], c),
        rule=xr.DataArray((mean > c).astype(np.int8), dims="score", coords={"score": g}, name="rule"),
        prob_optimal=(cmap > c).mean(("chain", "draw")).rename("prob_optimal"),
        n_crossings=over_draws(n_cross, "n_crossings"),
        score_kind=cmap.attrs["score_scale"],
        atoms=atoms,
        atom_rule=atom_rule,
        classes=np.asarray(calibrator.classes_),
        calibrator=copy.deepcopy(calibrator),  # the fit read here, even if the caller's is refitted later
    )


def realized_cost(
    y_true: ArrayLike,
    y_pred: ArrayLike,
    *,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    sample_weight: ArrayLike | None = None,
    pos_label: Any = None,
) -> float:
    r"""Mean cost per sample of predictions against labels: :math:`(c_{FP}\,FP + c_{FN}\,FN) / N`.

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n,)
        True and predicted labels, coded alike (e.g. ``y_pred`` from ``calibrator.predict``).
        Together they may hold at most two values; the positive class is ``pos_label`` or,
        by default, the greater of the two (the rule of ``fit``: 1 for {0, 1} and {1, 2}, True
        for booleans). Text labels, non-integer numbers and a lone value other than -1, 0 and 1
        need ``pos_label``, as in :mod:`bayescal.metrics` (a guessed positive class would swap
        the two costs).
    cost_fp, cost_fn : float, default 1.0
        Costs of a false positive and a false negative.
    sample_weight : array-like of shape (n,), optional
        The mean is weighted (:math:`N = \sum_i w_i`).
    pos_label : optional
        The positive class.
    """
    cost_cutoff(cost_fp, cost_fn)
    y, pred = _labels_pair(y_true, y_pred, pos_label)
    w = check_sample_weight(sample_weight, y.shape[0], relative=True)
    total = w.sum()  # each cost times its weight share: costs near the largest float do not overflow
    return float(
        cost_fp * (np.sum(w[(pred == 1) & (y == 0)]) / total) + cost_fn * (np.sum(w[(pred == 0) & (y == 1)]) / total)
    )


def expected_profit(
    calibrator: Calibrator,
    scores: ArrayLike,
    y_pred: ArrayLike | None = None,
    *,
    benefit_tp: float | ArrayLike = 1.0,
    benefit_fp: float | ArrayLike = 0.0,
    benefit_tn: float | ArrayLike = 0.0,
    benefit_fn: float | ArrayLike = 0.0,
    ci_prob: float | None = None,
) -> xr.Dataset:
    r"""Expected profit per sample of a rule, under the calibrator's posterior.

    For draw :math:`d` of the map and rule :math:`\hat y_i`,

    .. math:: \text{profit}_d = \frac1N \sum_i \hat y_i [p_{di} b_{TP,i} + (1-p_{di}) b_{FP,i}]
              + (1-\hat y_i) [p_{di} b_{FN,i} + (1-p_{di}) b_{TN,i}].

    Benefits may be per-sample arrays (e.g. a donation amount minus the mailing cost).
    ``y_pred=None`` applies the rule that maximises posterior expected profit per sample.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator (any: a point estimate gives one draw).
    scores : array-like of shape (n,)
        Scores on the calibrator's input scale.
    y_pred : array-like of shape (n,), optional
        The rule's decisions as labels coded by ``calibrator.classes_``, as the calibrator's
        ``predict`` and :meth:`DecisionRegions.predict` return them (0/1 decisions ``d`` are
        the labels ``calibrator.classes_[d]``); the posterior-optimal rule when None.
    benefit_tp, benefit_fp, benefit_tn, benefit_fn : float or array-like of shape (n,)
        Benefit of each outcome (default 1, 0, 0, 0); a cost is a negative benefit.
    ci_prob : float, optional
        Probability of the interval; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95) when None.

    Returns
    -------
    xarray.Dataset
        ``profit`` over ``(chain, draw)``, its ``mean``, and the interval ``ci`` over ``ci_bound``.
    """
    s = _checked_scores(calibrator, scores, "expected_profit")
    n = s.size
    names = ("benefit_tp", "benefit_fp", "benefit_tn", "benefit_fn")
    benefits = [_benefit(v, name, n) for v, name in zip((benefit_tp, benefit_fp, benefit_tn, benefit_fn), names)]
    # benefits over their largest magnitude: sums of values near the largest float (1e308) do not overflow
    scale = max(float(np.max(np.abs(b), initial=0.0)) for b in benefits) or 1.0
    b_tp, b_fp, b_tn, b_fn = (b / scale for b in benefits)
    pred = None if y_pred is None else _pred_as_01(calibrator, y_pred, n) == 1
    total = np.zeros(())
    for rows, p in posterior_blocks(calibrator, s):
        gain1 = p * b_tp[rows] + (1 - p) * b_fp[rows]
        gain0 = p * b_fn[rows] + (1 - p) * b_tn[rows]
        # the posterior-optimal rule predicts 1 where the expected gain of 1 is the larger
        chosen = gain1.mean(axis=(0, 1)) > gain0.mean(axis=(0, 1)) if pred is None else pred[rows]
        total = total + np.where(chosen, gain1, gain0).sum(axis=-1)
    return _with_interval(over_draws(total / n * scale, "profit"), ci_prob)


def _checked_scores(calibrator: Any, scores: ArrayLike, name: str) -> np.ndarray:
    """The validated scores, once the calibrator is checked to be fitted (with the parameters it
    predicts with) and to take scores alone."""
    check_calibrator(calibrator, scores_only=name)
    calibrator._check_fitted_params()
    return check_scores(scores, score_kind=calibrator.score_kind)


def posterior_blocks(calibrator: Any, s: np.ndarray) -> Iterator[tuple[slice, np.ndarray]]:
    """The map's draws at the scores ``s`` (validated by :func:`_checked_scores`), a block of scores
    at a time (:meth:`~bayescal.base.Calibrator._draw_blocks`): ``(rows, p)``, ``p`` of shape
    (chain, draw, block), as :meth:`~bayescal.base.Calibrator.predict_posterior` gives them."""
    return calibrator._draw_blocks(to_working(s, calibrator.score_kind))


def _benefit(value: Any, name: str, n: int) -> np.ndarray:
    """A benefit as ``n`` finite floats: a number, or an array with one value per score."""
    if isinstance(value, (str, bytes)) or isinstance(value, bool):
        raise ValueError(f"{name}={value!r} must be a number or an array of numbers, one per score.")
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers, one per score.") from None
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != n):
        raise ValueError(
            f"{name} has shape {arr.shape} but there are {n} scores: pass one number, or one value per score."
        )
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} has NaN or infinite values: pass finite benefits.")
    return np.broadcast_to(arr, (n,))


def _pred_as_01(calibrator: Any, y_pred: Any, n: int) -> np.ndarray:
    """A rule given as labels, coded by the calibrator's classes: 1 where it predicts ``classes_[1]``."""
    try:
        pred = check_labels_as(y_pred, calibrator.classes_, name="y_pred")
    except ValueError as err:
        raise ValueError(
            f"{err} Pass labels as calibrator.predict and DecisionRegions.predict return them; 0/1 decisions d "
            "are the labels calibrator.classes_[d]."
        ) from None
    check_consistent_length(scores=np.empty(n), y_pred=pred)
    return pred


def expected_cost(
    calibrator: Calibrator,
    scores: ArrayLike,
    y_pred: ArrayLike | None = None,
    *,
    cost_fp: float = 1.0,
    cost_fn: float = 1.0,
    ci_prob: float | None = None,
) -> xr.Dataset:
    """Expected cost per sample of a rule under the posterior: :func:`expected_profit` with
    benefits ``-cost_fp`` (false positive) and ``-cost_fn`` (false negative), sign flipped.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator (any: a point estimate gives one draw).
    scores : array-like of shape (n,)
        Scores on the calibrator's input scale.
    y_pred : array-like of shape (n,), optional
        The rule's decisions as labels coded by ``calibrator.classes_``, as the calibrator's
        ``predict`` and :meth:`DecisionRegions.predict` return them (0/1 decisions ``d`` are
        the labels ``calibrator.classes_[d]``); the posterior-optimal rule when None.
    cost_fp, cost_fn : float, default 1.0
        Costs of a false positive and of a false negative.
    ci_prob : float, optional
        Probability of the interval; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95) when None.

    Returns
    -------
    xarray.Dataset
        ``cost`` over ``(chain, draw)``, its ``mean``, and the interval ``ci`` over ``ci_bound``.
    """
    cost_cutoff(cost_fp, cost_fn)
    check_calibrator(calibrator, scores_only="expected_cost")
    prof = expected_profit(
        calibrator,
        scores,
        y_pred,
        benefit_tp=0.0,
        benefit_fp=-cost_fp,
        benefit_tn=0.0,
        benefit_fn=-cost_fn,
        ci_prob=ci_prob,
    )
    out = (0.0 - prof).rename({"profit": "cost"})  # 0 - x, not -x: a cost of nothing is 0.0, not -0.0
    out["ci"] = out["ci"].isel(ci_bound=[1, 0]).assign_coords(ci_bound=["lower", "upper"])
    out.attrs = prof.attrs
    return out


def over_draws(values: np.ndarray, name: str) -> xr.DataArray:
    """Values per posterior draw, shape (chain, draw), as a DataArray with ArviZ's ``chain`` and
    ``draw`` coordinates (0, 1, ..., as ``predict_posterior`` gives them)."""
    chains, draws = values.shape
    return xr.DataArray(
        values, dims=("chain", "draw"), coords={"chain": np.arange(chains), "draw": np.arange(draws)}, name=name
    )


def _with_interval(draws: xr.DataArray, ci_prob: float | None) -> xr.Dataset:
    """``draws`` with its posterior ``mean`` and equal-tailed interval ``ci`` (over ``ci_bound``)."""
    ci_prob = check_ci_prob(ci_prob)
    return xr.Dataset(
        {draws.name: draws, "mean": draws.mean(), "ci": eti_of_draws(draws, ci_prob)},
        attrs={"ci_prob": ci_prob, "ci_kind": "eti"},
    )


def eti_of_draws(draws: xr.DataArray, ci_prob: float, dims: tuple[str, ...] = ("chain", "draw")) -> xr.DataArray:
    """Equal-tailed interval of values over ``dims`` (arviz-stats), bounds on ``ci_bound``; a point
    estimate's one value is both bounds."""
    import arviz_stats

    if draws.size > 1:
        return arviz_stats.eti(draws, prob=ci_prob, dim=list(dims))
    value = float(draws.values.ravel()[0])
    return xr.DataArray([value, value], dims="ci_bound", coords={"ci_bound": ["lower", "upper"]})


def draw_summaries(fields: dict[str, np.ndarray], ci_prob: float, **attrs: Any) -> xr.Dataset:
    """Quantities per posterior draw, each as ``name`` (chain, draw), ``name_mean`` and
    ``name_ci`` (its equal-tailed interval over ``ci_bound``); attrs ``ci_prob``, ``ci_kind``
    and ``attrs``."""
    out = xr.Dataset(attrs={"ci_prob": ci_prob, "ci_kind": "eti", **attrs})
    for name, values in fields.items():
        draws = over_draws(values, name)
        out[name] = draws
        out[f"{name}_mean"] = draws.mean()
        out[f"{name}_ci"] = eti_of_draws(draws, ci_prob)
    return out


def roc_from_map(calibrator: Calibrator, scores: ArrayLike, *, n_thresholds: int = 101) -> xr.Dataset:
    r"""The ROC curve implied by a calibration map and the score distribution (C&G 2004, eq. 15).

    With the empirical distribution of ``scores`` standing for the score density,

    .. math:: \mathrm{TPR}(\tau) = \frac{\sum_{s_i > \tau} p(s_i)}{\sum_i p(s_i)}, \qquad
              \mathrm{FPR}(\tau) = \frac{\sum_{s_i > \tau} (1 - p(s_i))}{\sum_i (1 - p(s_i))},

    for each posterior draw of the map :math:`p` — no labels needed. Thresholds are the
    quantiles of ``scores`` (plus the ends), so every curve runs from (1, 1) to (0, 0). A draw
    whose map is 0 at every score (no positives implied) or 1 at every score (no negatives)
    has no ROC curve: its ``tpr``, ``fpr`` and ``auc`` are NaN; when every draw is such, a
    ``ValueError`` says so.

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator (any: a point estimate gives one draw).
    scores : array-like of shape (n,)
        Scores on the calibrator's input scale.
    n_thresholds : int, default 101
        Number of thresholds, 2 to :data:`bayescal.base.MAX_GRID_SIZE` (10^7); thresholds
        beyond the number of distinct scores add no point to the curve.

    Returns
    -------
    xarray.Dataset
        ``tpr``, ``fpr`` over ``(chain, draw, threshold)`` and ``auc`` over ``(chain, draw)``.
    """
    from bayescal.base import MAX_GRID_SIZE

    n_thresholds = check_number(n_thresholds, "n_thresholds", low=2, high=MAX_GRID_SIZE, integer=True)
    s = _checked_scores(calibrator, scores, "roc_from_map")
    s_desc = s[np.argsort(-s, kind="stable")]
    taus = np.unique(
        np.concatenate([[np.nextafter(s.min(), -np.inf)], np.quantile(s, np.linspace(0, 1, n_thresholds)), [s.max()]])
    )
    k = np.searchsorted(-s_desc, -taus, side="left")  # number of scores strictly above tau
    # the sums of p and 1 - p over the k highest scores, per draw, accumulated a block at a time
    cum1 = cum0 = run1 = run0 = None
    for rows, p in posterior_blocks(calibrator, s_desc):
        if cum1 is None:
            cum1, cum0 = np.zeros(p.shape[:2] + k.shape), np.zeros(p.shape[:2] + k.shape)
            run1, run0 = np.zeros(p.shape[:2]), np.zeros(p.shape[:2])
        c1 = run1[..., None] + np.cumsum(p, axis=-1)
        c0 = run0[..., None] + np.cumsum(1 - p, axis=-1)
        here = (k > rows.start) & (k <= rows.start + p.shape[-1])
        cum1[..., here], cum0[..., here] = c1[..., k[here] - rows.start - 1], c0[..., k[here] - rows.start - 1]
        run1, run0 = c1[..., -1], c0[..., -1]
    cum1, cum0 = np.concatenate([cum1, run1[..., None]], axis=-1), np.concatenate([cum0, run0[..., None]], axis=-1)
    # a draw whose map is 0 (1) at every score implies no positives (negatives): no ROC curve
    undefined = (cum1[..., -1] <= 0) | (cum0[..., -1] <= 0)
    if undefined.all():
        which = "0 (no positives)" if np.all(cum1[..., -1] <= 0) else "1 (no negatives)"
        raise ValueError(
            f"The calibration map is {which} at every one of the {s.size} scores, so they imply no ROC curve: "
            "pass scores where the map is between 0 and 1 for some of them."
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        tpr = np.where(undefined[..., None], np.nan, cum1[..., :-1] / cum1[..., -1:])
        fpr = np.where(undefined[..., None], np.nan, cum0[..., :-1] / cum0[..., -1:])
    # trapezoid over increasing fpr (thresholds run upwards, so fpr runs downwards)
    auc = -np.trapezoid(tpr, fpr, axis=-1)
    dims = ("chain", "draw", "threshold")
    return xr.Dataset(
        {"tpr": (dims, tpr), "fpr": (dims, fpr), "auc": over_draws(auc, "auc")}, coords={"threshold": taus}
    )


def bayes_error_posterior(calibrator: Calibrator, scores: ArrayLike, *, ci_prob: float | None = None) -> xr.Dataset:
    r"""Cohen & Goldszmidt's Theorem 1 under the posterior.

    For each draw :math:`d` the calibrated probabilities :math:`p_{di}` at ``scores`` give the
    refinement :math:`R_d = \frac1N\sum_i p_{di}(1-p_{di})`, the expected error of the
    0.5-threshold rule :math:`e_{t,d} = \frac1N \sum_i \min(p_{di}, 1-p_{di})` and the
    bound :math:`e^* \le e_{t,d} \le 2 R_d` (see :func:`bayescal.metrics.bayes_error_bounds`).

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator (any: a point estimate gives one draw).
    scores : array-like of shape (n,)
        Scores on the calibrator's input scale.
    ci_prob : float, optional
        Probability of the interval; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95) when None.

    Returns
    -------
    xarray.Dataset
        ``refinement``, ``expected_error_rate`` and ``upper`` (= 2R) over ``(chain, draw)``,
        with their posterior means and intervals (``*_ci`` over ``ci_bound``).
    """
    s = _checked_scores(calibrator, scores, "bayes_error_posterior")
    refinement = error = np.zeros(())
    for _, p in posterior_blocks(calibrator, s):
        refinement = refinement + (p * (1 - p)).sum(axis=-1)
        error = error + np.minimum(p, 1 - p).sum(axis=-1)
    fields = {"refinement": refinement / s.size, "expected_error_rate": error / s.size}
    fields["upper"] = 2 * fields["refinement"]
    return draw_summaries(fields, check_ci_prob(ci_prob))
