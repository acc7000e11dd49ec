r"""Posterior predictive checks and calibration tests.

What a user asks after fitting a calibrator, answered with distributions rather than point
numbers. Every function takes any calibrator: a point estimate is a posterior with one draw
(see the architecture page of the documentation), a Bayesian one gives one answer per posterior draw.

* :func:`ppc_calibration` -- does the fitted map explain the labels? Labels are replicated
  from each posterior draw of the map at the observed scores and a reliability statistic
  (class-1 ECE, CORP's MCB) of the observed labels is compared with its replicated
  distribution (Gelman, Meng & Stern 1996 discrepancy check).
* :func:`consistency_check` -- was the classifier already calibrated? The same with labels
  drawn from the identity map :math:`y^{rep}_i \sim \mathrm{Bernoulli}(s_i)` at the observed
  scores, which stay fixed: a test given these forecasts, which also gives the consistency band
  of a reliability diagram. Broecker & Smith's (2007) consistency resampling also redraws the
  forecasts (with replacement from the observed ones) before the labels; this check does not.
* :func:`calibration_error_posterior` -- the posterior of the base classifier's *true*
  calibration error (ECE, :math:`\ell_2` error, Brier reliability), computed from the
  posterior maps against the raw scores, with a credible interval and the posterior
  probability that it lies below a tolerance.
* :func:`score_density_check` -- observed class-conditional score histograms against the
  posterior predictive densities (:class:`~bayescal.base.ClassConditional` calibrators,
  e.g. ``"dpm"``).
* :func:`posterior_predictive_tree` -- an ``xarray.DataTree`` with ``posterior_predictive``
  and ``observed_data`` groups, the input of ArviZ's PAV calibration check
  (``arviz_plots.plot_ppc_pava``; see :func:`bayescal.plotting.plot_ppc_pava`).

Dimensions follow ArviZ: ``chain``, ``draw``, ``obs_id``, ``class``, ``bin``, ``ci_bound``.

References
----------
Gelman, A., Meng, X.-L. & Stern, H. (1996). Posterior predictive assessment of model fitness
via realized discrepancies. Statistica Sinica 6, 733-807.
Broecker, J. & Smith, L. A. (2007). Increasing the reliability of reliability diagrams.
Weather and Forecasting 22, 651-661.
Dimitriadis, T., Gneiting, T. & Jordan, A. I. (2021). Stable reliability diagrams for
probabilistic classifiers. PNAS 118(8), e2016191118.
Naeini, M. P., Cooper, G. F. & Hauskrecht, M. (2014). Binary classifier calibration: a
Bayesian non-parametric approach. arXiv:1401.3390.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import xarray as xr
from sklearn.utils.validation import check_is_fitted

from bayescal import metrics
from bayescal._typing import ArrayLike, RandomStateLike
from bayescal._validation import (
    check_bool,
    check_calibrator,
    check_ci_prob,
    check_consistent_length,
    check_integer,
    check_labels_as,
    check_number,
    check_probabilities,
    check_scored_labels,
    check_scores,
    random_generator,
)
from bayescal.base import MAX_GRID_SIZE, ClassConditional
from bayescal.data import from_working, to_working
from bayescal.decision import draw_summaries, eti_of_draws, posterior_blocks

__all__ = [
    "STATISTICS",
    "calibration_error_posterior",
    "consistency_check",
    "posterior_predictive_tree",
    "ppc_calibration",
    "score_density_check",
]

INTEGRATION_NODES = 2048
"""Nodes of :func:`score_density_check`'s integration over all bins at least (equally spaced on
the working scale; every bin has at least ``points_per_bin``)."""
MIN_REPLICATES = 500
"""Fewest replicates of the checks that replicate data from the posterior draws: a posterior with
fewer draws (a point estimate has one) has each draw replicated several times."""
MAX_REPLICATES = 10**6
r"""Most replicates a check may ask for (``min_replicates``, ``n_replicates``). With :math:`R`
replicates the Monte Carlo standard error of a p-value is :math:`\sqrt{p(1-p)/R}`, below 0.0005
at :math:`10^6`; more would only cost memory and time (``consistency_check`` computes its
statistics once a replicate), as :data:`bayescal.base.MAX_PRIOR_DRAWS` bounds the prior draws."""
MAX_WORK_ELEMENTS = 10**8
"""Most elements of an array a check builds from its counts: the replicated labels
(replicates x rows) of :func:`ppc_calibration` and :func:`posterior_predictive_tree`, the
replicated bin counts and the density nodes of :func:`score_density_check` (draws x nodes), the
integration grid of :func:`calibration_error_posterior` (draws x ``grid_size``), the band's
replicated fractions of :func:`consistency_check` (replicates x bins). :math:`10^8` float64 values
are 0.8 GB; the replicated labels take about twice that while they are drawn. The bound is ten
times the :math:`10^7` points of :data:`bayescal.base.MAX_GRID_SIZE` (one array per draw there)
so that the default :data:`MIN_REPLICATES` of a point estimate still holds 200,000 rows."""


def _ece(y: np.ndarray, p: np.ndarray, n_bins: int, strategy: str) -> float:
    return metrics.ece(y, p, n_bins=n_bins, strategy=strategy)


def _mcb(y: np.ndarray, p: np.ndarray, n_bins: int, strategy: str) -> float:
    return metrics.corp_decomposition(y, p).mcb


STATISTICS: dict[str, Callable[[np.ndarray, np.ndarray, int, str], float]] = {"ece": _ece, "mcb": _mcb}
"""Reliability statistics ``T(y, p)``: class-1 ECE (:func:`bayescal.metrics.ece`, binned with
``n_bins`` / ``strategy``) and CORP's miscalibration MCB of the Brier score
(:func:`bayescal.metrics.corp_decomposition`, no bins)."""


# ----------------------------------------------------------------------------- helpers


def _check_statistics(statistics: Any) -> list[str]:
    if isinstance(statistics, str):
        names = [statistics]
    else:
        try:
            names = list(statistics)
        except TypeError:
            names = []
    unknown = [s for s in names if not isinstance(s, str) or s not in STATISTICS]
    if not names or unknown:
        raise ValueError(f"statistics={statistics!r}: use one or more of {sorted(STATISTICS)}.")
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(
            f"statistics={statistics!r} names {', '.join(map(repr, repeated))} more than once: name each statistic once."
        )
    return names


def _replicates_per_draw(n_draws: int, min_replicates: int) -> int:
    """Smallest ``r`` with ``r * n_draws >= min_replicates`` (at least 1)."""
    return max(1, -(-min_replicates // n_draws))


def _checked_replicates(n_posterior: int, min_replicates: int, per_replicate: int, what: str) -> int:
    """:func:`_replicates_per_draw`, once the replicated values (``per_replicate`` each, ``what``
    names them: "labels (... rows)") are known to fit in :data:`MAX_WORK_ELEMENTS`."""
    reps = _replicates_per_draw(n_posterior, min_replicates)
    if reps > 1:  # with reps == 1 the replicates are the posterior's own draws
        per = max(per_replicate, 1)
        _check_work(
            reps * n_posterior * per_replicate,
            f"min_replicates={min_replicates}",
            f"replicated {what.format(n=reps * n_posterior)}",
            f"pass min_replicates={max(n_posterior, MAX_WORK_ELEMENTS // per // n_posterior * n_posterior)} or less",
        )
    return reps


def _monte_carlo_p(hits: Any, total: int, one_draw: bool) -> Any:
    r"""Share of ``total`` replicates at least as extreme as the data (``hits`` of them): the
    posterior predictive p-value over several posterior draws; over one draw (a point estimate,
    so a parametric bootstrap of one fixed model) the Monte Carlo p-value :math:`(1 + \#)/(1 + R)`,
    never 0."""
    return (1 + hits) / (1 + total) if one_draw else hits / total


def _replicate(p: np.ndarray, min_replicates: int) -> tuple[np.ndarray, int]:
    """Repeat the draws of ``p`` (chain, draw, ...) along ``draw`` until there are at least
    ``min_replicates`` in all; returns the array and the repetition factor."""
    reps = _replicates_per_draw(p.shape[0] * p.shape[1], min_replicates)
    return (np.repeat(p, reps, axis=1) if reps > 1 else p), reps


def _check_replicates(value: Any, name: str, default: int = MIN_REPLICATES, minimum: int = 1) -> int:
    """A number of replicates: an integer from ``minimum`` to :data:`MAX_REPLICATES`, or a
    ValueError naming it (and suggesting the argument's ``default``)."""
    value = check_integer(value, name, minimum)
    if value > MAX_REPLICATES:
        raise ValueError(
            f"{name}={value} is more than {MAX_REPLICATES} replicates: pass a smaller number, e.g. the default "
            f"{default} (at {MAX_REPLICATES} the Monte Carlo error of a p-value is already below 0.0005)."
        )
    return value


def _check_work(elements: int, lead: str, what: str, fix: str) -> None:
    """Refuse the counts ``lead`` (e.g. ``"min_replicates=10**6"``) when their array, ``elements``
    values of ``what``, would hold more than :data:`MAX_WORK_ELEMENTS`; ``fix`` says what fits."""
    if elements > MAX_WORK_ELEMENTS:
        raise ValueError(
            f"{lead} would need {elements:.3g} {what}, more than MAX_WORK_ELEMENTS ({MAX_WORK_ELEMENTS:,}): {fix}."
        )


def _replicated_posterior(calibrator: Any, s: np.ndarray, min_replicates: int) -> tuple[np.ndarray, int]:
    """The posterior probabilities at ``s`` (chain, draw, obs), each draw repeated to at least
    ``min_replicates`` replicates (:func:`_replicate`), once the replicated array is known to fit in
    :data:`MAX_WORK_ELEMENTS`."""
    p = calibrator.predict_posterior(s).values
    _checked_replicates(p.shape[0] * p.shape[1], min_replicates, s.size, f"labels ({{n}} replicates x {s.size} rows)")
    return _replicate(p, min_replicates)


def _check_binning(n_bins: Any, strategy: Any) -> tuple[int, str]:
    """``n_bins`` and ``strategy`` of the ECE (:func:`bayescal.metrics.ece`), checked up front
    (a statistic without bins, such as MCB, would not check them)."""
    return metrics._check_positive_int(n_bins, "n_bins"), metrics._check_choice(
        strategy, "strategy", metrics.STRATEGIES
    )


def _labels_and_scores(calibrator: Any, scores: Any, y: Any, caller: str) -> tuple[np.ndarray, np.ndarray]:
    """Scores on the calibrator's scale and labels coded by its classes (as in its fit); ``caller``
    names the function for the message refusing a feature-aware calibrator."""
    check_is_fitted(check_calibrator(calibrator, scores_only=caller))
    y01 = check_labels_as(y, calibrator.classes_)
    s = check_scores(scores, score_kind=calibrator.score_kind)
    check_consistent_length(scores=s, y=y01)
    return s, y01.astype(np.int8)


def _pp_value(replicated: xr.DataArray, observed: xr.DataArray, n_posterior: int) -> xr.DataArray:
    """Share of the replicates with :math:`T(y^{rep}) \\ge T(y)` over chain and draw: the posterior
    predictive p-value of a posterior of several draws; with one draw (``n_posterior == 1``, a point
    estimate) the replicates are a parametric bootstrap of one fixed model and the share is the Monte
    Carlo p-value :math:`(1 + \\#)/(1 + R)` of :func:`consistency_check`, never 0."""
    hits = replicated >= observed
    total = hits.sizes["chain"] * hits.sizes["draw"]
    return _monte_carlo_p(hits.sum(("chain", "draw")), total, n_posterior == 1).rename("p_value")


# ----------------------------------------------------------------------------- PPC


def ppc_calibration(
    calibrator: Any,
    scores: ArrayLike,
    y: ArrayLike,
    *,
    statistics: str | Sequence[str] = ("ece", "mcb"),
    n_bins: int = 10,
    strategy: str = "quantile",
    min_replicates: int = MIN_REPLICATES,
    random_state: RandomStateLike = None,
    random_seed: RandomStateLike = None,
) -> xr.Dataset:
    r"""Posterior predictive check of the calibration map's fit to the labels.

    For posterior draw :math:`d` of the map, :math:`p_{di} = P_d(y = 1 \mid s_i)` at the
    observed scores, replicate :math:`y^{rep}_{di} \sim \mathrm{Bernoulli}(p_{di})` and compare
    the realised discrepancy :math:`T(y, p_d)` with :math:`T(y^{rep}_d, p_d)`, with :math:`T` a
    reliability statistic of :data:`STATISTICS`. The posterior predictive p-value

    .. math:: p_B = P\big(T(y^{rep}, p) \ge T(y, p) \mid y\big)

    is near 0 when the observed labels are less reliable under the map than the map's own
    replicates, i.e. the map misfits; it is the share of the :math:`R` replicates (chain and
    draw of the output) with :math:`T(y^{rep}, p) \ge T(y, p)`. A point estimate (one draw) gives
    a parametric consistency check of its own map, a parametric bootstrap, whose p-value is the
    Monte Carlo

    .. math:: p = \frac{1 + \#\{r : T(y^{rep}_r, p) \ge T(y, p)\}}{1 + R}

    of :func:`consistency_check` (never 0: at least :math:`1/(1 + R)`).

    Parameters
    ----------
    calibrator : fitted Calibrator
    scores, y : array-like of shape (n,)
        Evaluation scores (input scale of the calibrator) and binary labels.
    statistics : str or sequence of str, default ("ece", "mcb")
    n_bins : int, default 10
        Number of bins of the ECE (:func:`bayescal.metrics.ece`).
    strategy : {"quantile", "uniform", "papers"}, default "quantile"
        Binning of the ECE (:data:`bayescal.metrics.STRATEGIES`).
    min_replicates : int, default 500
        When the posterior has fewer draws, each draw is replicated several times (output
        draw ``k`` uses posterior draw ``k // r``, ``r`` in attr ``replicates_per_draw``). At
        most :data:`MAX_REPLICATES`, and the replicated labels (replicates x rows) at most
        :data:`MAX_WORK_ELEMENTS`.
    random_state : None, int or numpy.random.Generator, default None
        Randomness of the replicated labels (scikit-learn's convention).
    random_seed : deprecated
        Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release.

    Returns
    -------
    xarray.Dataset
        ``observed`` and ``replicated`` over ``(statistic, chain, draw)``; ``p_value`` over
        ``statistic``.
    """
    names = _check_statistics(statistics)
    n_bins, strategy = _check_binning(n_bins, strategy)
    min_replicates = _check_replicates(min_replicates, "min_replicates")
    s, y01 = _labels_and_scores(calibrator, scores, y, "ppc_calibration")
    p, reps = _replicated_posterior(calibrator, s, min_replicates)
    rng = random_generator(random_state, random_seed, "ppc_calibration")
    y_rep = (rng.random(p.shape) < p).astype(np.int8)
    obs = np.empty((len(names),) + p.shape[:2])
    rep = np.empty_like(obs)
    for k, name in enumerate(names):
        stat = STATISTICS[name]
        for c in range(p.shape[0]):
            for d in range(p.shape[1]):
                # the realised discrepancy only changes with the posterior draw
                if d % reps == 0:
                    value = stat(y01, p[c, d], n_bins, strategy)
                obs[k, c, d] = value
                rep[k, c, d] = stat(y_rep[c, d], p[c, d], n_bins, strategy)
    dims = ("statistic", "chain", "draw")
    coords = {"statistic": names, "chain": np.arange(p.shape[0]), "draw": np.arange(p.shape[1])}
    ds = xr.Dataset(
        {"observed": (dims, obs), "replicated": (dims, rep)},
        coords=coords,
        attrs={
            "n_bins": n_bins,
            "strategy": strategy,
            "replicates_per_draw": reps,
            "check": "posterior predictive (labels replicated from the calibration map)",
        },
    )
    ds["p_value"] = _pp_value(ds["replicated"], ds["observed"], p.shape[0] * p.shape[1] // reps)
    return ds


def consistency_check(
    scores: ArrayLike,
    y: ArrayLike,
    *,
    statistics: str | Sequence[str] = ("ece", "mcb"),
    n_bins: int = 10,
    strategy: str = "quantile",
    n_replicates: int = 1000,
    band: bool = True,
    ci_prob: float | None = None,
    random_state: RandomStateLike = None,
    random_seed: RandomStateLike = None,
    pos_label: Any = None,
) -> xr.Dataset:
    r"""Was the classifier already calibrated? A test of its probabilities, given these probabilities.

    Under the hypothesis that the probability scores :math:`s_i` are calibrated, the labels
    are :math:`y_i \sim \mathrm{Bernoulli}(s_i)` given the scores. Replicating labels from this
    identity map at the observed scores, which are held fixed (only the labels are redrawn),
    gives the distribution of a reliability statistic :math:`T(y^{rep}, s)` (class-1 ECE or
    CORP's MCB of :data:`STATISTICS`) that a calibrated classifier would show on these very
    scores; the p-value is the Monte Carlo

    .. math:: p = \frac{1 + \#\{r : T(y^{rep}_r, s) \ge T(y, s)\}}{1 + R},

    uniform under the hypothesis given the scores (up to ties). The same replicates give the
    *consistency band* of the reliability diagram: per bin of the observed curve, the interval of
    the replicated fraction of positives, i.e. where the binned frequency of these forecasts
    would fall if they were calibrated.

    This is the consistency resampling of Broecker & Smith (2007) conditioned on the forecasts.
    Broecker & Smith also redraw the forecasts, with replacement from the observed ones, before
    drawing each replicate's labels from them, so their band carries the sampling of the forecasts
    too and is wider where a bin holds few forecasts; the test and band here are for the forecasts
    observed. The posterior probability that the classifier's true calibration error is below a
    tolerance needs a calibrator's posterior: see :func:`calibration_error_posterior`
    (``tolerance=``).

    Parameters
    ----------
    scores : array-like of shape (n,)
        The classifier's probabilities of class 1, in [0, 1].
    y : array-like of shape (n,)
    statistics, n_bins, strategy
        As in :func:`ppc_calibration`; the bins of the band are those of
        :func:`bayescal.metrics.reliability_curve`.
    n_replicates : int, default 1000
        Number :math:`R` of replicated label sets, at most :data:`MAX_REPLICATES`.
    band : bool, default True
        Compute the consistency band, from one :func:`bayescal.metrics.reliability_curve` of
        each replicate's labels (``band=False`` skips them).
    ci_prob : float, optional
        Probability of the consistency band; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95) when None.
    random_state : None, int or numpy.random.Generator, default None
        Randomness of the replicated labels (scikit-learn's convention).
    random_seed : deprecated
        Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release.
    pos_label : optional
        The value of ``y`` that is the positive class, whose probabilities ``scores`` are;
        needed for text labels (:func:`bayescal.metrics.ece`).

    Returns
    -------
    xarray.Dataset
        ``observed`` (statistic), ``replicated`` (statistic, chain, draw) with one chain of
        ``n_replicates`` draws, ``p_value`` (statistic); over ``bin``: the observed
        ``mean_predicted``, ``fraction_positive``, ``count``, and (``band=True``) ``band``
        (bin, ci_bound), the interval of the replicated fraction of positives.
    """
    names = _check_statistics(statistics)
    n_bins, strategy = _check_binning(n_bins, strategy)
    n_replicates = _check_replicates(n_replicates, "n_replicates", 1000)
    band = check_bool(band, "band")
    ci_prob = check_ci_prob(ci_prob)
    s = check_probabilities(scores, name="scores")
    y01 = check_scored_labels(y, pos_label=pos_label, name="y")
    check_consistent_length(scores=s, y=y01)
    rng = random_generator(random_state, random_seed, "consistency_check")
    curve = metrics.reliability_curve(y01, s, n_bins=n_bins, strategy=strategy)
    if band:
        _check_work(
            n_replicates * curve.sizes["bin"],
            f"n_replicates={n_replicates}",
            f"replicated fractions of the band ({n_replicates} replicates x {curve.sizes['bin']} bins)",
            f"pass n_replicates={MAX_WORK_ELEMENTS // curve.sizes['bin']} or less, or band=False",
        )
    obs = np.array([STATISTICS[name](y01, s, n_bins, strategy) for name in names])
    rep = np.empty((len(names), 1, n_replicates))
    frac = np.full((1, n_replicates, curve.sizes["bin"]), np.nan) if band else None
    for r in range(n_replicates):
        y_rep = (rng.random(s.shape) < s).astype(np.int8)
        for k, name in enumerate(names):
            rep[k, 0, r] = STATISTICS[name](y_rep, s, n_bins, strategy)
        if band:
            rc = metrics.reliability_curve(y_rep, s, n_bins=n_bins, strategy=strategy)
            frac[0, r] = rc["fraction_positive"].reindex(bin=curve["bin"]).values  # type: ignore[index]
    coords = {"statistic": names, "chain": [0], "draw": np.arange(n_replicates)}
    ds = xr.Dataset(
        {"observed": ("statistic", obs), "replicated": (("statistic", "chain", "draw"), rep)},
        coords=coords,
        attrs={
            "n_bins": n_bins,
            "strategy": strategy,
            "ci_prob": ci_prob,
            "ci_kind": "eti",
            "check": "consistency resampling (labels replicated from the identity map)",
        },
    )
    ds["p_value"] = _monte_carlo_p((ds["replicated"] >= ds["observed"]).sum(("chain", "draw")), n_replicates, True)
    ds = ds.merge(curve[["mean_predicted", "fraction_positive", "count"]])
    if band:
        replicated_fraction = xr.DataArray(frac, dims=("chain", "draw", "bin"), coords={"bin": curve["bin"].values})
        ds["band"] = eti_of_draws(replicated_fraction, ci_prob).transpose("bin", "ci_bound")
    return ds


# ----------------------------------------------------------------------------- true calibration error


def _atom_masses(calibrator: ClassConditional) -> tuple[np.ndarray, np.ndarray] | None:
    """Atom values and their masses ``(chain, draw, class, atom)`` of a class-conditional
    calibrator (:meth:`~bayescal.base.ClassConditional.score_atoms`); None when it has none."""
    atoms = calibrator.score_atoms()
    if atoms.sizes["atom"] == 0:
        return None
    return np.asarray(atoms["atom"].values, dtype=np.float64), atoms.values


def _integration_nodes(edges: np.ndarray, score_kind: str, per_interval: int, total: int) -> tuple:
    r"""Nodes and weights integrating a density of the input-scale score over each interval
    between consecutive ``edges``, by the trapezoid rule on the working scale :math:`t`.

    :math:`\int_a^b f(s)\,ds = \int_{t(a)}^{t(b)} f(s(t))\, s'(t)\,dt`, with
    :math:`s'(t) = s(1-s)` for probabilities (:math:`t = \mathrm{logit}\,s`) and 1 for decision
    values. On the input scale a density of probabilities grows like :math:`1/(s(1-s))` towards
    0 and 1, where scores pile up, which a trapezoid rule on an input-scale grid cannot
    follow; on the working scale it is smooth. Each interval gets ``per_interval`` equally
    spaced nodes, more where it is wider than the spacing of ``total`` nodes over all of them.

    Returns
    -------
    nodes : ndarray of shape (m,)
        Input-scale points.
    weights : ndarray of shape (m,)
        Their weights (:math:`ds`).
    starts : ndarray of shape (len(edges) - 1,)
        Index of each interval's first node (for ``np.add.reduceat``).
    """
    t_edges = to_working(np.asarray(edges, dtype=np.float64), score_kind)
    widths = np.diff(t_edges)
    step = (t_edges[-1] - t_edges[0]) / max(total - 1, 1)
    counts = (
        np.maximum(per_interval, np.ceil(widths / step).astype(np.int64) + 1)
        if step > 0
        else np.full(widths.size, per_interval)
    )
    t = np.concatenate([np.linspace(a, b, n) for a, b, n in zip(t_edges[:-1], t_edges[1:], counts, strict=True)])
    trap = np.concatenate(
        [np.full(n, w / (n - 1)) * np.r_[0.5, np.ones(n - 2), 0.5] for w, n in zip(widths, counts, strict=True)]
    )
    nodes = from_working(t, score_kind)
    jacobian = nodes * (1.0 - nodes) if score_kind == "probability" else 1.0
    return nodes, trap * jacobian, np.r_[0, np.cumsum(counts)[:-1]]


def _check_edges(bins: Any, score_kind: str) -> np.ndarray:
    """``bins`` given as edges: finite, strictly increasing, and for probability scores in [0, 1]."""
    edges = check_scores(bins, score_kind="decision", name="bins")
    if score_kind == "probability" and (edges.min() < 0.0 or edges.max() > 1.0):
        raise ValueError(
            f"bins has edges outside [0, 1] (min {edges.min():.4g}, max {edges.max():.4g}): bins are edges on "
            "the calibrator's input scale, here probabilities in [0, 1]; pass e.g. bins=np.linspace(0, 1, 11), "
            "or a number of bins."
        )
    if edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("bins as edges must be at least two strictly increasing values.")
    return edges


def _bin_index(t: np.ndarray, t_edges: np.ndarray) -> np.ndarray:
    """Bin of each value between consecutive ``t_edges``: ``[e_b, e_{b+1})``, the last bin closed
    (as :func:`numpy.histogram`); -1 outside the edges."""
    n_bins = t_edges.size - 1
    which = np.searchsorted(t_edges, t, side="right") - 1
    which[t == t_edges[-1]] = n_bins - 1
    which[(which < 0) | (which >= n_bins)] = -1
    return which


def _model_score_distribution(calibrator: Any, grid_size: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Posterior score distribution :math:`\pi f_1 + (1-\pi) f_0` as support points and
    per-draw weights ``(chain, draw, m)`` (trapezoid weights on a grid of ``grid_size`` points,
    equally spaced on the working scale, plus the atoms)."""
    g, trap, _ = _integration_nodes(calibrator.score_range_, calibrator.score_kind, grid_size, grid_size)
    dens = calibrator.density_map(g)  # (chain, draw, class, score)
    pi = calibrator.class_prior_draws().values
    mix = pi[..., None] * dens.sel({"class": 1}).values + (1 - pi[..., None]) * dens.sel({"class": 0}).values
    weights = mix * trap
    atoms = _atom_masses(calibrator)
    if atoms is not None:
        values, masses = atoms
        g = np.concatenate([g, values])
        atom_w = pi[..., None] * masses[:, :, 1] + (1 - pi[..., None]) * masses[:, :, 0]
        weights = np.concatenate([weights, atom_w], axis=-1)
    return g, weights / weights.sum(axis=-1, keepdims=True)


def calibration_error_posterior(
    calibrator: Any,
    scores: ArrayLike | None = None,
    *,
    tolerance: float | None = None,
    score_distribution: str | None = None,
    ci_prob: float | None = None,
    grid_size: int = 1001,
) -> xr.Dataset:
    r"""Posterior of the base classifier's true calibration error, in place of a bootstrap.

    The classifier's probability score :math:`s` has true calibration map
    :math:`q(s) = P(y=1 \mid s)`; each posterior draw :math:`q_d` of the fitted calibration
    map gives one value of the population errors

    .. math::

        \mathrm{ECE}_d = E_s\,|q_d(s) - s|, \qquad
        \mathrm{CE}_{\ell_2,d} = \big(E_s\,(q_d(s) - s)^2\big)^{1/2}, \qquad
        \mathrm{REL}_d = E_s\,(q_d(s) - s)^2,

    (REL is the reliability term of Murphy's Brier decomposition with the true conditional
    event probability; no binning, so these are the quantities the binned estimators of
    :mod:`bayescal.metrics` estimate). The expectation over scores uses

    * ``score_distribution="empirical"``: the given ``scores``,
      :math:`E_s\,g(s) = \frac{1}{n}\sum_i g(s_i)` (the error on those scores);
    * ``score_distribution="model"``: the calibrator's own score distribution
      :math:`\pi_d f_{1d} + (1 - \pi_d) f_{0d}` per draw (``density_map`` plus ``score_atoms``
      and ``class_prior_draws`` of a :class:`~bayescal.base.ClassConditional` calibrator, e.g.
      the DPM or the KDE): its model of the population of scores (the class densities it was
      fitted to, mixed at its class prior), so the interval also carries the uncertainty about
      the score distribution.

    ``None`` (default) follows the arguments: ``"empirical"`` when ``scores`` are given, and
    ``"model"`` when they are not (which needs a class-conditional calibrator). ``"empirical"``
    treats the scores as fixed: its interval is one for the error on those scores, and leaves
    out the sampling of the scores when read as one for the population error. How often each
    interval holds the population error on simulated truths: ``docs/user_guide/choosing.md``.

    Parameters
    ----------
    calibrator : fitted Calibrator with ``score_kind="probability"``
    scores : array-like of shape (n,), optional
        The classifier's probabilities of class 1, in [0, 1]: the scores the error is averaged
        over (``"empirical"``). Omit them for ``"model"``; with ``"model"`` given explicitly,
        scores passed are checked but not used.
    tolerance : float, optional
        A user's tolerance :math:`\epsilon` on the probability scale: adds
        ``prob_below_tolerance``, the posterior probabilities
        :math:`P(\mathrm{ECE} < \epsilon)`, :math:`P(\mathrm{CE}_{\ell_2} < \epsilon)` and
        :math:`P(\mathrm{REL} < \epsilon^2)` (REL is in squared probability units, so it is
        compared with :math:`\epsilon^2`: the same statement as the :math:`\ell_2` error's).
    score_distribution : {"empirical", "model"} or None
        See above; None takes ``"empirical"`` when ``scores`` are given and ``"model"``
        otherwise.
    ci_prob : float, optional
        Probability of the equal-tailed intervals; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95)
        when None.
    grid_size : int, default 1001
        Integration grid of ``"model"``: points equally spaced on the logit scale over the
        fitted scores' range (on the probability scale a density piled near 0 or 1 is too
        steep for a grid to follow). From 3 to :data:`bayescal.base.MAX_GRID_SIZE`, and at most
        :data:`MAX_WORK_ELEMENTS` points over all posterior draws.

    Returns
    -------
    xarray.Dataset
        ``ece``, ``l2`` and ``reliability`` over ``(chain, draw)``; ``<name>_mean`` and
        ``<name>_ci`` (ci_bound); ``prob_below_tolerance`` over ``measure`` when ``tolerance``
        is given; attr ``score_distribution``.
    """
    check_calibrator(calibrator, scores_only="calibration_error_posterior")._check_fitted_params()
    grid_size = check_integer(grid_size, "grid_size", 3)
    if grid_size > MAX_GRID_SIZE:
        raise ValueError(
            f"grid_size={grid_size} is more than {MAX_GRID_SIZE} points (MAX_GRID_SIZE): pass a smaller "
            "number, e.g. the default 1001 (the grid is equally spaced on the logit scale, where the "
            "densities are smooth)."
        )
    if calibrator.score_kind != "probability":
        raise ValueError(
            "calibration_error_posterior compares the map with the scores themselves, so it needs "
            "probability scores: use a calibrator with score_kind='probability'."
        )
    class_conditional = isinstance(calibrator, ClassConditional)
    if score_distribution is None:
        if scores is None and not class_conditional:
            raise ValueError(
                f"calibration_error_posterior needs the scores to average the error over: pass scores= "
                f"(the classifier's probabilities). {type(calibrator).__name__} does not model the score "
                "distribution, so without scores there is nothing to average over."
            )
        score_distribution = "empirical" if scores is not None else "model"
    if score_distribution not in ("empirical", "model"):
        raise ValueError(f"score_distribution={score_distribution!r} must be 'empirical' or 'model'.")
    ci_prob = check_ci_prob(ci_prob)
    s = None if scores is None else check_probabilities(scores, name="scores")
    if score_distribution == "empirical":
        if s is None:
            raise ValueError("score_distribution='empirical' needs the classifier's scores: pass scores=.")
        # sums over the scores per draw, a block of scores at a time (draws x scores can exceed memory)
        absolute = squared = np.zeros(())
        for rows, q in posterior_blocks(calibrator, s):
            gap = q - s[rows]
            absolute, squared = absolute + np.abs(gap).sum(axis=-1), squared + (gap**2).sum(axis=-1)
        ece, sq = absolute / s.size, squared / s.size
    else:
        if not class_conditional:
            raise ValueError(
                f"score_distribution='model' needs a class-conditional calibrator, one with "
                f"density_map (e.g. 'dpm'); "
                f"{type(calibrator).__name__} has none: use score_distribution='empirical'."
            )
        n_posterior = int(calibrator.class_prior_draws().size)
        _check_work(
            n_posterior * grid_size,
            f"grid_size={grid_size}",
            f"grid points over the posterior draws ({n_posterior} draws x {grid_size} points)",
            f"pass grid_size={max(3, MAX_WORK_ELEMENTS // n_posterior)} or less",
        )
        s, weights = _model_score_distribution(calibrator, grid_size)
        gap = calibrator.calibration_map(s).values - s
        ece, sq = np.sum(weights * np.abs(gap), axis=-1), np.sum(weights * gap**2, axis=-1)
    fields = {"ece": ece, "l2": np.sqrt(sq), "reliability": sq}
    out = draw_summaries(fields, ci_prob, score_distribution=score_distribution)
    if tolerance is not None:
        if np.ndim(tolerance) != 0:
            raise ValueError(f"tolerance={tolerance!r} must be one positive number, e.g. 0.02.")
        tolerance = check_number(tolerance, "tolerance", low=0.0, inclusive=False)
        # ECE and l2 error are probabilities; REL is their square's scale
        bound = {"ece": tolerance, "l2": tolerance, "reliability": tolerance**2}
        out["prob_below_tolerance"] = xr.DataArray(
            [float((out[m] < bound[m]).mean()) for m in fields], dims="measure", coords={"measure": list(fields)}
        )
        out.attrs["tolerance"] = tolerance
    return out


# ----------------------------------------------------------------------------- score densities


def score_density_check(
    calibrator: Any,
    scores: ArrayLike,
    y: ArrayLike,
    *,
    bins: ArrayLike = 20,
    ci_prob: float | None = None,
    points_per_bin: int = 16,
    min_replicates: int = MIN_REPLICATES,
    random_state: RandomStateLike = None,
    random_seed: RandomStateLike = None,
) -> xr.Dataset:
    r"""Observed class-conditional score histograms against the posterior predictive densities.

    For class :math:`c` with :math:`n_c` scores and bin :math:`b`, posterior draw :math:`d`
    gives the bin probability :math:`P_{dcb} = \int_b f_{dc}(s)\,ds` (plus the masses of atoms
    inside the bin), from :meth:`density_map` by the trapezoid rule on the working scale (the
    logit of probabilities, where a density piled near 0 or 1 is smooth), on at least
    ``points_per_bin`` points a bin and :data:`INTEGRATION_NODES` in all. A replicated data set
    has :math:`n_c` scores of class :math:`c`, so its counts are one multinomial draw per
    replicate, with a cell for the scores outside the bins:

    .. math:: (n^{rep}_{dc1}, \ldots, n^{rep}_{dcB}, n^{rep}_{dc,\mathrm{out}}) \sim
        \mathrm{Multinomial}\big(n_c;\; P_{dc1}, \ldots, P_{dcB},\; 1 - \textstyle\sum_b P_{dcb}\big)

    (the cells scaled to sum to 1 where the quadrature's masses exceed 1): the replicated bin
    counts sum to at most :math:`n_c` and are negatively correlated, as the observed ones are. The
    discrepancy :math:`X^2_{dc} = \sum_b (n_{cb} - n_c P_{dcb})^2 / (n_c P_{dcb})` of the observed
    counts is compared with that of the replicated counts: posterior predictive p-value per class,
    the share of replicates with :math:`X^{2,rep} \ge X^2`; with one posterior draw (a point
    estimate) the Monte Carlo :math:`(1 + \#)/(1 + R)` over its :math:`R` replicates, as in
    :func:`ppc_calibration`.

    Scores and atoms are placed in the bins ``[e_b, e_{b+1})`` (the last one closed) on the
    working scale, the scale the calibrator models: probabilities within
    :data:`bayescal.data.PROB_EPS` of 0 or 1 are one value there, as they are to the model, so
    an atom at 0 or 1 falls in the end bin with the scores it stands for.

    Parameters
    ----------
    calibrator : fitted :class:`~bayescal.base.ClassConditional` calibrator (e.g. ``"dpm"``, ``"kde"``)
    scores, y : array-like of shape (n,)
    bins : int or array-like, default 20
        Number of equal-width bins over the observed score range (input scale), or the edges
        on the calibrator's input scale (probabilities in [0, 1] for ``score_kind="probability"``,
        e.g. ``np.linspace(0, 1, 11)``).
    ci_prob : float, optional
        Probability of the bands; :data:`bayescal.base.DEFAULT_CI_PROB` (0.95) when None.
    points_per_bin : int, default 16
        Fewest integration nodes a bin; the density values at the nodes (draws x classes x
        bins x ``points_per_bin``) at most :data:`MAX_WORK_ELEMENTS`.
    min_replicates : int, default 500
        Each posterior draw's counts are replicated ``r`` times (dimension ``replicate``, ``r``
        also in attr ``replicates_per_draw``), the fewest with at least this many replicates in
        all, so that the p-value of a posterior with few draws (a point estimate such as
        ``"kde"`` has one) is a proportion of many replicates rather than 0 or 1. At most
        :data:`MAX_REPLICATES`, and the replicated counts at most :data:`MAX_WORK_ELEMENTS`.
    random_state : None, int or numpy.random.Generator, default None
        Randomness of the replicated counts (scikit-learn's convention).
    random_seed : deprecated
        Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release.

    Returns
    -------
    xarray.Dataset
        Over ``(class, bin)``: ``observed_count``, ``observed_density`` (count / (n_c width));
        ``density`` (chain, draw, class, bin): bin-averaged density of each posterior draw;
        ``density_band`` (class, bin, ci_bound; with more than one posterior draw);
        ``replicated_count`` (chain, draw, replicate, class, bin) and its ``count_band``;
        ``p_value`` over ``class``; coordinates ``bin_lower``, ``bin_upper``.
    """
    if not isinstance(check_calibrator(calibrator), ClassConditional):
        raise ValueError(
            f"{type(calibrator).__name__} has no density_map: the score-density check needs a "
            "calibrator that models the class score densities, e.g. 'dpm'."
        )
    kind = calibrator.score_kind
    s, y01 = _labels_and_scores(calibrator, scores, y, "score_density_check")
    ci_prob = check_ci_prob(ci_prob)
    points_per_bin = check_integer(points_per_bin, "points_per_bin", 2)
    min_replicates = _check_replicates(min_replicates, "min_replicates")
    n_posterior = int(calibrator.class_prior_draws().size)
    if np.ndim(bins) == 0:
        n_bins = check_integer(bins, "bins")
    else:
        edges = _check_edges(bins, kind)
        n_bins = edges.size - 1
    _check_work(
        2 * n_posterior * n_bins * points_per_bin,
        (f"bins={n_bins}" if np.ndim(bins) == 0 else f"bins ({n_bins} bins)")
        + f" with points_per_bin={points_per_bin}",
        f"density values at the integration nodes ({n_posterior} draws x 2 classes x nodes)",
        f"pass fewer bins or a smaller points_per_bin, their product at most {MAX_WORK_ELEMENTS // (2 * n_posterior)}",
    )
    if np.ndim(bins) == 0:
        if not s.max() > s.min():
            raise ValueError(
                f"Every score equals {s.min():.6g}, so bins={n_bins} equal-width bins over their range would "
                "have no width: pass bins as edges around the scores, e.g. bins=[0.0, 0.5, 1.0]."
            )
        edges = np.linspace(s.min(), s.max(), n_bins + 1)
    width = np.diff(edges)
    # integration nodes inside each bin, trapezoid weights on the working scale
    nodes, weights, starts = _integration_nodes(edges, kind, points_per_bin, INTEGRATION_NODES)
    dens = calibrator.density_map(nodes).values  # (chain, draw, class, node)
    mass = np.add.reduceat(dens * weights, starts, axis=-1)  # (chain, draw, class, bin)
    # rows and atoms are placed in the bins on the working scale, as the model sees them
    t_edges = to_working(edges, kind)
    atoms = _atom_masses(calibrator)
    if atoms is not None:
        values, masses = atoms
        which = _bin_index(to_working(values, kind), t_edges)
        for a, b in enumerate(which):
            if b >= 0:
                mass[..., b] += masses[..., a]
    row_bin = _bin_index(to_working(s, kind), t_edges)
    counted = row_bin >= 0
    obs = np.stack([np.bincount(row_bin[counted & (y01 == c)], minlength=n_bins) for c in (0, 1)])
    obs = obs.astype(np.float64)
    n_c = np.array([np.sum(y01 == 0), np.sum(y01 == 1)], dtype=np.float64)
    rng = random_generator(random_state, random_seed, "score_density_check")
    n_chain, n_draw = mass.shape[:2]
    reps = _checked_replicates(
        n_chain * n_draw,
        min_replicates,
        2 * (n_bins + 1),
        f"counts ({{n}} replicates x 2 classes x {n_bins + 1} cells)",
    )
    prob = np.clip(mass, 0.0, 1.0)[:, :, None]  # (chain, draw, replicate, class, bin)
    # one multinomial draw of each class's n_c scores per replicate: the bins and the rest
    cells = np.concatenate([prob, np.clip(1.0 - prob.sum(axis=-1, keepdims=True), 0.0, None)], axis=-1)
    cells = np.broadcast_to(cells / cells.sum(axis=-1, keepdims=True), (n_chain, n_draw, reps, 2, n_bins + 1))
    n_rep = np.broadcast_to(n_c.astype(np.int64), (n_chain, n_draw, reps, 2))
    rep = rng.multinomial(n_rep, cells)[..., :-1].astype(np.float64)
    expected = np.maximum(n_c[:, None] * prob, 1e-12)
    x2_obs = np.sum((obs - expected) ** 2 / expected, axis=-1)
    x2_rep = np.sum((rep - expected) ** 2 / expected, axis=-1)
    dims4 = ("chain", "draw", "class", "bin")
    coords = {
        "chain": np.arange(n_chain),
        "draw": np.arange(n_draw),
        "replicate": np.arange(reps),
        "class": [0, 1],
        "bin": np.arange(n_bins),
        "bin_lower": ("bin", edges[:-1]),
        "bin_upper": ("bin", edges[1:]),
    }
    ds = xr.Dataset(
        {
            "observed_count": (("class", "bin"), obs),
            "observed_density": (("class", "bin"), obs / np.maximum(n_c[:, None], 1) / width),
            "density": (dims4, mass / width),
            "replicated_count": (("chain", "draw", "replicate", "class", "bin"), rep),
        },
        coords=coords,
        attrs={"ci_prob": ci_prob, "ci_kind": "eti", "score_scale": kind, "replicates_per_draw": reps},
    )
    if n_chain * n_draw > 1:
        ds["density_band"] = eti_of_draws(ds["density"], ci_prob).transpose("class", "bin", "ci_bound")
    count_band = eti_of_draws(ds["replicated_count"], ci_prob, ("chain", "draw", "replicate"))
    ds["count_band"] = count_band.transpose("class", "bin", "ci_bound")
    hits = (x2_rep >= x2_obs).sum(axis=(0, 1, 2))
    ds["p_value"] = xr.DataArray(_monte_carlo_p(hits, n_chain * n_draw * reps, n_chain * n_draw == 1), dims="class")
    return ds


# ----------------------------------------------------------------------------- ArviZ input


def posterior_predictive_tree(
    calibrator: Any,
    scores: ArrayLike,
    y: ArrayLike,
    *,
    min_replicates: int = MIN_REPLICATES,
    random_state: RandomStateLike = None,
    random_seed: RandomStateLike = None,
) -> xr.DataTree:
    """Replicated and observed labels as ArviZ expects them (``y`` in both groups, ``obs_id``).

    ``posterior_predictive.y`` holds :math:`y^{rep} \\sim \\mathrm{Bernoulli}(p_d(s_i))` per
    posterior draw (``(chain, draw, obs_id)``), ``observed_data.y`` the labels: the input of
    ``arviz_plots.plot_ppc_pava`` and the other ``plot_ppc_*`` functions. ArviZ's PAV check
    takes the mean of row :math:`i`'s replicated labels over the draws as its forecast, a Monte
    Carlo estimate of the posterior mean probability :math:`\\frac{1}{D}\\sum_d p_d(s_i)`; so each
    posterior draw is replicated until there are at least ``min_replicates`` replicates (with
    one draw, a point estimate's, every forecast would be 0 or 1 and the band would have no
    width).

    Parameters
    ----------
    calibrator : Calibrator
        A fitted calibrator.
    scores : array-like of shape (n,)
        Scores on the calibrator's input scale.
    y : array-like of shape (n,)
        Binary labels.
    min_replicates : int, default 500
        When the posterior has fewer draws, each draw is replicated several times (output
        draw ``k`` uses posterior draw ``k // r``, ``r`` in the ``posterior_predictive`` attr
        ``replicates_per_draw``). At most :data:`MAX_REPLICATES`, and the replicated labels
        (replicates x rows) at most :data:`MAX_WORK_ELEMENTS`.
    random_state : None, int or numpy.random.Generator, default None
        Randomness of the replicated labels.
    random_seed : deprecated
        Old name of ``random_state``; accepted with a ``DeprecationWarning`` for one release.

    Returns
    -------
    xarray.DataTree
        Groups ``posterior_predictive`` and ``observed_data``.
    """
    min_replicates = _check_replicates(min_replicates, "min_replicates")
    s, y01 = _labels_and_scores(calibrator, scores, y, "posterior_predictive_tree")
    p, reps = _replicated_posterior(calibrator, s, min_replicates)
    rng = random_generator(random_state, random_seed, "posterior_predictive_tree")
    y_rep = (rng.random(p.shape) < p).astype(np.int64)
    coords = {"chain": np.arange(p.shape[0]), "draw": np.arange(p.shape[1]), "obs_id": np.arange(s.size)}
    pp = xr.Dataset({"y": (("chain", "draw", "obs_id"), y_rep)}, coords=coords, attrs={"replicates_per_draw": reps})
    od = xr.Dataset({"y": ("obs_id", y01.astype(np.int64))}, coords={"obs_id": coords["obs_id"]})
    return xr.DataTree.from_dict({"posterior_predictive": pp, "observed_data": od})
